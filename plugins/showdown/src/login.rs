//! Logging in on a server that checks names (the public one): the server's
//! `|challstr|` goes to the login server, whose signed answer (the
//! "assertion") goes back with `/trn NAME,0,ASSERTION`. Registered names
//! sign in with a password (`/api/login`); free names ask for a guest
//! assertion (`/action.php`, `act=getassertion`). Credentials come from the
//! operator's environment, never from the agent: `SHOWDOWN_USERNAME` and
//! `SHOWDOWN_PASSWORD` (config `pass_env` or `env` of `[plugins.showdown]`).

/// The name to play under and its password, when the operator set them.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub username: String,
    pub password: Option<String>,
}

/// The account for a battle: the agent's name if it gave one (with the
/// operator's password only when it is the operator's name), else the
/// operator's `SHOWDOWN_USERNAME`.
pub fn account(asked: Option<&str>, env_user: Option<&str>, env_password: Option<&str>) -> Option<Account> {
    let id = crate::data::to_id;
    let password = env_password.filter(|p| !p.is_empty()).map(str::to_string);
    match (asked, env_user) {
        (Some(name), Some(user)) if id(name) == id(user) => Some(Account { username: name.to_string(), password }),
        (Some(name), _) => Some(Account { username: name.to_string(), password: None }),
        (None, Some(user)) => Some(Account { username: user.to_string(), password }),
        (None, None) => None,
    }
}

/// The request for the `login` endpoint that signs `challstr` for `account`.
pub fn request(account: &Account, challstr: &str) -> String {
    let form = match &account.password {
        Some(pass) => format!("name={}&pass={}&challstr={}", encode(&account.username), encode(pass), encode(challstr)),
        None => format!("act=getassertion&userid={}&challstr={}", encode(&crate::data::to_id(&account.username)), encode(challstr)),
    };
    let path = if account.password.is_some() { "/api/login" } else { "/action.php" };
    format!("POST {path}\nContent-Type: application/x-www-form-urlencoded\n\n{form}")
}

/// The assertion in the login server's reply (`status\nbody` from the
/// channel), or why there is none.
pub fn assertion(reply: &str) -> Result<String, String> {
    let (status, body) = reply.split_once('\n').unwrap_or((reply, ""));
    let body = body.trim();
    if status.trim() != "200" {
        let detail: String = body.chars().take(200).collect();
        return Err(match status.trim() {
            "0" => format!("the login server could not be reached: {detail}"),
            s => format!("the login server answered HTTP {s}: {detail}"),
        });
    }
    // `/api/login` answers `]` and JSON; `/action.php` the bare assertion.
    let assertion = match body.strip_prefix(']') {
        Some(json) => {
            let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("unreadable login answer: {e}"))?;
            match (v["assertion"].as_str(), v["actionerror"].as_str()) {
                (Some(a), _) => a.to_string(),
                (None, Some(why)) => return Err(why.to_string()),
                (None, None) => return Err("wrong name or password (the login server gave no assertion)".into()),
            }
        }
        None => body.to_string(),
    };
    if let Some(why) = assertion.strip_prefix(";;") {
        return Err(why.to_string());
    }
    if assertion.is_empty() || assertion.contains('\n') || assertion.starts_with(";") {
        return Err(format!("the login server's answer is not an assertion: {:?}", assertion.chars().take(80).collect::<String>()));
    }
    Ok(assertion)
}

/// `application/x-www-form-urlencoded` value encoding.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operators_password_goes_only_with_the_operators_name() {
        let a = |asked, user, pass| account(asked, user, pass);
        assert_eq!(a(None, None, Some("pw")), None);
        assert_eq!(a(None, Some("Ada L"), Some("pw")).unwrap().password.as_deref(), Some("pw"));
        assert_eq!(a(Some("ada l"), Some("Ada L"), Some("pw")).unwrap().password.as_deref(), Some("pw"));
        assert_eq!(a(Some("Mallory"), Some("Ada L"), Some("pw")).unwrap(), Account { username: "Mallory".into(), password: None });
        assert_eq!(a(Some("Ada"), None, None).unwrap().password, None);
    }

    #[test]
    fn requests_are_form_encoded() {
        let with = Account { username: "Ada L".into(), password: Some("p&ss=wörd".into()) };
        assert_eq!(
            request(&with, "4|ab+c"),
            "POST /api/login\nContent-Type: application/x-www-form-urlencoded\n\nname=Ada+L&pass=p%26ss%3Dw%C3%B6rd&challstr=4%7Cab%2Bc"
        );
        let guest = Account { username: "Ada L".into(), password: None };
        assert!(request(&guest, "4|x").ends_with("\n\nact=getassertion&userid=adal&challstr=4%7Cx"));
    }

    #[test]
    fn assertions_and_refusals_are_read() {
        assert_eq!(assertion("200\n]{\"actionsuccess\":true,\"assertion\":\"abc,def\"}").unwrap(), "abc,def");
        assert_eq!(assertion("200\nabc,def\n").unwrap(), "abc,def");
        assert_eq!(assertion("200\n;;Your username is already registered").unwrap_err(), "Your username is already registered");
        assert!(assertion("200\n]{\"actionsuccess\":false}").unwrap_err().contains("wrong name or password"));
        assert_eq!(assertion("200\n]{\"actionerror\":\"Wrong password.\"}").unwrap_err(), "Wrong password.");
        assert!(assertion("503\nbusy").unwrap_err().contains("HTTP 503"));
        assert!(assertion("0\nconnection refused").unwrap_err().contains("could not be reached"));
        assert!(assertion("200\n]not json").is_err());
        assert!(assertion("200\n").is_err());
    }
}

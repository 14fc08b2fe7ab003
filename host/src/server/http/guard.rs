//! Who may send an HTTP request, decided before anything else about it is
//! read: its Host and Origin (DNS rebinding, cross-site pages), then the
//! operator's bearer tokens; and who the caller is, for the games.
//!
//! Tokens follow the shape of the MCP authorization spec's resource server:
//! a request without a valid token gets 401 with a `WWW-Authenticate: Bearer`
//! challenge naming the protected-resource metadata (RFC 9728), served at
//! `/.well-known/oauth-protected-resource`. There is no authorization server:
//! the operator issues tokens (`ludus token NAME`) and the config keeps only
//! their SHA-256.

use std::cell::RefCell;

use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use super::{Response, json_answer};

use crate::config::Config;
use crate::runtime::{hex, same_secret};
use crate::session::Caller;

/// Where the protected-resource metadata is served (RFC 9728 §3; the
/// `/mcp` suffix names the resource's path).
pub const METADATA_PATHS: [&str; 2] = ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"];

/// Names the callers of MCP sessions that present no token: not the
/// session id itself (callers are shown to plugins and in
/// `ludus_sessions`; the id is what authorises requests) but a keyed hash
/// of it, under a key each server draws at start.
#[derive(Clone, Copy)]
pub struct CallerNames {
    key: [u8; 16],
}

impl CallerNames {
    pub fn new() -> CallerNames {
        CallerNames { key: *uuid::Uuid::new_v4().as_bytes() }
    }

    /// The caller of MCP session `session_id`.
    pub fn of(&self, session_id: &str) -> Caller {
        let digest = Sha256::new().chain_update(self.key).chain_update(session_id).finalize();
        Caller::Connection(format!("client-{}", &hex(&digest[..6])))
    }
}

/// A connection's last caller, and what named it: its bearer token, or else
/// its MCP session id. A kept-alive client names the same caller on every
/// request, and finding it again costs a SHA-256 (about 5,000 instructions,
/// a twentieth of a quick tool call). A proxy may carry several clients'
/// requests on one connection: what named the caller is compared in
/// constant time, as a token is.
#[derive(Default)]
pub struct LastCaller(RefCell<Option<Last>>);

struct Last {
    named: Named,
    by: String,
    caller: Caller,
}

#[derive(Clone, Copy, PartialEq)]
enum Named {
    Token,
    Session,
}

impl LastCaller {
    /// The caller that `by` names: the last one when the same `by` named
    /// it, else what `find` finds (kept when it finds one).
    fn or_find(&self, named: Named, by: &str, find: impl FnOnce() -> Result<Caller, Response>) -> Result<Caller, Response> {
        if let Some(last) = self.0.borrow().as_ref()
            && last.named == named
            && same_secret(last.by.as_bytes(), by.as_bytes())
        {
            return Ok(last.caller.clone());
        }
        let caller = find()?;
        *self.0.borrow_mut() = Some(Last { named, by: by.to_string(), caller: caller.clone() });
        Ok(caller)
    }
}

pub struct Guard {
    /// (name, SHA-256 in lowercase hex) of each issued token.
    tokens: Vec<(String, String)>,
    origins: Vec<Allowed>,
    hosts: Vec<AllowedHost>,
    /// The token a loopback server without issued tokens made for itself
    /// (`local_token`): accepted, not required.
    local: Option<String>,
    names: CallerNames,
}

/// The caller a loopback server's own token stands for.
pub const LOCAL_CALLER: &str = "local";

/// An allowed Host: a name (lowercase, no brackets), and a port (None: any).
struct AllowedHost {
    name: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// Read once at start, not on every request.
    fn parse(allowed: &str) -> AllowedHost {
        match allowed.parse::<http::uri::Authority>() {
            Ok(a) if a.port_u16().is_some() => AllowedHost { name: unbracketed(a.host()), port: a.port_u16() },
            _ => AllowedHost { name: unbracketed(allowed), port: None },
        }
    }
}

fn unbracketed(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// An allowed Origin: scheme and host, and a port (None: any).
struct Allowed {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Guard {
    pub fn new(config: &Config, names: CallerNames) -> Guard {
        let origins = config.allowed_origins.iter().filter_map(|o| parse_allowed(o)).collect();
        let loopback = ["localhost", "127.0.0.1", "::1"].into_iter();
        let hosts = loopback.chain(config.allowed_hosts.iter().map(String::as_str)).map(AllowedHost::parse).collect();
        let tokens = config.tokens.iter().map(|t| (t.name.clone(), t.sha256.to_ascii_lowercase())).collect();
        Guard { tokens, origins, hosts, local: None, names }
    }

    /// Also accepts `token` (a loopback server's own, when the operator
    /// issued none) as the caller `local`.
    pub fn with_local_token(mut self, token: &str) -> Guard {
        self.local = Some(hex(&Sha256::digest(token.as_bytes())));
        self
    }

    pub fn uses_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The Host and Origin of a request: refused (403, or 400 for a
    /// malformed or repeated Host) unless this server may answer them.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), Response> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Err(refuse(StatusCode::BAD_REQUEST, "a request carries exactly one Host header"));
        };
        let host = host.to_str().unwrap_or("");
        if !self.host_allowed(host) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "the Host header names no host this server answers to (it answers to loopback names and the config's allowed_hosts)",
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "requests from this Origin are not allowed (the operator lists allowed origins in the config's allowed_origins)",
                ));
            }
        }
        Ok(())
    }

    fn host_allowed(&self, host: &str) -> bool {
        let Some((name, port)) = name_and_port(host) else { return false };
        self.hosts.iter().any(|allowed| allowed.name.eq_ignore_ascii_case(name) && allowed.port.is_none_or(|p| Some(p) == port))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let Some(o) = parse_origin(origin) else { return false };
        self.origins.iter().any(|a| a.scheme == o.scheme && a.host == o.host && a.port.is_none_or(|p| Some(p) == o.port))
    }

    /// The caller of a request that passed `check_origin`: the token's name
    /// (401 for a token the server did not issue, and for none when the
    /// operator issued tokens), else the MCP session it names, else a
    /// stateless caller. A token comes as `Authorization: Bearer`, or as
    /// `?token=` in the URL for clients that cannot set a header (the
    /// default client of the official Python SDK takes only a URL).
    pub fn caller(&self, parts: &Parts, last: &LastCaller) -> Result<Caller, Response> {
        let header = parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
        let presented = header.map(std::borrow::Cow::Borrowed).or_else(|| token_in_query(parts.uri.query()).map(std::borrow::Cow::Owned));
        let Some(token) = presented else {
            if !self.tokens.is_empty() {
                return Err(self.challenge(parts, None));
            }
            let Some(session) = parts.headers.get(&super::MCP_SESSION_ID).and_then(|v| v.to_str().ok()) else {
                return Ok(Caller::Stateless);
            };
            return last.or_find(Named::Session, session, || Ok(self.names.of(session)));
        };
        last.or_find(Named::Token, &token, || self.token_caller(parts, &token))
    }

    /// The caller whose token `token` is; 401 when the server did not issue it.
    fn token_caller(&self, parts: &Parts, token: &str) -> Result<Caller, Response> {
        let digest = hex(&Sha256::digest(token.as_bytes()));
        let local = self.local.iter().map(|hash| (LOCAL_CALLER, hash.as_str()));
        let issued = self.tokens.iter().map(|(name, hash)| (name.as_str(), hash.as_str()));
        // Every stored hash is compared, so the time taken says nothing about which matched.
        let found = issued.chain(local).fold(
            None,
            |found, (name, hash)| {
                if same_secret(hash.as_bytes(), digest.as_bytes()) { Some(name) } else { found }
            },
        );
        match found {
            Some(name) => Ok(Caller::Token(name.to_string())),
            None => Err(self.challenge(parts, Some("the bearer token is not one this server issued"))),
        }
    }

    /// 401 with the challenge the MCP authorization spec describes.
    fn challenge(&self, parts: &Parts, error: Option<&str>) -> Response {
        let metadata = format!("{}{}", origin_of(parts), METADATA_PATHS[0]);
        let mut challenge = format!("Bearer realm=\"ludus\", resource_metadata=\"{metadata}\"");
        if let Some(why) = error {
            challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{why}\""));
        }
        let why = error.unwrap_or(
            "this server requires a bearer token: send `Authorization: Bearer <token>` (or `?token=<token>` in the URL) \
             with a token the operator issued (`ludus token NAME`)",
        );
        let mut response = refuse(StatusCode::UNAUTHORIZED, why);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The protected-resource metadata document (RFC 9728).
    pub fn metadata(&self, parts: &Parts) -> Response {
        let body = serde_json::json!({
            "resource": format!("{}/mcp", origin_of(parts)),
            "bearer_methods_supported": ["header"],
            "resource_name": "Ludus",
        });
        json_answer(StatusCode::OK, body.to_string())
    }
}

/// The `token` parameter of a URL's query, decoded.
fn token_in_query(query: Option<&str>) -> Option<String> {
    let (_, value) = form_urlencoded::parse(query?.as_bytes()).find(|(key, _)| key == "token")?;
    (!value.is_empty()).then(|| value.into_owned())
}

/// `Bearer <token>` (the scheme is case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// `http://<Host>` of a request (the server speaks plain HTTP; a proxy in
/// front that terminates TLS serves the same paths).
fn origin_of(parts: &Parts) -> String {
    let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    format!("http://{host}")
}

struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// A Host header's name (an IPv6 address without its brackets) and port;
/// None when it is not `name`, `name:port` or `[v6]:port`. Read in place:
/// every request has one, and parsing it as an `Authority` copied it.
/// Whatever a name holds, it is allowed only when it equals a listed one.
fn name_and_port(host: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = match host.strip_prefix('[') {
        Some(v6) => {
            let (name, rest) = v6.split_once(']')?;
            (name, if rest.is_empty() { None } else { Some(rest.strip_prefix(':')?) })
        }
        None => match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    // An empty port is no port (RFC 3986: `port = *DIGIT`).
    let port = match port.filter(|port| !port.is_empty()) {
        Some(port) if port.bytes().all(|b| b.is_ascii_digit()) => Some(port.parse().ok()?),
        Some(_) => return None,
        None => None,
    };
    (!name.is_empty()).then_some((name, port))
}

/// An Origin header's scheme, host and port (the scheme's default when
/// none is written, RFC 6454 §4).
fn parse_origin(value: &str) -> Option<Origin> {
    let uri = value.trim().parse::<http::Uri>().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    Some(Origin { host: authority.host().trim_matches(['[', ']']).to_ascii_lowercase(), scheme, port })
}

/// `scheme://host:port`, or `scheme://host:*` for any port.
fn parse_allowed(value: &str) -> Option<Allowed> {
    if let Some(base) = value.trim().strip_suffix(":*") {
        let o = parse_origin(base)?;
        return Some(Allowed { scheme: o.scheme, host: o.host, port: None });
    }
    let o = parse_origin(value)?;
    Some(Allowed { scheme: o.scheme, host: o.host, port: o.port })
}

/// A refusal with its reason as a JSON-RPC error (no request id: the
/// request was not read).
pub fn refuse(status: StatusCode, why: &str) -> Response {
    json_answer(status, crate::server::jsonrpc::error_reply(serde_json::Value::Null, -32000, why.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(origins: &[&str], tokens: &[(&str, &str)]) -> Guard {
        let mut config = Config::default();
        if !origins.is_empty() {
            config.allowed_origins = origins.iter().map(|o| o.to_string()).collect();
        }
        config.tokens = tokens
            .iter()
            .map(|(name, token)| crate::config::Token {
                name: name.to_string(),
                sha256: hex(&Sha256::digest(token.as_bytes())),
                whole_seeds: false,
            })
            .collect();
        Guard::new(&config, CallerNames::new())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn hosts_and_origins_are_checked_exactly() {
        let g = guard(&[], &[]);
        assert!(g.check_origin(&headers(&[("host", "127.0.0.1:8765")])).is_ok());
        assert!(g.check_origin(&headers(&[("host", "[::1]:8765"), ("origin", "http://localhost:3000")])).is_ok());
        assert_eq!(g.check_origin(&headers(&[("host", "evil.example")])).unwrap_err().status(), StatusCode::FORBIDDEN);
        let twice = headers(&[("host", "127.0.0.1"), ("host", "evil.example")]);
        assert_eq!(g.check_origin(&twice).unwrap_err().status(), StatusCode::BAD_REQUEST);
        assert!(g.check_origin(&headers(&[("host", "localhost"), ("origin", "https://evil.example")])).is_err());
        let exact = guard(&["http://localhost:3000"], &[]);
        assert!(exact.check_origin(&headers(&[("host", "localhost"), ("origin", "http://localhost:3000")])).is_ok());
        assert!(exact.check_origin(&headers(&[("host", "localhost"), ("origin", "http://localhost:3001")])).is_err());
        assert!(exact.check_origin(&headers(&[("host", "localhost"), ("origin", "null")])).is_err());
    }

    #[test]
    fn a_host_is_allowed_as_when_it_was_parsed_as_an_authority() {
        let g = guard(&[], &[]);
        let as_authority = |host: &str| {
            let Ok(authority) = host.parse::<http::uri::Authority>() else { return false };
            let name = authority.host().trim_matches(['[', ']']);
            g.hosts.iter().any(|a| a.name.eq_ignore_ascii_case(name) && a.port.is_none_or(|p| Some(p) == authority.port_u16()))
        };
        let hosts = [
            "127.0.0.1:8765",
            "127.0.0.1",
            "LOCALHOST:1",
            "localhost",
            "[::1]:8765",
            "[::1]",
            "::1",
            "[::1",
            "::1]:80",
            "localhost:",
            ":80",
            "",
            "evil.example",
            "evil.example:80",
            "127.0.0.1.evil:80",
            "localhost:80:80",
            "[::1]:",
            "[]:80",
        ];
        for host in hosts {
            assert_eq!(g.host_allowed(host), as_authority(host), "{host:?}");
        }
        // Where the two differ, the name read in place is the stricter: an
        // `Authority` let a port that is no port pass as none.
        for host in ["localhost:99999", "localhost:-1", "localhost:+80", "localhost:8o", "[::1]x", "user@localhost:80"] {
            assert!(!g.host_allowed(host), "{host:?}");
        }
    }

    #[test]
    fn allowed_hosts_match_their_port_when_they_name_one() {
        let config =
            Config { allowed_hosts: vec!["Games.Example:8443".into(), "[fd00::1]".into(), "lan-box".into()], ..Default::default() };
        let g = Guard::new(&config, CallerNames::new());
        let allowed = |host: &str| g.check_origin(&headers(&[("host", host)])).is_ok();
        assert!(allowed("games.example:8443") && !allowed("games.example:80") && !allowed("games.example"));
        assert!(allowed("[fd00::1]:9000") && allowed("LAN-BOX") && allowed("lan-box:1"));
        assert!(!allowed("lan-box.evil") && !allowed("[fd00::2]:9000"));
    }

    #[test]
    fn tokens_name_the_caller_and_anything_else_is_challenged() {
        let g = guard(&[], &[("alice", "s3cret"), ("bob", "other")]);
        let parts = |auth: Option<&str>| {
            let mut b = http::Request::builder().uri("/mcp").header("host", "127.0.0.1:1");
            if let Some(a) = auth {
                b = b.header("authorization", a);
            }
            b.body(()).unwrap().into_parts().0
        };
        // One connection's requests, each checked against the caller before.
        let last = LastCaller::default();
        assert_eq!(g.caller(&parts(Some("Bearer s3cret")), &last).unwrap(), Caller::Token("alice".into()));
        assert_eq!(g.caller(&parts(Some("Bearer s3cret")), &last).unwrap(), Caller::Token("alice".into()));
        assert_eq!(g.caller(&parts(Some("bearer other")), &last).unwrap(), Caller::Token("bob".into()));
        for wrong in [None, Some("Bearer nope"), Some("Basic s3cret"), Some("Bearer other2"), Some("Bearer othe")] {
            let r = g.caller(&parts(wrong), &last).unwrap_err();
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
            let challenge = r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
            assert!(
                challenge.starts_with("Bearer ") && challenge.contains("resource_metadata=\"http://127.0.0.1:1/.well-known/"),
                "{challenge}"
            );
        }
        let open = guard(&[], &[]);
        assert_eq!(open.caller(&parts(None), &last).unwrap(), Caller::Stateless);
    }

    #[test]
    fn a_session_names_its_own_caller_on_a_connection_it_shares() {
        let names = CallerNames::new();
        let g = Guard::new(&Config::default(), names);
        let parts = |session: &str| {
            let b = http::Request::builder().uri("/mcp").header("host", "127.0.0.1:1").header("mcp-session-id", session);
            b.body(()).unwrap().into_parts().0
        };
        let last = LastCaller::default();
        for session in ["one", "one", "two", "one", "on", "two"] {
            assert_eq!(g.caller(&parts(session), &last).unwrap(), names.of(session), "{session}");
        }
        assert_ne!(names.of("one"), names.of("two"));
    }
}

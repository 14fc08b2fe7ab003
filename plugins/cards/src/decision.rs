//! Decisions are checked against the pending action before any engine sees
//! them: the right kind of answer, an index in range, an amount within its
//! bounds. What reaches the engine is only numbers and booleans that fit.

use serde_json::{Map, Value, json};

/// The arguments of `choose_action`, at most one of them given.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Answer {
    pub index: Option<u32>,
    pub answer: Option<bool>,
    pub amount: Option<i64>,
    pub amounts: Option<Vec<i64>>,
    pub pile: Option<u32>,
}

impl Answer {
    /// The one argument given, as the backend's `choose_action` arguments.
    fn single(&self) -> Result<(&'static str, Value), String> {
        let given: Vec<(&'static str, Value)> = [
            ("index", self.index.map(|v| json!(v))),
            ("answer", self.answer.map(|v| json!(v))),
            ("amount", self.amount.map(|v| json!(v))),
            ("amounts", self.amounts.as_ref().map(|v| json!(v))),
            ("pile", self.pile.map(|v| json!(v))),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
        match given.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err("give one of `index`, `answer`, `amount`, `amounts` or `pile`".into()),
            _ => Err(format!(
                "give exactly one of `index`, `answer`, `amount`, `amounts`, `pile` (got {})",
                given.iter().map(|(k, _)| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// Checks `answer` against `pending` (a `get_action_choices` result) and
/// returns the arguments to send, or a refusal that says what is pending and
/// what would be valid.
pub fn check(pending: &Value, answer: &Answer) -> Result<Value, String> {
    let (key, value) = answer.single()?;
    if !pending["action_pending"].as_bool().unwrap_or(false) {
        let why = if pending["game_over"].as_bool().unwrap_or(false) { "the game is over" } else { "it is not your decision now" };
        return Err(format!("no decision is pending for you ({why}); call `pass_priority` or `wait_for_action` first"));
    }
    let kind = pending["response_type"].as_str().unwrap_or("select");
    let n = pending["choices"].as_array().map_or(0, Vec::len);
    let can_pass = pending["can_pass"].as_bool().unwrap_or(false);
    let valid = valid_forms(kind, n, pending, can_pass);
    let refuse =
        |what: String| Err(format!("{what}. A {kind} decision is pending ({}); valid: {valid}", pending["message"].as_str().unwrap_or("")));
    match (key, kind) {
        ("index", "select" | "index") => {
            let i = answer.index.unwrap_or(0) as usize;
            if i >= n {
                return refuse(format!("index_out_of_range: {i} is not one of the {n} choices"));
            }
        }
        ("answer", "boolean") => {}
        ("answer", _) if answer.answer == Some(false) && can_pass => {}
        ("amount", "amount") => {
            let (lo, hi) = (pending["min"].as_i64().unwrap_or(i64::MIN), pending["max"].as_i64().unwrap_or(i64::MAX));
            let a = answer.amount.unwrap_or(0);
            if !(lo..=hi).contains(&a) {
                return refuse(format!("amount_out_of_range: {a} is not from {lo} to {hi}"));
            }
        }
        ("amounts", "multi_amount") => {}
        ("pile", "pile") => {
            if !matches!(answer.pile, Some(1 | 2)) {
                return refuse("pile is 1 or 2".into());
            }
        }
        _ => return refuse(format!("`{key}` does not answer this decision")),
    }
    let mut args = Map::new();
    args.insert(key.to_string(), value);
    Ok(Value::Object(args))
}

/// Every answer `check` takes for `pending`, as `choose_action`'s
/// arguments (amounts: at most 101 of the range, evenly spread; a
/// `multi_amount` decision: only a pass, where it may be passed).
pub fn legal_answers(pending: &Value) -> Vec<Value> {
    if !pending["action_pending"].as_bool().unwrap_or(false) {
        return Vec::new();
    }
    let kind = pending["response_type"].as_str().unwrap_or("select");
    let n = pending["choices"].as_array().map_or(0, Vec::len);
    let mut out: Vec<Value> = match kind {
        "select" | "index" => (0..n).map(|i| json!({"index": i})).collect(),
        "boolean" => vec![json!({"answer": true}), json!({"answer": false})],
        "amount" => {
            let (lo, hi) = (pending["min"].as_i64().unwrap_or(0), pending["max"].as_i64().unwrap_or(0));
            let step = ((hi - lo) / 100).max(1);
            (0..=100).map(|i| lo.saturating_add(i * step)).take_while(|a| *a <= hi).map(|a| json!({"amount": a})).collect()
        }
        "pile" => vec![json!({"pile": 1}), json!({"pile": 2})],
        _ => Vec::new(),
    };
    if pending["can_pass"].as_bool().unwrap_or(false) && kind != "boolean" {
        out.push(json!({"answer": false}));
    }
    out
}

fn valid_forms(kind: &str, n: usize, pending: &Value, can_pass: bool) -> String {
    let main = match kind {
        "select" | "index" if n > 0 => format!("`index` 0 to {}", n - 1),
        "select" | "index" => "no choice to index".to_string(),
        "boolean" => "`answer` true or false".to_string(),
        "amount" => format!("`amount` from {} to {}", pending["min"], pending["max"]),
        "multi_amount" => "`amounts`".to_string(),
        "pile" => "`pile` 1 or 2".to_string(),
        other => format!("the {other} answer"),
    };
    if can_pass && kind != "boolean" { format!("{main}, or `answer: false`") } else { main }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(kind: &str) -> Value {
        json!({"action_pending": true, "response_type": kind, "message": "m", "min": 0, "max": 3, "can_pass": true,
               "choices": [{"index": 0, "description": "a"}, {"index": 1, "description": "b"}]})
    }

    #[test]
    fn answers_of_the_right_kind_and_range_pass_through() {
        assert_eq!(check(&pending("select"), &Answer { index: Some(1), ..Default::default() }), Ok(json!({"index": 1})));
        assert_eq!(check(&pending("select"), &Answer { answer: Some(false), ..Default::default() }), Ok(json!({"answer": false})));
        assert_eq!(check(&pending("amount"), &Answer { amount: Some(3), ..Default::default() }), Ok(json!({"amount": 3})));
        assert_eq!(check(&pending("boolean"), &Answer { answer: Some(true), ..Default::default() }), Ok(json!({"answer": true})));
    }

    #[test]
    fn every_legal_answer_is_taken() {
        for kind in ["select", "boolean", "amount", "pile"] {
            let answers = legal_answers(&pending(kind));
            assert!(!answers.is_empty(), "{kind}");
            for a in answers {
                let answer = Answer {
                    index: a["index"].as_u64().map(|i| i as u32),
                    answer: a["answer"].as_bool(),
                    amount: a["amount"].as_i64(),
                    pile: a["pile"].as_u64().map(|p| p as u32),
                    ..Default::default()
                };
                assert!(check(&pending(kind), &answer).is_ok(), "{kind}: {a}");
            }
        }
        assert!(legal_answers(&json!({"action_pending": false})).is_empty());
    }

    #[test]
    fn wrong_kinds_ranges_and_nothing_pending_are_refused_with_what_is_valid() {
        let e = check(&pending("select"), &Answer { index: Some(2), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("index_out_of_range") && e.contains("`index` 0 to 1"), "{e}");
        let e = check(&pending("amount"), &Answer { answer: Some(true), ..Default::default() }).unwrap_err();
        assert!(e.contains("`answer` does not answer") && e.contains("`amount` from 0 to 3"), "{e}");
        let e = check(&pending("amount"), &Answer { amount: Some(9), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("amount_out_of_range"), "{e}");
        let e = check(&pending("select"), &Answer { index: Some(0), answer: Some(false), ..Default::default() }).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let e = check(&json!({"action_pending": false}), &Answer { index: Some(0), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("no decision is pending"), "{e}");
    }
}

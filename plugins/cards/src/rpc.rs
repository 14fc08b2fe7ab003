//! The MCP client side of the bridge: JSON-RPC 2.0 messages, one per line,
//! as XMage's headless client and our phase bridge both speak them.

use serde_json::{Value, json};

/// The protocol version both backends answer to.
pub const PROTOCOL: &str = "2024-11-05";

/// A request line. `seat` goes in `_meta` for a backend that serves several
/// seats in one process (the phase bridge); XMage's client ignores it.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

pub fn initialize(id: u64) -> String {
    request(
        id,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "ludus-cards", "version": env!("CARGO_PKG_VERSION")},
        }),
    )
}

pub fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

pub fn tool_call(id: u64, tool: &str, arguments: Value, seat: Option<u32>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(seat) = seat {
        params["_meta"] = json!({"seat": seat});
    }
    request(id, "tools/call", params)
}

/// What a line from the backend is.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// The answer to request `id`: its result, or the error's text.
    Response { id: u64, result: Result<Value, String> },
    /// A logging notification (`notifications/message`): what the backend is
    /// busy with, such as installing its engine on first use.
    Notice(String),
    /// Another notification or a request from the backend (nothing we answer).
    Other,
    /// Not JSON-RPC at all.
    Garbage(String),
}

pub fn parse(line: &str) -> Incoming {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Incoming::Garbage(line.chars().take(200).collect());
    };
    if v.get("method").and_then(Value::as_str) == Some("notifications/message") {
        let data = &v["params"]["data"];
        return Incoming::Notice(data.as_str().map_or_else(|| data.to_string(), String::from));
    }
    let Some(id) = v.get("id").and_then(Value::as_u64) else { return Incoming::Other };
    if v.get("method").is_some() {
        return Incoming::Other;
    }
    let result = match (v.get("result"), v.get("error")) {
        (Some(r), _) => Ok(r.clone()),
        (None, Some(e)) => Err(e.get("message").and_then(Value::as_str).unwrap_or("the backend refused the request").to_string()),
        (None, None) => Err("the backend answered with neither result nor error".to_string()),
    };
    Incoming::Response { id, result }
}

/// The changes a phase bridge's answer reports (its `_meta.journal`).
pub fn journal(result: &Value) -> &[Value] {
    result["_meta"]["journal"].as_array().map_or(&[], Vec::as_slice)
}

/// A `tools/call` result as the tool's value: its structured content (or its
/// text read as JSON, or as a string), or its error text.
pub fn tool_result(result: Value) -> Result<Value, String> {
    let text = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    if result["isError"].as_bool().unwrap_or(false) {
        return Err(if text.is_empty() { "the backend refused the call".into() } else { text });
    }
    if let Some(s) = result.get("structuredContent").filter(|s| !s.is_null()) {
        return Ok(s.clone());
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// The tool names offered in a `tools/list` result.
pub fn tool_names(result: &Value) -> Vec<String> {
    result["tools"].as_array().map(|t| t.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_errors_and_noise_are_told_apart() {
        let ok = parse(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"a\":1}"}],"isError":false}}"#);
        let Incoming::Response { id: 3, result: Ok(r) } = ok else { panic!("{ok:?}") };
        assert_eq!(tool_result(r), Ok(json!({"a": 1})));
        let refused =
            parse(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"index_out_of_range: 9"}],"isError":true}}"#);
        let Incoming::Response { id: 4, result: Ok(r) } = refused else { panic!() };
        assert_eq!(tool_result(r), Err("index_out_of_range: 9".into()));
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"nope"}}"#),
            Incoming::Response { id: 5, result: Err("nope".into()) }
        );
        assert_eq!(parse(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#), Incoming::Other);
        assert!(matches!(parse("Picked up JAVA_TOOL_OPTIONS"), Incoming::Garbage(_)));
        let notice = parse(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"installing"}}"#);
        assert_eq!(notice, Incoming::Notice("installing".into()));
    }

    #[test]
    fn the_seat_travels_in_meta_only_when_given() {
        let with: Value = serde_json::from_str(&tool_call(7, "pass_priority", json!({"timeout_ms": 5}), Some(1))).unwrap();
        assert_eq!(with["params"]["_meta"]["seat"], 1);
        let without: Value = serde_json::from_str(&tool_call(7, "pass_priority", json!({}), None)).unwrap();
        assert!(without["params"].get("_meta").is_none());
    }
}

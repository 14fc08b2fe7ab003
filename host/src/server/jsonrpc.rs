//! What JSON-RPC asks of a server facing a malformed message, for every
//! transport: which error answers it (`-32700` unparsable, `-32600` not a
//! request, `-32602` a known method with unusable params) and with which id.

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Why a message is not accepted, and the JSON-RPC error that says so.
#[derive(Debug)]
pub struct Refusal {
    pub code: i32,
    pub reply: Vec<u8>,
    /// The message was a notification: over stdio JSON-RPC answers nothing
    /// to those, even broken ones (over HTTP the status code still must).
    pub notification: bool,
}

/// A message read as a client message, or why not.
pub fn classify(message: &[u8]) -> Result<ClientJsonRpcMessage, Refusal> {
    if let Some(call) = well_formed_tool_call(message) {
        return Ok(call);
    }
    let value: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => return Err(refusal(Value::Null, -32700, format!("parse error: {e}"), false)),
    };
    let Some(object) = value.as_object() else {
        let why = if value.is_array() { "batches are not supported by MCP" } else { "a request is a JSON object" };
        return Err(refusal(Value::Null, -32600, format!("invalid request: {why}"), false));
    };
    let id = echoed_id(message, object.get("id"));
    let notification = object.contains_key("method") && !object.contains_key("id");
    let refuse = |code: i32, message: String| refusal(&id, code, message, notification);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(-32600, "invalid request: `jsonrpc` must be \"2.0\"".into()));
    }
    // Numeric ids are carried as 64-bit integers; any other number would come
    // back changed (2^70 as a float), so it is refused with its exact text.
    if object.get("id").is_some_and(|id| id.is_number() && id.as_i64().is_none()) {
        return Err(refuse(
            -32600,
            "invalid request: a numeric `id` must be an integer from -2^63 to 2^63-1; use a string id for anything else".into(),
        ));
    }
    if let (Some(method), Some(problem)) = (object.get("method").and_then(Value::as_str), params_problem(object)) {
        return Err(refuse(-32602, format!("invalid params for {method}: {problem}")));
    }
    if let Some(message) = tool_call_or_ping(object) {
        return Ok(message);
    }
    serde_json::from_value(value).map_err(|e| refuse(-32600, format!("invalid request: {e}")))
}

/// A well-formed `tools/call` read in one pass, straight into rmcp's types
/// (no `Value` tree built and taken apart: 3.2 µs of a 40 µs
/// `hanoi_get_state` went to reading its line). Anything else, and anything
/// unusual (a missing field, a duplicate key, another method), is None and
/// takes the general reading below, which also says what is wrong.
fn well_formed_tool_call(message: &[u8]) -> Option<ClientJsonRpcMessage> {
    #[derive(Deserialize)]
    struct ToolCall<'a> {
        #[serde(borrow)]
        jsonrpc: std::borrow::Cow<'a, str>,
        id: RequestId,
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        params: CallToolRequestParams,
    }
    let call: ToolCall = serde_json::from_slice(message).ok()?;
    (call.jsonrpc == "2.0" && call.method == "tools/call").then(|| ClientJsonRpcMessage::request(tool_call(call.params), call.id))
}

/// A tool call as rmcp's parser makes it: the request's `_meta` goes into its extensions.
fn tool_call(params: CallToolRequestParams) -> ClientRequest {
    let mut call = CallToolRequest::new(params);
    if let Some(meta) = call.params.meta.take() {
        call.extensions.insert(meta);
    }
    ClientRequest::CallToolRequest(call)
}

/// The two requests every busy client sends, read straight into rmcp's types.
/// rmcp's own reading of a message goes through serde's buffered untagged
/// form, which cost as much as the game call itself in a profile of
/// `hanoi_get_state` over stdio. Anything unusual takes rmcp's way (None).
fn tool_call_or_ping(object: &serde_json::Map<String, Value>) -> Option<ClientJsonRpcMessage> {
    let id = RequestId::deserialize(object.get("id")?).ok()?;
    let request = match object.get("method")?.as_str()? {
        // A ping with params carries `_meta` (a protocol version): rmcp's reading keeps it.
        "ping" if object.get("params").is_none() => ClientRequest::PingRequest(Default::default()),
        "tools/call" => tool_call(CallToolRequestParams::deserialize(object.get("params")?).ok()?),
        _ => return None,
    };
    Some(ClientJsonRpcMessage::request(request, id))
}

/// What is wrong with the params of a method this server knows, if anything.
/// rmcp reads a known method with unusable params as an unknown method.
pub fn params_problem(request: &serde_json::Map<String, Value>) -> Option<String> {
    let method = request.get("method")?.as_str()?;
    let params = request.get("params");
    let field = |name: &str| params.and_then(|p| p.get(name));
    let required_string = |name: &str, what: &str| match field(name) {
        Some(Value::String(_)) => None,
        None | Some(Value::Null) => Some(format!("`{name}` is missing ({what})")),
        Some(other) => Some(format!("`{name}` must be a string ({what}), not {}", json_kind(other))),
    };
    if let Some(p) = params.filter(|p| !p.is_object() && !p.is_null()) {
        return Some(format!("`params` must be an object, not {}", json_kind(p)));
    }
    match method {
        "tools/call" => required_string("name", "the tool to call").or_else(|| match field("arguments") {
            None | Some(Value::Null) | Some(Value::Object(_)) => None,
            Some(other) => Some(format!("`arguments` must be an object of argument names to values, not {}", json_kind(other))),
        }),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => required_string("uri", "the resource"),
        "prompts/get" => required_string("name", "the prompt"),
        "logging/setLevel" => match field("level").and_then(Value::as_str) {
            Some(level) if LOG_LEVELS.contains(&level) => None,
            _ => Some(format!("`level` must be one of {}", LOG_LEVELS.join(", "))),
        },
        "initialize" => required_string("protocolVersion", "the protocol version the client speaks"),
        _ => None,
    }
}

/// MCP's logging levels (RFC 5424's, least severe first).
const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The id a refusal echoes: exactly the text the client sent, when it is one
/// JSON-RPC allows (a string or a number), else null.
fn echoed_id(message: &[u8], id: Option<&Value>) -> Box<RawValue> {
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    let null = || RawValue::from_string("null".into()).expect("null is JSON");
    match id {
        Some(v) if v.is_string() || v.is_number() => match serde_json::from_slice::<Id>(message) {
            Ok(Id { id }) => id.to_owned(),
            // A duplicate key: the id as read.
            Err(_) => serde_json::value::to_raw_value(v).unwrap_or_else(|_| null()),
        },
        _ => null(),
    }
}

fn refusal(id: impl Serialize, code: i32, message: String, notification: bool) -> Refusal {
    Refusal { code, reply: error_reply(id, code, message), notification }
}

/// A JSON-RPC error answer to the request `id` (any JSON: `Value::Null`, or
/// the id's text as sent).
/// (Written straight to bytes: through a `Value`, a raw id would be read as a number again.)
pub fn error_reply(id: impl Serialize, code: i32, message: String) -> Vec<u8> {
    #[derive(Serialize)]
    struct Reply<I> {
        jsonrpc: &'static str,
        id: I,
        error: Error,
    }
    #[derive(Serialize)]
    struct Error {
        code: i32,
        message: String,
    }
    serde_json::to_vec(&Reply { jsonrpc: "2.0", id, error: Error { code, message } }).expect("a JSON-RPC error serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::RequestMetaObject;
    use serde_json::json;

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes()) {
            Err(r) if !r.notification => serde_json::from_slice(&r.reply).unwrap(),
            other => panic!("{line}: expected an error reply, got {:?}", other.map(|_| "a message")),
        }
    }

    #[test]
    fn unreadable_lines_get_a_parse_error_with_a_null_id() {
        let r = reply("{not json");
        assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (Value::Null, json!(-32700)));
        assert_eq!(reply("[1, 2]")["error"]["code"], -32600);
    }

    #[test]
    fn an_id_beyond_64_bits_is_refused_and_echoed_exactly() {
        let line = r#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}"#;
        let Err(r) = classify(line.as_bytes()) else { panic!("accepted") };
        let text = String::from_utf8(r.reply).unwrap();
        assert!(text.contains(r#""id":1180591620717411303424,"#) && text.contains("-32600"), "{text}");
        let Err(r) = classify(br#"{"jsonrpc":"2.0","id":1.50,"method":"ping"}"#) else { panic!("accepted") };
        assert!(String::from_utf8(r.reply).unwrap().contains(r#""id":1.50,"#));
        assert!(classify(br#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#).is_ok());
    }

    #[test]
    fn invalid_requests_keep_their_id() {
        let r = reply(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(7), json!(-32600)));
        let r = reply(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"arguments":{}}}"#);
        assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!("a"), json!(-32602)));
        assert!(r["error"]["message"].as_str().unwrap().contains("`name` is missing"), "{r}");
        let r = reply(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#);
        assert!(r["error"]["message"].as_str().unwrap().contains("not an array"), "{r}");
        let r = reply(r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{}}"#);
        assert!(r["error"]["message"].as_str().unwrap().contains("`uri` is missing"), "{r}");
    }

    #[test]
    fn tool_calls_read_directly_match_rmcps_reading() {
        let line = r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"hanoi_get_state","arguments":{"env_id":"x"},"_meta":{"progressToken":7}}}"#;
        let direct = classify(line.as_bytes()).unwrap();
        let rmcps: ClientJsonRpcMessage = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_value(&direct).unwrap(), serde_json::to_value(&rmcps).unwrap());
        let (rmcp::model::JsonRpcMessage::Request(a), rmcp::model::JsonRpcMessage::Request(b)) = (direct, rmcps) else {
            panic!("requests")
        };
        let (ClientRequest::CallToolRequest(a), ClientRequest::CallToolRequest(b)) = (a.request, b.request) else { panic!("tool calls") };
        assert_eq!(a.params, b.params);
        assert_eq!(
            a.extensions.get::<RequestMetaObject>().and_then(RequestMetaObject::get_progress_token),
            b.extensions.get::<RequestMetaObject>().and_then(RequestMetaObject::get_progress_token)
        );
        assert!(a.extensions.get::<RequestMetaObject>().is_some());
        let general = tool_call_or_ping(serde_json::from_str::<Value>(line).unwrap().as_object().unwrap()).unwrap();
        assert_eq!(serde_json::to_value(well_formed_tool_call(line.as_bytes()).unwrap()).unwrap(), serde_json::to_value(&general).unwrap());
        for unusual in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"id":2}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
        ] {
            assert!(well_formed_tool_call(unusual.as_bytes()).is_none(), "{unusual} takes the general reading");
        }
        let ping = classify(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).unwrap();
        assert_eq!(serde_json::to_value(&ping).unwrap(), json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    }

    #[test]
    fn broken_notifications_get_no_answer_and_good_messages_pass() {
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","method":"tools/call","params":[]}"#), Err(Refusal { notification: true, .. })));
        assert!(classify(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}"#).is_ok());
        assert!(classify(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_ok());
        assert!(classify(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).is_ok());
    }
}

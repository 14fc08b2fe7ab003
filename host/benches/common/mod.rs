//! What the benchmarks share: a plain Streamable HTTP client's request and
//! reading its answer.

use serde_json::Value;

/// One Streamable HTTP request with the headers a plain client sends; the
/// whole answer is read, as a buffering proxy (nginx) or Python's httpx do.
pub async fn post(client: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> (Option<String>, String) {
    let mut req = client.post(url).header("accept", "application/json, text/event-stream").json(&body);
    if let Some(id) = session {
        req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-06-18");
    }
    let resp = req.send().await.unwrap();
    let id = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from);
    (id, resp.text().await.unwrap_or_default())
}

/// The JSON-RPC result inside a streamed (SSE) or plain JSON answer.
pub fn rpc_result(text: &str) -> Value {
    text.lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("result").is_some())
        .map(|v| v["result"].clone())
        .unwrap_or(Value::Null)
}

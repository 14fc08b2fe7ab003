//! What the benchmarks share: a plain Streamable HTTP client's request and
//! reading its answer. Each benchmark uses part of it.
#![allow(dead_code)]

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

/// The speed issue's minimal HTTP client: one keep-alive connection, a
/// request written whole, the answer read whole (headers, then its length or
/// its chunks). Next to nothing of its own, so a round trip measures the
/// server and the loopback, not a client library.
pub struct RawHttp {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
    host: String,
    path: String,
    pub session: Option<String>,
}

impl RawHttp {
    pub async fn connect(url: &str) -> RawHttp {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
        let tcp = tokio::net::TcpStream::connect(host).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        RawHttp { stream: tokio::io::BufReader::new(tcp), host: host.to_string(), path, session: None }
    }

    /// Opens an MCP session on this connection.
    pub async fn initialize(url: &str) -> RawHttp {
        let mut c = RawHttp::connect(url).await;
        let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let (headers, _) = c.post(&init).await;
        c.session = header(&headers, "mcp-session-id");
        c.post(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        c
    }

    /// POSTs a JSON-RPC message; returns the answer's headers and body.
    pub async fn post(&mut self, body: &Value) -> (String, String) {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let body = serde_json::to_vec(body).unwrap();
        let mut request = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            self.path,
            self.host,
            body.len()
        );
        if let Some(id) = &self.session {
            request += &format!("mcp-session-id: {id}\r\nmcp-protocol-version: 2025-06-18\r\n");
        }
        request += "\r\n";
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(&body);
        self.stream.get_mut().write_all(&bytes).await.unwrap();
        let mut headers = String::new();
        loop {
            let n = self.stream.read_line(&mut headers).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            if headers.ends_with("\r\n\r\n") {
                break;
            }
        }
        let mut out = Vec::new();
        if let Some(len) = header(&headers, "content-length") {
            out.resize(len.parse().unwrap(), 0);
            self.stream.read_exact(&mut out).await.unwrap();
        } else {
            let mut line = String::new();
            loop {
                line.clear();
                self.stream.read_line(&mut line).await.unwrap();
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                let start = out.len();
                out.resize(start + size + 2, 0);
                self.stream.read_exact(&mut out[start..]).await.unwrap();
                out.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        }
        (headers, String::from_utf8(out).unwrap())
    }
}

fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

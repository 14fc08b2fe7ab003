//! Malformed JSON-RPC, as a careless or hostile client sends it, over stdio
//! (plain pipes, no MCP library in between) and over Streamable HTTP: every
//! message gets the error JSON-RPC prescribes, with the request's id when it
//! was readable, and the connection goes on working.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// `ludus serve` on plain pipes.
struct Pipes {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Pipes {
    fn start(work: &std::path::Path) -> Pipes {
        let cfg = config(work, "");
        let mut child = Command::new(BIN)
            .args(["serve", "--config", cfg.to_str().unwrap()])
            .env("LUDUS_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (input, output) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let mut p = Pipes { child, input, output };
        let init = p.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#);
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        p
    }

    fn send(&mut self, line: &str) {
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
    }

    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        let mut answer = String::new();
        self.output.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
    }
}

impl Drop for Pipes {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn error_of(answer: &Value) -> (Value, i64, String) {
    let e = &answer["error"];
    (answer["id"].clone(), e["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}")), e["message"].as_str().unwrap().to_string())
}

#[test]
fn over_stdio_every_malformed_message_gets_its_json_rpc_error() {
    let work = scratch();
    let mut p = Pipes::start(work.path());
    let (id, code, _) = error_of(&p.ask("{this is not json"));
    assert_eq!((id, code), (Value::Null, -32700));
    let (id, code, _) = error_of(&p.ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#));
    assert_eq!((id, code), (Value::Null, -32600));
    let (id, code, _) = error_of(&p.ask(r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#));
    assert_eq!((id, code), (json!(5), -32600), "the readable id is kept");
    let (id, code, m) = error_of(&p.ask(r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"arguments":{}}}"#));
    assert_eq!((id, code), (json!("x"), -32602));
    assert!(m.contains("`name` is missing"), "{m}");
    let (_, code, m) = error_of(&p.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hanoi_get_state","arguments":[1]}}"#));
    assert!(code == -32602 && m.contains("`arguments` must be an object"), "{m}");
    let (_, code, m) = error_of(&p.ask(r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}"#));
    assert!(code == -32602 && m.contains("`uri` is missing"), "{m}");
    // A broken notification gets no answer; the next request is answered.
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}"#);
    let pong = p.ask(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(pong["id"], 8, "{pong}");
    let r = p.ask(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#);
    assert_eq!(r["result"]["structuredContent"]["optimal_moves"], 7, "{r}");
}

async fn post(url: &str, session: Option<&str>, body: &str) -> reqwest::Response {
    let mut r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        r = r.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
    }
    r.body(body.to_string()).send().await.unwrap()
}

async fn open_session(url: &str) -> String {
    let init = post(url, None, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#).await;
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let body = init.text().await.unwrap();
    // No SSE priming event: clients of this version read an empty `data:` as a broken message.
    assert!(!body.lines().any(|l| l.trim() == "data:" || l.trim() == "id: 0"), "a priming event was sent: {body:?}");
    post(url, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    session
}

#[tokio::test]
async fn over_http_malformed_bodies_get_400_with_json_rpc_errors_and_delete_says_what_it_did() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.url.as_str();
    let session = open_session(url).await;

    let r = post(url, Some(&session), "{not json").await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "application/json");
    let (id, code, _) = error_of(&r.json().await.unwrap());
    assert_eq!((id, code), (Value::Null, -32700));
    let r = post(url, Some(&session), r#"{"jsonrpc":"2.0","id":3}"#).await;
    assert_eq!(r.status(), 400);
    let (id, code, _) = error_of(&r.json().await.unwrap());
    assert_eq!((id, code), (json!(3), -32600));
    let r = post(url, Some(&session), r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hanoi_get_state","arguments":"env"}}"#).await;
    let (id, code, m) = error_of(&r.json().await.unwrap());
    assert_eq!((id, code), (json!(4), -32602), "{m}");

    // The session still works (and its answers carry no priming event either),
    // then ends with 200; a second DELETE finds nothing.
    let r = post(url, Some(&session), r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("optimal_moves") && !body.lines().any(|l| l.trim() == "data:" || l.trim() == "id: 0"), "{body:?}");
    let delete = || reqwest::Client::new().delete(url).header("mcp-session-id", &session).send();
    assert_eq!(delete().await.unwrap().status(), 200);
    assert_eq!(delete().await.unwrap().status(), 404);
}

/// Connections that never send a request are closed at the header deadline,
/// and beyond the connection cap new ones are refused at once.
#[tokio::test]
async fn silent_connections_are_closed_and_connections_are_capped() {
    use tokio::io::AsyncReadExt;
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nhttp_header_timeout_ms = 500\nmax_http_connections = 8\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The ninth is over the cap: closed without an answer.
    let mut ninth = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(2), ninth.read(&mut buf)).await.expect("the ninth connection stayed open").unwrap_or(0);
    assert_eq!(n, 0, "the ninth connection was served");
    // The silent ones end at the header deadline, freeing their slots.
    let t = Instant::now();
    for s in &mut silent {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await.expect("a silent connection stayed open").unwrap_or(0);
        let _ = n;
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let c = http_client(&server).await;
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
}

/// Over HTTP the MCP sessions are capped: `initialize` beyond the limit gets
/// 503 with a JSON-RPC error naming it, and a deleted session frees its slot.
#[tokio::test]
async fn mcp_sessions_are_capped_and_freed_by_delete() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_mcp_sessions = 2\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let url = server.url.as_str();
    let first = open_session(url).await;
    open_session(url).await;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let r = post(url, None, init).await;
    assert_eq!(r.status(), 503);
    let (_, code, m) = error_of(&r.json().await.unwrap());
    assert!(code == -32000 && m.contains("limits.max_mcp_sessions"), "{m}");
    let deleted = reqwest::Client::new().delete(url).header("mcp-session-id", &first).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    open_session(url).await;
}

/// Every tool states what it answers: the host's own tools carry an
/// `outputSchema` their answers match, and declared argument ranges are in
/// the input schemas and enforced with the same bounds.
#[tokio::test]
async fn schemas_state_the_real_shapes_and_ranges() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = c.tools().await;
    let tool = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    for name in ["ludus_games", "ludus_sessions"] {
        let t = tool(name);
        assert!(t.output_schema.is_some(), "{name} has no outputSchema");
        assert_matches_output_schema(&t, &c.call(name, json!({})).await);
    }
    let n = &tool("hanoi_init_simulator").input_schema["properties"]["n"];
    assert_eq!((n["minimum"].clone(), n["maximum"].clone()), (json!(1), json!(30)), "{n}");
    let e = c.err("hanoi_init_simulator", json!({"n": 31})).await;
    assert!(e.contains("from 1 to 30, got 31"), "{e}");
    let d = &tool("chess_create_game").input_schema["properties"]["difficulty"];
    assert_eq!((d["minimum"].clone(), d["maximum"].clone()), (json!(1), json!(10)), "{d}");
    // No schema promises a number JavaScript cannot hold.
    let text = serde_json::to_string(&tools).unwrap();
    assert!(!text.contains("18446744073709551615") && !text.contains("9223372036854775807"), "a schema carries a 64-bit bound");
}

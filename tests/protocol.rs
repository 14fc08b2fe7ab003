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
    input: Option<std::process::ChildStdin>,
    output: BufReader<std::process::ChildStdout>,
}

impl Pipes {
    fn start(work: &std::path::Path) -> Pipes {
        Pipes::start_with(work, &[])
    }

    fn start_with(work: &std::path::Path, args: &[&str]) -> Pipes {
        Pipes::start_configured(work, "", args)
    }

    /// With `extra` appended to the server's config file.
    fn start_configured(work: &std::path::Path, extra: &str, args: &[&str]) -> Pipes {
        let cfg = config(work, extra);
        let mut child = Command::new(BIN)
            .args(["serve", "--config", cfg.to_str().unwrap()])
            .args(args)
            .env("LUDUS_LOG", "error")
            .env("XDG_DATA_HOME", work.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (input, output) = (child.stdin.take(), BufReader::new(child.stdout.take().unwrap()));
        let mut p = Pipes { child, input, output };
        let init = p.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#);
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        assert_eq!(init["result"]["capabilities"]["logging"], json!({}), "logging is advertised: {init}");
        p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        p
    }

    fn send(&mut self, line: &str) {
        self.write(format!("{line}\n").as_bytes());
    }

    fn write(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().expect("stdin is open");
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
    }

    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.read_answer()
    }

    /// The next message, past list changes (a plugins directory's first
    /// scan ends in the background, whenever it ends).
    fn read(&mut self) -> Value {
        loop {
            let mut answer = String::new();
            self.output.read_line(&mut answer).unwrap();
            let message: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
            if !message["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")) {
                return message;
            }
        }
    }

    /// The next answer, past any notifications (a game's log lines).
    fn read_answer(&mut self) -> Value {
        loop {
            let message = self.read();
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Calls a tool and returns its structured answer.
    fn tool(&mut self, id: u64, name: &str, args: Value) -> Value {
        let answer = self.ask(&call_line(id, name, args));
        answer["result"]["structuredContent"].clone()
    }

    /// Pipes with the hello plugin loaded, and one of its counters.
    fn with_hello_counter(work: &std::path::Path) -> (Pipes, Value) {
        let dir = plugins_dir(work, &["hello"]);
        let mut p = Pipes::start_with(work, &["--plugins", dir.to_str().unwrap()]);
        let counter = p.tool(1, "hello_start", json!({}))["counter_id"].clone();
        assert!(counter.is_string(), "{counter}");
        (p, counter)
    }

    fn waiting_calls(&mut self) -> Value {
        self.tool(2, "ludus_sessions", json!({"game": "hello"}))["sessions"][0]["waiting_calls"].clone()
    }

    /// Polls until `n` calls wait on the hello counter, failing with `what`
    /// after `within`.
    fn await_waiting_calls(&mut self, n: u64, within: Duration, what: &str) {
        let t = Instant::now();
        while self.waiting_calls() != n {
            assert!(t.elapsed() < within, "{what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn call_line(id: u64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()
}

impl Drop for Pipes {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn error_of(answer: &Value) -> (Value, i64, String) {
    let e = &answer["error"];
    (
        answer["id"].clone(),
        e["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}")),
        e["message"].as_str().unwrap().to_string(),
    )
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
    let (_, code, m) =
        error_of(&p.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hanoi_get_state","arguments":[1]}}"#));
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
    post_as(url, session, "2025-06-18", body).await
}

/// A POST of a session that negotiated protocol `version`.
async fn post_as(url: &str, session: Option<&str>, version: &str, body: &str) -> reqwest::Response {
    let mut r =
        reqwest::Client::new().post(url).header("content-type", "application/json").header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        r = r.header("mcp-session-id", s).header("mcp-protocol-version", version);
    }
    r.body(body.to_string()).send().await.unwrap()
}

async fn open_session(url: &str) -> String {
    let (session, body) = open_session_as(url, "2025-06-18").await;
    // No SSE priming event: clients of this version read an empty `data:` as a broken message.
    assert!(!body.lines().any(|l| l.trim() == "data:" || l.trim() == "id: 0"), "a priming event was sent: {body:?}");
    session
}

/// A session that negotiated protocol `version`: its id and the initialize answer's body.
async fn open_session_as(url: &str, version: &str) -> (String, String) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let init = post_as(url, None, version, &init.to_string()).await;
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let body = init.text().await.unwrap();
    assert!(body.contains(&format!("\"protocolVersion\":\"{version}\"")), "{version} was not negotiated: {body}");
    post_as(url, Some(&session), version, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    (session, body)
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
    let r = post(
        url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hanoi_get_state","arguments":"env"}}"#,
    )
    .await;
    let (id, code, m) = error_of(&r.json().await.unwrap());
    assert_eq!((id, code), (json!(4), -32602), "{m}");

    // The session still works (and its answers carry no priming event either),
    // then ends with 200; a second DELETE finds nothing.
    let r = post(
        url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#,
    )
    .await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("optimal_moves") && !body.lines().any(|l| l.trim() == "data:" || l.trim() == "id: 0"), "{body:?}");
    let delete = || reqwest::Client::new().delete(url).header("mcp-session-id", &session).send();
    assert_eq!(delete().await.unwrap().status(), 200);
    assert_eq!(delete().await.unwrap().status(), 404);
}

/// The next event of an event stream, as its `id:` and `data:` lines;
/// None when none comes within `within`.
async fn next_event(stream: &mut reqwest::Response, pending: &mut String, within: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            if event.lines().any(|l| l.starts_with("data:")) {
                return Some(event);
            }
            continue;
        }
        let chunk = tokio::time::timeout_at(deadline, stream.chunk()).await.ok()?.unwrap()?;
        pending.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// A session's standalone GET stream carries its list changes, each event
/// with an id; a second GET while it is open stays open and hears nothing;
/// a GET that names the last event it saw is sent what came after.
#[tokio::test]
async fn over_http_a_sessions_get_stream_hears_list_changes_and_resumes() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &[]);
    let server = http_server(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    let url = server.url.as_str();
    let session = open_session(url).await;
    let get = |last: Option<&str>| {
        let mut r = reqwest::Client::new()
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(last) = last {
            r = r.header("last-event-id", last);
        }
        r.send()
    };
    let mut first = get(None).await.unwrap();
    assert_eq!((first.status().as_u16(), first.headers()["content-type"].to_str().unwrap()), (200, "text/event-stream"));
    let mut second = get(None).await.unwrap();
    assert_eq!(second.status(), 200);
    install(&dir, &component("hello"), "hello.wasm");
    let (mut a, mut b) = (String::new(), String::new());
    let tools = next_event(&mut first, &mut a, Duration::from_secs(10)).await.expect("no list change on the GET stream");
    assert!(tools.contains("id: ludus-out-0") && tools.contains("notifications/tools/list_changed"), "{tools:?}");
    let prompts = next_event(&mut first, &mut a, Duration::from_secs(5)).await.expect("no prompt list change");
    assert!(prompts.contains("id: ludus-out-1") && prompts.contains("notifications/prompts/list_changed"), "{prompts:?}");
    assert_eq!(next_event(&mut second, &mut b, Duration::from_millis(300)).await, None, "the second stream is sent nothing");
    drop((first, second));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut resumed = get(Some("ludus-out-0")).await.unwrap();
    let mut c = String::new();
    let again = next_event(&mut resumed, &mut c, Duration::from_secs(5)).await.expect("the resumed stream got nothing");
    assert!(again.contains("id: ludus-out-1") && again.contains("prompts/list_changed"), "{again:?}");
    // An event no stream of this session sent: an empty stream (an error would have clients retry it for ever).
    let unknown = get(Some("ludus-9-9")).await.unwrap();
    assert_eq!(unknown.status(), 200);
    assert_eq!(unknown.text().await.unwrap(), "");
}

/// A GET or DELETE that cannot be served is refused with what is wrong:
/// no event streams accepted (406), no session named (400), a session not
/// open (404), a protocol without sessions (405, `Allow: POST`) or one not
/// known (400); another method is not allowed (405); a POST that does not
/// accept both answers' types (406) or send JSON (415). The session lives on.
#[tokio::test]
async fn over_http_a_request_that_cannot_be_served_says_why() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.url.as_str();
    let session = open_session(url).await;
    let http = reqwest::Client::new();
    let refusal = async |r: reqwest::RequestBuilder| {
        let r = r.send().await.unwrap();
        let (status, allow) = (r.status().as_u16(), r.headers().get("allow").map(|v| v.to_str().unwrap().to_string()));
        let body: Value = r.json().await.unwrap();
        (status, allow, body["error"]["message"].as_str().unwrap_or_default().to_string())
    };
    let get = || http.get(url).header("accept", "text/event-stream");
    let (status, _, why) = refusal(http.get(url).header("mcp-session-id", &session)).await;
    assert_eq!(status, 406, "{why}");
    assert!(why.contains("text/event-stream"), "{why}");
    let (status, _, why) = refusal(get()).await;
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("Mcp-Session-Id"), "{why}");
    let (status, _, why) = refusal(get().header("mcp-session-id", "no-such-session")).await;
    assert_eq!(status, 404, "{why}");
    assert!(why.contains("no-such-session"), "{why}");
    for request in [get(), http.delete(url)] {
        let (status, allow, why) = refusal(request.header("mcp-session-id", &session).header("mcp-protocol-version", "2026-07-28")).await;
        assert_eq!((status, allow.as_deref()), (405, Some("POST")), "{why}");
        assert!(why.contains("keeps no MCP sessions"), "{why}");
    }
    let (status, _, why) = refusal(get().header("mcp-session-id", &session).header("mcp-protocol-version", "1999-01-01")).await;
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("1999-01-01") && why.contains("2025-11-25"), "{why}");
    let (status, allow, _) = refusal(http.put(url).header("mcp-session-id", &session)).await;
    assert_eq!((status, allow.as_deref()), (405, Some("GET, POST, DELETE")));
    // A POST that does not accept both answers' types, or does not send JSON.
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    let posting = |accept: &'static str, content: &'static str| {
        http.post(url).header("mcp-session-id", &session).header("accept", accept).header("content-type", content).body(ping)
    };
    let (status, _, why) = refusal(posting("application/json", "application/json")).await;
    assert_eq!(status, 406, "{why}");
    assert!(why.contains("text/event-stream"), "{why}");
    let (status, _, why) = refusal(posting("application/json, text/event-stream", "text/plain")).await;
    assert_eq!(status, 415, "{why}");
    assert!(why.contains("Content-Type: application/json"), "{why}");
    // A POST whose protocol headers do not agree with its body: JSON-RPC
    // errors with the request's id.
    let posting = |version: &'static str, body: &'static str| {
        http.post(url)
            .header("mcp-session-id", &session)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version)
            .body(body)
    };
    let errors = async |r: reqwest::RequestBuilder| {
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        (status, body["id"].clone(), body["error"]["code"].as_i64().unwrap_or_default(), body["error"]["message"].to_string())
    };
    let (status, id, code, why) = errors(posting("1999-01-01", ping)).await;
    assert_eq!((status, id, code), (400, json!(3), -32600), "{why}");
    assert!(why.contains("1999-01-01") && why.contains("2025-11-25"), "{why}");
    let (status, _, code, why) = errors(posting("2026-07-28", ping)).await;
    assert_eq!((status, code), (400, -32602), "2026-07-28 names its version in each request's _meta: {why}");
    let named = r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}"#;
    let (status, _, code, why) = errors(posting("2025-11-25", named)).await;
    assert_eq!((status, code), (400, -32020), "{why}");
    assert!(why.contains("2025-11-25") && why.contains("2025-06-18"), "{why}");
    let r = post(url, Some(&session), r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(r.status(), 200, "the session lives on");
    let bare = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#);
    let (status, _, _, why) = errors(bare).await;
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("Mcp-Session-Id"), "{why}");
    assert_eq!(http.delete(url).header("mcp-session-id", &session).send().await.unwrap().status(), 200);
}

/// An `initialize` whose Accept header has a quoted parameter (a comma
/// inside it) opens a session all the same, which then works as any other
/// and closes with DELETE.
#[tokio::test]
async fn over_http_an_accept_with_quoted_parameters_opens_a_session() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.url.as_str();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json;profile=\"mcp, v1\", text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let kind = r.headers()["content-type"].to_str().unwrap().to_string();
    assert_eq!(kind, "application/json");
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    assert!(r.text().await.unwrap().contains("\"protocolVersion\":\"2025-06-18\""));
    post(url, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let r = post(
        url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#,
    )
    .await;
    assert!(r.text().await.unwrap().contains("optimal_moves"));
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
    let n =
        tokio::time::timeout(Duration::from_secs(2), ninth.read(&mut buf)).await.expect("the ninth connection stayed open").unwrap_or(0);
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

/// Over HTTP the MCP sessions are capped: at the cap a new `initialize`
/// takes the place of the longest-idle session (its id then finds nothing),
/// and a deleted session frees its slot.
#[tokio::test]
async fn mcp_sessions_are_capped_and_the_longest_idle_makes_room() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_mcp_sessions = 2\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let url = server.url.as_str();
    let first = open_session(url).await;
    let second = open_session(url).await;
    let third = open_session(url).await;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    assert_eq!(post(url, Some(&first), ping).await.status(), 404, "the longest-idle session made room");
    assert_eq!(post(url, Some(&second), ping).await.status(), 200);
    let deleted = reqwest::Client::new().delete(url).header("mcp-session-id", &third).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    open_session(url).await;
    assert_eq!(post(url, Some(&second), ping).await.status(), 200, "a deleted session's slot was free: nobody else had to go");
}

/// An MCP session busy with tool calls stays open however long it lives; one
/// left idle past `mcp_session_idle_ms` is closed (404 afterwards).
#[tokio::test]
async fn idle_mcp_sessions_expire_and_busy_ones_do_not() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmcp_session_idle_ms = 400\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let url = server.url.as_str();
    let session = open_session(url).await;
    let get = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ludus_sessions","arguments":{}}}"#;
    for _ in 0..15 {
        let r = post(url, Some(&session), get).await;
        assert_eq!(r.status(), 200, "a busy session was closed");
        r.text().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(post(url, Some(&session), get).await.status(), 404, "an idle session was kept");
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
    // Only formats JSON Schema defines: validators reject `uint`, `uint64` and the like.
    for t in &tools {
        let schemas = serde_json::to_string(&(&t.input_schema, &t.output_schema)).unwrap();
        for made_up in ["\"uint", "\"int32\"", "\"int64\"", "\"double\"", "\"float\""] {
            assert!(!schemas.contains(&format!("\"format\":{made_up}")), "{} names a format JSON Schema lacks: {schemas}", t.name);
        }
    }
}

/// Every tool's input and output schema, the bundled games', the host's and
/// a plugin's with content blocks and prompts, is a valid JSON Schema 2020-12
/// (checked against the draft's meta-schema) that a validator compiles.
#[tokio::test]
async fn every_tools_schemas_are_valid_json_schema_2020_12() {
    let work = scratch();
    let plugins = plugins_dir(work.path(), &["conformance", "hello"]);
    let c = stdio(&["--plugins", plugins.to_str().unwrap()], work.path()).await;
    let tools = c.tools().await;
    assert!(tools.len() >= 50, "every game's tools are listed: {}", tools.len());
    for t in &tools {
        let schemas = [Some(&t.input_schema), t.output_schema.as_ref()];
        for schema in schemas.into_iter().flatten() {
            let schema = Value::Object((**schema).clone());
            if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
                panic!("{}: not a valid JSON Schema 2020-12 ({e}): {schema}", t.name);
            }
            let compiled = jsonschema::draft202012::options().build(&schema);
            assert!(compiled.is_ok(), "{}: {:?}", t.name, compiled.err());
        }
    }
    c.close().await;
}

/// Requests written all at once over stdio: quick calls are answered in the
/// order they were sent, calls on one session run in that order too, and a
/// call that waits for the game holds up none of those behind it. (A bump
/// that finds its session busy with the wait's rerun is not quick: it moves
/// to a task and may be answered after later calls on other sessions, so
/// the order is checked on the puzzle's calls, and the bumps by their counts.)
#[test]
fn over_stdio_quick_calls_answer_in_order_and_a_wait_holds_up_nothing() {
    let work = scratch();
    let (mut p, counter) = Pipes::with_hello_counter(work.path());
    let env = p.tool(3, "hanoi_init_simulator", json!({"n": 3}))["env_id"].clone();
    let mut batch = call_line(10, "hello_wait_for", json!({"counter_id": counter, "at_least": 3})) + "\n";
    for id in 11..=13 {
        batch += &(call_line(id, "hello_bump", json!({"counter_id": counter})) + "\n");
    }
    for id in 14..214 {
        batch += &(call_line(id, "hanoi_get_state", json!({"env_id": env})) + "\n");
    }
    p.write(batch.as_bytes());
    let answers: Vec<Value> = (0..204).map(|_| p.read_answer()).collect();
    let order: Vec<u64> = answers.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    let quick: Vec<u64> = order.iter().copied().filter(|&id| id >= 14).collect();
    assert_eq!(quick, (14..214).collect::<Vec<_>>(), "quick calls out of request order");
    let count_of = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap()["result"]["structuredContent"]["count"].clone();
    let counts: Vec<Value> = (11..=13).map(count_of).collect();
    assert_eq!(counts, [json!(1), json!(2), json!(3)], "the bumps ran in the order sent: {answers:?}");
    // The wait ended on the third bump (not at its deadline, which a reader
    // held up by the wait would have forced); its answer may come out just
    // before the third bump's own.
    let wait = answers.iter().find(|a| a["id"] == 10).unwrap();
    assert_eq!(wait["result"]["structuredContent"]["count"], 3, "{wait}");
}

/// `tools/list` comes in pages of `limits.list_page_size`, each pointing at
/// the next with `nextCursor`; together they are every tool once, and a
/// cursor the server did not give is refused.
#[test]
fn tools_list_comes_in_pages_that_follow_their_cursors() {
    let work = scratch();
    let mut p = Pipes::start_configured(work.path(), "[limits]\nlist_page_size = 5\n", &[]);
    let mut names: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1.. {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = p.ask(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}).to_string());
        let tools = page["result"]["tools"].as_array().unwrap_or_else(|| panic!("{page}"));
        assert!(tools.len() <= 5, "{} tools on one page", tools.len());
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_string()));
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let unique: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a tool came twice: {names:?}");
    assert!(names.len() > 30 && names.contains(&"hanoi_get_state".to_string()) && names.contains(&"ludus_games".to_string()), "{names:?}");
    let bad = p.ask(r#"{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{"cursor":"page-7"}}"#);
    let (id, code, message) = error_of(&bad);
    assert_eq!((id, code), (json!(99), -32602));
    assert!(message.contains("cursor \"page-7\" is not one this server gave"), "{message}");
}

/// What a game logs during a call reaches the calling client as MCP logging
/// (`notifications/message`, before the call's answer), filtered by the
/// level the client set with `logging/setLevel` (info until it sets one).
#[test]
fn a_games_log_lines_reach_its_caller_at_the_level_it_set() {
    let work = scratch();
    let (mut p, counter) = Pipes::with_hello_counter(work.path());
    p.send(&call_line(10, "hello_bump", json!({"counter_id": counter})));
    let line = p.read();
    assert_eq!(line["method"], "notifications/message", "the log line comes before the answer: {line}");
    assert_eq!(line["params"], json!({"level": "info", "logger": "hello_bump", "data": "bumped by 1 to 1"}));
    assert_eq!(p.read()["id"], 10);

    let set = p.ask(r#"{"jsonrpc":"2.0","id":11,"method":"logging/setLevel","params":{"level":"warning"}}"#);
    assert_eq!(set["result"], json!({}), "{set}");
    p.send(&call_line(12, "hello_bump", json!({"counter_id": counter, "by": 999})));
    let line = p.read();
    assert_eq!(
        line["params"],
        json!({"level": "warning", "logger": "hello_bump", "data": "the counter is past 1000"}),
        "info is filtered out: {line}"
    );
    assert_eq!(p.read()["id"], 12);
    let bad = p.ask(r#"{"jsonrpc":"2.0","id":13,"method":"logging/setLevel","params":{"level":"loud"}}"#);
    let (_, code, message) = error_of(&bad);
    assert_eq!(code, -32602, "{bad}");
    assert!(message.contains("`level` must be one of debug, info, notice, warning"), "{message}");
}

/// The bundled chess game logs how its engine found a move to the next
/// call of a player, as MCP logging on that call's stream.
#[test]
fn chess_tells_the_caller_how_its_engine_found_its_move() {
    let work = scratch();
    let mut p = Pipes::start_with(work.path(), &["--games", "chess"]);
    let game = p.tool(1, "chess_create_game", json!({"type": "computer", "color": "black", "seed": 7}))["game_id"].clone();
    p.send(&call_line(2, "chess_wait_for_next_turn", json!({"game_id": game})));
    let line = p.read();
    assert_eq!(line["method"], "notifications/message", "{line}");
    let said = line["params"]["data"].as_str().unwrap();
    assert!(said.starts_with("the engine (level 5) played ") && said.contains(" positions to depth "), "{said}");
    assert_eq!(line["params"]["logger"], "chess_wait_for_next_turn");
    assert_eq!(p.read()["id"], 2);
}

/// Writes `batch` from a thread of its own (the pipe blocks a writer until
/// the server reads) and returns when it is all written, failing after `within`.
/// Join it to give the pipe back.
fn write_in_background(p: &mut Pipes, batch: String) -> std::thread::JoinHandle<std::process::ChildStdin> {
    let mut input = p.input.take().expect("stdin is open");
    std::thread::spawn(move || {
        input.write_all(batch.as_bytes()).unwrap();
        input.flush().unwrap();
        input
    })
}

fn get_states(ids: std::ops::Range<u64>, env: &Value) -> String {
    ids.map(|id| call_line(id, "hanoi_get_state", json!({"env_id": env})) + "\n").collect()
}

/// A client that writes 10,000 requests before it reads a single answer:
/// the server reads on while its answers wait for the client (if it waited
/// for stdout to take them, both pipes would fill and neither side would
/// move again), and every answer comes, in request order.
#[test]
fn over_stdio_ten_thousand_requests_written_before_reading_are_all_answered_in_order() {
    let work = scratch();
    let mut p = Pipes::start(work.path());
    let env = p.tool(1, "hanoi_init_simulator", json!({"n": 3}))["env_id"].clone();
    let writer = write_in_background(&mut p, get_states(100..10_100, &env));
    let started = Instant::now();
    while !writer.is_finished() {
        assert!(started.elapsed() < Duration::from_secs(60), "the server stopped reading requests while its answers went unread");
        std::thread::sleep(Duration::from_millis(20));
    }
    p.input = Some(writer.join().unwrap());
    let ids: Vec<u64> = (0..10_000)
        .map(|_| {
            let a = p.read();
            assert_eq!(a["result"]["structuredContent"]["simulator_params"]["n"], 3, "{a}");
            a["id"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(ids, (100..10_100).collect::<Vec<_>>(), "answers out of request order");
}

/// A client that leaves more than `limits.max_unread_output_bytes` of
/// answers unread: its further requests are refused, not run, with an error
/// that says why; past twice the limit the server stops reading until the
/// client reads. Nothing is lost: every request gets exactly one answer, in
/// order, and the refused ones succeed when sent again.
#[test]
fn over_stdio_a_client_that_does_not_read_is_refused_and_loses_nothing() {
    let work = scratch();
    let mut p = Pipes::start_configured(work.path(), "[limits]\nmax_unread_output_bytes = 65536\n", &[]);
    let env = p.tool(1, "hanoi_init_simulator", json!({"n": 3}))["env_id"].clone();
    let writer = write_in_background(&mut p, get_states(100..3_100, &env));
    // Read nothing for a while: the server fills the pipe, refuses, then stops reading.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!writer.is_finished(), "the server read every request although 64 KiB of answers went unread");
    let answers: Vec<Value> = (0..3_000).map(|_| p.read()).collect();
    p.input = Some(writer.join().unwrap());
    let ids: Vec<u64> = answers.iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (100..3_100).collect::<Vec<_>>(), "one answer per request, in order");
    let refused: Vec<u64> = answers.iter().filter(|a| a.get("error").is_some()).map(|a| a["id"].as_u64().unwrap()).collect();
    assert!(!refused.is_empty() && refused.len() < 3_000, "{} refused", refused.len());
    let (_, code, why) = error_of(answers.iter().find(|a| a.get("error").is_some()).unwrap());
    assert_eq!(code, -32000);
    assert!(why.contains("not run") && why.contains("limits.max_unread_output_bytes") && why.contains("send this request again"), "{why}");
    // The client reads now: every refused request, sent again, is run.
    for id in refused {
        assert_eq!(p.tool(id, "hanoi_get_state", json!({"env_id": env}))["simulator_params"]["n"], 3);
    }
}

/// `notifications/cancelled` over stdio ends a waiting call at once, and the
/// cancelled request gets no answer.
#[test]
fn over_stdio_a_cancelled_wait_ends_and_is_not_answered() {
    let work = scratch();
    let (mut p, counter) = Pipes::with_hello_counter(work.path());
    p.send(&call_line(20, "hello_wait_for", json!({"counter_id": counter, "at_least": 50})));
    p.await_waiting_calls(1, Duration::from_secs(3), "the call never started waiting");
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":20,"reason":"gave up"}}"#);
    p.await_waiting_calls(0, Duration::from_secs(2), "the wait did not end on cancellation");
    let next = p.ask(r#"{"jsonrpc":"2.0","id":21,"method":"ping"}"#);
    assert_eq!(next["id"], 21, "the cancelled request was answered: {next}");
}

/// A stdio client that closes its end while a call waits: the wait is
/// cancelled with it and the server exits at once, not when the wait's
/// deadline (here 5 s) runs out.
#[test]
fn over_stdio_closing_stdin_ends_waiting_calls_and_the_server() {
    let work = scratch();
    let (mut p, counter) = Pipes::with_hello_counter(work.path());
    p.send(&call_line(30, "hello_wait_for", json!({"counter_id": counter, "at_least": 50})));
    p.await_waiting_calls(1, Duration::from_secs(3), "the call never started waiting");
    p.input = None;
    let t = Instant::now();
    while p.child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(3), "the server kept running after its client closed stdin");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SSE event ids never repeat within a session (a client resuming with
/// `Last-Event-ID` must not be able to name two events). A 2025-11-25
/// session gets its tool calls (and pings) answered on resumable streams
/// whose ids Ludus mints (`ludus-<stream>-<n>`: a priming event, then one id
/// per event); its lists are answered as plain JSON, with no events. Every
/// id is collected, and the ones Ludus mints must be there.
#[tokio::test]
async fn over_http_event_ids_do_not_repeat_in_a_session() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.url.as_str();
    let version = "2025-11-25";
    let (session, _) = open_session_as(url, version).await;
    let mut ids = Vec::new();
    let mut resumable = 0;
    for (id, body) in [
        (2, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
        (3, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hanoi_init_simulator", "arguments": {"n": 2}}})),
        (4, json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})),
        (5, json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "hanoi_init_simulator", "arguments": {"n": 3}}})),
        (6, json!({"jsonrpc": "2.0", "id": 6, "method": "resources/list"})),
        (7, json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hanoi_init_simulator", "arguments": {"n": 4}}})),
        (8, json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})),
    ] {
        let answer = post_as(url, Some(&session), version, &body.to_string()).await;
        let plain = answer.headers()["content-type"] == "application/json";
        let text = answer.text().await.unwrap();
        if plain {
            assert!(body["method"].as_str().is_some_and(|m| m.ends_with("/list")), "only lists answer as plain JSON here: {text}");
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["id"], id, "{text}");
            continue;
        }
        let events = sse_events(&text);
        let answer = events
            .iter()
            .find(|(_, data)| serde_json::from_str::<Value>(data).is_ok_and(|m| m["id"] == id))
            .unwrap_or_else(|| panic!("no answer to request {id}: {text:?}"));
        // Ludus's own lane (tool calls and pings): primed, every event with its id.
        if matches!(body["method"].as_str(), Some("tools/call" | "ping")) {
            resumable += 1;
            assert!(events[0].0.as_deref().is_some_and(|e| e.starts_with("ludus-")), "no priming event with an id first: {text:?}");
            assert!(answer.0.as_deref().is_some_and(|e| e.starts_with("ludus-")), "the answer to {id} has no resumable id: {text:?}");
        }
        ids.extend(events.into_iter().filter_map(|(id, _)| id));
    }
    let minted = ids.iter().filter(|id| id.starts_with("ludus-")).count();
    assert!(minted >= 2 * resumable, "a priming id and an answer's id per resumable stream: {ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "repeated event ids: {ids:?}");
}

/// The events of an SSE body: each one's `id:` (if any) and its `data:`.
fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    let mut events = Vec::new();
    for raw in body.replace("\r\n", "\n").split("\n\n") {
        let (mut id, mut data) = (None, String::new());
        for line in raw.lines() {
            match line.split_once(':').map(|(k, v)| (k, v.trim_start())) {
                Some(("id", v)) => id = Some(v.to_string()),
                Some(("data", v)) => data += v,
                _ => {} // retry, comments (keep-alive), blank fields
            }
        }
        if id.is_some() || !data.is_empty() {
            events.push((id, data));
        }
    }
    events
}

/// Node.js clients (Claude Desktop among them) give their children Unix
/// sockets, not pipes, and a client may hand over one socket as both stdin
/// and stdout: then the writer's non-blocking mode is the reader's too, and
/// the reader must wait for input rather than take "would block" for an end.
#[test]
fn over_stdio_unix_sockets_work_separate_or_shared() {
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    let work = scratch();
    let cfg = config(work.path(), "");
    for shared in [false, true] {
        // The client writes to `to` and reads answers from `from`.
        let (to, server_in) = UnixStream::pair().unwrap();
        let (from, server_out) =
            if shared { (to.try_clone().unwrap(), server_in.try_clone().unwrap()) } else { UnixStream::pair().unwrap() };
        let mut child = Command::new(BIN)
            .args(["serve", "--config", cfg.to_str().unwrap(), "--store", "memory"])
            .env("LUDUS_LOG", "error")
            .stdin(Stdio::from(OwnedFd::from(server_in)))
            .stdout(Stdio::from(OwnedFd::from(server_out)))
            .spawn()
            .unwrap();
        converse(&to, &from);
        to.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(child.wait().unwrap().success(), "the server ends when its input does (shared: {shared})");
    }
}

/// initialize, then a tool call and a ping with a pause between them (the
/// reader must wait for the next line, not give up), over any two streams.
fn converse(mut to: &std::os::unix::net::UnixStream, from: &std::os::unix::net::UnixStream) {
    let mut from = BufReader::new(from);
    let mut ask = |line: &str, answered: bool| -> Value {
        writeln!(to, "{line}").unwrap();
        if !answered {
            return Value::Null;
        }
        let mut answer = String::new();
        from.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    };
    let init = ask(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        true,
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    ask(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, false);
    let game = ask(&call_line(1, "hanoi_init_simulator", json!({"n": 3})), true);
    assert!(game["result"]["structuredContent"]["env_id"].is_string(), "{game}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, true)["id"], 2);
}

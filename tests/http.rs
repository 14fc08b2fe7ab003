//! Streamable HTTP: two agents in one game, long-poll waits with progress,
//! 2026-07-28 clients hearing about reloads, and Origin checks.

mod common;

use std::time::{Duration, Instant};

use common::*;
use rmcp::model::{CallToolRequestParams, SubscriptionFilter};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

async fn hello_server(work: &std::path::Path) -> HttpServer {
    hello_server_with(work, "").await
}

/// An HTTP server with the hello plugin and `config_toml` as its config.
async fn hello_server_with(work: &std::path::Path, config_toml: &str) -> HttpServer {
    let dir = plugins_dir(work, &["hello"]);
    let cfg = config(work, config_toml);
    http_server(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work).await
}

#[tokio::test]
async fn solves_hanoi_over_http() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let c = http_client(&server).await;
    let env = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let r = c.ok("hanoi_execute_moves", json!({"env_id": env, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2]]})).await;
    assert_eq!(r["goal_reached"], true);
    c.close().await;
}

/// A tool call that sends nothing before its answer comes back as plain
/// JSON, one body with its length; one that asks for progress comes back
/// on an event stream. Both answer the same game.
#[tokio::test]
async fn a_call_that_sends_nothing_first_is_answered_as_plain_json() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let (http, session) = raw_session_as(&server.url, None).await;
    let start = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#;
    let answer = raw_call(&http, &server.url, &session, start.into()).send().await.unwrap();
    assert_eq!(answer.headers()["content-type"], "application/json");
    assert!(answer.headers().get("content-length").is_some(), "{:?}", answer.headers());
    let started: Value = answer.json().await.unwrap();
    assert_eq!(started["id"], 1, "{started}");
    assert!(started["result"].get("resultType").is_none(), "2025-06-18 results have no resultType: {started}");
    let env = started["result"]["structuredContent"]["env_id"].as_str().unwrap().to_string();

    let state = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "hanoi_get_state", "arguments": {"env_id": env}, "_meta": {"progressToken": "p"}}});
    let answer = raw_call(&http, &server.url, &session, state.to_string()).send().await.unwrap();
    assert_eq!(answer.headers()["content-type"], "text/event-stream", "asked for progress: an event stream");
    let body = answer.text().await.unwrap();
    assert!(body.starts_with("data: ") && body.contains("\"id\":2") && body.contains("TowerOfHanoi"), "{body}");

    // A list is answered alone too (rmcp's service answered it on an event stream).
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let answer = raw_call(&http, &server.url, &session, list.into()).send().await.unwrap();
    assert_eq!(answer.headers()["content-type"], "application/json");
    let listed: Value = answer.json().await.unwrap();
    let names: Vec<&str> = listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(&names[..2], ["ludus_games", "ludus_sessions"], "host tools first: {names:?}");
    assert!(names.contains(&"hanoi_get_state") && listed["result"].get("resultType").is_none(), "{listed}");
}

/// A stateless 2026-07-28 client (no MCP session), as the official Python
/// SDK's default client asks: `server/discover`, then tool calls,
/// `tools/list`, `prompts/list` and a resource read, answered as plain
/// JSON, results saying `resultType` as that protocol's do; a tool's name
/// may come Base64-wrapped in its `Mcp-Name` header. A `Mcp-Name` that is
/// not the body's tool gets 400 (-32020), and a ping (which 2026-07-28 has
/// not) 404 (-32601).
#[tokio::test]
async fn a_stateless_client_is_answered_as_plain_json_with_result_types() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.client_url.clone().expect("a loopback server prints a URL with its token");
    let http = reqwest::Client::new();
    let post = |method: &str, name: Option<&str>, mut params: Value| {
        params["_meta"] =
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request.body(body.to_string())
    };
    let plain = |answer: reqwest::Response| async move {
        assert_eq!(answer.headers()["content-type"], "application/json");
        let said: Value = answer.json().await.unwrap();
        assert_eq!((said["id"].clone(), said["result"]["resultType"].clone()), (json!(7), json!("complete")), "{said}");
        said["result"].clone()
    };
    let discovered = plain(post("server/discover", None, json!({})).send().await.unwrap()).await;
    assert!(discovered["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")), "{discovered}");
    let started = post("tools/call", Some("hanoi_init_simulator"), json!({"name": "hanoi_init_simulator", "arguments": {"n": 3}}));
    let env = plain(started.send().await.unwrap()).await["structuredContent"]["env_id"].clone();
    let state = post("tools/call", Some("hanoi_get_state"), json!({"name": "hanoi_get_state", "arguments": {"env_id": env}}));
    let state = plain(state.send().await.unwrap()).await;
    assert_eq!(state["structuredContent"]["moves_made"], 0, "the game is the caller's from one request to the next: {state}");
    // `tools/list` with the caching hints 2026-07-28 asks for.
    let listed = plain(post("tools/list", None, json!({})).send().await.unwrap()).await;
    assert_eq!(listed["cacheScope"], "public");
    // The requests that only read likewise, with rmcp's hints for what they do not set.
    let prompts = plain(post("prompts/list", None, json!({})).send().await.unwrap()).await;
    assert!(prompts["prompts"].as_array().is_some_and(|p| !p.is_empty()) && prompts["cacheScope"] == "private", "{prompts}");
    let board = post("resources/read", Some("ui://chess/board"), json!({"uri": "ui://chess/board"}));
    let board = plain(board.send().await.unwrap()).await;
    assert_eq!((board["contents"][0]["uri"].as_str(), board["ttlMs"].as_u64()), (Some("ui://chess/board"), Some(0)), "{board}");

    // A name sent Base64-wrapped (SEP-2243) is read as its text.
    let wrapped =
        post("tools/call", Some("=?base64?aGFub2lfZ2V0X3N0YXRl?="), json!({"name": "hanoi_get_state", "arguments": {"env_id": env}}));
    assert_eq!(plain(wrapped.send().await.unwrap()).await["structuredContent"]["moves_made"], 0);

    let refused = async |request: reqwest::RequestBuilder| {
        let answer = request.send().await.unwrap();
        let status = answer.status().as_u16();
        let said: Value = answer.json().await.unwrap();
        assert_eq!(said["id"], 7, "{said}");
        (status, said["error"]["code"].as_i64().unwrap(), said["error"]["message"].as_str().unwrap().to_string())
    };
    let misnamed = post("tools/call", Some("hanoi_execute_move"), json!({"name": "hanoi_get_state", "arguments": {"env_id": env}}));
    let (status, code, why) = refused(misnamed).await;
    assert_eq!((status, code), (400, -32020), "{why}");
    assert!(why.contains("Mcp-Name header (hanoi_execute_move) is not what the body names (hanoi_get_state)"), "{why}");
    let (status, code, why) = refused(post("ping", None, json!({}))).await;
    assert_eq!((status, code), (404, -32601), "2026-07-28 has no ping: {why}");
    // A notification is taken (there is nothing in flight for it to act on).
    let note = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "notifications/cancelled")
        .body(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}).to_string());
    assert_eq!(note.send().await.unwrap().status(), 202);
}

/// A 2026-07-28 request gets its game's log lines only when its `_meta`
/// names a level (`io.modelcontextprotocol/logLevel`), at or above it, on
/// its own stream before its answer; without one it gets none (the spec's
/// MUST NOT), and neither a progress token nor an earlier request's level
/// changes that.
#[tokio::test]
async fn a_stateless_call_hears_its_log_lines_at_the_level_its_meta_names() {
    let work = scratch();
    let server = hello_server(work.path()).await;
    let url = server.client_url.clone().expect("a loopback server prints a URL with its token");
    let http = reqwest::Client::new();
    let call = |id: u64, name: &str, arguments: Value, meta: Value| {
        let mut meta_object =
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        meta_object.as_object_mut().unwrap().extend(meta.as_object().unwrap().clone());
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta_object}});
        let request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(body.to_string());
        async move {
            let answer = request.send().await.unwrap();
            assert_eq!(answer.status(), 200);
            sse_messages(&answer.text().await.unwrap())
        }
    };
    let logged = |messages: &[Value]| -> Vec<Value> {
        messages.iter().filter(|m| m["method"] == "notifications/message").map(|m| m["params"].clone()).collect()
    };
    let answer = |messages: &[Value], id: u64| {
        let last = messages.last().unwrap_or_else(|| panic!("no answer: {messages:?}"));
        assert_eq!(last["id"], id, "the answer comes last: {messages:?}");
        last["result"]["structuredContent"].clone()
    };
    let started = call(1, "hello_start", json!({}), json!({})).await;
    let counter = answer(&started, 1)["counter_id"].clone();

    let info = call(2, "hello_bump", json!({"counter_id": counter}), json!({"io.modelcontextprotocol/logLevel": "info"})).await;
    assert_eq!(logged(&info), [json!({"level": "info", "logger": "hello_bump", "data": "bumped by 1 to 1"})], "{info:?}");
    assert_eq!(answer(&info, 2)["count"], 1);

    let unasked = call(3, "hello_bump", json!({"counter_id": counter}), json!({})).await;
    assert_eq!((logged(&unasked), answer(&unasked, 3)["count"].clone()), (vec![], json!(2)), "{unasked:?}");
    let with_progress = call(4, "hello_bump", json!({"counter_id": counter}), json!({"progressToken": "p4"})).await;
    assert_eq!(logged(&with_progress), Vec::<Value>::new(), "{with_progress:?}");

    let warning = json!({"io.modelcontextprotocol/logLevel": "warning"});
    let quiet = call(5, "hello_bump", json!({"counter_id": counter}), warning.clone()).await;
    assert_eq!((logged(&quiet), answer(&quiet, 5)["count"].clone()), (vec![], json!(4)), "info is below warning: {quiet:?}");
    let loud = call(6, "hello_bump", json!({"counter_id": counter, "by": 999}), warning).await;
    assert_eq!(logged(&loud), [json!({"level": "warning", "logger": "hello_bump", "data": "the counter is past 1000"})], "{loud:?}");
}

#[tokio::test]
async fn a_waiting_call_returns_when_another_client_changes_the_session() {
    let work = scratch();
    // Two connections of one caller (the same bearer token): the game is both's.
    let (token, lines) = issue_token("agent");
    let server = hello_server_with(work.path(), &lines).await;
    let (a, b) = (http_client_with_token(&server, &token).await, http_client_with_token(&server, &token).await);
    let id = a.ok("hello_start", json!({})).await["counter_id"].clone();

    let waiter = {
        let id = id.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            let r = a.ok("hello_wait_for", json!({"counter_id": id, "at_least": 3})).await;
            (r, t.elapsed(), a)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        b.ok("hello_bump", json!({"counter_id": id})).await;
    }
    let (r, took, a) = waiter.await.unwrap();
    assert_eq!(r["count"], 3);
    assert!(took < Duration::from_secs(4), "woke on the change, not the deadline: {took:?}");

    // Nobody bumps: the wait ends at the tool's deadline (5 s) with the plugin's final answer.
    let t = Instant::now();
    let e = a.err("hello_wait_for", json!({"counter_id": id, "at_least": 100})).await;
    assert!(e.contains("timed out") && e.contains("call this tool again"), "{e}");
    assert!(t.elapsed() >= Duration::from_millis(4900), "{:?}", t.elapsed());
    a.close().await;
    b.close().await;
}

/// Calls that keep the CPU for long (guests spinning until their time limit)
/// do not keep a quick call on another connection waiting: more of them
/// than the server lets work at once (four a core), and a ping on another
/// connection is answered while every one of them still spins.
#[tokio::test]
async fn calls_that_run_long_do_not_keep_a_quick_one_waiting() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["hostile"]);
    let cfg = config(work.path(), "[plugins.hostile]\ncall_timeout_ms = 4000\n");
    let server = http_server(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut spinners = Vec::new();
    for _ in 0..4 * cores + 1 {
        let c = http_client(&server).await;
        let id = text(&c.call("hostile_start", json!({})).await);
        spinners.push(tokio::spawn(async move {
            let e = c.err("hostile_spin", json!({"id": id})).await;
            (e, Instant::now())
        }));
    }
    let quick = http_client(&server).await;
    let bystander = text(&quick.call("hostile_start", json!({})).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(text(&quick.call("hostile_ping", json!({"id": bystander})).await), "pong 1");
    let answered = Instant::now();
    for spinner in spinners {
        let (e, ended) = spinner.await.unwrap();
        assert!(e.contains("CPU limit of 4000 ms"), "{e}");
        assert!(ended > answered, "the ping was answered only after a long call ended");
    }
    quick.close().await;
}

/// A wait asked for progress sends progress notifications, each carrying the
/// token the request sent in `_meta.progressToken`: a token of our own over
/// raw HTTP (rmcp's client puts its own in every request), then rmcp's
/// client, whose notifications must carry the token it sent.
#[tokio::test]
async fn long_waits_send_progress_when_asked() {
    let work = scratch();
    let server = hello_server(work.path()).await;

    let (http, session) = raw_session_as(&server.url, None).await;
    let start = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hello_start", "arguments": {}}});
    let body = raw_call(&http, &server.url, &session, start.to_string()).send().await.unwrap().text().await.unwrap();
    let started = sse_messages(&body).into_iter().find(|m| m["id"] == 1).unwrap_or_else(|| panic!("no answer: {body:?}"));
    let id = started["result"]["structuredContent"]["counter_id"].clone();
    assert!(id.is_string(), "{started}");
    let wait = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello_wait_for",
        "arguments": {"counter_id": id, "at_least": 1}, "_meta": {"progressToken": "wait-w1"}}});
    let body = raw_call(&http, &server.url, &session, wait.to_string()).send().await.unwrap().text().await.unwrap();
    let messages = sse_messages(&body);
    let answer = messages.iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("no answer: {body:?}"));
    assert_eq!(answer["result"]["isError"], true, "no bump: the wait times out: {answer}");
    let progress: Vec<&Value> = messages.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "no progress notification during a 5 s wait: {body:?}");
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], "wait-w1", "not the token the request sent: {p}");
    }
    let p = &progress[0]["params"];
    assert!(p["total"].as_f64().is_some_and(|t| t >= 4.0), "the total is the wait's deadline: {p}");
    assert!(p["message"].as_str().unwrap_or_default().contains("waiting"), "{p}");

    // Through rmcp's client: every notification it hears carries the token it sent.
    let mut c = http_client(&server).await;
    let id = c.ok("hello_start", json!({})).await["counter_id"].clone();
    let (r, sent) = c.call_noting_progress_token("hello_wait_for", json!({"counter_id": id, "at_least": 1})).await;
    assert_eq!(r.is_error, Some(true), "no bump: the wait times out");
    let first = tokio::time::timeout(Duration::from_secs(5), c.progress.recv())
        .await
        .expect("a progress notification during a 5 s wait")
        .expect("client closed");
    let mut heard = vec![first];
    while let Ok(p) = c.progress.try_recv() {
        heard.push(p);
    }
    for p in &heard {
        assert_eq!(p.progress_token, sent, "not the token the request sent: {p:?}");
    }
    assert!(heard[0].total.is_some_and(|t| t >= 4.0), "the total is the wait's deadline: {:?}", heard[0]);
    assert!(heard[0].message.clone().unwrap_or_default().contains("waiting"), "{:?}", heard[0]);
    c.close().await;
}

/// The JSON-RPC messages of an SSE body (its `data:` lines), in order; a
/// plain JSON body is one message.
fn sse_messages(body: &str) -> Vec<Value> {
    if body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"))];
    }
    let mut out = Vec::new();
    for event in body.replace("\r\n", "\n").split("\n\n") {
        let data: String = event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
        if !data.is_empty() {
            out.push(serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data:?}")));
        }
    }
    out
}

#[tokio::test]
async fn modern_clients_hear_tool_changes_on_subscriptions_listen() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &[]);
    let server = http_server(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::LATEST] };
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("2026-07-28 discovery");
    let mut sub = client.peer().listen(SubscriptionFilter::builder().tools_list_changed().build()).await.unwrap();
    install(&dir, &component("hello"), "hello.wasm");
    let note = tokio::time::timeout(Duration::from_secs(10), sub.next()).await.expect("no notification in time").unwrap();
    assert!(format!("{note:?}").contains("ToolListChanged"), "{note:?}");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "hello_greet"));
    drop(sub);
    let _ = client.cancel().await;
}

/// A 2026-07-28 client follows a game's resource on `subscriptions/listen`:
/// every move made by its players (here a client of the older protocol)
/// reaches it as `notifications/resources/updated`; a URI that names no
/// resource is not accepted.
#[tokio::test]
async fn modern_clients_follow_a_games_resource_on_subscriptions_listen() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let player = http_client(&server).await;
    let game = player.ok("chess_create_game", json!({"type": "agent"})).await["game_id"].as_str().unwrap().to_string();
    // The player takes the other side itself (with the code) to move for both.
    let code = join_code(&player, &game).await;
    player.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    let fen = format!("chess://game/{game}/fen");
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::LATEST] };
    let watcher = ().serve_with_lifecycle(transport, lifecycle).await.expect("2026-07-28 discovery");
    let filter =
        SubscriptionFilter::builder().resource_subscription(fen.clone()).resource_subscription("chess://game/nothing/pgn/x").build();
    let mut sub = watcher.peer().listen(filter).await.unwrap();
    assert_eq!(sub.acknowledged().resource_subscriptions, Some(vec![fen.clone()]), "only the resource that exists is followed");
    for mv in ["e2e4", "e7e5"] {
        player.ok("chess_finish_turn", json!({"game_id": game, "move": mv})).await;
        let note = tokio::time::timeout(Duration::from_secs(10), sub.next()).await.expect("no update in time").unwrap();
        let note = format!("{note:?}");
        assert!(note.contains("ResourceUpdated") && note.contains(&fen), "{note}");
    }
    drop(sub);
    let _ = watcher.cancel().await;
    player.close().await;
}

#[tokio::test]
async fn foreign_origins_are_refused() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let post = |origin: &'static str| {
        let url = server.url.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("origin", origin)
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(post("http://evil.example").await.as_u16(), 403);
    assert!(post("http://localhost:3000").await.is_success());
}

#[tokio::test]
async fn timers_fire_in_the_session_and_wake_waiters_and_callers_are_told_apart() {
    let work = scratch();
    let server = hello_server(work.path()).await;
    let (a, b) = (http_client(&server).await, http_client(&server).await);
    let id = a.ok("hello_start", json!({})).await["counter_id"].clone();
    let r = a.ok("hello_bump_later", json!({"counter_id": id, "delay_ms": 300})).await;
    assert_eq!(r["count"], 0, "the bump happens later, in a timer event");
    let t = Instant::now();
    let r = a.ok("hello_wait_for", json!({"counter_id": id, "at_least": 1})).await;
    assert_eq!(r["count"], 1);
    assert!(t.elapsed() < Duration::from_secs(3), "the timer event woke the waiter: {:?}", t.elapsed());

    let who_a = text(&a.call("hello_whoami", json!({"counter_id": id})).await);
    let theirs = b.ok("hello_start", json!({})).await["counter_id"].clone();
    let who_b = text(&b.call("hello_whoami", json!({"counter_id": theirs})).await);
    let caller = |s: &str| s.split_whitespace().next().unwrap().to_string();
    assert_ne!(caller(&who_a), caller(&who_b), "two MCP sessions are two callers: {who_a} / {who_b}");
    assert_eq!(caller(&who_a), caller(&text(&a.call("hello_whoami", json!({"counter_id": id})).await)), "stable per connection");
    a.close().await;
    b.close().await;
}

/// A player's seed decides nothing hidden by itself: the randomness of a
/// session comes from the seed with the session's secret mixed in, so the
/// same seed twice draws differently; the seed a game sees as its creator's
/// (`seeds.visible`) is the one chosen. Where the operator lets callers fix
/// whole seeds, the same seed draws the same, and a finished game's seed
/// with its secret (`secret`) replays it anywhere.
#[tokio::test]
async fn a_chosen_seed_repeats_only_with_the_secret_or_where_whole_seeds_are_allowed() {
    let work = scratch();
    let server = hello_server(work.path()).await;
    let c = http_client(&server).await;
    let lucky = |v: serde_json::Value| v["lucky"].as_u64().unwrap();
    // A draw is one of 1,000 numbers, so one pair matches by chance once in
    // a thousand runs; four draws all alike would be a one-in-a-billion chance.
    let mut draws = Vec::new();
    for _ in 0..4 {
        draws.push(lucky(c.ok("hello_start", json!({"seed": 42})).await));
    }
    assert!(draws.iter().any(|&d| d != draws[0]), "the same seed without the secret draws differently: {draws:?}");
    let s = c.ok("hello_start", json!({"seed": 7})).await;
    let who = text(&c.call("hello_whoami", json!({"counter_id": s["counter_id"]})).await);
    assert!(who.ends_with("seed=7"), "the game sees the seed chosen: {who}");
    // Replays: the same seed and secret, the same draw, whoever asks.
    let first = lucky(c.ok("hello_start", json!({"seed": 42, "secret": "12345678901234567890"})).await);
    let same = lucky(c.ok("hello_start", json!({"seed": 42, "secret": "12345678901234567890"})).await);
    assert_eq!(first, same);
    let mut others = Vec::new();
    for secret in [12345, 23456, 34567] {
        others.push(lucky(c.ok("hello_start", json!({"seed": 42, "secret": secret})).await));
    }
    assert!(others.iter().any(|&d| d != first), "another secret draws differently: {first} vs {others:?}");
    let e = c.err("hello_start", json!({"secret": 5})).await;
    assert!(e.contains("`secret` replays a finished game together with its `seed`"), "{e}");
    c.close().await;
    drop(server);

    let whole = hello_server_with(work.path(), "whole_seeds = true").await;
    let c = http_client(&whole).await;
    let a = lucky(c.ok("hello_start", json!({"seed": 42})).await);
    let b = lucky(c.ok("hello_start", json!({"seed": 42})).await);
    assert_eq!(a, b, "a whole seed decides everything");
    let others: Vec<u64> = futures_lite(&c, 6).await;
    assert!(others.iter().any(|&x| x != a), "unseeded sessions differ: {a} vs {others:?}");
    c.close().await;
}

async fn futures_lite(c: &Client, n: usize) -> Vec<u64> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(c.ok("hello_start", json!({})).await["lucky"].as_u64().unwrap());
    }
    v
}

#[tokio::test]
async fn cancelling_a_waiting_call_ends_the_wait_at_once() {
    use rmcp::model::ClientRequest;
    use rmcp::service::PeerRequestOptions;
    let work = scratch();
    let server = hello_server(work.path()).await;
    let c = http_client(&server).await;
    let id = c.ok("hello_start", json!({})).await["counter_id"].clone();
    let waiting = || async { c.ok("ludus_sessions", json!({"game": "hello"})).await["sessions"][0]["waiting_calls"].clone() };
    assert_eq!(waiting().await, 0);
    let params =
        CallToolRequestParams::new("hello_wait_for").with_arguments(json!({"counter_id": id, "at_least": 50}).as_object().unwrap().clone());
    let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
    let handle = c.service.send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    let t = Instant::now();
    while waiting().await != 1 {
        assert!(t.elapsed() < Duration::from_secs(3), "the call never started waiting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    handle.cancel(Some("the agent gave up".into())).await.unwrap();
    let t = Instant::now();
    while waiting().await != 0 {
        assert!(t.elapsed() < Duration::from_secs(2), "the wait did not end on cancellation");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The session is unharmed.
    assert_eq!(c.ok("hello_bump", json!({"counter_id": id})).await["count"], 1);
    c.close().await;
}

/// An MCP session made and deleted leaves nothing behind: a task per session
/// that waited for tool-list changes (there are none without a plugins
/// directory) used to keep about 9.5 KB each for the life of the server, so
/// 4,000 sessions grew it by some 38 MB.
#[tokio::test]
async fn deleted_mcp_sessions_leave_nothing_behind() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let http = reqwest::Client::new();
    let round = |n: usize| {
        let (http, url) = (http.clone(), server.url.clone());
        async move {
            for _ in 0..n {
                let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
                let post = |body: &'static str, session: Option<String>| {
                    let mut r =
                        http.post(&url).header("content-type", "application/json").header("accept", "application/json, text/event-stream");
                    if let Some(s) = session {
                        r = r.header("mcp-session-id", s);
                    }
                    r.body(body).send()
                };
                let answer = post(init, None).await.unwrap();
                let session = answer.headers()["mcp-session-id"].to_str().unwrap().to_string();
                answer.bytes().await.unwrap();
                post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Some(session.clone()))
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                http.delete(&url).header("mcp-session-id", session).send().await.unwrap();
            }
        }
    };
    round(1_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = server.rss_kib();
    round(4_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = server.rss_kib().saturating_sub(before);
    assert!(grown < 12 * 1024, "4,000 deleted MCP sessions grew the server by {grown} KiB");
}

/// A raw Streamable HTTP session (reqwest), for what rmcp's client never does;
/// with `token`, for that bearer token's caller.
async fn raw_session_as(url: &str, token: Option<&str>) -> (reqwest::Client, String) {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = token {
        headers.insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
    let init = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#)
        .send()
        .await
        .unwrap();
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_string();
    init.bytes().await.unwrap();
    (http, session)
}

/// Sends one MCP POST over a new socket of its own and hands the socket back
/// unread: dropping it is a client going away.
async fn raw_request(url: &str, headers: &[(&str, &str)], body: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let url = reqwest::Url::parse(url).unwrap();
    let mut tcp = tokio::net::TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).await.unwrap();
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n",
        url.path(),
        url.host_str().unwrap(),
        body.len()
    );
    for (name, value) in headers {
        head += &format!("{name}: {value}\r\n");
    }
    tcp.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
    tcp
}

fn raw_call(http: &reqwest::Client, url: &str, session: &str, body: String) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(body)
}

/// A hello counter on a server with bearer tokens, an MCP client of it, and
/// a raw MCP session of the same caller (one token, so both play the game)
/// whose waits on the counter go over sockets of their own, so that going
/// away is exactly closing one (an aborted reqwest call may leave its
/// pooled connection open).
struct RawWaits {
    _work: tempfile::TempDir,
    _server: HttpServer,
    url: String,
    token: String,
    c: Client,
    counter: serde_json::Value,
    http: reqwest::Client,
    session: String,
}

impl RawWaits {
    async fn start() -> RawWaits {
        let work = scratch();
        let (token, lines) = issue_token("agent");
        let server = hello_server_with(work.path(), &lines).await;
        let url = server.url.clone();
        let c = http_client_with_token(&server, &token).await;
        let counter = c.ok("hello_start", json!({})).await["counter_id"].clone();
        let (http, session) = raw_session_as(&url, Some(&token)).await;
        RawWaits { _work: work, _server: server, url, token, c, counter, http, session }
    }

    /// `hello_wait_for` a count the test never reaches, as request `rid`.
    fn wait(&self, rid: u32) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":"hello_wait_for","arguments":{{"counter_id":{},"at_least":50}}}}}}"#,
            self.counter
        )
    }

    /// Sends wait `rid` over a socket of its own, once it is held.
    async fn held_wait(&self, rid: u32) -> tokio::net::TcpStream {
        let auth = format!("Bearer {}", self.token);
        let socket = raw_request(&self.url, &[("mcp-session-id", &self.session), ("authorization", &auth)], &self.wait(rid)).await;
        let t = Instant::now();
        while self.waiting().await != 1 {
            assert!(t.elapsed() < Duration::from_secs(5), "the call never started waiting");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        socket
    }

    async fn waiting(&self) -> u64 {
        self.c.ok("ludus_sessions", json!({"game": "hello"})).await["sessions"][0]["waiting_calls"].as_u64().unwrap()
    }
}

/// A client that goes away in the middle of a long wait cancels it (the wait
/// used to hold until its event or its cap), and one request id cannot be in
/// flight twice in a session (19 of 20 such waits used to go unanswered).
#[tokio::test]
async fn an_abandoned_wait_ends_with_its_connection_and_request_ids_are_not_reused_in_flight() {
    let w = RawWaits::start().await;
    let first = w.held_wait(7).await;
    let again = raw_call(&w.http, &w.url, &w.session, w.wait(7)).send().await.unwrap();
    assert_eq!(again.status(), 409, "the same id twice in flight");
    let body: serde_json::Value = again.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("already in flight"), "{body}");

    // The client goes away: its connection closes, and so does the wait, well
    // before the wait's own 5 s would have ended it.
    drop(first);
    let t = Instant::now();
    while w.waiting().await != 0 {
        assert!(t.elapsed() < Duration::from_secs(2), "the abandoned wait was not cancelled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The session and the game are unharmed.
    assert_eq!(w.c.ok("hello_bump", json!({"counter_id": w.counter})).await["count"], 1);
}

/// `notifications/cancelled` ends a waiting call's event stream without an
/// answer: MCP says a cancelled request is not answered.
#[tokio::test]
async fn a_cancelled_call_gets_no_answer() {
    use tokio::io::AsyncReadExt;
    let w = RawWaits::start().await;
    let mut stream = w.held_wait(41).await;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"the agent gave up"}}"#;
    let accepted = raw_call(&w.http, &w.url, &w.session, cancel.into()).send().await.unwrap();
    assert_eq!(accepted.status(), 202);
    // The stream ends (its last chunk, or an empty body of known length)
    // well before the wait's own 5 s, and holds no answer.
    let ended = |b: &[u8]| {
        let text = String::from_utf8_lossy(b).to_ascii_lowercase();
        text.ends_with("0\r\n\r\n") || (text.ends_with("\r\n\r\n") && text.contains("\r\ncontent-length: 0\r\n"))
    };
    let mut body = Vec::new();
    let mut chunk = [0u8; 4096];
    while !ended(&body) {
        let n = tokio::time::timeout(Duration::from_secs(3), stream.read(&mut chunk))
            .await
            .expect("the cancelled call's stream did not end")
            .unwrap();
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&body);
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(!body.contains("\"id\":41"), "a cancelled request was answered: {body}");
    assert_eq!(w.waiting().await, 0);
}

/// Beyond `max_waits_per_session` a waiting call is not held: it gets the
/// game's "call again" answer at once, and the held ones are untouched.
#[tokio::test]
async fn waits_beyond_the_cap_answer_at_once() {
    let work = scratch();
    let server = hello_server_with(work.path(), "[limits]\nmax_waits_per_session = 2\n").await;
    let c = http_client(&server).await;
    let id = c.ok("hello_start", json!({})).await["counter_id"].clone();
    let waiting = || async { c.ok("ludus_sessions", json!({"game": "hello"})).await["sessions"][0]["waiting_calls"].as_u64().unwrap() };
    let wait = || c.call("hello_wait_for", json!({"counter_id": id, "at_least": 1}));
    let held = async {
        let (a, b) = tokio::join!(wait(), wait());
        (a, b)
    };
    let third = async {
        let t = Instant::now();
        while waiting().await != 2 {
            assert!(t.elapsed() < Duration::from_secs(5), "two calls never started waiting");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let t = Instant::now();
        let r = wait().await;
        let took = t.elapsed();
        assert_eq!(waiting().await, 2, "the held calls were disturbed");
        c.ok("hello_bump", json!({"counter_id": id})).await;
        (r, took)
    };
    let ((a, b), (r, took)) = tokio::join!(held, third);
    assert!(text(&r).contains("call this tool again") && took < Duration::from_secs(2), "{} after {took:?}", text(&r));
    assert_eq!(a.structured_content.unwrap()["count"], 1);
    assert_eq!(b.structured_content.unwrap()["count"], 1);
}

/// Beyond `max_waits_per_caller` one client's waiting call is not held,
/// whichever of its games it waits on; another client's still is.
#[tokio::test]
async fn waits_beyond_the_callers_cap_answer_at_once() {
    let work = scratch();
    let server = hello_server_with(work.path(), "[limits]\nmax_waits_per_caller = 2\n").await;
    let (c, other) = (http_client(&server).await, http_client(&server).await);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(c.ok("hello_start", json!({})).await["counter_id"].clone());
    }
    let held = || async {
        let sessions = c.ok("ludus_sessions", json!({"game": "hello"})).await;
        sessions["sessions"].as_array().unwrap().iter().map(|s| s["waiting_calls"].as_u64().unwrap()).sum::<u64>()
    };
    let wait = |id: serde_json::Value| c.call("hello_wait_for", json!({"counter_id": id, "at_least": 1}));
    let first_two = async { tokio::join!(wait(ids[0].clone()), wait(ids[1].clone())) };
    let rest = async {
        let t = Instant::now();
        while held().await != 2 {
            assert!(t.elapsed() < Duration::from_secs(5), "two calls never started waiting");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let t = Instant::now();
        let third = wait(ids[2].clone()).await;
        assert!(text(&third).contains("call this tool again") && t.elapsed() < Duration::from_secs(2), "{}", text(&third));
        // Another client (another caller, with its own game) is not affected
        // by this one's waits: its call is held, not answered at once.
        let theirs = tokio::spawn(async move {
            let id = other.ok("hello_start", json!({})).await["counter_id"].clone();
            let t = Instant::now();
            let r = other.call("hello_wait_for", json!({"counter_id": id, "at_least": 1})).await;
            (r, t.elapsed(), other)
        });
        for id in &ids {
            c.ok("hello_bump", json!({"counter_id": id})).await;
        }
        let (r, took, _) = theirs.await.unwrap();
        assert!(took > Duration::from_secs(2), "the other client's call was held until its deadline: {took:?} {}", text(&r));
        r
    };
    let ((a, b), _theirs) = tokio::join!(first_two, rest);
    for r in [a, b] {
        assert_eq!(r.structured_content.unwrap()["count"], 1);
    }
}

/// MCP sessions their clients abandon (no DELETE) are closed when idle, and
/// the memory they held goes back: 2,000 of them hold about 100 MiB, which
/// the allocator kept after they expired until the expiry sweep trimmed it.
#[tokio::test]
async fn expired_mcp_sessions_give_their_memory_back() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmcp_session_idle_ms = 1000\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let http = reqwest::Client::new();
    let before = server.rss_kib();
    for _ in 0..2_000 {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        let answer = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.bytes().await.unwrap();
    }
    let open = server.rss_kib().saturating_sub(before);
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let left = server.rss_kib().saturating_sub(before);
    assert!(left < 16 * 1024, "2,000 expired MCP sessions left {left} KiB of the {open} KiB they took");
}

/// The newest official MCP Python SDK (from PyPI), whose default client speaks 2026-07-28.
const PYTHON_MCP_LATEST: &str = "mcp==2.3.0";

/// The official MCP Python SDK's default HTTP client (`Client(url)`, the
/// stateless 2026-07-28 protocol) plays a game against `ludus serve --http`
/// started as the README says: with the URL the server prints, which
/// carries the token a loopback server makes for its user.
#[tokio::test]
async fn the_python_sdks_default_http_client_plays_with_the_printed_url() {
    let python = tokio::task::spawn_blocking(|| pip_install("python-mcp-2", &[PYTHON_MCP_LATEST])).await.unwrap();
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let url = server.client_url.clone().expect("the server printed no URL for clients");
    assert!(url.starts_with(&server.url) && url.contains("?token=ludus_"), "{url}");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/default_http_hanoi.py");
    let out = tokio::process::Command::new(&python).arg(&script).arg(&url).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    assert_eq!(
        (report["error"].clone(), report["goal_reached"].clone(), report["moves_made"].clone()),
        (json!(false), json!(true), json!(3))
    );
    // Without the token the same client cannot keep a game, and is told how to.
    let bare = tokio::process::Command::new(&python).arg(&script).arg(&server.url).output().await.unwrap();
    assert!(!bare.status.success());
    assert!(
        String::from_utf8_lossy(&bare.stderr).contains("the server printed when it started"),
        "{}",
        String::from_utf8_lossy(&bare.stderr)
    );
    // The same token again at the next start: the URL stays the client's.
    drop(server);
    let again = http_server(&[], work.path()).await;
    let token = |u: &str| u.split("?token=").nth(1).unwrap().to_string();
    assert_eq!(token(again.client_url.as_deref().unwrap()), token(&url));
}

//! Many agents on one server, no trust between them: every game belongs to
//! its players (checked by the host for every bundled game), callers keep
//! their identity through bearer tokens, slow clients cannot hold memory or
//! connection slots, and game processes are budgeted and freed when a game
//! ends. Real binary, real MCP clients, raw sockets for the slow ones; all
//! on 127.0.0.1.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

/// The parameters that name a game session, by game.
const SESSION_PARAMS: [&str; 3] = ["env_id", "game_id", "battle_id"];

#[tokio::test]
async fn a_second_client_can_neither_see_nor_touch_the_first_clients_games() {
    let package = showdown::showdown_package();
    let work = scratch();
    let cfg = config(work.path(), &showdown::sim_endpoint(&package));
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client(&server).await, http_client(&server).await);

    // One game of each bundled game, started by A.
    let mut ids: BTreeMap<&str, String> = BTreeMap::new();
    let id = |v: Value, key: &str| v[key].as_str().unwrap().to_string();
    ids.insert("hanoi", id(a.ok("hanoi_init_simulator", json!({"n": 3})).await, "env_id"));
    ids.insert("river_crossing", id(a.ok("river_crossing_init_simulator", json!({"n": 3, "k": 2})).await, "env_id"));
    ids.insert("chess", id(a.ok("chess_create_game", json!({"type": "agent"})).await, "game_id"));
    ids.insert("showdown", showdown::offline(&a, "random", 5).await);
    ids.insert("cards", id(a.ok("cards_start_game", json!({"seed": 11})).await, "game_id"));

    // B calls every tool that names a session, with A's ids: each is refused
    // the same way, before its other arguments are even looked at, except
    // the tools a game opens to spectators and the ones that take a seat.
    let (mut refused, mut open) = (Vec::new(), Vec::new());
    for tool in b.tools().await {
        let Some((game, id)) = ids.iter().find(|(g, _)| tool.name.starts_with(&format!("{g}_"))) else { continue };
        let properties = tool.input_schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let Some(param) = SESSION_PARAMS.iter().find(|p| properties.contains_key(**p)) else { continue };
        let r = b.call(&tool.name, json!({ *param: id })).await;
        let said = text(&r);
        match &*tool.name {
            "chess_wait_for_next_turn" => {
                assert_ne!(r.is_error, Some(true), "a spectator may watch a chess game: {said}");
                assert!(said.contains("You are watching"), "{said}");
                open.push(tool.name.clone());
            }
            "chess_join_game" | "cards_join_game" | "showdown_join_battle" => {
                assert_eq!(r.is_error, Some(true), "{}: {said}", tool.name);
                assert!(said.contains("needs its `join_code`"), "{}: {said}", tool.name);
            }
            _ => {
                assert_eq!(r.is_error, Some(true), "{} let a stranger through: {said}", tool.name);
                assert!(said.contains(&format!("`{param}` {id} is not one of your game sessions")), "{}: {said}", tool.name);
                refused.push(tool.name.clone());
            }
        }
        let _ = game;
    }
    assert!(refused.len() >= 25, "every session tool of every game was tried: {refused:?}");
    assert_eq!(open, ["chess_wait_for_next_turn"]);

    // Resources that name a session: the battle's protocol is its players',
    // the chess position anyone's.
    let protocol = format!("showdown://battle/{}/protocol", ids["showdown"]);
    let e = b.read_resource(&protocol).await.unwrap_err().to_string();
    assert!(e.contains("is not one of your game sessions"), "{e}");
    assert!(a.read_resource(&protocol).await.is_ok());
    assert!(b.read_resource(&format!("chess://game/{}/fen", ids["chess"])).await.is_ok());

    // `ludus_sessions` lists one's own sessions only, without the seeds of
    // running games or any process id.
    let theirs = b.ok("ludus_sessions", json!({})).await;
    assert_eq!(theirs["count"], 0, "{theirs}");
    assert!(theirs["you"]["identity"].as_str().unwrap().contains("reconnect"), "{theirs}");
    let mine = a.ok("ludus_sessions", json!({})).await;
    assert_eq!(mine["count"], 5, "{mine}");
    for s in mine["sessions"].as_array().unwrap() {
        assert!(s.get("seed").is_none(), "a running game's seed is not shown: {s}");
        for ch in s["channels"].as_array().into_iter().flatten() {
            assert!(ch.get("pid").is_none(), "no process ids: {ch}");
        }
    }

    // The join code is what takes a seat: B joins with it, a third client
    // with the id alone or a wrong code cannot.
    let chess = ids["chess"].clone();
    let code = mine["sessions"].as_array().unwrap().iter().find(|s| s["id"] == chess.as_str()).unwrap()["join_code"].clone();
    let c = http_client(&server).await;
    let e = c.err("chess_join_game", json!({"game_id": chess, "join_code": "0000-0000-0000-0000"})).await;
    assert!(e.contains("wrong `join_code`"), "{e}");
    let joined = b.ok("chess_join_game", json!({"game_id": chess, "join_code": code})).await;
    assert_eq!(joined["your_color"], "black", "{joined}");
    a.ok("chess_finish_turn", json!({"game_id": chess, "move": "e4"})).await;
    b.ok("chess_finish_turn", json!({"game_id": chess, "move": "e5"})).await;
    let e = c.err("chess_finish_turn", json!({"game_id": chess, "move": "Nf3"})).await;
    assert!(e.contains("is not one of your game sessions"), "{e}");
    assert!(e.contains("chess_join_game"), "says how to take a seat: {e}");

    // A's own games still answer A.
    a.ok("hanoi_get_state", json!({"env_id": ids["hanoi"]})).await;
    for client in [a, b, c] {
        client.close().await;
    }
}

/// A server whose config admits one token for `alice`, issued by `ludus token`; the token.
async fn token_server(work: &std::path::Path, extra: &str) -> (HttpServer, String) {
    let (token, lines) = issue_token("alice");
    assert!(!lines.contains(&token), "the config keeps the token's hash, never the token");
    let cfg = config(work, &format!("{extra}\n{lines}"));
    (http_server(&["--config", cfg.to_str().unwrap()], work).await, token)
}

/// A 2026-07-28 (stateless) client, with a bearer token if given.
async fn stateless(server: &HttpServer, token: Option<&str>) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    if let Some(t) = token {
        config = config.auth_header(t);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::LATEST] };
    ().serve_with_lifecycle(transport, lifecycle).await.expect("2026-07-28 discovery")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> rmcp::model::CallToolResult {
    let params = rmcp::model::CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().unwrap().clone());
    client.call_tool(params).await.unwrap()
}

#[tokio::test]
async fn a_stateless_client_with_a_token_plays_a_whole_chess_game_across_reconnects() {
    let work = scratch();
    let (server, token) = token_server(work.path(), "").await;
    let mut client = stateless(&server, Some(&token)).await;
    let started = call(&client, "chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 3})).await;
    assert_ne!(started.is_error, Some(true), "{}", text(&started));
    let game = started.structured_content.unwrap()["game_id"].as_str().unwrap().to_string();
    let mut plies = 0;
    let over = loop {
        // Every few moves the client goes away and comes back: its token is
        // who it is, so the game is still its own.
        if plies % 10 == 9 {
            let _ = client.cancel().await;
            client = stateless(&server, Some(&token)).await;
        }
        let board = call(&client, "chess_wait_for_next_turn", json!({"game_id": game})).await;
        let Some(board) = board.structured_content.clone() else { panic!("no board: {}", text(&board)) };
        if board["status"] == "game-over" {
            break board;
        }
        assert_eq!(board["status"], "your-turn", "{board}");
        let mv = board["legal_moves"][0].as_str().unwrap().to_string();
        let r = call(&client, "chess_finish_turn", json!({"game_id": game, "move": mv})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        plies += 1;
        assert!(plies < 400, "the game ends");
    };
    assert!(over["result"].is_string(), "{over}");
    // A finished game shows its seed to its player.
    let sessions = call(&client, "ludus_sessions", json!({})).await.structured_content.unwrap();
    assert_eq!(sessions["you"]["caller"], "alice");
    let s = &sessions["sessions"][0];
    assert_eq!((s["game_over"].clone(), s["seed"].clone()), (json!(true), json!(3)), "{sessions}");
    // So is a legacy-session client with the same token: same caller, same games.
    let legacy_transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(token.clone()),
    );
    let legacy = ().serve(legacy_transport).await.unwrap();
    let r = call(&legacy, "chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(r.structured_content.unwrap()["status"], "game-over");
    let _ = legacy.cancel().await;
    let _ = client.cancel().await;
}

#[tokio::test]
async fn without_tokens_a_stateless_client_is_told_why_it_cannot_play() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let client = stateless(&server, None).await;
    let r = call(&client, "hanoi_init_simulator", json!({"n": 3})).await;
    assert_eq!(r.is_error, Some(true));
    let said = text(&r);
    assert!(said.contains("no caller identity") && said.contains("Authorization: Bearer") && said.contains("initialize"), "{said}");
    // Tools that need no game still work.
    assert_ne!(call(&client, "ludus_games", json!({})).await.is_error, Some(true));
    let _ = client.cancel().await;
}

/// One raw HTTP request; the status line and the headers and body as text.
fn raw(url: &str, request: &str) -> String {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn with_tokens_every_request_needs_one_and_hears_the_spec_challenge() {
    let work = scratch();
    let (server, token) = token_server(work.path(), "").await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    let none = raw(&server.url, &post(""));
    assert!(none.starts_with("HTTP/1.1 401"), "{none}");
    assert!(
        none.to_ascii_lowercase().contains(&format!(
            "www-authenticate: bearer realm=\"ludus\", resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{none}"
    );
    let wrong = raw(&server.url, &post("Authorization: Bearer ludus_not-it\r\n"));
    assert!(wrong.starts_with("HTTP/1.1 401") && wrong.contains("error=\"invalid_token\""), "{wrong}");
    let right = raw(&server.url, &post(&format!("Authorization: Bearer {token}\r\n")));
    assert!(right.starts_with("HTTP/1.1 200"), "{right}");
    let metadata =
        raw(&server.url, &format!("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"));
    assert!(metadata.starts_with("HTTP/1.1 200") && metadata.contains(&format!("\"resource\":\"http://{addr}/mcp\"")), "{metadata}");
}

#[tokio::test]
async fn requests_are_refused_in_the_right_order_with_short_errors() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    // The Origin is checked before the body is even read: a bad origin gets 403, not 413 or 400.
    let big = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: https://evil.example\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n"
    );
    let r = raw(&server.url, &big);
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    let twice = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}");
    assert!(raw(&server.url, &twice).starts_with("HTTP/1.1 400"));
    let elsewhere = format!("POST /other HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}");
    assert!(raw(&server.url, &elsewhere).starts_with("HTTP/1.1 404"));
    // A broken notification gets 400, not 200 with an error.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#;
    let r = raw(
        &server.url,
        &format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{note}", note.len()),
    );
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    // An id beyond 64 bits cannot be carried: it is refused, echoed exactly (not as a float).
    let big_id = r#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}"#;
    let r = raw(
        &server.url,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big_id}",
            big_id.len()
        ),
    );
    assert!(r.contains(r#""id":1180591620717411303424,"#) && r.contains("-32600"), "{r}");
    // A huge argument is not echoed back whole.
    let c = http_client(&server).await;
    let e = c.err("hanoi_get_state", json!({"env_id": "x".repeat(1_000_000)})).await;
    assert!(e.len() < 5_000, "an error of {} bytes", e.len());
    c.close().await;
}

async fn until_no_descendants(pid: u32) -> Vec<u32> {
    let t = Instant::now();
    loop {
        let left = descendants(pid);
        if left.is_empty() || t.elapsed() > Duration::from_secs(10) {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn game_processes_are_budgeted_and_a_finished_battle_frees_them_at_once() {
    let package = showdown::showdown_package();
    let work = scratch();
    // Three callers: without tokens, the MCP sessions of one address would be one.
    let tokens = ["alice", "bob", "carol"].map(issue_token);
    let lines: Vec<&str> = tokens.iter().map(|(_, l)| l.as_str()).collect();
    let cfg = config(
        work.path(),
        &format!(
            "[limits]\nmax_processes = 40\nmax_processes_per_caller = 20\n{}\n{}",
            showdown::sim_endpoint_per_battle(&package),
            lines.join("\n")
        ),
    );
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let client = |i: usize| http_client_with_token(&server, &tokens[i].0);
    let (a, b, c) = (client(0).await, client(1).await, client(2).await);
    // 20 battles fill A's budget; 40 more starts are refused by name.
    let mut battles = Vec::new();
    for seed in 0..20 {
        battles.push(showdown::offline(&a, "random", seed).await);
    }
    for seed in 0..40 {
        let e = a.err("showdown_start_offline_battle", json!({"bot": "random", "seed": 100 + seed})).await;
        assert!(e.contains("limits.max_processes_per_caller = 20"), "{e}");
    }
    // B's battles fill the server's budget; C is refused by the server's limit.
    for seed in 0..20 {
        showdown::offline(&b, "random", 200 + seed).await;
    }
    let e = c.err("showdown_start_offline_battle", json!({"bot": "random", "seed": 300})).await;
    assert!(e.contains("limits.max_processes = 40"), "{e}");
    assert!(descendants(server.pid()).len() >= 40);
    // A forfeits its 20: their simulators end at once, their budget is back,
    // and what they were stays readable.
    for id in &battles {
        let r = a.ok("showdown_forfeit_battle", json!({"battle_id": id})).await;
        assert_eq!(r["status"], "finished", "{r}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(descendants(server.pid()).len(), 20, "only B's simulators are left");
    let state = a.ok("showdown_get_battle_state", json!({"battle_id": battles[0]})).await;
    assert_eq!(state["status"], "finished", "{state}");
    showdown::offline(&c, "random", 301).await;
    drop(b);
    for client in [a, c] {
        client.close().await;
    }
}

#[tokio::test]
async fn finished_magic_games_leave_no_process() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_processes_per_caller = 20\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let a = http_client(&server).await;
    let mut games = Vec::new();
    for seed in 0..20 {
        games.push(a.ok("cards_start_game", json!({"seed": seed})).await["game_id"].as_str().unwrap().to_string());
    }
    // Twenty games share the bridge processes (one per core).
    assert!(!descendants(server.pid()).is_empty());
    for id in &games {
        a.ok("cards_concede", json!({"game_id": id})).await;
    }
    assert_eq!(until_no_descendants(server.pid()).await, Vec::<u32>::new(), "every bridge ended with its game");
    // What the game was stays readable; playing on answers the result.
    a.ok("cards_get_game_state", json!({"game_id": games[0]})).await;
    let status = a.ok("cards_pass_priority", json!({"game_id": games[0]})).await;
    assert!(status["game_over"] == true && status["winner"] == 1, "the conceding seat 0 lost: {status}");
    a.close().await;
}

/// Opens a connection that sends a request's headers declaring a large body
/// (and, with `trickle`, then sends the body a byte at a time).
fn slow_request(addr: &str, declared: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s
}

#[tokio::test]
async fn a_trickled_body_holds_no_memory_and_is_cut_off_at_its_deadline() {
    let work = scratch();
    // 4 MB declared: 2 s plus a second per 2 MiB, about 4 s.
    let cfg = config(work.path(), "[limits]\nhttp_body_timeout_ms = 2000\nhttp_min_body_rate = 2097152\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let before = server.rss_kib();
    let started = Instant::now();
    let mut conns: Vec<TcpStream> = (0..20).map(|_| slow_request(&addr, 4_000_000)).collect();
    for c in &conns {
        c.set_nodelay(true).unwrap();
    }
    // 100,000 bytes in all, one byte per write, until the server cuts them off.
    let (mut sent, mut peak) = (0usize, before);
    'trickle: while sent < 100_000 {
        for c in conns.iter_mut() {
            if c.write_all(b" ").is_err() {
                break 'trickle;
            }
            sent += 1;
        }
        if sent % 2_000 == 0 {
            peak = peak.max(server.rss_kib());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    peak = peak.max(server.rss_kib());
    // Every connection hears 408 and is closed, at the deadline.
    for c in conns.iter_mut() {
        c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(12), "closed at the deadline, after {took:?}");
    assert!(peak < before + 50 * 1024, "{sent} trickled bytes took the server from {before} to {peak} KiB");
}

#[tokio::test]
async fn a_thousand_slow_sockets_do_not_keep_a_new_client_out() {
    let work = scratch();
    let server = http_server(&[], work.path()).await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    // Headers sent, body never: each holds a connection open.
    let _slow: Vec<TcpStream> = (0..1030).map(|_| slow_request(&addr, 1000)).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t = Instant::now();
    let c = http_client(&server).await;
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "a new client waited {took:?}");
    c.close().await;
}

/// Opens an MCP session with a bare `initialize`; its id.
async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = http.post(url).header("Accept", "application/json, text/event-stream").json(&init).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    r.bytes().await.unwrap();
    id
}

async fn delete_session(http: &reqwest::Client, url: &str, id: &str) {
    let r = http.delete(url).header("mcp-session-id", id).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
}

/// 10,000 MCP sessions opened and deleted: most of what they took goes
/// back to the system soon after, and once the allocator has found its
/// level (a second 10,000), a third 10,000 add at most half as much
/// again (sessions that stayed would add all they took).
#[tokio::test]
async fn ten_thousand_mcp_sessions_held_and_deleted_give_their_memory_back() {
    use futures_util::{StreamExt, stream};
    let work = scratch();
    // One address holds all 10,000: its share is raised to the server's cap.
    let cfg = config(work.path(), "[limits]\nmax_mcp_sessions_per_caller = 10000\n");
    // At the level a user runs (info), where per-session log spans would pin memory.
    let server = http_server_env(&["--config", cfg.to_str().unwrap()], work.path(), &[("LUDUS_LOG", "info")]).await;
    let http = reqwest::Client::new();
    let url = server.url.clone();
    // The baseline: one session opened and closed, so the code serving one is in memory.
    let first = open_session(&http, &url).await;
    delete_session(&http, &url, &first).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = server.rss_kib();
    let burst = || async {
        let ids: Vec<String> = stream::iter(0..10_000).map(|_| open_session(&http, &url)).buffer_unordered(8).collect().await;
        let held = server.rss_kib();
        stream::iter(&ids).for_each_concurrent(8, |id| delete_session(&http, &url, id)).await;
        // Freed memory goes back within a second or so of the last close.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        (held, server.rss_kib())
    };
    let (held, after) = burst().await;
    let (_, level) = burst().await;
    let (_, again) = burst().await;
    eprintln!(
        "RSS: {before} KiB before, {held} KiB with 10,000 sessions, {after} KiB after deleting them, {level} and {again} after two more rounds"
    );
    let took = held - before;
    assert!(took > 5_000, "10,000 sessions hold memory ({before} → {held} KiB): the measure would see none returned");
    assert!(
        after.saturating_sub(before) * 4 <= took * 3,
        "after deleting 10,000 sessions: {after} KiB, most of their {took} KiB over the {before} KiB before"
    );
    assert!(again.saturating_sub(level) * 2 <= took, "a third 10,000 sessions left {again} KiB after the second's {level} KiB");
}

/// What bounds the server's threads: a connection has a thread of its own,
/// and the connection caps bound the connections. 10,000 idle connections
/// from 20 addresses leave the server at `max_http_connections`, its
/// threads near that many, and a new client is answered.
#[tokio::test]
async fn ten_thousand_idle_connections_leave_the_server_at_its_caps() {
    // This process holds the 10,000 sockets: its open-file limit as high as it may go.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on a struct on the stack.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert!(limit.rlim_max >= 11_000, "this test needs an open-file limit of 11,000 or more (ulimit -Hn is {})", limit.rlim_max);
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: as above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };

    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_http_connections = 1024\nmax_http_connections_per_address = 512\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let mut held = Vec::with_capacity(10_000);
    let started = Instant::now();
    for batch in 0..20u8 {
        let from = std::net::SocketAddr::from(([127, 0, 0, batch + 1], 0));
        let connects = (0..500).map(|_| async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(from).unwrap();
            socket.connect(addr).await
        });
        for stream in futures_util::future::join_all(connects).await {
            held.push(stream.expect("a connection was refused outright"));
        }
    }
    let took = started.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let threads: usize = status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap();
    eprintln!("10,000 connections opened in {took:?}; the server has {threads} threads");
    assert!(threads <= 1024 + 128, "10,000 idle connections left the server with {threads} threads");
    let c = http_client(&server).await;
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    drop(held);
}

/// Without tokens, every MCP session of one address is one caller for the
/// process budget: opening more sessions gets no more game processes.
#[tokio::test]
async fn more_mcp_sessions_from_one_address_get_no_more_game_processes() {
    let package = showdown::showdown_package();
    let work = scratch();
    let cfg = config(
        work.path(),
        &format!("[limits]\nmax_processes = 40\nmax_processes_per_caller = 2\n{}", showdown::sim_endpoint_per_battle(&package)),
    );
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client(&server).await, http_client(&server).await);
    showdown::offline(&a, "random", 1).await;
    showdown::offline(&b, "random", 2).await;
    let e = b.err("showdown_start_offline_battle", json!({"bot": "random", "seed": 3})).await;
    assert!(e.contains("limits.max_processes_per_caller = 2") && e.contains("one address"), "{e}");
}

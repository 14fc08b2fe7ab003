//! Several servers, one endpoint: real `ludus serve --http` processes share
//! their games through a real Redis, behind a real nginx configured with the
//! repo's `deploy/nginx-ludus.conf` (both from Debian, started by the tests
//! on 127.0.0.1). Games go on when the server that ran them is killed, no
//! acknowledged move is lost or made twice, and a move made through one
//! server wakes a call held waiting on another.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::cluster::{Service, redis, redis_cluster, services_present};
use common::*;
use serde_json::{Value, json};

/// `ludus serve --http` named `name` on the shared store, with `cfg`.
async fn server(work: &std::path::Path, cfg: &std::path::Path, redis: &str, name: &str) -> HttpServer {
    let dir = work.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    http_server(&["--config", cfg.to_str().unwrap(), "--store", redis, "--name", name], &dir).await
}

/// nginx in front of `servers`, as `deploy/nginx-ludus.conf` sets it up.
fn nginx(work: &std::path::Path, servers: &[&HttpServer]) -> Service {
    common::cluster::nginx(&work.join("nginx"), &servers.iter().map(|s| s.url.as_str()).collect::<Vec<_>>())
}

/// The optimal Hanoi solution for `n` disks from peg 0 to peg 2.
fn hanoi_moves(n: u32, from: u32, to: u32, via: u32, out: &mut Vec<[u32; 3]>) {
    if n == 0 {
        return;
    }
    hanoi_moves(n - 1, from, via, to, out);
    out.push([n, from, to]);
    hanoi_moves(n - 1, via, to, from, out);
}

/// Calls `tool` through the endpoint until a server answers it, opening a
/// new MCP session when the one in use is gone (its server died): what an
/// agent does. A refusal that says the move was not made is sent again too.
async fn call_until_answered(front: &str, token: &str, client: &mut Option<Client>, tool: &str, args: &Value) -> Value {
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < Duration::from_secs(90), "{tool}({args}) was never answered");
        if client.is_none() {
            *client = http_client_at(front, token).await.ok();
            if client.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        }
        // An agent gives up on an answer that does not come (a stream cut
        // by the dead server) and sends the call again.
        let Ok(answer) = tokio::time::timeout(Duration::from_secs(40), client.as_ref().unwrap().try_call(tool, args.clone())).await else {
            *client = None;
            continue;
        };
        match answer {
            Ok(r) if r.is_error != Some(true) => return r.structured_content.clone().unwrap_or(Value::Null),
            Ok(r) => {
                let why = text(&r);
                assert!(why.contains("send it again") || why.contains("is busy on server"), "{tool}({args}) refused: {why}");
            }
            // The session's server is gone (nginx answers 404) or the connection broke mid-call.
            Err(_) => *client = None,
        }
    }
}

/// Solves one Hanoi puzzle move by move through `front`; each acknowledged
/// answer's move count, in order.
async fn solve(front: String, token: String, n: u32, made: Arc<AtomicUsize>) -> (String, Vec<u64>) {
    let mut client = None;
    let init = call_until_answered(&front, &token, &mut client, "hanoi_init_simulator", &json!({"n": n})).await;
    let id = init["env_id"].as_str().unwrap().to_string();
    let mut moves = Vec::new();
    hanoi_moves(n, 0, 2, 1, &mut moves);
    let mut acknowledged = Vec::new();
    // Each move names its decision: sent again after a server died, it is answered, not made twice.
    for (n, mv) in moves.into_iter().enumerate() {
        let args = json!({"env_id": id, "move": mv, "decision": n + 1});
        let state = call_until_answered(&front, &token, &mut client, "hanoi_execute_move", &args).await;
        acknowledged.push(state["moves_made"].as_u64().unwrap_or_else(|| panic!("{state}")));
        made.fetch_add(1, Ordering::Relaxed);
    }
    let state = call_until_answered(&front, &token, &mut client, "hanoi_get_state", &json!({"env_id": id})).await;
    assert_eq!(state["goal_reached"], true, "{id}: {state}");
    (id, acknowledged)
}

/// Each stored game: the server that wrote it last, and its version.
fn last_writers(redis: &str) -> std::collections::HashMap<String, (String, u64)> {
    let mut con = redis::Client::open(redis).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("ludus:{*}:game").query(&mut con).unwrap();
    keys.iter()
        .map(|k| {
            let (server, version): (String, u64) = redis::cmd("HMGET").arg(k).arg("server").arg("version").query(&mut con).unwrap();
            (k.trim_start_matches("ludus:{").trim_end_matches("}:game").to_string(), (server, version))
        })
        .collect()
}

/// Plays `agent_moves` moves against the engine (seeded, each move the legal
/// move at a fixed place in the list) through `front`; the game's id and movetext.
async fn chess_against_the_engine(front: String, token: String, seed: u64, agent_moves: usize, made: Arc<AtomicUsize>) -> (String, String) {
    let mut client = None;
    let start = json!({"type": "computer", "color": "white", "difficulty": 2, "seed": seed});
    let mut board = call_until_answered(&front, &token, &mut client, "chess_create_game", &start).await;
    let id = board["game_id"].as_str().unwrap().to_string();
    let game = json!({"game_id": id});
    for n in 0..agent_moves {
        while board["status"] != "your-turn" {
            assert_ne!(board["status"], "game-over", "{board}");
            board = call_until_answered(&front, &token, &mut client, "chess_wait_for_next_turn", &game).await;
        }
        let legal = board["legal_moves"].as_array().unwrap();
        let mv = legal[(n * 7) % legal.len()].as_str().unwrap();
        let args = json!({"game_id": id, "move": mv, "decision": board["decision"]});
        board = call_until_answered(&front, &token, &mut client, "chess_finish_turn", &args).await;
        made.fetch_add(1, Ordering::Relaxed);
    }
    while board["status"] == "opponent-turn" {
        board = call_until_answered(&front, &token, &mut client, "chess_wait_for_next_turn", &game).await;
    }
    let pgn = loop {
        if let Some(Ok((pgn, _))) = match &client {
            Some(c) => Some(c.read_resource(&format!("chess://game/{id}/pgn")).await),
            None => None,
        } {
            break pgn;
        }
        client = http_client_at(&front, &token).await.ok();
    };
    (id, pgn.lines().filter(|l| !l.starts_with('[') && !l.trim().is_empty()).collect::<Vec<_>>().join(" "))
}

const CHESS_GAMES: u64 = 10;
const CHESS_MOVES: usize = 6;

/// The chess games as one server plays them without a crash (the reference).
async fn chess_without_a_crash(work: &std::path::Path) -> Vec<String> {
    std::fs::create_dir_all(work).unwrap();
    let (token, line) = issue_token("ref");
    // Whole seeds: the reference and the crashed run play the same games from the same seeds.
    let cfg = config(work, &format!("whole_seeds = true\n{line}"));
    let server = http_server(&["--config", cfg.to_str().unwrap(), "--store", "memory"], work).await;
    let made = Arc::new(AtomicUsize::new(0));
    let games: Vec<_> = (0..CHESS_GAMES)
        .map(|seed| tokio::spawn(chess_against_the_engine(server.url.clone(), token.clone(), seed, CHESS_MOVES, made.clone())))
        .collect();
    let mut movetexts = Vec::new();
    for g in games {
        movetexts.push(g.await.unwrap().1);
    }
    movetexts
}

/// 40 Hanoi puzzles and 10 chess games against the engine, through nginx in
/// front of `count` servers on one Redis; a third of the way through, server
/// s2 is killed (SIGKILL) under its calls. Every game finishes; every
/// acknowledged move is in its game exactly once; the chess games are the
/// games one server plays without a crash; and the games s2 ran last ended on
/// the others.
async fn fifty_games_with_a_server_killed(count: usize) {
    if !services_present() {
        return;
    }
    let work = scratch();
    let reference = chess_without_a_crash(&work.path().join("reference")).await;
    let callers = ["ann", "ben", "cai", "dee", "eva"];
    let (tokens, lines): (Vec<String>, Vec<String>) = callers.iter().map(|c| issue_token(c)).unzip();
    // Every server appends its games' result records to one file.
    let records = work.path().join("records.jsonl");
    let cfg = config(work.path(), &format!("whole_seeds = true\nrecords = {:?}\n{}", records.display().to_string(), lines.join("\n")));
    let redis = redis(work.path());
    let mut servers = Vec::new();
    for i in 1..=count {
        servers.push(Some(server(work.path(), &cfg, &redis.url, &format!("s{i}")).await));
    }
    let front = nginx(work.path(), &servers.iter().map(|s| s.as_ref().unwrap()).collect::<Vec<_>>());

    let (puzzles, n) = (50 - CHESS_GAMES as usize, 5);
    let per_puzzle = (1 << n) - 1;
    let total = puzzles * per_puzzle + CHESS_GAMES as usize * CHESS_MOVES;
    let made = Arc::new(AtomicUsize::new(0));
    let token = |g: usize| tokens[g % tokens.len()].clone();
    let hanoi: Vec<_> = (0..puzzles).map(|g| tokio::spawn(solve(front.url.clone(), token(g), n, made.clone()))).collect();
    let chess: Vec<_> = (0..CHESS_GAMES)
        .map(|seed| tokio::spawn(chess_against_the_engine(front.url.clone(), token(seed as usize), seed, CHESS_MOVES, made.clone())))
        .collect();
    let t = Instant::now();
    while made.load(Ordering::Relaxed) < total / 3 {
        assert!(t.elapsed() < Duration::from_secs(60), "the games did not get going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    kill9(servers[1].take().unwrap());
    let killed_at = made.load(Ordering::Relaxed);
    let on_killed: Vec<(String, u64)> =
        last_writers(&redis.url).into_iter().filter(|(_, (s, _))| s == "s2").map(|(id, (_, v))| (id, v)).collect();

    for game in hanoi {
        let (id, acknowledged) = tokio::time::timeout(Duration::from_secs(180), game).await.expect("a puzzle never finished").unwrap();
        // The answers count 1, 2, 3, … with no gap (a lost move) and no
        // repeat (a move made twice, or two servers running the game from one state).
        let expected: Vec<u64> = (1..=per_puzzle as u64).collect();
        assert_eq!(acknowledged, expected, "game {id}");
    }
    for (seed, game) in chess.into_iter().enumerate() {
        let (id, movetext) = tokio::time::timeout(Duration::from_secs(180), game).await.expect("a chess game never finished").unwrap();
        assert_eq!(movetext, reference[seed], "chess game {id} (seed {seed}) went otherwise than without the kill");
    }
    assert!(killed_at < total, "the server was killed before the games ended");
    // Games the killed server had run last and that were not over went on
    // on the others (the rest had ended before the kill).
    let now = last_writers(&redis.url);
    let moved = on_killed.iter().filter(|(id, v)| now[id].1 > *v).count();
    eprintln!("{} of 50 games were last written by the killed server; {moved} of them went on elsewhere", on_killed.len());
    assert!(moved > 0, "no game in progress was on the killed server");
    // Each solved puzzle is recorded once, whichever server ended it, in
    // whole lines (the chess games stop before their end: no record).
    let text = std::fs::read_to_string(&records).unwrap();
    assert!(text.ends_with('\n'), "{text}");
    let mut ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .inspect(|r| assert!(r["game"] == "hanoi" && r["outcome"] == "solved" && r["moves"] == per_puzzle, "{r}"))
        .map(|r| r["record"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!((ids.len(), text.lines().count()), (puzzles, puzzles), "one record per solved puzzle:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_games_on_two_servers_all_finish_when_one_is_killed() {
    fifty_games_with_a_server_killed(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_games_on_three_servers_all_finish_when_one_is_killed() {
    fifty_games_with_a_server_killed(3).await;
}

#[tokio::test]
async fn a_move_through_one_server_wakes_the_wait_held_on_another() {
    if !services_present() {
        return;
    }
    let work = scratch();
    let (alice, a_line) = issue_token("alice");
    let (bob, b_line) = issue_token("bob");
    let cfg = config(work.path(), &format!("{a_line}\n{b_line}"));
    let redis = redis(work.path());
    let (s1, s2) = (server(work.path(), &cfg, &redis.url, "s1").await, server(work.path(), &cfg, &redis.url, "s2").await);
    // Each agent talks to its own server.
    let a = http_client_with_token(&s1, &alice).await;
    let b = http_client_with_token(&s2, &bob).await;
    let id = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &id).await;
    b.ok("chess_join_game", json!({"game_id": id, "join_code": code})).await;

    // A wait held while the other agent moves, on the other server.
    let wait_in_background = |c: &Arc<Client>| {
        let (c, game) = (c.clone(), json!({"game_id": id}));
        tokio::spawn(async move { c.ok("chess_wait_for_next_turn", game).await })
    };
    let (a, b) = (Arc::new(a), Arc::new(b));
    // Bob waits on s2 for White's move; Alice makes it on s1.
    let bob_waits = wait_in_background(&b);
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.ok("chess_finish_turn", json!({"game_id": id, "move": "e2e4"})).await;
    let board = tokio::time::timeout(Duration::from_secs(10), bob_waits).await.expect("bob's wait on s2 was not woken").unwrap();
    assert_eq!(board["status"], "your-turn", "{board}");
    assert_eq!(board["last_move"], "e4", "{board}");

    // And the other way round: Alice waits on s1 for Bob's reply on s2.
    let alice_waits = wait_in_background(&a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.ok("chess_finish_turn", json!({"game_id": id, "move": "c7c5"})).await;
    let board = tokio::time::timeout(Duration::from_secs(10), alice_waits).await.expect("alice's wait on s1 was not woken").unwrap();
    assert_eq!(board["last_move"], "c5", "{board}");
    // A stranger on either server is still refused.
    let (eve, _) = issue_token("eve");
    let refused = http_client_at(&s1.url, &eve).await;
    assert!(refused.is_err(), "a token the servers were not given is refused at the door");
}

#[tokio::test]
async fn a_redis_laid_out_by_a_newer_ludus_stops_the_start_and_is_left_alone() {
    if !services_present() {
        return;
    }
    let work = scratch();
    let redis = redis(work.path());
    let port = redis.url.rsplit(':').next().unwrap();
    let cli = common::cluster::binary("redis-cli").expect("redis-cli comes with redis-server");
    let set = std::process::Command::new(&cli).args(["-p", port, "SET", "ludus:format", "99"]).output().unwrap();
    assert!(set.status.success());
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--store", &redis.url])
        .env("XDG_DATA_HOME", work.path())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it started: {stderr}");
    assert!(stderr.contains(&redis.url) && stderr.contains("newer Ludus"), "{stderr}");
    let get = std::process::Command::new(&cli).args(["-p", port, "GET", "ludus:format"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "99", "the store was changed");
}

/// The record of a Hanoi game `id` that alice started, as a store keeps it.
fn hanoi_record(id: &str) -> ludus::store::Record {
    ludus::store::Record {
        id: id.into(),
        plugin: "hanoi".into(),
        plugin_version: "0.1.0".into(),
        plugin_sha256: "ab".into(),
        seed: 7,
        seed_chosen: false,
        secret: Some(11),
        replay: false,
        created_by: "alice".into(),
        created_at_ms: 1,
        players: vec!["alice".into()],
        join_code: None,
        over: false,
        renamed: false,
        calls: 1,
        changed_at_ms: 2,
        idle_timeout_ms: 60_000,
        ..Default::default()
    }
}

/// A Redis laid out by the previous layout (games under `ludus:game:ID`)
/// is moved to this one when a server opens it: its games load, at the
/// version they were, and the layout is marked.
#[test]
fn a_redis_of_the_previous_layout_has_its_games_moved() {
    use ludus::store::{RedisStore, SharedStore};
    if !services_present() {
        return;
    }
    let work = scratch();
    let redis = redis(work.path());
    let mut con = redis::Client::open(redis.url.as_str()).unwrap().get_connection().unwrap();
    let record = ludus::store::Record { calls: 3, ..hanoi_record("old1") };
    let _: () = redis::cmd("SET").arg("ludus:format").arg(1).query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg("ludus:tokens").arg(41).query(&mut con).unwrap();
    let _: () = redis::cmd("HSET")
        .arg("ludus:game:old1")
        .arg("record")
        .arg(serde_json::to_string(&record).unwrap())
        .arg("state")
        .arg("kept")
        .arg("version")
        .arg(3)
        .query(&mut con)
        .unwrap();
    let store = RedisStore::open(&redis.url, "s1").unwrap();
    let stored = store.load("old1").unwrap().expect("the game of layout 1 is gone");
    assert_eq!((stored.record.calls, stored.state.as_slice(), stored.version), (3, &b"kept"[..], 3));
    let format: u64 = redis::cmd("GET").arg("ludus:format").query(&mut con).unwrap();
    assert_eq!(format, 2);
    let old: Vec<String> = redis::cmd("KEYS").arg("ludus:game:*").query(&mut con).unwrap();
    assert!(old.is_empty(), "keys of layout 1 are left: {old:?}");
}

/// The lease discipline itself, on a real Redis: a second server waits
/// while the lease is held (writes keep it), the holder hands it to the
/// server that asked for it, a server whose lease was lost (it stalled
/// past it) cannot write over the game the next holder wrote, and every
/// write records its writer and bumps the version.
#[test]
fn a_write_after_the_lease_was_lost_is_refused() {
    use ludus::store::{RedisStore, SessionStore, SharedStore, StoreError};
    if !services_present() {
        return;
    }
    let work = scratch();
    let redis = redis(work.path());
    let (a, b) = (RedisStore::open(&redis.url, "a").unwrap(), RedisStore::open(&redis.url, "b").unwrap());
    let record = hanoi_record("g1");
    let first = a.lease("g1", None, false, Duration::from_secs(1)).unwrap();
    assert_eq!(first.version, 0, "a new game is at version 0");
    // While a holds it, b waits and gives up with the holder named.
    let busy = b.lease("g1", None, false, Duration::from_millis(200)).unwrap_err();
    assert!(matches!(&busy, StoreError::Busy { server, .. } if server == "a"), "{busy:?}");
    assert!(busy.to_string().contains("busy on server a"), "{busy}");
    // A write keeps the lease: b still waits.
    assert_eq!(a.put(&record, b"one", Some(&first)).unwrap(), 1);
    assert!(b.lease("g1", None, false, Duration::from_millis(100)).is_err(), "a write gave the lease away");
    // b asks for it, and a hands it over while b waits: b sees version 1.
    let second = std::thread::scope(|scope| {
        let asking = scope.spawn(|| b.lease("g1", None, true, Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(200));
        a.release("g1", &first);
        asking.join().unwrap()
    })
    .unwrap();
    assert_eq!(second.version, 1);
    assert_ne!(second.token, first.token, "each lease has a token of its own");
    // a, stalled with its old lease, cannot write; b can.
    let stale = a.put(&record, b"stale", Some(&first)).unwrap_err();
    assert!(matches!(&stale, StoreError::TakenOver(id) if id == "g1"), "a lost lease still wrote: {stale:?}");
    assert_eq!(b.put(&record, b"two", Some(&second)).unwrap(), 2);
    let stored = a.load("g1").unwrap().unwrap();
    assert_eq!((stored.state.as_slice(), stored.version), (&b"two"[..], 2));
    assert_eq!(last_writers(&redis.url)["g1"], ("b".to_string(), 2));
    // b renews what it holds; a new lease of a is still refused.
    assert_eq!(b.lease("g1", Some(second.token), false, Duration::ZERO).unwrap().version, 2);
    assert!(a.lease("g1", None, false, Duration::ZERO).is_err());
    // Unleased writes are refused outright, and the caller's games are listed.
    assert!(a.put(&record, b"x", None).is_err());
    assert_eq!(b.records_of("alice").unwrap().len(), 1);
}

/// Behind nginx every client arrives from nginx's address: the per-address
/// caps are per client only when the server believes the address nginx
/// forwards, which it does for the proxies the operator trusts
/// (`trusted_proxies`, as the shipped config sets it). 130 clients, each
/// from its own loopback address and with an event stream of its own, pass
/// the cap of 128 streams per address through nginx; without the trust, the
/// same 130 are two too many for the one address.
#[tokio::test]
async fn per_address_caps_count_each_client_behind_a_trusted_proxy() {
    if !services_present() {
        return;
    }
    for trusted in [true, false] {
        let work = scratch();
        let redis = redis(work.path());
        let extra = if trusted { "trusted_proxies = [\"127.0.0.1\"]" } else { "" };
        let cfg = config(work.path(), extra);
        let s1 = server(work.path(), &cfg, &redis.url, "s1").await;
        let front = nginx(work.path(), &[&s1]);
        let mut streams = Vec::new();
        let mut refused = 0;
        for i in 0..130u8 {
            let client = reqwest::Client::builder().local_address(std::net::IpAddr::from([127, 0, 1, i + 1])).build().unwrap();
            let post = |body: Value, session: Option<&str>| {
                let mut r = client
                    .post(&front.url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .json(&body);
                if let Some(s) = session {
                    r = r.header("mcp-session-id", s);
                }
                r.send()
            };
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            let answer = post(init, None).await.unwrap();
            let session = answer.headers()["mcp-session-id"].to_str().unwrap().to_string();
            drop(answer);
            post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(&session)).await.unwrap();
            let stream =
                client.get(&front.url).header("accept", "text/event-stream").header("mcp-session-id", &session).send().await.unwrap();
            match stream.status().as_u16() {
                200 => streams.push(stream),
                429 => refused += 1,
                other => panic!("GET of an event stream answered {other}: {}", stream.text().await.unwrap_or_default()),
            }
        }
        if trusted {
            assert_eq!((streams.len(), refused), (130, 0), "each client behind the trusted proxy has its own cap");
        } else {
            assert_eq!((streams.len(), refused), (128, 2), "one address, one cap");
        }
        drop(streams);
    }
}

/// On a Redis Cluster of three shards, two servers share one caller's
/// games: each game's keys share its id's hash tag (one shard, one script),
/// the games spread over the shards, and every game goes on through the
/// other server after a hand-over, its moves all there.
#[tokio::test]
async fn games_on_a_redis_cluster_spread_over_its_shards_and_move_between_servers() {
    if !services_present() {
        return;
    }
    let work = scratch();
    let (alice, line) = issue_token("alice");
    let cfg = config(work.path(), &line);
    let cluster = redis_cluster(work.path(), 3);
    let (s1, s2) = (server(work.path(), &cfg, &cluster.url, "s1").await, server(work.path(), &cfg, &cluster.url, "s2").await);
    let (a, b) = (http_client_with_token(&s1, &alice).await, http_client_with_token(&s2, &alice).await);
    let mut ids = Vec::new();
    for _ in 0..12 {
        let env = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].as_str().unwrap().to_string();
        a.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2]})).await;
        ids.push(env);
    }
    for env in &ids {
        // Held by s1 until now: s2 asks for it, and it is s2's from here on.
        let state = b.ok("hanoi_get_state", json!({"env_id": env})).await;
        assert_eq!(state["moves_made"], 1, "{env}: {state}");
        let moved = b.ok("hanoi_execute_move", json!({"env_id": env, "move": [2, 0, 1]})).await;
        assert_eq!(moved["moves_made"], 2, "{env}: {moved}");
        // And back through s1, which catches up with s2's move.
        assert_eq!(a.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 2, "{env}");
    }
    // Each shard keeps the games whose ids hash to its slots: all of them
    // together keep the twelve, more than one keeps some.
    let per_shard: Vec<usize> = cluster
        .nodes
        .iter()
        .map(|node| {
            let mut con = redis::Client::open(node.url.as_str()).unwrap().get_connection().unwrap();
            let keys: Vec<String> = redis::cmd("KEYS").arg("ludus:{*}:game").query(&mut con).unwrap();
            keys.len()
        })
        .collect();
    assert_eq!(per_shard.iter().sum::<usize>(), 12, "{per_shard:?}");
    assert!(per_shard.iter().filter(|n| **n > 0).count() > 1, "the games all went to one shard: {per_shard:?}");
}

/// The holder of game `id`'s lease in Redis (`server token`), if any.
fn lease_holder(redis: &str, id: &str) -> Option<String> {
    let mut con = redis::Client::open(redis).unwrap().get_connection().unwrap();
    redis::cmd("GET").arg(format!("ludus:{{{id}}}:lease")).query(&mut con).unwrap()
}

/// A server holds the lease of a game it plays, and gives it up when the
/// game leaves its memory and when it stops (SIGTERM, as a service manager
/// stops it), so that another server takes the game at once instead of
/// after the lease lapses.
#[tokio::test]
async fn a_server_gives_its_games_up_when_they_go_idle_and_when_it_stops() {
    if !services_present() {
        return;
    }
    let work = scratch();
    let (alice, line) = issue_token("alice");
    let cfg = config(work.path(), &format!("{line}\n[limits]\nunload_idle_after_ms = 300"));
    let redis = redis(work.path());
    let s1 = server(work.path(), &cfg, &redis.url, "s1").await;
    let a = http_client_with_token(&s1, &alice).await;
    let idle = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].as_str().unwrap().to_string();
    let holder = lease_holder(&redis.url, &idle).unwrap_or_default();
    assert!(holder.starts_with("s1 "), "the server playing the game does not hold its lease: {holder:?}");
    // Idle past the delay, the game leaves memory at the reaper's next sweep (every second).
    let t = Instant::now();
    while lease_holder(&redis.url, &idle).is_some() {
        assert!(t.elapsed() < Duration::from_secs(10), "the lease of a game gone idle was kept");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A game in use when the server stops.
    let active = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].as_str().unwrap().to_string();
    a.ok("hanoi_execute_move", json!({"env_id": active, "move": [1, 0, 2]})).await;
    assert!(lease_holder(&redis.url, &active).is_some_and(|h| h.starts_with("s1 ")));
    let pid = s1.pid().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let t = Instant::now();
    // Gone, or a zombie its parent (this test) has not reaped.
    let running = || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.split_whitespace().nth(2) != Some("Z"));
    while running() {
        assert!(t.elapsed() < Duration::from_secs(10), "the server did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lease_holder(&redis.url, &active), None, "the stopped server kept its game's lease");
    // Another server plays it on, at once, from where it was.
    let s2 = server(work.path(), &cfg, &redis.url, "s2").await;
    let b = http_client_with_token(&s2, &alice).await;
    assert_eq!(b.ok("hanoi_get_state", json!({"env_id": active})).await["moves_made"], 1);
    assert!(lease_holder(&redis.url, &active).is_some_and(|h| h.starts_with("s2 ")));
}

/// Two servers on one Redis, and one caller (alice) with a client on each:
/// `a` through s1, `b` through s2. What it started ends when it drops.
struct OneCallerOnTwoServers {
    a: Client,
    b: Client,
    redis: Service,
    _servers: (HttpServer, HttpServer),
    _work: tempfile::TempDir,
}

async fn one_caller_on_two_servers() -> OneCallerOnTwoServers {
    let work = scratch();
    let (alice, line) = issue_token("alice");
    let cfg = config(work.path(), &line);
    let redis = redis(work.path());
    let (s1, s2) = (server(work.path(), &cfg, &redis.url, "s1").await, server(work.path(), &cfg, &redis.url, "s2").await);
    let (a, b) = (http_client_with_token(&s1, &alice).await, http_client_with_token(&s2, &alice).await);
    OneCallerOnTwoServers { a, b, redis, _servers: (s1, s2), _work: work }
}

/// A game handed to another server and back before that server changed it
/// runs on where it came back to, timers and all: the chess engine,
/// thinking when a read through the other server took the game, replies
/// once the game is back (its copy is rebuilt from the store though its
/// version did not move).
#[tokio::test]
async fn a_game_handed_away_and_back_keeps_its_engine_thinking() {
    if !services_present() {
        return;
    }
    let one = one_caller_on_two_servers().await;
    let (a, b) = (&one.a, &one.b);
    let start = json!({"type": "computer", "color": "white", "difficulty": 1, "seed": 3});
    let mut board = a.ok("chess_create_game", start).await;
    let id = board["game_id"].as_str().unwrap().to_string();
    for _ in 0..5 {
        let mv = board["legal_moves"][0].as_str().unwrap().to_string();
        a.ok("chess_finish_turn", json!({"game_id": id, "move": mv, "decision": board["decision"]})).await;
        // While the engine thinks on s1, a read through s2 takes the game there, and the wait through s1 takes it back.
        b.read_resource(&format!("chess://game/{id}/fen")).await.unwrap();
        board = a.ok("chess_wait_for_next_turn", json!({"game_id": id})).await;
        // The engine's reply came: our turn again, or its move ended the game
        // (once it mated at move 4). Its moves differ from run to run: the
        // server mixes a secret of its own into the seed asked for.
        let mated_by_engine = board["status"] == "game-over" && board["turn"] == "white";
        assert!(board["status"] == "your-turn" || mated_by_engine, "the engine's reply never came: {board}");
        if mated_by_engine {
            break;
        }
    }
}

/// How many times Redis read a game whole (`HMGET` of its record, state
/// and version): each is a server loading a copy or rebuilding one.
fn whole_reads(redis: &str) -> u64 {
    let mut con = redis::Client::open(redis).unwrap().get_connection().unwrap();
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut con).unwrap();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_hmget:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// A puzzle handed to another server and back, with nobody writing it in
/// between, had nothing running (no timer, no process): the copy it comes
/// back to is the game as stored, and is not rebuilt. A move made through
/// the other server meanwhile is caught up with.
#[tokio::test]
async fn a_puzzle_handed_back_unchanged_is_not_rebuilt_and_a_move_elsewhere_is_caught_up() {
    if !services_present() {
        return;
    }
    let one = one_caller_on_two_servers().await;
    let (a, b) = (&one.a, &one.b);
    let env = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].as_str().unwrap().to_string();
    a.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2]})).await;
    // s2's first call loads its copy; from then on both have one.
    b.ok("hanoi_get_state", json!({"env_id": env})).await;
    let before = whole_reads(&one.redis.url);
    for _ in 0..5 {
        assert_eq!(a.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 1);
        assert_eq!(b.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 1);
        assert!(lease_holder(&one.redis.url, &env).is_some_and(|h| h.starts_with("s2 ")), "the game did not go to s2");
    }
    assert_eq!(whole_reads(&one.redis.url), before, "a copy was rebuilt though nobody wrote the game");
    // A move through s2; s1's copy is behind, and catches up.
    assert_eq!(b.ok("hanoi_execute_move", json!({"env_id": env, "move": [2, 0, 1]})).await["moves_made"], 2);
    assert_eq!(a.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 2);
    assert_eq!(whole_reads(&one.redis.url), before + 1, "s1 did not rebuild its copy from the store once");
}

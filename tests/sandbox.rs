//! Hostile components are contained: each misbehaviour ends only its own
//! session, with a clear error, while everything else keeps working.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

#[tokio::test]
async fn runaway_memory_bomb_panic_and_flood_are_contained() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["hostile"]);
    let cfg = config(work.path(), "[plugins.hostile]\ncall_timeout_ms = 400\nmemory_mb = 32\n");
    let c = stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let start = || c.call("hostile_start", json!({}));
    let bystander = text(&start().await);
    assert_eq!(text(&c.call("hostile_ping", json!({"id": bystander})).await), "pong 1");

    // An infinite loop is stopped by the CPU limit (the epoch ticker really fires).
    let victim = text(&start().await);
    let t = Instant::now();
    let e = c.err("hostile_spin", json!({"id": victim})).await;
    let took = t.elapsed();
    assert!(e.contains("CPU limit of 400 ms"), "{e}");
    assert!(took < Duration::from_secs(5), "stopped after {took:?}");
    let e = c.err("hostile_ping", json!({"id": victim})).await;
    assert!(e.contains("has ended") && e.contains("CPU limit"), "the next call says what happened: {e}");

    // A memory bomb hits the per-session memory limit.
    let victim = text(&start().await);
    let e = c.err("hostile_bomb", json!({"id": victim})).await;
    assert!(e.contains("ran out of memory (limit 32 MiB"), "{e}");

    // A panic ends the session and its message is reported.
    let victim = text(&start().await);
    let e = c.err("hostile_crash", json!({"id": victim})).await;
    assert!(e.contains("panicked on purpose"), "{e}");

    // A flood of guest stdout never reaches the MCP stream (which would break this client).
    let victim = text(&start().await);
    // 5,000 lines (400 KB) are six times the 64 KiB kept; more would test the machine's speed against the 400 ms limit.
    assert_eq!(text(&c.call("hostile_flood", json!({"id": victim, "lines": 5000})).await), "5000");
    assert_eq!(text(&c.call("hostile_ping", json!({"id": victim})).await), "pong 1");

    // The bystander session and the other games never noticed.
    assert_eq!(text(&c.call("hostile_ping", json!({"id": bystander})).await), "pong 2");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    let s = c.ok("ludus_sessions", json!({"game": "hostile"})).await;
    let ended = s["sessions"].as_array().unwrap().iter().filter(|s| s["ended"].is_string()).count();
    assert_eq!(ended, 3, "{s}");
    c.close().await;
}

#[tokio::test]
async fn session_limits_and_idle_expiry_give_clear_errors() {
    let work = scratch();
    // Games stay in memory (none leaves to make room), so the limit is met.
    let cfg = config(work.path(), "[limits]\nunload_idle_after_ms = 0\n[plugins.hanoi]\nmax_sessions = 2\nidle_timeout_ms = 1500\n");
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let a = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    let e = c.err("hanoi_init_simulator", json!({"n": 2})).await;
    assert!(e.contains("hanoi already runs 2 game sessions"), "{e}");
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let e = c.err("hanoi_get_state", json!({"env_id": a})).await;
    assert!(e.contains("no longer available") && e.contains("expired after 1 s without calls"), "{e}");
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    c.close().await;
}

/// At a limit, games that may leave memory make room instead of the new
/// game being refused: the longest-idle ones leave (kept as a restart keeps
/// them) and come back, as they were, on their next call.
#[tokio::test]
async fn at_a_limit_idle_games_leave_memory_to_make_room() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_sessions_per_caller = 3\n");
    let c = stdio(&["--config", cfg.to_str().unwrap(), "--store", "memory"], work.path()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
        c.ok("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 1], "decision": 1})).await;
        ids.push(id);
    }
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    let games = c.ok("ludus_games", json!({})).await;
    let hanoi = games["games"].as_array().unwrap().iter().find(|g| g["name"] == "hanoi").unwrap().clone();
    assert!(hanoi["live_sessions"].as_u64().unwrap() < 4, "{hanoi}");
    assert_eq!(c.ok("ludus_sessions", json!({})).await["count"], 4);
    for id in ids {
        let state = c.ok("hanoi_get_state", json!({"env_id": id})).await;
        assert_eq!((&state["state"], &state["decision"]), (&json!([[2], [1], []]), &json!(2)), "{state}");
    }
    c.close().await;
}

/// One client cannot take every slot: past `max_sessions_per_caller` its new
/// games are refused with the limit named, while another client still starts
/// games.
#[tokio::test]
async fn one_client_cannot_take_every_session() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_sessions_per_caller = 3\nunload_idle_after_ms = 0\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (greedy, other) = (http_client(&server).await, http_client(&server).await);
    for _ in 0..3 {
        greedy.ok("hanoi_init_simulator", json!({"n": 2})).await;
    }
    let e = greedy.err("river_crossing_init_simulator", json!({"n": 2})).await;
    assert!(e.contains("you already run 3 game sessions") && e.contains("limits.max_sessions_per_caller"), "{e}");
    other.ok("hanoi_init_simulator", json!({"n": 2})).await;
}

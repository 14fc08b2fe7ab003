//! `ludus verify` on records an evaluator relies on, through the real
//! binary: games rebuilt from their stored state (an idle pause past the
//! unload, a restart) verify, since a rebuilt game goes on numbering its
//! timers and channels and the replay rebuilds it at the same place.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// Every line of a records file.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// How many chess games the server holds in memory.
async fn chess_in_memory(c: &Client) -> u64 {
    let games = c.ok("ludus_games", json!({})).await;
    games["games"].as_array().unwrap().iter().find(|g| g["name"] == "chess").unwrap()["live_sessions"].as_u64().unwrap()
}

/// Waits for the player's turn (or the end) and plays the first legal move
/// in sorted order; the state it found. A game over plays nothing.
async fn play_first_move(c: &Client, game: &Value) -> Value {
    let mut s = json!({});
    for _ in 0..200 {
        s = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
        if s["status"] != "opponent-turn" {
            break;
        }
    }
    if s["status"] == "your-turn" {
        let mut legal: Vec<&str> = s["legal_moves"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        legal.sort();
        c.ok("chess_finish_turn", json!({"game_id": game, "move": legal[0], "decision": s["decision"]})).await;
    }
    s
}

/// A chess game against the engine whose player pauses past the idle
/// unload, then goes on across a restart (stopped right after a move, the
/// engine's reply due), and is played to its end: its record verifies,
/// and its log says where it was rebuilt.
#[tokio::test]
async fn a_chess_game_rebuilt_after_an_idle_pause_and_a_restart_verifies() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let extra = format!("records = {:?}\n[limits]\nunload_idle_after_ms = 300\n", file.display().to_string());
    let cfg = config(work.path(), &extra);
    let args = ["--config", cfg.to_str().unwrap()];

    let c = stdio(&args, work.path()).await;
    let game = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 21})).await["game_id"].clone();
    for _ in 0..3 {
        play_first_move(&c, &game).await;
    }
    // The engine's reply came; the player thinks past the unload.
    let s = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(s["status"], "your-turn", "{s}");
    let mut left = false;
    for _ in 0..100 {
        if chess_in_memory(&c).await == 0 {
            left = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left, "the idle game stayed in memory");
    for _ in 0..3 {
        play_first_move(&c, &game).await;
    }
    // Stopped right after a move: the engine's reply may be pending.
    c.close().await;

    let c = stdio(&args, work.path()).await;
    let mut over = false;
    for _ in 0..400 {
        if play_first_move(&c, &game).await["status"] == "game-over" {
            over = true;
            break;
        }
    }
    assert!(over, "the game did not end in 400 moves");
    c.close().await;

    let all = records(&file);
    assert_eq!(all.len(), 1, "{all:?}");
    let rebuilt = all[0]["actions"].as_array().unwrap().iter().filter(|a| a.get("rebuilt").is_some()).count();
    assert!(rebuilt >= 2, "the log names each rebuild (an idle unload, a restart): {rebuilt}");
    let timers: Vec<u64> = all[0]["actions"].as_array().unwrap().iter().filter_map(|a| a["timer"].as_u64()).collect();
    assert!(timers.windows(2).all(|w| w[0] < w[1]), "timer ids go on across rebuilds: {timers:?}");

    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, ""));
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("1 records: 1 reproduced") || printed.contains("1 record: 1 reproduced"), "{printed}");
}

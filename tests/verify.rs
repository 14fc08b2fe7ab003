//! `ludus verify` on records an evaluator relies on, through the real
//! binary: games rebuilt from their stored state (an idle pause past the
//! unload, a restart) verify, since a rebuilt game goes on numbering its
//! timers and channels and the replay rebuilds it at the same place.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

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

/// `ludus report FILES ARGS`: its exit code, stdout and stderr.
fn report(files: &[&Path], args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(BIN).arg("report").args(files).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// Writes `lines` as a records file named `name` in `dir`.
fn write_lines(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

/// Plays fool's mate with both seats (1. f3 e5 2. g4 Qh4#), and two Hanoi
/// puzzles, recorded by a server; the records file's lines.
async fn sealed_records(work: &Path) -> Vec<String> {
    let file = work.join("records.jsonl");
    let cfg = config(work, &format!("records = {:?}\n", file.display().to_string()));
    let c = stdio(&["--config", cfg.to_str().unwrap()], work).await;
    let game = c.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&c, &game).await;
    c.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    for (n, mv) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
        c.ok("chess_finish_turn", json!({"game_id": game, "move": mv, "decision": n + 1})).await;
    }
    for _ in 0..2 {
        let env = c.ok("hanoi_init_simulator", json!({"n": 1})).await["env_id"].clone();
        c.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2], "decision": 1})).await;
    }
    c.close().await;
    let text = std::fs::read_to_string(&file).unwrap();
    text.lines().map(String::from).collect()
}

/// Edits line `i` of `lines` (as JSON) with `edit`.
fn edited(lines: &[String], i: usize, edit: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut out = lines.to_vec();
    let mut v: Value = serde_json::from_str(&out[i]).unwrap();
    edit(&mut v);
    out[i] = v.to_string();
    out
}

/// Each line the server writes is signed and chained to the one before:
/// `ludus key` prints the key, verify with it passes the file as written;
/// each tampering (figures, caller, a seat's kind, the match, a model
/// renamed throughout, transposed moves, `replay` added, a line copied, a
/// line removed, another key's signature) is named by verify, and the
/// report leaves out what it cannot trust and says how many.
#[tokio::test]
async fn signed_and_chained_records_name_every_tampering() {
    let work = scratch();
    let lines = sealed_records(work.path()).await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    let chess: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(chess["figures"]["result"], "0-1", "{chess}");
    assert_eq!(chess["prev"], "", "the first line follows nothing");
    let key = std::process::Command::new(BIN).arg("key").env("XDG_DATA_HOME", work.path().join("data")).output().unwrap();
    let key = String::from_utf8(key.stdout).unwrap().trim().to_string();
    assert_eq!(chess["signer"], key.as_str(), "the records are signed by the key `ludus key` prints");

    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let cfg = config(&elsewhere, "");
    let check = |name: &str, lines: &[String]| {
        let path = write_lines(work.path(), name, lines);
        let (code, printed) = verify_with_key(&path, &cfg, &key);
        (code, printed, path)
    };
    let (code, printed, whole) = check("whole.jsonl", &lines);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("3 records: 3 reproduced"), "{printed}");

    // Edits the replay recomputes: named as altered, and as differing.
    let cases: Vec<(&str, Vec<String>, &[&str])> = vec![
        ("result", edited(&lines, 0, |v| v["figures"]["result"] = json!("1-0")), &["altered", "DIFFERS", "figures"]),
        ("reason", edited(&lines, 0, |v| v["figures"]["reason"] = json!("resignation")), &["altered", "figures"]),
        ("kind", edited(&lines, 0, |v| v["seats"][1]["kind"] = json!("builtin")), &["altered", "seats"]),
        ("caller", edited(&lines, 1, |v| v["caller"] = json!("someone-else")), &["altered"]),
        ("match", edited(&lines, 1, |v| v["match"] = json!({"id": "m1", "pair": 1, "game": 1})), &["altered"]),
        ("replay", edited(&lines, 2, |v| v["replay"] = json!(true)), &["altered"]),
        (
            "renamed",
            edited(&lines, 0, |v| {
                let renamed = v.to_string().replace("\"stdio\"", "\"model-x\"");
                *v = serde_json::from_str(&renamed).unwrap();
            }),
            &["altered"],
        ),
        (
            // 1. g4 e5 2. f3 Qh4# ends the same, but not as the PGN says.
            "transposed",
            edited(&lines, 0, |v| {
                let actions = v["actions"].as_array_mut().unwrap();
                let (a, b) = (
                    actions.iter().position(|a| a["args"]["move"] == "f3").unwrap(),
                    actions.iter().position(|a| a["args"]["move"] == "g4").unwrap(),
                );
                actions[a]["args"]["move"] = json!("g4");
                actions[b]["args"]["move"] = json!("f3");
            }),
            &["altered", "DIFFERS", "figures"],
        ),
        ("copied", [lines.clone(), vec![lines[1].clone()]].concat(), &["a copy of line 2"]),
        ("removed", vec![lines[0].clone(), lines[2].clone()], &["does not follow the line before it"]),
    ];
    for (what, tampered, said) in &cases {
        let (code, printed, path) = check(&format!("{what}.jsonl"), tampered);
        assert_eq!(code, Some(1), "{what}: {printed}");
        for s in *said {
            assert!(printed.contains(s), "{what}: {s:?} not said: {printed}");
        }
        let (code, _, warned) = report(&[&path], &["--key", &key]);
        assert_eq!(code, Some(0), "{what}: {warned}");
        if *what != "removed" {
            assert!(warned.contains("left out of every figure"), "{what}: the report says what it left out: {warned}");
        } else {
            assert!(warned.contains("out of place (counted)"), "{warned}");
        }
    }

    // The report counts an altered line only when told to, still naming it.
    let altered = write_lines(work.path(), "altered.jsonl", &cases[0].1);
    let (_, out, warned) = report(&[&altered], &["--key", &key]);
    assert!(out.contains("2 records") && warned.contains("altered: its content is not what the server signed; left out"), "{out}{warned}");
    let (_, out, warned) = report(&[&altered], &["--include-unverified"]);
    assert!(out.contains("3 records") && warned.contains("counted"), "{out}{warned}");

    // Another server's key: its lines are not these records' server's.
    let other = scratch();
    let theirs = std::process::Command::new(BIN).arg("key").env("XDG_DATA_HOME", other.path()).output().unwrap();
    let theirs = String::from_utf8(theirs.stdout).unwrap().trim().to_string();
    assert_ne!(theirs, key);
    let (code, printed) = verify_with_key(&whole, &cfg, &theirs);
    assert_eq!(code, Some(1), "{printed}");
    assert!(printed.contains("signed by a key not given with --key"), "{printed}");
    let (_, out, warned) = report(&[&whole], &["--key", &theirs]);
    assert!(out.contains("0 records") && warned.contains("3 signed by a key not given"), "{out}{warned}");
}

/// `ludus verify FILE --config CFG --key KEY`.
fn verify_with_key(file: &Path, cfg: &Path, key: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(BIN).arg("verify").arg(file).arg("--config").arg(cfg).args(["--key", key]).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A time per move of 1.5 s that makes a player lose: the agent that stalls
/// loses on time, nobody may move after, the record says so with the clock,
/// and `ludus verify` deals the loss where the log has it.
#[tokio::test]
async fn an_agent_that_stalls_loses_on_time_and_the_record_verifies() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let ((ta, la), (tb, lb)) = (issue_token("model-a"), issue_token("model-b"));
    let extra = format!("records = {:?}\nclock = {{ move_ms = 1500, then = \"lose\" }}\n{la}\n{lb}", file.display().to_string());
    let cfg = config(work.path(), &extra);
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client_with_token(&server, &ta).await, http_client_with_token(&server, &tb).await);
    let game = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    // The clock does not run while a seat is open.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let code = join_code(&a, &game).await;
    b.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    a.ok("chess_finish_turn", json!({"game_id": game, "move": "e4", "decision": 1})).await;
    // model-b thinks too long.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let said = b.err("chess_finish_turn", json!({"game_id": game, "move": "e5", "decision": 2})).await;
    assert!(said.contains("model-b lost the game on time"), "{said}");
    let records = until_records(&file, 1).await;
    let r = &records[0];
    assert_eq!(r["clock"], json!({"move_ms": 1500, "then": "lose", "lost": "model-b"}), "{r}");
    assert!(r["ended"].as_str().unwrap().contains("model-b ran out of time (1500 ms a move"), "{r}");
    let result = |who: &str| r["seats"].as_array().unwrap().iter().find(|s| s["player"] == who).unwrap()["result"].clone();
    assert_eq!((result("model-a"), result("model-b"), r["outcome"].clone()), (json!("won"), json!("lost"), json!("won")), "{r}");
    assert!(r["actions"].as_array().unwrap().iter().any(|a| a["out_of_time"] == "model-b"), "{r}");
    drop(server);
    let (_, out, _) = report(&[&file], &[]);
    assert!(out.contains("clock: 1500 ms a move, or the game is lost"), "the report states the clock: {out}");
    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, ""));
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("1 record: 1 reproduced") || printed.contains("1 records: 1 reproduced"), "{printed}");
}

/// Under a clock that makes a player lose, a game that expires while a
/// player's move is due is that player's loss, not an abandoned game.
#[tokio::test]
async fn a_game_that_expires_while_a_move_is_due_is_lost_by_that_player() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let ((ta, la), (tb, lb)) = (issue_token("model-a"), issue_token("model-b"));
    let extra = format!(
        "records = {:?}\nclock = {{ move_ms = 60000, then = \"lose\" }}\n{la}\n{lb}\n[plugins.chess]\nidle_timeout_ms = 1500\n",
        file.display().to_string()
    );
    let cfg = config(work.path(), &extra);
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client_with_token(&server, &ta).await, http_client_with_token(&server, &tb).await);
    let game = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &game).await;
    b.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    a.ok("chess_finish_turn", json!({"game_id": game, "move": "e4", "decision": 1})).await;
    let records = until_records(&file, 1).await;
    let r = &records[0];
    assert_eq!((&r["outcome"], &r["clock"]["lost"]), (&json!("won"), &json!("model-b")), "{r}");
    assert!(r["ended"].as_str().unwrap().contains("expired"), "{r}");
    drop(server);
    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, ""));
    assert_eq!(code, Some(0), "{printed}");
}

//! Result records (`--records FILE`) and `ludus report`, through the real
//! binary: every bundled puzzle and chess leave one record per game with
//! what the game said (outcome, moves, illegal moves, first failing move,
//! optimum, figures) and what the host knows (caller, seed, tool calls,
//! duration); a killed server leaves only whole lines and a restart writes
//! each game's record once; an unwritable path is refused at start; the
//! report reads real records, names bad lines, rates the players (checked
//! against choix on records of known strengths), and its HTML page loads in
//! headless Chromium with the expected plots; the illegal-move policy makes
//! a player lose and is recorded, or plays a random legal move for it that
//! a replay draws again. (Showdown's and Magic's records are
//! checked in their own tests, which run their engines.)

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::browser::chromium;
use common::*;
use serde_json::{Value, json};

/// The records of one session, in the order written.
fn of_session<'a>(all: &'a [Value], id: &str) -> Vec<&'a Value> {
    all.iter().filter(|r| r["record"].as_str().unwrap().starts_with(&format!("{id}/"))).collect()
}

#[tokio::test]
async fn every_puzzle_and_chess_leave_one_record_per_game() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let extra = format!("records = {:?}\n[plugins.river_crossing]\nidle_timeout_ms = 1500\n", file.display().to_string());
    let cfg = config(work.path(), &extra);
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;

    // Hanoi, N=2: an illegal move first, then solved in 3 (the optimum),
    // each move with the player's reasoning beside it.
    let hanoi = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    c.err("hanoi_execute_move", json!({"env_id": hanoi, "move": [2, 0, 2], "decision": 1})).await;
    let rambling = "why ".repeat(5000);
    let long = c.err("hanoi_execute_move", json!({"env_id": hanoi, "move": [1, 0, 1], "decision": 1, "reasoning": rambling})).await;
    assert!(long.contains("`reasoning` is at most 16384 characters"), "{long}");
    for (n, m) in [[1, 0, 1], [2, 0, 2], [1, 1, 2]].into_iter().enumerate() {
        let why = format!("move {} of the three", n + 1);
        c.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": m, "decision": n + 1, "reasoning": why})).await;
    }
    // The last move sent again for its number is a retry: answered, not counted.
    c.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": [1, 1, 2], "decision": 3})).await;
    // A reset begins the next game: a plan refused at its second move fails it.
    c.ok("hanoi_reset_simulator", json!({"env_id": hanoi})).await;
    let plan = c.ok("hanoi_execute_moves", json!({"env_id": hanoi, "moves": [[1, 0, 1], [1, 0, 2]]})).await;
    assert_eq!(plan["failed_move_index"], 1, "{plan}");

    // Checker Jumping, N=2: two reds side by side before the blues, a dead end.
    let checkers = c.ok("checker_jumping_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    c.ok("checker_jumping_execute_move", json!({"env_id": checkers, "move": ["R", 1, 2]})).await;
    let stuck = c.ok("checker_jumping_execute_move", json!({"env_id": checkers, "move": ["R", 0, 1]})).await;
    assert_eq!(stuck["dead_end"], true, "{stuck}");

    // Blocks World, the paper's N=4: one illegal move, then the optimal plan.
    let blocks = c.ok("blocks_world_init_simulator", json!({"n": 4})).await["env_id"].as_str().unwrap().to_string();
    c.err("blocks_world_execute_move", json!({"env_id": blocks, "move": ["Z", 0, 1]})).await;
    let plan = json!([["B", 0, 2], ["A", 0, 2], ["D", 1, 0], ["A", 2, 1], ["B", 2, 0], ["A", 1, 2], ["C", 1, 0], ["A", 2, 0]]);
    c.ok("blocks_world_execute_moves", json!({"env_id": blocks, "moves": plan})).await;

    // River Crossing, left after one crossing: abandoned when it expires.
    let river = c.ok("river_crossing_init_simulator", json!({"n": 2, "k": 2})).await["env_id"].as_str().unwrap().to_string();
    c.ok("river_crossing_execute_move", json!({"env_id": river, "move": ["A_1", "a_1"]})).await;

    // A plan that reaches the goal and then makes an illegal move fails, as the paper checks it.
    let overshoot = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    c.ok("hanoi_execute_moves", json!({"env_id": overshoot, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2], [2, 0, 1]]})).await;

    // Chess between agents, one client moving both sides (it takes the
    // other seat with the code): the fool's mate.
    let chess = c.ok("chess_create_game", json!({"type": "agent"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&c, &chess).await;
    c.ok("chess_join_game", json!({"game_id": chess, "join_code": code})).await;
    c.err("chess_finish_turn", json!({"game_id": chess, "move": "e2e5"})).await;
    for mv in ["f2f3", "e7e5", "g2g4", "d8h4"] {
        c.ok("chess_finish_turn", json!({"game_id": chess, "move": mv})).await;
    }

    let all = until_records(&file, 7).await;
    let solved = of_session(&all, &hanoi);
    assert_eq!(solved.len(), 2, "{all:#?}");
    let (first, second) = (solved[0], solved[1]);
    assert_eq!(first["record"], format!("{hanoi}/1"));
    assert_eq!(
        (&first["game"], &first["outcome"], &first["moves"], &first["illegal_moves"], &first["first_failing_move"], &first["optimum"]),
        (&json!("hanoi"), &json!("solved"), &json!(3), &json!(1), &json!(0), &json!(3)),
        "{first}"
    );
    assert_eq!((&first["parameters"], first["seed"].is_u64(), &first["caller"]), (&json!({"n": 2}), true, &json!("stdio")), "{first}");
    // init, four moves (one refused); the retry is not a call the game saw.
    assert_eq!(first["tool_calls"], 5, "{first}");
    assert_eq!(first["ended"], "the game ended");
    assert!(first["time"].as_str().unwrap().ends_with('Z') && first["duration_ms"].as_u64().is_some(), "{first}");
    assert_eq!(
        (&second["record"], &second["outcome"], &second["moves"], &second["illegal_moves"], &second["first_failing_move"]),
        (&json!(format!("{hanoi}/2")), &json!("failed"), &json!(1), &json!(1), &json!(1)),
        "{second}"
    );
    assert_eq!(second["tool_calls"], 2, "the reset and the plan: {second}");

    let over = of_session(&all, &overshoot);
    assert_eq!(
        (over.len(), &over[0]["outcome"], &over[0]["moves"], &over[0]["illegal_moves"], &over[0]["first_failing_move"]),
        (1, &json!("failed"), &json!(3), &json!(1), &json!(3)),
        "{over:?}"
    );

    let cj = of_session(&all, &checkers);
    assert_eq!((cj.len(), &cj[0]["outcome"], &cj[0]["moves"], &cj[0]["optimum"]), (1, &json!("failed"), &json!(2), &json!(8)), "{cj:?}");

    let bw = of_session(&all, &blocks);
    assert_eq!(bw.len(), 1, "{all:#?}");
    assert_eq!((&bw[0]["outcome"], &bw[0]["moves"], &bw[0]["illegal_moves"]), (&json!("solved"), &json!(8), &json!(1)), "{}", bw[0]);
    assert_eq!(bw[0]["parameters"], json!({"n": 4, "instance": "paper"}));
    // The paper's N=4 optimum, searched exactly (the plan took one move more).
    assert_eq!(bw[0]["optimum"], 7, "{}", bw[0]);

    let ch = of_session(&all, &chess);
    assert_eq!(ch.len(), 1, "{all:#?}");
    let ch = ch[0];
    assert_eq!(
        (&ch["outcome"], &ch["moves"], &ch["illegal_moves"]),
        (&json!("lost"), &json!(4), &json!(1)),
        "the creator played white: {ch}"
    );
    assert_eq!(ch["parameters"], json!({"opponent": "agent", "level": null, "colour": "white"}));
    assert_eq!((&ch["figures"]["result"], &ch["figures"]["reason"]), (&json!("0-1"), &json!("Black wins by checkmate")), "{ch}");
    assert!(ch["figures"]["pgn"].as_str().unwrap().contains("2. g4 Qh4#"), "{ch}");
    // Each seat's player and result; one caller in both seats played itself.
    assert_eq!(
        ch["seats"],
        json!([{"seat": "white", "kind": "agent", "player": "stdio", "result": "lost"}, {"seat": "black", "kind": "agent", "player": "stdio", "result": "won"}]),
        "{ch}"
    );
    // The secret mixed into the seed is published with the game.
    assert!(ch["secret"].is_u64() && ch["seed"].is_u64(), "{ch}");

    let rc = of_session(&all, &river);
    assert_eq!(rc.len(), 1, "{all:#?}");
    assert_eq!(
        (&rc[0]["outcome"], &rc[0]["moves"], &rc[0]["parameters"]),
        (&json!("abandoned"), &json!(1), &json!({"n": 2, "k": 2})),
        "{}",
        rc[0]
    );
    assert!(rc[0]["ended"].as_str().unwrap().contains("expired"), "{}", rc[0]);
    assert_eq!(all.len(), 7, "one record per game, no more: {all:#?}");
    c.close().await;

    // Each record carries its build and its log: the calls that could
    // change the game (the refused one too, the retry and the reasoning
    // that was too long not), each move's decision and reasoning.
    assert_eq!(first["build"].as_str().map(str::len), Some(64), "{first}");
    // Each call's time; each after the first, its player's think time.
    let mut actions = first["actions"].clone();
    for (i, a) in actions.as_array_mut().unwrap().iter_mut().enumerate() {
        let a = a.as_object_mut().unwrap();
        assert!(a.remove("at_ms").is_some_and(|t| t.is_u64()), "{first}");
        assert_eq!(a.remove("think_ms").is_some_and(|t| t.is_u64()), i > 0, "{first}");
    }
    assert_eq!(
        actions,
        json!([
            {"call": "hanoi_init_simulator", "by": "stdio", "args": {"n": 2}},
            {"call": "hanoi_execute_move", "by": "stdio", "args": {"move": [2, 0, 2]}, "decision": 1, "refused": true},
            {"call": "hanoi_execute_move", "by": "stdio", "args": {"move": [1, 0, 1]}, "decision": 1, "reasoning": "move 1 of the three"},
            {"call": "hanoi_execute_move", "by": "stdio", "args": {"move": [2, 0, 2]}, "decision": 2, "reasoning": "move 2 of the three"},
            {"call": "hanoi_execute_move", "by": "stdio", "args": {"move": [1, 1, 2]}, "decision": 3, "reasoning": "move 3 of the three"},
        ]),
        "{first}"
    );
    // Both seats' calls of the chess game between agents, in the order they ran.
    let by: Vec<&str> = ch["actions"].as_array().unwrap().iter().filter_map(|a| a["call"].as_str()).collect();
    assert_eq!(by[..3], ["chess_create_game", "chess_join_game", "chess_finish_turn"], "{ch}");

    // `ludus verify` plays every record again on its build and finds each as recorded.
    let (code, printed) = verify(&[&file], &cfg);
    assert_eq!(code, Some(0), "{printed}");
    for r in &all {
        let line = verdict(&printed, r["record"].as_str().unwrap());
        assert!(line.starts_with("reproduced"), "{line}");
    }
    assert!(printed.contains("7 records: 7 reproduced"), "{printed}");

    // A record whose move list was edited does not reproduce, and is named;
    // one whose build is not here is said so; the others still reproduce.
    let mut edited = first.clone();
    edited["actions"].as_array_mut().unwrap().remove(3);
    let mut elsewhere = bw[0].clone();
    elsewhere["build"] = json!("0".repeat(64));
    let tampered = work.path().join("tampered.jsonl");
    let lines: Vec<String> = [&edited, &elsewhere, ch].iter().map(|r| r.to_string()).collect();
    std::fs::write(&tampered, lines.join("\n") + "\n").unwrap();
    let (code, printed) = verify(&[&tampered], &cfg);
    assert_eq!(code, Some(1), "{printed}");
    let line = verdict(&printed, &format!("{hanoi}/1"));
    assert!(
        line.starts_with("DIFFERS") && line.contains("action 4 of 4: `hanoi_execute_move` by stdio was taken when played, and refused now"),
        "{line}"
    );
    let line = verdict(&printed, bw[0]["record"].as_str().unwrap());
    assert!(line.starts_with("CANNOT") && line.contains("is not here (here: 0.1.0"), "{line}");
    assert!(verdict(&printed, &format!("{chess}/1")).starts_with("reproduced"), "{printed}");
    assert!(printed.contains("3 records: 1 reproduced, 1 did not reproduce, 1 could not be checked"), "{printed}");
}

/// Four clients solve one-disk puzzles as fast as they can while the server
/// is killed: every line in the file is whole. After the restart a game that
/// was under way goes on and is recorded once, a game that expired while the
/// server was down is recorded as abandoned, and no record appears twice.
#[tokio::test]
async fn a_killed_server_leaves_whole_lines_and_a_restart_records_each_game_once() {
    let work = scratch();
    let (token, lines) = issue_token("alice");
    let cfg = config(work.path(), &format!("{lines}\n[plugins.river_crossing]\nidle_timeout_ms = 1500\n"));
    let (store, file) = (work.path().join("games.db"), work.path().join("records.jsonl"));
    let args = ["--config", cfg.to_str().unwrap(), "--store", store.to_str().unwrap(), "--records", file.to_str().unwrap()];
    let server = http_server(&args, work.path()).await;
    let c = http_client_with_token(&server, &token).await;
    let going_on = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    c.ok("hanoi_execute_move", json!({"env_id": going_on, "move": [1, 0, 1]})).await;
    let left = c.ok("river_crossing_init_simulator", json!({"n": 2, "k": 2})).await["env_id"].as_str().unwrap().to_string();

    let stop = Arc::new(AtomicBool::new(false));
    let mut players = Vec::new();
    for _ in 0..4 {
        let (c, stop) = (http_client_with_token(&server, &token).await, stop.clone());
        players.push(tokio::spawn(async move {
            // A call in flight when the server dies may never be answered
            // (its client tries to resume the stream): give up on it.
            let call = |name: &'static str, args: Value| {
                let c = &c;
                async move { tokio::time::timeout(Duration::from_secs(10), c.try_call(name, args)).await.ok().and_then(Result::ok) }
            };
            let mut solved = 0;
            while !stop.load(Ordering::Relaxed) {
                let Some(r) = call("hanoi_init_simulator", json!({"n": 1})).await else { break };
                let Some(id) = r.structured_content.and_then(|s| s["env_id"].as_str().map(String::from)) else { break };
                if call("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 2]})).await.is_none() {
                    break;
                }
                solved += 1;
            }
            solved
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill9(server);
    stop.store(true, Ordering::Relaxed);
    let mut solved = 0;
    for p in players {
        solved += p.await.unwrap();
    }
    let before = records(&file);
    assert!(before.len() >= solved && solved > 10, "{} records for {solved} solved puzzles", before.len());
    assert!(before.iter().all(|r| r["outcome"] == "solved" && r["caller"] == "alice"), "{before:#?}");

    // The river crossing expires while the server is down.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let server = http_server(&args, work.path()).await;
    let c = http_client_with_token(&server, &token).await;
    for m in [[2, 0, 2], [1, 1, 2]] {
        c.ok("hanoi_execute_move", json!({"env_id": going_on, "move": m})).await;
    }
    let all = records(&file);
    let abandoned = of_session(&all, &left);
    assert_eq!(abandoned.len(), 1, "{all:#?}");
    assert!(abandoned[0]["outcome"] == "abandoned" && abandoned[0]["ended"].as_str().unwrap().contains("expired"), "{}", abandoned[0]);
    let finished = of_session(&all, &going_on);
    assert_eq!(finished.len(), 1, "{all:#?}");
    assert_eq!((&finished[0]["outcome"], &finished[0]["moves"], &finished[0]["tool_calls"]), (&json!("solved"), &json!(3), &json!(4)));
    let mut ids: Vec<&str> = all.iter().map(|r| r["record"].as_str().unwrap()).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "a record was written twice");
    drop(server);
}

/// Games kept nowhere (`--store memory`) end with the server: when its
/// client closes stdin, a game under way is recorded as abandoned.
#[test]
fn games_not_kept_are_recorded_when_the_server_stops() {
    use std::io::{BufRead, BufReader, Write};
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let mut server = std::process::Command::new(BIN)
        .args(["serve", "--store", "memory", "--games", "hanoi", "--records", file.to_str().unwrap()])
        .env("LUDUS_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut input, mut output) = (server.stdin.take().unwrap(), BufReader::new(server.stdout.take().unwrap()));
    let mut ask = |line: &str, answer: bool| -> Value {
        writeln!(input, "{line}").unwrap();
        let mut got = String::new();
        if answer {
            output.read_line(&mut got).unwrap();
        }
        serde_json::from_str(&got).unwrap_or(Value::Null)
    };
    ask(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        true,
    );
    ask(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, false);
    let started =
        ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#, true);
    let id = started["result"]["structuredContent"]["env_id"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"hanoi_execute_move","arguments":{{"env_id":"{id}","move":[1,0,2]}}}}}}"#
    );
    ask(&call, true);
    drop(input);
    assert!(server.wait().unwrap().success());
    let all = records(&file);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!((&all[0]["record"], &all[0]["outcome"], &all[0]["moves"]), (&json!(format!("{id}/1")), &json!("abandoned"), &json!(1)));
    assert_eq!(all[0]["ended"], "the server stopped");
}

#[test]
fn an_unwritable_records_path_is_refused_at_start() {
    let work = scratch();
    let dir = work.path().join("a-directory");
    std::fs::create_dir(&dir).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--no-builtin", "--records", dir.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("the records file {} cannot be written", dir.display())), "{stderr}");
}

/// Real records from two callers (puzzles of several sizes, a chess game
/// against the engine played to its end, a Showdown battle whose refused
/// action the illegal-move policy replaces with a random one, a Magic game
/// on phase), a file with a bad line, and a missing file: the table, the
/// named bad line, the HTML page in headless Chromium, and `ludus verify`
/// reproducing the whole mixed file, with its replay page.
#[tokio::test]
async fn the_report_summarises_real_records_and_its_page_loads_in_chromium() {
    let work = scratch();
    let package = common::showdown::showdown_package();
    let (tokens, lines): (Vec<String>, Vec<String>) = ["model-a", "model-b"].iter().map(|c| issue_token(c)).unzip();
    let file = work.path().join("records.jsonl");
    // In a battle a refused action has a random legal one played instead (the illegal-move policy).
    let policy = "[plugins.showdown]\nillegal_moves = { attempts = 1, then = \"random\" }\n";
    let sim = common::showdown::sim_endpoint(&package);
    let extra = format!("records = {:?}\n{}\n{policy}{sim}", file.display().to_string(), lines.join("\n"));
    let cfg = config(work.path(), &extra);
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client_with_token(&server, &tokens[0]).await, http_client_with_token(&server, &tokens[1]).await);

    // model-a solves Tower of Hanoi at N = 1, 2, 3; model-b only at N = 1.
    let solutions = [
        json!([[1, 0, 2]]),
        json!([[1, 0, 1], [2, 0, 2], [1, 1, 2]]),
        json!([[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]]),
    ];
    for (n, plan) in (1..=3).zip(&solutions) {
        for (c, good) in [(&a, true), (&b, n == 1)] {
            let env = c.ok("hanoi_init_simulator", json!({"n": n})).await["env_id"].clone();
            let moves = if good { plan.clone() } else { json!([[n, 0, 2]]) };
            c.ok("hanoi_execute_moves", json!({"env_id": env, "moves": moves})).await;
        }
    }
    // A chess game against the engine at level 1, played to its end with the first legal move.
    let game = a.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 9})).await["game_id"].clone();
    let mut final_fen = Value::Null;
    for _ in 0..400 {
        let s = a.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
        if s["status"] == "game-over" {
            final_fen = s["fen"].clone();
            break;
        }
        if s["status"] == "your-turn" {
            let mv = s["legal_moves"][0].as_str().unwrap().to_string();
            a.ok("chess_finish_turn", json!({"game_id": game, "move": mv})).await;
        }
    }
    assert!(final_fen.is_string(), "the chess game did not end in 400 turns");
    // A Showdown battle against the random bot, first available action each time.
    let battle = common::showdown::offline(&a, "random", 5).await;
    let instead = a.call("showdown_make_move", json!({"battle_id": battle, "action": "splash-of-nothing"})).await;
    let said = text(&instead);
    assert_ne!(instead.is_error, Some(true), "{said}");
    assert!(said.contains("played a random legal move for you: `showdown_make_move` {\"action\":"), "{said}");
    let mut finished = false;
    for _ in 0..600 {
        let s = a.ok("showdown_get_battle_state", json!({"battle_id": battle})).await;
        if s["status"] == "finished" {
            finished = true;
            break;
        }
        if let Some(action) = s["available_actions"].as_array().and_then(|v| v.first()).and_then(Value::as_str) {
            a.ok("showdown_make_move", json!({"battle_id": battle, "action": action})).await;
        }
    }
    assert!(finished, "the battle did not end in 600 turns");
    // A Magic game on phase, conceded at its first decision.
    let mut st = a.ok("cards_start_game", json!({"seed": 5})).await;
    let magic = st["game_id"].clone();
    while st["action_pending"] != true {
        st = a.ok("cards_wait_for_action", json!({"game_id": magic})).await;
    }
    a.ok("cards_choose_action", json!({"game_id": magic, "answer": false})).await;
    let conceded = a.ok("cards_concede", json!({"game_id": magic})).await;
    assert_eq!(conceded["game_over"], true, "{conceded}");
    let all = until_records(&file, 9).await;
    assert!(all.iter().any(|r| r["game"] == "chess" && r["parameters"]["level"] == 1), "{all:#?}");
    assert!(
        all.iter().any(|r| r["game"] == "showdown" && r["figures"]["optimality"].as_array().is_some_and(|o| !o.is_empty())),
        "{all:#?}"
    );
    let battle_record = all.iter().find(|r| r["game"] == "showdown").unwrap();
    assert_eq!(battle_record["illegal_move_policy"]["fired"], 1, "{battle_record}");
    drop(server);

    // The whole mixed file plays again as recorded: the puzzles, the chess
    // game against the engine (its moves on timers), the offline battle and
    // the Magic game (their processes' lines); the replay page steps
    // through them.
    let replays = work.path().join("replays.html");
    let (code, printed) = verify_to_page(&file, &cfg, &replays);
    assert_eq!(code, Some(0), "{printed}");
    for r in all.iter().filter(|r| r["game"] != "hanoi") {
        let line = verdict(&printed, r["record"].as_str().unwrap());
        assert!(line.starts_with("reproduced"), "{line}");
    }
    let chess_record = all.iter().find(|r| r["game"] == "chess").unwrap()["record"].as_str().unwrap().to_string();

    let bad = work.path().join("more.jsonl");
    std::fs::write(&bad, "{\"game\": \"hanoi\"\nnot json at all\n").unwrap();
    let page = work.path().join("report.html");
    let out = std::process::Command::new(BIN)
        .args(["report", file.to_str().unwrap(), bad.to_str().unwrap(), "--html", page.to_str().unwrap()])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("{}:1: not a result record", bad.display())), "{stderr}");
    assert!(stderr.contains(&format!("{}:2: not a result record", bad.display())), "{stderr}");
    // One row per game, parameters and caller: game, parameters, caller, games, abandoned, solved/won, over optimum, …
    let row = |params: &str, caller: &str| -> Vec<String> {
        let cells = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
        let found = stdout.lines().map(cells).find(|c| c.len() > 2 && c[0] == "hanoi" && c[1] == params && c[2] == caller);
        found.unwrap_or_else(|| panic!("no row {params} {caller}: {stdout}"))
    };
    for caller in ["model-a", "model-b"] {
        assert_eq!(row("n=1", caller)[3..7], ["1", "0", "100.0%", "+0.00"], "{stdout}");
    }
    assert_eq!(row("n=3", "model-a")[3..6], ["1", "0", "100.0%"], "{stdout}");
    assert_eq!(row("n=3", "model-b")[3..6], ["1", "0", "0.0%"], "{stdout}");
    assert!(stdout.contains("solved/won and the accuracy plots count the games not abandoned."), "{stdout}");
    assert!(stdout.contains(&format!("{} records, 2 bad lines skipped", all.len())), "{stdout}");
    // Ratings from the seats of real games: model-a against the chess engine, the Showdown bot and phase's AI.
    let section = |name: &str| -> Vec<Vec<String>> {
        let after = stdout.split(&format!("\n{name}\n")).nth(1).unwrap_or_else(|| panic!("no table {name}: {stdout}"));
        after.lines().skip(1).take_while(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().map(String::from).collect()).collect()
    };
    let chess: Vec<String> = section("chess").iter().map(|c| c[0].clone()).collect();
    assert_eq!(chess.len(), 2, "{stdout}");
    assert!(chess.contains(&"model-a".to_string()) && chess.contains(&"chess-engine/1".to_string()), "{stdout}");
    assert!(section("showdown").iter().any(|c| c[0] == "model-a" && c[1] == "1"), "{stdout}");
    assert!(section("cards").iter().any(|c| c[0] == "phase-ai/Medium" && c[1] == "1"), "{stdout}");
    assert!(section("all games").iter().any(|c| c[0] == "model-a" && c[1] == "3"), "one player across games: {stdout}");
    // Accuracy per size with Wilson intervals: model-b fails from n = 2 on, model-a never.
    let hanoi = section("hanoi");
    let line = |caller: &str, n: &str| {
        hanoi.iter().find(|c| c[0] == caller && c[1] == n).unwrap_or_else(|| panic!("{caller} {n}: {stdout}")).clone()
    };
    assert_eq!(line("model-b", "1")[2..], ["1/1", "100%", "21–100%"], "{stdout}");
    assert_eq!(line("model-b", "collapse")[2..], ["n=2"], "{stdout}");
    assert_eq!(line("model-a", "collapse")[2..], ["none"], "{stdout}");

    // A missing file is said and makes the exit status 1; the rest is still summarised.
    let out = std::process::Command::new(BIN).args(["report", file.to_str().unwrap(), "/nonexistent/r.jsonl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/r.jsonl: cannot be read"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("hanoi"));

    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(external), "the page loads {external}: it must stand alone");
    }
    let (_browser, mut tab) = chromium("about:blank", &work.path().join("chromium")).await;
    tab.watch_errors().await;
    tab.open(&format!("file://{}", page.display())).await;
    let figures = tab
        .eval(
            "[...document.querySelectorAll('figure')].map(f => ({id: f.id, series: JSON.parse(f.dataset.series), \
             texts: [...f.querySelectorAll('svg text')].map(t => t.textContent.trim()), \
             marks: f.querySelectorAll('svg polyline, svg path, svg circle, svg rect').length}))",
        )
        .await;
    let by_id = |id: &str| {
        figures.as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no figure {id}: {figures}")).clone()
    };
    let accuracy = by_id("accuracy-hanoi");
    assert_eq!(accuracy["series"], json!(["model-a", "model-b"]), "one line per caller: {accuracy}");
    for f in [&accuracy, &by_id("moves"), &by_id("levels-chess"), &by_id("optimality")] {
        let texts: Vec<&str> = f["texts"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for s in f["series"].as_array().unwrap() {
            assert!(texts.contains(&s.as_str().unwrap()), "the legend of {} names {s}: {texts:?}", f["id"]);
        }
        assert!(f["marks"].as_u64().unwrap() > 5, "{f}");
    }
    assert_eq!(by_id("moves")["series"], json!(["hanoi"]));
    let tables = tab.eval("[...document.querySelectorAll('table[data-ratings]')].map(t => t.dataset.ratings)").await;
    assert_eq!(tables, json!(["cards", "chess", "showdown", "all games"]), "a ratings table per game and one across them");
    let rows = tab.eval("document.querySelectorAll('table tr').length").await;
    assert!(rows.as_u64().unwrap() >= 6, "{rows}");
    tab.eval("1").await;
    assert!(tab.errors.is_empty(), "the page reported errors: {:?}", tab.errors);

    // The replay page: pick the chess game, step to its end, see the final position.
    let page = std::fs::read_to_string(&replays).unwrap();
    for external in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!page.contains(external), "the replay page loads {external}: it must stand alone");
    }
    tab.open(&format!("file://{}", replays.display())).await;
    let options = tab.eval("[...document.querySelectorAll('#pick option')].map(o => o.textContent)").await;
    assert_eq!(options.as_array().unwrap().len(), all.len(), "one game per record: {options}");
    let picked = tab
        .eval(&format!(
            "const p = document.getElementById('pick'); p.value = [...p.options].findIndex(o => o.textContent.startsWith({chess_record:?})); \
             p.dispatchEvent(new Event('change')); document.getElementById('next').click(); \
             const second = document.getElementById('where').textContent; document.getElementById('last').click(); \
             ({{second, where: document.getElementById('where').textContent, fen: document.querySelector('table.board')?.dataset.fen, \
               squares: document.querySelectorAll('table.board td').length}})"
        ))
        .await;
    assert!(picked["second"].as_str().unwrap().starts_with("step 2 of "), "{picked}");
    assert_eq!(picked["fen"], final_fen, "the last step shows the final position: {picked}");
    assert_eq!(picked["squares"], 64, "{picked}");
    tab.eval("1").await;
    assert!(tab.errors.is_empty(), "the replay page reported errors: {:?}", tab.errors);
}

/// `ludus report`'s ratings on records of players with known strengths:
/// the fit recovers their order and their Elo (centred, as no player is an
/// anchor), and agrees with choix (PyPI), a well-kept Bradley–Terry
/// implementation, fitting the same records (`tests/clients/ratings_reference.py`).
#[test]
fn the_reports_ratings_recover_known_strengths_and_agree_with_choix() {
    let work = scratch();
    let truth =
        [("agent-a", 1200.0), ("agent-b", 1350.0), ("agent-c", 1500.0), ("agent-d", 1650.0), ("agent-e", 1800.0), ("agent-f", 1950.0)];
    // A fixed linear congruential generator: the same records every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut unit = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut lines = String::new();
    for g in 0..3000 {
        let a = (unit() * 6.0) as usize % 6;
        let b = (a + 1 + (unit() * 5.0) as usize % 5) % 6;
        let p = 1.0 / (1.0 + 10f64.powf((truth[b].1 - truth[a].1) / 400.0));
        // Draws take a share from each side, so a's expected score stays p.
        let (u, half_draw) = (unit(), 0.15 * p.min(1.0 - p));
        let (ra, rb) = if u < p - half_draw {
            ("won", "lost")
        } else if u < p + half_draw {
            ("draw", "draw")
        } else {
            ("lost", "won")
        };
        let seats = json!([
            {"seat": "first", "kind": "agent", "player": truth[a].0, "result": ra},
            {"seat": "second", "kind": "agent", "player": truth[b].0, "result": rb},
        ]);
        let record = json!({"record": format!("s{g}/1"), "game": "duel", "caller": truth[a].0, "outcome": ra, "seats": seats});
        lines.push_str(&format!("{record}\n"));
    }
    let file = work.path().join("duels.jsonl");
    std::fs::write(&file, lines).unwrap();

    // Written here, not by a server: unsigned, so counted only when asked.
    let out = std::process::Command::new(BIN).args(["report", file.to_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("3000 unsigned"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(BIN).args(["report", file.to_str().unwrap(), "--include-unverified"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Ratings: Bradley–Terry on the Elo scale"), "{stdout}");
    // The table under the game's name: player, games, score, rating, low "to" high.
    let table: Vec<Vec<&str>> = stdout
        .split("\nduel\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no ratings table for duel: {stdout}"))
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(table.len(), 6, "{stdout}");
    let ours: std::collections::HashMap<&str, (f64, f64, f64)> =
        table.iter().map(|c| (c[0], (c[3].parse().unwrap(), c[4].parse().unwrap(), c[6].parse().unwrap()))).collect();
    let order: Vec<&str> = table.iter().map(|c| c[0]).collect();
    assert_eq!(order, ["agent-f", "agent-e", "agent-d", "agent-c", "agent-b", "agent-a"], "best first: {stdout}");
    let mean = truth.iter().map(|t| t.1).sum::<f64>() / 6.0;
    for (name, elo) in truth {
        let (rating, low, high) = ours[name];
        assert!((rating - (elo - mean + 1500.0)).abs() < 60.0, "{name}: {rating} against a true {elo} (centred): {stdout}");
        assert!(low < rating && rating < high && high - low < 200.0, "{name}: {low} to {high}: {stdout}");
    }

    let python = pip_install("ratings-venv", &["choix==0.4.1", "numpy==2.4.6", "scipy==1.17.1"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/ratings_reference.py");
    let reference = std::process::Command::new(python).arg(script).arg(&file).arg("duel").output().unwrap();
    assert!(reference.status.success(), "{}", String::from_utf8_lossy(&reference.stderr));
    let theirs: std::collections::HashMap<String, f64> = serde_json::from_slice(&reference.stdout).unwrap();
    for (name, elo) in &theirs {
        // The report prints whole Elo points.
        assert!((ours[name.as_str()].0 - elo).abs() <= 0.51, "{name}: ours {} choix {elo}", ours[name.as_str()].0);
    }
    assert_eq!(theirs.len(), 6);
}

/// The illegal-move policy, set for every game (one refused move loses)
/// and for chess alone (two in a row): a Hanoi player's illegal move fails
/// the puzzle; a chess player whose move is refused, then accepted, then
/// refused twice loses on the second. The answer says so, every later call
/// says the game is over, and each record says the policy, that it fired
/// and on whom, with the losing seat lost and the engine's won.
#[tokio::test]
async fn the_illegal_move_policy_makes_a_player_lose_and_is_recorded() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let extra = format!(
        "records = {:?}\nillegal_moves = {{ attempts = 1, then = \"lose\" }}\n[plugins.chess]\nillegal_moves = {{ attempts = 2, then = \"lose\" }}\n",
        file.display().to_string()
    );
    let cfg = config(work.path(), &extra);
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;

    let hanoi = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let refused = c.err("hanoi_execute_move", json!({"env_id": hanoi, "move": [2, 0, 2], "decision": 1})).await;
    assert!(refused.contains("1 refused moves in a row, then the game is lost") && refused.contains("stdio lost it"), "{refused}");
    let over = c.err("hanoi_get_state", json!({"env_id": hanoi})).await;
    assert!(over.contains("stdio lost the game under its illegal-move policy"), "{over}");

    let game = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 4})).await["game_id"].clone();
    let turn = || {
        let (c, game) = (&c, game.clone());
        async move {
            for _ in 0..50 {
                let s = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
                if s["status"] == "your-turn" {
                    return s;
                }
            }
            panic!("never my turn");
        }
    };
    let s = turn().await;
    let bad = "a1a8";
    assert!(!s["legal_moves"].as_array().unwrap().iter().any(|m| m == bad), "{s}");
    c.err("chess_finish_turn", json!({"game_id": game, "move": bad})).await;
    let good = s["legal_moves"][0].as_str().unwrap().to_string();
    c.ok("chess_finish_turn", json!({"game_id": game, "move": good})).await;
    turn().await;
    let first = c.err("chess_finish_turn", json!({"game_id": game, "move": bad})).await;
    assert!(!first.contains("illegal-move policy"), "one refusal since the last accepted move: {first}");
    let second = c.err("chess_finish_turn", json!({"game_id": game, "move": bad})).await;
    assert!(second.contains("2 refused moves in a row, then the game is lost") && second.contains("stdio lost it"), "{second}");
    let over = c.err("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert!(over.contains("stdio lost the game under its illegal-move policy"), "{over}");
    let listed = c.ok("ludus_sessions", json!({})).await;
    let mine = listed["sessions"].as_array().unwrap().iter().find(|s| s["id"] == game).unwrap().clone();
    assert_eq!(mine["game_over"], true, "{mine}");

    let all = until_records(&file, 2).await;
    let puzzle = all.iter().find(|r| r["game"] == "hanoi").unwrap();
    assert_eq!(puzzle["outcome"], "failed", "{puzzle}");
    assert_eq!(puzzle["illegal_move_policy"], json!({"attempts": 1, "then": "lose", "fired": 1, "lost": "stdio"}));
    let chess = all.iter().find(|r| r["game"] == "chess").unwrap();
    assert_eq!((&chess["outcome"], &chess["illegal_moves"]), (&json!("lost"), &json!(3)), "{chess}");
    assert_eq!(chess["illegal_move_policy"], json!({"attempts": 2, "then": "lose", "fired": 1, "lost": "stdio"}));
    let seats: Vec<(Value, Value)> =
        chess["seats"].as_array().unwrap().iter().map(|s| (s["player"].clone(), s["result"].clone())).collect();
    assert!(seats.contains(&(json!("stdio"), json!("lost"))) && seats.contains(&(json!("chess-engine/1"), json!("won"))), "{seats:?}");

    // Played again under the policy each record names (not the verifying
    // server's, which has none), both games are lost as recorded.
    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, ""));
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("2 records: 2 reproduced"), "{printed}");
}

/// The illegal-move policy `then = "random"` (two refused moves in a row):
/// the second refused Hanoi move and the second refused chess move are
/// answered with a legal move the host played for the player, drawn from
/// the game's seed, and that move's answer; a retry of the decision gets
/// that answer again and nothing more is played. Each record says the
/// policy fired once and has the host's move in its log; `ludus verify`
/// draws the same move, and names a record whose host move was edited.
#[tokio::test]
async fn the_random_policy_plays_a_legal_move_for_the_player_and_verify_draws_the_same() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let extra = format!("records = {:?}\nillegal_moves = {{ attempts = 2, then = \"random\" }}\n", file.display().to_string());
    let cfg = config(work.path(), &extra);
    // Games kept nowhere are recorded (abandoned) when the server stops.
    let c = stdio(&["--config", cfg.to_str().unwrap(), "--store", "memory"], work.path()).await;

    let hanoi = c.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
    let wrong = json!({"env_id": hanoi, "move": [3, 0, 2], "decision": 1});
    let first = c.err("hanoi_execute_move", wrong.clone()).await;
    assert!(first.contains("Illegal move") && !first.contains("illegal-move policy"), "{first}");
    let second = c.call("hanoi_execute_move", wrong.clone()).await;
    let said = text(&second);
    assert_ne!(second.is_error, Some(true), "{said}");
    assert!(said.contains("illegal-move policy (2 refused moves in a row, then a random legal move is played"), "{said}");
    let moved = second.structured_content.clone().unwrap();
    assert_eq!(moved["moves_made"], 1, "{moved}");
    assert!(moved["state"] == json!([[3, 2], [1], []]) || moved["state"] == json!([[3, 2], [], [1]]), "{moved}");
    let again = c.call("hanoi_execute_move", wrong).await;
    assert!(text(&again).contains("made already"), "{}", text(&again));
    assert_eq!(again.structured_content.unwrap()["state"], moved["state"]);

    let game = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 4})).await["game_id"].clone();
    let mut s = json!({});
    for _ in 0..50 {
        s = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
        if s["status"] == "your-turn" {
            break;
        }
    }
    let legal: Vec<String> = s["legal_moves"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string()).collect();
    let bad = json!({"game_id": game, "move": "a1a8", "decision": s["decision"]});
    c.err("chess_finish_turn", bad.clone()).await;
    let played = c.call("chess_finish_turn", bad).await;
    let said = text(&played);
    assert_ne!(played.is_error, Some(true), "{said}");
    let san = said.split("`chess_finish_turn` {\"move\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
    assert!(legal.iter().any(|m| m == san), "the host's move {san:?} is one of {legal:?}: {said}");
    c.close().await;

    let all = until_records(&file, 2).await;
    for r in &all {
        assert_eq!(r["illegal_move_policy"], json!({"attempts": 2, "then": "random", "fired": 1}), "{r}");
        let by_host: Vec<&Value> = r["actions"].as_array().unwrap().iter().filter(|a| a["policy"] == true).collect();
        assert_eq!(by_host.len(), 1, "{r}");
        assert_eq!(by_host[0]["by"], "stdio", "{r}");
    }
    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, ""));
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("2 records: 2 reproduced"), "{printed}");

    // The host's Hanoi move edited into the other legal one: not what the seed draws.
    let mut puzzle = all.iter().find(|r| r["game"] == "hanoi").unwrap().clone();
    let other = if moved["state"] == json!([[3, 2], [1], []]) { json!([1, 0, 2]) } else { json!([1, 0, 1]) };
    for a in puzzle["actions"].as_array_mut().unwrap() {
        if a["policy"] == true {
            a["args"]["move"] = other.clone();
        }
    }
    let edited = work.path().join("edited.jsonl");
    std::fs::write(&edited, format!("{puzzle}\n")).unwrap();
    let (code, printed) = verify(&[&edited], &config(&elsewhere, ""));
    assert_eq!(code, Some(1), "{printed}");
    assert!(printed.contains("DIFFERS") && printed.contains("the illegal-move policy played"), "{printed}");
}

/// A game that lists no legal moves (built before contract 0.1.7) cannot
/// have one played for a player: it is played under `nothing`, and the
/// server says so when it loads it; a bundled game is not named.
#[test]
fn a_game_that_lists_no_moves_keeps_the_policy_nothing_and_the_server_says_so() {
    let work = scratch();
    let plugins = plugins_dir(work.path(), &[]);
    install(&plugins, &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/prebuilt/hello-plugin-0.1.0.wasm"), "hello.wasm");
    let cfg = config(work.path(), "illegal_moves = { attempts = 2, then = \"random\" }\n");
    let out = std::process::Command::new(BIN)
        .args(["serve", "--config", cfg.to_str().unwrap(), "--plugins", plugins.to_str().unwrap(), "--games", "hello,hanoi"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("hello does not list legal moves") && stderr.contains("played under the illegal-move policy `nothing`"),
        "{stderr}"
    );
    assert!(!stderr.contains("hanoi does not list legal moves"), "{stderr}");
}

/// A policy that would make a player lose after no refusal at all is refused at start.
#[test]
fn an_illegal_move_policy_that_loses_at_zero_is_refused_at_start() {
    let work = scratch();
    let cfg = config(work.path(), "illegal_moves = { attempts = 0, then = \"lose\" }\n");
    let out = std::process::Command::new(BIN).args(["serve", "--config", cfg.to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("illegal_moves with then = \"lose\" needs attempts = 1 or more"), "{stderr}");
}

/// A run file sets up an evaluation: two token callers meet at chess in a
/// seeded two-game match (each white once, one deal), each plays the engine
/// in a match with colours swapped (levels 1 and 5), and both play the same
/// Hanoi instance. The agents only ask `ludus_next_game`, take the seat it
/// names and play. Every record carries its match, pair and game and both
/// seats; the report rates all four players with intervals (the engine's
/// level 5 at its anchor); `ludus verify` reproduces every game.
#[tokio::test]
async fn a_run_file_sets_up_matches_and_the_agents_only_join_and_play() {
    let work = scratch();
    let RunServer { server, clients, file, cfg } = run_server(
        work.path(),
        r#"
[[match]]
id = "a-vs-b"
game = "chess"
players = ["model-a", "model-b"]
games = 2
seed = 7
args = { type = "agent" }

[[match]]
id = "a-vs-engine-1"
game = "chess"
players = ["model-a"]
games = 2
seed = 11
args = { type = "computer", difficulty = 1 }
swap = { color = ["white", "black"] }

[[match]]
id = "b-vs-engine-5"
game = "chess"
players = ["model-b"]
games = 2
seed = 12
args = { type = "computer", difficulty = 5 }
swap = { color = ["white", "black"] }

[[match]]
id = "towers"
game = "hanoi"
players = ["model-a", "model-b"]
games = 1
seed = 3
args = { n = 2 }
"#,
        &["model-a", "model-b", "model-c"],
        "",
    )
    .await;
    let (a, c) = (&clients[0], &clients[2]);
    assert!(a.tools().await.iter().any(|t| t.name == "ludus_next_game"), "a server given a run lists ludus_next_game");
    let none = c.ok("ludus_next_game", json!({})).await;
    assert_eq!(none["status"], "none", "model-c is in no match: {none}");

    let (played_a, played_b) = tokio::join!(run_agent(&clients[0]), run_agent(&clients[1]));
    let matches =
        |p: &[Value]| p.iter().map(|g| format!("{} {}/{}", g["match"].as_str().unwrap(), g["pair"], g["number"])).collect::<Vec<_>>();
    assert_eq!(matches(&played_a), ["a-vs-b 1/1", "a-vs-b 1/2", "a-vs-engine-1 1/1", "a-vs-engine-1 1/2", "towers 1/1"]);
    assert_eq!(matches(&played_b), ["a-vs-b 1/1", "a-vs-b 1/2", "b-vs-engine-5 1/1", "b-vs-engine-5 1/2", "towers 1/1"]);
    let done = clients[0].ok("ludus_next_game", json!({})).await;
    assert_eq!((&done["status"], &done["left"]), (&json!("done"), &json!(0)), "{done}");

    let all = until_records(&file, 8).await;
    let of_match = |id: &str| -> Vec<&Value> { all.iter().filter(|r| r["match"]["id"] == id).collect() };
    let white = |r: &Value| r["seats"].as_array().unwrap().iter().find(|s| s["seat"] == "white").unwrap()["player"].clone();
    let mut meet = of_match("a-vs-b");
    meet.sort_by_key(|r| r["match"]["game"].as_u64());
    assert_eq!(meet.len(), 2, "{all:#?}");
    assert_eq!(
        (&meet[0]["match"], &meet[1]["match"]),
        (&json!({"id": "a-vs-b", "pair": 1, "game": 1}), &json!({"id": "a-vs-b", "pair": 1, "game": 2}))
    );
    assert_eq!((white(meet[0]), white(meet[1])), (json!("model-a"), json!("model-b")), "each is white once");
    assert_eq!((&meet[0]["seed"], &meet[0]["secret"]), (&meet[1]["seed"], &meet[1]["secret"]), "one deal for the pair");
    for r in &meet {
        let players: Vec<&Value> = r["seats"].as_array().unwrap().iter().map(|s| &s["player"]).collect();
        assert!(players.contains(&&json!("model-a")) && players.contains(&&json!("model-b")), "both seats recorded: {r}");
    }
    for (id, level, player) in [("a-vs-engine-1", "chess-engine/1", "model-a"), ("b-vs-engine-5", "chess-engine/5", "model-b")] {
        let mut games = of_match(id);
        games.sort_by_key(|r| r["match"]["game"].as_u64());
        assert_eq!(games.len(), 2, "{all:#?}");
        assert_eq!((white(games[0]), white(games[1])), (json!(player), json!(level)), "colours swapped: {games:#?}");
        assert_eq!(games[0]["seed"], games[1]["seed"]);
    }
    let towers = of_match("towers");
    assert_eq!(towers.len(), 2, "one instance, played by each: {all:#?}");
    assert_eq!(towers[0]["seed"], towers[1]["seed"]);
    assert!(towers.iter().all(|r| r["outcome"] == "solved"), "{towers:#?}");
    drop(server);

    let out = std::process::Command::new(BIN).args(["report", file.to_str().unwrap()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let chess = stdout.split("\nchess\n").nth(1).unwrap_or_else(|| panic!("no chess ratings: {stdout}"));
    let rows: Vec<&str> = chess.lines().skip(1).take_while(|l| !l.trim().is_empty()).collect();
    let row =
        |player: &str| *rows.iter().find(|r| r.split_whitespace().next() == Some(player)).unwrap_or_else(|| panic!("{player}: {stdout}"));
    for player in ["model-a", "model-b", "chess-engine/1"] {
        assert!(row(player).contains(" to "), "an interval for {player}: {stdout}");
    }
    let anchor: Vec<&str> = row("chess-engine/5").split_whitespace().collect();
    assert_eq!((anchor[1], anchor[4]), ("*", "1261"), "level 5 at its anchor: {stdout}");

    let (code, printed) = verify(&[&file], &cfg);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("8 records: 8 reproduced"), "{printed}");
}

/// A server over HTTP given the run file `spec` and keeping records (with
/// `extra` in its config), and a client per caller, each with its token.
struct RunServer {
    server: HttpServer,
    /// They live as long as the test: the agents' tasks borrow them.
    clients: &'static [Client],
    file: PathBuf,
    cfg: PathBuf,
}

async fn run_server(work: &Path, spec: &str, callers: &[&str], extra: &str) -> RunServer {
    let (tokens, lines): (Vec<String>, Vec<String>) = callers.iter().map(|c| issue_token(c)).unzip();
    let (file, run) = (work.join("records.jsonl"), work.join("run.toml"));
    std::fs::write(&run, spec).unwrap();
    let extra = format!("records = {:?}\nrun = {:?}\n{extra}\n{}", file.display().to_string(), run.display().to_string(), lines.join("\n"));
    let cfg = config(work, &extra);
    let server = http_server(&["--config", cfg.to_str().unwrap()], work).await;
    let mut clients = Vec::new();
    for token in &tokens {
        clients.push(http_client_with_token(&server, token).await);
    }
    RunServer { server, clients: Box::leak(clients.into_boxed_slice()), file, cfg }
}

/// An agent of a run: asks for its next game, takes the seat it names and
/// plays the first legal move (or the plan), waiting when told to, until
/// every game of its is over; the games it played.
async fn run_agent(c: &Client) -> Vec<Value> {
    let mut played = Vec::new();
    for _ in 0..2000 {
        let next = c.ok("ludus_next_game", json!({})).await;
        match next["status"].as_str() {
            Some("done") => return played,
            Some("wait") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            _ => assert_eq!(next["status"], "play", "{next}"),
        }
        let game = next["game"].clone();
        let id = game["game_id"].clone();
        if let Some(tool) = game["join_tool"].as_str() {
            c.ok(tool, json!({"game_id": id, "join_code": game["join_code"]})).await;
        }
        if game["plugin"] == "hanoi" {
            c.ok("hanoi_execute_moves", json!({"env_id": id, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2]]})).await;
        } else {
            for _ in 0..2000 {
                let s = c.ok("chess_wait_for_next_turn", json!({"game_id": id})).await;
                if s["status"] == "game-over" {
                    break;
                }
                if s["status"] == "your-turn" {
                    let mv = s["legal_moves"][0].as_str().unwrap().to_string();
                    c.call("chess_finish_turn", json!({"game_id": id, "move": mv, "decision": s["decision"]})).await;
                }
            }
        }
        played.push(game);
    }
    panic!("the run did not end: {played:?}");
}

/// Three agents in one match are a round robin: each pair meets, both
/// sides, on the same deals. The one that asks first, while the others'
/// games are due first, is told to wait rather than starting a game its
/// creator is too busy to play; every game is played by its own players,
/// none is abandoned, and every pair is whole.
#[tokio::test]
async fn a_round_robin_of_three_plays_every_pair_and_an_early_asker_waits() {
    let work = scratch();
    let spec = "[[match]]\nid = \"rr\"\ngame = \"chess\"\nplayers = [\"model-a\", \"model-b\", \"model-c\"]\ngames = 2\nseed = 7\nargs = { type = \"agent\" }\n";
    let RunServer { server: _server, clients, file, .. } = run_server(work.path(), spec, &["model-a", "model-b", "model-c"], "").await;
    // model-c asks first: model-a and model-b are due at their own game first.
    let early = clients[2].ok("ludus_next_game", json!({})).await;
    assert_eq!(early["status"], "wait", "{early}");
    assert!(early["next"].as_str().unwrap().contains("still playing an earlier game"), "{early}");
    let (pa, pb, pc) = tokio::join!(run_agent(&clients[0]), run_agent(&clients[1]), run_agent(&clients[2]));
    assert_eq!((pa.len(), pb.len(), pc.len()), (4, 4, 4), "each meets the two others twice");

    let all = until_records(&file, 6).await;
    assert_eq!(all.len(), 6, "{all:#?}");
    for pairing in ["rr/model-a-model-b", "rr/model-a-model-c", "rr/model-b-model-c"] {
        let games: Vec<&Value> = all.iter().filter(|r| r["match"]["id"] == pairing).collect();
        assert_eq!(games.len(), 2, "{pairing}: a whole pair: {all:#?}");
        let names: Vec<&str> = pairing.trim_start_matches("rr/").splitn(2, "-model").collect();
        for r in &games {
            assert_ne!(r["outcome"], "abandoned", "{r}");
            let players: Vec<&str> = r["seats"].as_array().unwrap().iter().filter_map(|s| s["player"].as_str()).collect();
            assert!(players.contains(&names[0]) && players.iter().any(|p| p.ends_with(names[1])), "{pairing}: {players:?}");
        }
        assert_eq!(games[0]["seed"], 7, "every pairing plays the same deal: {}", games[0]);
    }
    let secrets: std::collections::BTreeSet<String> = all.iter().map(|r| r["secret"].to_string()).collect();
    assert_eq!(secrets.len(), 1, "one deal for every pairing's pair: {secrets:?}");
}

/// A run's game that expires before anyone moved (its joiner never came)
/// is recorded abandoned and started again on the same deal when asked
/// next; played then, the pair is whole.
#[tokio::test]
async fn a_runs_game_that_expires_unplayed_is_played_again() {
    let work = scratch();
    let spec =
        "[[match]]\nid = \"m\"\ngame = \"chess\"\nplayers = [\"model-a\", \"model-b\"]\ngames = 2\nseed = 9\nargs = { type = \"agent\" }\n";
    let extra = "[plugins.chess]\nidle_timeout_ms = 1000";
    let RunServer { server: _server, clients, file, .. } = run_server(work.path(), spec, &["model-a", "model-b"], extra).await;
    let first = clients[0].ok("ludus_next_game", json!({})).await;
    let expired_id = first["game"]["game_id"].clone();
    // Nobody joins: the game expires, and is recorded abandoned.
    let abandoned = until_records(&file, 1).await;
    assert_eq!((&abandoned[0]["outcome"], &abandoned[0]["moves"]), (&json!("abandoned"), &json!(0)), "{}", abandoned[0]);
    let again = clients[0].ok("ludus_next_game", json!({})).await;
    assert_eq!((&again["status"], &again["game"]["number"]), (&json!("play"), &json!(1)), "the same game again: {again}");
    assert_ne!(again["game"]["game_id"], expired_id, "a fresh session");
    let (pa, pb) = tokio::join!(run_agent(&clients[0]), run_agent(&clients[1]));
    assert_eq!((pa.len(), pb.len()), (2, 2));
    let all = until_records(&file, 3).await;
    let played: Vec<&Value> = all.iter().filter(|r| r["outcome"] != "abandoned").collect();
    assert_eq!(played.len(), 2, "{all:#?}");
    assert_eq!(played[0]["secret"], played[1]["secret"], "the pair is whole, on one deal");
    assert_eq!(played[0]["secret"], abandoned[0]["secret"], "played again on the same deal");
}

/// A run file that does not fit the games loaded stops the server at start, saying where.
#[test]
fn a_run_file_that_does_not_fit_is_refused_at_start() {
    let work = scratch();
    for (text, said) in [
        ("[[match]]\ngame = \"chezz\"\nplayers = [\"a\"]\ngames = 1\nseed = 1\n", "match match-1: no game `chezz` is loaded"),
        (
            "[[match]]\nid = \"m\"\ngame = \"chess\"\nplayers = [\"a\", \"b\"]\ngames = 3\nseed = 1\nargs = { type = \"agent\" }\n",
            "match m: `games` is 3",
        ),
        (
            "[[match]]\ngame = \"hanoi\"\nplayers = [\"a\"]\ngames = 1\nseed = 1\nargs = { n = \"four\" }\n",
            "its arguments do not fit `hanoi_init_simulator`",
        ),
        ("[[match]]\ngame = \"showdown\"\nplayers = [\"a\"]\ngames = 1\nseed = 1\n", "say which tool starts its games with `create`"),
    ] {
        let run = work.path().join("run.toml");
        std::fs::write(&run, text).unwrap();
        let out = std::process::Command::new(BIN)
            .args(["serve", "--store", "memory", "--run", run.to_str().unwrap(), "--config", config(work.path(), "").to_str().unwrap()])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
}

/// A run goes on after a restart: a game it played is not played again
/// (its record is in the file), and a game under way is picked up from the
/// store where it was left.
#[tokio::test]
async fn a_run_goes_on_after_a_restart_where_it_was_left() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let run = work.path().join("run.toml");
    std::fs::write(&run, "[[match]]\nid = \"towers\"\ngame = \"hanoi\"\nplayers = [\"stdio\"]\ngames = 2\nseed = 5\nargs = { n = 2 }\n")
        .unwrap();
    let extra = format!("records = {:?}\nrun = {:?}\n", file.display().to_string(), run.display().to_string());
    let cfg = config(work.path(), &extra);

    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let first = c.ok("ludus_next_game", json!({})).await;
    assert_eq!((&first["game"]["number"], &first["left"]), (&json!(1), &json!(2)), "{first}");
    let plan = json!([[1, 0, 1], [2, 0, 2], [1, 1, 2]]);
    c.ok("hanoi_execute_moves", json!({"env_id": first["game"]["game_id"], "moves": plan})).await;
    let second = c.ok("ludus_next_game", json!({})).await;
    assert_eq!((&second["game"]["number"], &second["left"]), (&json!(2), &json!(1)), "{second}");
    let id = second["game"]["game_id"].clone();
    c.ok("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 1], "decision": 1})).await;
    c.close().await;

    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let again = c.ok("ludus_next_game", json!({})).await;
    assert_eq!((&again["game"]["game_id"], &again["game"]["number"], &again["left"]), (&id, &json!(2), &json!(1)), "{again}");
    assert_eq!(c.ok("hanoi_get_state", json!({"env_id": id})).await["moves_made"], 1);
    for (n, m) in [(2, [2, 0, 2]), (3, [1, 1, 2])] {
        c.ok("hanoi_execute_move", json!({"env_id": id, "move": m, "decision": n})).await;
    }
    let done = c.ok("ludus_next_game", json!({})).await;
    assert_eq!(done["status"], "done", "{done}");
    c.close().await;
    let all = records(&file);
    let games: Vec<&Value> = all.iter().map(|r| &r["match"]["game"]).collect();
    assert_eq!(games, [&json!(1), &json!(2)], "each game once: {all:#?}");
    assert!(all.iter().all(|r| r["outcome"] == "solved"), "{all:#?}");
}

/// Each move may carry its model's `usage` (tokens and cost, as the
/// client reports them): it is kept in the log with the move's time and
/// its player's think time, a bad one is refused, and `ludus report` sums
/// it per game and player. A game between two agents counts in each
/// agent's row, and the report states each game's illegal-move policy.
#[tokio::test]
async fn usage_and_think_times_are_kept_and_the_report_counts_every_agent() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let ((ta, la), (tb, lb)) = (issue_token("model-a"), issue_token("model-b"));
    let extra = format!("records = {:?}\nillegal_moves = {{ attempts = 3, then = \"lose\" }}\n{la}\n{lb}", file.display().to_string());
    let cfg = config(work.path(), &extra);
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client_with_token(&server, &ta).await, http_client_with_token(&server, &tb).await);
    let env = a.ok("hanoi_init_simulator", json!({"n": 1})).await["env_id"].clone();
    let bad = a.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2], "usage": {"input_tokens": -1}})).await;
    assert!(bad.contains("`usage` is an object"), "{bad}");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let usage = json!({"input_tokens": 1000, "output_tokens": 250, "cost": 0.01});
    a.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2], "decision": 1, "usage": usage})).await;

    let game = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &game).await;
    b.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    for (n, mv) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
        let (player, tokens) = if n % 2 == 0 { (&a, 100) } else { (&b, 700) };
        let usage = json!({"input_tokens": tokens, "output_tokens": 10, "cost": 0.5});
        player.ok("chess_finish_turn", json!({"game_id": game, "move": mv, "decision": n + 1, "usage": usage})).await;
    }
    let all = until_records(&file, 2).await;
    let hanoi = all.iter().find(|r| r["game"] == "hanoi").unwrap();
    let moved = hanoi["actions"].as_array().unwrap().iter().find(|a| a["call"] == "hanoi_execute_move" && a["refused"].is_null()).unwrap();
    assert_eq!(moved["usage"], usage, "{moved}");
    assert!(moved["think_ms"].as_u64().unwrap() >= 150, "think time since the game last changed: {moved}");
    assert!(moved["at_ms"].as_u64().unwrap() >= moved["think_ms"].as_u64().unwrap(), "{moved}");

    let out = std::process::Command::new(BIN).args(["report", file.to_str().unwrap()]).output().unwrap();
    let (text, warned) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{warned}");
    let row = |game: &str, player: &str| {
        text.lines()
            .find(|l| l.starts_with(game) && l.split_whitespace().nth(1) == Some(player))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
    };
    let usage_a = row("chess", "model-a").unwrap_or_else(|| panic!("{text}"));
    // games, moves, input, output, cost
    assert_eq!(&usage_a[2..7], ["1", "2", "200", "20", "1.0000"], "{text}");
    let usage_b = row("chess", "model-b").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(&usage_b[2..7], ["1", "2", "1400", "20", "1.0000"], "{text}");
    // The table: model-b's game as Black is a row of its own, won.
    let table_b = text.lines().find(|l| l.starts_with("chess") && l.contains(" model-b ") && l.contains('%'));
    assert!(table_b.is_some(), "the joiner's game is in the table: {text}");
    assert!(text.contains("rules, chess: illegal moves: 3 refused moves in a row, then the game is lost; clock: no clock"), "{text}");
}

//! Games that survive the server: the real `ludus` binary is killed with
//! SIGKILL in the middle of games and started again on the same session
//! store; every durable game goes on with the same id and state, its players
//! keep their seats (bearer tokens over HTTP, the one client over stdio), a
//! stranger is still refused, and what cannot go on says why. The offline
//! Showdown battle runs the real simulator from npm (as `tests/showdown.rs`),
//! the Magic game the real phase engine from PyPI (as `tests/cards.rs`).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A server on `store` admitting `callers`, each with a bearer token that
/// `ludus token` issued, with `extra` config.
struct Setup {
    work: PathBuf,
    cfg: PathBuf,
    store: PathBuf,
    tokens: Vec<String>,
}

impl Setup {
    fn new(work: &Path, callers: &[&str], extra: &str) -> Setup {
        let (tokens, lines): (Vec<String>, Vec<String>) = callers.iter().map(|c| issue_token(c)).unzip();
        // The extra first: its top-level keys must come before the token tables.
        let cfg = config(work, &format!("{extra}\n{}", lines.join("\n")));
        Setup { work: work.to_path_buf(), cfg, store: work.join("games.db"), tokens }
    }

    /// An MCP client over HTTP of `server`, as caller number `caller`.
    async fn client(&self, server: &HttpServer, caller: usize) -> Client {
        http_client_with_token(server, &self.tokens[caller]).await
    }

    async fn serve(&self, more: &[&str]) -> HttpServer {
        let mut args = vec!["--config", self.cfg.to_str().unwrap(), "--store", self.store.to_str().unwrap()];
        args.extend_from_slice(more);
        http_server(&args, &self.work).await
    }
}

/// What two runs that must play the same game need: an evaluator's server
/// where the chosen seed is the whole seed (no secret mixed in per game).
const WHOLE_SEEDS: &str = "whole_seeds = true";

/// Plays an offline battle (seed 20261125, the random bot) with a fixed
/// policy for `decisions` decisions, killing the server after decision
/// `kill_after` when given; the battle's log then.
async fn offline_battle(work: &Path, decisions: usize, kill_after: Option<usize>) -> String {
    let package = common::showdown::showdown_package();
    let setup = Setup::new(work, &["alice"], &format!("{WHOLE_SEEDS}\n{}", common::showdown::sim_endpoint(&package)));
    let mut server = setup.serve(&[]).await;
    let mut c = setup.client(&server, 0).await;
    let id = common::showdown::offline(&c, "random", 20261125).await;
    let mut killed = false;
    for step in 0..decisions {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            break;
        }
        let actions = s["available_actions"].as_array().unwrap().clone();
        let action = actions[step % actions.len()].as_str().unwrap().to_string();
        let decision = s["decision"].clone();
        let r = c.ok("showdown_make_move", json!({"battle_id": id, "action": action, "decision": decision})).await;
        assert_eq!(r["action"], action, "{r}");
        if kill_after == Some(step) {
            killed = true;
            kill9(server);
            server = setup.serve(&[]).await;
            c = setup.client(&server, 0).await;
            // The same move sent again for its number after the restart is the one made, not a new one.
            // (Answered from the host's memory, or by the battle itself when the
            // replay has not yet reached the next request: made once either way,
            // which the logs compared below show.)
            let again = c.call("showdown_make_move", json!({"battle_id": id, "action": action, "decision": decision})).await;
            assert_ne!(again.is_error, Some(true), "{}", text(&again));
            let again = again.structured_content.unwrap();
            assert_eq!((again["action"].as_str(), &again["decision"]), (Some(action.as_str()), &decision), "{again}");
        }
    }
    assert_eq!(killed, kill_after.is_some(), "the battle ended before the kill was due");
    let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
    assert_eq!(s["status"], "active", "the battle goes on: {s}");
    let (log, _) = c.read_resource(&format!("showdown://battle/{id}/log")).await.unwrap();
    drop(server);
    log
}

#[tokio::test]
async fn an_offline_battle_killed_mid_battle_plays_on_as_it_would_have() {
    let (straight, crashed) = (scratch(), scratch());
    let without = offline_battle(straight.path(), 8, None).await;
    let with = offline_battle(crashed.path(), 8, Some(4)).await;
    assert!(without.matches("|turn|").count() >= 5, "{without}");
    assert_eq!(with, without, "the same seed and choices give the same battle across a kill");
}

/// The answer a fixed policy gives to a Magic decision (`k`: how many it answered before).
fn magic_answer(choices: &Value, k: usize) -> Value {
    let action = choices["action_type"].as_str().unwrap_or("");
    let n = choices["choices"].as_array().map_or(0, Vec::len);
    match choices["response_type"].as_str().unwrap_or("") {
        "boolean" => json!({"answer": false}),
        "amount" => json!({"amount": choices["max"]}),
        // Declares no attackers and no blockers.
        _ if action == "DeclareAttackers" || action == "DeclareBlockers" => json!({"answer": false}),
        _ if n > 0 => json!({"index": (k * 7) % n}),
        _ => json!({"answer": false}),
    }
}

/// Plays `decisions` decisions of a Magic game against phase-ai (seed 21)
/// with a fixed policy, killing the server after the first decision made at
/// step `kill_after` or later when given (a step may have no decision due);
/// the game's log then.
async fn magic_game(work: &Path, decisions: usize, kill_after: Option<usize>) -> String {
    let setup = Setup::new(work, &["alice"], WHOLE_SEEDS);
    let mut server = setup.serve(&[]).await;
    let mut c = setup.client(&server, 0).await;
    let st = c.ok("cards_start_game", json!({"seed": 21})).await;
    let id = st["game_id"].as_str().unwrap().to_string();
    let mut killed = false;
    for k in 0..decisions {
        let st = c.ok("cards_pass_priority", json!({"game_id": id})).await;
        if st["game_over"] == true {
            break;
        }
        let choices = c.ok("cards_get_action_choices", json!({"game_id": id})).await;
        if choices["action_pending"] != true {
            continue;
        }
        let mut call = json!({"game_id": id, "decision": choices["decision"]});
        call.as_object_mut().unwrap().extend(magic_answer(&choices, k).as_object().unwrap().clone());
        let made = c.ok("cards_choose_action", call.clone()).await;
        if !killed && kill_after.is_some_and(|n| k >= n) {
            killed = true;
            kill9(server);
            server = setup.serve(&[]).await;
            c = setup.client(&server, 0).await;
            // The last decision sent again after the restart: its answer, not a second decision.
            let again = c.call("cards_choose_action", call).await;
            assert_ne!(again.is_error, Some(true), "{}", text(&again));
            assert!(text(&again).contains("made already"), "{}", text(&again));
            assert_eq!(again.structured_content.unwrap()["decision"], made["decision"]);
        }
    }
    // Else the run with a kill would compare a game never cut with one never cut.
    assert_eq!(killed, kill_after.is_some(), "the game ended (or no decision came) before the kill was due");
    let log = c.ok("cards_get_game_log", json!({"game_id": id})).await;
    drop(server);
    log["log"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_magic_game_on_phase_killed_mid_game_plays_on_as_it_would_have() {
    let (straight, crashed) = (scratch(), scratch());
    let without = magic_game(straight.path(), 30, None).await;
    let with = magic_game(crashed.path(), 30, Some(12)).await;
    assert!(without.len() > 500, "{without}");
    assert_eq!(with, without, "the same seed and decisions give the same game across a kill");
}

/// One agent of an online battle: the first legal action whenever one is
/// due, until turn `until` begins or the battle ends; the last state it saw.
/// Both agents stop at the same turn: counted in decisions, one that had a
/// forced switch stopped a turn early, and the other's last move waited out
/// its 25 s for an opponent that had stopped.
async fn first_actions(c: &Client, id: &str, until: u64) -> Value {
    for _ in 0..2000 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] != "active" || s["turn"].as_u64().is_some_and(|t| t >= until) {
            return s;
        }
        let Some(action) = s["available_actions"].as_array().and_then(|a| a.first()).and_then(Value::as_str) else { continue };
        c.ok("showdown_make_move", json!({"battle_id": id, "action": action})).await;
    }
    panic!("battle {id} did not end");
}

#[tokio::test]
async fn a_battle_on_a_showdown_server_is_rejoined_after_a_kill_and_played_to_its_end() {
    let package = common::showdown::showdown_package();
    let showdown = common::showdown::local_server(&package, "");
    let work = scratch();
    let endpoint = format!("[plugins.showdown.channels.server]\nwebsocket = \"ws://127.0.0.1:{}/showdown/websocket\"\n", showdown.port);
    let setup = Setup::new(work.path(), &["alice", "bob"], &endpoint);
    let server = setup.serve(&[]).await;
    let (a, b) = (setup.client(&server, 0).await, setup.client(&server, 1).await);
    let tag = std::process::id() % 100_000;
    let (an, bn) = (format!("Ann{tag}"), format!("Ben{tag}"));
    let (ra, rb) = tokio::join!(
        a.ok("showdown_challenge_user", json!({"opponent": bn, "username": an})),
        b.ok("showdown_challenge_user", json!({"opponent": an, "username": bn}))
    );
    let (ia, ib) = (ra["battle_id"].as_str().unwrap().to_string(), rb["battle_id"].as_str().unwrap().to_string());
    // A few turns; then Ann chooses her move for the turn, and the server
    // dies while her call waits for Ben's.
    tokio::join!(first_actions(&a, &ia, 3), first_actions(&b, &ib, 3));
    let before = b.ok("showdown_get_battle_state", json!({"battle_id": ib})).await;
    assert_eq!(before["status"], "active", "{before}");
    let ann = a.ok("showdown_get_battle_state", json!({"battle_id": ia})).await;
    let action = ann["available_actions"][0].as_str().unwrap().to_string();
    tokio::select! {
        r = a.call("showdown_make_move", json!({"battle_id": ia, "action": action})) => panic!("the turn ended without Ben: {}", text(&r)),
        () = tokio::time::sleep(Duration::from_millis(800)) => {}
    }
    kill9(server);

    // Each logs in again and rejoins the room; the battle goes on where it was, to its end.
    let server = setup.serve(&[]).await;
    let (a, b) = (setup.client(&server, 0).await, setup.client(&server, 1).await);
    // The server has Ann's choice and sends her request again on the rejoin:
    // she is not asked for it again. (Without that, her answer to it was
    // refused as "too late" once Ben had moved: in 1 of 3 runs, below.)
    let due = a.ok("showdown_get_available_actions", json!({"battle_id": ia})).await;
    assert_eq!(due["actions"], json!([]), "{due}");
    let after = b.ok("showdown_get_battle_state", json!({"battle_id": ib})).await;
    assert_eq!(after["status"], "active", "{after}");
    assert_eq!(after["turn"], before["turn"], "the battle goes on from the same turn: {after}");
    // The server's log and request rebuild the team; only a fainted
    // Pokémon's maximum HP (known from requests before it fainted) is not in them.
    let team = |state: &Value| {
        let mut team = state["your_team"].clone();
        for mon in team.as_array_mut().unwrap().iter_mut().filter(|m| m["fainted"] == true) {
            mon.as_object_mut().unwrap().remove("max_hp");
        }
        team
    };
    assert_eq!(team(&after), team(&before), "{after}");
    let (ea, eb) = tokio::join!(first_actions(&a, &ia, u64::MAX), first_actions(&b, &ib, u64::MAX));
    assert_eq!((ea["status"].as_str(), eb["status"].as_str()), (Some("finished"), Some("finished")), "{ea}\n{eb}");
    assert_eq!(ea["winner"], eb["winner"]);
    drop(showdown);
}

fn session_ids(sessions: &Value) -> Vec<String> {
    sessions["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn puzzles_survive_a_kill_with_their_state_and_their_owner() {
    let work = scratch();
    let setup = Setup::new(work.path(), &["alice", "bob"], "");
    let server = setup.serve(&[]).await;
    let a = setup.client(&server, 0).await;

    let games = a.ok("ludus_games", json!({})).await;
    let durable = |name: &str| games["games"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap()["durable"].clone();
    for game in ["hanoi", "river_crossing", "chess", "showdown", "cards"] {
        assert_eq!(durable(game), true, "{game} should be durable: {games}");
    }

    let hanoi = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].as_str().unwrap().to_string();
    for mv in [[1, 0, 2], [2, 0, 1], [1, 2, 1]] {
        a.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": mv})).await;
    }
    let hanoi_before = a.ok("hanoi_get_state", json!({"env_id": hanoi})).await;
    let river = a.ok("river_crossing_init_simulator", json!({"n": 2, "k": 2})).await["env_id"].as_str().unwrap().to_string();
    a.ok("river_crossing_execute_move", json!({"env_id": river, "move": ["A_1", "a_1"]})).await;
    let river_before = a.ok("river_crossing_get_state", json!({"env_id": river})).await;
    kill9(server);

    let server = setup.serve(&[]).await;
    let a = setup.client(&server, 0).await;
    let mut listed = session_ids(&a.ok("ludus_sessions", json!({})).await);
    listed.sort();
    let mut expected = vec![hanoi.clone(), river.clone()];
    expected.sort();
    assert_eq!(listed, expected, "alice's games are listed after the restart");

    let b = setup.client(&server, 1).await;
    let e = b.err("hanoi_get_state", json!({"env_id": hanoi})).await;
    assert!(e.contains("not one of your game sessions"), "a stranger is still refused: {e}");
    assert!(session_ids(&b.ok("ludus_sessions", json!({})).await).is_empty());

    assert_eq!(a.ok("hanoi_get_state", json!({"env_id": hanoi})).await, hanoi_before);
    assert_eq!(a.ok("river_crossing_get_state", json!({"env_id": river})).await, river_before);
    let mut last = Value::Null;
    for mv in [[3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]] {
        last = a.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": mv})).await;
    }
    assert_eq!(last["goal_reached"], true, "{last}");
    assert_eq!(last["moves_made"], 7, "the moves before the kill count: {last}");
}

/// The moves of a chess game (from its PGN resource, without the headers).
async fn movetext(c: &Client, id: &str) -> String {
    let (pgn, _) = c.read_resource(&format!("chess://game/{id}/pgn")).await.unwrap();
    pgn.lines().filter(|l| !l.starts_with('[') && !l.trim().is_empty()).collect::<Vec<_>>().join(" ")
}

/// Plays `agent_moves` of our moves against the engine (each the legal
/// move at a fixed place in the list), killing the server after our move
/// number `kill_after` (while the engine's reply is pending) when given.
async fn chess_against_the_engine(work: &Path, agent_moves: usize, kill_after: Option<usize>) -> String {
    let setup = Setup::new(work, &["alice"], WHOLE_SEEDS);
    let mut server = setup.serve(&[]).await;
    let mut c = setup.client(&server, 0).await;
    let board = c.ok("chess_create_game", json!({"type": "computer", "color": "white", "difficulty": 2, "seed": 99})).await;
    let id = board["game_id"].as_str().unwrap().to_string();
    let mut board = board;
    for n in 0..agent_moves {
        while board["status"] != "your-turn" {
            assert_ne!(board["status"], "game-over", "{board}");
            board = c.ok("chess_wait_for_next_turn", json!({"game_id": id})).await;
        }
        let legal = board["legal_moves"].as_array().unwrap();
        let mv = legal[(n * 7) % legal.len()].as_str().unwrap().to_string();
        board = c.ok("chess_finish_turn", json!({"game_id": id, "move": mv})).await;
        if kill_after == Some(n) {
            kill9(server);
            server = setup.serve(&[]).await;
            c = setup.client(&server, 0).await;
            board = c.ok("chess_wait_for_next_turn", json!({"game_id": id})).await;
        }
    }
    while board["status"] == "opponent-turn" {
        board = c.ok("chess_wait_for_next_turn", json!({"game_id": id})).await;
    }
    movetext(&c, &id).await
}

#[tokio::test]
async fn a_chess_game_killed_while_the_engine_thinks_plays_on_as_it_would_have() {
    let (straight, crashed) = (scratch(), scratch());
    let without = chess_against_the_engine(straight.path(), 8, None).await;
    let with = chess_against_the_engine(crashed.path(), 8, Some(3)).await;
    assert!(without.split_whitespace().count() >= 16, "{without}");
    assert_eq!(with, without, "the same seed and moves give the same game across a kill");
}

#[tokio::test]
async fn agents_keep_their_seats_and_a_wait_cut_by_a_kill_works_when_sent_again() {
    let work = scratch();
    let setup = Setup::new(work.path(), &["alice", "bob"], "");
    let server = setup.serve(&[]).await;
    let a = setup.client(&server, 0).await;
    let b = setup.client(&server, 1).await;
    let id = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &id).await;
    b.ok("chess_join_game", json!({"game_id": id, "join_code": code})).await;
    a.ok("chess_finish_turn", json!({"game_id": id, "move": "e2e4"})).await;
    b.ok("chess_finish_turn", json!({"game_id": id, "move": "e7e5"})).await;
    // Bob waits for White's move while the server dies under his call.
    let waited = json!({"game_id": id});
    let waiting = tokio::spawn(async move { b.try_call("chess_wait_for_next_turn", waited).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill9(server);
    // The cut call ends in an error (or not at all, for a client that waits
    // on): either way the agent sends it again.
    let _ = tokio::time::timeout(Duration::from_secs(10), waiting).await;

    let server = setup.serve(&[]).await;
    let (a, b) = (setup.client(&server, 0).await, setup.client(&server, 1).await);
    let id2 = id.clone();
    let retried = tokio::spawn(async move { b.ok("chess_wait_for_next_turn", json!({"game_id": id2})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.ok("chess_finish_turn", json!({"game_id": id, "move": "g1f3"})).await;
    let board = tokio::time::timeout(Duration::from_secs(30), retried).await.expect("the retried wait is answered").unwrap();
    assert_eq!(board["status"], "your-turn", "{board}");
    assert_eq!(board["last_move"], "Nf3", "{board}");
    assert_eq!(board["your_color"], "black", "bob still plays black: {board}");
}

#[tokio::test]
async fn over_stdio_the_same_client_continues_its_games_after_a_restart() {
    let work = scratch();
    let store = work.path().join("games.db");
    let args = ["--store", store.to_str().unwrap()];
    let c = stdio(&args, work.path()).await;
    let id = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    c.ok("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 1]})).await;
    c.close().await;
    let c = stdio(&args, work.path()).await;
    let sessions = c.ok("ludus_sessions", json!({})).await;
    assert_eq!(session_ids(&sessions), vec![id.clone()], "{sessions}");
    assert_eq!(sessions["you"]["caller"], "stdio", "{sessions}");
    let state = c.ok("hanoi_execute_move", json!({"env_id": id, "move": [2, 0, 2]})).await;
    assert_eq!(state["moves_made"], 2, "{state}");
    c.close().await;
}

/// Live sessions of `game` in memory now (`ludus_games`).
async fn in_memory(c: &Client, game: &str) -> u64 {
    let games = c.ok("ludus_games", json!({})).await;
    games["games"].as_array().unwrap().iter().find(|g| g["name"] == game).unwrap()["live_sessions"].as_u64().unwrap()
}

/// Waits until neither Hanoi nor chess has a game in memory.
async fn until_out_of_memory(c: &Client) {
    for _ in 0..100 {
        if in_memory(c, "hanoi").await == 0 && in_memory(c, "chess").await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the idle games stayed in memory");
}

/// Games idle past `limits.unload_idle_after_ms` leave memory, and the next
/// call on one rebuilds it as it was: with games kept only in the server's
/// memory and with the session store, a Hanoi puzzle and a chess game whose
/// engine has replied leave (`ludus_games` counts none in memory), stay
/// listed, and then answer as if they had stayed: two reads at once of the
/// puzzle see one game, its next decision is taken, the chess position and
/// the next move are the ones due. A server that keeps games in memory only
/// records the games out of memory when it stops.
#[tokio::test]
async fn idle_games_leave_memory_and_come_back_as_they_were() {
    for kept in ["memory", "games.db"] {
        let work = scratch();
        let records = work.path().join("records.jsonl");
        let extra = format!("records = {:?}\n[limits]\nunload_idle_after_ms = 300\n", records.display().to_string());
        let cfg = config(work.path(), &extra);
        let store = if kept == "memory" { kept.to_string() } else { work.path().join(kept).display().to_string() };
        let c = stdio(&["--config", cfg.to_str().unwrap(), "--store", &store], work.path()).await;

        let hanoi = c.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
        c.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": [1, 0, 2], "decision": 1})).await;
        let chess = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 9})).await["game_id"].clone();
        c.ok("chess_finish_turn", json!({"game_id": chess, "move": "e4", "decision": 1})).await;
        let mut before = json!({});
        for _ in 0..50 {
            before = c.ok("chess_wait_for_next_turn", json!({"game_id": chess})).await;
            if before["status"] == "your-turn" {
                break;
            }
        }
        assert_eq!(before["status"], "your-turn", "{kept}: {before}");

        until_out_of_memory(&c).await;
        let listed = c.ok("ludus_sessions", json!({})).await;
        assert_eq!(session_ids(&listed).len(), 2, "{kept}: games out of memory are still listed: {listed}");

        let state = json!({"env_id": hanoi});
        let (a, b) = tokio::join!(c.call("hanoi_get_state", state.clone()), c.call("hanoi_get_state", state));
        for read in [a, b] {
            let read = read.structured_content.unwrap_or_else(|| panic!("{kept}: a read of a game out of memory failed"));
            assert_eq!((&read["state"], &read["decision"]), (&json!([[3, 2], [], [1]]), &json!(2)), "{kept}: {read}");
        }
        assert_eq!(in_memory(&c, "hanoi").await, 1, "{kept}: rebuilt once");
        let moved = c.ok("hanoi_execute_move", json!({"env_id": hanoi, "move": [2, 0, 1], "decision": 2})).await;
        assert_eq!(moved["state"], json!([[3], [2], [1]]), "{kept}: {moved}");

        let after = c.ok("chess_wait_for_next_turn", json!({"game_id": chess})).await;
        assert_eq!(
            (&after["status"], &after["fen"], &after["decision"]),
            (&before["status"], &before["fen"], &before["decision"]),
            "{kept}"
        );
        let mv = after["legal_moves"][0].clone();
        c.ok("chess_finish_turn", json!({"game_id": chess, "move": mv, "decision": after["decision"]})).await;

        until_out_of_memory(&c).await;
        c.close().await;
        if kept == "memory" {
            let mut text = String::new();
            for _ in 0..100 {
                text = std::fs::read_to_string(&records).unwrap_or_default();
                if text.lines().count() >= 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let outcomes: Vec<Value> = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["outcome"].clone()).collect();
            assert_eq!(outcomes, [json!("abandoned"), json!("abandoned")], "{text}");
        }
    }
}

/// A kill -9 while games are out of memory loses none: each one read back
/// after the restart is as it was when it left, and plays on. The store
/// finds them for their players (the server keeps nothing of them): a game
/// Bob joined is listed for him and for Alice, before the kill and after.
#[tokio::test]
async fn games_out_of_memory_survive_a_kill() {
    let work = scratch();
    let setup = Setup::new(work.path(), &["alice", "bob"], "[limits]\nunload_idle_after_ms = 300\n");
    let server = setup.serve(&[]).await;
    let a = setup.client(&server, 0).await;
    let b = setup.client(&server, 1).await;
    let mut games = Vec::new();
    for _ in 0..3 {
        let id = a.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
        a.ok("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 2], "decision": 1})).await;
        games.push(id);
    }
    let shared = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &shared).await;
    b.ok("chess_join_game", json!({"game_id": shared, "join_code": code})).await;
    until_out_of_memory(&a).await;
    assert_eq!(session_ids(&b.ok("ludus_sessions", json!({})).await), [shared.as_str()], "the joiner's game, out of memory");
    kill9(server);

    let server = setup.serve(&[]).await;
    let a = setup.client(&server, 0).await;
    let b = setup.client(&server, 1).await;
    assert_eq!(session_ids(&b.ok("ludus_sessions", json!({})).await), [shared.as_str()]);
    assert_eq!(session_ids(&a.ok("ludus_sessions", json!({})).await).len(), 4);
    b.ok("chess_wait_for_next_turn", json!({"game_id": shared})).await;
    for id in games {
        let state = a.ok("hanoi_get_state", json!({"env_id": id})).await;
        assert_eq!((&state["state"], &state["decision"]), (&json!([[3, 2], [], [1]]), &json!(2)), "{state}");
        a.ok("hanoi_execute_move", json!({"env_id": id, "move": [2, 0, 1], "decision": 2})).await;
    }
}

#[tokio::test]
async fn idle_expiry_counts_across_a_restart_and_a_gone_version_ends_its_games_with_a_reason() {
    let work = scratch();
    // Expiry: a puzzle idle past its timeout while the server was down is gone.
    let setup = Setup::new(work.path(), &["alice"], "[plugins.hanoi]\nidle_timeout_ms = 1500");
    let server = setup.serve(&[]).await;
    let c = setup.client(&server, 0).await;
    let id = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    kill9(server);
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let server = setup.serve(&[]).await;
    let c = setup.client(&server, 0).await;
    let e = c.err("hanoi_get_state", json!({"env_id": id})).await;
    assert!(e.contains("expired"), "{e}");
    drop(server);

    // A game runs on the build it started on: when that build is gone, it ends and says why.
    let work = scratch();
    let setup = Setup::new(work.path(), &["alice"], "");
    let plugins = plugins_dir(work.path(), &["hanoi"]);
    let dir = plugins.to_str().unwrap();
    let server = setup.serve(&["--no-builtin", "--plugins", dir]).await;
    let c = setup.client(&server, 0).await;
    let id = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].as_str().unwrap().to_string();
    kill9(server);
    // Another build of hanoi: the same component with one more custom section.
    let mut bytes = std::fs::read(plugins.join("hanoi.wasm")).unwrap();
    bytes.extend_from_slice(&[0x00, 0x03, 0x01, b'x', b'y']);
    std::fs::write(plugins.join("hanoi.wasm"), bytes).unwrap();
    let server = setup.serve(&["--no-builtin", "--plugins", dir]).await;
    let c = setup.client(&server, 0).await;
    let e = c.err("hanoi_get_state", json!({"env_id": id})).await;
    assert!(e.contains("no longer available") && e.contains("which this server no longer has"), "{e}");
    // The new build plays new games.
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
}

#[test]
fn a_store_that_is_damaged_or_from_a_newer_ludus_stops_the_start_and_is_left_alone() {
    let work = scratch();
    let run = |store: &Path| {
        let out = std::process::Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--no-builtin", "--store", store.to_str().unwrap()])
            .env("LUDUS_LOG", "error")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let junk = work.path().join("junk.db");
    std::fs::write(&junk, b"these are not the sessions you are looking for".repeat(100)).unwrap();
    let before = std::fs::read(&junk).unwrap();
    let err = run(&junk);
    assert!(err.contains(junk.to_str().unwrap()) && err.contains("not a Ludus session store"), "{err}");
    assert_eq!(std::fs::read(&junk).unwrap(), before, "nothing was overwritten");

    let newer = work.path().join("newer.db");
    rusqlite::Connection::open(&newer).unwrap().pragma_update(None, "user_version", 99).unwrap();
    let before = std::fs::read(&newer).unwrap();
    let err = run(&newer);
    assert!(err.contains(newer.to_str().unwrap()) && err.contains("newer Ludus"), "{err}");
    assert_eq!(std::fs::read(&newer).unwrap(), before, "nothing was overwritten");
}

#[tokio::test]
async fn a_move_sent_again_is_answered_once_made_even_across_a_kill() {
    let work = scratch();
    let setup = Setup::new(work.path(), &["alice"], "");
    let server = setup.serve(&[]).await;
    let c = std::sync::Arc::new(setup.client(&server, 0).await);

    // Two calls for one decision at once (a client that sent its call twice): one move is made.
    let id = c.ok("hanoi_init_simulator", json!({"n": 4})).await["env_id"].as_str().unwrap().to_string();
    let call = json!({"env_id": id, "move": [1, 0, 2], "decision": 1});
    let (first, second) = tokio::join!(c.call("hanoi_execute_move", call.clone()), c.call("hanoi_execute_move", call.clone()));
    for r in [&first, &second] {
        assert_ne!(r.is_error, Some(true), "{}", text(r));
        assert_eq!(r.structured_content.as_ref().unwrap()["moves_made"], 1, "{}", text(r));
    }
    assert!(text(&first).contains("made already") != text(&second).contains("made already"), "one of the two is the repeat");
    assert_eq!(c.ok("hanoi_get_state", json!({"env_id": id})).await["moves_made"], 1);
    // More moves in between: decision 1 resent still gets its answer, and
    // nothing is made; one older than the player's last 8 is refused.
    let moves = [[2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2], [1, 2, 1], [1, 1, 0]];
    for (n, mv) in (2..).zip(moves) {
        c.ok("hanoi_execute_move", json!({"env_id": id, "move": mv, "decision": n})).await;
        if n == 3 {
            let again = c.call("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 2], "decision": 1})).await;
            assert!(text(&again).contains("made already"), "{}", text(&again));
            assert_eq!(again.structured_content.unwrap()["moves_made"], 1, "decision 1's own answer");
        }
    }
    let e = c.err("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 2], "decision": 1})).await;
    assert!(e.contains("decision 1 was made already; the decision due now is 10"), "{e}");
    let older = c.call("hanoi_execute_move", json!({"env_id": id, "move": [3, 0, 2], "decision": 4})).await;
    let said = text(&older);
    assert_eq!(older.structured_content.unwrap()["moves_made"], 4, "decision 4 is among the last 8: {said}");

    // A chess move whose answer was lost with the server: sent again after the restart, it is not played twice.
    let game = c.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].as_str().unwrap().to_string();
    let code = join_code(&c, &game).await;
    c.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    let made = c.ok("chess_finish_turn", json!({"game_id": game, "move": "e2e4", "decision": 1})).await;
    kill9(server);
    let server = setup.serve(&[]).await;
    let c = setup.client(&server, 0).await;
    let again = c.call("chess_finish_turn", json!({"game_id": game, "move": "e2e4", "decision": 1})).await;
    assert_ne!(again.is_error, Some(true), "{}", text(&again));
    assert!(text(&again).contains("made already"), "{}", text(&again));
    assert_eq!(again.structured_content.unwrap()["fen"], made["fen"]);
    let movetext = movetext(&c, &game).await;
    assert_eq!(movetext.matches("e4").count(), 1, "one move was played: {movetext}");
    // An older Hanoi move (not the last) resent after the kill: its answer.
    let older = c.call("hanoi_execute_move", json!({"env_id": id, "move": [2, 1, 2], "decision": 7})).await;
    assert!(text(&older).contains("made already"), "{}", text(&older));
    assert_eq!(older.structured_content.unwrap()["moves_made"], 7);
    assert_eq!(c.ok("hanoi_get_state", json!({"env_id": id})).await["moves_made"], 9);
    // The game goes on: black (this caller took both seats) answers.
    let board = c.ok("chess_finish_turn", json!({"game_id": game, "move": "e7e5", "decision": 2})).await;
    assert_eq!(board["last_move"], "e5", "{board}");
}

/// Two agents on one offline battle (gen9ou, each its own team) with a fixed
/// policy for `turns` rounds, killing the server after round `kill_after`
/// when given; the battle's log then.
async fn agents_offline_battle(work: &Path, turns: usize, kill_after: Option<usize>) -> String {
    const P1: &str = "Great Tusk||leftovers|protosynthesis|headlongrush,icespinner,knockoff,rapidspin|Jolly|252,4,,,,252|||||,,,,,Steel]\
                      Gholdengo||choicescarf|goodasgold|makeitrain,shadowball,trick,focusblast|Timid|,,,252,4,252||,0,,,,|||,,,,,Steel";
    const P2: &str = "Kingambit||blackglasses|supremeoverlord|swordsdance,kowtowcleave,suckerpunch,ironhead|Adamant|252,252,,,4,|||||,,,,,Dark]\
                      Corviknight||leftovers|pressure|bravebird,roost,uturn,defog|Impish|252,,168,,88,|||||,,,,,Dragon";
    let package = common::showdown::showdown_package();
    let setup = Setup::new(work, &["alice", "bob"], &format!("{WHOLE_SEEDS}\n{}", common::showdown::sim_endpoint(&package)));
    let mut server = setup.serve(&[]).await;
    let (mut a, mut b) = (setup.client(&server, 0).await, setup.client(&server, 1).await);
    let args = json!({"bot": "agent", "format": "gen9ou", "seed": 5, "team": P1});
    let id = a.ok("showdown_start_offline_battle", args).await["battle_id"].as_str().unwrap().to_string();
    let code = join_code(&a, &id).await;
    b.ok("showdown_join_battle", json!({"battle_id": id, "join_code": code, "team": P2})).await;
    // A side's move this round, if one is due when the round starts (read
    // before either moves, so both rounds of a run see the same): the
    // round-th legal action.
    async fn due(c: &Client, id: &str, round: usize) -> Option<Value> {
        let a = c.ok("showdown_get_available_actions", json!({"battle_id": id})).await;
        let legal = a["actions"].as_array().unwrap();
        let action = legal.get(round % legal.len().max(1))?["action"].clone();
        Some(json!({"battle_id": id, "action": action, "decision": a["decision"]}))
    }
    async fn make(c: &Client, args: Option<Value>) {
        if let Some(args) = args {
            c.ok("showdown_make_move", args).await;
        }
    }
    for round in 0..turns {
        let (ma, mb) = (due(&a, &id, round).await, due(&b, &id, round).await);
        tokio::join!(make(&a, ma), make(&b, mb));
        if kill_after == Some(round) {
            kill9(server);
            server = setup.serve(&[]).await;
            (a, b) = (setup.client(&server, 0).await, setup.client(&server, 1).await);
            let s = b.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
            assert_eq!(s["your_team"][0]["species"], "Kingambit", "bob is still p2 after the restart: {s}");
        }
    }
    let (log, _) = a.read_resource(&format!("showdown://battle/{id}/log")).await.unwrap();
    drop(server);
    log
}

#[tokio::test]
async fn two_agents_offline_battle_killed_mid_battle_plays_on_as_it_would_have() {
    let (straight, crashed) = (scratch(), scratch());
    let without = agents_offline_battle(straight.path(), 6, None).await;
    let with = agents_offline_battle(crashed.path(), 6, Some(2)).await;
    assert!(without.matches("|turn|").count() >= 4, "{without}");
    assert_eq!(with, without, "the same seed, teams and choices give the same battle across a kill");
}

/// Plays connect four on OpenSpiel against `random` (seed 42) for `moves`
/// moves with a fixed policy, killing the server after move `kill_after`
/// when given; the game's actions at the end.
async fn connect_four(work: &Path, moves: usize, kill_after: Option<usize>) -> Vec<Value> {
    let setup = Setup::new(work, &["alice"], WHOLE_SEEDS);
    let mut server = setup.serve(&[]).await;
    let mut c = setup.client(&server, 0).await;
    let mut turn = c.ok("openspiel_start_game", json!({"game": "connect_four", "seed": 42})).await;
    let id = turn["game_id"].as_str().unwrap().to_string();
    let mut killed = false;
    for step in 0..moves {
        if turn["game_over"] == true {
            break;
        }
        let legal = turn["legal_actions"].as_array().unwrap().clone();
        let action = legal[step % legal.len()]["text"].as_str().unwrap().to_string();
        let decision = turn["decision"].clone();
        turn = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": decision})).await;
        if kill_after == Some(step) {
            killed = true;
            kill9(server);
            server = setup.serve(&[]).await;
            c = setup.client(&server, 0).await;
            // The move sent again for its number after the restart is the one made, not a new one.
            let again = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": decision})).await;
            assert_eq!(again["history_actions"], turn["history_actions"], "{again}");
        }
    }
    assert_eq!(killed, kill_after.is_some(), "the game ended before the kill was due");
    let end = c.ok("openspiel_get_state", json!({"game_id": id})).await;
    drop(server);
    end["history_actions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_openspiel_game_killed_mid_game_plays_on_as_it_would_have() {
    let (straight, crashed) = (scratch(), scratch());
    let without = connect_four(straight.path(), 8, None).await;
    let with = connect_four(crashed.path(), 8, Some(3)).await;
    assert!(without.len() >= 6, "{without:?}");
    assert_eq!(with, without, "the same seed and moves give the same game across a kill");
}

/// A Showdown battle against the random bot and an OpenSpiel game against
/// its engine (both engines processes), each killed with the server mid-game
/// and rebuilt from the store by the next server, then played to the end:
/// their records verify, the log naming where each was rebuilt.
#[tokio::test]
async fn games_rebuilt_after_a_kill_verify() {
    let work = scratch();
    let file = work.path().join("records.jsonl");
    let package = common::showdown::showdown_package();
    let endpoint = common::showdown::sim_endpoint(&package);
    let setup = Setup::new(work.path(), &["alice"], &format!("records = {:?}\n{endpoint}", file.display().to_string()));
    let mut server = setup.serve(&[]).await;
    let mut c = setup.client(&server, 0).await;
    let battle = common::showdown::offline(&c, "random", 7).await;
    let mut turn = c.ok("openspiel_start_game", json!({"game": "connect_four", "seed": 42})).await;
    let game = turn["game_id"].as_str().unwrap().to_string();
    let (mut battle_over, mut game_over) = (false, false);
    for step in 0..400 {
        if step == 3 {
            kill9(server);
            server = setup.serve(&[]).await;
            c = setup.client(&server, 0).await;
            turn = c.ok("openspiel_get_state", json!({"game_id": game})).await;
        }
        if !game_over {
            game_over = turn["game_over"] == true;
            if let Some(first) = turn["legal_actions"].as_array().and_then(|l| l.first()).filter(|_| !game_over) {
                let action = first["text"].as_str().unwrap().to_string();
                turn = c.ok("openspiel_move", json!({"game_id": game, "action": action, "decision": turn["decision"]})).await;
            } else if !game_over {
                turn = c.ok("openspiel_wait_for_turn", json!({"game_id": game})).await;
            }
        }
        if !battle_over {
            let s = c.ok("showdown_get_battle_state", json!({"battle_id": battle})).await;
            battle_over = s["status"] == "finished";
            if let Some(action) = s["available_actions"].as_array().and_then(|a| a.first()).filter(|_| !battle_over) {
                c.call("showdown_make_move", json!({"battle_id": battle, "action": action, "decision": s["decision"]})).await;
            }
        }
        if battle_over && game_over {
            break;
        }
    }
    assert!(battle_over && game_over, "both games ended");
    drop(server);
    let text = std::fs::read_to_string(&file).unwrap();
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2, "{text}");
    for r in &records {
        assert!(r["actions"].as_array().unwrap().iter().any(|a| a["rebuilt"] == true), "{} names its rebuild: {r}", r["game"]);
    }
    let elsewhere = work.path().join("verify");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, printed) = verify(&[&file], &config(&elsewhere, &endpoint));
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("2 records: 2 reproduced"), "{printed}");
}

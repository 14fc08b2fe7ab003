//! Chess end to end: against the computer, agent against agent over HTTP,
//! claims, illegal and out-of-turn moves, and the long-poll timeout.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// A tiny deterministic generator for the agent's "random" moves.
struct Lcg(u64);

impl Lcg {
    fn pick<'a>(&mut self, items: &'a [Value]) -> &'a Value {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        &items[(self.0 >> 33) as usize % items.len()]
    }
}

#[tokio::test]
async fn a_full_game_against_the_computer_ends_with_every_move_legal() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools: std::collections::HashMap<String, rmcp::model::Tool> =
        c.tools().await.into_iter().map(|t| (t.name.to_string(), t)).collect();
    let r = c.call("chess_create_game", json!({"type": "computer", "color": "white", "difficulty": 6, "seed": 3})).await;
    assert_matches_output_schema(&tools["chess_create_game"], &r);
    let mut board = r.structured_content.unwrap();
    assert_eq!(board["status"], "your-turn");
    let game = board["game_id"].clone();
    let mut rng = Lcg(11);
    let mut plies = 0;
    while board["status"] != "game-over" {
        assert!(plies < 600, "the game never ended");
        if board["status"] == "your-turn" {
            let legal = board["legal_moves"].as_array().unwrap().clone();
            let mv = rng.pick(&legal).as_str().unwrap().to_string();
            let r = c.call("chess_finish_turn", json!({"game_id": game, "move": mv})).await;
            assert_ne!(r.is_error, Some(true), "{mv}: {}", text(&r));
            assert_matches_output_schema(&tools["chess_finish_turn"], &r);
            board = r.structured_content.unwrap();
        } else {
            let r = c.call("chess_wait_for_next_turn", json!({"game_id": game})).await;
            assert_matches_output_schema(&tools["chess_wait_for_next_turn"], &r);
            board = r.structured_content.unwrap();
        }
        plies += 1;
    }
    let pgn = board["pgn"].as_str().unwrap();
    assert!(pgn.contains("[Black \"Ludus engine level 6\"]"), "{pgn}");
    assert!(["1-0", "0-1", "1/2-1/2"].contains(&board["result"].as_str().unwrap()));
    assert!(pgn.trim_end().ends_with(board["result"].as_str().unwrap()));
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "e2e4"})).await;
    assert!(e.contains("the game is over"), "{e}");
    c.close().await;
}

/// An agent game the creator plays both sides of: it takes the open seat
/// with the join code, like anyone else (self-play).
async fn self_play(c: &Client) -> Value {
    let game = c.ok("chess_create_game", json!({"type": "agent"})).await["game_id"].clone();
    let code = join_code(c, game.as_str().unwrap()).await;
    let joined = c.call("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    assert!(text(&joined).contains("you play both sides"), "{}", text(&joined));
    game
}

#[tokio::test]
async fn scholars_mate_claim_accepted_and_a_false_claim_rejected() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let game = self_play(&c).await;
    for mv in ["e4", "e5", "Bc4", "Nc6"] {
        c.ok("chess_finish_turn", json!({"game_id": game, "move": mv})).await;
    }
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "Qh5", "claim_win": true})).await;
    assert!(e.contains("Claim rejected: Qh5 does not checkmate"), "{e}");
    let b = c.ok("chess_finish_turn", json!({"game_id": game, "move": "d1h5"})).await;
    assert_eq!(b["last_move"], "Qh5", "the rejected claim played nothing; the same move is fine without it");
    c.ok("chess_finish_turn", json!({"game_id": game, "move": "Nf6"})).await;
    let r = c.call("chess_finish_turn", json!({"game_id": game, "move": "Qxf7#", "claim_win": true})).await;
    let b = r.structured_content.clone().unwrap();
    assert_eq!((b["result"].clone(), b["status"].clone()), (json!("1-0"), json!("game-over")));
    assert!(text(&r).contains("claim accepted"), "{}", text(&r));
    assert!(b["pgn"].as_str().unwrap().contains("1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0"));

    // The PGN and FEN are also resources of the game.
    let templates = c.service.list_all_resource_templates().await.unwrap();
    assert!(templates.iter().any(|t| t.uri_template == "chess://game/{session}/pgn"), "{templates:?}");
    let id = game.as_str().unwrap();
    let (pgn, mime) = c.read_resource(&format!("chess://game/{id}/pgn")).await.unwrap();
    assert!(pgn.contains("4. Qxf7# 1-0"), "{pgn}");
    assert_eq!(mime, "application/x-chess-pgn");
    let (fen, _) = c.read_resource(&format!("chess://game/{id}/fen")).await.unwrap();
    assert_eq!(fen, "r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4");
    let err = c.read_resource("chess://game/nope/pgn").await.unwrap_err().to_string();
    assert!(err.contains("unknown `session` \"nope\""), "{err}");
    c.close().await;
}

/// A client subscribed to a game's FEN hears `notifications/resources/updated`
/// on every move (its own and the computer's), until it unsubscribes; a
/// resource that does not exist cannot be subscribed to.
#[tokio::test]
#[allow(deprecated)]
async fn subscribers_hear_of_every_move_until_they_unsubscribe() {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    let work = scratch();
    let mut c = stdio(&[], work.path()).await;
    let caps = c.service.peer_info().unwrap().capabilities.resources.clone().unwrap();
    assert_eq!(caps.subscribe, Some(true), "subscriptions are advertised");
    let game =
        c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": 5})).await["game_id"].as_str().unwrap().to_string();
    let fen = format!("chess://game/{game}/fen");
    c.service.subscribe(SubscribeRequestParams::new(fen.clone())).await.unwrap();
    c.ok("chess_finish_turn", json!({"game_id": game, "move": "e2e4"})).await;
    let heard = tokio::time::timeout(Duration::from_secs(5), c.updated.recv()).await.expect("no update after our move").unwrap();
    assert_eq!(heard, fen);
    // The computer's reply is a change too.
    let board = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(board["status"], "your-turn", "{board}");
    let mut updates = 1;
    while let Ok(Some(uri)) = tokio::time::timeout(Duration::from_millis(300), c.updated.recv()).await {
        assert_eq!(uri, fen);
        updates += 1;
    }
    assert!(updates >= 2, "the computer's move was not told: {updates} update(s)");

    c.service.unsubscribe(UnsubscribeRequestParams::new(fen.clone())).await.unwrap();
    c.ok("chess_finish_turn", json!({"game_id": game, "move": "d2d4"})).await;
    let after = tokio::time::timeout(Duration::from_millis(500), c.updated.recv()).await;
    assert!(after.is_err(), "an update came after unsubscribing: {after:?}");

    let e = c.service.subscribe(SubscribeRequestParams::new("chess://game/nope/fen")).await.unwrap_err().to_string();
    assert!(e.contains("unknown `session` \"nope\""), "{e}");
    let e = c.service.subscribe(SubscribeRequestParams::new("chess://nowhere")).await.unwrap_err().to_string();
    assert!(e.contains("no resource chess://nowhere"), "{e}");
    c.close().await;
}

/// `completion/complete` offers the caller's own games for a resource
/// template's `{session}`, narrowed by what is typed. Prompts are offered
/// (plugins bring them), and none of the bundled games has any yet.
#[tokio::test]
async fn resource_templates_complete_the_callers_games() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference, ResourceTemplateReference};
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let caps = c.service.peer_info().unwrap().capabilities.clone();
    assert!(caps.completions.is_some() && caps.prompts.as_ref().is_some_and(|p| p.list_changed == Some(true)), "{caps:?}");
    let mut games = Vec::new();
    for _ in 0..2 {
        games.push(c.ok("chess_create_game", json!({"type": "agent"})).await["game_id"].as_str().unwrap().to_string());
    }
    games.sort();
    let complete = |typed: &str| {
        let template = Reference::Resource(ResourceTemplateReference::new("chess://game/{session}/fen"));
        c.service.complete(CompleteRequestParams::new(template, ArgumentInfo::new("session", typed)))
    };
    assert_eq!(complete("").await.unwrap().completion.values, games);
    let one = complete(&games[1][..games[1].len() - 1]).await.unwrap().completion;
    assert_eq!((one.values, one.total), (vec![games[1].clone()], Some(1)));
    let e = c
        .service
        .complete(CompleteRequestParams::new(
            Reference::Resource(ResourceTemplateReference::new("chess://x/{session}")),
            ArgumentInfo::new("session", ""),
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no resource template chess://x/{session}"), "{e}");
    let prompts = c.service.list_prompts(None).await.unwrap().prompts;
    assert!(!prompts.iter().any(|p| p.name.starts_with("chess_")), "chess offers no prompts: {prompts:?}");
    c.close().await;
}

#[tokio::test]
async fn illegal_and_out_of_turn_moves_are_refused_with_reasons() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let game = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1})).await["game_id"].clone();
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "e2e5"})).await;
    assert!(e.contains("the pawn on e2 cannot move to e5") && e.contains("Legal moves: a2a3, a2a4"), "{e}");
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "Nf5"})).await;
    assert!(e.contains("not a legal move") && e.contains("Legal moves: Na3, Nc3, Nf3, Nh3, a3"), "SAN in, SAN out: {e}");
    let b = c.ok("chess_finish_turn", json!({"game_id": game, "move": "e4", "decision": 1})).await;
    assert_eq!(b["status"], "opponent-turn");
    assert_eq!((b["decision"].clone(), b["legal_moves_for"].clone()), (json!(2), json!("black")), "after our move: Black's moves, {b}");
    // Once the computer has moved, decision 2 (its move) is past: refused.
    let b = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!((b["status"].clone(), b["decision"].clone()), (json!("your-turn"), json!(3)), "the computer moved: {b}");
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "d2d4", "decision": 2})).await;
    assert!(e.contains("decision 2 was made already; the decision due now is 3"), "{e}");
    // While the computer is to move, a move is refused as out of turn.
    let e = out_of_turn_against_the_computer(&c).await;
    assert!(e.contains("it is the computer's move; call `chess_wait_for_next_turn`"), "{e}");
    // Against the computer no seat is open: no join code is handed out.
    let sessions = c.ok("ludus_sessions", json!({})).await;
    let mine = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == game).unwrap().clone();
    assert!(mine.get("join_code").is_none(), "{mine}");
    assert_eq!(mine["seats"][1], json!({"seat": "black", "kind": "builtin", "player": "chess-engine/1"}), "{mine}");
    let e = c.err("chess_create_game", json!({"type": "computer", "difficulty": 11})).await;
    assert!(e.contains("expected an integer from 1 to 10, got 11"), "{e}");
    let e = c.err("chess_create_game", json!({"type": "robot"})).await;
    assert!(e.contains("argument `type`: expected one of computer, agent"), "{e}");
    let e = c.err("chess_join_game", json!({"game_id": game})).await;
    assert!(e.contains("needs its `join_code`"), "{e}");
    c.close().await;
}

/// The refusal of a move sent while the computer is to move. The computer
/// moves in a timer event 20 ms after ours, so ours and the next are sent
/// together (answered in order): the next finds the computer still to move.
/// Should the timer win on a loaded machine (the next then finds decision 2
/// made already), a new game tries again; every try must be refused.
async fn out_of_turn_against_the_computer(c: &Client) -> String {
    let mut missed = Vec::new();
    for _ in 0..20 {
        let game = c.ok("chess_create_game", json!({"type": "computer", "difficulty": 1})).await["game_id"].clone();
        let (ours, next) = tokio::join!(
            c.call("chess_finish_turn", json!({"game_id": game, "move": "e4", "decision": 1})),
            c.call("chess_finish_turn", json!({"game_id": game, "move": "d2d4", "decision": 2})),
        );
        assert_ne!(ours.is_error, Some(true), "{}", text(&ours));
        assert_eq!(next.is_error, Some(true), "a move out of turn was played: {}", text(&next));
        let e = text(&next);
        if e.contains("computer's move") {
            return e;
        }
        // The computer moved first (or ours came second): a stale or early decision.
        assert!(e.contains("decision 2 was made already") || e.contains("decision 2 is not due yet"), "{e}");
        missed.push(e);
    }
    panic!("the computer was never still to move when a move came right behind ours: {missed:?}");
}

/// Where the operator lets callers fix whole seeds (an evaluator's own
/// server), the same seed gives the same engine moves.
#[tokio::test]
async fn the_computer_moves_first_for_black_and_a_fixed_whole_seed_repeats_its_moves() {
    let work = scratch();
    let cfg = config(work.path(), "whole_seeds = true");
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let mut firsts = Vec::new();
    for _ in 0..2 {
        let b = c.ok("chess_create_game", json!({"type": "computer", "color": "black", "difficulty": 3, "seed": 99})).await;
        assert_eq!(b["status"], "opponent-turn");
        let b = c.ok("chess_wait_for_next_turn", json!({"game_id": b["game_id"]})).await;
        assert_eq!(b["status"], "your-turn");
        assert_eq!(b["your_color"], "black");
        firsts.push(b["last_move"].clone());
    }
    assert_eq!(firsts[0], firsts[1]);
    c.close().await;
}

#[tokio::test]
async fn two_agents_over_http_wait_for_each_other() {
    let work = scratch();
    let cfg = config(work.path(), "[plugins.chess]\nmax_wait_ms = 3000\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client(&server).await, http_client(&server).await);
    let game = a.ok("chess_create_game", json!({"type": "agent", "color": "white"})).await["game_id"].clone();
    let code = join_code(&a, game.as_str().unwrap()).await;
    let joined = b.ok("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    assert_eq!(joined["your_color"], "black");
    assert_eq!(joined["status"], "opponent-turn");
    let e = b.err("chess_finish_turn", json!({"game_id": game, "move": "e5"})).await;
    assert!(e.contains("White's move (the other agent)"), "{e}");
    let e = b.err("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    assert!(e.contains("no seat of `game_id`") && e.contains("is open: white: client-"), "{e}");

    // B waits; A's move wakes it.
    let waiter = {
        let game = game.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            let r = b.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
            (r, t.elapsed(), b)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.ok("chess_finish_turn", json!({"game_id": game, "move": "e2e4"})).await;
    let (r, took, b) = waiter.await.unwrap();
    assert_eq!((r["status"].clone(), r["last_move"].clone()), (json!("your-turn"), json!("e4")));
    assert!(took < Duration::from_millis(2500), "{took:?}");

    // A waits for B, who does not move: the seed's timeout message, not an error.
    let t = Instant::now();
    let r = a.call("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_ne!(r.is_error, Some(true));
    assert!(text(&r).contains("Call this tool again"), "{}", text(&r));
    assert!(t.elapsed() >= Duration::from_millis(2900), "{:?}", t.elapsed());
    b.ok("chess_finish_turn", json!({"game_id": game, "move": "c7c5"})).await;
    let r = a.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(r["last_move"], "c5");
    let third = http_client(&server).await;
    let e = third.err("chess_join_game", json!({"game_id": game, "join_code": code})).await;
    assert!(e.contains("is open: white:"), "{e}");
}

/// The official MCP Python SDK (from PyPI), for a client that is not ours.
const PYTHON_MCP: &str = "mcp==1.30.0";

#[tokio::test]
async fn a_human_plays_the_agent_through_the_python_sdks_elicitation_callback() {
    let python = tokio::task::spawn_blocking(|| pip_install("python-mcp", &[PYTHON_MCP])).await.unwrap();
    let work = scratch();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/human_chess.py");
    let data = work.path().join("data");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(common::BIN)
        .args(["serve", "--games", "chess", "--store", "memory"])
        .env("XDG_DATA_HOME", data)
        .env("LUDUS_LOG", "warn")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["image_types"], json!(["image/png"]), "{report}");
    assert_eq!(
        report["headlines"],
        json!([
            "White played e4. The human (Black) played e5.",
            "White played Nf3. The human (Black) played Nc6.",
            "White played Bb5. The human did not choose a move. Call `chess_wait_for_next_turn` to ask them again.",
            "The human (Black) played a6."
        ]),
        "{report}"
    );
    assert_eq!(report["fen"], "r1bqkbnr/1ppp1ppp/p1n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 0 4", "{report}");
    assert_eq!(report["status"], "your-turn");
    assert_eq!((report["forms"].as_u64(), report["first_form_offers_e5"].as_bool()), (Some(4), Some(true)), "{report}");
    assert!(report["first_form_says"].as_str().unwrap().contains("you play Black, to move. Last move: e4"), "{report}");
}

#[tokio::test]
async fn a_human_game_needs_a_client_that_can_ask_and_the_board_comes_as_a_png() {
    let work = scratch();
    // The rmcp test client declares no elicitation: the human cannot be asked, and the agent is told so.
    let c = stdio(&["--games", "chess", "--store", "memory"], work.path()).await;
    let r = c.call("chess_create_game", json!({"type": "human", "color": "black", "image": true})).await;
    let said = text(&r);
    assert!(
        said.contains("The human could not be asked for their move") && said.contains("did not declare the `elicitation` capability"),
        "{said}"
    );
    let image = r.content.iter().find_map(|b| b.as_image()).expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.decode(&image.data).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(r.structured_content.as_ref().unwrap().get("content").is_none(), "the image is content, not data");
    // Without `image`, no image block.
    let plain = c.call("chess_create_game", json!({"type": "computer"})).await;
    assert!(plain.content.iter().all(|b| b.as_image().is_none()));
    c.close().await;
}

/// A seat nobody took is played by nobody: the creator may not move for
/// it, and its status and waits say the game waits for the joiner. The
/// creator takes it with the join code to play both sides, and the record
/// then says both seats are one player.
#[tokio::test]
async fn an_open_seat_is_played_by_nobody_until_it_is_taken_with_the_code() {
    let work = scratch();
    let records = work.path().join("records.jsonl");
    let cfg = config(work.path(), "[plugins.chess]\nmax_wait_ms = 1000\n");
    let c = stdio(&["--config", cfg.to_str().unwrap(), "--records", records.to_str().unwrap()], work.path()).await;
    // White's creator: its own move, then not Black's.
    let game = c.ok("chess_create_game", json!({"type": "agent"})).await;
    let id = game["game_id"].clone();
    assert_eq!(game["open_seat"], "black", "{game}");
    c.ok("chess_finish_turn", json!({"game_id": id, "move": "e2e4"})).await;
    let e = c.err("chess_finish_turn", json!({"game_id": id, "move": "e7e5"})).await;
    assert!(e.contains("Black's seat is open: waiting for an agent to join with the join code"), "{e}");
    let waited = c.call("chess_wait_for_next_turn", json!({"game_id": id})).await;
    assert_eq!(waited.structured_content.as_ref().unwrap()["status"], "opponent-turn", "{}", text(&waited));
    assert!(text(&waited).contains("Black's seat is open") && !text(&waited).contains("Your turn"), "{}", text(&waited));
    // Black's creator is never told "your turn" for White, nor may it move.
    let black = c.call("chess_create_game", json!({"type": "agent", "color": "black"})).await;
    let said = text(&black);
    let black = black.structured_content.unwrap();
    assert_eq!(black["status"], "opponent-turn", "{black}");
    assert!(said.contains("White's seat is open") && !said.contains("Your turn"), "{said}");
    let e = c.err("chess_finish_turn", json!({"game_id": black["game_id"], "move": "e2e4"})).await;
    assert!(e.contains("White's seat is open"), "{e}");
    // Taken with the code, the creator plays Black too.
    let code = join_code(&c, id.as_str().unwrap()).await;
    let joined = c.ok("chess_join_game", json!({"game_id": id, "join_code": code})).await;
    assert_eq!(
        (joined["your_color"].clone(), joined["status"].clone(), joined["open_seat"].clone()),
        (json!("black"), json!("your-turn"), Value::Null)
    );
    for mv in ["e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"] {
        c.ok("chess_finish_turn", json!({"game_id": id, "move": mv})).await;
    }
    // No seat is open now: the code is no longer handed out.
    let sessions = c.ok("ludus_sessions", json!({})).await;
    let s = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap().clone();
    assert!(s.get("join_code").is_none() && s["game_over"] == true, "{s}");
    c.close().await;
    let lines = std::fs::read_to_string(&records).unwrap();
    let record: Value = lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["outcome"] == "won").expect(&lines);
    let seats = record["seats"].as_array().unwrap();
    assert_eq!(seats.len(), 2, "{record}");
    assert_eq!(seats[0]["player"], seats[1]["player"], "both seats are one player: {record}");
    assert_eq!((seats[0]["result"].clone(), seats[1]["result"].clone()), (json!("won"), json!("lost")), "{record}");
}

/// Moves are made exactly once by their number, never guessed from their
/// text: White playing `Rxh7` twice in a row (a recapture on the same
/// square) makes both; a move sent again for a number already made gets
/// that move's answer and is not made again, also when two arrive at once;
/// a number passed or not yet due is refused, saying which is due.
#[tokio::test]
async fn moves_are_made_once_by_their_number_and_the_same_san_twice_is_two_moves() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let game = self_play(&c).await;
    let plies = "f3 c6 b4 Na6 h4 Nxb4 a4 Nxc2+ Qxc2 Qa5 Qe4 Qxa4 Qxe7+ Bxe7 Rxa4 Bxh4+ Raxh4 Rb8 Rxh7 Rxh7 Rxh7";
    let mut last = Value::Null;
    for (i, mv) in plies.split(' ').enumerate() {
        let n = i as u64 + 1;
        last = c.ok("chess_finish_turn", json!({"game_id": game, "move": mv, "decision": n})).await;
        assert_eq!(last["decision"], json!(n + 1), "{mv}: {last}");
    }
    assert_eq!(last["last_move"], "Rxh7");
    assert_eq!(last["fen"], "1rb1k1n1/pp1p1ppR/2p5/8/8/5P2/3PP1P1/1NB1KBN1 b - - 0 11", "both of White's Rxh7 were made: {last}");
    // The last move sent again: its own answer, made once.
    let again = c.call("chess_finish_turn", json!({"game_id": game, "move": "Rxh7", "decision": 21})).await;
    assert_ne!(again.is_error, Some(true), "{}", text(&again));
    assert_eq!(again.structured_content.as_ref().unwrap()["fen"], last["fen"]);
    assert!(text(&again).contains("Decision 21 was made already"), "{}", text(&again));
    // An older one among the player's last 8: its own answer too, nothing made.
    let older = c.call("chess_finish_turn", json!({"game_id": game, "move": "Rxh7", "decision": 20})).await;
    assert!(text(&older).contains("Decision 20 was made already"), "{}", text(&older));
    assert_eq!(older.structured_content.unwrap()["decision"], 21, "decision 20's answer");
    // Older still: refused, saying which is due.
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "Kf8", "decision": 12})).await;
    assert!(e.contains("decision 12 was made already; the decision due now is 22"), "{e}");
    let e = c.err("chess_finish_turn", json!({"game_id": game, "move": "Kf8", "decision": 30})).await;
    assert!(e.contains("decision 30 is not due yet; the decision due now is 22"), "{e}");
    // Two calls for decision 22 at once: one move, both answered with it.
    let (one, two) = tokio::join!(
        c.call("chess_finish_turn", json!({"game_id": game, "move": "Kd8", "decision": 22})),
        c.call("chess_finish_turn", json!({"game_id": game, "move": "Kd8", "decision": 22}))
    );
    for r in [&one, &two] {
        assert_ne!(r.is_error, Some(true), "{}", text(r));
        assert_eq!(r.structured_content.as_ref().unwrap()["decision"], 23);
    }
    let board = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(board["decision"], 23, "one move made: {board}");
    // Without a number, a move is made as sent.
    c.ok("chess_finish_turn", json!({"game_id": game, "move": "Rxg7"})).await;
    let board = c.ok("chess_wait_for_next_turn", json!({"game_id": game})).await;
    assert_eq!(board["decision"], 24, "{board}");
    c.close().await;
}

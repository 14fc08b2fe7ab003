//! The two puzzle games, end to end over stdio: solving, refusing, reporting.

mod common;

use std::collections::HashMap;

use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn lists_host_and_game_tools_with_described_parameters() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = c.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in [
        "ludus_games",
        "ludus_sessions",
        "hanoi_init_simulator",
        "hanoi_execute_move",
        "hanoi_execute_moves",
        "hanoi_reset_simulator",
        "hanoi_get_state",
        "river_crossing_init_simulator",
        "river_crossing_execute_move",
        "river_crossing_execute_moves",
        "river_crossing_reset_simulator",
        "river_crossing_get_state",
    ] {
        assert!(names.contains(&expected), "missing {expected} in {names:?}");
    }
    let game_tools = names[2..].to_vec();
    let mut sorted = game_tools.clone();
    sorted.sort();
    assert_eq!(game_tools, sorted, "host tools first, then game tools sorted by name");
    for t in tools.iter().filter(|t| !t.name.starts_with("ludus_")) {
        assert!(t.description.as_ref().is_some_and(|d| d.len() > 10), "{} has no description", t.name);
        let schema = Value::Object((*t.input_schema).clone());
        assert_eq!(schema["type"], "object");
        assert!(schema.get("oneOf").is_none() && schema.get("anyOf").is_none() && schema.get("allOf").is_none());
        for (p, s) in schema["properties"].as_object().unwrap() {
            assert!(s["description"].as_str().is_some_and(|d| !d.is_empty()), "{}.{p} has no description", t.name);
        }
        assert!(t.annotations.is_some(), "{} has no annotations", t.name);
    }
    c.close().await;
}

/// Golden files pin every derived schema of the bundled games. Regenerate with
/// `LUDUS_BLESS=1 cargo test --test puzzles golden`.
#[tokio::test]
async fn golden_schemas_of_the_bundled_games() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = c.tools().await;
    for game in BUILT_IN_GAMES {
        let mine: Vec<Value> =
            tools.iter().filter(|t| t.name.starts_with(&format!("{game}_"))).map(|t| serde_json::to_value(t).unwrap()).collect();
        let got = serde_json::to_string_pretty(&mine).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/golden/{game}.tools.json"));
        if std::env::var_os("LUDUS_BLESS").is_some() {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(want == got, "{game} schemas differ from {} (LUDUS_BLESS=1 to accept):\n{got}", path.display());
    }
    c.close().await;
}

async fn tool_map(c: &Client) -> HashMap<String, rmcp::model::Tool> {
    c.tools().await.into_iter().map(|t| (t.name.to_string(), t)).collect()
}

#[tokio::test]
async fn hanoi_three_disks_solved_optimally_with_every_result_matching_its_schema() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = tool_map(&c).await;
    let r = c.call("hanoi_init_simulator", json!({"n": 3})).await;
    assert_matches_output_schema(&tools["hanoi_init_simulator"], &r);
    let started = r.structured_content.clone().unwrap();
    assert_eq!(started["state"], json!([[3, 2, 1], [], []]));
    assert_eq!(started["optimal_moves"], 7);
    assert!(text(&r).contains("hanoi_execute_move"), "the text names the next action");
    let env = started["env_id"].as_str().unwrap().to_string();
    assert!(env.len() >= 32, "ids are unguessable: {env}");
    let plan = [[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]];
    let mut last = Value::Null;
    for (i, m) in plan.iter().enumerate() {
        let r = c.call("hanoi_execute_move", json!({"env_id": env, "move": m})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert_matches_output_schema(&tools["hanoi_execute_move"], &r);
        last = r.structured_content.unwrap();
        assert_eq!(last["goal_reached"], i == plan.len() - 1);
    }
    assert_eq!(last["state"], json!([[], [], [3, 2, 1]]));
    assert_eq!(last["moves_made"], 7);
    let r = c.call("hanoi_get_state", json!({"env_id": env})).await;
    assert_matches_output_schema(&tools["hanoi_get_state"], &r);
    assert!(text(&r).contains("optimal"), "{}", text(&r));
    c.close().await;
}

#[tokio::test]
async fn hanoi_rejects_illegal_moves_with_reasons_and_legal_alternatives() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let env = c.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [3, 0, 2]})).await;
    assert!(e.contains("disk 3 is not on top of peg 0"), "{e}");
    assert!(e.contains("Legal moves now: [1, 0, 1], [1, 0, 2]"), "{e}");
    c.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 2]})).await;
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [2, 0, 2]})).await;
    assert!(e.contains("larger disk never lies on a smaller"), "{e}");
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 2]})).await;
    assert!(e.contains("three numbers"), "{e}");
    let s = c.ok("hanoi_get_state", json!({"env_id": env})).await;
    assert_eq!(s["moves_made"], 1, "refused moves change nothing");
    c.close().await;
}

#[tokio::test]
async fn whole_plans_report_the_first_failing_move() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let env = c.ok("hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
    let r = c.ok("hanoi_execute_moves", json!({"env_id": env, "moves": [[1, 0, 2], [2, 0, 1], [2, 1, 2], [1, 2, 1]]})).await;
    assert_eq!(r["all_moves_successful"], false);
    assert_eq!(r["failed_move_index"], 2);
    assert_eq!(r["moves_executed"], 2);
    assert!(r["failure_reason"].as_str().unwrap().contains("disk 2 cannot go onto peg 2"), "{r}");
    c.ok("hanoi_reset_simulator", json!({"env_id": env})).await;
    let full: Vec<[u32; 3]> = vec![[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]];
    let r = c.ok("hanoi_execute_moves", json!({"env_id": env, "moves": full})).await;
    assert_eq!(r["all_moves_successful"], true);
    assert_eq!(r["goal_reached"], true);
    assert!(r.get("failed_move_index").is_none(), "none fields are left out: {r}");

    // River crossing: the paper's N=2 example as one plan.
    let env = c.ok("river_crossing_init_simulator", json!({"n": 2, "k": 2})).await["env_id"].clone();
    let plan = json!([["A_2", "a_2"], ["A_2"], ["A_1", "A_2"], ["A_1"], ["A_1", "a_1"]]);
    let r = c.ok("river_crossing_execute_moves", json!({"env_id": env, "moves": plan})).await;
    assert_eq!((r["goal_reached"].clone(), r["moves_made"].clone()), (json!(true), json!(5)));
    c.close().await;
}

#[tokio::test]
async fn river_crossing_three_pairs_solved_and_unsolvable_instances_flagged() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = tool_map(&c).await;
    let r = c.call("river_crossing_init_simulator", json!({"n": 3, "k": 2})).await;
    assert_matches_output_schema(&tools["river_crossing_init_simulator"], &r);
    let s = r.structured_content.unwrap();
    assert_eq!((s["solvable"].clone(), s["optimal_moves"].clone()), (json!(true), json!(11)));
    let env = s["env_id"].clone();
    let e = c.err("river_crossing_execute_move", json!({"env_id": env, "move": ["A_1", "A_2"]})).await;
    assert!(e.contains("unsafe on the left bank") && e.contains("a_1 would be with"), "{e}");
    let plan: [&[&str]; 11] = [
        &["a_1", "a_2"],
        &["a_1"],
        &["a_1", "a_3"],
        &["a_1"],
        &["A_2", "A_3"],
        &["A_2", "a_2"],
        &["A_1", "A_2"],
        &["a_3"],
        &["a_1", "a_2"],
        &["A_3"],
        &["a_3", "A_3"],
    ];
    for (i, m) in plan.iter().enumerate() {
        let r = c.call("river_crossing_execute_move", json!({"env_id": env, "move": m})).await;
        assert_ne!(r.is_error, Some(true), "crossing {i}: {}", text(&r));
        assert_matches_output_schema(&tools["river_crossing_execute_move"], &r);
    }
    let s = c.ok("river_crossing_get_state", json!({"env_id": env})).await;
    assert_eq!(s["goal_reached"], true);
    assert_eq!(s["moves_made"], 11);
    assert_eq!(s["state"]["boat"], "right");

    let r = c.call("river_crossing_init_simulator", json!({"n": 6, "k": 3})).await;
    let s = r.structured_content.clone().unwrap();
    assert_eq!(s["solvable"], false);
    assert!(s.get("optimal_moves").is_none());
    assert!(text(&r).contains("Unsolvable"), "{}", text(&r));
    let s = c.ok("river_crossing_init_simulator", json!({"n": 4})).await;
    assert_eq!(s["simulator_params"], json!({"n": 4, "k": 3}), "default k follows the paper");
    assert_eq!(s["optimal_moves"], 9);
    c.close().await;
}

#[tokio::test]
async fn bad_arguments_name_the_field_and_what_was_expected() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let e = c.err("hanoi_init_simulator", json!({"n": "three"})).await;
    // The tool's own range, not the integer type's, whatever the wrong value.
    assert!(e.contains("argument `n`: expected an integer from 1 to 30, got") && !e.contains("4294967295"), "{e}");
    let e = c.err("hanoi_init_simulator", json!({})).await;
    assert!(e.contains("argument `n`: missing required field"), "{e}");
    let e = c.err("hanoi_init_simulator", json!({"n": -1})).await;
    assert!(e.contains("expected an integer from 1 to 30, got -1"), "{e}");
    let e = c.err("hanoi_init_simulator", json!({"n": 300})).await;
    assert!(e.contains("expected an integer from 1 to 30, got 300"), "{e}");
    let e = c.err("chess_create_game", json!({"type": "computer", "difficulty": 300})).await;
    assert!(e.contains("expected an integer from 1 to 10, got 300") && !e.contains("255"), "{e}");
    let e = c.err("hanoi_init_simulator", json!({"n": 3.5})).await;
    assert!(e.contains("argument `n`"), "{e}");
    c.ok("hanoi_init_simulator", json!({"n": 3.0})).await;
    let e = c.err("hanoi_init_simulator", json!({"n": 3, "disks": 4})).await;
    assert!(e.contains("argument `disks`: unknown field; allowed: n"), "{e}");
    // The declared range is checked by the host, with the bounds the schema states.
    let e = c.err("hanoi_init_simulator", json!({"n": 99})).await;
    assert!(e.contains("argument `n`: expected an integer from 1 to 30, got 99") && e.contains("`n` (an integer from 1 to 30)"), "{e}");
    let e = c.err("hanoi_execute_move", json!({"env_id": "nope", "move": [1, 0, 2]})).await;
    assert!(e.contains("unknown `env_id` \"nope\""), "{e}");
    let e = c.err("hanoi_execute_move", json!({"env_id": "x", "move": [1, 0, "two"]})).await;
    assert!(e.contains("argument `move[2]`"), "{e}");
    let e = c.err("river_crossing_reset_simulator", json!({"env_id": "x", "state": {"boat": "middle", "left": [], "right": []}})).await;
    assert!(e.contains("argument `state.boat`: expected one of left, right"), "{e}");

    // A river env id is not a hanoi env id.
    let river = c.ok("river_crossing_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let e = c.err("hanoi_get_state", json!({"env_id": river})).await;
    assert!(e.contains("belongs to a river_crossing game"), "{e}");

    // Oversized payloads are refused before they reach a game.
    let huge: Vec<[u32; 3]> = vec![[1, 0, 2]; 600_000];
    let e = c.err("hanoi_execute_moves", json!({"env_id": river, "moves": huge})).await;
    assert!(e.contains("bytes per call"), "{e}");

    // Unknown tools are protocol errors.
    let err = c.try_call("chess_move", json!({})).await.unwrap_err().to_string();
    assert!(err.contains("unknown tool `chess_move`"), "{err}");
    // A near miss is answered with the nearest names.
    let err = c.try_call("hanoi_getstate", json!({})).await.unwrap_err().to_string();
    assert!(err.contains("unknown tool `hanoi_getstate`. Did you mean `hanoi_get_state`? Call tools/list"), "{err}");
    // The server is still fine.
    c.ok("hanoi_init_simulator", json!({"n": 1})).await;
    c.close().await;
}

#[tokio::test]
async fn concurrent_sessions_do_not_see_each_other() {
    let work = scratch();
    let c = std::sync::Arc::new(stdio(&[], work.path()).await);
    let mut tasks = Vec::new();
    for i in 0..8u32 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let n = 2 + i % 3;
            let env = c.ok("hanoi_init_simulator", json!({"n": n})).await["env_id"].clone();
            let r = c.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 1 + i % 2]})).await;
            let s = c.ok("hanoi_get_state", json!({"env_id": env})).await;
            assert_eq!(s["moves_made"], 1);
            assert_eq!(s["simulator_params"]["n"], n);
            assert_eq!(r["state"], s["state"]);
            env
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    ids.sort_by_key(|v| v.to_string());
    ids.dedup();
    assert_eq!(ids.len(), 8);
    let s = c.ok("ludus_sessions", json!({"game": "hanoi"})).await;
    assert_eq!(s["count"], 8);
}

#[tokio::test]
async fn games_list_reports_versions_and_sources() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let g = c.ok("ludus_games", json!({})).await;
    let games = g["games"].as_array().unwrap();
    let hanoi = games.iter().find(|g| g["name"] == "hanoi").unwrap();
    assert_eq!(hanoi["source"], "built-in");
    assert_eq!(hanoi["status"], "ok");
    assert_eq!(hanoi["version"], "0.1.0");
    let e = c.err("ludus_sessions", json!({"game": 3})).await;
    assert!(e.contains("invalid arguments"), "{e}");
    c.close().await;
}

/// Checker Jumping through the real binary: the paper's N=1 example, an
/// optimal N=3 plan of 15 moves, every kind of illegal move refused with its
/// reason, a whole plan with an error at a known index, and a dead end said.
#[tokio::test]
async fn checker_jumping_solved_optimally_with_illegal_moves_refused_and_dead_ends_said() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = tool_map(&c).await;
    let r = c.call("checker_jumping_init_simulator", json!({"n": 1})).await;
    assert_matches_output_schema(&tools["checker_jumping_init_simulator"], &r);
    let started = r.structured_content.unwrap();
    assert_eq!((started["state"].clone(), started["optimal_moves"].clone()), (json!(["R", "_", "B"]), json!(3)));
    let env = started["env_id"].clone();
    for m in [json!(["R", 0, 1]), json!(["B", 2, 0]), json!(["R", 1, 2])] {
        let r = c.call("checker_jumping_execute_move", json!({"env_id": env, "move": m})).await;
        assert_matches_output_schema(&tools["checker_jumping_execute_move"], &r);
    }
    let s = c.call("checker_jumping_get_state", json!({"env_id": env})).await;
    assert_eq!(s.structured_content.as_ref().unwrap()["state"], json!(["B", "_", "R"]));
    assert!(text(&s).contains("Solved") && text(&s).contains("(optimal)"), "{}", text(&s));

    let env = c.ok("checker_jumping_init_simulator", json!({"n": 3})).await["env_id"].clone();
    for (m, why) in [
        (json!(["G", 2, 3]), "\"R\" (red, moves right) or \"B\" (blue, moves left), got \"G\""),
        (json!(["R", 2, 9]), "position 9 is off the board: the cells are 0 to 6"),
        (json!(["B", 2, 3]), "cell 2 holds a red checker, not a blue one"),
        (json!(["R", 1, 2]), "cell 2 is not empty"),
        (json!(["R", 1, 3]), "jumps only over a checker of the other colour"),
        (json!(["R", 0, 3]), "slides one cell or jumps two"),
    ] {
        let e = c.err("checker_jumping_execute_move", json!({"env_id": env, "move": m})).await;
        assert!(e.contains(why) && e.contains("Legal moves now: [\"R\", 2, 3], [\"B\", 4, 3]"), "{m}: {e}");
    }
    let e = c.err("checker_jumping_execute_move", json!({"env_id": env, "move": ["R", 2]})).await;
    assert!(e.contains("`move`"), "{e}");
    // An optimal plan of (3+1)² − 1 = 15 moves, with an error at index 4 first.
    let optimal = json!([
        ["R", 2, 3],
        ["B", 4, 2],
        ["B", 5, 4],
        ["R", 3, 5],
        ["R", 1, 3],
        ["R", 0, 1],
        ["B", 2, 0],
        ["B", 4, 2],
        ["B", 6, 4],
        ["R", 5, 6],
        ["R", 3, 5],
        ["R", 1, 3],
        ["B", 2, 1],
        ["B", 4, 2],
        ["R", 3, 4]
    ]);
    let mut broken = optimal.as_array().unwrap().clone();
    broken[4] = json!(["R", 5, 3]);
    let r = c.ok("checker_jumping_execute_moves", json!({"env_id": env, "moves": broken})).await;
    assert_eq!((r["failed_move_index"].clone(), r["moves_executed"].clone()), (json!(4), json!(4)), "{r}");
    assert!(r["failure_reason"].as_str().unwrap().contains("moves only right"), "{r}");
    c.ok("checker_jumping_reset_simulator", json!({"env_id": env})).await;
    let r = c.ok("checker_jumping_execute_moves", json!({"env_id": env, "moves": optimal})).await;
    assert_eq!(
        (r["goal_reached"].clone(), r["moves_made"].clone(), r["optimal_moves"].clone()),
        (json!(true), json!(15), json!(15)),
        "{r}"
    );

    // Two reds side by side before two blues, the gap behind them: stuck.
    let env = c.ok("checker_jumping_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let r = c.ok("checker_jumping_execute_moves", json!({"env_id": env, "moves": [["R", 1, 2], ["R", 0, 1]]})).await;
    assert_eq!(r["dead_end"], true, "{r}");
    let e = c.err("checker_jumping_init_simulator", json!({"n": 0})).await;
    assert!(e.contains("from 1 to 100"), "{e}");
    c.close().await;
}

/// Blocks World through the real binary: the paper's N=4 instance solved by a
/// plan, its optimum searched exactly (and the paper's N=2..7 optima, 3, 6,
/// 7, 10, 11, 14, each pinned), a plan with an error at a known index,
/// every kind of illegal move, a start and goal of one's own, and N=20 with
/// its optimum stated as a lower bound.
#[tokio::test]
async fn blocks_world_solved_with_illegal_moves_refused_and_the_optimum_stated() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let tools = tool_map(&c).await;
    let r = c.call("blocks_world_init_simulator", json!({"n": 4})).await;
    assert_matches_output_schema(&tools["blocks_world_init_simulator"], &r);
    let s = r.structured_content.unwrap();
    assert_eq!(s["state"], json!([["A", "B"], ["C", "D"], []]));
    assert_eq!(s["goal"], json!([["D", "B", "C", "A"], [], []]));
    assert_eq!(s["optimum_exact"], true);
    let env = s["env_id"].clone();
    let plan = json!([["B", 0, 2], ["A", 0, 2], ["D", 1, 0], ["A", 2, 1], ["B", 2, 0], ["A", 1, 2], ["C", 1, 0], ["A", 2, 0]]);
    let mut broken = plan.as_array().unwrap().clone();
    broken[2] = json!(["C", 1, 2]);
    let r = c.ok("blocks_world_execute_moves", json!({"env_id": env, "moves": broken})).await;
    assert_eq!(r["failed_move_index"], 2, "{r}");
    assert!(r["failure_reason"].as_str().unwrap().contains("block C is not on top of stack 1: D is on top"), "{r}");
    c.ok("blocks_world_reset_simulator", json!({"env_id": env})).await;
    for (m, why) in [
        (json!(["Z", 0, 1]), "there is no block \"Z\""),
        (json!(["B", 3, 1]), "stack 3 does not exist"),
        (json!(["B", 1, 2]), "block B is on stack 0, not on stack 1"),
        (json!(["B", 0, 0]), "both stack 0"),
    ] {
        let e = c.err("blocks_world_execute_move", json!({"env_id": env, "move": m})).await;
        assert!(e.contains(why) && e.contains("Legal moves now: [\"B\", 0, 1]"), "{m}: {e}");
    }
    let r = c.call("blocks_world_execute_moves", json!({"env_id": env, "moves": plan})).await;
    assert_matches_output_schema(&tools["blocks_world_execute_moves"], &r);
    let r = r.structured_content.unwrap();
    assert_eq!((r["goal_reached"].clone(), r["moves_made"].clone()), (json!(true), json!(8)), "{r}");
    // The plan is one move longer than the optimum (7, searched exactly).
    assert_eq!((r["optimal_moves"].clone(), r["optimum_exact"].clone()), (json!(7), json!(true)), "{r}");

    // The paper's instances searched exactly (up to 7 blocks): each optimum
    // pinned, so a search that stops early or a wrong instance shows.
    for (n, best) in [(2, 3), (3, 6), (4, 7), (5, 10), (6, 11), (7, 14)] {
        let s = c.ok("blocks_world_init_simulator", json!({"n": n})).await;
        assert_eq!((s["optimal_moves"].clone(), s["optimum_exact"].clone()), (json!(best), json!(true)), "n = {n}: {s}");
    }

    let own = c.ok("blocks_world_init_simulator", json!({"initial": [["A"], ["B"], []], "goal": [["B"], ["A"], []]})).await;
    assert_eq!((own["optimal_moves"].clone(), own["optimum_exact"].clone()), (json!(3), json!(true)), "{own}");
    let big = c.call("blocks_world_init_simulator", json!({"n": 20})).await;
    assert_eq!(big.structured_content.as_ref().unwrap()["optimum_exact"], false);
    assert!(text(&big).contains("a lower bound"), "{}", text(&big));
    let e = c.err("blocks_world_init_simulator", json!({"initial": [["A"], []]})).await;
    assert!(e.contains("give both `initial` and `goal`"), "{e}");
    let e = c.err("blocks_world_init_simulator", json!({"initial": [["A"], ["A"]], "goal": [["A"], ["A"]]})).await;
    assert!(e.contains("twice"), "{e}");
    c.close().await;
}

/// The paper's prompts (appendix A.1) for the four puzzles: listed, filled
/// in with the instance, the rebuttal's program variant, bad arguments
/// refused, `n` completed.
#[tokio::test]
async fn the_papers_prompts_for_the_four_puzzles() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, PromptReference, Reference};
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let listed: Vec<String> = c.service.list_all_prompts().await.unwrap().into_iter().map(|p| p.name.to_string()).collect();
    for game in ["hanoi", "river_crossing", "checker_jumping", "blocks_world"] {
        for name in ["paper", "paper_program"] {
            assert!(listed.contains(&format!("{game}_{name}")), "{game}_{name} not in {listed:?}");
        }
    }
    let get = |name: &str, args: Value| {
        let mut p = GetPromptRequestParams::new(name);
        p.arguments = args.as_object().cloned();
        c.service.get_prompt(p)
    };
    let texts = |r: rmcp::model::GetPromptResult| -> Vec<String> {
        r.messages.iter().map(|m| serde_json::to_value(&m.content).unwrap()["text"].as_str().unwrap().to_string()).collect()
    };
    // Each: the system prompt's opening, then the user prompt with the instance written out.
    let cases = [
        ("hanoi_paper", json!({"n": "4"}), "There are three pegs and n disks", "• Peg 0: 4 (bottom), 3, 2, 1 (top)"),
        (
            "river_crossing_paper",
            json!({"n": "3"}),
            "You can represent actors with a_1",
            "3 actors and their 3 agents want to cross a river in a boat that is capable of holding only 2 people",
        ),
        // The examples as the authors wrote them, not as the PDF's text layer spaced and curled them.
        (
            "river_crossing_paper",
            json!({"n": "5", "k": "4"}),
            "moves = [[\"A_2\", \"a_2\"], [\"A_2\"], [\"A_1\", \"A_2\"], [\"A_1\"], [\"A_1\", \"a_1\"]]",
            "holding only 4 people at a time",
        ),
        (
            "checker_jumping_paper",
            json!({"n": "2"}),
            "moves = [['R', 0, 1], ['B', 2, 0], ['R', 1, 2]]",
            "Initial board: R R _ B B\nGoal board: B B _ R R",
        ),
        (
            "hanoi_paper",
            json!({"n": "3"}),
            "moves = [[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]]",
            "3 (bottom)",
        ),
        ("blocks_world_paper", json!({"n": "2"}), "moves = [[\"C\", 1, 2], [\"B\", 0, 1]]", "I have a puzzle with 2 blocks"),
        (
            "blocks_world_paper",
            json!({"n": "6"}),
            "there are stacks of blocks",
            "Stack 0: A B C (top)\nStack 1: D E F (top)\nStack 2: (empty)\nGoal state:\nStack 0: F C E B D A (top)",
        ),
    ];
    for (name, args, system, user) in cases {
        let m = texts(get(name, args).await.unwrap());
        assert_eq!(m.len(), 2, "{name}: {m:?}");
        assert!(m[0].starts_with("You are a helpful assistant. Solve this puzzle for me.") && m[0].contains(system), "{name}: {}", m[0]);
        assert!(m[0].contains("always include the corresponding complete list"), "{name}: the paper's requirement: {}", m[0]);
        assert!(m[1].contains(user), "{name}: {}", m[1]);
        assert!(!m.iter().any(|t| t.contains('’') || t.contains(" , ")), "{name}: a PDF artefact is left: {m:?}");
    }
    let program = texts(get("hanoi_paper_program", json!({"n": "12", "language": "Lua"})).await.unwrap());
    assert!(
        program[1].contains("12 (bottom), 11, 10") && program[1].contains("write a complete Lua program that, when run, prints"),
        "{program:?}"
    );
    assert!(program[1].ends_with("moves = [[disk id, from peg, to peg], ...]"), "{program:?}");
    for (name, args, words) in [
        ("hanoi_paper", json!({"n": "31"}), "`n` must be 1–30 for Tower of Hanoi"),
        ("hanoi_paper", json!({"n": "three"}), "`n` must be a whole number"),
        ("hanoi_paper", json!({"n": "3", "k": "2"}), "has no argument `k`"),
        ("blocks_world_paper", json!({"n": "1"}), "`n` must be 2–26"),
        ("river_crossing_paper", json!({"n": "3", "k": "0"}), "the boat's capacity"),
        ("checker_jumping_paper_program", json!({"n": "3", "language": "rm -rf /; echo"}), "is not a programming language's name"),
    ] {
        let e = get(name, args).await.unwrap_err().to_string();
        assert!(e.contains(words), "{name}: {e}");
    }
    let done = c
        .service
        .complete(CompleteRequestParams::new(Reference::Prompt(PromptReference::new("checker_jumping_paper")), ArgumentInfo::new("n", "9")))
        .await
        .unwrap()
        .completion;
    assert_eq!(done.values[..3], ["9".to_string(), "90".into(), "91".into()], "{done:?}");
    c.close().await;
}

/// A legal move may repeat, and is made each time: River Crossing solved
/// with a load that goes across and comes back, with numbers and without.
/// A reset numbers the decisions afresh, and the same move after it is
/// made (and refused where it is illegal), never answered from before it.
#[tokio::test]
async fn repeated_legal_moves_are_made_and_a_reset_numbers_decisions_afresh() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    // The smallest disk there, back, and there again: the same move twice.
    let moves = [json!([1, 0, 1]), json!([1, 1, 0]), json!([1, 0, 1])];
    for numbered in [true, false] {
        let env = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
        for (n, mv) in (1..=3u64).zip(&moves) {
            let mut args = json!({"env_id": env, "move": mv});
            if numbered {
                args["decision"] = json!(n);
            }
            let r = c.ok("hanoi_execute_move", args).await;
            assert_eq!((r["moves_made"].clone(), r["decision"].clone()), (json!(n), json!(n + 1)), "numbered: {numbered}: {r}");
        }
        let s = c.ok("hanoi_get_state", json!({"env_id": env})).await;
        assert_eq!((s["state"].clone(), s["moves_made"].clone()), (json!([[2], [1], []]), json!(3)), "there, back, there: {s}");
    }

    let env = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let r = c.ok("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 1], "decision": 1})).await;
    assert_eq!(r["decision"], 2);
    let reset = c.ok("hanoi_reset_simulator", json!({"env_id": env})).await;
    assert_eq!(reset["decision"], 1, "a reset numbers afresh: {reset}");
    let r = c.call("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 1], "decision": 1})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert!(!text(&r).contains("made already"), "made, not answered from before the reset: {}", text(&r));
    assert_eq!(r.structured_content.unwrap()["moves_made"], 1);
    // Sent again for the same number: that move's answer, not made twice.
    let again = c.call("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 1], "decision": 1})).await;
    assert!(text(&again).contains("Decision 1 was made already"), "{}", text(&again));
    assert_eq!(c.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 1);
    // After a reset to a position where the move is illegal, it is refused.
    c.ok("hanoi_reset_simulator", json!({"env_id": env, "state": [[2], [], [1]]})).await;
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 0, 1], "decision": 1})).await;
    assert!(e.contains("Illegal move [1, 0, 1]"), "{e}");
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 2, 1], "decision": 2})).await;
    assert!(e.contains("decision 2 is not due yet; the decision due now is 1"), "{e}");
    // `calls` counts the client's calls to this game: init, 3 moves, 2 resets, 1 state, 2 refused... and no more.
    let sessions = c.ok("ludus_sessions", json!({})).await;
    let hanoi = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == env).unwrap().clone();
    assert_eq!(hanoi["calls"], 9, "{hanoi}");
    c.close().await;
}

/// A refusal at a limit names the configuration key that raises it.
#[tokio::test]
async fn a_limit_names_the_key_that_raises_it() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nunload_idle_after_ms = 0\n[plugins.hanoi]\nmax_sessions = 1\n");
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    let e = c.err("hanoi_init_simulator", json!({"n": 2})).await;
    assert!(e.contains("limits.max_sessions_per_plugin") && e.contains("plugins.hanoi.max_sessions"), "{e}");
    c.close().await;
}

/// A plan is checked whole, as the paper checks an answer: reaching the
/// goal and then making an illegal move fails it, and its `goal_reached`
/// says so. A failed or solved puzzle shows `game_over` in
/// `ludus_sessions` and refuses further moves and plans (nothing is
/// applied), while a retry of its last decision still gets its answer; a
/// reset makes it a game again.
#[tokio::test]
async fn a_plan_with_an_illegal_move_after_the_goal_fails_and_a_solved_puzzle_is_over() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let env = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    let r = c.call("hanoi_execute_moves", json!({"env_id": env, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2], [2, 0, 1]]})).await;
    let said = text(&r);
    let plan = r.structured_content.unwrap();
    assert_eq!((plan["goal_reached"].clone(), plan["all_moves_successful"].clone()), (json!(false), json!(false)), "{plan}");
    assert!(said.contains("The plan fails: move 3 is illegal") && !said.contains("Solved"), "{said}");
    let over = |sessions: Value| sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == env).unwrap()["game_over"].clone();
    assert_eq!(over(c.ok("ludus_sessions", json!({})).await), true, "a failed plan ends the game");
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 2, 0]})).await;
    assert!(e.contains("The puzzle is over (failed)") && e.contains("Reset it"), "{e}");
    let e = c.err("hanoi_execute_moves", json!({"env_id": env, "moves": [[1, 2, 0]], "decision": 2})).await;
    assert!(e.contains("The puzzle is over (failed)"), "{e}");
    let s = c.ok("hanoi_get_state", json!({"env_id": env})).await;
    assert_eq!((s["moves_made"].clone(), s["goal_reached"].clone()), (json!(3), json!(false)), "nothing applied after the end: {s}");
    c.ok("hanoi_reset_simulator", json!({"env_id": env})).await;
    assert_eq!(over(c.ok("ludus_sessions", json!({})).await), false, "a reset begins the next game");
    let solving = json!({"env_id": env, "moves": [[1, 0, 1], [2, 0, 2], [1, 1, 2]], "decision": 1});
    let r = c.ok("hanoi_execute_moves", solving.clone()).await;
    assert_eq!(r["goal_reached"], true);
    assert_eq!(over(c.ok("ludus_sessions", json!({})).await), true, "solved: over");
    let e = c.err("hanoi_execute_move", json!({"env_id": env, "move": [1, 2, 0], "decision": 2})).await;
    assert!(e.contains("The puzzle is over (solved)"), "{e}");
    let retried = c.call("hanoi_execute_moves", solving).await;
    assert!(text(&retried).contains("made already"), "{}", text(&retried));
    assert_eq!(retried.structured_content.unwrap()["moves_made"], 3, "the retry gets the decision's answer");
    assert_eq!(c.ok("hanoi_get_state", json!({"env_id": env})).await["moves_made"], 3);
    c.close().await;
}

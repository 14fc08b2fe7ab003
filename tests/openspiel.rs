//! OpenSpiel's games through the real server binary, the bundled bridge and
//! the real `open_spiel` from PyPI (installed on first use into the user
//! cache's venv): games played to their end by a random-legal agent over
//! MCP, hidden information audited per seat against OpenSpiel itself, the
//! built-in opponents, result records and `ludus verify`. (A kill -9 in
//! mid-game is in `tests/durable.rs`.)

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// A server config where the chosen seed is the whole seed (`whole_seeds`),
/// so that two runs of one seed play the same game.
fn dealt(work: &Path) -> std::path::PathBuf {
    config(work, "whole_seeds = true")
}

/// A seeded agent that picks uniformly among the legal actions.
struct Agent(u64);

impl Agent {
    fn pick(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }

    /// One of `turn`'s legal actions: by text or by number, in turn.
    fn action(&mut self, turn: &Value) -> String {
        let legal = turn["legal_actions"].as_array().unwrap_or_else(|| panic!("no legal actions in {turn}"));
        assert!(!legal.is_empty(), "your turn with no legal actions: {turn}");
        let a = &legal[self.pick(legal.len())];
        match self.pick(4) {
            0 => a["number"].to_string(),
            _ => a["text"].as_str().unwrap().to_string(),
        }
    }
}

/// Plays `id` for `c` (which holds every agent seat) until it is over, at
/// most `limit` moves; the final turn and the moves made.
async fn play_out(c: &Client, id: &str, agent: &mut Agent, limit: usize) -> (Value, usize) {
    let mut turn = c.ok("openspiel_get_state", json!({"game_id": id})).await;
    let mut moves = 0;
    while turn["game_over"] != true {
        assert!(moves < limit, "{id}: not over after {limit} moves: {turn}");
        if turn["your_turn"] != true {
            turn = c.ok("openspiel_wait_for_turn", json!({"game_id": id})).await;
            continue;
        }
        let action = agent.action(&turn);
        turn = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
        moves += 1;
    }
    (turn, moves)
}

async fn start(c: &Client, args: Value) -> (String, Value) {
    let turn = c.ok("openspiel_start_game", args.clone()).await;
    let id = turn["game_id"].as_str().unwrap_or_else(|| panic!("no game id for {args}: {turn}")).to_string();
    (id, turn)
}

/// Every line of a records file as JSON.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn the_games_evaluators_use_play_to_their_end_with_a_record_each() {
    let work = scratch();
    let records_path = work.path().join("records.jsonl");
    let c = stdio(&["--records", records_path.to_str().unwrap(), "--config", dealt(work.path()).to_str().unwrap()], work.path()).await;

    let listed = c.ok("openspiel_list_games", json!({})).await;
    assert!(listed["games"].as_array().unwrap().len() >= 100, "{listed}");
    let poker = c.ok("openspiel_list_games", json!({"filter": "poker", "hidden_information": true})).await;
    let names: Vec<&str> = poker["games"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"kuhn_poker") && !names.contains(&"go"), "{names:?}");

    // (game, parameters, seats besides the agent)
    let games: &[(&str, Value)] = &[
        ("tic_tac_toe", json!([])),
        ("connect_four", json!([])),
        ("breakthrough", json!([])),
        ("hex", json!([{"name": "board_size", "value": "7"}])),
        ("go", json!([{"name": "board_size", "value": "9"}])),
        ("backgammon", json!([])),
        ("checkers", json!([])),
        ("dots_and_boxes", json!([])),
        ("kuhn_poker", json!([])),
        ("leduc_poker", json!([])),
        ("liars_dice", json!([])),
        ("hanabi", json!([])),
        ("gin_rummy", json!([])),
        ("tiny_bridge_2p", json!([])),
        ("bridge", json!([])),
        ("blackjack", json!([])),
        ("2048", json!([])),
        // Chance from the game's own generator, seeded from the game's seed.
        ("tarok", json!([])),
        ("negotiation", json!([])),
        ("stones_and_gems", json!([])),
        ("bridge_uncontested_bidding", json!([])),
    ];
    let mut ids = Vec::new();
    for (k, (game, parameters)) in games.iter().enumerate() {
        let (id, first) = start(&c, json!({"game": game, "parameters": parameters, "seed": 100 + k})).await;
        assert_eq!(first["seat"], 0, "{first}");
        let (last, moves) = play_out(&c, &id, &mut Agent(k as u64), 3000).await;
        let returns = last["returns"].as_array().unwrap_or_else(|| panic!("{game}: no returns at the end: {last}"));
        assert_eq!(returns.len(), last["seats"].as_array().unwrap().len(), "{game}: {last}");
        // Once over, everyone may see the whole game.
        assert!(last["history"].as_array().is_some_and(|h| !h.is_empty()), "{game}: {last}");
        assert!(moves >= 1, "{game}");
        ids.push((id, *game, moves));
    }

    // One record per game, with every seat's result.
    let all = records(&records_path);
    for (id, game, moves) in &ids {
        let mine: Vec<&Value> = all.iter().filter(|r| r["record"] == format!("{id}/1")).collect();
        assert_eq!(mine.len(), 1, "{game}: {all:?}");
        let r = mine[0];
        assert_eq!(r["moves"], *moves, "{game}: every accepted move is counted, the last one too: {r}");
        assert_ne!(r["outcome"], "playing", "{game}: {r}");
        let seats = r["seats"].as_array().unwrap_or_else(|| panic!("{game}: no seats in {r}"));
        assert!(seats.iter().all(|s| s["result"].is_string()), "{game}: {r}");
        assert_eq!(r["parameters"]["game"], *game, "{r}");
    }
    // The records replay: `ludus verify` plays every game again and finds the same.
    let (code, printed) = verify(&[&records_path], &dealt(work.path()));
    assert_eq!(code, Some(0), "{printed}");
}

/// The Python of the venv the bridge installed OpenSpiel into (the user cache's).
fn openspiel_python() -> std::path::PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    cache.join("ludus/openspiel-venv/bin/python")
}

/// Every view each seat had over the game `actions` played, by OpenSpiel
/// itself (`tests/clients/openspiel_referee.py`).
fn referee(game: &str, actions: &Value) -> Vec<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/openspiel_referee.py");
    let spec = json!({"game": game, "actions": actions}).to_string();
    let out = std::process::Command::new(openspiel_python()).arg(script).arg(spec).output().expect("running the referee");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let views: Value = serde_json::from_slice(&out.stdout).unwrap();
    let seats = views.as_object().unwrap().len();
    (0..seats).map(|p| views[p.to_string()].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()).collect()
}

/// Every string in `v`, unescaped, one per line.
fn strings_in(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|x| strings_in(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings_in(x, out)),
        _ => {}
    }
}

/// Everything `c` is told about game `id` through its tools, as text, and
/// the views it was given.
async fn everything_seen(c: &Client, id: &str, views: &mut Vec<String>) -> String {
    let mut seen = String::new();
    // (`openspiel_wait_for_turn` answers at once only on the seat's turn; its
    // answer is the state's then.)
    for tool in ["openspiel_get_state", "openspiel_legal_actions"] {
        let r = c.call(tool, json!({"game_id": id})).await;
        assert_ne!(r.is_error, Some(true), "{tool}: {}", text(&r));
        let turn = r.structured_content.clone().unwrap_or_default();
        views.extend(["observation", "information_state"].iter().filter_map(|k| turn[*k].as_str().map(String::from)));
        seen.push_str(&text(&r));
        strings_in(&turn, &mut seen);
    }
    // A move that names nothing: refused without a word of another seat's.
    let r = c.call("openspiel_move", json!({"game_id": id, "action": "no such action"})).await;
    assert_eq!(r.is_error, Some(true), "{id}: a probe move was played: {}", text(&r));
    seen.push_str(&text(&r));
    seen
}

/// One game of the audit: what seat 1 and the watcher were shown so far.
struct Audited {
    game: &'static str,
    id: String,
    agents: [Agent; 2],
    shown_to_b: Vec<String>,
    seen_by_b: String,
    seen_by_watcher: String,
    steps: usize,
    over: bool,
}

/// Twenty games that hide information live at once in one shared bridge
/// process, played a step each in turn: each seat is shown only what
/// OpenSpiel itself shows that seat, and no seat or watcher sees a word of
/// another seat's views, of its own game or of any other in the process.
#[tokio::test]
async fn each_seat_sees_only_its_own_cards_while_the_game_runs() {
    let work = scratch();
    let cfg = config(work.path(), "whole_seeds = true\n[engines]\nshards = 1");
    // Two agents and a spectator on one server, one HTTP client each.
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b, watcher) = (http_client(&server).await, http_client(&server).await, http_client(&server).await);
    // (game, the other seats: the second agent's first, how many at once)
    let kinds: &[(&str, Value, usize)] = &[
        ("kuhn_poker", json!(["agent"]), 7),
        ("leduc_poker", json!(["agent"]), 4),
        ("liars_dice", json!(["agent"]), 2),
        ("gin_rummy", json!(["agent"]), 2),
        ("hanabi", json!(["agent"]), 1),
        ("tiny_bridge_2p", json!(["agent"]), 3),
        ("bridge", json!(["agent", "random", "random"]), 1),
    ];
    let mut games = Vec::new();
    for (game, opponents, n) in kinds {
        for _ in 0..*n {
            let k = games.len() as u64;
            let (id, _) = start(&a, json!({"game": game, "opponents": opponents, "seed": 7 + k})).await;
            let code = join_code(&a, &id).await;
            let joined = b.ok("openspiel_join_game", json!({"game_id": id, "join_code": code})).await;
            assert_eq!(joined["seat"], 1, "{joined}");
            let agents = [Agent(k), Agent(99 + k)];
            let (shown_to_b, seen_by_b, seen_by_watcher) = (Vec::new(), String::new(), String::new());
            games.push(Audited { game, id, agents, shown_to_b, seen_by_b, seen_by_watcher, steps: 0, over: false });
        }
    }
    assert!(games.len() >= 20);
    let running = bridges_of(work.path());
    assert_eq!(running.len(), 1, "{} games in one shared process: {running:?}", games.len());
    while games.iter().any(|g| !g.over) {
        for g in games.iter_mut().filter(|g| !g.over) {
            audit_step(&a, &b, &watcher, g).await;
        }
    }
    for g in &games {
        // Once over, the whole game is everyone's; OpenSpiel itself says what each seat saw.
        let end = watcher.ok("openspiel_get_state", json!({"game_id": g.id})).await;
        assert!(end["history"].as_array().is_some_and(|h| !h.is_empty()), "{}: {end}", g.game);
        let views = referee(g.game, &end["history_actions"]);
        assert!(!g.shown_to_b.is_empty(), "{}: seat 1 was never shown a view", g.game);
        for v in &g.shown_to_b {
            assert!(views[1].contains(v), "{}: seat 1 was shown {v:?}, which is not a view seat 1 ever had", g.game);
        }
        // Seat 0's views that seat 1 never had appear nowhere seat 1 or the
        // watcher looked, in this game or any other of the process.
        let secrets: Vec<&String> = views[0].iter().filter(|v| v.len() >= 12 && !views[1].contains(v)).collect();
        for s in secrets {
            for other in &games {
                assert!(!other.seen_by_b.contains(s.as_str()), "{}: seat 1 of {} was shown seat 0's {s:?}", g.game, other.game);
                assert!(!other.seen_by_watcher.contains(s.as_str()), "{}: the watcher was shown seat 0's {s:?}", g.game);
            }
        }
    }
}

/// One step of an audited game: what seat 1 and the watcher see, then a move.
async fn audit_step(a: &Client, b: &Client, watcher: &Client, g: &mut Audited) {
    let (game, id) = (g.game, g.id.as_str());
    let sa = a.ok("openspiel_get_state", json!({"game_id": id})).await;
    if sa["game_over"] == true {
        g.over = true;
        return;
    }
    g.steps += 1;
    assert!(g.steps < 3000, "{game}: not over");
    let sb = b.ok("openspiel_get_state", json!({"game_id": id})).await;
    // While it runs, nothing shows the history of a game that hides information.
    assert!(sa["history"].is_null() && sb["history"].is_null(), "{game}: {sa} {sb}");
    let seen = everything_seen(b, id, &mut g.shown_to_b).await;
    g.seen_by_b.push_str(&seen);
    let w = watcher.ok("openspiel_get_state", json!({"game_id": id})).await;
    assert!(w["seat"].is_null() && w["observation"].is_null() && w["history"].is_null(), "{game}: the watcher sees {w}");
    strings_in(&w, &mut g.seen_by_watcher);
    let (mover, turn, who) = match (sa["your_turn"] == true, sb["your_turn"] == true) {
        (true, _) => (a, sa, 0),
        (_, true) => (b, sb, 1),
        _ => {
            a.ok("openspiel_wait_for_turn", json!({"game_id": id})).await;
            return;
        }
    };
    let action = g.agents[who].action(&turn);
    mover.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
}

#[tokio::test]
async fn open_seats_wait_and_moves_out_of_turn_are_refused_with_the_legal_actions() {
    let work = scratch();
    let c = stdio(&["--config", dealt(work.path()).to_str().unwrap()], work.path()).await;
    // Seat 1 open: the creator moves first, then nobody plays the open seat.
    let (id, first) = start(&c, json!({"game": "tic_tac_toe", "opponents": ["agent"], "seed": 3})).await;
    assert_eq!(first["your_turn"], true, "{first}");
    let e = c.err("openspiel_move", json!({"game_id": id, "action": "x(5,5)", "decision": 1})).await;
    assert!(e.contains("x(1,1)") && e.contains("legal"), "{e}");
    c.ok("openspiel_move", json!({"game_id": id, "action": "x(1,1)", "decision": 1})).await;
    let e = c.err("openspiel_move", json!({"game_id": id, "action": "o(0,0)", "decision": 2})).await;
    assert!(e.contains("open"), "the creator may not move for the open seat: {e}");
    // The same move sent again for its number is not made twice.
    let again = c.ok("openspiel_move", json!({"game_id": id, "action": "x(1,1)", "decision": 1})).await;
    assert_eq!(again["decision"], 2, "{again}");
    let state = c.ok("openspiel_get_state", json!({"game_id": id})).await;
    assert_eq!(state["history"].as_array().map(Vec::len), Some(1), "{state}");
    let shown = text(&c.call("openspiel_get_state", json!({"game_id": id})).await);
    assert!(shown.contains("an open seat: the game waits for an agent to join"), "{shown}");

    // Unknown games, parameters and opponents are named.
    let e = c.err("openspiel_start_game", json!({"game": "tictactoe"})).await;
    assert!(e.contains("tictactoe"), "{e}");
    let e = c.err("openspiel_start_game", json!({"game": "go", "parameters": [{"name": "size", "value": "9"}]})).await;
    assert!(e.contains("board_size"), "{e}");
    let e = c.err("openspiel_start_game", json!({"game": "kuhn_poker", "opponents": ["mcts"]})).await;
    assert!(e.contains("hides"), "{e}");
    // A game OpenSpiel has that is not offered says why.
    let e = c.err("openspiel_start_game", json!({"game": "mfg_garnet"})).await;
    assert!(e.contains("left out here: a mean-field game"), "{e}");
    // A game whose chance is its own generator takes its seed from the game, never from a player.
    let e = c.err("openspiel_start_game", json!({"game": "tarok", "parameters": [{"name": "rng_seed", "value": "1"}]})).await;
    assert!(e.contains("rng_seed"), "{e}");
}

#[tokio::test]
async fn the_built_in_opponents_play_their_games() {
    let work = scratch();
    let records_path = work.path().join("records.jsonl");
    let c = stdio(&["--records", records_path.to_str().unwrap(), "--config", dealt(work.path()).to_str().unwrap()], work.path()).await;
    // MCTS at its strongest does not lose tic-tac-toe to a random agent.
    for seed in 0..3 {
        let (id, _) = start(&c, json!({"game": "tic_tac_toe", "opponents": ["mcts/5"], "seed": seed})).await;
        let (end, _) = play_out(&c, &id, &mut Agent(seed), 20).await;
        let r = end["returns"].as_array().unwrap();
        assert!(r[1].as_f64().unwrap() >= 0.0, "mcts/5 lost to random: {end}");
    }
    // The equilibrium plays Kuhn and Leduc poker; a hand of each goes to its
    // end, and each of the agent's moves is scored against it.
    for game in ["kuhn_poker", "leduc_poker"] {
        let (id, turn) = start(&c, json!({"game": game, "opponents": ["cfr"], "seed": 5})).await;
        let mut agent = Agent(5);
        let action = agent.action(&turn);
        let after = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
        let o = after["last_move"]["optimality"].as_f64().unwrap_or_else(|| panic!("{game}: no score for the move: {after}"));
        assert!((0.0..=1.0).contains(&o) && after["last_move"]["best"].as_f64() >= after["last_move"]["value"].as_f64(), "{after}");
        let (_, moves) = play_out(&c, &id, &mut agent, 50).await;
        let rec: Vec<Value> = records(&records_path).into_iter().filter(|r| r["record"] == format!("{id}/1")).collect();
        let scored = rec[0]["figures"]["optimality"].as_array().map_or(0, Vec::len);
        assert_eq!(scored, moves + 1, "{game}: every move of the agent is scored in the record: {:?}", rec[0]);
        assert!(rec[0]["figures"]["optimality_mean"].is_f64(), "{:?}", rec[0]);
    }
    // Four seats: the agent, another agent's open seat taken by a second client, two bots.
    let (id, _) = start(&c, json!({"game": "tiny_bridge_4p", "seat": 2, "opponents": ["random", "agent", "random"], "seed": 9})).await;
    let s = c.ok("openspiel_get_state", json!({"game_id": id})).await;
    let holders: Vec<&str> = s["seats"].as_array().unwrap().iter().map(|h| h["holder"].as_str().unwrap()).collect();
    assert_eq!(holders, ["random", "open", "you", "random"], "{s}");
    c.ok("openspiel_join_game", json!({"game_id": id, "join_code": join_code(&c, &id).await})).await;
    play_out(&c, &id, &mut Agent(9), 200).await;
    let rec: Vec<Value> = records(&records_path).into_iter().filter(|r| r["record"] == format!("{id}/1")).collect();
    let players: Vec<&str> = rec[0]["seats"].as_array().unwrap().iter().map(|s| s["player"].as_str().unwrap()).collect();
    assert_eq!(players, ["openspiel-random", "stdio", "stdio", "openspiel-random"], "{:?}", rec[0]);
}

#[tokio::test]
async fn a_killed_bridge_is_started_again_and_a_finished_game_leaves_none() {
    let work = scratch();
    let c = stdio(&["--config", dealt(work.path()).to_str().unwrap()], work.path()).await;
    let bridges = || pids_with(&format!("{}/cache/sidecars/openspiel/openspiel_bridge.py", work.path().display()));
    let (id, turn) = start(&c, json!({"game": "connect_four", "seed": 11})).await;
    let turn = c.ok("openspiel_move", json!({"game_id": id, "action": "x0", "decision": turn["decision"]})).await;
    let before = turn["history_actions"].as_array().unwrap().len();
    let running = bridges();
    assert_eq!(running.len(), 1, "{running:?}");
    for pid in running {
        std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    }
    // The next move starts a new bridge, which rebuilds the game from its
    // history; a move sent while the old one died is refused, made nowhere.
    let mut after = None;
    for _ in 0..3 {
        let r = c.call("openspiel_move", json!({"game_id": id, "action": "x1", "decision": turn["decision"]})).await;
        if r.is_error != Some(true) {
            after = r.structured_content;
            break;
        }
        assert!(text(&r).contains("stopped"), "{}", text(&r));
    }
    let after = after.expect("the move after the kill was made");
    assert_eq!(after["history_actions"].as_array().unwrap().len(), before + 2, "{after}");
    assert_eq!(after["history_actions"].as_array().unwrap()[..before], turn["history_actions"].as_array().unwrap()[..], "{after}");
    // Played to its end: its bridge is killed as the game ends (and gone
    // once the system has reaped it).
    play_out(&c, &id, &mut Agent(3), 40).await;
    let left = still_living(bridges).await;
    assert!(left.is_empty(), "a finished game's bridge lingers: {left:?}");
}

#[tokio::test]
async fn the_random_policy_plays_a_legal_action_for_a_refused_move_and_verify_draws_it_again() {
    let work = scratch();
    let records_path = work.path().join("records.jsonl");
    let cfg = config(work.path(), "whole_seeds = true\nillegal_moves = { attempts = 1, then = \"random\" }");
    let c = stdio(&["--records", records_path.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let (id, turn) = start(&c, json!({"game": "connect_four", "seed": 4})).await;
    let r = c.call("openspiel_move", json!({"game_id": id, "action": "x9", "decision": turn["decision"]})).await;
    assert_ne!(r.is_error, Some(true), "the policy plays instead: {}", text(&r));
    assert!(text(&r).contains("illegal-move policy"), "{}", text(&r));
    let after = r.structured_content.unwrap();
    assert_eq!(after["history_actions"].as_array().unwrap().len(), 2, "one move each: {after}");
    play_out(&c, &id, &mut Agent(4), 40).await;
    let rec: Vec<Value> = records(&records_path).into_iter().filter(|r| r["record"] == format!("{id}/1")).collect();
    assert_eq!(rec[0]["illegal_move_policy"]["fired"], 1, "{:?}", rec[0]);
    let (code, printed) = verify(&[&records_path], &cfg);
    assert_eq!(code, Some(0), "{printed}");
}

/// The bridge processes of the server whose work directory is `work`.
fn bridges_of(work: &Path) -> Vec<u32> {
    pids_with(&format!("{}/cache/sidecars/openspiel/openspiel_bridge.py", work.display()))
}

/// One caller's hundred games under the default limits: they share a
/// bridge process per core (not one each, which the process budget of 8
/// a caller would refuse), and the processes end with the games.
#[tokio::test]
async fn a_hundred_games_of_one_caller_share_a_bridge_per_core() {
    let work = scratch();
    let c = stdio(&["--config", dealt(work.path()).to_str().unwrap()], work.path()).await;
    let mut games = Vec::new();
    for seed in 0..100 {
        let (id, turn) = start(&c, json!({"game": "connect_four", "seed": seed})).await;
        let legal = turn["legal_actions"].as_array().unwrap();
        let action = legal[seed as usize % legal.len()]["text"].clone();
        let after = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
        assert_eq!(after["history_actions"].as_array().unwrap().len(), 2, "the move and the reply: {after}");
        games.push(id);
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let running = bridges_of(work.path());
    assert!(!running.is_empty() && running.len() <= cores, "100 games in {} processes on {cores} cores: {running:?}", running.len());
    for id in &games {
        c.ok("openspiel_forfeit", json!({"game_id": id})).await;
    }
    let left = still_living(|| bridges_of(work.path())).await;
    assert!(left.is_empty(), "finished games' shared bridges linger: {left:?}");
}

/// A kill -9 of the one shared process that holds fifty games: the calls
/// in flight fail with nothing made, every game rebuilds on its next call
/// and plays to its end with no acknowledged move lost or doubled, and every
/// record verifies.
#[tokio::test]
async fn a_killed_shared_bridge_costs_nothing_acknowledged_and_every_record_verifies() {
    let work = scratch();
    let records_path = work.path().join("records.jsonl");
    let cfg = config(work.path(), "whole_seeds = true\n[engines]\nshards = 1");
    let c = stdio(&["--records", records_path.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let names = ["connect_four", "kuhn_poker", "tic_tac_toe", "leduc_poker"];
    let mut games = Vec::new();
    for k in 0..50 {
        let (id, turn) = start(&c, json!({"game": names[k % names.len()], "seed": 40 + k})).await;
        let mut agent = Agent(k as u64);
        let action = agent.action(&turn);
        let after = c.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
        games.push((id, agent, after));
    }
    let running = bridges_of(work.path());
    assert_eq!(running.len(), 1, "fifty games, one shared process: {running:?}");
    std::process::Command::new("kill").args(["-9", &running[0].to_string()]).status().unwrap();
    for (id, agent, before) in &mut games {
        let state = c.ok("openspiel_get_state", json!({"game_id": id})).await;
        assert_eq!(state["history_actions"], before["history_actions"], "{id}: the game is as its last answer left it");
        let mut turn = before.clone();
        let mut moved = false;
        for _ in 0..3 {
            if turn["game_over"] == true || turn["your_turn"] != true {
                break;
            }
            let action = agent.action(&turn);
            let r = c.call("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
            if r.is_error != Some(true) {
                let after = r.structured_content.unwrap();
                // Where the history is shown (games that hide nothing), it extends
                // the one before; elsewhere the move is the next decision.
                match (before["history_actions"].as_array(), after["history_actions"].as_array()) {
                    (Some(old), Some(new)) => {
                        assert!(
                            new.len() > old.len() && new[..old.len()] == old[..],
                            "{id}: the history after the kill extends the one before"
                        )
                    }
                    _ => assert!(after["game_over"] == true || after["decision"].as_u64() > turn["decision"].as_u64(), "{id}: {after}"),
                }
                moved = true;
                break;
            }
            assert!(text(&r).contains("stopped") && text(&r).contains("call again"), "{}", text(&r));
            turn = c.ok("openspiel_get_state", json!({"game_id": id})).await;
        }
        assert!(moved || turn["game_over"] == true, "{id}: no move was made after the kill");
        play_out(&c, id, agent, 3000).await;
    }
    drop(c);
    let (code, printed) = verify(&[&records_path], &cfg);
    assert_eq!(code, Some(0), "every record verifies after the kill: {printed}");
}

/// In one shared bridge, a game whose opponent thinks for seconds (MCTS at
/// its strongest on 9×9 go) and a game the engine refuses cost only
/// themselves: five tic-tac-toe games of the same process play their moves
/// while the go move is still being searched.
#[tokio::test]
async fn a_slow_or_failing_game_holds_up_only_itself_in_a_shared_bridge() {
    let work = scratch();
    let cfg = config(work.path(), "whole_seeds = true\n[engines]\nshards = 1");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (slow, quick) = (http_client(&server).await, http_client(&server).await);
    let go = json!([{"name": "board_size", "value": "9"}]);
    let (go_id, go_turn) = start(&slow, json!({"game": "go", "parameters": go, "opponents": ["mcts/5"], "seed": 1})).await;
    let mut games = Vec::new();
    for seed in 0..5 {
        games.push(start(&quick, json!({"game": "tic_tac_toe", "seed": seed})).await);
    }
    assert_eq!(bridges_of(work.path()).len(), 1, "one shared process");
    let thinking = tokio::spawn(async move {
        slow.ok("openspiel_move", json!({"game_id": go_id, "action": "B e5", "decision": go_turn["decision"]})).await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // An engine refusal in the same process: that game's start fails, alone.
    let e = quick.err("openspiel_start_game", json!({"game": "kuhn_poker", "parameters": [{"name": "players", "value": "1"}]})).await;
    assert!(e.contains("OpenSpiel cannot load kuhn_poker"), "{e}");
    for (id, turn) in &games {
        let mut agent = Agent(7);
        let action = agent.action(turn);
        let after = quick.ok("openspiel_move", json!({"game_id": id, "action": action, "decision": turn["decision"]})).await;
        assert_eq!(after["history_actions"].as_array().unwrap().len(), 2, "{after}");
    }
    assert!(!thinking.is_finished(), "the go move was searched before the tic-tac-toe moves were made: no contention shown");
    let after = thinking.await.unwrap();
    assert_eq!(after["history_actions"].as_array().unwrap().len(), 2, "the slow move was made, and answered: {after}");
}

//! Pokémon Showdown battles through the real server binary and the real
//! `pokemon-showdown@0.11.11` from npm: offline battles against the bots
//! through a `simulate-battle` sidecar, and battles between two MCP sessions
//! on a local Showdown server (challenge and ladder).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::showdown::*;
use common::*;
use serde_json::{Value, json};

/// A battle played out: the winner, the actions taken, and the engine's
/// evaluation of each (without its timing).
struct Played {
    winner: String,
    actions: Vec<String>,
    /// Moves the simulator refused in their own answer (a trap the request
    /// did not show): sent, but not among `actions`.
    refused: usize,
    evaluations: Vec<Value>,
    /// The slowest evaluation, in milliseconds (printed, never asserted).
    slowest_ms: f64,
}

/// Plays a battle to its end with a fixed policy (the k-th legal action on
/// turn k), checking each move's evaluation against the legal actions.
async fn play_out(c: &Client, id: &str) -> Played {
    let (mut taken, mut refused) = (Vec::new(), 0);
    let mut evaluations = Vec::new();
    let mut slowest_ms: f64 = 0.0;
    for step in 0..600 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            let winner = s["winner"].as_str().unwrap_or("tie").to_string();
            // The result reads once, and a Pokémon knocked out by the last hit shows 0 HP.
            let said = s["text"].as_str().unwrap_or_default();
            assert!(!said.contains("you won!"), "{said}");
            for mon in s["your_team"].as_array().unwrap().iter().filter(|m| m["fainted"] == true) {
                assert!(mon["hp"].is_null() || mon["hp"] == 0, "a fainted Pokémon with HP left: {mon}");
                assert_eq!(mon["hp_percent"], 0, "{mon}");
            }
            return Played { winner, actions: taken, refused, evaluations, slowest_ms };
        }
        assert_eq!(s["status"], "active", "{s}");
        let actions = s["available_actions"].as_array().unwrap().clone();
        if actions.is_empty() {
            continue;
        }
        let action = actions[step % actions.len()].as_str().unwrap().to_string();
        let r = c.call("showdown_make_move", json!({"battle_id": id, "action": action, "reasoning": "test policy"})).await;
        // A trap the request did not show refuses a switch (the simulator's
        // "[Unavailable choice]"): the agent chooses again from what is left.
        if r.is_error == Some(true) && text(&r).contains("[Unavailable choice]") {
            refused += 1;
            continue;
        }
        if r.is_error == Some(true) {
            let log = log_of(c, id).await;
            let tail: Vec<&str> = log.lines().rev().take(25).collect();
            panic!("{action}: {}\nstate: {s}\nlog tail (newest first): {tail:#?}", text(&r));
        }
        let mut r = r.structured_content.unwrap();
        assert_eq!(r["action"], action);
        if let Some(e) = r["evaluation"].as_object_mut() {
            check_evaluation(e, &action, &actions);
            slowest_ms = slowest_ms.max(e.remove("millis").and_then(|m| m.as_f64()).unwrap_or(0.0));
        }
        evaluations.push(r["evaluation"].clone());
        taken.push(action);
    }
    panic!("battle {id} did not end in 600 decisions");
}

/// An evaluation scores exactly the legal actions and rates the chosen one consistently.
fn check_evaluation(e: &serde_json::Map<String, Value>, action: &str, legal: &[Value]) {
    let scored: Vec<&str> = e["scores"].as_array().unwrap().iter().map(|s| s["action"].as_str().unwrap()).collect();
    let legal: Vec<&str> = legal.iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(scored, legal, "{e:?}");
    let optimality = e["optimality"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&optimality), "{e:?}");
    assert!(e["regret"].as_f64().unwrap() >= 0.0, "{e:?}");
    assert!(legal.contains(&e["best_action"].as_str().unwrap()), "{e:?}");
    if e["best_action"] == action {
        assert_eq!((optimality, e["regret"].as_f64().unwrap()), (1.0, 0.0), "{e:?}");
    }
    let rank = e["rank"].as_u64().unwrap() as usize;
    assert!((1..=legal.len()).contains(&rank), "{e:?}");
}

/// The battle's result record says what the battle said: its winner, from
/// the creator's side, and the optimality of each scored decision in order.
fn check_record(records: &Path, id: &str, played: &Played) {
    // Written as the event that ended the battle settles, which a read of
    // the battle may see finished a moment before: waited for a while.
    let (mut text, mut mine) = (String::new(), Vec::new());
    for _ in 0..50 {
        text = std::fs::read_to_string(records).unwrap_or_default();
        mine = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["record"] == format!("{id}/1")).collect();
        if !mine.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(mine.len(), 1, "the record of {id} in: {text}");
    let r = &mine[0];
    let f = &r["figures"];
    assert_eq!((&r["game"], &r["parameters"]["format"]), (&json!("showdown"), &json!("gen9randombattle")), "{r}");
    match played.winner.as_str() {
        "tie" => assert_eq!(r["outcome"], "draw", "{r}"),
        w => {
            assert_eq!(f["winner"], w, "{r}");
            let won = r["outcome"] == "won";
            assert!(won || r["outcome"] == "lost", "{r}");
            assert_eq!(won, w == "You", "the agent plays as You, the bot is the other side: {r}");
        }
    }
    // A move the simulator refused (a trap the request did not show) counts
    // as illegal, not as a move: one refused after it was answered is among
    // the actions taken, one refused in its own answer is not.
    let sent = r["moves"].as_u64().unwrap() + r["illegal_moves"].as_u64().unwrap();
    assert_eq!(sent as usize, played.actions.len() + played.refused, "{r}");
    assert!(f["turns"].as_u64().unwrap() > 0, "{r}");
    // Each move is scored as it is sent, a refused one too: the record holds
    // the scores the agent saw, in order, and at most one more for each move
    // refused in its own answer (whose score the agent never saw).
    let scored: Vec<f64> = played.evaluations.iter().filter_map(|e| e["optimality"].as_f64()).collect();
    let recorded: Vec<f64> = f["optimality"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let mut seen = scored.iter().peekable();
    let unseen = recorded.iter().filter(|x| seen.next_if(|s| (*x - *s).abs() < 1e-3).is_none()).count();
    assert!(seen.next().is_none() && unseen <= played.refused, "{recorded:?} vs {scored:?} ({} refused)", played.refused);
    let mean = recorded.iter().sum::<f64>() / recorded.len() as f64;
    assert!((f["optimality_mean"].as_f64().unwrap() - mean).abs() < 1e-3, "{r}");
}

/// The seed and secret a finished battle publishes (`ludus_sessions`).
async fn seed_and_secret(c: &Client, id: &str) -> (u64, u64) {
    let sessions = c.ok("ludus_sessions", json!({})).await;
    let s = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("{id}: {sessions}"));
    (s["seed"].as_u64().unwrap_or_else(|| panic!("{s}")), s["secret"].as_u64().unwrap_or_else(|| panic!("{s}")))
}

async fn log_of(c: &Client, id: &str) -> String {
    c.read_resource(&format!("showdown://battle/{id}/log")).await.unwrap().0
}

#[tokio::test]
async fn offline_battles_against_both_bots_end_and_replay_identically() {
    let (_work, c) = sim_client().await;

    for bot in ["random", "heuristic", "search"] {
        let first = offline(&c, bot, 20261121).await;
        assert!(first.starts_with("battle-gen9randombattle-offline-"), "{first}");
        let one = play_out(&c, &first).await;
        let log = log_of(&c, &first).await;
        assert!(log.contains("|win|") && log.contains("|turn|"), "{bot}: {log}");
        let scored = one.evaluations.iter().filter(|e| !e.is_null()).count();
        assert!(scored * 10 >= one.actions.len() * 9, "{bot}: only {scored} of {} moves scored", one.actions.len());

        // Over, the battle publishes its secret: with the seed, it replays
        // line for line, with the same scores.
        let (seed, secret) = seed_and_secret(&c, &first).await;
        assert_eq!(seed, 20261121);
        let again = c.ok("showdown_start_offline_battle", json!({"bot": bot, "seed": seed, "secret": secret})).await;
        let again = again["battle_id"].as_str().unwrap().to_string();
        let two = play_out(&c, &again).await;
        assert_eq!((&one.winner, &one.actions), (&two.winner, &two.actions), "{bot}");
        assert_eq!(log, log_of(&c, &again).await, "{bot}: the replay differs");
        assert_eq!(one.evaluations, two.evaluations, "{bot}: the evaluations differ");
        eprintln!("{bot} bot: {} decisions ({scored} scored, slowest {} ms), winner {}", one.actions.len(), one.slowest_ms, one.winner);
        if bot == "search" {
            eprintln!("an evaluation: {}", one.evaluations.iter().find(|e| !e.is_null()).unwrap());
        }
        check_record(&_work.path().join(RECORDS), &first, &one);
    }

    // A different seed gives a different battle.
    let other = offline(&c, "random", 7).await;
    let s = c.ok("showdown_get_battle_state", json!({"battle_id": other})).await;
    assert_eq!(s["your_team"].as_array().unwrap().len(), 6, "{s}");
    c.close().await;
}

#[tokio::test]
async fn bad_actions_forfeit_and_a_killed_simulator() {
    let (work, c) = sim_client().await;

    let id = offline(&c, "heuristic", 5).await;
    let avail = c.ok("showdown_get_available_actions", json!({"battle_id": id})).await;
    let actions: Vec<String> = avail["actions"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap().to_string()).collect();
    assert!(!actions.is_empty() && actions.iter().any(|a| a.starts_with("switch ")), "{avail}");

    // Anything that is not a legal action is refused with the legal list; nothing reaches the simulator.
    for bad in ["hyperbeam9000", "move 1\n>eval process.exit(1)", ">forcewin p1", ""] {
        let e = c.err("showdown_make_move", json!({"battle_id": id, "action": bad})).await;
        assert!(e.contains("not a legal action") && e.contains(&actions[0]), "{bad:?}: {e}");
    }
    let e = c.err("showdown_make_move", json!({"battle_id": id})).await;
    assert!(e.contains("action"), "{e}");
    let e = c.err("showdown_make_move", json!({"battle_id": "battle-nope", "action": "x"})).await;
    assert!(e.contains("unknown"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9ou"})).await;
    assert!(e.contains("needs your team"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "x\"}\n>eval 1"})).await;
    assert!(e.contains("not a Showdown format id"), "{e}");
    let e = c.err("showdown_get_pokemon_details", json!({"battle_id": id, "pokemon_name": "Missingno"})).await;
    assert!(e.contains("no Pokémon"), "{e}");

    // Details of our active Pokémon and of the opponent's.
    let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
    let mine = s["your_team"].as_array().unwrap().iter().find(|p| p["active"] == true).unwrap()["name"].clone();
    let d = c.ok("showdown_get_pokemon_details", json!({"battle_id": id, "pokemon_name": mine})).await;
    assert_eq!(d["stats"].as_array().unwrap().len(), 5, "{d}");
    let theirs = s["opponent_team"][0]["species"].clone();
    let d = c.ok("showdown_get_pokemon_details", json!({"battle_id": id, "pokemon_name": theirs, "opponent": true})).await;
    assert!(d["stats"].as_array().unwrap().is_empty() && !d["types"].as_array().unwrap().is_empty(), "{d}");

    // Forfeit ends the battle; the bot wins.
    let f = c.ok("showdown_forfeit_battle", json!({"battle_id": id})).await;
    assert_eq!(f["status"], "finished", "{f}");
    assert_eq!(f["winner"], "Heuristic Bot", "{f}");

    // The simulator killed mid-battle: a new one plays the battle again from
    // its seeds and the choices made, and the battle goes on to its end.
    let id = offline(&c, "random", 6).await;
    let before = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
    // The forfeited battle's simulator is gone, so this battle's is the
    // server's one node child (no one is shown process ids).
    let servers = pids_with(&format!("{}/ludus.toml", work.path().display()));
    let sims: Vec<u32> = servers.iter().flat_map(|&s| children_named(s, "node")).collect();
    assert_eq!(sims.len(), 1, "{sims:?}");
    let pid = sims[0];
    assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
    let start = Instant::now();
    loop {
        let now: Vec<u32> = servers.iter().flat_map(|&s| children_named(s, "node")).collect();
        if !now.is_empty() && !now.contains(&pid) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no new simulator after the kill: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
    assert_eq!(after["your_team"], before["your_team"], "the rebuilt battle is the same battle: {after}");
    let played = play_out(&c, &id).await;
    assert!(
        !played.winner.is_empty() && log_of(&c, &id).await.contains("|win|"),
        "the rebuilt battle plays to its end: {:?}",
        played.actions
    );
    // Its record verifies: the replay ends the simulator where the record's ended.
    let (code, printed) = verify(&[&work.path().join(RECORDS)], &work.path().join("ludus.toml"));
    assert_eq!(code, Some(0), "{printed}");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    offline(&c, "random", 8).await;
    c.close().await;
}

/// One agent's loop: wait for our turn, take the first legal action, until
/// the end; each move on the server is scored like an offline one (a
/// replacement chosen while the opponent's field is empty too), except
/// where the answer names the limit the guide states: Revival Blessing.
async fn play_agent(c: &Client, id: &str) -> Value {
    let (mut moves, mut scored) = (0, 0);
    for _ in 0..800 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            eprintln!("{id}: {scored} of {moves} moves scored");
            return s;
        }
        assert_eq!(s["status"], "active", "{s}");
        let legal = s["available_actions"].as_array().unwrap().clone();
        let Some(action) = legal.first().and_then(Value::as_str) else { continue };
        let answer = c.call("showdown_make_move", json!({"battle_id": id, "action": action})).await;
        assert_ne!(answer.is_error, Some(true), "{action}: {}", text(&answer));
        let r = answer.structured_content.clone().unwrap();
        moves += 1;
        if let Some(e) = r["evaluation"].as_object() {
            check_evaluation(e, action, &legal);
            scored += 1;
        } else {
            let why = text(&answer);
            assert!(why.contains("not scored: Revival Blessing is not modelled"), "an unscored move: {why}");
        }
    }
    panic!("battle {id} did not end");
}

#[tokio::test]
async fn two_sessions_battle_on_a_local_server_by_challenge_and_on_the_ladder() {
    let package = showdown_package();
    let server = local_server(&package, "");
    let work = scratch();
    let extra = format!("[plugins.showdown.channels.server]\nwebsocket = \"ws://127.0.0.1:{}/showdown/websocket\"\n", server.port);
    let cfg = config(work.path(), &extra);
    let ludus = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (http_client(&ludus).await, http_client(&ludus).await);
    let tag = std::process::id() % 100_000;
    let (alice, bob) = (format!("Alice{tag}"), format!("Bob{tag}"));

    // A challenge each way: one accepts the other's, and both are in one battle.
    let (ra, rb) = tokio::join!(
        a.ok("showdown_challenge_user", json!({"opponent": bob, "username": alice})),
        b.ok("showdown_challenge_user", json!({"opponent": alice, "username": bob}))
    );
    assert_eq!((ra["status"].as_str(), rb["status"].as_str()), (Some("active"), Some("active")), "{ra}\n{rb}");
    let (ia, ib) = (ra["battle_id"].as_str().unwrap().to_string(), rb["battle_id"].as_str().unwrap().to_string());
    assert!(ia.starts_with("battle-gen9randombattle-"), "the real battle tag: {ia}");
    assert_eq!(ia.split(':').next(), ib.split(':').next(), "one battle, one tag: {ia} vs {ib}");

    // Out of turn and illegal actions, on the real server.
    let sa = a.ok("showdown_get_battle_state", json!({"battle_id": ia})).await;
    let first = sa["available_actions"][0].as_str().unwrap().to_string();
    let e = a.err("showdown_make_move", json!({"battle_id": ia, "action": "splash-of-doom"})).await;
    assert!(e.contains("not a legal action"), "{e}");

    let (fa, fb) = tokio::join!(play_agent(&a, &ia), play_agent(&b, &ib));
    assert!(fa["winner"].is_string() || fa["text"].as_str().unwrap().contains("tie"), "{fa}");
    assert_eq!(fa["winner"], fb["winner"]);
    eprintln!("challenge battle {ia}: {} turns, winner {}", fa["turn"], fa["winner"]);
    let e = a.ok("showdown_make_move", json!({"battle_id": ia, "action": first})).await;
    assert_eq!(e["status"], "finished");

    // The ladder matches two searching sessions.
    let (la, lb) = tokio::join!(
        a.ok("showdown_initiate_battle", json!({"username": format!("Carol{tag}")})),
        b.ok("showdown_initiate_battle", json!({"username": format!("Dave{tag}")}))
    );
    assert_eq!((la["status"].as_str(), lb["status"].as_str()), (Some("active"), Some("active")), "{la}\n{lb}");
    assert_eq!(la["opponent"], format!("Dave{tag}"), "{la}");
    let (ia, ib) = (la["battle_id"].as_str().unwrap().to_string(), lb["battle_id"].as_str().unwrap().to_string());
    // One side forfeits; both see the end.
    let f = a.ok("showdown_forfeit_battle", json!({"battle_id": ia})).await;
    assert_eq!(f["status"], "finished", "{f}");
    // The forfeit reaches the other side through the server: a moment later.
    let t = Instant::now();
    let mut sb = b.ok("showdown_get_battle_state", json!({"battle_id": ib})).await;
    while sb["status"] != "finished" && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        sb = b.ok("showdown_get_battle_state", json!({"battle_id": ib})).await;
    }
    assert_eq!(sb["winner"], format!("Dave{tag}"), "{sb}");

    // A finished battle let go of its connection: the same names play again
    // at once (the server would refuse a name still connected elsewhere).
    let (la, lb) = tokio::join!(
        a.ok("showdown_initiate_battle", json!({"username": format!("Carol{tag}")})),
        b.ok("showdown_initiate_battle", json!({"username": format!("Dave{tag}")}))
    );
    assert_eq!((la["status"].as_str(), lb["status"].as_str()), (Some("active"), Some("active")), "names reused:\n{la}\n{lb}");
    assert_ne!(la["battle_id"].as_str(), Some(ia.as_str()), "a new battle: {la}");
    let f = a.ok("showdown_forfeit_battle", json!({"battle_id": la["battle_id"]})).await;
    assert_eq!(f["status"], "finished", "{f}");
    drop(server);
}

/// The stand-in login server (`tests/fixtures/login-server.js`): its public
/// key, its port, and the requests it received.
struct LoginServer {
    _child: Killed,
    key_base64: String,
    port: u16,
    requests: std::sync::Arc<Mutex<Vec<Value>>>,
}

fn login_server(accounts: Value) -> LoginServer {
    use std::io::BufRead;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/login-server.js");
    let mut child = Command::new("node")
        .arg(script)
        .arg(accounts.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting node");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("the login server stopped").unwrap();
    let key_base64 = next().strip_prefix("key ").expect("key line").to_string();
    let port = next().strip_prefix("port ").expect("port line").parse().unwrap();
    let requests = std::sync::Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            seen.lock().unwrap().push(serde_json::from_str(&line).unwrap());
        }
    });
    LoginServer { _child: Killed(child), key_base64, port, requests }
}

#[tokio::test]
async fn accounts_log_in_through_the_login_server_and_the_server_checks_the_signature() {
    let package = showdown_package();
    let login = login_server(json!({"ludustester": "hunter2", "takenname": "secret"}));
    // The real server verifies assertions against the stand-in's key.
    let server =
        local_server(&package, &format!("exports.loginserverpublickey = Buffer.from('{}', 'base64').toString();", login.key_base64));
    let work = scratch();
    let extra = format!(
        "[plugins.showdown]\nenv = {{ SHOWDOWN_USERNAME = \"Ludus Tester\", SHOWDOWN_PASSWORD = \"hunter2\" }}\n\
         [plugins.showdown.channels.server]\nwebsocket = \"ws://127.0.0.1:{}/showdown/websocket\"\n\
         [plugins.showdown.channels.login]\nhttp = \"http://127.0.0.1:{}\"\n",
        server.port, login.port
    );
    let cfg = config(work.path(), &extra);
    let ludus = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b, c) = (http_client(&ludus).await, http_client(&ludus).await, http_client(&ludus).await);
    let guest = format!("Rookie{}", std::process::id() % 100_000);

    // The operator's account signs in with its password; another name gets a guest assertion.
    let (la, lb) = tokio::join!(a.ok("showdown_initiate_battle", json!({})), b.ok("showdown_initiate_battle", json!({"username": guest})));
    let seen = login.requests.lock().unwrap().clone();
    assert_eq!((la["status"].as_str(), lb["status"].as_str()), (Some("active"), Some("active")), "{la}\n{lb}\n{seen:?}");
    assert_eq!((la["username"].as_str(), la["opponent"].as_str()), (Some("Ludus Tester"), Some(guest.as_str())), "{la}");
    assert_eq!(lb["opponent"], "Ludus Tester", "{lb}");

    let requests = login.requests.lock().unwrap().clone();
    let by_path = |p: &str| requests.iter().find(|r| r["path"] == p).cloned().unwrap_or_else(|| panic!("no {p} in {requests:?}"));
    let signed_in = by_path("/api/login");
    assert_eq!(signed_in["contentType"], "application/x-www-form-urlencoded");
    assert_eq!((signed_in["form"]["name"].as_str(), signed_in["form"]["pass"].as_str()), (Some("Ludus Tester"), Some("hunter2")));
    assert!(signed_in["form"]["challstr"].as_str().unwrap().contains('|'), "{signed_in}");
    let guest_login = by_path("/action.php");
    assert_eq!(guest_login["form"]["userid"], guest.to_lowercase());
    assert!(guest_login["form"].get("pass").is_none(), "no password leaves for another name: {guest_login}");

    // A registered name without its password is refused with the login server's reason.
    let e = c.err("showdown_initiate_battle", json!({"username": "Taken Name"})).await;
    assert!(e.contains("logging in as Taken Name failed") && e.contains("registered"), "{e}");
    let e = c.err("showdown_initiate_battle", json!({"username": "Guest 7"})).await;
    assert!(e.contains("reserved"), "{e}");

    let f = a.ok("showdown_forfeit_battle", json!({"battle_id": la["battle_id"]})).await;
    assert_eq!(f["status"], "finished", "{f}");
    drop(server);
}

/// Out of the box: no config and an empty cache. The first offline battles
/// install the simulator with npm once (a second battle started with the
/// first waits for the same install), telling waiting clients what goes on
/// in progress notifications, then a battle against each bot plays to its end.
#[tokio::test]
async fn offline_battles_work_out_of_the_box_with_one_install() {
    let work = scratch();
    let xdg = work.path().join("xdg-cache");
    let mut c = stdio_env(&[], work.path(), &[("XDG_CACHE_HOME", xdg.to_str().unwrap())]).await;
    let start =
        |bot: &'static str, seed: u64| c.call_with_progress("showdown_start_offline_battle", json!({"bot": bot, "seed": seed}), bot);
    let (a, b) = tokio::join!(start("random", 1), start("heuristic", 2));
    let mut said = Vec::new();
    while let Ok(p) = c.progress.try_recv() {
        said.push(p.message.unwrap_or_default());
    }
    assert!(
        said.iter().any(|m| m.contains("installing pokemon-showdown@0.11.11")),
        "no progress notification told the waiting client about the install: {said:?}"
    );
    let mut ids = Vec::new();
    for r in [a, b] {
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        ids.push(r.structured_content.unwrap()["battle_id"].as_str().unwrap().to_string());
    }
    // Under load the install may outlast the starting calls' wait: the battles start once it is done.
    for id in &ids {
        let t = Instant::now();
        while c.ok("showdown_get_battle_state", json!({"battle_id": id})).await["status"] != "active" {
            assert!(t.elapsed() < Duration::from_secs(180), "battle {id} never started");
        }
    }
    let installs =
        std::fs::read_to_string(xdg.join("ludus/showdown-sim/installs.log")).expect("the simulator was installed into the cache");
    assert_eq!(installs.lines().count(), 1, "two battles installed twice: {installs}");
    ids.push(offline(&c, "search", 3).await);
    for id in &ids {
        let played = play_out(&c, id).await;
        assert!(!played.actions.is_empty(), "{id}");
    }
    c.close().await;
}

/// An install killed half-way (npm had written the package's package.json,
/// not the rest; its lock file left behind by a process that is gone) is
/// noticed by the next battle, which installs again and plays.
#[tokio::test]
async fn a_half_finished_install_is_noticed_and_repeated() {
    let work = scratch();
    let xdg = work.path().join("xdg-cache");
    let dir = xdg.join("ludus/showdown-sim");
    let package = dir.join("node_modules/pokemon-showdown");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("package.json"), format!(r#"{{"name":"pokemon-showdown","version":"{PS_VERSION}"}}"#)).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    std::fs::write(dir.join(".install.lock"), gone.id().to_string()).unwrap();

    let c = stdio_env(&[], work.path(), &[("XDG_CACHE_HOME", xdg.to_str().unwrap())]).await;
    let r = c.call("showdown_start_offline_battle", json!({"bot": "random", "seed": 5})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let id = r.structured_content.unwrap()["battle_id"].as_str().unwrap().to_string();
    // The dead installer's lock would hold a waiting launcher for ten minutes.
    let t = Instant::now();
    while c.ok("showdown_get_battle_state", json!({"battle_id": id})).await["status"] != "active" {
        assert!(t.elapsed() < Duration::from_secs(120), "battle {id} never started");
    }
    let installs = std::fs::read_to_string(dir.join("installs.log")).expect("the simulator was installed again");
    assert_eq!(installs.lines().count(), 1, "{installs}");
    let played = play_out(&c, &id).await;
    assert!(!played.actions.is_empty());
    c.close().await;
}

/// Without Node.js, without npm, or turned off by the operator: each says
/// exactly that and what to do, and the other games go on.
#[tokio::test]
async fn a_missing_node_or_npm_and_a_disabled_simulator_are_named() {
    let work = scratch();
    let empty = work.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let c = stdio_env(&[], work.path(), &[("PATH", empty.to_str().unwrap())]).await;
    let e = c.err("showdown_start_offline_battle", json!({})).await;
    assert!(e.contains("Node.js 18 or newer") && e.contains("apt-get install nodejs npm"), "{e}");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    c.close().await;

    // Node but no npm, and nothing installed yet: the launcher's reason reaches the agent.
    let node_only = work.path().join("node-only");
    std::fs::create_dir_all(&node_only).unwrap();
    let node = String::from_utf8(Command::new("sh").args(["-c", "command -v node"]).output().unwrap().stdout).unwrap();
    std::os::unix::fs::symlink(node.trim(), node_only.join("node")).unwrap();
    let xdg = work.path().join("xdg-cache");
    let c = stdio_env(&[], work.path(), &[("PATH", node_only.to_str().unwrap()), ("XDG_CACHE_HOME", xdg.to_str().unwrap())]).await;
    let e = c.err("showdown_start_offline_battle", json!({})).await;
    assert!(e.contains("npm is not installed") && e.contains("apt-get install npm"), "{e}");
    c.close().await;

    let cfg = config(work.path(), "[plugins.showdown.channels.sim]\ndisabled = true\n");
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let e = c.err("showdown_start_offline_battle", json!({})).await;
    assert!(e.contains("turned off by the operator"), "{e}");
    c.close().await;
}

/// The bot's team is hidden information: the agent learns an opposing
/// Pokémon only when it is revealed in battle, through any tool or the log,
/// and a random seed (with which the battle could be replayed, the bot's
/// team included) is shown to no one while the battle runs.
#[tokio::test]
async fn the_bots_team_and_a_random_seed_stay_hidden() {
    let (_work, c) = sim_client().await;
    let started = c.ok("showdown_start_offline_battle", json!({"bot": "heuristic"})).await;
    assert!(started.get("seed").is_none_or(Value::is_null), "a random seed was shown: {started}");
    let id = started["battle_id"].as_str().unwrap().to_string();
    let sessions = c.ok("ludus_sessions", json!({})).await;
    assert!(sessions["sessions"][0].get("seed").is_none(), "{sessions}");
    // Against a bot no seat is open: no join code, and the bot is named in the seats.
    assert!(sessions["sessions"][0].get("join_code").is_none(), "{sessions}");
    assert_eq!(sessions["sessions"][0]["seats"][1]["player"], "showdown-bot/heuristic", "{sessions}");
    for step in 0..12 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            break;
        }
        let log = log_of(&c, &id).await;
        assert!(!log.contains("|request|") && !log.contains("|split|p2"), "the bot's private lines reached the log");
        let revealed: Vec<&str> = log
            .lines()
            .filter(|l| ["|switch|p2a: ", "|drag|p2a: ", "|replace|p2a: "].iter().any(|p| l.starts_with(p)))
            .filter_map(|l| l.split('|').nth(2)?.strip_prefix("p2a: "))
            .collect();
        for p in s["opponent_team"].as_array().unwrap() {
            let name = p["name"].as_str().unwrap();
            assert!(revealed.contains(&name), "{name} is shown but was never revealed: {s}");
            let d = c.ok("showdown_get_pokemon_details", json!({"battle_id": id, "pokemon_name": name, "opponent": true})).await;
            assert!(d["stats"].as_array().is_none_or(Vec::is_empty) && d["pokemon"]["hp"].is_null(), "the bot's exact stats: {d}");
        }
        // The battle's seed is random: a switch may meet a trap the request
        // did not show, which the simulator refuses (said, and harmless here).
        let actions = s["available_actions"].as_array().unwrap();
        if let Some(a) = actions.get(step % actions.len().max(1)) {
            let r = c.call("showdown_make_move", json!({"battle_id": id, "action": a})).await;
            assert!(r.is_error != Some(true) || text(&r).contains("the simulator refused"), "{}", text(&r));
        }
    }
    c.ok("showdown_forfeit_battle", json!({"battle_id": id})).await;
    let sessions = c.ok("ludus_sessions", json!({})).await;
    assert!(sessions["sessions"][0]["seed"].is_u64(), "the seed of a battle over is shown: {sessions}");
}

async fn battle_state(c: &Client, id: &str) -> Value {
    c.ok("showdown_get_battle_state", json!({"battle_id": id})).await
}

/// A move is made exactly once: a call given up by its client and sent
/// again, or sent twice at once, answers the move made and is not played
/// again; the next decision is played when its number is given.
#[tokio::test]
async fn a_move_is_made_once_when_retried_or_sent_twice_at_once() {
    let (_work, c) = sim_client().await;
    let id = offline(&c, "random", 41).await;
    let s = battle_state(&c, &id).await;
    let (first, action) = (s["decision"].as_u64().unwrap(), s["available_actions"][0].clone());
    // The client gives up at once; the move is made all the same.
    let call = json!({"battle_id": id, "action": action, "decision": first});
    let _ = tokio::time::timeout(Duration::from_millis(1), c.call("showdown_make_move", call.clone())).await;
    let mut s = battle_state(&c, &id).await;
    for _ in 0..50 {
        if s["decision"].as_u64() != Some(first) || s["status"] != "active" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        s = battle_state(&c, &id).await;
    }
    assert_eq!(s["decision"].as_u64(), Some(first + 1), "the move was made once: {s}");
    // The retry gets the answer of the move made, for its decision; again, and it says so.
    let action_text = action.as_str().unwrap();
    let retry = c.call("showdown_make_move", call.clone()).await;
    assert!(retry.is_error != Some(true), "{}", text(&retry));
    assert_eq!(retry.structured_content.as_ref().unwrap()["decision"].as_u64(), Some(first));
    assert!(text(&retry).starts_with(&format!("Your `{action_text}` (decision {first})")), "{}", text(&retry));
    let again = c.call("showdown_make_move", call).await;
    assert!(text(&again).contains(&format!("Decision {first} was made already")), "{}", text(&again));
    assert_eq!(battle_state(&c, &id).await["decision"].as_u64(), Some(first + 1), "the retries played nothing");
    let e = c.err("showdown_make_move", json!({"battle_id": id, "action": s["available_actions"][0], "decision": first + 5})).await;
    assert!(e.contains(&format!("decision {} is not due yet", first + 5)), "{e}");

    // Twice at once, with the decision's number: one move, one answer for both.
    // On a battle of its own, at its first decision: the first battle may have
    // ended by now, and this half must run whatever it did.
    let id = offline(&c, "random", 42).await;
    let s = battle_state(&c, &id).await;
    assert_eq!(s["status"], "active", "{s}");
    let d = s["decision"].as_u64().unwrap();
    let action = s["available_actions"][0].clone();
    assert!(action.is_string(), "no action to send twice: {s}");
    let call = json!({"battle_id": id, "action": action, "decision": d});
    let (a, b) = tokio::join!(c.call("showdown_make_move", call.clone()), c.call("showdown_make_move", call));
    assert!(a.is_error != Some(true) && b.is_error != Some(true), "{} / {}", text(&a), text(&b));
    let (a, b) = (a.structured_content.unwrap(), b.structured_content.unwrap());
    assert_eq!((a["decision"].as_u64(), b["decision"].as_u64()), (Some(d), Some(d)), "{a} / {b}");
    assert_eq!((&a["action"], &b["action"]), (&action, &action), "{a} / {b}");
    assert_eq!(a["evaluation"], b["evaluation"]);
    // One move of a fresh battle cannot end it: the next decision is due, once.
    let after = battle_state(&c, &id).await;
    assert_eq!((&after["status"], after["decision"].as_u64()), (&json!("active"), Some(d + 1)), "played twice: {after}");
    let e = c.err("showdown_make_move", json!({"battle_id": id, "action": "x".repeat(4_000_000)})).await;
    assert!(e.len() < 2_000, "a 4 MB action came back in a {}-byte error", e.len());
}

/// The guide's recipe for a local Showdown server (docs/games.md) works as written (its
/// directory and port changed to a scratch directory and a free port).
#[test]
fn the_guides_local_server_recipe_works() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/games.md")).unwrap();
    let after = readme.split("A local Showdown server").nth(1).expect("the recipe is in docs/games.md");
    let block = after.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    let work = scratch();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = block.replace("/opt/ps", work.path().to_str().unwrap()).replace(" 8000", &format!(" {port}"));
    let lines: Vec<&str> = script.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 2, "{block}");
    let child = Command::new("sh")
        .args(["-c", &format!("set -e\n{}\nexec {}", lines[..lines.len() - 1].join("\n"), lines[lines.len() - 1])])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut server = Killed(child);
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("the recipe stopped ({status}) before the server listened:\n{script}");
        }
        assert!(start.elapsed() < Duration::from_secs(180), "the server did not listen within 3 minutes");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(server.0.try_wait().unwrap().is_none(), "the server stopped after it started listening");
}

/// The plugin's list of formats is the installed simulator's; an unknown
/// format is refused with the nearest names, one offline battles cannot play
/// yet says why, and the list is a resource.
#[tokio::test]
async fn formats_are_the_simulators_and_unknown_ones_are_refused() {
    let package = showdown_package();
    let dump = Command::new("node")
        .args([
            "-e",
            r#"const {Dex} = require("./dist/sim"); for (const f of Dex.formats.all()) if (f.effectType === "Format")
               console.log([f.id, f.name, f.gameType || "singles", f.team ? "random" : "team"].join("\t"));"#,
        ])
        .current_dir(&package)
        .output()
        .unwrap();
    let ours = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/showdown/src/formats.tsv")).unwrap();
    let ours: Vec<&str> = ours.lines().filter(|l| !l.starts_with('#')).collect();
    let theirs = String::from_utf8(dump.stdout).unwrap();
    assert_eq!(ours, theirs.lines().collect::<Vec<_>>(), "plugins/showdown/src/formats.tsv differs from the simulator's formats");

    let (_work, c) = sim_client().await;
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9randombatle"})).await;
    assert!(e.contains("unknown format `gen9randombatle`; the nearest are `gen9randombattle`"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9freeforallrandombattle"})).await;
    assert!(e.contains("for four players"), "{e}");
    let (listed, _) = c.read_resource("showdown://formats").await.unwrap();
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let random = listed.as_array().unwrap().iter().find(|f| f["id"] == "gen9randombattle").unwrap();
    assert_eq!(random["offline"], true, "{random}");
}

/// One caller's forty offline battles under the default limits: they share
/// a simulator process per core (a process each would meet the budget of 8
/// a caller), each plays on, and the processes end with the battles.
#[tokio::test]
async fn forty_battles_of_one_caller_share_the_simulators() {
    let (work, c) = sim_client().await;
    let server = pids_with(&format!("{}/ludus.toml", work.path().display()))[0];
    let mut ids = Vec::new();
    for seed in 0..40 {
        ids.push(offline(&c, "random", 400 + seed).await);
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let sims = children_named(server, "node");
    assert!(!sims.is_empty() && sims.len() <= cores, "40 battles in {} simulators on {cores} cores: {sims:?}", sims.len());
    for id in &ids {
        let avail = c.ok("showdown_get_available_actions", json!({"battle_id": id})).await;
        let action = avail["actions"][0]["action"].clone();
        let r = c.ok("showdown_make_move", json!({"battle_id": id, "action": action})).await;
        assert_ne!(r["status"], "error", "{r}");
    }
    for id in &ids {
        c.ok("showdown_forfeit_battle", json!({"battle_id": id})).await;
    }
    let left = still_living(|| children_named(server, "node")).await;
    assert!(left.is_empty(), "the shared simulators outlive their battles: {left:?}");
}

/// A finished battle frees its simulator at once (its state and log stay
/// readable): twenty battles forfeited leave no simulator running.
#[tokio::test]
async fn finished_battles_leave_no_simulator_process() {
    let (work, c) = sim_client().await;
    let server_pid = {
        let pids = pids_with(&format!("{}/ludus.toml", work.path().display()));
        assert_eq!(pids.len(), 1, "{pids:?}");
        pids[0]
    };
    let simulators = || descendants(server_pid).into_iter().filter(|p| *p != server_pid).collect::<Vec<_>>();
    let mut ids = Vec::new();
    for seed in 0..20 {
        let id = offline(&c, "random", 100 + seed).await;
        let r = c.ok("showdown_forfeit_battle", json!({"battle_id": id})).await;
        assert_eq!(r["status"], "finished", "{r}");
        ids.push(id);
    }
    let left = still_living(simulators).await;
    assert!(left.is_empty(), "simulators still running after their battles ended: {left:?}");
    let s = c.ok("showdown_get_battle_state", json!({"battle_id": ids[19]})).await;
    assert_eq!(s["status"], "finished", "the final state stays readable: {s}");
    assert!(log_of(&c, &ids[19]).await.contains("|win|"));
}

/// Generations 7 and 8: Z-moves, Mega Evolution and Dynamax are offered as
/// actions where the request allows them and can be played; the evaluation,
/// which models generation 9, says it does not score those battles.
#[tokio::test]
async fn older_generations_offer_their_mechanics_and_are_not_scored() {
    let (_work, c) = sim_client().await;
    for (format, marks) in [("gen7randombattle", ["-zmove", "-mega"]), ("gen8randombattle", ["-dynamax", "-dynamax"])] {
        let mut offered = None;
        'seeds: for seed in 1..=6 {
            let v = c.ok("showdown_start_offline_battle", json!({"bot": "random", "format": format, "seed": seed})).await;
            let id = v["battle_id"].as_str().unwrap().to_string();
            for _ in 0..60 {
                let s = battle_state(&c, &id).await;
                if s["status"] != "active" {
                    break;
                }
                let actions: Vec<String> =
                    s["available_actions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
                let Some(first) = actions.first() else { continue };
                let special = actions.iter().find(|a| marks.iter().any(|m| a.ends_with(m)));
                let r = c.call("showdown_make_move", json!({"battle_id": id, "action": special.unwrap_or(first)})).await;
                assert!(r.is_error != Some(true) || text(&r).contains("the simulator refused"), "{}", text(&r));
                if r.is_error != Some(true) {
                    let generation = &format[3..4];
                    assert!(text(&r).contains(&format!("generation 9 and this is a generation {generation} battle")), "{}", text(&r));
                }
                if let Some(a) = special {
                    offered = Some(a.clone());
                    break 'seeds;
                }
            }
        }
        assert!(offered.is_some(), "{format}: no {marks:?} action was offered in six battles");
    }
}

/// Two legal gen9ou teams in Showdown's export form (as the teambuilder
/// exports them); the validator accepts both.
const OU_TEAM: &str = "Great Tusk @ Leftovers
Ability: Protosynthesis
Tera Type: Steel
EVs: 252 HP / 4 Atk / 252 Spe
Jolly Nature
- Headlong Rush
- Ice Spinner
- Knock Off
- Rapid Spin

Gholdengo @ Choice Scarf
Ability: Good as Gold
Tera Type: Steel
EVs: 252 SpA / 4 SpD / 252 Spe
Timid Nature
IVs: 0 Atk
- Make It Rain
- Shadow Ball
- Trick
- Focus Blast

Dragonite @ Heavy-Duty Boots
Ability: Multiscale
Tera Type: Normal
EVs: 252 Atk / 4 SpD / 252 Spe
Adamant Nature
- Dragon Dance
- Extreme Speed
- Earthquake
- Roost
";

const OU_OPPONENT: &str = "Kingambit @ Black Glasses
Ability: Supreme Overlord
Tera Type: Dark
EVs: 252 HP / 252 Atk / 4 SpD
Adamant Nature
- Swords Dance
- Kowtow Cleave
- Sucker Punch
- Iron Head

Garchomp @ Rocky Helmet
Ability: Rough Skin
Tera Type: Steel
EVs: 252 HP / 4 Def / 252 Spe
Jolly Nature
- Earthquake
- Dragon Tail
- Stealth Rock
- Spikes

Corviknight @ Leftovers
Ability: Pressure
Tera Type: Dragon
EVs: 252 HP / 168 Def / 88 SpD
Impish Nature
- Brave Bird
- Roost
- U-turn
- Defog
";

/// gen9ou with two fixed teams: team preview, a battle to its end, and the
/// same seed and choices give the same battle; the bot's team is the one
/// given, and a packed team plays as well as an exported one.
#[tokio::test]
async fn fixed_teams_play_a_gen9ou_battle_to_the_end_and_replay() {
    let (_work, c) = sim_client().await;
    let start = |seed: u64, secret: Option<u64>| {
        let mut args = json!({"bot": "heuristic", "format": "gen9ou", "seed": seed, "team": OU_TEAM, "opponent_team": OU_OPPONENT});
        if let Some(secret) = secret {
            args["secret"] = json!(secret);
        }
        c.ok("showdown_start_offline_battle", args)
    };
    let first = start(31, None).await;
    assert_eq!(first["status"], "active", "{first}");
    assert_eq!(first["format"], "gen9ou");
    let id = first["battle_id"].as_str().unwrap().to_string();
    let s = battle_state(&c, &id).await;
    let preview: Vec<&str> = s["available_actions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(preview, ["team greattusk", "team gholdengo", "team dragonite"], "team preview offers our leads: {s}");
    // Items and abilities as the log names the opponent's: `Heavy-Duty Boots`, not `heavydutyboots`.
    let dragonite = &s["your_team"][2];
    assert_eq!((dragonite["item"].as_str(), dragonite["ability"].as_str()), (Some("Heavy-Duty Boots"), Some("Multiscale")), "{s}");
    let one = play_out(&c, &id).await;
    let log = log_of(&c, &id).await;
    assert!(log.contains("|tier|[Gen 9] OU") && log.contains("|win|"), "{log}");
    for theirs in ["Kingambit", "Garchomp", "Corviknight"] {
        assert!(log.contains(&format!("|poke|p2|{theirs}")), "the bot brings the team given: {log}");
    }
    // Over, it publishes its secret: with its seed, teams and choices, the same battle again.
    let (seed, secret) = seed_and_secret(&c, &id).await;
    let again = start(seed, Some(secret)).await["battle_id"].as_str().unwrap().to_string();
    let two = play_out(&c, &again).await;
    assert_eq!((&one.winner, &one.actions), (&two.winner, &two.actions));
    assert_eq!(log, log_of(&c, &again).await, "the same seed, secret and teams replay the same battle");
    eprintln!("gen9ou fixed teams: {} decisions, winner {}", one.actions.len(), one.winner);

    // The packed form; without opponent_team the bot plays a copy of ours.
    let packed = "Great Tusk||leftovers|protosynthesis|headlongrush,icespinner,knockoff,rapidspin|Jolly|252,4,,,,252|||||,,,,,Steel";
    let v = c.ok("showdown_start_offline_battle", json!({"bot": "random", "format": "gen9ou", "seed": 2, "team": packed})).await;
    let id = v["battle_id"].as_str().unwrap().to_string();
    battle_state(&c, &id).await;
    let log = log_of(&c, &id).await;
    assert!(log.contains("|poke|p1|Great Tusk") && log.contains("|poke|p2|Great Tusk"), "{log}");
}

/// An illegal team is refused before any battle starts, in the validator's
/// own words; a format that needs a team, or one that generates its teams,
/// says so.
#[tokio::test]
async fn illegal_teams_are_refused_with_the_validators_words() {
    let (_work, c) = sim_client().await;
    let illegal = "Koraidon @ Choice Scarf
Ability: Orichalcum Pulse
Level: 120
EVs: 252 Atk / 4 SpD / 252 Spe
Jolly Nature
- Flare Blitz
- Collision Course
- U-turn
- Dragon Claw
- Swords Dance
";
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9ou", "team": illegal, "opponent_team": OU_OPPONENT})).await;
    assert!(e.contains("Your team is not legal in gen9ou"), "{e}");
    for words in
        ["Koraidon is tagged Uber, which is banned", "above the maximum level of 100", "has 5 moves, which is more than the limit of 4"]
    {
        assert!(e.contains(words), "the validator's words `{words}` are missing: {e}");
    }
    let e =
        c.err("showdown_start_offline_battle", json!({"format": "gen9ou", "team": OU_TEAM, "opponent_team": "Missingno\n- Tackle"})).await;
    assert!(e.contains("The opponent's team is not legal in gen9ou"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9ou"})).await;
    assert!(e.contains("needs your team"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9randombattle", "team": OU_TEAM})).await;
    assert!(e.contains("generates its teams"), "{e}");
    let e = c.err("showdown_start_offline_battle", json!({"format": "gen9ou", "team": "x".repeat(40_000)})).await;
    assert!(e.contains("a team is at most"), "{e}");
    // Nothing was left running or half-started: a legal battle starts next.
    let v = c.ok("showdown_start_offline_battle", json!({"format": "gen9ou", "team": OU_TEAM, "seed": 1})).await;
    assert_eq!(v["status"], "active", "{v}");
}

/// Doubles and triples: every active Pokémon on each side in the state with
/// its position, actions per position with their targets, a decision of one
/// action per position; a random doubles battle and a triples battle with
/// fixed teams play to their end, every decision scored position by position.
#[tokio::test]
async fn doubles_and_triples_battles_play_to_the_end_with_targeted_moves() {
    let (_work, c) = sim_client().await;
    let doubles = json!({"bot": "heuristic", "format": "gen9randomdoublesbattle", "seed": 77});
    let triples = json!({"bot": "random", "format": "gen9triples", "seed": 78, "team": OU_TEAM, "opponent_team": OU_OPPONENT});
    for (args, positions) in [(doubles, vec![1, 2]), (triples, vec![1, 2, 3])] {
        play_multi(&c, args, &positions).await;
    }
}

/// Plays a doubles or triples battle to its end (targeted moves where
/// offered), checking the positions of the first state.
async fn play_multi(c: &Client, args: Value, expected: &[u64]) {
    let format = args["format"].as_str().unwrap().to_string();
    let v = c.ok("showdown_start_offline_battle", args).await;
    let id = v["battle_id"].as_str().unwrap().to_string();
    let mut millis: Vec<f64> = Vec::new();
    let mut checked = false;
    let mut targeted = 0;
    let mut decisions = 0;
    let mut sent = 0;
    let mut finished = false;
    for _ in 0..400 {
        let s = battle_state(c, &id).await;
        if s["status"] == "finished" {
            finished = true;
            break;
        }
        let a = c.ok("showdown_get_available_actions", json!({"battle_id": id})).await;
        let actions = a["actions"].as_array().unwrap();
        if actions.is_empty() {
            continue;
        }
        // Past team preview (whose request marks our leads active already).
        let out = s["turn"].as_u64().unwrap_or(0) >= 1;
        if out && !checked {
            checked = true;
            let positions: Vec<u64> = s["your_team"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["active"] == true)
                .map(|p| p["position"].as_u64().unwrap())
                .collect();
            assert_eq!(positions, expected, "every active Pokémon of ours with its position: {s}");
            let theirs = s["opponent_team"].as_array().unwrap().iter().filter(|p| p["active"] == true).count();
            assert_eq!(theirs, expected.len(), "{s}");
            let listed = text(&c.call("showdown_get_available_actions", json!({"battle_id": id})).await);
            assert!(listed.contains("position 2: `"), "{listed}");
        }
        // One action per position in order: a targeted move where one is
        // offered, else the step-th action.
        let aimed = |n: &str| n.ends_with(" 1") || n.ends_with(" 2") || n.ends_with(" 3");
        // (Counted by moves sent, not loop turns, so that waiting does not
        // change the choices.)
        let action = decision::decision(&a, |free| free.iter().position(|n| aimed(n)).unwrap_or(sent % free.len()));
        sent += 1;
        let per = action.split(", ").count();
        let aimed_here = action.split(", ").filter(|n| aimed(n)).count();
        let r = c.call("showdown_make_move", json!({"battle_id": id, "action": action, "decision": a["decision"]})).await;
        if decisions == 1 && expected.len() == 3 {
            eprintln!("a triples decision: {action}");
        }
        let t = text(&r);
        assert!(r.is_error != Some(true) || t.contains("the simulator refused"), "{action}: {t}");
        if r.is_error != Some(true) && !action.starts_with("team ") {
            decisions += 1;
            targeted += aimed_here;
            let r = r.structured_content.unwrap();
            match r["evaluation"].as_object() {
                Some(e) => {
                    let scored: Vec<&str> = e["scores"].as_array().unwrap().iter().map(|s| s["action"].as_str().unwrap()).collect();
                    let listed: Vec<&str> = actions.iter().map(|a| a["action"].as_str().unwrap()).collect();
                    assert_eq!(scored, listed, "every action of every position is scored");
                    assert_eq!(e["best_action"].as_str().unwrap().split(", ").count(), per, "{e:?}");
                    assert!((0.0..=1.0).contains(&e["optimality"].as_f64().unwrap()), "{e:?}");
                    millis.push(e["millis"].as_f64().unwrap());
                }
                None => assert!(t.contains("was not scored"), "{t}"),
            }
        }
    }
    millis.sort_by(f64::total_cmp);
    let scored = millis.len();
    assert!(scored * 10 >= decisions * 8, "{format}: only {scored} of {decisions} decisions scored");
    let median = millis.get(scored / 2).copied().unwrap_or(0.0);
    eprintln!("{format}: {scored} decisions scored, evaluation median {median} ms (a debug build; figures: docs/benchmarks.md)");
    assert!(finished, "the {format} battle did not end");
    assert!(checked, "{format}: no state showed the active Pokémon");
    let log = log_of(c, &id).await;
    let game_type = if expected.len() == 3 { "triples" } else { "doubles" };
    assert!(log.contains(&format!("|gametype|{game_type}")) && log.contains("|win|") && log.contains("p2b: "), "{log}");
    // Whether a Pokémon has a targeted move left depends on the battle; at
    // least one decision's worth, accepted by the simulator, is asked for.
    assert!(targeted >= expected.len(), "{format}: only {targeted} accepted targeted moves in {decisions} decisions");
    eprintln!("{format}: {decisions} decisions, {targeted} targeted moves");
}

/// Plays one side of a battle with a fixed policy (the k-th legal action),
/// waiting through `get_battle_state` while the other side chooses; the
/// final state and the actions taken.
async fn play_side(c: &Client, id: &str) -> (Value, Vec<String>) {
    let mut taken = Vec::new();
    for _ in 0..1500 {
        let s = c.ok("showdown_get_battle_state", json!({"battle_id": id})).await;
        if s["status"] == "finished" {
            return (s, taken);
        }
        let legal = s["available_actions"].as_array().unwrap().clone();
        if legal.is_empty() {
            continue;
        }
        // The k-th action at the k-th decision: the same whatever the timing.
        let action = legal[taken.len() % legal.len()].as_str().unwrap().to_string();
        let r = c.call("showdown_make_move", json!({"battle_id": id, "action": action, "decision": s["decision"]})).await;
        assert!(r.is_error != Some(true) || text(&r).contains("the simulator refused"), "{action}: {}", text(&r));
        taken.push(action);
    }
    panic!("battle {id} did not end");
}

/// Two agents on one offline battle over HTTP: the second joins by battle
/// id and join code with its own team, each sees only its own team and
/// requests, and the battle plays to its end; the same seed and choices
/// replay it.
#[tokio::test]
async fn two_agents_play_one_offline_battle_over_http() {
    let package = showdown_package();
    let work = scratch();
    // An evaluator's server: the chosen seed is the whole seed, so the two
    // rounds play the same battle; one shared simulator process, which also
    // runs five battles of another client.
    let cfg = config(work.path(), &format!("whole_seeds = true\n{}\n[engines]\nshards = 1", sim_endpoint(&package)));
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let others = http_client(&server).await;
    for seed in 0..5 {
        offline(&others, "random", 70 + seed).await;
    }
    let sims = || children_named(server.pid(), "node");
    let mut replays = Vec::new();
    for round in 0..2 {
        let (a, b) = (http_client(&server).await, http_client(&server).await);
        let r = a.call("showdown_start_offline_battle", json!({"bot": "agent", "format": "gen9ou", "seed": 12, "team": OU_TEAM})).await;
        assert!(text(&r).contains("showdown_join_battle"), "{}", text(&r));
        let st = r.structured_content.unwrap();
        assert_eq!(st["status"], "challenging", "{st}");
        let id = st["battle_id"].as_str().unwrap().to_string();
        if round == 0 {
            let e = b.err("showdown_get_battle_state", json!({"battle_id": id})).await;
            assert!(e.contains("is not one of your"), "a stranger reads nothing: {e}");
            let e = b.err("showdown_join_battle", json!({"battle_id": id, "team": OU_OPPONENT})).await;
            assert!(e.contains("join_code"), "the id alone takes no seat: {e}");
        }
        let code = join_code(&a, &id).await;
        if round == 0 {
            let e = a.err("showdown_join_battle", json!({"battle_id": id, "join_code": code})).await;
            assert!(e.contains("one client cannot play both: take p2 from a second client"), "{e}");
            // Until p2 is taken, the creator's waits say the battle waits for it, never that a move is due.
            let waiting = a.call("showdown_get_available_actions", json!({"battle_id": id})).await;
            let said = text(&waiting);
            assert!(
                said.contains("Waiting for another agent to join") && waiting.structured_content.unwrap()["actions"] == json!([]),
                "{said}"
            );
        }
        if round == 0 {
            let e = b.err("showdown_join_battle", json!({"battle_id": id, "join_code": code})).await;
            assert!(e.contains("needs your team too"), "{e}");
            let e = b.err("showdown_join_battle", json!({"battle_id": id, "join_code": code, "team": "Koraidon\n- Flare Blitz"})).await;
            assert!(e.contains("your team is not legal in gen9ou") && e.contains("Uber"), "{e}");
        }
        let joined = b.ok("showdown_join_battle", json!({"battle_id": id, "join_code": code, "team": OU_OPPONENT})).await;
        assert_eq!(joined["status"], "active", "{joined}");
        assert_eq!(joined["username"], "Player 2", "{joined}");

        // Each side its own team; the other's is not in what it reads.
        let (sa, sb) = tokio::join!(battle_state(&a, &id), battle_state(&b, &id));
        let names = |s: &Value, key: &str| -> Vec<String> {
            s[key].as_array().unwrap().iter().map(|p| p["species"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(names(&sa, "your_team"), ["Great Tusk", "Gholdengo", "Dragonite"], "{sa}");
        assert_eq!(names(&sb, "your_team"), ["Kingambit", "Garchomp", "Corviknight"], "{sb}");
        // Each side's protocol stream is its own: its requests, never the other's.
        let (pa, _) = a.read_resource(&format!("showdown://battle/{id}/protocol")).await.unwrap();
        let (pb, _) = b.read_resource(&format!("showdown://battle/{id}/protocol")).await.unwrap();
        assert!(pa.contains("headlongrush") && !pa.contains("kowtowcleave") && !pa.contains("blackglasses"), "p1's stream: {pa}");
        assert!(pb.contains("kowtowcleave") && !pb.contains("headlongrush") && !pb.contains("choicescarf"), "p2's stream: {pb}");
        if round == 0 {
            let third = http_client(&server).await;
            let e = third.err("showdown_join_battle", json!({"battle_id": id, "join_code": code, "team": OU_TEAM})).await;
            assert!(e.contains("is open: p1: client-") && e.contains("p2: client-"), "{e}");
            let sessions = a.ok("ludus_sessions", json!({})).await;
            assert!(sessions["sessions"][0].get("join_code").is_none(), "no seat open, no code: {sessions}");
        }

        assert_eq!(sims().len(), 1, "the battles share one simulator process: {:?}", sims());
        let ((fa, ta), (fb, tb)) = tokio::join!(play_side(&a, &id), play_side(&b, &id));
        assert_eq!(fa["winner"], fb["winner"], "{fa}\n{fb}");
        assert!(fa["winner"].is_string(), "{fa}");
        let log = log_of(&a, &id).await;
        assert!(log.contains("|player|p2|Player 2") && log.contains("|win|"), "{log}");
        replays.push((log, ta, tb));
    }
    assert_eq!(replays[0], replays[1], "the same seed, teams and choices replay the same battle");
}

/// A two-agent battle replayed through the tools: its creator starts it
/// again with the seed and secret the battle published and hands the join
/// code to a second agent, which is told the replay's hidden parts are
/// known; the same choices play the same battle again.
#[tokio::test]
async fn a_two_agent_battle_replays_through_the_tools() {
    let package = showdown_package();
    let work = scratch();
    let cfg = config(work.path(), &sim_endpoint(&package));
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let mut start = json!({"bot": "agent", "format": "gen9ou", "seed": 31, "team": OU_TEAM});
    let mut played = Vec::new();
    for round in 0..2 {
        let (a, b) = (http_client(&server).await, http_client(&server).await);
        let r = a.call("showdown_start_offline_battle", start.clone()).await;
        assert!(text(&r).contains("Join code:"), "round {round}: the answer carries the join code: {}", text(&r));
        let id = r.structured_content.unwrap()["battle_id"].as_str().unwrap().to_string();
        let code = join_code(&a, &id).await;
        let joined = b.call("showdown_join_battle", json!({"battle_id": id, "join_code": code, "team": OU_OPPONENT})).await;
        assert_ne!(joined.is_error, Some(true), "round {round}: {}", text(&joined));
        assert_eq!(text(&joined).contains("replays a finished one"), round == 1, "{}", text(&joined));
        let ((_, ta), (_, tb)) = tokio::join!(play_side(&a, &id), play_side(&b, &id));
        played.push((log_of(&a, &id).await, ta, tb));
        if round == 0 {
            let (seed, secret) = seed_and_secret(&a, &id).await;
            assert_eq!(seed, 31);
            start["secret"] = json!(secret);
        }
    }
    assert_eq!(played[0], played[1], "the replay is the same battle");
}

/// A chosen seed reveals nothing another seat keeps hidden: the creator of
/// an agent-against-agent battle with seed 424242 who starts a side battle
/// with the same seed and takes its p2 seat sees a team other than the
/// joiner's (p2's team, the battle's chance and a bot's choices come from
/// the seed mixed with each battle's secret). Against a bot, the creator's
/// own team still follows from the seed it chose.
#[tokio::test]
async fn a_chosen_seed_reveals_no_other_sides_team() {
    let package = showdown_package();
    let work = scratch();
    let cfg = config(work.path(), &sim_endpoint(&package));
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let team = |s: &Value| -> Vec<String> {
        s["your_team"].as_array().unwrap().iter().map(|p| p["species"].as_str().unwrap().to_string()).collect()
    };
    // The real battle: the joiner's team.
    let (creator, joiner) = (http_client(&server).await, http_client(&server).await);
    let id = creator.ok("showdown_start_offline_battle", json!({"bot": "agent", "seed": 424242})).await["battle_id"].clone();
    let code = join_code(&creator, id.as_str().unwrap()).await;
    let joined = joiner.call("showdown_join_battle", json!({"battle_id": id, "join_code": code})).await;
    assert!(text(&joined).contains("The creator chose this game's seed"), "the joiner is told: {}", text(&joined));
    let real = team(&battle_state(&joiner, id.as_str().unwrap()).await);
    // The cheat: a side battle with the same seed, its p2 seat taken from a second client.
    let accomplice = http_client(&server).await;
    let side = creator.ok("showdown_start_offline_battle", json!({"bot": "agent", "seed": 424242})).await["battle_id"].clone();
    let code = join_code(&creator, side.as_str().unwrap()).await;
    accomplice.ok("showdown_join_battle", json!({"battle_id": side, "join_code": code})).await;
    let guessed = team(&battle_state(&accomplice, side.as_str().unwrap()).await);
    assert_eq!(real.len(), 6);
    assert_ne!(guessed, real, "the same seed gave away the joiner's team");
    // The creator's own team against a bot follows from its seed.
    let mut own = Vec::new();
    for _ in 0..2 {
        let b = creator.ok("showdown_start_offline_battle", json!({"bot": "random", "seed": 424242})).await;
        assert_eq!(b["seed"], 424242, "{b}");
        own.push(team(&battle_state(&creator, b["battle_id"].as_str().unwrap()).await));
    }
    assert_eq!(own[0], own[1], "{own:?}");
}

/// A first-use install that stalls (a registry that never answers) says so
/// in every answer while it runs, with how long it has taken, and gives up
/// after its stated time with what npm last said.
#[tokio::test]
async fn a_stalled_install_says_so_while_it_runs_and_gives_up_in_time() {
    let work = scratch();
    let xdg = work.path().join("xdg-cache");
    let hole = BlackHole::new();
    let cfg = config(work.path(), "[plugins.showdown]\nmax_wait_ms = 1500\n");
    // npm's own cache is a fresh one too: nothing may come from an earlier install.
    let (registry, npm_cache) = (hole.url(), work.path().join("npm-cache"));
    let env = [
        ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
        ("npm_config_registry", registry.as_str()),
        ("npm_config_cache", npm_cache.to_str().unwrap()),
        ("LUDUS_INSTALL_TIMEOUT_S", "8"),
    ];
    let c = stdio_env(&["--config", cfg.to_str().unwrap()], work.path(), &env).await;
    let started = c.call("showdown_start_offline_battle", json!({"bot": "random"})).await;
    let said = text(&started);
    assert!(said.contains("The battle simulator is not running yet (") && said.contains("installing pokemon-showdown@0.11.11"), "{said}");
    assert!(said.contains("given up after 8 s"), "{said}");
    let id = started.structured_content.unwrap()["battle_id"].as_str().unwrap().to_string();
    let waiting = c.call("showdown_get_battle_state", json!({"battle_id": id})).await;
    let said = text(&waiting);
    assert!(said.contains("s so far)") && !said.contains("Waiting for the opponent"), "{said}");
    let t = Instant::now();
    loop {
        let r = c.call("showdown_get_battle_state", json!({"battle_id": id})).await;
        let said = text(&r);
        if said.contains("npm had not installed pokemon-showdown@0.11.11 after 8 s and was stopped") {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the install never gave up: {said}");
    }
    c.close().await;
}

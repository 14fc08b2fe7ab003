//! Games written in Python (componentize-py) and JavaScript (componentize-js)
//! load through `--plugins` exactly like Rust ones: tools and schemas from
//! their WIT, a session per game, bad arguments refused before their code
//! runs, and the same sandbox. Each test builds the examples with the very
//! scripts the SDK guide tells authors to run (they install the toolchains
//! from PyPI and npm into target/sdk-tools on first use).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use serde_json::{Value, json};

/// What a build script makes, built once per test run however many tests ask.
fn built(name: &str) -> PathBuf {
    static DONE: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let slot = DONE.get_or_init(Default::default).lock().unwrap().entry(name.into()).or_default().clone();
    slot.get_or_init(|| build(name)).clone()
}

fn build(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("languages");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(format!("{name}.wasm"));
    let tools = root.join("sdk/tools");
    let fixtures = root.join("tests/fixtures");
    let mut cmd = match name {
        "connect_four" => command(root.join("sdk/examples/python-connect-four/build.sh"), &[]),
        "nim" => command(root.join("sdk/examples/js-nim/build.sh"), &[]),
        "python_probe" => {
            command(tools.join("build-python.sh"), &[fixtures.join("python-probe").to_str().unwrap(), "probe", "ludus:python-probe/probe"])
        }
        "not_a_game" => command(
            tools.join("build-python.sh"),
            &[fixtures.join("python-probe").to_str().unwrap(), "not_a_game", "ludus:python-probe/not-a-game"],
        ),
        "js_probe" => command(tools.join("build-js.sh"), &[fixtures.join("js-probe").to_str().unwrap(), "probe.js", "probe"]),
        other => panic!("no build for {other}"),
    };
    let status = cmd.arg(&out).env("LUDUS", BIN).status().expect("running the build script");
    assert!(status.success(), "building {name} failed: {status}");
    out
}

fn command(script: PathBuf, args: &[&str]) -> Command {
    let mut cmd = Command::new(script);
    cmd.args(args);
    cmd
}

/// A server with these components in its plugins directory, once it has
/// loaded (or refused) each of them: their first compile runs in the
/// background.
async fn serve(work: &Path, components: &[&str]) -> Client {
    let c = serve_now(work, components).await;
    let t = std::time::Instant::now();
    loop {
        let games = c.ok("ludus_games", json!({})).await;
        if games["files"].as_array().unwrap().len() == components.len() {
            return c;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(300), "the plugins were not loaded: {games}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The same, as soon as the server answers.
async fn serve_now(work: &Path, components: &[&str]) -> Client {
    let dir = work.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    for name in components {
        install(&dir, &built(name), &format!("{name}.wasm"));
    }
    let records = work.join("records.jsonl");
    stdio(&["--plugins", dir.to_str().unwrap(), "--records", records.to_str().unwrap()], work).await
}

/// The result record of game session `id`, once written.
async fn record_of(work: &Path, id: &str) -> Value {
    let t = std::time::Instant::now();
    loop {
        let lines = std::fs::read_to_string(work.join("records.jsonl")).unwrap_or_default();
        let line = lines.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["record"] == format!("{id}/1"));
        if let Some(record) = line {
            return record;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "no record of {id}: {lines}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn tool<'a>(tools: &'a [rmcp::model::Tool], name: &str) -> &'a rmcp::model::Tool {
    tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tool {name}"))
}

fn schema(t: &rmcp::model::Tool) -> Value {
    Value::Object((*t.input_schema).clone())
}

/// A large component's first compile (a Python game: its interpreter is
/// tens of MB) runs in the background: the server answers at once without
/// it, a call to one of its tools meanwhile waits for it, and clients hear
/// `list_changed` when its tools arrive. (Each test's cache starts empty, so
/// this compile is a first one.)
#[tokio::test]
async fn a_python_games_first_compile_does_not_hold_the_server() {
    let work = scratch();
    let mut c = serve_now(work.path(), &["connect_four"]).await;
    let games = c.ok("ludus_games", json!({})).await;
    let names: Vec<&str> = games["games"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"hanoi") && !names.contains(&"connect_four"), "answered before the compile ended: {names:?}");
    let game = c.ok("connect_four_start", json!({"seed": 7})).await;
    assert_eq!(game["outcome"], "playing", "the call waited for its game: {game}");
    c.expect_list_changed(std::time::Duration::from_secs(5)).await;
    assert!(c.tool_names().await.iter().any(|t| t == "connect_four_drop"));
    c.close().await;
}

#[tokio::test]
async fn a_python_game_plays_to_the_end_with_schemas_from_its_wit() {
    let work = scratch();
    let c = serve(work.path(), &["connect_four"]).await;

    // Descriptions, parameter docs and ranges come from the WIT doc comments.
    let tools = c.tools().await;
    let drop = tool(&tools, "connect_four_drop");
    assert!(drop.description.as_deref().unwrap().starts_with("Drop your disc into a column"), "{drop:?}");
    let column = &schema(drop)["properties"]["column"];
    assert_eq!((column["minimum"].as_u64(), column["maximum"].as_u64()), (Some(1), Some(7)), "{column}");
    assert!(column["description"].as_str().unwrap().contains("1 (left) to 7 (right)"), "{column}");
    let start = tool(&tools, "connect_four_start");
    let out = Value::Object((**start.output_schema.as_ref().expect("an outputSchema")).clone());
    assert_eq!(out["properties"]["outcome"]["enum"], json!(["playing", "you-won", "computer-won", "draw"]), "{out}");

    // A whole game: always the leftmost legal column, until it ends.
    let mut game = c.ok("connect_four_start", json!({"seed": 7})).await;
    let id = game["game_id"].as_str().unwrap().to_string();
    let mut turns = 0;
    while game["outcome"] == "playing" {
        let column = game["legal_columns"][0].clone();
        let r = c.call("connect_four_drop", json!({"game_id": id, "column": column})).await;
        assert_matches_output_schema(drop, &r);
        game = r.structured_content.unwrap();
        turns += 1;
        assert!(turns <= 21, "a game has at most 21 moves per side");
    }
    assert!(["you-won", "computer-won", "draw"].contains(&game["outcome"].as_str().unwrap()), "{game}");
    assert_eq!(game["legal_columns"], json!([]));
    let state = c.ok("connect_four_get_state", json!({"game_id": id})).await;
    assert_eq!(state["moves"], game["moves"], "get_state sees the same game");
    let e = c.err("connect_four_drop", json!({"game_id": id, "column": 1})).await;
    assert!(e.contains("the game is over"), "{e}");
    // The game stated its outcome (`outcome.tell`), so it left a record.
    let record = record_of(work.path(), &id).await;
    let verdict = match game["outcome"].as_str().unwrap() {
        "you-won" => "won",
        "computer-won" => "lost",
        _ => "draw",
    };
    assert_eq!(
        (&record["game"], &record["outcome"], &record["moves"]),
        (&json!("connect_four"), &json!(verdict), &json!(turns)),
        "{record}"
    );

    // A seed with its secret (a finished game publishes it) makes the
    // computer repeat itself.
    let replay = |seed: u64| {
        let c = &c;
        async move {
            let g = c.ok("connect_four_start", json!({"seed": seed, "secret": 5, "computer_first": true})).await;
            let id = g["game_id"].as_str().unwrap().to_string();
            for column in [1, 1, 7, 7] {
                if c.ok("connect_four_drop", json!({"game_id": id, "column": column})).await["outcome"] != "playing" {
                    break;
                }
            }
            c.ok("connect_four_get_state", json!({"game_id": id})).await["moves"].clone()
        }
    };
    assert_eq!(replay(11).await, replay(11).await);

    // Bad arguments: the range is checked before Python runs; the rules by the game.
    let fresh = c.ok("connect_four_start", json!({})).await["game_id"].as_str().unwrap().to_string();
    let e = c.err("connect_four_drop", json!({"game_id": fresh, "column": 8})).await;
    assert!(e.contains("expected an integer from 1 to 7, got 8"), "{e}");
    let e = c.err("connect_four_drop", json!({"game_id": fresh, "column": "three"})).await;
    assert!(e.contains("column"), "{e}");
    // Fill column 4 (the computer, blocking, helps); then it is full.
    let mut g = c.ok("connect_four_get_state", json!({"game_id": fresh})).await;
    while g["outcome"] == "playing" && g["legal_columns"].as_array().unwrap().contains(&json!(4)) {
        g = c.ok("connect_four_drop", json!({"game_id": fresh, "column": 4})).await;
    }
    if g["outcome"] == "playing" {
        let e = c.err("connect_four_drop", json!({"game_id": fresh, "column": 4})).await;
        assert!(e.contains(&format!("column 4 is full; legal columns: {}", g["legal_columns"]).replace(',', ", ")), "{e}");
    }
    let e = c.err("connect_four_get_state", json!({"game_id": "no-such-game"})).await;
    assert!(e.contains("no-such-game"), "{e}");
    c.close().await;
}

#[tokio::test]
async fn a_javascript_game_plays_to_the_end_with_schemas_from_its_wit() {
    let work = scratch();
    let c = serve(work.path(), &["nim"]).await;

    let tools = c.tools().await;
    let take = tool(&tools, "nim_take");
    assert!(take.description.as_deref().unwrap().starts_with("Take objects from one pile"), "{take:?}");
    let props = &schema(take)["properties"];
    assert_eq!((props["pile"]["minimum"].as_u64(), props["pile"]["maximum"].as_u64()), (Some(1), Some(6)), "{props}");
    assert_eq!(props["count"]["maximum"].as_u64(), Some(20), "{props}");
    let start = tool(&tools, "nim_start");
    assert_eq!(schema(start)["properties"]["piles"]["type"], json!("array"), "{:?}", start.input_schema);

    // From piles 1, 2 and 4 (nim-sum 7) the first player wins by playing to
    // a nim-sum of 0: take 1 from pile 3 (1, 2, 3), then mirror the computer.
    let mut game = c.ok("nim_start", json!({"piles": [1, 2, 4], "seed": 3})).await;
    let id = game["game_id"].as_str().unwrap().to_string();
    let mut moves = 0;
    while game["winner"].is_null() {
        let piles: Vec<u32> = serde_json::from_value(game["piles"].clone()).unwrap();
        let (pile, count) = winning_take(&piles);
        let r = c.call("nim_take", json!({"game_id": id, "pile": pile, "count": count})).await;
        assert_matches_output_schema(take, &r);
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        game = r.structured_content.unwrap();
        moves += 1;
        assert!(moves <= 7, "seven objects cannot last longer");
    }
    assert_eq!(game["winner"], "you", "perfect play from a winning position wins: {game}");
    assert!(text_of(&c, &id).await.contains("you won"));

    // A lost position: the computer (playing perfectly) wins whatever we do.
    let lost = c.ok("nim_start", json!({"piles": [3, 3]})).await["game_id"].as_str().unwrap().to_string();
    let mut game = json!({"winner": null});
    while game["winner"].is_null() {
        game = c.ok("nim_take", json!({"game_id": lost, "pile": 1, "count": 1})).await;
        if game["winner"].is_null() && game["piles"][0] == 0 {
            game = c.ok("nim_take", json!({"game_id": lost, "pile": 2, "count": 1})).await;
        }
    }
    assert_eq!(game["winner"], "computer", "{game}");

    // Bad arguments: ranges before JavaScript runs, rules by the game.
    let fresh = c.ok("nim_start", json!({"piles": [2, 5]})).await["game_id"].as_str().unwrap().to_string();
    let e = c.err("nim_take", json!({"game_id": fresh, "pile": 7, "count": 1})).await;
    assert!(e.contains("expected an integer from 1 to 6, got 7"), "{e}");
    let e = c.err("nim_take", json!({"game_id": fresh, "pile": 3, "count": 1})).await;
    assert!(e.contains("there are only 2 piles"), "{e}");
    let e = c.err("nim_take", json!({"game_id": fresh, "pile": 1, "count": 3})).await;
    assert!(e.contains("pile 1 has 2 left"), "{e}");
    let e = c.err("nim_start", json!({"piles": [0, 30]})).await;
    assert!(e.contains("piles must be 2 to 6 numbers from 1 to 20"), "{e}");
    // The seed with its secret draws the same piles again.
    let piles = |seed: u64| {
        let c = &c;
        async move { c.ok("nim_start", json!({"seed": seed, "secret": 9})).await["piles"].clone() }
    };
    assert_eq!(piles(42).await, piles(42).await);
    c.close().await;
}

/// The text an agent reads for a Nim game.
async fn text_of(c: &Client, id: &str) -> String {
    text(&c.call("nim_get_state", json!({"game_id": id})).await)
}

/// The move leaving a nim-sum of zero (any single take if there is none).
fn winning_take(piles: &[u32]) -> (usize, u32) {
    let sum = piles.iter().fold(0, |a, b| a ^ b);
    match piles.iter().position(|&n| n ^ sum < n) {
        Some(i) if sum != 0 => (i + 1, piles[i] - (piles[i] ^ sum)),
        _ => (piles.iter().position(|&n| n > 0).unwrap() + 1, 1),
    }
}

#[tokio::test]
async fn python_exceptions_and_escape_attempts_hurt_only_their_session() {
    let work = scratch();
    let c = serve(work.path(), &["python_probe"]).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let start = || async { text(&c.call("python_probe_start", json!({})).await) };
    let bystander = start().await;
    let probe = start().await;
    let files = text(&c.call("python_probe_files", json!({"id": probe})).await);
    assert!(files.contains("read /etc/passwd: FileNotFoundError"), "the sandbox let a host file through:\n{files}");
    assert!(files.contains("list /: FileNotFoundError"), "{files}");
    assert!(files.contains("environment: allowed: {}"), "the host's environment leaked in:\n{files}");
    let net = text(&c.call("python_probe_network", json!({"id": probe, "port": port})).await);
    assert!(!net.contains("allowed"), "{net}");
    assert!(listener.accept().is_err(), "a connection reached the host: {net}");

    // An exception (not a WIT error) ends that session, with Python's message.
    let e = c.err("python_probe_fail", json!({"id": probe})).await;
    assert!(e.contains("ValueError: raised on purpose (File \"/0/probe.py\", line"), "{e}");
    let e = c.err("python_probe_ping", json!({"id": probe})).await;
    assert!(e.contains("has ended"), "{e}");
    assert_eq!(text(&c.call("python_probe_ping", json!({"id": bystander})).await), "pong");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    c.close().await;
}

#[tokio::test]
async fn javascript_errors_and_escape_attempts_hurt_only_their_session() {
    let work = scratch();
    let c = serve(work.path(), &["js_probe"]).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let start = || async { text(&c.call("js_probe_start", json!({})).await) };
    let bystander = start().await;

    // `fetch` has no wasi:http under it: calling it ends the session, and nothing connects.
    let probe = start().await;
    let net = text(&c.call("js_probe_network", json!({"id": probe, "port": port})).await);
    assert!(!net.contains("allowed"), "{net}");
    assert!(listener.accept().is_err(), "a connection reached the host: {net}");

    // An Error thrown (not a WIT error string) ends that session, with its message and place.
    let probe = start().await;
    let e = c.err("js_probe_fail", json!({"id": probe})).await;
    assert!(e.contains("thrown on purpose (at fail@"), "{e}");
    let e = c.err("js_probe_ping", json!({"id": probe})).await;
    assert!(e.contains("has ended"), "{e}");
    assert_eq!(text(&c.call("js_probe_ping", json!({"id": bystander})).await), "pong");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    c.close().await;
}

#[test]
fn a_component_for_another_world_is_refused_with_the_reason() {
    let out = Command::new(BIN).args(["inspect", built("not_a_game").to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ludus:plugin/meta"), "{err}");
}

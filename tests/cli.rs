//! The command line: help, inspect, and honest errors.

mod common;

use std::process::Command;

use common::*;

fn run(args: &[&str]) -> (i32, String, String) {
    // A server that would start keeps its games away from the user's data
    // dir, in a directory removed when the command is done.
    let data = scratch();
    let out = Command::new(BIN).args(args).env("LUDUS_LOG", "error").env("XDG_DATA_HOME", data.path()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn help_explains_the_commands() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("serve") && out.contains("inspect") && out.contains("pack"), "{out}");
    let (_, out, _) = run(&["serve", "--help"]);
    assert!(out.contains("--plugins") && out.contains("--http") && out.contains("--config"), "{out}");
    // Every bundled game is named where a new user first looks.
    let (_, out, _) = run(&["--help"]);
    for game in ["chess", "Pokémon Showdown", "Magic: The Gathering", "Tower of Hanoi", "River Crossing", "Checker Jumping", "Blocks World"]
    {
        assert!(out.contains(game), "`ludus --help` does not name the built-in game {game}:\n{out}");
    }
}

/// `ludus pack` embeds the WIT docs into a component as the toolchain built
/// it (the host's build script leaves hello's raw build in
/// target/ludus-wasm), and says what is wrong with bad input.
#[test]
fn pack_embeds_docs_and_refuses_bad_input() {
    let work = scratch();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (plugin_wit, hello_wit) = (root.join("wit/plugin"), root.join("sdk/examples/hello/wit"));
    let out = work.path().join("hello.wasm");
    let args = |input: &std::path::Path| {
        vec![
            "pack".to_string(),
            input.display().to_string(),
            out.display().to_string(),
            plugin_wit.display().to_string(),
            hello_wit.display().to_string(),
        ]
    };
    let raw = root.join("target/ludus-wasm/wasm32-wasip2/release/hello.wasm");
    let (_, json, _) = run(&["inspect", raw.to_str().unwrap()]);
    assert!(!json.contains("Add to a counter."), "the raw build has no docs to read");
    let a = args(&raw);
    let (code, _, err) = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = run(&["inspect", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(json.contains("Add to a counter."), "the packed build carries the WIT docs: {json}");
    let packed = component("hello");

    let junk = work.path().join("junk.wasm");
    std::fs::write(&junk, "hello").unwrap();
    let a = args(&junk);
    let (code, _, err) = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1);
    assert!(err.contains("not a WebAssembly component"), "{err}");
    let (code, _, err) = run(&["pack", packed.to_str().unwrap(), out.to_str().unwrap(), "/no/such/wit"]);
    assert_eq!(code, 1);
    assert!(err.contains("/no/such/wit"), "{err}");
    let (code, _, err) = run(&["pack", packed.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 2, "no WIT directory is a usage error: {err}");
}

#[test]
fn inspect_prints_what_the_host_derives() {
    let (code, out, err) = run(&["inspect", component("hello").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plugin"]["name"], "hello");
    assert!(v["plugin"]["imports"].as_array().unwrap().iter().any(|i| i == "ludus:plugin/host@0.1.7"));
    let bump = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "hello_bump").unwrap();
    assert_eq!(bump["ludus"]["session"], serde_json::json!({"uses": "counter_id"}));
    assert_eq!(bump["inputSchema"]["properties"]["by"]["description"], "how much to add (1 to 1000, default 1)");
    assert_eq!(bump["inputSchema"]["required"], serde_json::json!(["counter_id"]), "option parameters are not required");
    assert_eq!(bump["outputSchema"]["properties"]["count"]["description"], "Current value.");
    assert!(bump["outputSchema"]["properties"].get("text").is_none(), "the text field is the agent's text, not data");
    assert_eq!(v["plugin"]["data"]["mapped"], false, "a few KB of data are copied into each session: {}", v["plugin"]["data"]);
    // Chess's 4.4 MB of move tables are mapped, and its session cap counts the mappings that costs.
    let (code, out, err) = run(&["inspect", component("chess").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let chess: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(chess["plugin"]["data"]["mapped"], true, "{}", chess["plugin"]["data"]);
    assert!(chess["plugin"]["maxSessions"].as_u64().unwrap() <= v["plugin"]["maxSessions"].as_u64().unwrap());
    // A built-in game by its name: the component inside the binary.
    let (code, out, err) = run(&["inspect", "chess"]);
    assert_eq!(code, 0, "{err}");
    let builtin: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&builtin["plugin"]["name"], &builtin["plugin"]["source"]), (&serde_json::json!("chess"), &serde_json::json!("built-in")));
    assert_eq!(builtin["tools"].as_array().unwrap().len(), chess["tools"].as_array().unwrap().len());
}

/// `serve --games` serves the games it names and lists only their tools; a
/// name the server does not have stops the start with the names it has.
#[tokio::test]
async fn serve_games_serves_only_the_games_named() {
    let work = scratch();
    let c = stdio(&["--games", "chess,hanoi"], work.path()).await;
    let names = c.tool_names().await;
    let games: std::collections::BTreeSet<&str> = names.iter().filter_map(|n| n.split_once('_')).map(|(game, _)| game).collect();
    assert_eq!(games, ["chess", "hanoi", "ludus"].into(), "{names:?}");
    let err = c.try_call("river_crossing_init_simulator", serde_json::json!({})).await.unwrap_err().to_string();
    assert!(err.contains("unknown tool"), "{err}");
    c.close().await;
    let (code, _, err) = run(&["serve", "--games", "chess,hanio"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "names `hanio`, which this server does not have; the built-in games are blocks_world, cards, checker_jumping, chess, hanoi"
        ),
        "{err}"
    );
}

/// `[plugins.NAME.rename]` names a tool; a function the game does not have,
/// or a host tool's name, stops the start with what is wrong.
#[tokio::test]
async fn a_renamed_tool_is_served_under_its_new_name() {
    let work = scratch();
    let cfg = config(work.path(), "[plugins.hanoi.rename]\nget_state = \"hanoi_state\"");
    let c = stdio(&["--games", "hanoi", "--config", cfg.to_str().unwrap()], work.path()).await;
    let names = c.tool_names().await;
    assert!(names.contains(&"hanoi_state".to_string()) && !names.contains(&"hanoi_get_state".to_string()), "{names:?}");
    let env = c.ok("hanoi_init_simulator", serde_json::json!({"n": 3})).await;
    let state = c.ok("hanoi_state", serde_json::json!({"env_id": env["env_id"]})).await;
    assert_eq!(state["state"][0], serde_json::json!([3, 2, 1]), "{state}");
    c.close().await;
    for (rename, why) in [
        ("get_stat = \"x\"", "rename names `get_stat`, which is not one of its functions (init_simulator, execute_move"),
        ("get_state = \"ludus_state\"", "rename gives `ludus_state`: the prefix `ludus` is reserved for host tools"),
    ] {
        let cfg = config(work.path(), &format!("[plugins.hanoi.rename]\n{rename}"));
        let (code, _, err) = run(&["serve", "--games", "hanoi", "--config", cfg.to_str().unwrap()]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn inspect_explains_why_a_component_cannot_load() {
    let (code, _, err) = run(&["inspect", component("bad_import").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("`ludus:bad-import/secrets`, which this host does not grant"), "{err}");
    let work = scratch();
    let junk = work.path().join("junk.wasm");
    std::fs::write(&junk, "hello").unwrap();
    let (code, _, err) = run(&["inspect", junk.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("not a valid WebAssembly component"), "{err}");
    let (code, _, err) = run(&["inspect", "/no/such/file.wasm"]);
    assert_eq!(code, 1);
    assert!(err.contains("/no/such/file.wasm: no such file"), "{err}");
    // A misspelt built-in game is told the names there are.
    let (code, _, err) = run(&["inspect", "chezz"]);
    assert_eq!(code, 1);
    assert!(err.contains("chezz: no such file, and no built-in game of that name") && err.contains("chess, hanoi"), "{err}");
}

#[test]
fn serve_refuses_a_missing_plugins_directory_and_a_bad_config() {
    let (code, _, err) = run(&["serve", "--plugins", "/no/such/dir"]);
    assert_eq!(code, 1);
    assert!(err.contains("the plugins directory /no/such/dir does not exist"), "{err}");
    let work = scratch();
    let cfg = work.path().join("bad.toml");
    std::fs::write(&cfg, "[limits]\ncall_timeout = 5\n").unwrap();
    let (code, _, err) = run(&["serve", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown field `call_timeout`"), "{err}");
    // A table for a game there is not is refused like an unknown key.
    std::fs::write(&cfg, "[plugins.chezz]\nmax_sessions = 5\n").unwrap();
    let (code, _, err) = run(&["serve", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("[plugins.chezz] but no such game: the built-in games are blocks_world, cards"), "{err}");
    // `--http` takes a host name: one that resolves serves there, one that does not is refused.
    let (code, _, err) = run(&["serve", "--http", "no-such-host.invalid:8000"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not HOST:PORT with a host this machine can resolve"), "{err}");
    let mut server = Command::new(BIN)
        .args(["serve", "--http", "localhost:0", "--store", "memory", "--games", "hanoi"])
        .env("XDG_DATA_HOME", work.path().join("data"))
        .env("LUDUS_LOG", "error")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let said = std::io::BufRead::lines(std::io::BufReader::new(server.stderr.take().unwrap()))
        .map_while(Result::ok)
        .find(|l| l.starts_with("LUDUS_HTTP_URL="))
        .expect("the server did not say where it serves");
    let _ = server.kill();
    let _ = server.wait();
    assert!(said.starts_with("LUDUS_HTTP_URL=http://127.0.0.1:"), "{said}");
}

/// `ludus doctor` names every built-in game with what it lacks; without
/// Node.js or Python the games that need them say so and the exit code is 1.
#[test]
fn doctor_says_which_games_are_ready_and_what_they_lack() {
    let work = scratch();
    let doctor = |path: &str| {
        let out = Command::new(BIN).args(["doctor"]).env("PATH", path).env("XDG_CACHE_HOME", work.path()).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).to_string())
    };
    let (code, out) = doctor(work.path().to_str().unwrap());
    assert_eq!(code, 1, "{out}");
    let line = |game: &str| out.lines().find(|l| l.starts_with(game)).unwrap_or_else(|| panic!("no line for {game}: {out}")).to_string();
    assert!(line("chess").contains("ok") && line("hanoi").contains("ok"), "{out}");
    assert!(line("showdown").contains("NO") && line("showdown").contains("apt-get install nodejs npm"), "{out}");
    assert!(line("cards").contains("NO") && line("cards").contains("Python 3.11+"), "{out}");
    assert!(line("openspiel").contains("NO") && line("openspiel").contains("Python 3.11+"), "{out}");
    // With this machine's PATH (the tests need node and python3): all ready,
    // engines not yet installed in this cache, and their registries answer.
    let (code, out) = doctor(&std::env::var("PATH").unwrap());
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(" NO "), "{out}");
    assert!(out.contains("installs on first use") && out.contains("the registry answers"), "{out}");
    // Registries out of reach (nothing listens there): each says so, in its installer's words.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = Command::new(BIN)
        .args(["doctor"])
        .env("XDG_CACHE_HOME", work.path())
        .env("npm_config_registry", format!("http://127.0.0.1:{closed}/"))
        .env("PIP_INDEX_URL", format!("http://127.0.0.1:{closed}/simple"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).to_string();
    let line = |game: &str| out.lines().find(|l| l.starts_with(game)).unwrap_or_else(|| panic!("no line for {game}: {out}")).to_string();
    assert!(
        line("showdown").contains("NO") && line("showdown").contains("`npm ping`") && line("showdown").contains("ECONNREFUSED"),
        "{out}"
    );
    assert!(line("cards").contains("NO") && line("cards").contains("Connection refused"), "{out}");
    assert!(line("openspiel").contains("NO") && line("openspiel").contains("Connection refused"), "{out}");
}

/// The bundled games are in the binary once each: a constant holding them
/// was copied into every place that used it (five copies, 40 MB of an
/// 85 MB binary).
#[test]
fn the_binary_carries_each_bundled_game_once() {
    let binary = std::fs::read(BIN).unwrap();
    for game in ["chess", "showdown", "hanoi"] {
        let bytes = std::fs::read(component(game)).unwrap();
        let needle = &bytes[..bytes.len().min(64 << 10)];
        let copies = binary.windows(needle.len()).filter(|w| w == &needle).count();
        assert_eq!(copies, 1, "{game}'s component is in the binary {copies} times");
    }
}

/// The `.cwasm` files under `dir`: components the server compiled and cached.
fn compiled_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(compiled_in(&path));
        } else if path.extension().is_some_and(|e| e == "cwasm") {
            found.push(path);
        }
    }
    found
}

/// A first start with an empty cache compiles no bundled game: each is
/// loaded from what was compiled of it when Ludus was built, so the first
/// `tools/list` lists them all at once. A compile would have left the
/// compiled component in the cache, as a game from the plugins directory
/// does (the second half shows that the cache check can see one).
#[tokio::test]
async fn an_empty_cache_serves_every_bundled_game_without_compiling_one() {
    let work = scratch();
    let c = stdio(&[], work.path()).await;
    let names = c.tool_names().await;
    for game in BUILT_IN_GAMES {
        assert!(names.iter().any(|n| n.starts_with(&format!("{game}_"))), "{game} is not listed: {names:?}");
    }
    let started = c.ok("hanoi_init_simulator", serde_json::json!({"n": 3})).await;
    assert!(started["env_id"].is_string(), "{started}");
    c.close().await;
    let cache = work.path().join("cache");
    assert_eq!(compiled_in(&cache), Vec::<std::path::PathBuf>::new(), "a bundled game was compiled at start");

    let plugins = plugins_dir(work.path(), &["hello"]);
    let c = stdio(&["--no-builtin", "--plugins", plugins.to_str().unwrap()], work.path()).await;
    assert!(c.tool_names().await.iter().any(|n| n.starts_with("hello_")));
    c.close().await;
    assert_eq!(compiled_in(&cache).len(), 1, "the plugins directory's game was not compiled and cached");
}

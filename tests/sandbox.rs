//! Hostile components are contained: each misbehaviour ends only its own
//! session, with a clear error, while everything else keeps working.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

#[tokio::test]
async fn runaway_memory_bomb_panic_and_flood_are_contained() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["hostile"]);
    let cfg = config(work.path(), "[plugins.hostile]\ncall_timeout_ms = 400\nmemory_mb = 32\n");
    let c = stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let start = || c.call("hostile_start", json!({}));
    let bystander = text(&start().await);
    assert_eq!(text(&c.call("hostile_ping", json!({"id": bystander})).await), "pong 1");

    // An infinite loop is stopped by the CPU limit (the epoch ticker really fires).
    let victim = text(&start().await);
    let t = Instant::now();
    let e = c.err("hostile_spin", json!({"id": victim})).await;
    let took = t.elapsed();
    assert!(e.contains("CPU limit of 400 ms"), "{e}");
    assert!(took < Duration::from_secs(5), "stopped after {took:?}");
    let e = c.err("hostile_ping", json!({"id": victim})).await;
    assert!(e.contains("has ended") && e.contains("CPU limit"), "the next call says what happened: {e}");

    // A memory bomb hits the per-session memory limit.
    let victim = text(&start().await);
    let e = c.err("hostile_bomb", json!({"id": victim})).await;
    assert!(e.contains("ran out of memory (limit 32 MiB"), "{e}");

    // A panic ends the session and its message is reported.
    let victim = text(&start().await);
    let e = c.err("hostile_crash", json!({"id": victim})).await;
    assert!(e.contains("panicked on purpose"), "{e}");

    // A flood of guest stdout never reaches the MCP stream (which would break this client).
    let victim = text(&start().await);
    // 5,000 lines (400 KB) are six times the 64 KiB kept; more would test the machine's speed against the 400 ms limit.
    assert_eq!(text(&c.call("hostile_flood", json!({"id": victim, "lines": 5000})).await), "5000");
    assert_eq!(text(&c.call("hostile_ping", json!({"id": victim})).await), "pong 1");

    // The bystander session and the other games never noticed.
    assert_eq!(text(&c.call("hostile_ping", json!({"id": bystander})).await), "pong 2");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    let s = c.ok("ludus_sessions", json!({"game": "hostile"})).await;
    let ended = s["sessions"].as_array().unwrap().iter().filter(|s| s["ended"].is_string()).count();
    assert_eq!(ended, 3, "{s}");
    c.close().await;
}

#[tokio::test]
async fn session_limits_and_idle_expiry_give_clear_errors() {
    let work = scratch();
    // Games stay in memory (none leaves to make room), so the limit is met.
    let cfg = config(work.path(), "[limits]\nunload_idle_after_ms = 0\n[plugins.hanoi]\nmax_sessions = 2\nidle_timeout_ms = 1500\n");
    let c = stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let a = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    let e = c.err("hanoi_init_simulator", json!({"n": 2})).await;
    assert!(e.contains("hanoi already runs 2 game sessions"), "{e}");
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let e = c.err("hanoi_get_state", json!({"env_id": a})).await;
    assert!(e.contains("no longer available") && e.contains("expired after 1 s without calls"), "{e}");
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    c.close().await;
}

/// At a limit, games that may leave memory make room instead of the new
/// game being refused: the longest-idle ones leave (kept as a restart keeps
/// them) and come back, as they were, on their next call.
#[tokio::test]
async fn at_a_limit_idle_games_leave_memory_to_make_room() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_sessions_per_caller = 3\n");
    let c = stdio(&["--config", cfg.to_str().unwrap(), "--store", "memory"], work.path()).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = c.ok("hanoi_init_simulator", json!({"n": 2})).await["env_id"].clone();
        c.ok("hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 1], "decision": 1})).await;
        ids.push(id);
    }
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    let games = c.ok("ludus_games", json!({})).await;
    let hanoi = games["games"].as_array().unwrap().iter().find(|g| g["name"] == "hanoi").unwrap().clone();
    assert!(hanoi["live_sessions"].as_u64().unwrap() < 4, "{hanoi}");
    assert_eq!(c.ok("ludus_sessions", json!({})).await["count"], 4);
    for id in ids {
        let state = c.ok("hanoi_get_state", json!({"env_id": id})).await;
        assert_eq!((&state["state"], &state["decision"]), (&json!([[2], [1], []]), &json!(2)), "{state}");
    }
    c.close().await;
}

/// One client cannot take every slot: past `max_sessions_per_caller` its new
/// games are refused with the limit named, while another client still starts
/// games.
#[tokio::test]
async fn one_client_cannot_take_every_session() {
    let work = scratch();
    let cfg = config(work.path(), "[limits]\nmax_sessions_per_caller = 3\nunload_idle_after_ms = 0\n");
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let (greedy, other) = (http_client(&server).await, http_client(&server).await);
    for _ in 0..3 {
        greedy.ok("hanoi_init_simulator", json!({"n": 2})).await;
    }
    let e = greedy.err("river_crossing_init_simulator", json!({"n": 2})).await;
    assert!(e.contains("you already run 3 game sessions") && e.contains("limits.max_sessions_per_caller"), "{e}");
    other.ok("hanoi_init_simulator", json!({"n": 2})).await;
}

// ------------------------------------------------------------ engine processes

/// The probe engine (`tests/fixtures/engine-probe/probe.py`) as the relay's
/// `probe` endpoint, with `engine` as its `[plugins.relay.engine]` lines.
fn probe_config(work: &std::path::Path, engine: &str) -> std::path::PathBuf {
    let probe = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/engine-probe/probe.py").canonicalize().unwrap();
    config(
        work,
        &format!(
            // The work directory in its arguments tells this test's probes from another's.
            "[plugins.relay.engine]\n{engine}\n[plugins.relay.channels.probe]\nprocess = {{ command = \"python3\", args = [{:?}, {:?}] }}\n",
            probe.display().to_string(),
            format!("--test={}", work.display())
        ),
    )
}

/// A relay session with the probe open: (session, channel).
async fn open_probe(c: &Client) -> (String, u64) {
    open_channel(c, "relay_start", "probe").await
}

/// Calls a relay's `start` tool (`tool`) on `endpoint`: (session, channel).
async fn open_channel(c: &Client, tool: &str, endpoint: &str) -> (String, u64) {
    let r = c.call(tool, json!({"endpoint": endpoint})).await;
    assert_ne!(r.is_error, Some(true), "{tool}({endpoint}) failed: {}", text(&r));
    let pair: Vec<serde_json::Value> = serde_json::from_str(&text(&r)).unwrap();
    (pair[0].as_str().unwrap().to_string(), pair[1].as_u64().unwrap())
}

/// Sends `line` to the probe and returns its answer: the `n`th message of the session.
async fn ask(c: &Client, (id, ch): &(String, u64), n: usize, line: &str) -> serde_json::Value {
    c.ok("relay_send", json!({"id": id, "channel": ch, "data": line})).await;
    let inbox = c.ok("relay_receive", json!({"id": id, "count": n})).await;
    let messages = inbox["messages"].as_array().unwrap();
    assert!(messages.len() >= n, "no answer to {line:?}: {inbox}");
    let text = messages[n - 1].as_str().unwrap();
    serde_json::from_str(text.split_once(':').unwrap().1).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The probe processes of the test whose work directory is `work`.
fn probes(work: &std::path::Path) -> Vec<u32> {
    common::processes::pids_with(&format!("engine-probe/probe.py --test={}", work.display()))
}

/// The one probe process of the test whose work directory is `work`.
fn probe_pid(work: &std::path::Path) -> u32 {
    let pids = probes(work);
    assert_eq!(pids.len(), 1, "one probe process expected: {pids:?}");
    pids[0]
}

/// An engine process has none of the server's environment, its own home,
/// and the kernel's limits; it cannot write outside its directory, read
/// the server's environment, signal it, or reach a TCP port.
#[tokio::test]
async fn an_engine_process_gets_only_what_it_was_granted() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["relay"]);
    let cfg = probe_config(work.path(), "env = { GRANTED = \"yes\" }\nmemory_mb = 768\nopen_files = 99\n");
    let canaries = [("LUDUS_CANARY_SECRET", "c4n4ry-b1rd"), ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-not-a-real-key")];
    let c = stdio_env(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path(), &canaries).await;
    let probe = open_probe(&c).await;

    let env = ask(&c, &probe, 1, "env").await;
    let names: Vec<&str> = env["env"].as_object().unwrap().keys().map(String::as_str).collect();
    assert!(!names.iter().any(|n| n.contains("CANARY") || n.contains("AWS")), "the server's secrets reached the engine: {names:?}");
    assert_eq!(env["env"]["GRANTED"], "yes", "the operator's grant is missing: {env}");
    let environ = std::fs::read(format!("/proc/{}/environ", probe_pid(work.path()))).unwrap();
    assert!(!String::from_utf8_lossy(&environ).contains("c4n4ry"), "the canary is in /proc/PID/environ");

    let at = ask(&c, &probe, 2, "where").await;
    let home = at["home"].as_str().unwrap().to_string();
    assert_eq!(at["cwd"].as_str(), Some(home.as_str()), "{at}");
    assert!(home.contains("/engines/") && home.starts_with(&*work.path().to_string_lossy()), "its own directory, under the cache: {at}");

    let inside = ask(&c, &probe, 3, &format!("write {home}/notes.txt")).await;
    assert!(inside["ok"].is_string(), "it cannot write its own directory: {inside}");
    let outside = work.path().join("outside.txt");
    let refused = ask(&c, &probe, 4, &format!("write {}", outside.display())).await;
    assert!(refused["error"].as_str().unwrap_or("").contains("PermissionError"), "{refused}");
    assert!(!outside.exists(), "a file was written outside the engine's directory");
    let server_pid = at["ppid"].as_u64().unwrap();
    let environ = ask(&c, &probe, 5, &format!("read /proc/{server_pid}/environ")).await;
    assert!(environ["error"].is_string(), "the engine read the server's environment: {environ}");
    let secret = ask(&c, &probe, 6, &format!("read {}", cfg.display())).await;
    assert!(secret["error"].as_str().unwrap_or("").contains("PermissionError"), "the engine read the server's config: {secret}");
    let signal = ask(&c, &probe, 7, &format!("signal {server_pid}")).await;
    assert!(signal["error"].is_string(), "the engine may signal the server: {signal}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tcp = ask(&c, &probe, 8, &format!("connect {port}")).await;
    assert!(tcp["error"].as_str().unwrap_or("").contains("PermissionError"), "TCP was not refused (Landlock ABI 4+ needed): {tcp}");

    let limits = std::fs::read_to_string(format!("/proc/{}/limits", probe_pid(work.path()))).unwrap();
    let limit = |name: &str| limits.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} not in {limits}")).to_string();
    assert!(limit("Max address space").contains(&(768u64 << 20).to_string()), "{limits}");
    assert!(limit("Max open files").contains("99"), "{limits}");
    assert!(limit("Max cpu time").contains("3600"), "{limits}");
    assert!(limit("Max core file size").split_whitespace().any(|w| w == "0"), "{limits}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", probe_pid(work.path()))).unwrap();
    assert!(status.lines().any(|l| l.starts_with("NoNewPrivs:") && l.ends_with('1')), "{status}");
    let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", probe_pid(work.path()))).unwrap();
    let own = cgroup.lines().find(|l| l.contains("ludus-")).unwrap_or_else(|| panic!("not in an engine cgroup: {cgroup}")).to_string();

    // A server that stops leaves none of its engines' directories or cgroups.
    c.close().await;
    let engines = work.path().join("cache/engines");
    let left = || std::fs::read_dir(&engines).map(|d| d.count()).unwrap_or(0);
    for _ in 0..50 {
        if left() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left(), 0, "scratch directories outlived the server in {}", engines.display());
    let dir = own.rsplit(':').next().unwrap().trim_start_matches('/');
    let dir = std::path::Path::new("/sys/fs/cgroup/pids").join(dir);
    assert!(!dir.exists() || !own.contains("pids"), "the engine's cgroup {} outlived the server", dir.display());
}

/// An engine that forks without end is held at its process limit and one
/// that allocates without end at its memory limit; the server and another
/// game go on, and closing the channel ends every process the bomb made.
#[tokio::test]
async fn a_fork_bomb_and_a_memory_bomb_are_stopped_by_their_limits() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["relay"]);
    let cfg = probe_config(work.path(), "processes = 24\nmemory_mb = 400\n");
    let c = stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let bystander = open_probe(&c).await;
    let bomber = open_probe(&c).await;

    let alloc = ask(&c, &bomber, 1, "alloc").await;
    assert!(alloc["error"].as_str().unwrap_or("").contains("MemoryError"), "{alloc}");
    assert_eq!(ask(&c, &bomber, 2, "bomb").await["ok"], "bombing");
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The bomber's processes besides the bystander's one.
    let held = probes(work.path()).len() - 1;
    assert!((3..=24).contains(&held), "the bomb has {held} processes; its limit is 24");

    // Everything else goes on.
    let at = ask(&c, &bystander, 1, "where").await;
    assert!(at["cwd"].is_string(), "{at}");
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;

    c.ok("relay_close", json!({"id": bomber.0, "channel": bomber.1})).await;
    let left = still_living(|| probes(work.path())).await;
    assert_eq!(left.len(), 1, "the bomb's processes outlived its channel (only the bystander should be left): {left:?}");
    c.close().await;
}

/// A plugin from the plugins directory that takes a built-in game's name
/// gets none of the built-in's engines; granted a simulator by the
/// operator, it still cannot make the simulator run JavaScript (`>eval`).
#[tokio::test]
async fn a_plugin_named_showdown_gets_no_engine_and_the_simulator_hears_only_battle_commands() {
    let work = scratch();
    let dir = work.path().join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    install(&dir, &component("impostor"), "showdown.wasm");
    let c = stdio(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    let e = c.err("showdown_start", json!({"endpoint": "sim"})).await;
    assert!(e.contains("not granted to plugin showdown"), "the impostor was given the built-in's simulator: {e}");
    c.close().await;

    // The operator grants it the simulator (the shipped launcher, on the npm package).
    let package = common::showdown::showdown_package();
    let cfg = config(work.path(), &common::showdown::sim_endpoint(&package));
    let c = stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let (id, ch) = open_channel(&c, "showdown_start", "sim").await;
    let planted = work.path().join("planted.txt");
    let attacks = [
        format!(">eval require('fs').writeFileSync({:?}, 'pwned')", planted.display().to_string()),
        ">eval process.stdout.write(JSON.stringify(process.env) + '\\n')".to_string(),
        ">evalbattle require('child_process').execSync('id')".to_string(),
        "eval 1".to_string(),
    ];
    for attack in &attacks {
        c.ok("showdown_send", json!({"id": id, "channel": ch, "data": attack})).await;
    }
    // A battle command still works: the simulator answers a start.
    c.ok("showdown_send", json!({"id": id, "channel": ch, "data": ">start {\"formatid\":\"gen9randombattle\"}"})).await;
    let inbox = c.ok("showdown_receive", json!({"id": id, "count": 2})).await;
    let said = inbox["messages"].to_string();
    assert!(said.contains("|gametype|") || said.contains("update"), "the simulator did not start the battle: {inbox}");
    assert!(!said.contains("PATH") && !said.contains("uid="), "an >eval ran: {inbox}");
    assert!(!planted.exists(), ">eval wrote a file");
    c.close().await;
}

/// One caller opening MCP sessions up to its share cannot make another
/// caller's `initialize` fail: at its share its own idle sessions close.
#[tokio::test]
async fn one_caller_opening_mcp_sessions_cannot_lock_out_another() {
    let work = scratch();
    let (greedy, greedy_lines) = issue_token("greedy");
    let (other, other_lines) = issue_token("other");
    let cfg =
        config(work.path(), &format!("[limits]\nmax_mcp_sessions = 60\nmax_mcp_sessions_per_caller = 40\n{greedy_lines}\n{other_lines}\n"));
    let server = http_server(&["--config", cfg.to_str().unwrap()], work.path()).await;
    let http = reqwest::Client::new();
    let initialize = |token: &str| {
        http.post(&server.url)
            .bearer_auth(token)
            .header("Accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
            .send()
    };
    let mut first = None;
    for i in 0..200 {
        let r = initialize(&greedy).await.unwrap();
        assert_eq!(r.status(), 200, "the greedy caller's own idle sessions make room for its new one ({i})");
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        first.get_or_insert(id);
    }
    for i in 0..30 {
        let r = initialize(&other).await.unwrap();
        assert_eq!(r.status(), 200, "another caller's initialize {i} failed: {}", r.text().await.unwrap());
    }
    // The greedy caller's oldest session made room: it is gone.
    let r = http
        .post(&server.url)
        .bearer_auth(&greedy)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", first.unwrap())
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// The real engines (Showdown's simulator from npm, the phase bridge with
/// phase-python, the OpenSpiel bridge with open_spiel) run with none of the
/// server's environment, in their own directories, under the limits.
#[tokio::test]
async fn the_real_engines_run_without_the_servers_secrets_and_under_their_limits() {
    let work = scratch();
    let package = common::showdown::showdown_package();
    let cfg = config(work.path(), &format!("whole_seeds = true\n{}", common::showdown::sim_endpoint(&package)));
    let canaries = [("LUDUS_CANARY_SECRET", "c4n4ry-b1rd"), ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-not-a-real-key")];
    let server = http_server_env(&["--config", cfg.to_str().unwrap()], work.path(), &canaries).await;
    let c = http_client(&server).await;
    common::showdown::offline(&c, "random", 1).await;
    let mut magic = c.ok("cards_start_game", json!({"seed": 3})).await;
    while magic["action_pending"] != true {
        magic = c.ok("cards_wait_for_action", json!({"game_id": magic["game_id"]})).await;
    }
    c.ok("openspiel_start_game", json!({"game": "tic_tac_toe"})).await;

    let engines = common::processes::descendants(server.pid());
    let cmdline = |pid: u32| String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()).replace('\0', " ");
    for name in ["showdown_sim.js", "phase_bridge.py", "openspiel_bridge.py"] {
        let pid = *engines.iter().find(|&&p| cmdline(p).contains(name)).unwrap_or_else(|| panic!("no {name} among {engines:?}"));
        let environ = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap()).replace('\0', "\n");
        assert!(!environ.contains("c4n4ry") && !environ.contains("AWS_"), "{name} has the server's secrets:\n{environ}");
        let home = environ.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap_or_default();
        assert!(home.contains("/engines/"), "{name}: HOME is not its own directory: {home}");
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
        assert_eq!(cwd, std::path::Path::new(home), "{name} runs elsewhere than its own directory");
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        assert!(limits.lines().any(|l| l.starts_with("Max address space") && l.contains(&(4096u64 << 20).to_string())), "{name}: {limits}");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.lines().any(|l| l.starts_with("NoNewPrivs:") && l.ends_with('1')), "{name}: {status}");
    }
}

/// Two games in one shared probe process: each is answered on its own
/// channel only, and an engine that floods one game with lines it has not
/// taken ends that game's channel alone, naming the bound, while the other
/// plays on.
#[tokio::test]
async fn a_shared_engine_flooding_one_game_ends_that_game_only() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["relay"]);
    let probe = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/engine-probe/probe.py").canonicalize().unwrap();
    let cfg = config(
        work.path(),
        &format!(
            "[engines]\nshards = 1\n[plugins.relay.channels.probe]\nprocess = {{ command = \"python3\", args = [{:?}, {:?}], tagged = true }}\n",
            probe.display().to_string(),
            format!("--test={}", work.path().display())
        ),
    );
    let c = stdio(&["--plugins", dir.to_str().unwrap(), "--config", cfg.to_str().unwrap()], work.path()).await;
    let (a, b) = (open_probe(&c).await, open_probe(&c).await);
    let (wa, wb) = (ask(&c, &a, 1, "where").await, ask(&c, &b, 1, "where").await);
    // Counted once both answered: until then the interpreter's launcher (a
    // pyenv shim, say) may still be forking helpers with the same arguments.
    assert_eq!(probes(work.path()).len(), 1, "two games, one shared probe");
    assert_eq!(wa["cwd"], wb["cwd"], "one process answers both: {wa} {wb}");
    assert!(ask(&c, &a, 2, "env").await["env"]["LUDUS_ENGINE_SHARED"] == "1");
    c.ok("relay_send", json!({"id": a.0, "channel": a.1, "data": "flood 200000"})).await;
    let mut closed = Vec::new();
    for _ in 0..100 {
        let inbox = c.ok("relay_receive", json!({"id": a.0, "count": 1_000_000})).await;
        closed = inbox["closed"].as_array().cloned().unwrap_or_default();
        if !closed.is_empty() {
            break;
        }
    }
    assert!(closed[0].as_str().unwrap().contains("more than 10000 lines it had not taken yet"), "{closed:?}");
    // The other game's channel still answers, from the same process.
    let again = ask(&c, &b, 2, "where").await;
    assert_eq!(again["cwd"], wb["cwd"], "{again}");
    let inbox = c.ok("relay_receive", json!({"id": b.0, "count": 2})).await;
    assert!(inbox["messages"].as_array().unwrap().iter().all(|m| !m.as_str().unwrap().contains(":0")), "a line of a's reached b: {inbox}");
}

//! Hot reload, end to end: a directory watched by the real binary.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Polls `ludus_games` until `check` holds (reloads happen in the background).
async fn until(c: &Client, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let g = c.ok("ludus_games", json!({})).await;
        if check(&g) {
            return g;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "timed out waiting for {what}: {g:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn game<'a>(g: &'a Value, name: &str) -> Option<&'a Value> {
    g["games"].as_array().unwrap().iter().find(|x| x["name"] == name)
}

#[tokio::test]
async fn add_change_corrupt_and_remove_a_plugin_without_restarting() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &[]);
    let mut c = stdio(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    assert!(!c.tool_names().await.contains(&"hello_greet".to_string()));

    // Add: the tools appear and the client hears about it.
    let added = Instant::now();
    install(&dir, &component("hello"), "hello.wasm");
    c.expect_list_changed(Duration::from_secs(10)).await;
    eprintln!("reload notification after {:?}", added.elapsed());
    assert!(c.tool_names().await.contains(&"hello_greet".to_string()));
    assert_eq!(text(&c.call("hello_greet", json!({"name": "Ada"})).await), "Hello, Ada!");
    let counter = c.ok("hello_start", json!({"start": 5})).await["counter_id"].clone();

    // Change: new sessions get the new behaviour; the live session keeps its version.
    install(&dir, &component("hello_v2"), "hello.wasm");
    until(&c, "hello 0.2.0", |g| game(g, "hello").is_some_and(|h| h["version"] == "0.2.0")).await;
    assert_eq!(text(&c.call("hello_greet", json!({"name": "Ada"})).await), "Hello again, Ada! (v2)");
    assert_eq!(c.ok("hello_bump", json!({"counter_id": counter})).await["count"], 6);
    let s = c.ok("ludus_sessions", json!({"game": "hello"})).await;
    assert_eq!(s["sessions"][0]["plugin_version"], "0.1.0", "{s}");

    // Corrupt: the last good version stays, the error is visible.
    let junk = work.path().join("junk.wasm");
    std::fs::write(&junk, b"\0asm this is not a component").unwrap();
    install(&dir, &junk, "hello.wasm");
    let g = until(&c, "the load error", |g| game(g, "hello").is_some_and(|h| h["last_error"].is_string())).await;
    let hello = game(&g, "hello").unwrap();
    assert_eq!(hello["version"], "0.2.0");
    assert!(hello["last_error"].as_str().unwrap().contains("not a valid WebAssembly component"), "{hello}");
    let file = g["files"].as_array().unwrap().iter().find(|f| f["file"].as_str().unwrap().ends_with("hello.wasm")).unwrap();
    assert!(file["error"].is_string(), "{file}");
    assert_eq!(text(&c.call("hello_greet", json!({"name": "Ada"})).await), "Hello again, Ada! (v2)");

    // A good file again clears the error.
    install(&dir, &component("hello"), "hello.wasm");
    until(&c, "hello 0.1.0 again", |g| game(g, "hello").is_some_and(|h| h["version"] == "0.1.0" && h["status"] == "ok")).await;

    // Remove: the tools go, and calls say why.
    std::fs::remove_file(dir.join("hello.wasm")).unwrap();
    c.expect_list_changed(Duration::from_secs(10)).await;
    assert!(!c.tool_names().await.contains(&"hello_greet".to_string()));
    let err = c.try_call("hello_greet", json!({"name": "Ada"})).await.unwrap_err().to_string();
    assert!(err.contains("plugin `hello` was unloaded"), "{err}");
    // The built-in games never noticed.
    c.ok("hanoi_init_simulator", json!({"n": 2})).await;
    c.close().await;
}

#[tokio::test]
async fn a_plugin_present_at_start_is_served_and_a_refused_one_is_reported() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["hello", "bad_import"]);
    std::fs::write(dir.join("notes.txt"), "not a plugin").unwrap();
    let c = stdio(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    assert_eq!(text(&c.call("hello_greet", json!({"name": "Bo"})).await), "Hello, Bo!");
    let g = c.ok("ludus_games", json!({})).await;
    let files = g["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "only *.wasm files count: {files:?}");
    let bad = files.iter().find(|f| f["file"].as_str().unwrap().ends_with("bad_import.wasm")).unwrap();
    let e = bad["error"].as_str().unwrap();
    assert!(e.contains("`ludus:bad-import/secrets`, which this host does not grant"), "{e}");
    assert!(game(&g, "bad_import").is_none());
    c.close().await;
}

/// Threads of a process, from /proc.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().count()
}

/// A watched directory must not keep the server busy: reading it raised an
/// event that scheduled the next read, 150 ms apart, for as long as the
/// server ran, and those reads, handed to one idle blocking thread after
/// another, kept a burst's dozen extra threads from ever timing out.
#[tokio::test]
async fn after_a_burst_a_server_watching_plugins_goes_back_to_its_threads() {
    let work = scratch();
    let dir = plugins_dir(work.path(), &["hello"]);
    let server = http_server(&["--plugins", dir.to_str().unwrap()], work.path()).await;
    let c = http_client(&server).await;
    c.ok("hanoi_init_simulator", json!({"n": 3})).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = threads(server.pid());

    // Many calls at once: each running guest call hands its worker's queue
    // to another thread, so the burst grows the runtime's thread pool.
    let peer = c.service.peer().clone();
    let burst = (0..400).map(|_| {
        let peer = peer.clone();
        async move {
            let args = json!({"n": 3}).as_object().cloned().unwrap();
            let r = peer.call_tool(rmcp::model::CallToolRequestParams::new("hanoi_init_simulator").with_arguments(args)).await.unwrap();
            assert_ne!(r.is_error, Some(true), "{}", text(&r));
        }
    });
    // The most threads seen while the burst runs.
    let pid = server.pid();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(threads(pid));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            most.max(threads(pid))
        })
    };
    futures_util::future::join_all(burst).await;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let during = sampler.await.unwrap();
    // The precondition: the burst really grew the pool (beyond the one thread
    // of slack allowed below), else going back to `before` proves nothing.
    assert!(during > before + 1, "the burst did not grow the thread pool: {before} threads before it, at most {during} during it");

    // Idle threads end after 2 s; give them 8.
    let start = std::time::Instant::now();
    let mut now = threads(server.pid());
    while now > before + 1 && start.elapsed() < Duration::from_secs(8) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        now = threads(server.pid());
    }
    eprintln!("threads: {before} before the burst, at most {during} during it, {now} {:?} later", start.elapsed());
    assert!(now <= before + 1, "{now} threads 8 s after a burst, {before} before it (at most {during} during it)");
    c.close().await;
}

//! Games in other languages: `cargo bench -p ludus --bench languages`.
//!
//! For the Rust `hello`, the Python example (Connect Four, componentize-py)
//! and the JavaScript example (Nim, componentize-js), measured in one run:
//! - component size;
//! - cold load: `ludus inspect` with an empty component cache (compile,
//!   instantiate, describe), and warm load: the same with the cache filled;
//! - session start: one creating call (a fresh instance) over stdio, p50;
//! - a read-only call in a live session over stdio, p50 (the minimal
//!   one-line-at-a-time client of the speed benchmark);
//! - resident memory per live session (100 sessions).
//!
//! The examples are built with their own build scripts first (which install
//! the toolchains from PyPI and npm on first use). Prints a Markdown table for
//! the README. Nothing here is asserted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::{BIN, RawClient, percentiles, rss_kib, tool_call};

fn call(id: usize, name: &str, args: Value) -> String {
    tool_call(id as u64, name, args).to_string()
}

struct Game {
    label: &'static str,
    component: PathBuf,
    /// The creating tool and its arguments.
    start: (&'static str, Value),
    /// A read-only tool of a live session, and the parameter naming it.
    read: (&'static str, &'static str),
    /// Where the creating tool's answer carries the session id.
    id_field: &'static str,
}

fn build(script: &str, out: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(root.join(script)).arg(out).env("LUDUS", BIN).status().expect("running the build script");
    assert!(status.success(), "{script} failed");
    out.to_path_buf()
}

/// Wall time of `ludus inspect` with this config (and so this cache).
fn inspect(component: &Path, cfg: &Path) -> Duration {
    let t = Instant::now();
    let out = Command::new(BIN).arg("inspect").arg(component).arg("--config").arg(cfg).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    t.elapsed()
}

fn session_id(answer: &Value, field: &str) -> String {
    let content = &answer["result"]["structuredContent"];
    let id = if field.is_empty() { answer["result"]["content"][0]["text"].clone() } else { content[field].clone() };
    id.as_str().unwrap_or_else(|| panic!("no session id in {answer}")).to_string()
}

struct Row {
    size: u64,
    cold: Duration,
    warm: Duration,
    start: Duration,
    read: Duration,
    per_session_kib: u64,
}

fn measure(game: &Game, work: &Path) -> Row {
    let cache = work.join(format!("cache-{}", game.label.replace(' ', "-")));
    let cfg = work.join(format!("{}.toml", game.label.replace(' ', "-")));
    std::fs::write(&cfg, format!("cache_dir = {:?}\n[limits]\nmax_sessions_per_caller = 1000\n", cache.display().to_string())).unwrap();
    let cold = inspect(&game.component, &cfg);
    let warm = (0..3).map(|_| inspect(&game.component, &cfg)).min().unwrap();

    let plugins = work.join(format!("plugins-{}", game.label.replace(' ', "-")));
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&game.component, plugins.join("game.wasm")).unwrap();
    let mut c = RawClient::serve(&["--no-builtin", "--plugins", plugins.to_str().unwrap()], &cfg);
    let (start_tool, start_args) = &game.start;
    let first = c.ask(&call(1, start_tool, start_args.clone()));
    let id = session_id(&first, game.id_field);

    let before = rss_kib(c.child.id());
    let mut starts = Vec::new();
    for i in 0..100 {
        let t = Instant::now();
        let answer = c.ask(&call(10 + i, start_tool, start_args.clone()));
        starts.push(t.elapsed());
        assert!(answer["result"]["isError"] != true, "{answer}");
    }
    let per_session_kib = rss_kib(c.child.id()).saturating_sub(before) / 100;

    let (read_tool, param) = game.read;
    let (read, _) = c.round_trips(|i| call(1_000 + i, read_tool, json!({ param: id })));
    let _ = c.child.kill();
    Row { size: std::fs::metadata(&game.component).unwrap().len(), cold, warm, start: percentiles(starts).0, read, per_session_kib }
}

fn kib(k: u64) -> String {
    if k < 1024 { format!("{k} KiB") } else { format!("{:.1} MiB", k as f64 / 1024.0) }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let work = tempfile::tempdir().unwrap();
    let built = Path::new(env!("CARGO_TARGET_TMPDIR")).join("languages-bench");
    std::fs::create_dir_all(&built).unwrap();
    eprintln!("building the Python and JavaScript examples with their build scripts…");
    let games = [
        Game {
            label: "Rust (hello)",
            component: Path::new(env!("LUDUS_WASM_DIR")).join("hello.wasm"),
            start: ("hello_start", json!({})),
            read: ("hello_whoami", "counter_id"),
            id_field: "counter_id",
        },
        Game {
            label: "Python (Connect Four)",
            component: build("sdk/examples/python-connect-four/build.sh", &built.join("connect_four.wasm")),
            start: ("connect_four_start", json!({})),
            read: ("connect_four_get_state", "game_id"),
            id_field: "game_id",
        },
        Game {
            label: "JavaScript (Nim)",
            component: build("sdk/examples/js-nim/build.sh", &built.join("nim.wasm")),
            start: ("nim_start", json!({})),
            read: ("nim_get_state", "game_id"),
            id_field: "game_id",
        },
    ];
    println!("| game | component | cold load | warm load | session start p50 | call p50 (stdio) | memory per session |");
    println!("|---|---|---|---|---|---|---|");
    for game in &games {
        let r = measure(game, work.path());
        println!(
            "| {} | {:.1} MB | {} | {} | {:.2} ms | {:.0} µs | {} |",
            game.label,
            r.size as f64 / 1e6,
            ms(r.cold),
            ms(r.warm),
            r.start.as_secs_f64() * 1e3,
            r.read.as_secs_f64() * 1e6,
            kib(r.per_session_kib)
        );
    }
}

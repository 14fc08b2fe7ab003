//! `LUDUS_BENCH=million`: a million games kept in the store file, with the
//! server's memory flat.
//!
//! Over stdio, 1,000,000 Hanoi puzzles (N=3; `LUDUS_BENCH_GAMES` for
//! another count) are started 500 at a time on the default store file and
//! leave memory after 1 s. After each tenth, the server's resident memory
//! once it settles. Then the first game is solved (its first move rebuilds
//! it), and the server is stopped and started again on the same file: its
//! memory, and the time from the start to the first answered call on a
//! game in the middle of the file. With `LUDUS_BENCH_BASELINE=/path/to/ludus`
//! that build runs the same first, in the same run. Nothing is asserted
//! beyond the answers being right.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{BIN, RawClient, read_answer, rss_kib, serve_command_of, tool_call};

pub fn million_stored(cfg: &Path) {
    let games: usize = std::env::var("LUDUS_BENCH_GAMES").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let mut builds = vec![("this build", BIN.to_string())];
    if let Ok(baseline) = std::env::var("LUDUS_BENCH_BASELINE") {
        builds.insert(0, ("baseline", baseline));
    }
    let dir = cfg.parent().unwrap().join("million");
    std::fs::create_dir_all(&dir).unwrap();
    let base = std::fs::read_to_string(cfg).unwrap();
    let cache = base.lines().next().unwrap();
    let file = dir.join("million.toml");
    let limits = "max_sessions = 10000000\nmax_sessions_per_plugin = 10000000\nmax_sessions_per_caller = 10000000";
    // The puzzles expire after 2 min idle, sooner than a million start: an hour here.
    let hanoi = "[plugins.hanoi]\nidle_timeout_ms = 3600000";
    std::fs::write(&file, format!("{cache}\n[limits]\n{limits}\nunload_idle_after_ms = 1000\n{hanoi}\n")).unwrap();
    for (name, bin) in builds {
        let store = dir.join("games.db");
        for leftover in ["games.db", "games.db-wal", "games.db-shm", "games.lock"] {
            let _ = std::fs::remove_file(dir.join(leftover));
        }
        let serve = || RawClient::initialize(serve_command_of(&bin, &["--store", store.to_str().unwrap()], &file));
        let mut c = serve();
        let pid = c.child.id();
        let before = rss_kib(pid);
        let mut ids = Vec::with_capacity(games);
        let mut curve = Vec::new();
        let started = Instant::now();
        // The pauses to read memory are not starting time.
        let mut paused = Duration::ZERO;
        let tenth = (games / 10).max(500);
        while ids.len() < games {
            let n = 500.min(games - ids.len());
            start_puzzles(&mut c, &mut ids, n);
            if ids.len() % tenth == 0 || ids.len() == games {
                let pause = Instant::now();
                std::thread::sleep(Duration::from_millis(3_000));
                curve.push((ids.len(), crate::settled_rss_kib(pid)));
                eprintln!("million, {name}: {} games, resident {} MiB", ids.len(), mib(curve.last().unwrap().1));
                paused += pause.elapsed();
            }
        }
        let made = started.elapsed() - paused;
        let (first_n, first_rss) = curve[0];
        let (last_n, last_rss) = *curve.last().unwrap();
        eprintln!(
            "million, {name}: {games} games started in {:.0} s ({:.0} per second); resident {} MiB before, {} MiB at {first_n}, {} MiB at {last_n}: \
             {:.3} KiB per game from the first tenth to the last",
            made.as_secs_f64(),
            games as f64 / made.as_secs_f64(),
            mib(before),
            mib(first_rss),
            mib(last_rss),
            (last_rss as f64 - first_rss as f64) / (last_n - first_n).max(1) as f64
        );
        let size: u64 = ["games.db", "games.db-wal"].iter().filter_map(|f| std::fs::metadata(dir.join(f)).ok()).map(|m| m.len()).sum();
        eprintln!("million, {name}: store file {} MiB ({:.2} KiB per game)", size / (1 << 20), size as f64 / 1024.0 / games as f64);
        let took = solve(&mut c, &ids[0], 100);
        eprintln!("million, {name}: the first game solved, out of memory; its first move {:.1} µs", took.as_secs_f64() * 1e6);
        // Stopped as a service manager stops it (stdin closed), then started on the same file.
        drop(c.input);
        let _ = c.child.wait();
        let restarted = Instant::now();
        let mut c = serve();
        let middle = &ids[games / 2];
        let state = c.ask(&tool_call(3, "hanoi_get_state", json!({"env_id": middle})).to_string());
        let answered = restarted.elapsed();
        assert!(state["result"]["structuredContent"]["state"].is_array(), "{state}");
        eprintln!(
            "million, {name}: restarted on {games} stored games: a stored game's state answered {:.0} ms after the start; resident {} MiB",
            answered.as_secs_f64() * 1e3,
            mib(rss_kib(c.child.id()))
        );
        let _ = c.child.kill();
        let _ = c.child.wait();
    }
}

/// Starts `n` puzzles at once and files their ids.
fn start_puzzles(c: &mut RawClient, ids: &mut Vec<String>, n: usize) {
    for i in 0..n {
        c.send(&tool_call(i as u64 + 10, "hanoi_init_simulator", json!({"n": 3})).to_string());
    }
    for _ in 0..n {
        let answer = read_answer(&mut c.output);
        let id = answer["result"]["structuredContent"]["env_id"].as_str().unwrap_or_else(|| panic!("{answer}"));
        ids.push(id.to_string());
    }
}

/// Solves puzzle `env` (three disks) in seven moves, numbered from
/// `first_id`; how long its first move took.
fn solve(c: &mut RawClient, env: &str, first_id: u64) -> Duration {
    let plan = [[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]];
    let mut first = Duration::ZERO;
    for (i, m) in plan.iter().enumerate() {
        let t = Instant::now();
        let answer = c.ask(&tool_call(first_id + i as u64, "hanoi_execute_move", json!({"env_id": env, "move": m})).to_string());
        if i == 0 {
            first = t.elapsed();
        }
        let result = &answer["result"]["structuredContent"];
        assert_eq!(result["goal_reached"], i == plan.len() - 1, "{answer}");
    }
    first
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

//! Soak: `cargo bench -p ludus --bench soak` (release build; bounded, all
//! traffic on 127.0.0.1). Against one `ludus serve --http`:
//! 1. 50,000 Hanoi sessions created (five waves of 10,000) and expired;
//! 2. 100,000 MCP sessions created (initialize) and deleted, then 10,000
//!    held at once and deleted;
//! 3. 2,000 waiting calls whose clients go away mid-wait;
//! 4. 20 Showdown battles and 20 Magic games started, then ended (forfeit,
//!    concede): their game processes must end with them (the sessions
//!    themselves stay, readable, until they expire).
//!
//! After each phase it prints the server's resident memory, its open file
//! descriptors and its game processes (with their memory) against the
//! baseline taken after a warm-up. Nothing is asserted: the figures go into
//! `docs/benchmarks.md`. Needs the Showdown simulator the Showdown tests
//! install (or `LUDUS_SHOWDOWN`) and python3 for the Magic engine.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

mod common;

use common::{BIN, descendants, post, proc_status, rpc_result, rss_kib, tool_call};

const CONCURRENCY: usize = 16;

struct Server {
    child: tokio::process::Child,
    url: String,
}

/// The MCP session idle limit of the soak's server (30 minutes by default).
const MCP_IDLE_MS: u64 = 10_000;

impl Server {
    async fn start(work: &Path) -> Server {
        let plugins = work.join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::copy(Path::new(env!("LUDUS_WASM_DIR")).join("hello.wasm"), plugins.join("hello.wasm")).unwrap();
        let cfg = work.join("soak.toml");
        std::fs::write(
            &cfg,
            format!(
                "cache_dir = {:?}\n[limits]\nmax_sessions_per_caller = 100000\nmax_waits_per_session = 5000\nmax_http_connections = 4096\n\
                 max_http_connections_per_address = 4096\n\
                 mcp_session_idle_ms = {MCP_IDLE_MS}\nmax_processes = {GAME_PROCESSES}\nmax_processes_per_caller = {GAME_PROCESSES}\n\
                 [plugins.hanoi]\nidle_timeout_ms = 1000\n{}",
                work.join("cache").display().to_string(),
                common::showdown_sim(&common::showdown_package()),
            ),
        )
        .unwrap();
        let mut child = tokio::process::Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(&plugins)
            .arg("--config")
            .arg(&cfg)
            .env("LUDUS_LOG", "error")
            .env("XDG_DATA_HOME", work.join("data"))
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let l = lines.next_line().await.unwrap().expect("the server exited");
            if let Some(u) = l.strip_prefix("LUDUS_HTTP_URL=") {
                break u.to_string();
            }
        };
        // Only errors are logged (LUDUS_LOG=error): show them.
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                eprintln!("server: {l}");
            }
        });
        Server { child, url }
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    fn threads(&self) -> u64 {
        proc_status(self.pid(), "Threads")
    }

    fn footprint(&self) -> Footprint {
        let games = descendants(self.pid());
        Footprint {
            rss_kib: rss_kib(self.pid()),
            fds: std::fs::read_dir(format!("/proc/{}/fd", self.pid())).map(|d| d.count()).unwrap_or(0),
            processes: games.len(),
            processes_kib: games.iter().map(|&p| rss_kib(p)).sum(),
        }
    }
}

/// What the server holds: its own memory and descriptors, and its game
/// processes (the simulators and bridges it started) with their memory.
#[derive(Clone, Copy)]
struct Footprint {
    rss_kib: u64,
    fds: usize,
    processes: usize,
    processes_kib: u64,
}

/// Room for phase 4's game processes: 20 simulators (the soak runs the npm
/// package's `simulate-battle` directly, one process a battle) and 20 bridges.
const GAME_PROCESSES: usize = 60;

/// A plain Streamable HTTP client of one MCP session.
#[derive(Clone)]
struct Session {
    http: reqwest::Client,
    url: Arc<str>,
    id: Arc<str>,
}

impl Session {
    /// Opens a session on a connection of its own.
    async fn open(url: &str) -> Session {
        Session::open_with(reqwest::Client::new(), url).await
    }

    /// Opens a session through `http`'s connections.
    async fn open_with(http: reqwest::Client, url: &str) -> Session {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}}});
        let (id, _) = post(&http, url, None, init).await;
        let id = id.expect("an mcp-session-id");
        post(&http, url, Some(&id), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        Session { http, url: url.into(), id: id.into() }
    }

    async fn call(&self, rid: u64, tool: &str, args: Value) -> Value {
        rpc_result(&post(&self.http, &self.url, Some(&self.id), tool_call(rid, tool, args)).await.1)["structuredContent"].clone()
    }

    async fn delete(&self) {
        let _ = self.http.delete(&*self.url).header("mcp-session-id", &*self.id).send().await;
    }
}

/// Runs `n` jobs, `CONCURRENCY` at a time.
async fn in_parallel<F, Fut>(n: usize, job: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let job = Arc::new(job);
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|w| {
            let job = job.clone();
            tokio::spawn(async move {
                let mut i = w;
                while i < n {
                    job(i).await;
                    i += CONCURRENCY;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One row of the table: the phase, its time, and the footprint after it.
fn report(what: &str, base: Footprint, now: Footprint, took: Duration) {
    let change = (now.rss_kib as f64 - base.rss_kib as f64) / base.rss_kib as f64 * 100.0;
    println!(
        "| {what} | {:.1} s | {:.0} MiB ({change:+.0} % of the baseline {:.0} MiB) | {} ({:+}) | {} |",
        took.as_secs_f64(),
        mib(now.rss_kib),
        mib(base.rss_kib),
        now.fds,
        now.fds as i64 - base.fds as i64,
        processes(now)
    );
}

/// A row measured in passing (no time, no comparison).
fn note(what: &str, now: Footprint) {
    println!("| {what} | | {:.0} MiB | {} | {} |", mib(now.rss_kib), now.fds, processes(now));
}

fn processes(f: Footprint) -> String {
    match f.processes {
        0 => "0".into(),
        n => format!("{n} ({:.0} MiB)", mib(f.processes_kib)),
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // reqwest's HTTP client needs the TLS provider installed, even for http://.
    ludus::capability::channels::install_tls_provider();
    let work = tempfile::tempdir().unwrap();
    let server = Server::start(work.path()).await;
    let url = server.url.clone();
    let games = Session::open(&url).await;

    // Warm-up: every code path once, then the baseline.
    for i in 0..200 {
        games.call(i, "hanoi_init_simulator", json!({"n": 3})).await;
    }
    for i in 0..200 {
        Session::open(&url).await.delete().await;
        let _ = i;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let base = server.footprint();
    println!(
        "| phase | took | server resident memory after | open fds after | game processes after (their memory) |\n|---|---|---|---|---|"
    );
    note(&format!("baseline (after a warm-up; {} threads)", server.threads()), base);

    // 1. 50,000 game sessions, created in waves and left to expire (1 s idle).
    let t = Instant::now();
    let mut peak = 0;
    for wave in 0..5u64 {
        let g = games.clone();
        in_parallel(10_000, move |i| {
            let g = g.clone();
            async move {
                let r = g.call(wave * 1_000_000 + i as u64, "hanoi_init_simulator", json!({"n": 3})).await;
                assert!(r["env_id"].is_string(), "a session failed to start: {r}");
            }
        })
        .await;
        peak = peak.max(server.footprint().rss_kib);
        // Idle expiry is checked every second; 1 s idle plus a margin.
        tokio::time::sleep(Duration::from_secs(3)).await;
        // Growth that stops after the first waves is the allocator keeping
        // freed memory; growth with every wave would be a leak.
        note(&format!("… after wave {} of 10,000 expired ({} threads)", wave + 1, server.threads()), server.footprint());
    }
    // tokio's blocking threads (instances start there) idle out after 10 s;
    // what they hold (stacks, their allocator arenas) goes with them or not.
    // (The games' MCP session, idle meanwhile, must not expire: 10 s idle.)
    tokio::time::sleep(Duration::from_secs(6)).await;
    games.call(9_999_998, "ludus_sessions", json!({"game": "hanoi"})).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    note(&format!("… 12 s later ({} threads)", server.threads()), server.footprint());
    let left = games.call(9_999_999, "ludus_sessions", json!({"game": "hanoi"})).await["count"].clone();
    report(
        &format!("50,000 Hanoi sessions created (5 × 10,000) and expired ({left} left; peak {:.0} MiB)", peak as f64 / 1024.0),
        base,
        server.footprint(),
        t.elapsed(),
    );

    // 2. 100,000 MCP sessions created and deleted.
    let t = Instant::now();
    let u: Arc<str> = url.as_str().into();
    in_parallel(100_000, move |_| {
        let u = u.clone();
        async move { Session::open(&u).await.delete().await }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    report("100,000 MCP sessions created and deleted", base, server.footprint(), t.elapsed());

    // 2b. 10,000 MCP sessions held at once (over the client's few kept-alive
    // connections: this measures sessions, not connections), then deleted.
    let t = Instant::now();
    let held: Arc<std::sync::Mutex<Vec<Session>>> = Default::default();
    let (u, h, http) = (Arc::<str>::from(url.as_str()), held.clone(), reqwest::Client::new());
    in_parallel(10_000, move |_| {
        let (u, h, http) = (u.clone(), h.clone(), http.clone());
        async move {
            let s = Session::open_with(http, &u).await;
            h.lock().unwrap().push(s);
        }
    })
    .await;
    note("… 10,000 MCP sessions open at once", server.footprint());
    let sessions = std::mem::take(&mut *held.lock().unwrap());
    for chunk in sessions.chunks(CONCURRENCY) {
        futures_util::future::join_all(chunk.iter().map(Session::delete)).await;
    }
    drop(sessions);
    tokio::time::sleep(Duration::from_secs(2)).await;
    report("10,000 MCP sessions held at once, then deleted", base, server.footprint(), t.elapsed());

    // 3. 2,000 waiting calls whose clients go away mid-wait (on a session of
    // its own: the first one has been idle through phase 2 and expired).
    let t = Instant::now();
    let games = Session::open(&url).await;
    let counter = games.call(20_000_000, "hello_start", json!({})).await["counter_id"].clone();
    let waits: Vec<_> = (0..2_000u64)
        .map(|i| {
            let (u, c) = (url.clone(), counter.clone());
            tokio::spawn(async move {
                let s = Session::open(&u).await;
                let body = tool_call(i, "hello_wait_for", json!({"counter_id": c, "at_least": 1_000_000}));
                // Send, read the headers, then go away with the body unread.
                let _ = s
                    .http
                    .post(&*s.url)
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-session-id", &*s.id)
                    .header("mcp-protocol-version", "2025-06-18")
                    .json(&body)
                    .send()
                    .await;
            })
        })
        .collect();
    for w in waits {
        let _ = w.await;
    }
    let waiting = || async {
        games.call(30_000_000, "ludus_sessions", json!({"game": "hello"})).await["sessions"][0]["waiting_calls"].as_u64().unwrap_or(0)
    };
    let mut still = waiting().await;
    for _ in 0..50 {
        if still == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        still = waiting().await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    report(&format!("2,000 waits abandoned by their clients ({still} still waiting afterwards)"), base, server.footprint(), t.elapsed());
    // Their clients never said DELETE: their MCP sessions go when idle expiry
    // (mcp_session_idle_ms, swept every quarter of it) catches them.
    tokio::time::sleep(Duration::from_millis(MCP_IDLE_MS * 3 / 2)).await;
    report(&format!("… and their 2,000 MCP sessions expired ({} s idle)", MCP_IDLE_MS / 1000), base, server.footprint(), t.elapsed());

    // 4. Games with processes: 20 offline Showdown battles (a simulator each)
    // and 20 Magic games (a bridge each), started, then ended.
    let t = Instant::now();
    let players = Session::open(&url).await;
    let mut rid = 40_000_000;
    let mut next = || {
        rid += 1;
        rid
    };
    let mut battles = Vec::new();
    for seed in 0..20 {
        let r = players.call(next(), "showdown_start_offline_battle", json!({"bot": "random", "seed": seed})).await;
        battles.push(r["battle_id"].as_str().unwrap_or_else(|| panic!("a battle failed to start: {r}")).to_string());
    }
    let mut games = Vec::new();
    for seed in 0..20 {
        let r = players.call(next(), "cards_start_game", json!({"seed": seed})).await;
        games.push(r["game_id"].as_str().unwrap_or_else(|| panic!("a Magic game failed to start: {r}")).to_string());
    }
    report("20 Showdown battles and 20 Magic games started", base, server.footprint(), t.elapsed());
    let t = Instant::now();
    for id in &battles {
        players.call(next(), "showdown_forfeit_battle", json!({"battle_id": id})).await;
    }
    for id in &games {
        players.call(next(), "cards_concede", json!({"game_id": id})).await;
    }
    let ended = t.elapsed();
    while !descendants(server.pid()).is_empty() && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let gone = t.elapsed();
    report(
        &format!(
            "… all 40 ended (answers in {:.1} s; the last process gone {:.1} s after the first forfeit)",
            ended.as_secs_f64(),
            gone.as_secs_f64()
        ),
        base,
        server.footprint(),
        t.elapsed(),
    );
    players.delete().await;
}

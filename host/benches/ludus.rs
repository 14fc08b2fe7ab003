//! Ludus benchmarks: `cargo bench -p ludus --bench ludus` (release build).
//!
//! Measures, in one run, and prints a Markdown table (copied into docs/benchmarks.md):
//! - tool-call latency p50/p99 of a trivial session call (`hanoi_get_state`)
//!   inside the server (registry → session → component, no transport), over
//!   stdio and over Streamable HTTP through rmcp's client and through minimal
//!   clients (one line or one request at a time, answers read whole), next to
//!   each transport's floor on this machine (`cat` over pipes, a minimal hyper
//!   server, a minimal C server, the same with 0–8 µs of work per request);
//!   a call after half a second of quiet; pipelined calls over stdio and
//!   whether they come back in order; chess `finish_turn` at level 1; HTTP
//!   with 1, 16 and 200 clients, and the C server under the 200;
//! - new sessions per second (inside the server and over stdio);
//! - resident memory of the server with 10,000 live puzzle sessions;
//! - hot-reload latency from a rename into the plugins directory to the
//!   `tools/list_changed` notification;
//! - a first start to ready (first `tools/list` answered) with an empty
//!   component cache, and each game's first call (`LUDUS_BENCH=start` alone);
//! - one `cards_choose_action` round trip of Magic on the phase bridge (two
//!   agents over HTTP), which needs python3 3.11+ and installs the engine on
//!   first use (skipped with the reason when it cannot).
//!
//! Timings are wall-clock on whatever machine runs it; ratios between rows
//! are the comparable part. Nothing here is asserted.
//!
//! `LUDUS_BENCH=chess cargo bench -p ludus --bench ludus` measures only chess
//! `finish_turn` (three rounds over stdio, then inside the server): a minute
//! instead of five, for working on that path. `LUDUS_BENCH=stdio` measures
//! only `ping` and `hanoi_get_state` one at a time over stdio (three rounds
//! across cores, one on CPU 0); `LUDUS_BENCH=pace` the server's CPU per call
//! for a quick client, a slow one and none; `LUDUS_BENCH=tools` the bytes
//! of `tools/list` per game; `LUDUS_BENCH=http` only the HTTP rows of the
//! minimal and concurrent clients (three rounds); with
//! `LUDUS_BENCH_BASELINE=/path/to/ludus` as well (with `http`, `stdio`, `pace`, `store` or `million`), those against another build
//! of Ludus in the same run (before and after a change);
//! `LUDUS_BENCH_BUSY_POLL_US=N` runs the servers with `limits.busy_poll_us`
//! N instead of its default. `LUDUS_BENCH=store`
//! measures what keeping games across restarts costs: a changing call and a
//! read-only one with the session store against `--store memory`, and the
//! time from a restart to the first answered call with 10,000 stored games.
//! `LUDUS_BENCH=engines` what confining an engine process adds to a game's
//! start; `LUDUS_BENCH=shared` 200 and 1,000 live OpenSpiel games in shared
//! bridge processes (memory, a move's round trip). `LUDUS_BENCH=idle` measures games that leave memory while idle: memory
//! per game with 100,000 puzzles, and the first call on a puzzle or a chess
//! game out of memory; `LUDUS_BENCH=million` a million puzzles kept in the
//! store file, with the server's memory flat (`million/`).
//! `LUDUS_BENCH=verify` measures `ludus verify` per record of each game
//! (Hanoi, chess against the engine, an offline Showdown battle when the
//! tests' simulator package is installed) and what the action log adds to
//! a record. `LUDUS_BENCH=cluster` measures several servers on Redis (Debian's
//! redis-server and nginx): a call with games in Redis against SQLite and
//! memory, and 200 sessions through nginx in front of one server and two.
//! `LUDUS_BENCH=openspiel` measures OpenSpiel's games (installs `open_spiel`
//! on first use): a move's round trip against `random` in tic-tac-toe and
//! connect four beside the same moves made in `pyspiel` directly in the same
//! run, memory per live game, and the MCTS levels' time per move.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

mod common;
// Redis and nginx as the tests start them (`LUDUS_BENCH=cluster`).
#[path = "../../tests/common/cluster.rs"]
mod cluster;
mod million;

use common::{BIN, RawClient, RawHttp, percentiles, read_answer, rpc_result, rss_kib, tool_call};

#[derive(Clone)]
struct Notified(mpsc::UnboundedSender<Instant>);

impl ClientHandler for Notified {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(Instant::now());
    }
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

type Client = RunningService<RoleClient, Notified>;

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

async fn call(c: &Client, name: &str, a: Value) -> Value {
    let r = c.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(a))).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{name}: {:?}", r.content);
    r.structured_content.unwrap_or(Value::Null)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn config_file(dir: &Path, cache: &Path) -> PathBuf {
    let p = dir.join("bench.toml");
    std::fs::write(
        &p,
        format!(
            "cache_dir = {:?}\n[limits]\nmax_sessions = 100000\nmax_sessions_per_plugin = 100000\nmax_sessions_per_caller = 100000\nmax_engine_games_per_caller = 100000\n{}",
            cache.display().to_string(),
            // `LUDUS_BENCH_BUSY_POLL_US`: the servers' `limits.busy_poll_us` (default 100).
            std::env::var("LUDUS_BENCH_BUSY_POLL_US").map(|v| format!("busy_poll_us = {v}\n")).unwrap_or_default()
        ),
    )
    .unwrap();
    p
}

async fn stdio_client(extra: &[&str], cfg: &Path) -> (Client, mpsc::UnboundedReceiver<Instant>) {
    let mut cmd = tokio::process::Command::new(BIN);
    // Games are kept next to the config, not in the user's data dir.
    cmd.arg("serve").args(extra).arg("--config").arg(cfg).env("LUDUS_LOG", "error");
    cmd.env("XDG_DATA_HOME", cfg.parent().unwrap_or(Path::new(".")).join("data"));
    let (t, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    (Notified(tx).serve(t).await.unwrap(), rx)
}

struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

async fn http_server(cfg: &Path) -> HttpServer {
    http_server_on(cfg, false).await
}

/// `ludus serve --http` on a free port; with `cpu0`, confined to CPU 0.
async fn http_server_on(cfg: &Path, cpu0: bool) -> HttpServer {
    let command = common::serve_command(&["--http", "127.0.0.1:0"], cfg);
    http_server_of(if cpu0 { common::on_cpu0(&command) } else { command }).await
}

/// Starts `command` (a `ludus serve --http` on port 0) and reads its URL.
async fn http_server_of(command: std::process::Command) -> HttpServer {
    let mut child = tokio::process::Command::from(command).stderr(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let l = lines.next_line().await.unwrap().expect("server exited");
        if let Some(u) = l.strip_prefix("LUDUS_HTTP_URL=") {
            break u.to_string();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer { child, url }
}

async fn latency(c: &Client, n: usize) -> (Duration, Duration) {
    let env = call(c, "hanoi_init_simulator", json!({"n": 3})).await["env_id"].clone();
    for _ in 0..200 {
        call(c, "hanoi_get_state", json!({"env_id": env})).await;
    }
    let mut d = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call(c, "hanoi_get_state", json!({"env_id": env})).await;
        d.push(t.elapsed());
    }
    percentiles(d)
}

/// A minimal client's MCP session with one Hanoi puzzle: (client, env id).
async fn http_hanoi_session(url: &str) -> (RawHttp, Value) {
    http_hanoi_session_as(url, "2025-06-18").await
}

/// The same for a client of protocol `version`.
async fn http_hanoi_session_as(url: &str, version: &'static str) -> (RawHttp, Value) {
    let mut c = RawHttp::initialize_as(url, version).await;
    let env = new_hanoi(&mut c).await;
    (c, env)
}

/// A Hanoi session on `url`, its env id, and the bytes of its
/// `hanoi_get_state` answer, which the floors answer every request with.
async fn session_and_sample(url: &str) -> (RawHttp, Value, String) {
    let (mut c, env) = http_hanoi_session(url).await;
    let (_, sample) = c.post(&get_state(&env)(1)).await;
    (c, env, sample)
}

/// A Hanoi puzzle (N=3) started by `c`: its env id.
async fn new_hanoi(c: &mut RawHttp) -> Value {
    let (_, text) = c.post(&tool_call(1, "hanoi_init_simulator", json!({"n": 3}))).await;
    let env = rpc_result(&text)["structuredContent"]["env_id"].clone();
    assert!(env.is_string(), "{text}");
    env
}

/// `n` timed round trips of `request(id)` on one keep-alive connection whose
/// client waits for each answer's end.
async fn round_trips(c: &mut RawHttp, request: impl Fn(u64) -> Value, n: usize) -> Vec<Duration> {
    let mut d = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let (_, text) = c.post(&request(2 + i as u64)).await;
        assert!(!rpc_result(&text).is_null(), "{text}");
        d.push(t.elapsed());
    }
    d
}

fn get_state(env: &Value) -> impl Fn(u64) -> Value + '_ {
    move |id| tool_call(id, "hanoi_get_state", json!({"env_id": env}))
}

/// `get_state` asking for progress: its answer comes on an event stream.
fn get_state_streamed(env: &Value) -> impl Fn(u64) -> Value + '_ {
    move |id| {
        let mut call = tool_call(id, "hanoi_get_state", json!({"env_id": env}));
        call["params"]["_meta"] = json!({"progressToken": format!("bench-{id}")});
        call
    }
}

/// `clients` concurrent sessions, each on its own connection, each making
/// `calls` `hanoi_get_state` round trips: (calls per second over the whole
/// run, p50, p99). The clients run on one thread of their own, as the
/// minimal clients of the floors do: on two cores, a client runtime with a
/// worker per core competes with the server's threads for both, and the
/// tail then says more about how the scheduler shares the cores between
/// the two processes than about the server.
async fn http_load(url: &str, clients: usize, calls: usize) -> Load {
    let url = url.to_string();
    on_a_thread_of_its_own(async move {
        let mut ready = Vec::new();
        for _ in 0..clients {
            let (c, env) = http_hanoi_session(&url).await;
            ready.push((c, move |id| tool_call(id, "hanoi_get_state", json!({"env_id": env}))));
        }
        all_at_once(ready, calls).await
    })
    .await
}

/// `http_load` against a floor at `url`: `clients` connections posting
/// `calls` requests each, all at once.
async fn floor_load(url: &str, clients: usize, calls: usize) -> Load {
    let url = url.to_string();
    on_a_thread_of_its_own(async move {
        let mut ready = Vec::new();
        for _ in 0..clients {
            ready.push((RawHttp::connect(&url).await, |_| json!({})));
        }
        all_at_once(ready, calls).await
    })
    .await
}

/// What a load run measured.
struct Load {
    /// Calls per second over the whole run.
    rate: f64,
    p50: Duration,
    p99: Duration,
    /// p99 without each client's first call: those all begin at once,
    /// each session's first since it was opened, and the server meets
    /// them with cold caches (docs/benchmarks.md, "Reading").
    later_p99: Duration,
}

/// Every client making its `calls` round trips, all at once.
async fn all_at_once<F: Fn(u64) -> Value + Send + 'static>(ready: Vec<(RawHttp, F)>, calls: usize) -> Load {
    let t = Instant::now();
    let tasks: Vec<_> =
        ready.into_iter().map(|(mut c, request)| tokio::spawn(async move { round_trips(&mut c, request, calls).await })).collect();
    let (mut all, mut later) = (Vec::new(), Vec::new());
    for task in tasks {
        let times = task.await.unwrap();
        later.extend_from_slice(&times[1..]);
        all.extend(times);
    }
    let rate = all.len() as f64 / t.elapsed().as_secs_f64();
    let (p50, p99) = percentiles(all);
    Load { rate, p50, p99, later_p99: percentiles(later).1 }
}

/// Runs `work` on a one-thread runtime on a thread of its own.
async fn on_a_thread_of_its_own<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    tokio::task::spawn_blocking(move || tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(work))
        .await
        .unwrap()
}

/// The C floor (`c_floor`) under `http_load`'s load: 200 connections, 30
/// requests each, answered with a `hanoi_get_state` answer's bytes.
async fn c_floor_under_load(url: &str) -> Load {
    let (_, _, sample) = session_and_sample(url).await;
    floor_load(&c_floor(&sample, 0, 0).url, 200, 30).await
}

/// The floor under any HTTP server here: a minimal hyper server (in this
/// process) answering every POST with a fixed SSE answer the size of a
/// `hanoi_get_state` answer. Returns its URL; it serves until aborted.
async fn http_floor_server(answer: String) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = bytes::Bytes::from(answer);
    let serve = async move {
        loop {
            let (tcp, _) = listener.accept().await?;
            let _ = tcp.set_nodelay(true);
            let answer = answer.clone();
            let service = hyper::service::service_fn(move |_| {
                let mut response = http::Response::new(http_body_util::Full::new(answer.clone()));
                response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tcp), service));
        }
    };
    (format!("http://{addr}/mcp"), tokio::spawn(serve))
}

/// p50 and p99 of each kind of request (`clients[i]` posting `request(id)`),
/// asked in turn, 3,000 each after 500 each untimed: every kind meets the
/// same moments of a machine whose speed swings, so their ratios mean
/// something.
async fn alternating_http(clients: &mut [RawHttp], kinds: &[(usize, &dyn Fn(u64) -> Value)]) -> Vec<(Duration, Duration)> {
    let mut d = vec![Vec::with_capacity(3_000); kinds.len()];
    for i in 0..3_500u64 {
        for ((c, request), times) in kinds.iter().zip(&mut d) {
            let t = Instant::now();
            let (_, text) = clients[*c].post(&request(2 + i)).await;
            assert!(!rpc_result(&text).is_null(), "{text}");
            if i >= 500 {
                times.push(t.elapsed());
            }
        }
    }
    d.into_iter().map(percentiles).collect()
}

/// The floor as a server process can reach it: a minimal C server
/// (`benches/floor.c`: one thread, epoll, kept-alive connections) in a
/// process of its own, as Ludus is, answering every request with `answer`.
/// Compiled here with `cc`; the process ends when this drops.
struct CFloor {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for CFloor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `watch_us`: how long it watches for the next request after answering;
/// `work_ns`: how long it spends on each request before answering.
fn c_floor(answer: &str, watch_us: u64, work_ns: u64) -> CFloor {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("floor");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/floor.c");
    let built = Command::new("cc").args(["-O2", "-o"]).arg(&exe).arg(source).status().expect("cc, to build the HTTP floor");
    assert!(built.success(), "building {source}");
    let body = dir.path().join("answer");
    std::fs::write(&body, answer).unwrap();
    let mut child = Command::new(&exe).arg(&body).args([watch_us.to_string(), work_ns.to_string()]).stdout(Stdio::piped()).spawn().unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
    CFloor { url: format!("http://127.0.0.1:{}/mcp", port.trim()), child, _dir: dir }
}

/// (p50, p99) of a series of round trips.
type P50P99 = (Duration, Duration);

/// Round trips one at a time over HTTP to the floors and to Ludus.
struct OneAtATime {
    /// A minimal hyper server in this process.
    hyper: P50P99,
    /// A minimal C server in a process of its own, asked in turn with the rest.
    c: P50P99,
    /// The same asked alone first, while nothing else runs: no other
    /// server's thread is watching for its next request then, so each
    /// side's CPU may go idle between requests, as on a quiet machine.
    c_alone: P50P99,
    /// The C server watching for the next request for 100 µs after each
    /// answer, as Ludus's connection threads do by default; asked alone
    /// too, since its watching would take CPU from the others (on one
    /// core, all of it).
    c_watching: P50P99,
    ping: P50P99,
    get: P50P99,
}

/// One request at a time over HTTP: the floors answering a
/// `hanoi_get_state` answer's bytes (a minimal C server in a process of
/// its own, alone and then watching like Ludus, each asked on its own;
/// then a minimal hyper server in this process and the C server again),
/// then `ping` and `hanoi_get_state` to the server at `url`, the last four
/// asked in turn.
async fn http_one_at_a_time(url: &str) -> OneAtATime {
    let (raw, env, sample) = session_and_sample(url).await;
    let c_floor = c_floor(&sample, 0, 0);
    let c_alone = alone(&c_floor.url).await;
    let c_watching = alone(&c_floor_watching(&sample).url).await;
    let (floor_url, floor_server) = http_floor_server(sample).await;
    let mut clients = [RawHttp::connect(&floor_url).await, RawHttp::connect(&c_floor.url).await, raw];
    let ping = |id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let get = get_state(&env);
    let floor = |_| json!({});
    let times = alternating_http(&mut clients, &[(0, &floor), (1, &floor), (2, &ping), (2, &get)]).await;
    floor_server.abort();
    OneAtATime { hyper: times[0], c: times[1], c_alone, c_watching, ping: times[2], get: times[3] }
}

/// 3,000 round trips to the floor at `url` (after 500 not counted), asked
/// while nothing else is.
async fn alone(url: &str) -> P50P99 {
    let mut times = round_trips(&mut RawHttp::connect(url).await, |_| json!({}), 3_500).await;
    percentiles(times.split_off(500))
}

/// The C floor watching for 100 µs after each answer (it ends when dropped).
fn c_floor_watching(answer: &str) -> CFloor {
    c_floor(answer, 100, 0)
}

/// A call after half a second of quiet, as an agent's comes after it has
/// thought: p50 of 15 for the watching C floor (on a connection of its
/// own), then `ping` and `hanoi_get_state` on one session's. Caches, the
/// server's thread and both CPUs have gone cold by then
/// (docs/benchmarks.md, "Reading").
async fn after_quiet(url: &str) -> String {
    let (mut ludus, env, sample) = session_and_sample(url).await;
    let floor = c_floor(&sample, 100, 0);
    let mut c = RawHttp::connect(&floor.url).await;
    let floor = quiet_then(&mut c, |_| json!({})).await;
    let ping = quiet_then(&mut ludus, |id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).await;
    let get = quiet_then(&mut ludus, get_state(&env)).await;
    format!("C floor {} ; `ping` {} ; `hanoi_get_state` {}", us(floor), us(ping), us(get))
}

/// p50 of 15 round trips, each after half a second of quiet.
async fn quiet_then(c: &mut RawHttp, request: impl Fn(u64) -> Value) -> Duration {
    let mut times = Vec::new();
    for i in 0..15 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t = Instant::now();
        let (_, text) = c.post(&request(2 + i)).await;
        assert!(!rpc_result(&text).is_null(), "{text}");
        times.push(t.elapsed());
    }
    percentiles(times).0
}

/// What the client's idle CPU costs as a server's own work grows: the C
/// floor, watching as Ludus does, spending 0 to 8 µs on each request before
/// answering, each asked alone; with the guest's idle polling
/// (`guest_halt_poll_ns`, where the machine has `cpuidle-haltpoll`). A
/// client whose wait outlasts its CPU's way into idle finds that CPU halted,
/// and is woken through the hypervisor (docs/benchmarks.md, "Reading").
async fn idle_wake(url: &str) -> String {
    let (_, _, sample) = session_and_sample(url).await;
    let mut floors = Vec::new();
    for work_us in [0, 2, 4, 6, 8] {
        let (p50, _) = alone(&c_floor(&sample, 100, work_us * 1_000).url).await;
        floors.push(format!("{work_us} µs {}", us(p50)));
    }
    let halt_poll = std::fs::read_to_string("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    let halt_poll = halt_poll.as_deref().map_or("none", str::trim);
    format!("{} (guest_halt_poll_ns: {halt_poll})", floors.join(", "))
}

impl OneAtATime {
    /// `hanoi_get_state`'s p50 over the C floor's, asked in turn, and over
    /// the watching C floor's.
    fn ratios(&self) -> (f64, f64) {
        let get = self.get.0.as_secs_f64();
        (get / self.c.0.as_secs_f64(), get / self.c_watching.0.as_secs_f64())
    }

    fn floors(&self) -> String {
        format!(
            "floors: C alone {}, C watching 100 µs alone {}; hyper in process {}, C {} in turn",
            us(self.c_alone.0),
            us(self.c_watching.0),
            us(self.hyper.0),
            us(self.c.0)
        )
    }
}

/// `http_one_at_a_time` with everything on CPU 0: a server of its own
/// confined there, and the client and the floor on a one-thread runtime
/// on a thread confined there.
fn http_on_cpu0(cfg: &Path) -> OneAtATime {
    common::on_cpu0_here(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let server = http_server_on(cfg, true).await;
            http_one_at_a_time(&server.url).await
        })
    })
}

/// Chess over the minimal pipe client: a new game against the computer at
/// level 1 and one `chess_finish_turn` (our 1.e4; the answer comes before the
/// engine thinks, 20 ms later in a timer event), 230 times; p50 and p99 of the
/// `chess_finish_turn` round trips. Each engine reply is waited for
/// (`chess_wait_for_next_turn`, untimed) before the next game, so no engine
/// thinks in the background of a measured call.
///
/// Also returns the p50 of those `chess_create_game` calls and the server's
/// resident growth per game over the first 200 (taken before any engine
/// move, which brings the engine's 6 MiB table).
fn chess_finish_turn(cfg: &Path) -> ChessFigures {
    let mut c = RawClient::start(cfg);
    let call = |id: usize, name: &str, args: Value| tool_call(id as u64, name, args).to_string();
    let create = json!({"type": "computer", "color": "white", "difficulty": 1});
    let pid = c.child.id();
    let resident = || (rss_kib(pid), common::proc_status(pid, "RssAnon"));
    let (before, mut creates) = (resident(), Vec::new());
    for i in 0..200 {
        let t = Instant::now();
        c.ask(&call(1_000_000 + i, "chess_create_game", create.clone()));
        creates.push(t.elapsed());
    }
    let after = resident();
    let per_game = |a: u64, b: u64| a.saturating_sub(b) as f64 / 200.0;
    let kib_per_game = (per_game(after.0, before.0), per_game(after.1, before.1));
    let mut d = Vec::new();
    for i in 0..230 {
        let game = c.ask(&call(3 * i + 1, "chess_create_game", create.clone()));
        let game = game["result"]["structuredContent"]["game_id"].clone();
        let t = Instant::now();
        let answer = c.ask(&call(3 * i + 2, "chess_finish_turn", json!({"game_id": game, "move": "e2e4"})));
        let took = t.elapsed();
        assert!(answer["result"]["isError"] != true, "{answer}");
        c.ask(&call(3 * i + 3, "chess_wait_for_next_turn", json!({"game_id": game})));
        if i >= 30 {
            d.push(took);
        }
    }
    let _ = c.child.kill();
    ChessFigures { finish: percentiles(d), create: percentiles(creates).0, kib_per_game }
}

struct ChessFigures {
    /// `chess_finish_turn` p50, p99.
    finish: (Duration, Duration),
    /// `chess_create_game` p50.
    create: Duration,
    /// Resident growth per new game: all (VmRSS, which counts each mapped
    /// page of shared data again), and anonymous (RssAnon, the game's own).
    kib_per_game: (f64, f64),
}

/// The same measurement as `chess_finish_turn` over stdio, inside the
/// server (registry → session → component), without any transport.
async fn chess_finish_turn_in_server(registry: &std::sync::Arc<ludus::registry::Registry>) -> (Duration, Duration) {
    let (plugin, create) = registry.find_tool("chess_create_game").unwrap();
    let (_, finish) = registry.find_tool("chess_finish_turn").unwrap();
    let call = |tool: usize, a: Value| {
        let (r, p) = (registry.clone(), plugin.clone());
        async move {
            match r
                .sessions
                .call(p, tool, &args(a), ludus::session::Caller::Connection("bench".into()), Default::default(), Default::default())
                .await
            {
                ludus::session::Reply::Value { value, .. } => value,
                ludus::session::Reply::Failed(e) => panic!("{e}"),
            }
        }
    };
    let (_, wait) = registry.find_tool("chess_wait_for_next_turn").unwrap();
    let mut d = Vec::new();
    for i in 0..230 {
        let game = call(create, json!({"type": "computer", "color": "white", "difficulty": 1})).await;
        let id = string_field(game.as_ref().unwrap(), "game-id").expect("a game id");
        let t = Instant::now();
        call(finish, json!({"game_id": id, "move": "e2e4"})).await;
        let took = t.elapsed();
        call(wait, json!({"game_id": id})).await;
        if i >= 30 {
            d.push(took);
        }
    }
    percentiles(d)
}

/// A string field of the record inside a tool's `ok` value.
fn string_field(v: &wasmtime::component::Val, name: &str) -> Option<String> {
    use wasmtime::component::Val;
    match v {
        Val::Result(Ok(Some(inner))) => string_field(inner, name),
        Val::Record(fields) => fields.iter().find(|(n, _)| n == name).and_then(|(_, v)| match v {
            Val::String(s) => Some(s.clone()),
            _ => None,
        }),
        _ => None,
    }
}

/// Starts a Tower of Hanoi puzzle (3 disks) over `c`: its `env_id`.
fn new_puzzle(c: &mut RawClient) -> String {
    let init = c.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hanoi_init_simulator","arguments":{"n":3}}}"#);
    init["result"]["structuredContent"]["env_id"].as_str().unwrap().to_string()
}

/// `hanoi_get_state` of the puzzle `env` as a JSON-RPC line with this id.
fn get_state_line(env: &str) -> impl Fn(usize) -> String + '_ {
    move |id| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"hanoi_get_state","arguments":{{"env_id":"{env}"}}}}}}"#
        )
    }
}

/// One request at a time, in turn: the floor (the same client against
/// `cat`, which answers each line with itself), `ping`, `hanoi_get_state`;
/// (p50, p99) of each, and the server's client for more. With `same_cpu`,
/// the client, `cat` and the server all run on CPU 0 only, so no answer or
/// request has to wake a thread on the other core.
fn one_at_a_time(cfg: &Path, same_cpu: bool) -> ([(Duration, Duration); 3], RawClient, String) {
    let (cat, server) = (std::process::Command::new("cat"), common::serve_command(&[], cfg));
    let (cat, server) = if same_cpu { (common::on_cpu0(&cat), common::on_cpu0(&server)) } else { (cat, server) };
    let (cat, mut c) = (RawClient::spawn(cat), RawClient::initialize(server));
    let env = new_puzzle(&mut c);
    let get = get_state_line(&env);
    let ping = |id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    let mut clients = [cat, c];
    let kinds: [(usize, &dyn Fn(usize) -> String); 3] = [(0, &ping), (1, &ping), (1, &get)];
    let mut measure = || common::alternating(&mut clients, &kinds);
    let times = if same_cpu { common::on_cpu0_here(measure) } else { measure() };
    let [mut cat, c] = clients;
    let _ = cat.child.kill();
    (times.try_into().unwrap(), c, env.clone())
}

/// Returns one request at a time (`one_at_a_time`, across cores), then
/// pipelined hanoi_get_state calls per second and whether the answers came
/// in request order.
fn raw_stdio(cfg: &Path) -> ([(Duration, Duration); 3], f64, bool) {
    use std::io::Write;
    let (times, c, env) = one_at_a_time(cfg, false);
    let get = get_state_line(&env);
    // Pipelined: every request written at once (from another thread, so
    // neither side blocks on a full pipe), every answer read here.
    let n = 3_000;
    let requests: String = (0..n).map(|i| get(100_000 + i) + "\n").collect();
    let RawClient { mut child, mut input, mut output } = c;
    let t = Instant::now();
    let writer = std::thread::spawn(move || {
        input.write_all(requests.as_bytes()).unwrap();
        input.flush().unwrap();
        input
    });
    let mut in_order = true;
    for i in 0..n {
        in_order &= read_answer(&mut output)["id"] == 100_000 + i;
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    drop(writer.join().unwrap());
    let _ = child.wait();
    (times, rate, in_order)
}

/// A seat of a Magic game answering every decision at random (seeded), timing
/// each `cards_choose_action`. Errors are returned, not asserted: the game
/// needs python3 on this machine.
async fn magic_seat(c: &Client, id: &str, mut state: u64) -> Result<Vec<Duration>, String> {
    let tool = |name: &str, a: Value| CallToolRequestParams::new(name.to_string()).with_arguments(args(a));
    let value = |r: rmcp::model::CallToolResult| r.structured_content.unwrap_or(Value::Null);
    let mut times = Vec::new();
    for _ in 0..5_000 {
        let st = value(c.call_tool(tool("cards_pass_priority", json!({"game_id": id}))).await.map_err(|e| e.to_string())?);
        if st["game_over"] == true {
            return Ok(times);
        }
        if st["action_pending"] != true {
            continue;
        }
        let ch = value(c.call_tool(tool("cards_get_action_choices", json!({"game_id": id}))).await.map_err(|e| e.to_string())?);
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let roll = (state >> 33) as usize;
        let n = ch["choices"].as_array().map_or(0, Vec::len);
        let mut a = match ch["response_type"].as_str() {
            Some("boolean") => json!({"answer": false}),
            Some("amount") => json!({"amount": ch["min"]}),
            Some("select") if n == 0 || roll.is_multiple_of(3) => json!({"answer": false}),
            _ if n > 0 => json!({"index": roll % n}),
            _ => json!({"answer": false}),
        };
        a["game_id"] = json!(id);
        let t = Instant::now();
        c.call_tool(tool("cards_choose_action", a)).await.map_err(|e| e.to_string())?;
        times.push(t.elapsed());
    }
    Ok(times)
}

async fn call_raw(c: &Client, name: &str, a: Value) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
    c.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(a))).await
}

async fn magic_round_trips(url: &str) -> Result<(Vec<Duration>, usize, Duration), String> {
    let connect = || async {
        let (tx, _rx) = mpsc::unbounded_channel();
        Notified(tx).serve(StreamableHttpClientTransport::from_uri(url.to_string())).await.map_err(|e| e.to_string())
    };
    let (a, b) = (connect().await?, connect().await?);
    // The first game may install the engine: wait for the mulligan before timing.
    let r = call_raw(&a, "cards_start_game", json!({"opponent": "agent", "seed": 7})).await.map_err(|e| e.to_string())?;
    if r.is_error == Some(true) {
        return Err(format!("{:?}", r.content));
    }
    let id = r.structured_content.unwrap_or_default()["game_id"].as_str().unwrap_or_default().to_string();
    // The second seat is taken with the game's join code, which its creator's `ludus_sessions` shows.
    let sessions = call_raw(&a, "ludus_sessions", json!({})).await.map_err(|e| e.to_string())?.structured_content.unwrap_or_default();
    let code = sessions["sessions"].as_array().into_iter().flatten().find(|s| s["id"] == id.as_str()).map(|s| s["join_code"].clone());
    let joined = call_raw(&b, "cards_join_game", json!({"game_id": id, "join_code": code})).await.map_err(|e| e.to_string())?;
    if joined.is_error == Some(true) {
        return Err(format!("the second seat could not join: {:?}", joined.content));
    }
    loop {
        let st = call_raw(&a, "cards_wait_for_action", json!({"game_id": id})).await.map_err(|e| e.to_string())?;
        if st.structured_content.unwrap_or_default()["action_pending"] == true {
            break;
        }
    }
    let t = Instant::now();
    let (ra, rb) = tokio::join!(magic_seat(&a, &id, 1), magic_seat(&b, &id, 2));
    let took = t.elapsed();
    let mut times = ra?;
    times.extend(rb?);
    let n = times.len();
    Ok((times, n, took))
}

/// `LUDUS_BENCH=chess`: chess `finish_turn` only, over stdio three times
/// (the machine's swings show), then inside the server.
async fn chess_only(cfg: &Path) {
    for round in 1..=3 {
        let cfg = cfg.to_path_buf();
        let f = tokio::task::spawn_blocking(move || chess_finish_turn(&cfg)).await.unwrap();
        let (p50, p99) = f.finish;
        eprintln!(
            "chess `chess_finish_turn` L1 over stdio, round {round}: p50 {} / p99 {}; `chess_create_game` p50 {}, {:.0} KiB resident ({:.0} KiB anonymous) per new game",
            us(p50),
            us(p99),
            us(f.create),
            f.kib_per_game.0,
            f.kib_per_game.1
        );
    }
    let opts = ludus::server::ServeOptions {
        plugins: None,
        http: None,
        config: toml::from_str(&std::fs::read_to_string(cfg).unwrap()).unwrap(),
        builtins: true,
        store: ludus::store::StoreSpec::Memory,
        records: None,
        run: None,
    };
    let registry = ludus::server::start(&opts).await.unwrap();
    let (p50, p99) = chess_finish_turn_in_server(&registry).await;
    eprintln!("chess `chess_finish_turn` L1 inside the server: p50 {} / p99 {}", us(p50), us(p99));
}

/// `LUDUS_BENCH=stdio`: `ping` and `hanoi_get_state` one at a time over
/// stdio, three rounds across cores, then one on CPU 0.
fn stdio_only(cfg: &Path) {
    for round in 1..=3 {
        let ([(floor, _), (ping, _), (get, get99)], mut c, _) = one_at_a_time(cfg, false);
        let _ = c.child.kill();
        eprintln!(
            "stdio round {round}: floor {}; ping {}; hanoi_get_state {} / {} ({:.1}× ping)",
            us(floor),
            us(ping),
            us(get),
            us(get99),
            get.as_secs_f64() / ping.as_secs_f64()
        );
    }
    let ([(floor, _), (ping, _), (get, get99)], mut c, _) = one_at_a_time(cfg, true);
    let _ = c.child.kill();
    eprintln!(
        "stdio on CPU 0: floor {}; ping {}; hanoi_get_state {} / {} ({:.1}× ping)",
        us(floor),
        us(ping),
        us(get),
        us(get99),
        get.as_secs_f64() / ping.as_secs_f64()
    );
}

/// `LUDUS_BENCH=store`: over stdio, one call at a time, a server keeping its
/// games in the default store file against one with `--store memory` (and
/// another build's on a store file, with `LUDUS_BENCH_BASELINE`), asked in
/// turn, four rounds of servers started afresh:
/// `hanoi_execute_move` (a change, written before it is answered)
/// and `hanoi_get_state` (read-only, nothing written). Then the time from
/// starting a server to its first answered call on a stored game, with
/// 10,000 games in its store and with an empty one.
fn store_costs(cfg: &Path) {
    let dir = cfg.parent().unwrap().join("restart");
    std::fs::create_dir_all(&dir).unwrap();
    let hanoi = |bin: &str, store: &str| {
        let mut c = RawClient::initialize(common::serve_command_of(bin, &["--store", store], cfg));
        let env = new_puzzle(&mut c);
        (c, env)
    };
    let (file, old_file) = (dir.join("moves.db"), dir.join("baseline-moves.db"));
    // The servers: this build in memory, this build on a store file, and
    // another build on one (`LUDUS_BENCH_BASELINE=/path/to/ludus`).
    let mut servers: Vec<(&str, String, String)> =
        vec![("memory", BIN.to_string(), "memory".to_string()), ("stored", BIN.to_string(), file.display().to_string())];
    if let Ok(bin) = std::env::var("LUDUS_BENCH_BASELINE") {
        servers.push(("baseline", bin, old_file.display().to_string()));
    }
    // Disk 1 to peg 1 and back: every call a legal change.
    let move_line = |env: String| {
        move |id: usize| {
            let to = if id.is_multiple_of(2) { "[1,0,1]" } else { "[1,1,0]" };
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"hanoi_execute_move","arguments":{{"env_id":"{env}","move":{to}}}}}}}"#
            )
        }
    };
    for round in 1..=4 {
        // Started afresh each round, a different one first: two servers
        // started once differed by up to 2× with the same build.
        let order: Vec<usize> = (0..servers.len()).map(|k| (k + round) % servers.len()).collect();
        let mut started: Vec<Option<(RawClient, String)>> = (0..servers.len()).map(|_| None).collect();
        for &k in &order {
            started[k] = Some(hanoi(&servers[k].1, &servers[k].2));
        }
        let (clients, envs): (Vec<RawClient>, Vec<String>) = started.into_iter().map(Option::unwrap).unzip();
        let mut clients = clients;
        let moves: Vec<_> = envs.iter().map(|env| move_line(env.clone())).collect();
        let (get_memory, get_stored) = (get_state_line(&envs[0]), get_state_line(&envs[1]));
        let mut kinds: Vec<(usize, &dyn Fn(usize) -> String)> = vec![(0, &moves[0]), (1, &moves[1]), (0, &get_memory), (1, &get_stored)];
        if let Some(line) = moves.get(2) {
            kinds.push((2, line));
        }
        let times = common::alternating(&mut clients, &kinds);
        let [(mm, mm99), (ms, ms99), (gm, gm99), (gs, gs99)] = times[..4] else { unreachable!() };
        eprintln!(
            "store round {round} ({} started first): hanoi_execute_move memory {} / {}, stored {} / {} ({:.2}× at p50); hanoi_get_state memory {} / {}, stored {} / {}",
            servers[order[0]].0,
            us(mm),
            us(mm99),
            us(ms),
            us(ms99),
            ms.as_secs_f64() / mm.as_secs_f64(),
            us(gm),
            us(gm99),
            us(gs),
            us(gs99)
        );
        if let Some(&(bs, bs99)) = times.get(4) {
            eprintln!(
                "store round {round}: hanoi_execute_move stored, baseline build {} / {}: this build {:.2}× at p50",
                us(bs),
                us(bs99),
                ms.as_secs_f64() / bs.as_secs_f64()
            );
        }
        for mut c in clients {
            let _ = c.child.kill();
            let _ = c.child.wait();
        }
    }

    // A store with 10,000 puzzles, left by a killed server.
    let (full, empty) = (dir.join("full.db"), dir.join("empty.db"));
    let mut c = RawClient::serve(&["--store", full.to_str().unwrap()], cfg);
    let mut last = String::new();
    for batch in 0..20 {
        for i in 0..500 {
            c.send(&tool_call(batch * 500 + i + 10, "hanoi_init_simulator", json!({"n": 3})).to_string());
        }
        for _ in 0..500 {
            last = read_answer(&mut c.output)["result"]["structuredContent"]["env_id"].as_str().unwrap().to_string();
        }
    }
    let _ = c.child.kill();
    let _ = c.child.wait();
    let mut c = RawClient::serve(&["--store", empty.to_str().unwrap()], cfg);
    let fresh = new_puzzle(&mut c);
    let _ = c.child.kill();
    let _ = c.child.wait();
    for round in 1..=3 {
        let first_call = |store: &Path, env: &str| {
            let t = Instant::now();
            let mut c = RawClient::serve(&["--store", store.to_str().unwrap()], cfg);
            let answer = c.ask(&get_state_line(env)(2));
            let took = t.elapsed();
            assert!(answer["result"]["structuredContent"]["state"].is_array(), "{answer}");
            let _ = c.child.kill();
            let _ = c.child.wait();
            took
        };
        let (with, without) = (first_call(&full, &last), first_call(&empty, &fresh));
        eprintln!(
            "store round {round}: start to the first answered call on a stored game: 10,000 stored {:.1} ms, 1 stored {:.1} ms",
            with.as_secs_f64() * 1e3,
            without.as_secs_f64() * 1e3
        );
    }
}

/// `LUDUS_BENCH=idle`: games that leave memory while idle. Over stdio,
/// Hanoi puzzles (N=3) started and moved once, 500 at a time: 10,000 with
/// games kept in memory until they end (`unload_idle_after_ms = 0`), then
/// 100,000 that leave memory after 1 s, with `--store memory` and with the
/// default store file. For each: the server's resident memory per game once
/// the idle ones have left, how fast they were started, and
/// `hanoi_get_state` on 1,000 games out of memory (each call rebuilds one)
/// against the same 1,000 calls again, now in memory.
fn idle_costs(cfg: &Path) {
    let dir = cfg.parent().unwrap().join("idle");
    std::fs::create_dir_all(&dir).unwrap();
    let base = std::fs::read_to_string(cfg).unwrap();
    let cache = base.lines().next().unwrap().to_string();
    for (label, games, unload, store) in [
        ("in memory until they end", 10_000, 0, "memory".to_string()),
        ("out of memory after 1 s, --store memory", 100_000, 1_000, "memory".to_string()),
        ("out of memory after 1 s, default store file", 100_000, 1_000, dir.join("games.db").display().to_string()),
    ] {
        let file = dir.join(format!("idle-{unload}-{games}.toml"));
        let limits = "max_sessions = 1000000\nmax_sessions_per_plugin = 1000000\nmax_sessions_per_caller = 1000000";
        std::fs::write(&file, format!("{cache}\n[limits]\n{limits}\nunload_idle_after_ms = {unload}\n")).unwrap();
        let _ = std::fs::remove_file(dir.join("games.db"));
        let mut c = RawClient::serve(&["--store", &store], &file);
        let pid = c.child.id();
        new_puzzle(&mut c);
        let before = rss_kib(pid);
        let started = Instant::now();
        let mut ids = Vec::with_capacity(games);
        for batch in 0..games / 500 {
            for i in 0..500 {
                c.send(&tool_call((batch * 500 + i + 10) as u64, "hanoi_init_simulator", json!({"n": 3})).to_string());
            }
            for _ in 0..500 {
                let answer = read_answer(&mut c.output);
                let id = answer["result"]["structuredContent"]["env_id"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
                ids.push(id);
            }
            for (i, id) in ids[batch * 500..].iter().enumerate() {
                c.send(
                    &tool_call((i + 10) as u64, "hanoi_execute_move", json!({"env_id": id, "move": [1, 0, 2], "decision": 1})).to_string(),
                );
            }
            for _ in 0..500 {
                let answer = read_answer(&mut c.output);
                assert_eq!(answer["result"]["isError"], false, "{answer}");
            }
        }
        let made = started.elapsed();
        std::thread::sleep(Duration::from_millis(if unload > 0 { 3_000 } else { 500 }));
        let after = if unload > 0 { settled_rss_kib(pid) } else { rss_kib(pid) };
        eprintln!("idle {label}: {games} games started and moved {}", started_and_resident(games, made, before, after));
        // The first 1,000 games: out of memory by now (where games leave it).
        let mut timed = |round: &str| {
            let mut took = Vec::with_capacity(1_000);
            for (i, id) in ids.iter().take(1_000).enumerate() {
                let line = get_state_line(id)(i + 10);
                let t = Instant::now();
                let answer = c.ask(&line);
                took.push(t.elapsed());
                assert!(answer["result"]["structuredContent"]["state"].is_array(), "{answer}");
            }
            let (p50, p99) = percentiles(took);
            eprintln!("idle {label}: hanoi_get_state {round}: p50 {} / p99 {}", us(p50), us(p99));
            p50
        };
        let first = timed("first call on each of 1,000 games");
        let again = timed("the same 1,000 again");
        eprintln!("idle {label}: first call / again at p50: {:.1}×", first.as_secs_f64() / again.as_secs_f64());
        let _ = c.child.kill();
        let _ = c.child.wait();
    }
    idle_chess(&dir, &base);
    idle_chess_many(&dir, &base);
}

/// How fast `games` games were started (in `made`) and what the server's
/// resident memory grew by (from `before` to `after`, KiB) for each.
fn started_and_resident(games: usize, made: Duration, before: u64, after: u64) -> String {
    format!(
        "in {:.1} s ({:.0} per second); resident {:.0} MiB, {:.0} MiB before: {:.2} KiB per game",
        made.as_secs_f64(),
        games as f64 / made.as_secs_f64(),
        after as f64 / 1024.0,
        before as f64 / 1024.0,
        after.saturating_sub(before) as f64 / games as f64
    )
}

/// The server's resident memory once the last games have left memory and
/// their pages gone back: read every half second until two readings agree
/// (at most ten), as the last sweeps may still be writing games out.
pub fn settled_rss_kib(pid: u32) -> u64 {
    let mut last = rss_kib(pid);
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(500));
        let now = rss_kib(pid);
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// The second chess row of `LUDUS_BENCH=idle`: 10,000 games against the
/// engine at level 1, started 500 at a time with the player to move (the
/// engine has not thought yet), that leave memory after 1 s, with the
/// default store file: the server's resident memory per game once they
/// have left, then a move in the first game, which rebuilds it (its engine
/// replies) and is answered as in memory.
fn idle_chess_many(dir: &Path, base: &str) {
    const GAMES: usize = 10_000;
    let cache = base.lines().next().unwrap();
    let file = dir.join("idle-chess-many.toml");
    let limits = "max_sessions = 1000000\nmax_sessions_per_plugin = 1000000\nmax_sessions_per_caller = 1000000";
    std::fs::write(&file, format!("{cache}\n[limits]\n{limits}\nunload_idle_after_ms = 1000\n")).unwrap();
    let store = dir.join("chess-many.db");
    let _ = std::fs::remove_file(&store);
    let mut c = RawClient::serve(&["--store", store.to_str().unwrap()], &file);
    let pid = c.child.id();
    let create =
        |id: usize| tool_call(id as u64, "chess_create_game", json!({"type": "computer", "difficulty": 1, "color": "white"})).to_string();
    c.ask(&create(1));
    let before = rss_kib(pid);
    let started = Instant::now();
    let mut games = Vec::with_capacity(GAMES);
    for batch in 0..GAMES / 500 {
        for i in 0..500 {
            c.send(&create(batch * 500 + i + 10));
        }
        for _ in 0..500 {
            let answer = read_answer(&mut c.output);
            games.push(answer["result"]["structuredContent"]["game_id"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string());
        }
    }
    let made = started.elapsed();
    std::thread::sleep(Duration::from_millis(3_000));
    let after = settled_rss_kib(pid);
    eprintln!(
        "idle chess, 10,000 games against the engine, default store file: started {}",
        started_and_resident(GAMES, made, before, after)
    );
    let mut id = GAMES + 100;
    let mut ask = |c: &mut RawClient, name: &str, args: Value| {
        id += 1;
        c.ask(&tool_call(id as u64, name, args).to_string())["result"]["structuredContent"].clone()
    };
    let board = ask(&mut c, "chess_wait_for_next_turn", json!({"game_id": games[0]}));
    let t = Instant::now();
    let moved =
        ask(&mut c, "chess_finish_turn", json!({"game_id": games[0], "move": board["legal_moves"][0], "decision": board["decision"]}));
    let took = t.elapsed();
    let reply = (0..200).map(|_| ask(&mut c, "chess_wait_for_next_turn", json!({"game_id": games[0]}))).find(|b| b["status"] != "waiting");
    assert!(moved["fen"].is_string() && reply.is_some_and(|b| b["status"] == "your-turn"), "{moved}");
    eprintln!("idle chess, 10,000 games: a move in the first game, out of memory, {} (the engine then replied)", us(took));
    let _ = c.child.kill();
    let _ = c.child.wait();
}

/// The chess row of `LUDUS_BENCH=idle`: 100 games against the engine at
/// level 1, ten moves each (the first legal one, the engine replying in
/// between), with the default store file; then `chess_wait_for_next_turn`
/// (the player's turn: answered at once) on each game out of memory,
/// against the same calls again in memory.
fn idle_chess(dir: &Path, base: &str) {
    let cache = base.lines().next().unwrap();
    let file = dir.join("idle-chess.toml");
    std::fs::write(&file, format!("{cache}\n[limits]\nunload_idle_after_ms = 1000\n")).unwrap();
    let store = dir.join("chess.db");
    let _ = std::fs::remove_file(&store);
    let mut c = RawClient::serve(&["--store", store.to_str().unwrap()], &file);
    let mut id = 10;
    let mut ask = |c: &mut RawClient, name: &str, args: Value| {
        id += 1;
        c.ask(&tool_call(id, name, args).to_string())["result"]["structuredContent"].clone()
    };
    let games: Vec<String> = (0..100)
        .map(|i| {
            ask(&mut c, "chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": i}))["game_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for _ in 0..10 {
        for game in &games {
            let board = (0..50)
                .map(|_| ask(&mut c, "chess_wait_for_next_turn", json!({"game_id": game})))
                .find(|b| b["status"] != "waiting")
                .unwrap();
            if board["status"] == "your-turn" {
                ask(&mut c, "chess_finish_turn", json!({"game_id": game, "move": board["legal_moves"][0], "decision": board["decision"]}));
            }
        }
    }
    // Each game's engine has replied (its timer spent): every game may leave.
    for game in &games {
        (0..50).map(|_| ask(&mut c, "chess_wait_for_next_turn", json!({"game_id": game}))).find(|b| b["status"] != "waiting");
    }
    std::thread::sleep(Duration::from_millis(3_000));
    let mut timed = |c: &mut RawClient, round: &str| {
        let mut took = Vec::with_capacity(games.len());
        for game in &games {
            let t = Instant::now();
            let board = ask(c, "chess_wait_for_next_turn", json!({"game_id": game}));
            took.push(t.elapsed());
            assert!(board["fen"].is_string(), "{board}");
        }
        let (p50, p99) = percentiles(took);
        eprintln!("idle chess, default store file: chess_wait_for_next_turn {round}: p50 {} / p99 {}", us(p50), us(p99));
        p50
    };
    let first = timed(&mut c, "first call on each of 100 games out of memory (about 20 plies each)");
    let again = timed(&mut c, "the same 100 again");
    eprintln!("idle chess, default store file: first call / again at p50: {:.1}×", first.as_secs_f64() / again.as_secs_f64());
    let _ = c.child.kill();
    let _ = c.child.wait();
}

/// One OpenSpiel tool call that must succeed: its structured answer.
fn openspiel_call(c: &mut RawClient, id: &mut u64, tool: &str, args: Value) -> Value {
    *id += 1;
    let answer = c.ask(&tool_call(*id, tool, args).to_string());
    assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
    answer["result"]["structuredContent"].clone()
}

/// Plays `game` (seed `seed`) to its end with the first-listed-in-turn
/// policy against `opponent`; each move's round trip.
fn openspiel_game(c: &mut RawClient, id: &mut u64, game: &str, opponent: &str, seed: u64) -> Vec<Duration> {
    let mut turn = openspiel_call(c, id, "openspiel_start_game", json!({"game": game, "opponents": [opponent], "seed": seed}));
    let game_id = turn["game_id"].as_str().unwrap().to_string();
    let mut took = Vec::new();
    for step in 0.. {
        if turn["game_over"] == true {
            break;
        }
        let legal = turn["legal_actions"].as_array().unwrap();
        let action = legal[step % legal.len()]["text"].clone();
        let t = Instant::now();
        turn = openspiel_call(c, id, "openspiel_move", json!({"game_id": game_id, "action": action, "decision": turn["decision"]}));
        took.push(t.elapsed());
    }
    took
}

/// The 50th and 95th percentiles.
fn p50_p95(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    (d[d.len() / 2], d[(d.len() * 95) / 100])
}

/// `LUDUS_BENCH=openspiel`: over stdio, 40 games each of tic-tac-toe and
/// connect four against `random` (the agent plays the listed actions in
/// turn), each move timed from the request to the answer with the
/// opponent's reply in it; the same moves, the opponent's reply and the
/// legal actions' texts in `pyspiel` directly (Python, the bridge's venv)
/// in the same run; then the memory of 8 live connect-four games (a
/// caller's process budget): the server's share and the bridge processes';
/// and connect four against each MCTS level (a move includes the search).
/// What confining an engine adds to its start (`LUDUS_BENCH=engines`):
/// preparing its jail (scratch directory, cgroup, Landlock rules), against
/// starting the interpreter it confines, and a whole OpenSpiel game start.
fn engine_start_costs(cfg: &Path) {
    use ludus::runtime::sandbox::{EngineRules, Launch, Sandbox};
    let scratch = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(Some(scratch.path()), &ludus::config::Engines::default());
    let bridge = cfg.parent().unwrap().join("cache/sidecars/openspiel/openspiel_bridge.py").display().to_string();
    let args = [bridge];
    let launch = Launch { program: "python3", args: &args, cwd: None, bundled: None, installing: false, shared: false };
    let rules = EngineRules::default();
    let jail: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            drop(sandbox.jail("bench", &rules, &launch).unwrap());
            t.elapsed()
        })
        .collect();
    let python: Vec<Duration> = (0..20)
        .map(|_| {
            let t = Instant::now();
            std::process::Command::new("python3").args(["-c", "pass"]).status().unwrap();
            t.elapsed()
        })
        .collect();
    let mut c = RawClient::start(cfg);
    let mut id = 10;
    openspiel_game(&mut c, &mut id, "tic_tac_toe", "random", 0);
    let starts: Vec<Duration> = (0..20)
        .map(|seed| {
            let t = Instant::now();
            let turn = openspiel_call(&mut c, &mut id, "openspiel_start_game", json!({"game": "tic_tac_toe", "seed": seed}));
            let took = t.elapsed();
            openspiel_call(&mut c, &mut id, "openspiel_forfeit", json!({"game_id": turn["game_id"]}));
            took
        })
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ((j50, j95), (p50, _), (s50, s95)) = (p50_p95(jail), p50_p95(python), p50_p95(starts));
    println!("| engine start | p50 | p95 |\n|---|---|---|");
    println!("| preparing an engine's jail (200 times) | {:.2} ms | {:.2} ms |", ms(j50), ms(j95));
    println!("| `python3 -c pass` (20 times) | {:.1} ms | |", ms(p50));
    println!("| `openspiel_start_game` tic_tac_toe, its bridge started (20 games) | {:.1} ms | {:.1} ms |", ms(s50), ms(s95));
    println!("| the jail's share of a game's start | {:.1} % | |", 100.0 * ms(j50) / ms(s50).max(1e-9));
}

/// `LUDUS_BENCH=shared`: live connect-four games in shared bridge
/// processes (a shard per core). Over stdio, 200 then 1,000 games started
/// and a move made in each; the resident memory of the server and every
/// bridge together, and a move's round trip (with the random reply) at each
/// size, beside the same move with a bridge process per game
/// (`games_per_process = 1`, 8 games: the default budget of a caller).
fn shared_engine_costs(cfg: &Path) {
    let mut c = RawClient::start(cfg);
    let mut id = 10;
    // The first use installs OpenSpiel (once per user cache).
    openspiel_game(&mut c, &mut id, "tic_tac_toe", "random", 0);
    let pid = c.child.id();
    let all_kib = |pid: u32| rss_kib(pid) + common::descendants(pid).iter().map(|p| rss_kib(*p)).sum::<u64>();
    let idle_kib = all_kib(pid);
    println!(
        "| live connect-four games, shared bridges | processes | resident, server and bridges | per game | a move, p50 / p95 |\n|---|---|---|---|---|"
    );
    let mut games: Vec<(String, Value)> = Vec::new();
    for target in [200, 1000] {
        let mut took = Vec::new();
        while games.len() < target {
            let seed = games.len() as u64;
            let turn = openspiel_call(&mut c, &mut id, "openspiel_start_game", json!({"game": "connect_four", "seed": seed}));
            games.push((turn["game_id"].as_str().unwrap().to_string(), turn));
        }
        for (game_id, turn) in games.iter_mut() {
            let legal = turn["legal_actions"].as_array().unwrap();
            let action = legal[id as usize % legal.len()]["text"].clone();
            let t = Instant::now();
            *turn = openspiel_call(
                &mut c,
                &mut id,
                "openspiel_move",
                json!({"game_id": game_id, "action": action, "decision": turn["decision"]}),
            );
            took.push(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(500));
        let kib = all_kib(pid);
        let (p50, p95) = p50_p95(took);
        println!(
            "| {target} | {} | {:.1} MiB | {:.1} KiB | {} / {} |",
            common::descendants(pid).len(),
            kib as f64 / 1024.0,
            kib.saturating_sub(idle_kib) as f64 / target as f64,
            us(p50),
            us(p95)
        );
    }
    for (game_id, _) in &games {
        openspiel_call(&mut c, &mut id, "openspiel_forfeit", json!({"game_id": game_id}));
    }
    let _ = c.child.kill();
    let _ = c.child.wait();

    // The peer in the same run: OpenSpiel's own MCP example holding 200.
    let peer = std::process::Command::new(openspiel_peer_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/openspiel_peer.py"))
        .arg("200")
        .stderr(Stdio::null())
        .output()
        .expect("the peer's venv");
    let peer: Value = serde_json::from_slice(&peer.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&peer.stdout)));
    println!(
        "| 200, OpenSpiel's MCP example (the peer; one process) | 1 | {:.1} MiB | {:.1} KiB | {:.1} µs / {:.1} µs (`play_action` alone) |",
        peer["rss_kib"].as_f64().unwrap() / 1024.0,
        peer["rss_kib"].as_f64().unwrap() / 200.0,
        peer["move_p50_us"].as_f64().unwrap(),
        peer["move_p95_us"].as_f64().unwrap()
    );

    shared_battles_and_magic(cfg, 200, 100, "shared");

    // The same decisions with a process per game, in the same run: 8 of
    // each (a caller's process budget).
    let own = cfg.with_file_name("own-process.toml");
    let text = std::fs::read_to_string(cfg).unwrap();
    std::fs::write(&own, format!("{text}\n[engines]\ngames_per_process = 1\n")).unwrap();
    let mut c = RawClient::start(&own);
    let took: Vec<Duration> = (0..8).flat_map(|seed| openspiel_game(&mut c, &mut id, "connect_four", "random", seed)).collect();
    let (p50, p95) = p50_p95(took);
    println!("| connect four, a bridge process per game (8 games played out) | | | | {} / {} |", us(p50), us(p95));
    let _ = c.child.kill();
    let _ = c.child.wait();
    shared_battles_and_magic(&own, 8, 8, "a process each");
}

/// The Python of a venv with OpenSpiel's MCP example's needs
/// (`LUDUS_BENCH_PEER_PYTHON`, else `target/bench-tools/openspiel-peer`,
/// made here on first use from PyPI).
fn openspiel_peer_python() -> PathBuf {
    if let Some(python) = std::env::var_os("LUDUS_BENCH_PEER_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-tools/openspiel-peer");
    let python = venv.join("bin/python");
    if !python.exists() {
        eprintln!("installing the peer (open_spiel 2.0.2, fastmcp, absl-py) into {}", venv.display());
        let made = std::process::Command::new("python3").args(["-m", "venv"]).arg(&venv).status().unwrap();
        assert!(made.success(), "python3 -m venv failed");
        let pip = std::process::Command::new(&python)
            .args(["-m", "pip", "install", "-q", "open_spiel==2.0.2", "fastmcp==4.2.3", "absl-py==2.5.1"])
            .status()
            .unwrap();
        assert!(pip.success(), "pip could not install the peer");
    }
    python
}

/// The second part of `LUDUS_BENCH=shared`: 200 offline Showdown battles
/// and 100 Magic games live at once (built-in engines, installed on first
/// use), each with one decision made; all processes' resident memory and a
/// decision's round trip.
fn shared_battles_and_magic(cfg: &Path, battles: u64, magic: u64, how: &str) {
    let mut c = RawClient::start(cfg);
    let mut id = 10;
    let pid = c.child.id();
    let all_kib = |pid: u32| rss_kib(pid) + common::descendants(pid).iter().map(|p| rss_kib(*p)).sum::<u64>();
    let idle_kib = all_kib(pid);
    if how == "shared" {
        println!("| live games | processes | resident, server and engines | per game | a decision, p50 / p95 |\n|---|---|---|---|---|");
    }
    let battles: Vec<String> = (0..battles)
        .map(|seed| {
            let b = openspiel_call(&mut c, &mut id, "showdown_start_offline_battle", json!({"bot": "random", "seed": seed}));
            b["battle_id"].as_str().unwrap().to_string()
        })
        .collect();
    let took: Vec<Duration> = battles
        .iter()
        .map(|battle| {
            let avail = openspiel_call(&mut c, &mut id, "showdown_get_available_actions", json!({"battle_id": battle}));
            let action = avail["actions"][0]["action"].clone();
            let t = Instant::now();
            openspiel_call(&mut c, &mut id, "showdown_make_move", json!({"battle_id": battle, "action": action}));
            t.elapsed()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let kib = all_kib(pid);
    let (p50, p95) = p50_p95(took);
    let row = |what: &str, n: usize, kib: u64, base: u64, p50, p95| {
        let engines = common::descendants(pid).len();
        let per = kib.saturating_sub(base) as f64 / n as f64;
        println!("| {what} | {engines} | {:.1} MiB | {per:.1} KiB | {} / {} |", kib as f64 / 1024.0, us(p50), us(p95));
    };
    row(&format!("{} offline Showdown battles, {how} (`make_move`)", battles.len()), battles.len(), kib, idle_kib, p50, p95);
    for battle in &battles {
        openspiel_call(&mut c, &mut id, "showdown_forfeit_battle", json!({"battle_id": battle}));
    }
    std::thread::sleep(Duration::from_millis(500));
    let base = all_kib(pid);
    let games: Vec<String> = (0..magic)
        .map(|seed| {
            let g = openspiel_call(&mut c, &mut id, "cards_start_game", json!({"seed": seed}));
            let game = g["game_id"].as_str().unwrap().to_string();
            let mut st = g;
            while st["action_pending"] != true {
                st = openspiel_call(&mut c, &mut id, "cards_wait_for_action", json!({"game_id": game}));
            }
            game
        })
        .collect();
    let took: Vec<Duration> = games
        .iter()
        .map(|game| {
            let t = Instant::now();
            openspiel_call(&mut c, &mut id, "cards_pass_priority", json!({"game_id": game}));
            t.elapsed()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let kib = all_kib(pid);
    let (p50, p95) = p50_p95(took);
    row(&format!("{} Magic games on phase, {how} (`pass_priority`)", games.len()), games.len(), kib, base, p50, p95);
    for game in &games {
        openspiel_call(&mut c, &mut id, "cards_concede", json!({"game_id": game}));
    }
    let _ = c.child.kill();
    let _ = c.child.wait();
}

fn openspiel_costs(cfg: &Path) {
    let mut c = RawClient::start(cfg);
    let mut id = 10;
    // The first use installs OpenSpiel (once per user cache).
    openspiel_game(&mut c, &mut id, "tic_tac_toe", "random", 0);
    let mut ours = Vec::new();
    for game in ["tic_tac_toe", "connect_four"] {
        let took: Vec<Duration> = (0..40).flat_map(|seed| openspiel_game(&mut c, &mut id, game, "random", seed)).collect();
        ours.push(p50_p95(took));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    let python = cache.join("ludus/openspiel-venv/bin/python");
    let bridge = cfg.parent().unwrap().join("cache/sidecars/openspiel/openspiel_bridge.py");
    let direct = std::process::Command::new(python).arg("-c").arg(OPENSPIEL_DIRECT).arg(bridge).output().expect("the bridge's venv");
    let direct: Value = serde_json::from_slice(&direct.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&direct.stderr)));
    println!(
        "| OpenSpiel move round trip against `random` (40 games each) | p50 | p95 | the bridge alone, p50 / p95 | pyspiel directly, p50 / p95 | at p50 |\n|---|---|---|---|---|---|"
    );
    for (game, (p50, p95)) in ["tic_tac_toe", "connect_four"].iter().zip(&ours) {
        let pair = |key: String| (direct[&key][0].as_f64().unwrap(), direct[&key][1].as_f64().unwrap());
        let ((d50, d95), (b50, b95)) = (pair(game.to_string()), pair(format!("{game} bridge")));
        let (ours50, ours95) = (p50.as_secs_f64() * 1e6, p95.as_secs_f64() * 1e6);
        println!(
            "| {game} | {ours50:.0} µs | {ours95:.0} µs | {b50:.0} / {b95:.0} µs | {d50:.1} / {d95:.1} µs | {:.0}× pyspiel, {:.1}× the bridge |",
            ours50 / d50.max(1e-9),
            ours50 / b50.max(1e-9)
        );
    }

    println!(
        "| one Python process holding 200 connect-four games (a shared bridge) | {:.1} KiB a game, the process {:.1} MiB |",
        direct["shared kib per game"].as_f64().unwrap(),
        direct["process kib"].as_f64().unwrap() / 1024.0
    );

    // Memory: 8 live games (a caller's process budget), each with its bridge.
    let pid = c.child.id();
    let before = rss_kib(pid);
    let games: Vec<String> = (0..8)
        .map(|seed| {
            let turn = openspiel_call(&mut c, &mut id, "openspiel_start_game", json!({"game": "connect_four", "seed": seed}));
            turn["game_id"].as_str().unwrap().to_string()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let bridges: Vec<u32> = common::descendants(pid);
    let bridge_kib: u64 = bridges.iter().map(|p| rss_kib(*p)).sum();
    let server_kib = rss_kib(pid).saturating_sub(before);
    println!(
        "| 8 live connect-four games | the server: {:.0} KiB a game | the bridges: {} processes, {:.1} MiB a game |",
        server_kib as f64 / 8.0,
        bridges.len(),
        bridge_kib as f64 / 1024.0 / games.len() as f64
    );
    for game in &games {
        openspiel_call(&mut c, &mut id, "openspiel_forfeit", json!({"game_id": game}));
    }

    // MCTS levels: a move's round trip includes the search.
    let mut row = String::from("| connect four, one move against MCTS (p50 of 10 games) |");
    for level in 1..=5 {
        let took: Vec<Duration> =
            (0..10).flat_map(|seed| openspiel_game(&mut c, &mut id, "connect_four", &format!("mcts/{level}"), seed)).collect();
        row.push_str(&format!(" level {level}: {} |", us(p50_p95(took).0)));
    }
    println!("{row}");
    let _ = c.child.kill();
    let _ = c.child.wait();
}

/// The bench's moves in `pyspiel` itself: the agent's action, the random
/// reply, and the legal actions' texts an agent is shown.
const OPENSPIEL_DIRECT: &str = r#"
import json, random, subprocess, sys, time
import pyspiel

def percentiles(took):
    took.sort()
    return [took[len(took) // 2] * 1e6, took[len(took) * 95 // 100] * 1e6]

out = {}
for name in ["tic_tac_toe", "connect_four"]:
    game, took = pyspiel.load_game(name), []
    for seed in range(40):
        state, rng, step = game.new_initial_state(), random.Random(seed), 0
        while not state.is_terminal():
            legal = state.legal_actions()
            action = legal[step % len(legal)]
            step += 1
            t = time.perf_counter()
            state.apply_action(action)
            if not state.is_terminal():
                state.apply_action(rng.choice(state.legal_actions()))
            if not state.is_terminal():
                [state.action_to_string(state.current_player(), a) for a in state.legal_actions()]
                state.observation_string(0)
            took.append(time.perf_counter() - t)
    out[name] = percentiles(took)
    # The bridge alone, over its pipe: the requests the plugin sends.
    bridge = subprocess.Popen([sys.executable, sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    def ask(request, n=[0]):
        n[0] += 1
        request["id"] = n[0]
        bridge.stdin.write(json.dumps(request) + "\n")
        bridge.stdin.flush()
        return json.loads(bridge.stdout.readline())
    took = []
    for seed in range(40):
        snap, step = ask({"op": "new", "game": name, "params": {}, "seats": ["agent", "random"], "seed": seed, "history": []})["ok"], 0
        while not snap["over"]:
            legal = snap["views"][0]["legal"]
            step += 1
            t = time.perf_counter()
            snap = ask({"op": "move", "seat": 0, "action": legal[(step - 1) % len(legal)][1]})["ok"]
            took.append(time.perf_counter() - t)
    bridge.kill()
    out[name + " bridge"] = percentiles(took)

# One process holding many games (what a shared bridge would cost): the
# resident memory 200 connect-four games mid-game add to this process.
def rss_kib():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
game, rng, states = pyspiel.load_game("connect_four"), random.Random(0), []
before = rss_kib()
for _ in range(200):
    state = game.new_initial_state()
    for _ in range(10):
        if not state.is_terminal():
            state.apply_action(rng.choice(state.legal_actions()))
    states.append(state)
out["shared kib per game"] = (rss_kib() - before) / 200
out["process kib"] = rss_kib()
print(json.dumps(out))
"#;

/// `LUDUS_BENCH=cluster`: over HTTP, one call at a time, a server keeping
/// its games in memory, one in the SQLite file and one in Redis, asked in
/// turn: `hanoi_execute_move` and `hanoi_get_state`. Then 200 concurrent
/// sessions (the HTTP load generator of the main table) through nginx in
/// front of one server and in front of two sharing the Redis, in turn.
async fn cluster_costs(cfg: &Path) {
    if !cluster::services_present() {
        return;
    }
    let work = cfg.parent().unwrap().join("cluster");
    let redis = cluster::redis(&work);
    let serve = |more: &[&str]| {
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend_from_slice(more);
        http_server_of(common::serve_command(&args, cfg))
    };
    let s1 = serve(&["--store", &redis.url, "--name", "s1"]).await;
    let (memory, file) = (serve(&["--store", "memory"]).await, serve(&[]).await);
    let ((m, m_env), (f, f_env), (r, r_env)) =
        (http_hanoi_session(&memory.url).await, http_hanoi_session(&file.url).await, http_hanoi_session(&s1.url).await);
    // Disk 1 to peg 1 and back: every call a legal change.
    let move_of = |env: &Value| {
        let env = env.clone();
        move |id: u64| {
            let to = if id.is_multiple_of(2) { json!([1, 0, 1]) } else { json!([1, 1, 0]) };
            tool_call(id, "hanoi_execute_move", json!({"env_id": env, "move": to}))
        }
    };
    let (move_m, move_f, move_r) = (move_of(&m_env), move_of(&f_env), move_of(&r_env));
    let (get_m, get_f, get_r) = (get_state(&m_env), get_state(&f_env), get_state(&r_env));
    let mut clients = [m, f, r];
    for round in 1..=3 {
        let kinds: [(usize, &dyn Fn(u64) -> Value); 6] = [(0, &move_m), (1, &move_f), (2, &move_r), (0, &get_m), (1, &get_f), (2, &get_r)];
        let t = alternating_http(&mut clients, &kinds).await;
        let pair = |(p50, p99): (Duration, Duration)| format!("{} / {}", us(p50), us(p99));
        eprintln!(
            "cluster round {round}: hanoi_execute_move memory {}, SQLite {}, Redis {}; hanoi_get_state memory {}, SQLite {}, Redis {}",
            pair(t[0]),
            pair(t[1]),
            pair(t[2]),
            pair(t[3]),
            pair(t[4]),
            pair(t[5])
        );
    }
    let s2 = serve(&["--store", &redis.url, "--name", "s2"]).await;
    let [_, _, r] = &mut clients;
    redis_cpu_per_call(&redis.url, r, &[("hanoi_get_state", &get_r), ("hanoi_execute_move", &move_r)]).await;
    redis_cpu_under_load("Redis", &[&redis.url], &s1.url, 100, 30).await;
    {
        // The same on a Redis Cluster of three shards.
        let shards = cluster::redis_cluster(&work, 3);
        let on_shards = serve(&["--store", &shards.url, "--name", "c1"]).await;
        let nodes: Vec<&str> = shards.nodes.iter().map(|n| n.url.as_str()).collect();
        redis_cpu_under_load("a Redis Cluster of 3 shards", &nodes, &on_shards.url, 100, 30).await;
    }
    hand_over_costs(cfg, &redis.url).await;
    let one = cluster::nginx(&work.join("nginx-one"), &[&s1.url]);
    let two = cluster::nginx(&work.join("nginx-two"), &[&s1.url, &s2.url]);
    for round in 1..=3 {
        for (name, front) in [("1 server", &one), ("2 servers", &two)] {
            let Load { rate, p50, p99, .. } = http_load(&front.url, 200, 30).await;
            eprintln!("cluster round {round}, nginx in front of {name}: 200 sessions {rate:.0} calls/s, p50 {} / p99 {}", us(p50), us(p99));
        }
    }
}

/// Redis's CPU (user and system, `INFO cpu`, in seconds) and the commands
/// it ran (`INFO stats`), so far.
fn redis_usage(con: &mut redis::Connection) -> (f64, u64) {
    let info: String = redis::cmd("INFO").arg("everything").query(con).unwrap();
    let field = |name: &str| {
        info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).unwrap_or_else(|| panic!("no {name} in INFO")).trim()
    };
    let cpu = field("used_cpu_user").parse::<f64>().unwrap() + field("used_cpu_sys").parse::<f64>().unwrap();
    (cpu, field("total_commands_processed").parse().unwrap())
}

/// What Redis spent inside its scripts so far (`INFO commandstats`:
/// `EVALSHA`'s microseconds and calls).
fn script_usage(con: &mut redis::Connection) -> (u64, u64) {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let Some(line) = info.lines().find_map(|l| l.strip_prefix("cmdstat_evalsha:")) else { return (0, 0) };
    let field = |name: &str| line.split(',').find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok()).unwrap_or(0);
    (field("usec"), field("calls"))
}

/// Redis's CPU per move under load: `sessions` MCP sessions on `server`,
/// each on its own connection and game, each making `calls` moves at once;
/// `nodes` are the Redis processes (one, or a cluster's shards), whose CPU
/// is added up. `what` names the store in the line printed.
async fn redis_cpu_under_load(what: &str, nodes: &[&str], server: &str, sessions: usize, calls: usize) {
    let mut cons: Vec<redis::Connection> = nodes.iter().map(|url| redis::Client::open(*url).unwrap().get_connection().unwrap()).collect();
    let usage = |cons: &mut [redis::Connection]| {
        cons.iter_mut().fold((0.0, 0, 0), |(cpu, us, n), con| {
            let (c, _) = redis_usage(con);
            let (u, k) = script_usage(con);
            (cpu + c, us + u, n + k)
        })
    };
    let mut ready = Vec::new();
    for _ in 0..sessions {
        ready.push(http_hanoi_session(server).await);
    }
    // What the Redis processes spend with nothing asked (their timers, a
    // cluster's gossip) is not the moves': measured over a second first.
    let (idle_from, _, _) = usage(&mut cons);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, script_us, scripts) = usage(&mut cons);
    let idle_per_s = cpu - idle_from;
    let t = Instant::now();
    let tasks: Vec<_> = ready
        .into_iter()
        .map(|(mut c, env)| {
            tokio::spawn(async move {
                let moves = move |id: u64| {
                    let to = if id.is_multiple_of(2) { json!([1, 0, 1]) } else { json!([1, 1, 0]) };
                    tool_call(id, "hanoi_execute_move", json!({"env_id": env, "move": to}))
                };
                round_trips(&mut c, moves, calls).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let took = t.elapsed();
    let (cpu_after, script_us_after, scripts_after) = usage(&mut cons);
    let n = (sessions * calls) as f64;
    eprintln!(
        "cluster: {what} per hanoi_execute_move, {sessions} sessions at once: {:.2} µs of CPU ({:.2} µs with its idle CPU); {:.2} µs inside the script by INFO commandstats (wall time); {:.0} moves/s",
        (cpu_after - cpu - idle_per_s * took.as_secs_f64()) * 1e6 / n,
        (cpu_after - cpu) * 1e6 / n,
        (script_us_after - script_us) as f64 / (scripts_after - scripts).max(1) as f64,
        n / took.as_secs_f64()
    );
}

/// Redis's CPU and commands per call of each kind, 3,000 calls each through
/// `c` on a game its server already holds (the rounds before warmed it),
/// with two servers listening to the store.
async fn redis_cpu_per_call(url: &str, c: &mut RawHttp, kinds: &[(&str, &dyn Fn(u64) -> Value)]) {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    for (name, request) in kinds {
        let (cpu, commands) = redis_usage(&mut con);
        let t = Instant::now();
        round_trips(c, request, 3_000).await;
        let took = t.elapsed();
        let (cpu_after, commands_after) = redis_usage(&mut con);
        eprintln!(
            "cluster: Redis per {name}: {:.2} µs of CPU, {:.2} commands (3,000 calls in {:.2} s)",
            (cpu_after - cpu) * 1e6 / 3_000.0,
            (commands_after - commands - 1) as f64 / 3_000.0,
            took.as_secs_f64()
        );
    }
}

/// A config admitting one bearer token (`ludus token bench`) next to
/// `cfg`'s settings, and the token.
fn token_config(cfg: &Path) -> (PathBuf, String) {
    let out = std::process::Command::new(BIN).args(["token", "bench"]).output().unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let token = printed.lines().map(str::trim).find(|l| l.starts_with("ludus_")).expect("a token").to_string();
    let path = cfg.with_file_name("bench-token.toml");
    std::fs::write(&path, std::fs::read_to_string(cfg).unwrap() + "\n" + &printed[printed.find("[[tokens]]").unwrap()..]).unwrap();
    (path, token)
}

/// One game, one caller, two servers on the Redis: `hanoi_get_state`
/// through one server and then the other, in turn (each call finds the
/// game held by the other server, which hands it over), against the same
/// calls through one server (where the game stays).
async fn hand_over_costs(cfg: &Path, redis: &str) {
    let (with_token, token) = token_config(cfg);
    let serve = |name: &'static str| {
        let args = ["--http", "127.0.0.1:0", "--store", redis, "--name", name];
        http_server_of(common::serve_command(&args, &with_token))
    };
    let (h1, h2) = (serve("h1").await, serve("h2").await);
    let mut a = RawHttp::initialize_with(&h1.url, "2025-06-18", Some(&token)).await;
    let env = new_hanoi(&mut a).await;
    let b = RawHttp::initialize_with(&h2.url, "2025-06-18", Some(&token)).await;
    let read = get_state(&env);
    let mut clients = [a, b];
    let moving = alternating_http(&mut clients, &[(0, &read), (1, &read)]).await;
    let staying = alternating_http(&mut clients, &[(0, &read)]).await;
    let pair = |(p50, p99): (Duration, Duration)| format!("{} / {}", us(p50), us(p99));
    eprintln!(
        "cluster: hanoi_get_state p50 / p99 on a game handed over between two servers at every call: {} (through h1), {} (through h2); staying on one server: {}",
        pair(moving[0]),
        pair(moving[1]),
        pair(staying[0])
    );
}

/// `LUDUS_BENCH=start`: a first start, its component cache emptied before
/// (three starts), to the first `tools/list` answered; after the last, the
/// first call that starts a game of each puzzle and chess against the
/// second one (the first instantiates a game of a freshly loaded component).
async fn start_costs(cfg: &Path, cache: &Path) {
    let mut starts = Vec::new();
    for round in 0..3 {
        let _ = std::fs::remove_dir_all(cache);
        let t = Instant::now();
        let (c, _) = stdio_client(&[], cfg).await;
        let tools = c.list_all_tools().await.unwrap();
        starts.push(t.elapsed());
        eprintln!("start: empty cache to first tools/list: {:.1} ms ({} tools)", t.elapsed().as_secs_f64() * 1e3, tools.len());
        if round == 2 {
            let firsts = [
                ("hanoi_init_simulator", json!({"n": 3})),
                ("blocks_world_init_simulator", json!({"n": 3})),
                ("checker_jumping_init_simulator", json!({"n": 2})),
                ("river_crossing_init_simulator", json!({"n": 3})),
                ("chess_create_game", json!({"type": "computer", "color": "white", "difficulty": 1})),
            ];
            for (tool, args) in firsts {
                let t = Instant::now();
                call(&c, tool, args.clone()).await;
                let first = t.elapsed();
                let t = Instant::now();
                call(&c, tool, args).await;
                eprintln!("start: {tool} first call {} against the next {}", us(first), us(t.elapsed()));
            }
        }
        let _ = c.cancel().await;
    }
}

/// `LUDUS_BENCH=stdio LUDUS_BENCH_BASELINE=/path/to/ludus`: this build
/// against another binary of Ludus in one run: `ping` and `hanoi_get_state`
/// one at a time over stdio to each, asked in turn, four rounds with the
/// two servers started in turn, so a change is measured before and after on
/// the same moments of the machine.
fn stdio_against(cfg: &Path, baseline: &str) {
    let hanoi = |command| {
        let mut c = RawClient::initialize(command);
        let env = new_puzzle(&mut c);
        (c, env)
    };
    let ping = |id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    // Nothing is written; and an older build refuses a store a newer one wrote.
    const MEMORY: &[&str] = &["--store", "memory"];
    let mut ratios = Vec::new();
    for round in 1..=4 {
        // Whichever server starts first answers faster on 2 cores (the
        // same build started second took 2× as long): the two start in
        // turn, and the rounds pair up.
        let baseline_first = round % 2 == 1;
        let (old, new) = if baseline_first {
            let old = hanoi(common::serve_command_of(baseline, MEMORY, cfg));
            (old, hanoi(common::serve_command(MEMORY, cfg)))
        } else {
            let new = hanoi(common::serve_command(MEMORY, cfg));
            (hanoi(common::serve_command_of(baseline, MEMORY, cfg)), new)
        };
        let (get_old, get_new) = (get_state_line(&old.1), get_state_line(&new.1));
        let mut clients = [old.0, new.0];
        let kinds: [(usize, &dyn Fn(usize) -> String); 4] = [(0, &ping), (1, &ping), (0, &get_old), (1, &get_new)];
        let [(op, _), (np, _), (og, og99), (ng, ng99)]: [(Duration, Duration); 4] =
            common::alternating(&mut clients, &kinds).try_into().unwrap();
        let ratio = ng.as_secs_f64() / og.as_secs_f64();
        ratios.push(ratio);
        eprintln!(
            "stdio round {round} ({} started first): ping baseline {} / this build {}; hanoi_get_state baseline {} / {} , this build {} / {} ({ratio:.2}× the baseline's p50)",
            if baseline_first { "baseline" } else { "this build" },
            us(op),
            us(np),
            us(og),
            us(og99),
            us(ng),
            us(ng99),
        );
        for mut c in clients {
            let _ = c.child.kill();
            let _ = c.child.wait();
        }
    }
    // The median: one round in a run may place a server's threads badly.
    ratios.sort_by(f64::total_cmp);
    let median = (ratios[1] + ratios[2]) / 2.0;
    eprintln!("stdio: this build's hanoi_get_state p50, the median of the four rounds: {median:.2}× the baseline's");
}

/// Nanoseconds the process `pid` has run on a CPU, all its threads.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Server CPU per `hanoi_get_state` (µs) over `n` calls one at a time, the
/// client pausing `pause` after each answer.
fn cpu_per_call(c: &mut RawClient, env: &str, n: usize, pause: Duration) -> f64 {
    let get = get_state_line(env);
    let before = cpu_ns(c.child.id());
    for i in 0..n {
        c.ask(&get(i));
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    cpu_ns(c.child.id()).saturating_sub(before) as f64 / n as f64 / 1_000.0
}

/// `LUDUS_BENCH=pace` (with `LUDUS_BENCH_BASELINE=/path/to/ludus` to compare
/// another build in the same run): what the server spends on CPU per call
/// for a client in a tight loop, for one that pauses 1 ms after each answer
/// (an agent's pace, or slower), and idle for two seconds; three rounds.
fn pace(cfg: &Path) {
    let mut servers = vec![("this build", common::serve_command(&[], cfg))];
    if let Ok(baseline) = std::env::var("LUDUS_BENCH_BASELINE") {
        servers.insert(0, ("baseline", common::serve_command_of(&baseline, &[], cfg)));
    }
    let mut clients: Vec<(&str, RawClient, String)> = servers
        .into_iter()
        .map(|(name, command)| {
            let mut c = RawClient::initialize(command);
            let env = new_puzzle(&mut c);
            (name, c, env)
        })
        .collect();
    for round in 1..=3 {
        for (name, c, env) in &mut clients {
            let tight = cpu_per_call(c, env, 5_000, Duration::ZERO);
            let paced = cpu_per_call(c, env, 1_000, Duration::from_millis(1));
            let before = cpu_ns(c.child.id());
            std::thread::sleep(Duration::from_secs(2));
            let idle = cpu_ns(c.child.id()).saturating_sub(before) as f64 / 2e6;
            eprintln!(
                "pace round {round}, {name}: server CPU per hanoi_get_state, tight loop {tight:.1} µs; client pausing 1 ms {paced:.1} µs; idle {idle:.2} ms per s"
            );
        }
    }
    for (_, mut c, _) in clients {
        let _ = c.child.kill();
    }
}

/// `LUDUS_BENCH=verify`: games played over stdio into a records file, then
/// `ludus verify` on it: seconds per record and per action for each game,
/// bytes per record, and the whole command's time (start-up included).
fn verify_costs(cfg: &Path) {
    let work = cfg.parent().unwrap();
    let records = work.join("verify-records.jsonl");
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pokemon-showdown/node_modules/pokemon-showdown");
    let sidecar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/showdown/sidecar/showdown_sim.js");
    let mut text = std::fs::read_to_string(cfg).unwrap();
    if package.is_dir() {
        text.push_str(&format!(
            "[plugins.showdown.channels.sim]\nprocess = {{ command = \"node\", args = [{:?}, \"--package\", {:?}] }}\n",
            sidecar.display().to_string(),
            package.display().to_string()
        ));
    } else {
        eprintln!("showdown: skipped ({} is not installed; the showdown tests install it)", package.display());
    }
    let cfg = work.join("verify.toml");
    std::fs::write(&cfg, text).unwrap();
    let mut c = RawClient::serve(&["--store", "memory", "--records", records.to_str().unwrap()], &cfg);
    let mut id = 1;
    let mut call = |c: &mut RawClient, name: &str, args: Value| {
        id += 1;
        c.ask(&tool_call(id, name, args).to_string())["result"]["structuredContent"].clone()
    };
    // Hanoi n = 5, solved one move at a time (31 moves).
    for _ in 0..20 {
        let env = call(&mut c, "hanoi_init_simulator", json!({"n": 5}))["env_id"].clone();
        let mut moves = Vec::new();
        hanoi_moves(5, 0, 2, 1, &mut moves);
        for (n, (disk, from, to)) in moves.into_iter().enumerate() {
            call(&mut c, "hanoi_execute_move", json!({"env_id": env, "move": [disk, from, to], "decision": n + 1}));
        }
    }
    // Chess against the engine at level 1, the first legal move each turn.
    for seed in 0..5 {
        let game = call(&mut c, "chess_create_game", json!({"type": "computer", "difficulty": 1, "seed": seed}))["game_id"].clone();
        for _ in 0..1000 {
            let s = call(&mut c, "chess_wait_for_next_turn", json!({"game_id": game}));
            if s["status"] == "game-over" {
                break;
            }
            if s["status"] == "your-turn" {
                call(&mut c, "chess_finish_turn", json!({"game_id": game, "move": s["legal_moves"][0]}));
            }
        }
    }
    // Showdown offline against the random bot, the first action each time.
    if package.is_dir() {
        for seed in 0..3 {
            let battle = call(&mut c, "showdown_start_offline_battle", json!({"bot": "random", "seed": seed}))["battle_id"].clone();
            for _ in 0..1000 {
                let s = call(&mut c, "showdown_get_battle_state", json!({"battle_id": battle}));
                if s["status"] == "finished" {
                    break;
                }
                if let Some(action) = s["available_actions"].as_array().and_then(|a| a.first()).cloned() {
                    call(&mut c, "showdown_make_move", json!({"battle_id": battle, "action": action}));
                }
            }
        }
    }
    let _ = c.child.kill();
    let _ = c.child.wait();
    std::thread::sleep(Duration::from_millis(300));
    let text = std::fs::read_to_string(&records).unwrap();
    let started = Instant::now();
    let out =
        std::process::Command::new(BIN).args(["verify", records.to_str().unwrap(), "--config", cfg.to_str().unwrap()]).output().unwrap();
    let wall = started.elapsed();
    let printed = String::from_utf8_lossy(&out.stdout);
    // game → (records, seconds, actions, bytes)
    let mut per: std::collections::BTreeMap<String, (u32, f64, u64, usize)> = Default::default();
    for (line, record) in printed.lines().filter(|l| l.starts_with("reproduced")).zip(text.lines()) {
        let game = line.split_whitespace().nth(2).unwrap_or("?").trim_end_matches(':').to_string();
        let tail = line.rsplit('(').next().unwrap_or("");
        let actions: u64 = tail.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let ms: f64 = tail.split(", ").nth(1).and_then(|t| t.trim_end_matches(" ms)").parse().ok()).unwrap_or(0.0);
        let secs = ms / 1000.0;
        let e = per.entry(game).or_default();
        *e = (e.0 + 1, e.1 + secs, e.2 + actions, e.3 + record.len());
    }
    eprintln!("{}", printed.lines().last().unwrap_or(""));
    eprintln!("| game | records | per record | per action | actions per record | bytes per record |");
    eprintln!("|---|---|---|---|---|---|");
    for (game, (n, secs, actions, bytes)) in per {
        let n = f64::from(n);
        eprintln!(
            "| {game} | {n} | {:.1} ms | {:.1} µs | {:.0} | {:.0} |",
            secs * 1000.0 / n,
            secs * 1e6 / actions.max(1) as f64,
            actions as f64 / n,
            bytes as f64 / n
        );
    }
    eprintln!("`ludus verify` over the file, start-up included: {:.2} s", wall.as_secs_f64());
}

fn hanoi_moves(n: u32, from: u32, to: u32, via: u32, out: &mut Vec<(u32, u32, u32)>) {
    if n == 0 {
        return;
    }
    hanoi_moves(n - 1, from, via, to, out);
    out.push((n, from, to));
    hanoi_moves(n - 1, via, to, from, out);
}

/// `LUDUS_BENCH=tools`: the bytes of `tools/list` (the JSON-RPC answer an
/// MCP client puts in its model's context) with every game, with each game
/// alone (`--games`), and with none (the host's own tools); not timed.
fn tool_list_bytes(cfg: &Path) {
    let bytes = |args: &[&str]| {
        let mut c = RawClient::serve(args, cfg);
        let list = c.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let _ = c.child.kill();
        (list.to_string().len(), list["result"]["tools"].as_array().map_or(0, Vec::len))
    };
    let (host, host_tools) = bytes(&["--no-builtin"]);
    let (all, all_tools) = bytes(&[]);
    eprintln!("tools/list, every game: {all} bytes, {all_tools} tools; the host's own tools alone: {host} bytes, {host_tools} tools");
    for game in ["blocks_world", "cards", "checker_jumping", "chess", "hanoi", "openspiel", "river_crossing", "showdown"] {
        let (with, tools) = bytes(&["--games", game]);
        eprintln!("tools/list, {game} alone: {with} bytes ({} for its {} tools)", with - host, tools - host_tools);
    }
}

/// `LUDUS_BENCH=http`: the minimal HTTP client's round trips and the
/// concurrent-client rows, three rounds on one server.
/// `hanoi_get_state` one at a time, in turn, from a client of 2025-06-18,
/// one of 2025-11-25 (whose calls answer on resumable streams) and a
/// stateless one of 2026-07-28 (no session): p50 of each.
async fn http_client_kinds(url: &str, cfg: &Path) -> [Duration; 3] {
    let (old, env_old) = http_hanoi_session_as(url, "2025-06-18").await;
    let (new, env_new) = http_hanoi_session_as(url, "2025-11-25").await;
    let (stateless, env_stateless) = http_hanoi_stateless(url, cfg).await;
    let (get_old, get_new, get_stateless) = (get_state(&env_old), get_state(&env_new), get_state(&env_stateless));
    let mut clients = [old, new, stateless];
    let times = alternating_http(&mut clients, &[(0, &get_old), (1, &get_new), (2, &get_stateless)]).await;
    [times[0].0, times[1].0, times[2].0]
}

/// A stateless 2026-07-28 client with one Hanoi puzzle, as the loopback
/// server's own user (the token it keeps next to the games).
async fn http_hanoi_stateless(url: &str, cfg: &Path) -> (RawHttp, Value) {
    let file = cfg.parent().unwrap_or(Path::new(".")).join("data/ludus/local-http-token");
    let token = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut c = RawHttp::stateless(url, token.trim()).await;
    let env = new_hanoi(&mut c).await;
    (c, env)
}

async fn http_only(cfg: &Path) {
    let server = http_server(cfg).await;
    let [plain, resumable, stateless] = http_client_kinds(&server.url, cfg).await;
    eprintln!(
        "http, hanoi_get_state p50 in turn: a 2025-06-18 client {}, a 2025-11-25 client (resumable stream) {} ({:.2}×), \
         a stateless 2026-07-28 client {} ({:.2}×)",
        us(plain),
        us(resumable),
        resumable.as_secs_f64() / plain.as_secs_f64(),
        us(stateless),
        stateless.as_secs_f64() / plain.as_secs_f64()
    );
    for round in 1..=3 {
        let t = http_one_at_a_time(&server.url).await;
        let one = http_load(&server.url, 1, 2_000).await.rate;
        let sixteen = http_load(&server.url, 16, 250).await.rate;
        let Load { rate, p50, p99, later_p99 } = http_load(&server.url, 200, 30).await;
        let floor = c_floor_under_load(&server.url).await;
        let (c, watching) = t.ratios();
        eprintln!(
            "http round {round}: {}; ping {}; hanoi_get_state {} / {} ({c:.2}× the C floor in turn, {watching:.2}× the watching one); 16 clients {:.2}× one; 200 sessions {rate:.0} calls/s, p50 {} / p99 {} (after each one's first call {}; the C floor {:.0} calls/s, p99 {})",
            t.floors(),
            us(t.ping.0),
            us(t.get.0),
            us(t.get.1),
            sixteen / one,
            us(p50),
            us(p99),
            us(later_p99),
            floor.rate,
            us(floor.p99)
        );
    }
    eprintln!("http, the watching C floor spending some work on each request: {}", idle_wake(&server.url).await);
    eprintln!("http, a call after half a second of quiet, p50: {}", after_quiet(&server.url).await);
}

/// `LUDUS_BENCH=http LUDUS_BENCH_BASELINE=/path/to/ludus`: this build against
/// another binary of Ludus in one run, eight rounds: both servers started
/// afresh (in turn which first, with `--store memory`), then
/// `hanoi_get_state` one at a time over a kept-alive connection to each,
/// from a 2025-06-18 client (plain JSON answers) and a 2025-11-25 one
/// (resumable streams), asked in turn, then from a stateless 2026-07-28
/// one, in turn on their own; then 200 concurrent sessions on each, in
/// turn, and 16 clients against one on each; the median ratio of the
/// rounds. Two servers started once differed
/// by a fifth with the same binary on both sides.
async fn http_against(cfg: &Path, baseline: &str) {
    let args = ["--http", "127.0.0.1:0", "--store", "memory"];
    // Each server lands in one of two speeds for its life (on 2 cores a
    // connection's `hanoi_get_state` took 31 or 44 µs, whichever build):
    // eight starts of each.
    const ROUNDS: usize = 8;
    let (mut ratios, mut streamed_ratios, mut stateless_ratios, mut stateless_streamed_ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let baseline_first = round % 2 == 1;
        let (old, new) = if baseline_first {
            let old = http_server_of(common::serve_command_of(baseline, &args, cfg)).await;
            (old, http_server_of(common::serve_command(&args, cfg)).await)
        } else {
            let new = http_server_of(common::serve_command(&args, cfg)).await;
            (http_server_of(common::serve_command_of(baseline, &args, cfg)).await, new)
        };
        let ((old_client, old_env), (new_client, new_env)) = (http_hanoi_session(&old.url).await, http_hanoi_session(&new.url).await);
        // The same from a 2025-11-25 client, whose calls answer on resumable streams.
        let ((old_streams, old_env2), (new_streams, new_env2)) =
            (http_hanoi_session_as(&old.url, "2025-11-25").await, http_hanoi_session_as(&new.url, "2025-11-25").await);
        // And from a stateless 2026-07-28 client (no session).
        let ((old_stateless, old_env3), (new_stateless, new_env3)) =
            (http_hanoi_stateless(&old.url, cfg).await, http_hanoi_stateless(&new.url, cfg).await);
        let (get_old, get_new) = (get_state(&old_env), get_state(&new_env));
        let (get_old2, get_new2) = (get_state(&old_env2), get_state(&new_env2));
        let (get_old3, get_new3) = (get_state(&old_env3), get_state(&new_env3));
        let mut clients = [old_client, new_client, old_streams, new_streams];
        let [(o50, o99), (n50, n99), (os50, _), (ns50, _)]: [(Duration, Duration); 4] =
            alternating_http(&mut clients, &[(0, &get_old), (1, &get_new), (2, &get_old2), (3, &get_new2)]).await.try_into().unwrap();
        // Stateless clients in turn on their own: what a server leaves to do
        // after answering one (rmcp's service, torn down per request) would
        // otherwise land in the session clients' round trips.
        // Each also asking for progress, which answers on an event stream.
        let (streamed_old3, streamed_new3) = (get_state_streamed(&old_env3), get_state_streamed(&new_env3));
        let mut stateless_clients = [old_stateless, new_stateless];
        let kinds: [(usize, &dyn Fn(u64) -> Value); 4] = [(0, &get_old3), (1, &get_new3), (0, &streamed_old3), (1, &streamed_new3)];
        let [(ol50, _), (nl50, _), (olp50, _), (nlp50, _)]: [(Duration, Duration); 4] =
            alternating_http(&mut stateless_clients, &kinds).await.try_into().unwrap();
        let ratio = n50.as_secs_f64() / o50.as_secs_f64();
        ratios.push(ratio);
        let streamed = ns50.as_secs_f64() / os50.as_secs_f64();
        streamed_ratios.push(streamed);
        let stateless = nl50.as_secs_f64() / ol50.as_secs_f64();
        stateless_ratios.push(stateless);
        let stateless_streamed = nlp50.as_secs_f64() / olp50.as_secs_f64();
        stateless_streamed_ratios.push(stateless_streamed);
        let first = if baseline_first { "baseline" } else { "this build" };
        eprintln!(
            "http round {round} ({first} started first): hanoi_get_state one at a time: baseline {} / {}; this build {} / {} ({ratio:.2}×); \
             p50 from a 2025-11-25 client (resumable streams): baseline {}, this build {} ({streamed:.2}×); \
             from a stateless 2026-07-28 client: baseline {}, this build {} ({stateless:.2}×), \
             asking for progress: baseline {}, this build {} ({stateless_streamed:.2}×)",
            us(o50),
            us(o99),
            us(n50),
            us(n99),
            us(os50),
            us(ns50),
            us(ol50),
            us(nl50),
            us(olp50),
            us(nlp50)
        );
        for (name, server) in [("baseline", &old), ("this build", &new)] {
            let Load { rate, p50, p99, .. } = http_load(&server.url, 200, 30).await;
            let sixteen = http_load(&server.url, 16, 250).await.rate / http_load(&server.url, 1, 2_000).await.rate;
            eprintln!(
                "http round {round}, 200 sessions, {name}: {rate:.0} calls/s, p50 {} / p99 {}; 16 clients {sixteen:.2}× one",
                us(p50),
                us(p99)
            );
        }
    }
    // The median: one round in a run may place a server's threads badly.
    let median = |mut r: Vec<f64>| {
        r.sort_by(f64::total_cmp);
        (r[ROUNDS / 2 - 1] + r[ROUNDS / 2]) / 2.0
    };
    eprintln!(
        "http: this build's hanoi_get_state p50, the median of the {ROUNDS} rounds: {:.2}× the baseline's; from a 2025-11-25 client {:.2}×; \
         from a stateless 2026-07-28 client {:.2}×, asking for progress {:.2}×",
        median(ratios),
        median(streamed_ratios),
        median(stateless_ratios),
        median(stateless_streamed_ratios)
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    ludus::capability::channels::install_tls_provider();
    // `cargo bench` passes --bench; nothing else is accepted.
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let cfg = config_file(work.path(), &cache);
    match std::env::var("LUDUS_BENCH").as_deref() {
        Ok("chess") => return chess_only(&cfg).await,
        Ok("stdio") => match std::env::var("LUDUS_BENCH_BASELINE") {
            Ok(baseline) => return tokio::task::spawn_blocking(move || stdio_against(&cfg, &baseline)).await.unwrap(),
            Err(_) => return tokio::task::spawn_blocking(move || stdio_only(&cfg)).await.unwrap(),
        },
        Ok("store") => return tokio::task::spawn_blocking(move || store_costs(&cfg)).await.unwrap(),
        Ok("pace") => return tokio::task::spawn_blocking(move || pace(&cfg)).await.unwrap(),
        Ok("tools") => return tokio::task::spawn_blocking(move || tool_list_bytes(&cfg)).await.unwrap(),
        Ok("cluster") => return cluster_costs(&cfg).await,
        Ok("start") => return start_costs(&cfg, &cache).await,
        Ok("verify") => return tokio::task::spawn_blocking(move || verify_costs(&cfg)).await.unwrap(),
        Ok("idle") => return tokio::task::spawn_blocking(move || idle_costs(&cfg)).await.unwrap(),
        Ok("million") => return tokio::task::spawn_blocking(move || million::million_stored(&cfg)).await.unwrap(),
        Ok("openspiel") => return tokio::task::spawn_blocking(move || openspiel_costs(&cfg)).await.unwrap(),
        Ok("engines") => return tokio::task::spawn_blocking(move || engine_start_costs(&cfg)).await.unwrap(),
        Ok("shared") => return tokio::task::spawn_blocking(move || shared_engine_costs(&cfg)).await.unwrap(),
        Ok("http") => match std::env::var("LUDUS_BENCH_BASELINE") {
            Ok(baseline) => return http_against(&cfg, &baseline).await,
            Err(_) => return http_only(&cfg).await,
        },
        _ => {}
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| {
        eprintln!("{k}: {v}");
        rows.push((k.to_string(), v));
    };

    // A first start, with an empty component cache.
    start_costs(&cfg, &cache).await;

    // The minimal client of the speed issue: plain pipes, one line each way.
    let ([(floor, _), (ping, _), (g50, g99)], rate, in_order) = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || raw_stdio(&cfg)
    })
    .await
    .unwrap();
    row("stdio floor: the same client against `cat` (each line answered with itself), p50", us(floor));
    row(
        "stdio, minimal pipe client: `ping` p50; `hanoi_get_state` p50 / p99",
        format!("{} ; {} / {} ({:.1}× ping)", us(ping), us(g50), us(g99), g50.as_secs_f64() / ping.as_secs_f64()),
    );
    let ([(floor1, _), (ping1, _), (g1, g1_99)], mut c, _) = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || one_at_a_time(&cfg, true)
    })
    .await
    .unwrap();
    let _ = c.child.kill();
    row(
        "the same three on one core (client, `cat` and server on CPU 0): floor p50; `ping` p50; `hanoi_get_state` p50 / p99",
        format!("{} ; {} ; {} / {} ({:.1}× ping)", us(floor1), us(ping1), us(g1), us(g1_99), g1.as_secs_f64() / ping1.as_secs_f64()),
    );
    let chess = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || chess_finish_turn(&cfg)
    })
    .await
    .unwrap();
    let (chess_p50, c99) = chess.finish;
    row(
        "stdio, minimal pipe client: chess `chess_finish_turn` against level 1 (our move; the engine replies 20 ms later, waited for untimed), p50 / p99",
        format!("{} / {}", us(chess_p50), us(c99)),
    );
    row(
        "stdio, minimal pipe client: chess `chess_create_game` p50; server resident growth per new game (200 games, before any engine move): all (VmRSS) / anonymous",
        format!("{:.2} ms; {:.0} KiB / {:.0} KiB", chess.create.as_secs_f64() * 1e3, chess.kib_per_game.0, chess.kib_per_game.1),
    );
    row(
        "stdio, minimal pipe client: 3,000 `hanoi_get_state` written at once",
        format!("{rate:.0} calls/s, answers {}", if in_order { "in request order" } else { "out of request order" }),
    );

    // Inside the server: the library's call path without a transport.
    let opts = ludus::server::ServeOptions {
        plugins: None,
        http: None,
        config: toml::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap(),
        builtins: true,
        store: ludus::store::StoreSpec::Memory,
        records: None,
        run: None,
    };
    let registry = ludus::server::start(&opts).await.unwrap();
    let (plugin, init) = registry.find_tool("hanoi_init_simulator").unwrap();
    let (_, get) = registry.find_tool("hanoi_get_state").unwrap();
    let (reg, plug) = (registry.clone(), plugin.clone());
    let direct = move |tool: usize, a: Value| {
        let (r, p) = (reg.clone(), plug.clone());
        async move {
            match r
                .sessions
                .call(p, tool, &args(a), ludus::session::Caller::Connection("bench".into()), Default::default(), Default::default())
                .await
            {
                ludus::session::Reply::Value { value, .. } => value,
                ludus::session::Reply::Failed(e) => panic!("{e}"),
            }
        }
    };
    let first = direct(init, json!({"n": 3})).await;
    let env = registry.sessions.list_for(&ludus::session::Caller::Connection("bench".into()))[0].id.clone();
    let _ = first;
    for _ in 0..500 {
        direct(get, json!({"env_id": env})).await;
    }
    let mut d = Vec::new();
    for _ in 0..20_000 {
        let t = Instant::now();
        direct(get, json!({"env_id": env})).await;
        d.push(t.elapsed());
    }
    let (in_p50, in_p99) = percentiles(d);
    row("trivial session call inside the server, p50 / p99", format!("{} / {}", us(in_p50), us(in_p99)));
    let t = Instant::now();
    let n = 5_000;
    for _ in 0..n {
        direct(init, json!({"n": 3})).await;
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    row("new sessions per second inside the server (one caller)", format!("{rate:.0}"));
    let t = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            tokio::spawn({
                let d = direct.clone();
                async move {
                    for _ in 0..n / 8 {
                        d(init, json!({"n": 3})).await;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    row("new sessions per second inside the server (8 callers)", format!("{:.0}", n as f64 / t.elapsed().as_secs_f64()));
    let (c50, c99) = chess_finish_turn_in_server(&registry).await;
    row(
        "chess `chess_finish_turn` against level 1 inside the server (no transport), p50 / p99",
        format!("{} / {} (stdio adds {})", us(c50), us(c99), us(chess_p50.saturating_sub(c50))),
    );
    drop((registry, direct));

    // Over stdio.
    let (c, _) = stdio_client(&[], &cfg).await;
    let (s50, s99) = latency(&c, 5_000).await;
    row(
        "trivial session call over stdio (rmcp client), p50 / p99",
        format!("{} / {} ({:.1}× the in-server p50)", us(s50), us(s99), s50.as_secs_f64() / in_p50.as_secs_f64()),
    );
    let t = Instant::now();
    for _ in 0..2_000 {
        call(&c, "hanoi_init_simulator", json!({"n": 3})).await;
    }
    row("new sessions per second over stdio (one caller)", format!("{:.0}", 2_000.0 / t.elapsed().as_secs_f64()));
    let _ = c.cancel().await;

    // Over HTTP, plus memory with 10,000 live sessions.
    let server = http_server(&cfg).await;
    let pid = server.child.id().unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let h: Client = Notified(tx).serve(StreamableHttpClientTransport::from_uri(server.url.clone())).await.unwrap();
    let (h50, h99) = latency(&h, 3_000).await;
    row(
        "trivial session call over HTTP (rmcp client), p50 / p99",
        format!("{} / {} ({:.1}× stdio)", us(h50), us(h99), h50.as_secs_f64() / s50.as_secs_f64()),
    );
    let t = http_one_at_a_time(&server.url).await;
    row(
        "HTTP floors: minimal keep-alive client against a minimal hyper server in its process; a minimal C server in a process of its own, p50",
        t.floors(),
    );
    let (c, watching) = t.ratios();
    row(
        "HTTP, minimal keep-alive client reading whole answers: `ping` p50; `hanoi_get_state` p50 / p99",
        format!("{} ; {} / {} ({c:.2}× the C floor in turn, {watching:.2}× the watching one)", us(t.ping.0), us(t.get.0), us(t.get.1)),
    );
    row("HTTP, the watching C floor spending some work on each request before answering, asked alone, p50", idle_wake(&server.url).await);
    row("HTTP, a call after half a second of quiet (as an agent's, after it thinks), p50 of 15", after_quiet(&server.url).await);
    let t1 = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || http_on_cpu0(&cfg)
    })
    .await
    .unwrap();
    let (c1, watching1) = t1.ratios();
    row(
        "the same on one core (client, floors and Ludus on CPU 0): floors p50; `ping` p50; `hanoi_get_state` p50 / p99",
        format!(
            "{} ; {} ; {} / {} ({c1:.2}× the C floor in turn, {watching1:.2}× the watching one)",
            t1.floors(),
            us(t1.ping.0),
            us(t1.get.0),
            us(t1.get.1)
        ),
    );
    let one = http_load(&server.url, 1, 2_000).await.rate;
    let sixteen = http_load(&server.url, 16, 250).await.rate;
    row(
        "HTTP, plain keep-alive clients: 1 client vs 16 concurrent clients",
        format!("{one:.0} vs {sixteen:.0} calls/s ({:.2}×)", sixteen / one),
    );
    let load = http_load(&server.url, 200, 30).await;
    let floor = c_floor_under_load(&server.url).await;
    row(
        "HTTP, 200 concurrent sessions × 30 calls (plain keep-alive clients on one thread of the benchmark): calls/s, p50 / p99, p99 after each session's first call; the C floor under the same load",
        format!(
            "{:.0} calls/s, {} / {}, {} ; {:.0} calls/s, {} / {}",
            load.rate,
            us(load.p50),
            us(load.p99),
            us(load.later_p99),
            floor.rate,
            us(floor.p50),
            us(floor.p99)
        ),
    );
    match magic_round_trips(&server.url).await {
        Ok((d, decisions, took)) => {
            let (m50, m99) = percentiles(d);
            row(
                "Magic: one `cards_choose_action` round trip (phase bridge, two agents over HTTP), p50 / p99",
                format!(
                    "{:.2} ms / {:.2} ms; {decisions} decisions in {:.1} s ({:.0} per second, both seats)",
                    m50.as_secs_f64() * 1e3,
                    m99.as_secs_f64() * 1e3,
                    took.as_secs_f64(),
                    decisions as f64 / took.as_secs_f64()
                ),
            );
        }
        Err(e) => row("Magic: one `cards_choose_action` round trip", format!("skipped: {e}")),
    }
    let before = rss_kib(pid);
    let h = Arc::new(h);
    let t = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn({
                let h = h.clone();
                async move {
                    for _ in 0..625 {
                        call(&h, "hanoi_init_simulator", json!({"n": 10})).await;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let made = t.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid);
    row(
        "10,000 live Hanoi sessions (N=10): server resident memory",
        format!(
            "{:.0} MiB total, {:.0} MiB before; {:.1} KiB per session; created in {:.1} s over HTTP (16 callers)",
            after as f64 / 1024.0,
            before as f64 / 1024.0,
            (after - before) as f64 / 10_000.0,
            made.as_secs_f64()
        ),
    );
    drop(server);

    // Hot reload: rename a component into the watched directory → list_changed.
    let dir = work.path().join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let (c, mut notes) = stdio_client(&["--plugins", dir.to_str().unwrap()], &cfg).await;
    let hello = Path::new(env!("LUDUS_WASM_DIR")).join("hello.wasm");
    let mut times = Vec::new();
    for i in 0..6 {
        let tmp = dir.join(".hello.tmp");
        let target = dir.join("hello.wasm");
        let t = Instant::now();
        if i % 2 == 0 {
            std::fs::copy(&hello, &tmp).unwrap();
            std::fs::rename(&tmp, &target).unwrap();
        } else {
            std::fs::remove_file(&target).unwrap();
        }
        let at = tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.unwrap().unwrap();
        times.push(at - t);
    }
    let adds: Vec<Duration> = times.iter().step_by(2).copied().collect();
    row(
        "hot reload: rename into the directory → tools/list_changed (first add, compiles)",
        format!("{:.0} ms", adds[0].as_secs_f64() * 1e3),
    );
    row(
        "hot reload: rename → tools/list_changed (re-adds, cached), removal",
        format!(
            "{:.0} ms, {:.0} ms",
            adds[1..].iter().sum::<Duration>().as_secs_f64() * 1e3 / (adds.len() - 1) as f64,
            times[1].as_secs_f64() * 1e3
        ),
    );
    let _ = c.cancel().await;

    println!("| measurement | result |\n|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
}

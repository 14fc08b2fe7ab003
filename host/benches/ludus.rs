//! Ludus benchmarks: `cargo bench -p ludus --bench ludus` (release build).
//!
//! Measures, in one run, and prints a Markdown table (copied into the README):
//! - tool-call latency p50/p99 of a trivial session call (`hanoi_get_state`)
//!   inside the server (registry → session → component, no transport), over
//!   stdio and over Streamable HTTP through rmcp's client;
//! - new sessions per second (inside the server and over stdio);
//! - resident memory of the server with 10,000 live puzzle sessions;
//! - hot-reload latency from a rename into the plugins directory to the
//!   `tools/list_changed` notification;
//! - cold start to ready (first `tools/list` answered), with an empty and a
//!   warm component cache.
//!
//! Timings are wall-clock on whatever machine runs it; ratios between rows
//! are the comparable part. Nothing here is asserted.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_ludus");

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

fn percentiles(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    (d[d.len() / 2], d[(d.len() * 99) / 100])
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn config_file(dir: &Path, cache: &Path) -> PathBuf {
    let p = dir.join("bench.toml");
    std::fs::write(&p, format!("cache_dir = {:?}\n[limits]\nmax_sessions = 100000\nmax_sessions_per_plugin = 100000\n", cache.display().to_string())).unwrap();
    p
}

async fn stdio_client(extra: &[&str], cfg: &Path) -> (Client, mpsc::UnboundedReceiver<Instant>) {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("serve").args(extra).arg("--config").arg(cfg).env("LUDUS_LOG", "error");
    let (t, _) = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    (Notified(tx).serve(t).await.unwrap(), rx)
}

struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

async fn http_server(cfg: &Path) -> HttpServer {
    let mut child = tokio::process::Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(cfg)
        .env("LUDUS_LOG", "error")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
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

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
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

/// One Streamable HTTP request with the headers a plain client sends; the
/// whole answer is read, as a buffering proxy (nginx) or Python's httpx do.
async fn post(client: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> (Option<String>, String) {
    let mut req = client.post(url).header("accept", "application/json, text/event-stream").json(&body);
    if let Some(id) = session {
        req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-06-18");
    }
    let resp = req.send().await.unwrap();
    let id = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from);
    (id, resp.text().await.unwrap())
}

/// The JSON-RPC result inside a streamed (SSE) or plain JSON answer.
fn rpc_result(text: &str) -> Value {
    text.lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("result").is_some())
        .map(|v| v["result"].clone())
        .unwrap_or(Value::Null)
}

/// Round trips of `hanoi_get_state` through one keep-alive connection whose
/// client waits for each answer's end: what the connection costs, not the call.
async fn whole_response_latency(url: &str, n: usize) -> (Duration, Duration) {
    let client = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
    let (session, _) = post(&client, url, None, init).await;
    let session = session.expect("the server gave an mcp-session-id");
    post(&client, url, Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let tool = |id: u64, name: &str, args: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let (_, text) = post(&client, url, Some(&session), tool(1, "hanoi_init_simulator", json!({"n": 3}))).await;
    let env = rpc_result(&text)["structuredContent"]["env_id"].clone();
    let mut d = Vec::with_capacity(n);
    for i in 0..n + 20 {
        let t = Instant::now();
        let (_, text) = post(&client, url, Some(&session), tool(2 + i as u64, "hanoi_get_state", json!({"env_id": env}))).await;
        assert!(rpc_result(&text)["structuredContent"].is_object(), "{text}");
        if i >= 20 {
            d.push(t.elapsed());
        }
    }
    percentiles(d)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    ludus::capability::channels::install_tls_provider();
    // `cargo bench` passes --bench; nothing else is accepted.
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let cfg = config_file(work.path(), &cache);
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| {
        eprintln!("{k}: {v}");
        rows.push((k.to_string(), v));
    };

    // Cold start, empty cache first (compiles the built-in games), then warm.
    let mut cold = Vec::new();
    for i in 0..4 {
        if i == 0 {
            let _ = std::fs::remove_dir_all(&cache);
        }
        let t = Instant::now();
        let (c, _) = stdio_client(&[], &cfg).await;
        c.list_all_tools().await.unwrap();
        cold.push(t.elapsed());
        let _ = c.cancel().await;
    }
    let warm = cold[1..].iter().sum::<Duration>() / 3;
    row("cold start to first tools/list, empty component cache", format!("{:.0} ms", cold[0].as_secs_f64() * 1e3));
    row("cold start to first tools/list, warm cache (mean of 3)", format!("{:.0} ms ({:.1}× faster)", warm.as_secs_f64() * 1e3, cold[0].as_secs_f64() / warm.as_secs_f64()));

    // Inside the server: the library's call path without a transport.
    let opts = ludus::server::ServeOptions {
        plugins: None,
        http: None,
        config: toml::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap(),
        builtins: true,
    };
    let registry = ludus::server::start(&opts).await.unwrap();
    let (plugin, init) = registry.find_tool("hanoi_init_simulator").unwrap();
    let (_, get) = registry.find_tool("hanoi_get_state").unwrap();
    let (reg, plug) = (registry.clone(), plugin.clone());
    let direct = move |tool: usize, a: Value| {
        let (r, p) = (reg.clone(), plug.clone());
        async move {
            match r.sessions.call(p, tool, &args(a), "bench".into(), Default::default(), None).await {
                ludus::session::Reply::Value { value, .. } => value,
                ludus::session::Reply::Failed(e) => panic!("{e}"),
            }
        }
    };
    let first = direct(init, json!({"n": 3})).await;
    let env = registry.sessions.list()[0].id.clone();
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
    let tasks: Vec<_> = (0..8).map(|_| tokio::spawn({
        let d = direct.clone();
        async move { for _ in 0..n / 8 { d(init, json!({"n": 3})).await; } }
    })).collect();
    for task in tasks {
        task.await.unwrap();
    }
    row("new sessions per second inside the server (8 callers)", format!("{:.0}", n as f64 / t.elapsed().as_secs_f64()));
    drop((registry, direct));

    // Over stdio.
    let (c, _) = stdio_client(&[], &cfg).await;
    let (s50, s99) = latency(&c, 5_000).await;
    row("trivial session call over stdio (rmcp client), p50 / p99", format!("{} / {} ({:.1}× the in-server p50)", us(s50), us(s99), s50.as_secs_f64() / in_p50.as_secs_f64()));
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
    row("trivial session call over HTTP (rmcp client), p50 / p99", format!("{} / {} ({:.1}× stdio)", us(h50), us(h99), h50.as_secs_f64() / s50.as_secs_f64()));
    let (w50, w99) = whole_response_latency(&server.url, 500).await;
    row("trivial session call over HTTP (keep-alive client reading whole answers, as a buffering proxy), p50 / p99", format!("{} / {}", us(w50), us(w99)));
    let before = rss_kib(pid);
    let h = Arc::new(h);
    let t = Instant::now();
    let tasks: Vec<_> = (0..16).map(|_| tokio::spawn({
        let h = h.clone();
        async move { for _ in 0..625 { call(&h, "hanoi_init_simulator", json!({"n": 10})).await; } }
    })).collect();
    for task in tasks {
        task.await.unwrap();
    }
    let made = t.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid);
    row("10,000 live Hanoi sessions (N=10): server resident memory", format!(
        "{:.0} MiB total, {:.0} MiB before; {:.1} KiB per session; created in {:.1} s over HTTP (16 callers)",
        after as f64 / 1024.0, before as f64 / 1024.0, (after - before) as f64 / 10_000.0, made.as_secs_f64()
    ));
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
    row("hot reload: rename into the directory → tools/list_changed (first add, compiles)", format!("{:.0} ms", adds[0].as_secs_f64() * 1e3));
    row("hot reload: rename → tools/list_changed (re-adds, cached), removal", format!(
        "{:.0} ms, {:.0} ms",
        adds[1..].iter().sum::<Duration>().as_secs_f64() * 1e3 / (adds.len() - 1) as f64,
        times[1].as_secs_f64() * 1e3
    ));
    let _ = c.cancel().await;

    println!("| measurement | result |\n|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
}

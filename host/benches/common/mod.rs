//! What the benchmarks share: a plain Streamable HTTP client's request and
//! reading its answer. Each benchmark uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../../tests/common/processes.rs"]
mod processes;
#[allow(unused_imports)] // the soak's
pub use processes::descendants;

pub const BIN: &str = env!("CARGO_BIN_EXE_ludus");

/// A number from `/proc/PID/status` (`VmRSS` in KiB, `Threads`); 0 when unreadable.
pub fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let value = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'));
    value.and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// Resident memory of a process, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    proc_status(pid, "VmRSS")
}

/// The `pokemon-showdown` npm package the Showdown tests install into
/// `target/pokemon-showdown` (or `LUDUS_SHOWDOWN`); exits with a hint when absent.
pub fn showdown_package() -> std::path::PathBuf {
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pokemon-showdown/node_modules/pokemon-showdown");
    let dir = std::env::var_os("LUDUS_SHOWDOWN").map_or(default, std::path::PathBuf::from);
    if !dir.join("pokemon-showdown").is_file() {
        eprintln!(
            "no pokemon-showdown package at {}: run `cargo test --test showdown` once (it installs it), \
             or set LUDUS_SHOWDOWN to an installed package",
            dir.display()
        );
        std::process::exit(2);
    }
    dir
}

/// The config lines that make `package` the Showdown plugin's simulator.
pub fn showdown_sim(package: &Path) -> String {
    let sidecar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/showdown/sidecar/showdown_sim.js");
    format!(
        "[plugins.showdown.channels.sim]\nprocess = {{ command = \"node\", args = [{:?}, \"--package\", {:?}] }}\n",
        sidecar.canonicalize().unwrap().display().to_string(),
        package.display().to_string()
    )
}

/// A `tools/call` request.
pub fn tool_call(id: u64, name: &str, args: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// p50 and p99.
pub fn percentiles(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    (d[d.len() / 2], d[(d.len() * 99) / 100])
}

/// One Streamable HTTP request with the headers a plain client sends; the
/// whole answer is read, as a buffering proxy (nginx) or Python's httpx do.
pub async fn post(client: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> (Option<String>, String) {
    let mut req = client.post(url).header("accept", "application/json, text/event-stream").json(&body);
    if let Some(id) = session {
        req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-06-18");
    }
    let resp = req.send().await.unwrap();
    let id = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from);
    (id, resp.text().await.unwrap_or_default())
}

/// The JSON-RPC result inside a streamed (SSE) or plain JSON answer.
pub fn rpc_result(text: &str) -> Value {
    text.lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("result").is_some())
        .map(|v| v["result"].clone())
        .unwrap_or(Value::Null)
}

/// The speed issue's minimal HTTP client: one keep-alive connection, a
/// request written whole, the answer read whole (headers, then its length or
/// its chunks). Next to nothing of its own, so a round trip measures the
/// server and the loopback, not a client library.
pub struct RawHttp {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
    host: String,
    path: String,
    pub session: Option<String>,
    /// The protocol version it negotiated (sent on every later request).
    pub version: &'static str,
    /// A bearer token sent with every request (none: an anonymous caller).
    pub token: Option<String>,
}

impl RawHttp {
    pub async fn connect(url: &str) -> RawHttp {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
        let tcp = tokio::net::TcpStream::connect(host).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        RawHttp { stream: tokio::io::BufReader::new(tcp), host: host.to_string(), path, session: None, version: "2025-06-18", token: None }
    }

    /// Opens an MCP session on this connection.
    pub async fn initialize(url: &str) -> RawHttp {
        RawHttp::initialize_as(url, "2025-06-18").await
    }

    /// Opens an MCP session of protocol `version` (from 2025-11-25 its tool
    /// calls answer on resumable streams: a priming event, ids).
    pub async fn initialize_as(url: &str, version: &'static str) -> RawHttp {
        RawHttp::initialize_with(url, version, None).await
    }

    /// Opens an MCP session as the caller `token` names.
    pub async fn initialize_with(url: &str, version: &'static str, token: Option<&str>) -> RawHttp {
        let mut c = RawHttp::connect(url).await;
        c.version = version;
        c.token = token.map(str::to_string);
        let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let (headers, _) = c.post(&init).await;
        c.session = header(&headers, "mcp-session-id");
        c.post(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        c
    }

    /// A stateless client of 2026-07-28 (the official Python SDK's
    /// default): no session; each request names the protocol in its
    /// headers and `_meta`, with the standard headers (`Mcp-Method`,
    /// `Mcp-Name`), as the caller `token` names.
    pub async fn stateless(url: &str, token: &str) -> RawHttp {
        let mut c = RawHttp::connect(url).await;
        c.version = STATELESS;
        c.token = Some(token.to_string());
        c
    }

    /// POSTs a JSON-RPC message; returns the answer's headers and body.
    pub async fn post(&mut self, body: &Value) -> (String, String) {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let stateless = self.session.is_none() && self.version == STATELESS;
        let mut standard = String::new();
        let body = if stateless {
            let mut body = body.clone();
            let method = body["method"].as_str().unwrap_or_default().to_string();
            standard = format!("mcp-protocol-version: {STATELESS}\r\nmcp-method: {method}\r\n");
            if let Some(name) = body["params"]["name"].as_str() {
                standard += &format!("mcp-name: {name}\r\n");
            }
            // The request's own `_meta` (a progress token) keeps its keys.
            let mut meta = serde_json::json!({"io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}});
            if let serde_json::Value::Object(own) = body["params"]["_meta"].take() {
                meta.as_object_mut().expect("an object").extend(own);
            }
            body["params"]["_meta"] = meta;
            serde_json::to_vec(&body).unwrap()
        } else {
            serde_json::to_vec(body).unwrap()
        };
        let mut request = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            self.path,
            self.host,
            body.len()
        );
        if let Some(id) = &self.session {
            request += &format!("mcp-session-id: {id}\r\nmcp-protocol-version: {}\r\n", self.version);
        }
        if let Some(token) = &self.token {
            request += &format!("authorization: Bearer {token}\r\n");
        }
        request += &standard;
        request += "\r\n";
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(&body);
        self.stream.get_mut().write_all(&bytes).await.unwrap();
        let mut headers = String::new();
        loop {
            let n = self.stream.read_line(&mut headers).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            if headers.ends_with("\r\n\r\n") {
                break;
            }
        }
        let mut out = Vec::new();
        if let Some(len) = header(&headers, "content-length") {
            out.resize(len.parse().unwrap(), 0);
            self.stream.read_exact(&mut out).await.unwrap();
        } else {
            let mut line = String::new();
            loop {
                line.clear();
                self.stream.read_line(&mut line).await.unwrap();
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                let start = out.len();
                out.resize(start + size + 2, 0);
                self.stream.read_exact(&mut out[start..]).await.unwrap();
                out.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        }
        (headers, String::from_utf8(out).unwrap())
    }
}

/// The protocol of stateless clients (`RawHttp::stateless`).
const STATELESS: &str = "2026-07-28";

fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

/// The speed issue's minimal client: `ludus serve` on plain pipes, one
/// JSON-RPC line written and its answer line read.
pub struct RawClient {
    pub child: std::process::Child,
    pub input: std::io::BufWriter<std::process::ChildStdin>,
    pub output: std::io::BufReader<std::process::ChildStdout>,
}

/// `ludus serve` with these extra arguments and config, logging errors only.
pub fn serve_command(args: &[&str], cfg: &Path) -> std::process::Command {
    serve_command_of(BIN, args, cfg)
}

/// `serve_command` for another `ludus` binary (a baseline to compare with).
pub fn serve_command_of(bin: &str, args: &[&str], cfg: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(bin);
    command.arg("serve").args(args).arg("--config").arg(cfg).env("LUDUS_LOG", "error");
    // Games are kept next to the config, not in the user's data dir.
    command.env("XDG_DATA_HOME", cfg.parent().unwrap_or(Path::new(".")).join("data"));
    command
}

/// The same command confined to CPU 0 (`taskset`, util-linux).
pub fn on_cpu0(command: &std::process::Command) -> std::process::Command {
    let mut pinned = std::process::Command::new("taskset");
    pinned.args(["-c", "0"]).arg(command.get_program()).args(command.get_args());
    for (k, v) in command.get_envs() {
        if let Some(v) = v {
            pinned.env(k, v);
        }
    }
    pinned
}

/// Runs `f` with the calling thread confined to CPU 0, then restores its
/// CPUs.
pub fn on_cpu0_here<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: cpu_set_t is plain data; the calls only read and write it.
    unsafe {
        let mut before: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut before);
        let mut cpu0: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut cpu0);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpu0);
        let out = f();
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &before);
        out
    }
}

impl RawClient {
    pub fn start(cfg: &Path) -> RawClient {
        RawClient::serve(&[], cfg)
    }

    /// `ludus serve` with these extra arguments (e.g. `--plugins DIR`).
    pub fn serve(args: &[&str], cfg: &Path) -> RawClient {
        RawClient::initialize(serve_command(args, cfg))
    }

    /// Starts `command` (a `ludus serve`) and opens the MCP session.
    pub fn initialize(command: std::process::Command) -> RawClient {
        let mut c = RawClient::spawn(command);
        c.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#);
        c.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        c
    }

    pub fn spawn(mut command: std::process::Command) -> RawClient {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let input = std::io::BufWriter::new(child.stdin.take().unwrap());
        let output = std::io::BufReader::new(child.stdout.take().unwrap());
        RawClient { child, input, output }
    }

    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
    }

    pub fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        read_answer(&mut self.output)
    }

    /// p50 and p99 of 3,000 round trips after 500 to warm up.
    pub fn round_trips(&mut self, request: impl Fn(usize) -> String) -> (Duration, Duration) {
        alternating(std::slice::from_mut(self), &[(0, &request)])[0]
    }
}

/// p50 and p99 of each kind of request (`clients[i]` asked `request(id)`),
/// asked in turn (3,000 each after 500 each to warm up), so every kind meets
/// the same moments of a machine whose speed swings from one second to the
/// next, and their ratios mean something.
pub fn alternating(clients: &mut [RawClient], kinds: &[(usize, &dyn Fn(usize) -> String)]) -> Vec<(Duration, Duration)> {
    let mut d = vec![Vec::with_capacity(3_000); kinds.len()];
    for i in 0..3_500 {
        for ((c, request), times) in kinds.iter().zip(&mut d) {
            let t = Instant::now();
            clients[*c].ask(&request(i));
            if i >= 500 {
                times.push(t.elapsed());
            }
        }
    }
    d.into_iter().map(percentiles).collect()
}

/// The next answer, past notifications (a game's log lines, list changes).
pub fn read_answer(output: &mut std::io::BufReader<std::process::ChildStdout>) -> Value {
    use std::io::BufRead;
    loop {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("id").is_some() {
            return message;
        }
    }
}

//! How bytes move for each kind of endpoint: a child process and TCP carry
//! lines, a WebSocket text frames, HTTP one request per message. Each channel
//! is one task that owns its socket or process and hands every input to its
//! session through a `Link`, one at a time.

use std::process::Stdio;
use std::sync::{Arc, Weak};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::config::{BundledEngine, Endpoint};
use crate::runtime::processes::ProcessBudget;
use crate::runtime::sandbox::{Confined, EngineRules, Launch, Sandbox};

use super::table::Table;

/// What a channel's task hands its session.
pub enum Input {
    Message(String),
    Closed(String),
}

/// The way channel input goes back into a session: the session implements it.
#[async_trait::async_trait]
pub trait Inbox: Send + Sync {
    /// Delivers one input into the guest (`events.on-message` / `on-closed`)
    /// and returns once it was handled; false when the guest could not take it.
    async fn deliver(self: Arc<Self>, channel: u32, input: Input) -> bool;

    /// A line a channel process said on stderr: what it is doing (installing
    /// its engine, say), shown to clients whose calls wait meanwhile.
    fn note(&self, line: &str);
}

/// A channel task's way back into its session.
pub struct Link {
    pub inbox: Weak<dyn Inbox>,
    pub table: Weak<Table>,
    pub channel: u32,
    pub max: usize,
}

impl Link {
    /// Delivers one message and waits until the guest has handled it, so
    /// input is handled in order and a slow guest slows its reader down.
    /// False when the session is gone or the channel was closed.
    pub(super) async fn message(&self, data: String) -> bool {
        let open = self.table.upgrade().is_some_and(|t| t.is_open(self.channel));
        match self.inbox.upgrade() {
            Some(inbox) if open => inbox.deliver(self.channel, Input::Message(data)).await,
            _ => false,
        }
    }

    /// News for the session's waiting clients.
    pub(super) fn note(&self, line: &str) {
        if let Some(inbox) = self.inbox.upgrade() {
            inbox.note(line);
        }
    }

    /// The channel ended without the plugin closing it.
    pub(super) async fn closed(&self, reason: String) {
        let ended = self.table.upgrade().is_some_and(|t| t.ended(self.channel));
        if let Some(inbox) = self.inbox.upgrade().filter(|_| ended) {
            inbox.deliver(self.channel, Input::Closed(reason)).await;
        }
    }
}

/// What a process endpoint starts under: the server's sandbox and what
/// this plugin's engines were granted; for a shared process, the budget
/// its games count in.
pub struct Engine<'a> {
    pub sandbox: &'a Arc<Sandbox>,
    pub plugin: &'a str,
    pub rules: &'a EngineRules,
    pub endpoint: &'a str,
    pub budget: &'a Arc<ProcessBudget>,
    pub owner: &'a str,
}

/// Whether games of this endpoint share processes: its program speaks
/// tagged lines, and the operator lets more than one game into a process.
pub fn shares(endpoint: &Endpoint, rules: &EngineRules) -> bool {
    matches!(endpoint, Endpoint::Process { tagged: true, .. }) && rules.sharing.games_per_process > 1
}

/// Starts the task that serves one channel. A process is spawned here, so a
/// command that cannot start fails the `open`; sockets connect inside the
/// task, and a failure arrives as `on-closed`. Returns the task and the
/// process id, if any.
pub fn start(
    endpoint: &Endpoint,
    engine: &Engine,
    rx: mpsc::UnboundedReceiver<String>,
    link: Link,
    rt: &tokio::runtime::Handle,
) -> std::io::Result<(tokio::task::AbortHandle, Option<u32>)> {
    let task = match endpoint {
        Endpoint::Process { .. } => {
            let _in_runtime = rt.enter();
            let start = Start::of(endpoint, engine).expect("a process endpoint");
            // A built-in engine not installed yet is installed first, by a
            // process of its own that may reach its registry; the engine
            // that then plays is kept off the network.
            let installing = start.needs_install();
            let first = start.spawn(installing, false)?;
            let pid = first.pid;
            let then = installing.then_some(start);
            return Ok((rt.spawn(run_process(first, then, rx, link)).abort_handle(), pid));
        }
        Endpoint::Websocket(url) => rt.spawn(run_websocket(url.clone(), rx, link)),
        Endpoint::Tcp(addr) => rt.spawn(run_tcp(addr.clone(), rx, link)),
        Endpoint::Http(base) => rt.spawn(run_http(base.clone(), rx, link)),
        Endpoint::Disabled(_) => return Err(std::io::Error::other("the endpoint is turned off")),
    };
    Ok((task.abort_handle(), None))
}

/// Everything needed to start an endpoint's process, confined.
pub(super) struct Start {
    sandbox: Arc<Sandbox>,
    plugin: String,
    rules: EngineRules,
    pub(super) command: String,
    args: Vec<String>,
    cwd: Option<std::path::PathBuf>,
    bundled: Option<BundledEngine>,
}

impl Start {
    /// What starts a process endpoint's program for this plugin; none for other endpoints.
    pub(super) fn of(endpoint: &Endpoint, engine: &Engine) -> Option<Start> {
        let Endpoint::Process { command, args, cwd, bundled, .. } = endpoint else { return None };
        Some(Start {
            sandbox: engine.sandbox.clone(),
            plugin: engine.plugin.to_string(),
            rules: engine.rules.clone(),
            command: command.clone(),
            args: args.clone(),
            cwd: cwd.clone(),
            bundled: bundled.clone(),
        })
    }

    /// A built-in engine not installed yet is installed first.
    pub(super) fn needs_install(&self) -> bool {
        self.bundled.as_ref().is_some_and(|b| !b.installed.exists())
    }

    /// Spawns the engine (`shared`: one that serves many games), or
    /// (`installing`) the step that installs it.
    pub(super) fn spawn(&self, installing: bool, shared: bool) -> std::io::Result<Running> {
        let (args, cwd) = match (&self.bundled, installing) {
            (Some(b), true) => (&b.install, None),
            _ => (&self.args, self.cwd.as_deref()),
        };
        let launch = Launch { program: &self.command, args, cwd, bundled: self.bundled.as_ref(), installing, shared };
        let jail = self.sandbox.jail(&self.plugin, &self.rules, &launch)?;
        let mut cmd = tokio::process::Command::new(&self.command);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let confined = jail.confine(&mut cmd);
        let child = cmd.spawn()?;
        Ok(Running { pid: child.id(), child, confined })
    }
}

/// A confined process and what it holds. Dropping it (the channel closed,
/// the session ended) kills the process and everything it started.
pub(super) struct Running {
    pub(super) pid: Option<u32>,
    pub(super) child: tokio::process::Child,
    confined: Confined,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.confined.end(self.pid);
    }
}

/// Serves a process channel: the first-use install first where there is
/// one (its lines reach the game as they come, nothing the game sends
/// reaches it), then the engine, until it ends or the channel closes.
async fn run_process(mut running: Running, mut then: Option<Start>, mut rx: mpsc::UnboundedReceiver<String>, link: Link) {
    loop {
        let (_quiet, mut nothing) = mpsc::unbounded_channel();
        let input = if then.is_some() { &mut nothing } else { &mut rx };
        let why = match serve_process(&mut running.child, input, &link).await {
            Served::Exited { success: true, .. } if then.is_some() => {
                let start = then.take().expect("checked just above");
                match start.spawn(false, false) {
                    Ok(next) => {
                        running = next;
                        continue;
                    }
                    Err(e) => format!("the engine is installed, but `{}` cannot start: {e}", start.command),
                }
            }
            Served::Exited { why, .. } | Served::Failed(why) => why,
            Served::Dropped => return,
        };
        drop(running);
        return link.closed(why).await;
    }
}

enum Served {
    Exited {
        success: bool,
        why: String,
    },
    Failed(String),
    /// The session or the channel is gone: nobody to tell.
    Dropped,
}

/// Carries one process's lines until its output ends.
async fn serve_process(child: &mut tokio::process::Child, rx: &mut mpsc::UnboundedReceiver<String>, link: &Link) -> Served {
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        return Served::Failed("the process has no pipes".into());
    };
    let pid = child.id().unwrap_or(0);
    let last_words = Arc::new(std::sync::Mutex::new(String::new()));
    let stderr_done = tokio::spawn(log_stderr(stderr, pid, last_words.clone(), Some(link.inbox.clone())));
    match pump_lines(BufReader::new(stdout), stdin, rx, link).await {
        Ended::Eof => {
            let status = child.wait().await;
            // The process's own explanation, when it gave one, is the useful part.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), stderr_done).await;
            let said = said_last(&last_words);
            match status {
                Ok(status) => Served::Exited { success: status.success(), why: format!("the process exited ({status}){said}") },
                Err(e) => Served::Exited { success: false, why: format!("the process ended: {e}{said}") },
            }
        }
        Ended::Error(e) => {
            let _ = child.start_kill();
            Served::Failed(e)
        }
        Ended::Dropped => Served::Dropped,
    }
}

/// A sidecar's stderr goes to the log, a line at a time, and to its session
/// (`inbox`; none for a shared process, whose lines may be about any of its
/// games) as news for waiting clients; the last non-empty line is kept for
/// the reason the channel closed.
pub(super) async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    pid: u32,
    last: Arc<std::sync::Mutex<String>>,
    inbox: Option<Weak<dyn Inbox>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "ludus::sidecar", pid, "{line}");
        if line.trim().is_empty() {
            continue;
        }
        let line: String = line.chars().take(500).collect();
        if let Some(inbox) = inbox.as_ref().and_then(Weak::upgrade) {
            inbox.note(&line);
        }
        if let Ok(mut last) = last.lock() {
            *last = line;
        }
    }
}

/// What a process said last on stderr, as the end of the reason it ended
/// (empty when it said nothing).
pub(super) fn said_last(last: &std::sync::Mutex<String>) -> String {
    let said = last.lock().map(|w| w.clone()).unwrap_or_default();
    if said.is_empty() { String::new() } else { format!("; its last line on stderr: {said}") }
}

async fn run_tcp(addr: String, mut rx: mpsc::UnboundedReceiver<String>, link: Link) {
    match tokio::net::TcpStream::connect(&addr).await {
        Ok(stream) => {
            let (read, write) = stream.into_split();
            let why = match pump_lines(BufReader::new(read), write, &mut rx, &link).await {
                Ended::Eof => "the peer closed the connection".to_string(),
                Ended::Error(e) => e,
                Ended::Dropped => return,
            };
            link.closed(why).await;
        }
        Err(e) => link.closed(format!("cannot connect to {addr}: {e}")).await,
    }
}

enum Ended {
    Eof,
    Error(String),
    /// The session or the channel is gone: nobody to tell.
    Dropped,
}

/// Moves lines both ways until one side ends.
async fn pump_lines(
    mut read: impl AsyncBufRead + Unpin,
    mut write: impl AsyncWrite + Unpin,
    rx: &mut mpsc::UnboundedReceiver<String>,
    link: &Link,
) -> Ended {
    let mut buf = Vec::new();
    loop {
        tokio::select! {
            line = read_line(&mut read, &mut buf, link.max) => match line {
                Ok(Some(line)) => if !link.message(line).await { return Ended::Dropped },
                Ok(None) => return Ended::Eof,
                Err(e) => return Ended::Error(e),
            },
            out = rx.recv() => match out {
                Some(mut data) => {
                    data.push('\n');
                    if let Err(e) = write.write_all(data.as_bytes()).await {
                        return Ended::Error(format!("writing failed: {e}"));
                    }
                    let _ = write.flush().await;
                }
                None => return Ended::Dropped,
            },
        }
    }
}

/// One line without its break; none at end of input. A line over `max`
/// bytes is an error rather than unbounded memory. Cancel-safe: a partial
/// line stays in `buf` for the next call.
pub(super) async fn read_line(read: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>, max: usize) -> Result<Option<String>, String> {
    loop {
        let chunk = read.fill_buf().await.map_err(|e| format!("reading failed: {e}"))?;
        if chunk.is_empty() {
            if buf.is_empty() {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        buf.extend_from_slice(&chunk[..take]);
        read.consume(take);
        if buf.len() > max + 2 {
            return Err(format!("the peer sent a line longer than {max} bytes ([limits] max_channel_message_bytes)"));
        }
        if done {
            break;
        }
    }
    let mut line = String::from_utf8_lossy(buf).into_owned();
    buf.clear();
    while line.ends_with(['\n', '\r']) {
        line.pop();
    }
    Ok(Some(line))
}

/// rustls needs a process-wide crypto provider before the first `wss://` or
/// `https://` connection — and reqwest before any client is built, TLS or
/// not; ring is the one compiled in. Call it early in any process that links
/// this crate and builds HTTP clients (the binary, tests, benchmarks).
pub fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Fails only when a provider is already installed, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

async fn run_websocket(url: String, mut rx: mpsc::UnboundedReceiver<String>, link: Link) {
    install_tls_provider();
    use tokio_tungstenite::tungstenite::Message;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(link.max))
        .max_frame_size(Some(link.max));
    let ws = match tokio_tungstenite::connect_async_with_config(&url, Some(config), false).await {
        Ok((ws, _)) => ws,
        Err(e) => return link.closed(format!("cannot connect to {url}: {e}")).await,
    };
    let (mut sink, mut stream) = ws.split();
    let why = loop {
        tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => if !link.message(text.to_string()).await { return },
                Some(Ok(Message::Binary(bytes))) => if !link.message(String::from_utf8_lossy(&bytes).into_owned()).await { return },
                Some(Ok(Message::Close(frame))) => break match frame {
                    Some(f) => format!("the server closed the connection ({}: {})", f.code, f.reason),
                    None => "the server closed the connection".to_string(),
                },
                Some(Ok(_)) => {}
                Some(Err(e)) => break format!("the connection failed: {e}"),
                None => break "the connection ended".to_string(),
            },
            out = rx.recv() => match out {
                Some(data) => if let Err(e) = sink.send(Message::text(data)).await {
                    break format!("sending failed: {e}");
                },
                None => return,
            },
        }
    };
    link.closed(why).await;
}

/// Each message is one request (`split_http_message`: request line, optional
/// headers, body); each response is one message, the status code, a line
/// break and the body (status 0 and the error when no response came).
async fn run_http(base: String, mut rx: mpsc::UnboundedReceiver<String>, link: Link) {
    install_tls_provider();
    let client = match reqwest::Client::builder().build() {
        Ok(c) => c,
        Err(e) => return link.closed(format!("cannot make an HTTP client: {e}")).await,
    };
    while let Some(data) = rx.recv().await {
        let reply = http_request(&client, &base, &data, link.max).await.unwrap_or_else(|e| format!("0\n{e}"));
        if !link.message(reply).await {
            return;
        }
    }
}

/// `METHOD /path`, then optionally header lines and an empty line (as in
/// HTTP itself), then the body. Without that empty line everything after the
/// first line is the body, as in the first version of this format.
fn split_http_message(data: &str) -> (&str, Vec<(&str, &str)>, &str) {
    let (head, rest) = data.split_once('\n').unwrap_or((data, ""));
    if let Some((block, body)) = rest.split_once("\n\n") {
        let headers: Option<Vec<(&str, &str)>> = block
            .lines()
            .map(|l| l.split_once(": ").filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')))
            .collect();
        if let Some(headers) = headers.filter(|h| !h.is_empty()) {
            return (head, headers, body);
        }
    }
    (head, Vec::new(), rest)
}

async fn http_request(client: &reqwest::Client, base: &str, data: &str, max: usize) -> Result<String, String> {
    let (head, headers, body) = split_http_message(data);
    let (method, path) = head.trim().split_once(' ').ok_or("an HTTP message starts with `METHOD /path`")?;
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| format!("unknown HTTP method {method:?}"))?;
    if !path.starts_with('/') || path.contains("://") {
        return Err(format!("the path {path:?} must start with / (it is relative to the granted base URL)"));
    }
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let mut request = client.request(method, &url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if !body.is_empty() {
        request = request.body(body.to_string());
    }
    let response = request.send().await.map_err(|e| format!("request to {url} failed: {e}"))?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| format!("reading the response from {url} failed: {e}"))?;
    if bytes.len() > max {
        return Err(format!("the response from {url} is over {max} bytes ([limits] max_channel_message_bytes)"));
    }
    Ok(format!("{status}\n{}", String::from_utf8_lossy(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::split_http_message;

    #[test]
    fn http_messages_carry_optional_headers() {
        let form = "POST /api/login\nContent-Type: application/x-www-form-urlencoded\n\nname=ada&pass=x";
        assert_eq!(
            split_http_message(form),
            ("POST /api/login", vec![("Content-Type", "application/x-www-form-urlencoded")], "name=ada&pass=x")
        );
        // The first format: everything after the request line is the body, blank lines included.
        assert_eq!(split_http_message("POST /x\n{\"a\": 1}\n\nmore"), ("POST /x", vec![], "{\"a\": 1}\n\nmore"));
        assert_eq!(split_http_message("GET /"), ("GET /", vec![], ""));
        assert_eq!(split_http_message("GET /\n\nbody"), ("GET /", vec![], "\nbody"));
    }
}

//! Drives the real `ludus` binary through rmcp's MCP client.
#![allow(dead_code)]

pub mod browser;
pub mod cluster;
pub mod decision;
pub mod processes;
pub mod showdown;

#[allow(unused_imports)] // each test uses some of them
pub use processes::{children_named, descendants, pids_with};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProgressNotificationParam, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

pub const BIN: &str = env!("CARGO_BIN_EXE_ludus");

/// A packaged component built by the host's build script.
pub fn component(name: &str) -> PathBuf {
    Path::new(env!("LUDUS_WASM_DIR")).join(format!("{name}.wasm"))
}

/// Records `tools/list_changed`, progress and `resources/updated` notifications.
#[derive(Clone)]
pub struct Recorder {
    list_changed: mpsc::UnboundedSender<()>,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    updated: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.progress.send(p);
    }

    #[allow(deprecated)]
    async fn on_resource_updated(&self, p: rmcp::model::ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.updated.send(p.uri);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

pub struct Client {
    pub service: RunningService<RoleClient, Recorder>,
    pub list_changed: mpsc::UnboundedReceiver<()>,
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    /// URIs of `notifications/resources/updated`, in order.
    pub updated: mpsc::UnboundedReceiver<String>,
}

/// A running `ludus serve` over HTTP; killed on drop.
pub struct HttpServer {
    pub url: String,
    child: tokio::process::Child,
    /// The URL a loopback server without issued tokens prints for clients
    /// (its own token in `?token=`), when it printed one.
    pub client_url: Option<String>,
}

impl HttpServer {
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// The server's resident memory, KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap()
    }
}

/// SIGKILL, and wait until the process is gone: nothing of it may run on.
pub fn kill9(server: HttpServer) {
    let pid = server.pid();
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    for _ in 0..200 {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0);
        // Gone, or a zombie waiting for its parent (this test) to reap it
        // whose other threads have ended too (they share its open files).
        if state.is_empty() || (state.split_whitespace().nth(2) == Some("Z") && threads <= 1) {
            drop(server);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server survived SIGKILL");
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

type Receivers = (mpsc::UnboundedReceiver<()>, mpsc::UnboundedReceiver<ProgressNotificationParam>, mpsc::UnboundedReceiver<String>);

fn recorder() -> (Recorder, Receivers) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (ptx, prx) = mpsc::unbounded_channel();
    let (utx, urx) = mpsc::unbounded_channel();
    (Recorder { list_changed: tx, progress: ptx, updated: utx }, (rx, prx, urx))
}

/// A temporary cache dir per test run keeps tests independent of ~/.cache.
fn cache_config(dir: &Path) -> PathBuf {
    let path = dir.join("ludus-test.toml");
    if !path.exists() {
        std::fs::write(&path, format!("cache_dir = {:?}\n", dir.join("cache").display().to_string())).unwrap();
    }
    path
}

/// The games built into the binary, as the tests expect them.
pub const BUILT_IN_GAMES: [&str; 8] =
    ["blocks_world", "cards", "checker_jumping", "chess", "hanoi", "openspiel", "river_crossing", "showdown"];

pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Writes a config file with extra TOML (limits, plugin settings).
pub fn config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("ludus.toml");
    std::fs::write(&path, format!("cache_dir = {:?}\n{extra}\n", dir.join("cache").display().to_string())).unwrap();
    path
}

/// `ludus serve` over stdio with the given extra arguments.
pub async fn stdio(args: &[&str], work: &Path) -> Client {
    stdio_env(args, work, &[]).await
}

/// The same, with these environment variables set for the server (its
/// engine processes get none of them but the few the sandbox keeps).
pub async fn stdio_env(args: &[&str], work: &Path, env: &[(&str, &str)]) -> Client {
    let mut cmd = stdio_command(args, work);
    cmd.envs(env.iter().copied());
    let (transport, _) = TokioChildProcess::builder(cmd).stderr(Stdio::inherit()).spawn().expect("spawning ludus");
    let (handler, (list_changed, progress, updated)) = recorder();
    let service = handler.serve(transport).await.expect("MCP handshake over stdio");
    Client { service, list_changed, progress, updated }
}

/// `ludus serve ARGS` over stdio, its games kept in `work`, for a client of the test's own.
pub fn stdio_command(args: &[&str], work: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    // Games are kept in the work dir's data dir, not the user's.
    cmd.env("XDG_DATA_HOME", work.join("data"));
    cmd.arg("serve").args(args);
    if !args.contains(&"--config") {
        cmd.arg("--config").arg(cache_config(work));
    }
    cmd.env("LUDUS_LOG", server_log());
    cmd
}

/// The log filter the tests' servers run with: warnings only, unless
/// `LUDUS_TEST_LOG` names another (`LUDUS_TEST_LOG=ludus::session=debug`
/// to read a failing run's session log).
fn server_log() -> String {
    std::env::var("LUDUS_TEST_LOG").unwrap_or_else(|_| "warn".into())
}

/// `ludus verify RECORDS --config CONFIG`: its exit code and what it printed
/// (one line per record, then the tally).
pub fn verify(records: &[&Path], config: &Path) -> (Option<i32>, String) {
    verify_with(records, config, &[])
}

/// The same with `--html PAGE`: the replay page written too.
pub fn verify_to_page(records: &Path, config: &Path, page: &Path) -> (Option<i32>, String) {
    verify_with(&[records], config, &["--html".as_ref(), page.as_os_str()])
}

fn verify_with(records: &[&Path], config: &Path, more: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = std::process::Command::new(BIN)
        .arg("verify")
        .args(records)
        .arg("--config")
        .arg(config)
        .args(more)
        .output()
        .expect("running ludus verify");
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The verdict line `ludus verify` printed for record `id`.
pub fn verdict<'a>(printed: &'a str, id: &str) -> &'a str {
    printed.lines().find(|l| l.split_whitespace().nth(1) == Some(id)).unwrap_or_else(|| panic!("no verdict for {id}: {printed}"))
}

/// `ludus serve --http 127.0.0.1:0`, waiting for the address it bound.
pub async fn http_server(args: &[&str], work: &Path) -> HttpServer {
    http_server_env(args, work, &[]).await
}

/// The same, with these environment variables set for the server (they
/// override the tests' quiet `LUDUS_LOG`).
pub async fn http_server_env(args: &[&str], work: &Path, env: &[(&str, &str)]) -> HttpServer {
    // HTTP clients in this process (rmcp's, reqwest's) need the TLS provider installed.
    ludus::capability::channels::install_tls_provider();
    let mut cmd = tokio::process::Command::new(BIN);
    // Games are kept in the work dir's data dir, not the user's.
    cmd.env("XDG_DATA_HOME", work.join("data"));
    cmd.args(["serve", "--http", "127.0.0.1:0"]).args(args);
    if !args.contains(&"--config") {
        cmd.arg("--config").arg(cache_config(work));
    }
    cmd.env("LUDUS_LOG", server_log()).envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawning ludus");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut client_url = None;
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("LUDUS_HTTP_URL=") {
                return url.to_string();
            }
            if let Some(url) = line.strip_prefix("ludus: connect clients to ") {
                client_url = Some(url.trim().to_string());
            }
            eprintln!("{line}");
        }
        panic!("ludus exited before serving HTTP");
    })
    .await
    .expect("ludus did not start serving HTTP in time");
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move {
        while let Ok(Some(l)) = lines.next_line().await {
            eprintln!("{l}")
        }
    });
    HttpServer { url, child, client_url }
}

pub async fn http_client(server: &HttpServer) -> Client {
    let (handler, (list_changed, progress, updated)) = recorder();
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let service = handler.serve(transport).await.expect("MCP handshake over HTTP");
    Client { service, list_changed, progress, updated }
}

impl Client {
    pub async fn tools(&self) -> Vec<Tool> {
        self.service.list_all_tools().await.expect("tools/list")
    }

    pub async fn tool_names(&self) -> Vec<String> {
        self.tools().await.into_iter().map(|t| t.name.to_string()).collect()
    }

    /// Calls a tool; protocol errors panic, tool errors come back with is_error.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        self.try_call(name, args).await.unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
    }

    pub async fn try_call(&self, name: &str, args: Value) -> Result<CallToolResult, rmcp::ServiceError> {
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        self.service.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args)).await
    }

    /// Calls a tool asking for progress notifications (they arrive in `self.progress`).
    pub async fn call_with_progress(&self, name: &str, args: Value, token: &str) -> CallToolResult {
        use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        let mut params = CallToolRequestParams::new(name.to_string()).with_arguments(args);
        params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String(token.into()))));
        self.service.call_tool(params).await.unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
    }

    /// Calls a tool as `call` does, and gives back the progress token rmcp's
    /// client put in the request's `_meta.progressToken` (it numbers every
    /// request's token itself, over whatever the caller set): the token the
    /// call's progress notifications must carry.
    pub async fn call_noting_progress_token(&self, name: &str, args: Value) -> (CallToolResult, rmcp::model::ProgressToken) {
        use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
        use rmcp::service::PeerRequestOptions;
        let Value::Object(args) = args else { panic!("arguments must be an object") };
        let request =
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(name.to_string()).with_arguments(args)));
        let handle = self
            .service
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .unwrap_or_else(|e| panic!("{name}: protocol error {e}"));
        let token = handle.progress_token.clone();
        match handle.await_response().await {
            Ok(ServerResult::CallToolResult(r)) => (r, token),
            other => panic!("{name}: expected a tool result, got {other:?}"),
        }
    }

    /// Calls a tool that must succeed, returning its structured content.
    pub async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self.call(name, args.clone()).await;
        assert_ne!(r.is_error, Some(true), "{name}({args}) failed: {}", text(&r));
        r.structured_content.clone().unwrap_or_else(|| json!({"text": text(&r)}))
    }

    /// Calls a tool that must fail with a tool error, returning its text.
    pub async fn err(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        assert_eq!(r.is_error, Some(true), "{name}({args}) should fail but gave: {}", text(&r));
        assert!(r.structured_content.is_none(), "errors carry no structuredContent");
        text(&r)
    }

    /// Reads a resource: its text and MIME type.
    pub async fn read_resource(&self, uri: &str) -> Result<(String, String), rmcp::ServiceError> {
        let r = self.service.read_resource(rmcp::model::ReadResourceRequestParams::new(uri)).await?;
        match r.contents.into_iter().next() {
            Some(rmcp::model::ResourceContents::TextResourceContents { text, mime_type, .. }) => Ok((text, mime_type.unwrap_or_default())),
            other => panic!("{uri}: expected text contents, got {other:?}"),
        }
    }

    /// Waits for a list_changed notification.
    pub async fn expect_list_changed(&mut self, within: Duration) {
        tokio::time::timeout(within, self.list_changed.recv())
            .await
            .expect("no tools/list_changed notification in time")
            .expect("client closed");
    }

    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

pub fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// Every success with a declared outputSchema must validate against it.
pub fn assert_matches_output_schema(tool: &Tool, result: &CallToolResult) {
    let Some(schema) = &tool.output_schema else { return };
    let value = result.structured_content.as_ref().expect("declared outputSchema but no structuredContent");
    let validator = jsonschema::validator_for(&Value::Object((**schema).clone())).expect("outputSchema is valid JSON Schema");
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{} result does not match its outputSchema: {errors:?}\n{value}", tool.name);
}

pub type Shared<T> = Arc<T>;

/// Puts a component into a plugins directory the way writers should: write a
/// hidden temporary file, then rename it into place.
/// `work/plugins` with these test components in it (`component(name)` as
/// `name.wasm`), for `--plugins`.
pub fn plugins_dir(work: &Path, components: &[&str]) -> PathBuf {
    let dir = work.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    for name in components {
        install(&dir, &component(name), &format!("{name}.wasm"));
    }
    dir
}

pub fn install(dir: &Path, src: &Path, name: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::copy(src, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// The processes `living` lists, once they are gone or 5 s have passed: a
/// game's processes are killed as it ends and gone once the system has
/// reaped them.
pub async fn still_living(living: impl Fn() -> Vec<u32>) -> Vec<u32> {
    let mut left = living();
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = living();
    }
    left
}

/// The join code of game `id`, as its creator's `ludus_sessions` shows it.
pub async fn join_code(creator: &Client, id: &str) -> String {
    let sessions = creator.ok("ludus_sessions", json!({})).await;
    let s = sessions["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("{id} not in {sessions}"));
    s["join_code"].as_str().unwrap_or_else(|| panic!("no join code in {s}")).to_string()
}

/// A token for caller `name` issued by `ludus token`, and the config lines that admit it.
pub fn issue_token(name: &str) -> (String, String) {
    let out = std::process::Command::new(BIN).args(["token", name]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let token = printed.lines().map(str::trim).find(|l| l.starts_with("ludus_")).unwrap().to_string();
    (token, printed[printed.find("[[tokens]]").unwrap()..].to_string())
}

/// An MCP client over HTTP that sends `token` with every request.
pub async fn http_client_with_token(server: &HttpServer, token: &str) -> Client {
    http_client_at(&server.url, token).await.expect("MCP handshake over HTTP")
}

/// An MCP client of the endpoint at `url` (a server, or a proxy in front of
/// several) that sends `token` with every request; the handshake's error if
/// it fails.
pub async fn http_client_at(url: &str, token: &str) -> Result<Client, String> {
    let (handler, (list_changed, progress, updated)) = recorder();
    let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    let service = handler.serve(StreamableHttpClientTransport::from_config(config)).await.map_err(|e| e.to_string())?;
    Ok(Client { service, list_changed, progress, updated })
}

/// Installs `specs` (`name@version`) with npm into `target/<dir>` unless each is
/// there at its version already; the directory.
pub fn npm_install(dir: &str, specs: &[&str]) -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target").join(dir);
    let installed = |spec: &&str| {
        let (name, version) = spec.rsplit_once('@').unwrap();
        std::fs::read_to_string(root.join("node_modules").join(name).join("package.json"))
            .is_ok_and(|p| p.contains(&format!("\"version\": \"{version}\"")))
    };
    if !specs.iter().all(installed) {
        std::fs::create_dir_all(&root).unwrap();
        eprintln!("installing {} from npm into {}", specs.join(" "), root.display());
        let status = Command::new("npm")
            .args(["install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save"])
            .args(specs)
            .current_dir(&root)
            .status()
            .expect("running npm (Node.js and npm are needed for the Showdown tests)");
        assert!(status.success(), "npm install {specs:?} failed");
    }
    root
}

/// A Python venv in `target/<dir>` with `specs` (`name==version`) from PyPI,
/// made once; its `python`.
pub fn pip_install(dir: &str, specs: &[&str]) -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target").join(dir);
    let python = venv.join("bin/python");
    let stamp = venv.join("installed.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(&specs.join("\n")) {
        eprintln!("installing {} from PyPI into {}", specs.join(" "), venv.display());
        let _ = std::fs::remove_dir_all(&venv);
        let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status().expect("running python3 (3.10+ with venv)");
        assert!(made.success(), "python3 -m venv failed");
        let pip = Command::new(venv.join("bin/pip")).args(["install", "-q", "--disable-pip-version-check"]).args(specs).status().unwrap();
        assert!(pip.success(), "pip install {specs:?} failed");
        std::fs::write(&stamp, specs.join("\n")).unwrap();
    }
    python
}

/// A registry that never answers: a port on 127.0.0.1 that accepts
/// connections and holds them without a word, for as long as this lives.
pub struct BlackHole {
    pub port: u16,
    _open: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl BlackHole {
    pub fn new() -> BlackHole {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let still = open.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming() {
                if !still.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                held.extend(conn.ok());
            }
        });
        BlackHole { port, _open: open }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self._open.store(false, std::sync::atomic::Ordering::Relaxed);
        // Wakes the accepting thread so it sees it is done.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Every line of a records file, each of which must be a whole JSON record.
pub fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "the file ends inside a line: {:?}", &text[text.len().saturating_sub(200)..]);
    text.lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("line {} is not whole JSON ({e}): {l}", i + 1)))
        .collect()
}

/// The records file's lines once it has `count` (10 s at most).
pub async fn until_records(path: &Path, count: usize) -> Vec<Value> {
    for _ in 0..100 {
        let all = records(path);
        if all.len() >= count {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let found: Vec<String> = records(path).iter().map(|r| format!("{} {} ({})", r["game"], r["record"], r["ended"])).collect();
    panic!("fewer than {count} records after 10 s: {found:#?}");
}

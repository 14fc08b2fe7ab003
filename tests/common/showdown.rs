//! Showdown's simulator from npm for the tests that battle offline.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::json;

use super::{Client, npm_install};

pub const PS_VERSION: &str = "0.11.11";

/// The result records file of a `sim_client` server, in its work directory.
pub const RECORDS: &str = "records.jsonl";

/// The npm package, installed once into `target/pokemon-showdown` and reused.
pub fn showdown_package() -> PathBuf {
    let root = npm_install("pokemon-showdown", &[&format!("pokemon-showdown@{PS_VERSION}")]);
    root.join("node_modules/pokemon-showdown").canonicalize().unwrap()
}

/// The referee's packages (`@pkmn/client` and the data it reads, versions
/// pinned in `tests/fixtures/showdown-referee/package.json`), installed once
/// into `target/showdown-referee`; their `node_modules`.
pub fn referee_modules() -> PathBuf {
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(referee_dir().join("package.json")).unwrap()).unwrap();
    let specs: Vec<String> =
        manifest["dependencies"].as_object().unwrap().iter().map(|(name, v)| format!("{name}@{}", v.as_str().unwrap())).collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    npm_install("showdown-referee", &specs).join("node_modules").canonicalize().unwrap()
}

pub fn referee_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/showdown-referee")
}

/// The `sim` endpoint: the plugin's own sidecar (which checks teams with
/// the simulator's validator) on the npm package installed for the tests,
/// many battles to a process, as the built-in endpoint runs it.
pub fn sim_endpoint(package: &Path) -> String {
    sim_endpoint_of(package, true)
}

/// The same with a process per battle, as an operator's untagged endpoint runs.
pub fn sim_endpoint_per_battle(package: &Path) -> String {
    sim_endpoint_of(package, false)
}

fn sim_endpoint_of(package: &Path, tagged: bool) -> String {
    let sidecar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/showdown/sidecar/showdown_sim.js");
    format!(
        "[plugins.showdown.channels.sim]\nprocess = {{ command = \"node\", args = [{:?}, \"--package\", {:?}], tagged = {tagged} }}\n",
        sidecar.canonicalize().unwrap().display().to_string(),
        package.display().to_string()
    )
}

/// An MCP client of a server whose `sim` endpoint is the npm package, and
/// the scratch directory it runs in (dropped with it), where the server
/// writes its result records (`RECORDS`).
pub async fn sim_client() -> (tempfile::TempDir, Client) {
    sim_client_with("").await
}

/// The same with more config lines (`whole_seeds = true`: the same seed
/// plays the same battles on every run).
pub async fn sim_client_with(extra: &str) -> (tempfile::TempDir, Client) {
    let package = showdown_package();
    let work = super::scratch();
    let records = work.path().join(RECORDS).display().to_string();
    let cfg = super::config(work.path(), &format!("records = {records:?}\n{extra}\n{}", sim_endpoint(&package)));
    let c = super::stdio(&["--config", cfg.to_str().unwrap()], work.path()).await;
    (work, c)
}

pub async fn offline(c: &Client, bot: &str, seed: u64) -> String {
    let v = c.ok("showdown_start_offline_battle", json!({"bot": bot, "seed": seed})).await;
    assert_eq!(v["status"], "active", "{v}");
    assert_eq!(v["seed"], seed);
    v["battle_id"].as_str().unwrap().to_string()
}

/// A helper process of a test, killed (and reaped) when dropped.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A local `pokemon-showdown start --no-security` on 127.0.0.1; killed on drop.
pub struct LocalServer {
    _child: Killed,
    pub port: u16,
}

/// A Showdown server on loopback; `extra` is appended to its `config/config.js`.
pub fn local_server(package: &Path, extra: &str) -> LocalServer {
    // Tests share the package's config file: one server at a time writes it and reads it at start.
    static CONFIG: Mutex<()> = Mutex::new(());
    let _writing = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    // The traps from the research notes: bind to loopback, no REPL, no subprocesses, the log dirs present.
    let example = std::fs::read_to_string(package.join("config/config-example.js")).unwrap();
    let config = format!("{example}\nexports.bindaddress = '127.0.0.1';\nexports.subprocesses = 0;\nexports.repl = false;\n{extra}\n");
    std::fs::write(package.join("config/config.js"), config).unwrap();
    for d in ["logs/repl", "logs/chat", "logs/modlog", "config/chat-plugins", "config/ladders"] {
        std::fs::create_dir_all(package.join(d)).unwrap();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new("node")
        .args(["pokemon-showdown", "start", "--no-security", "--skip-build", &port.to_string()])
        .current_dir(package)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("starting the Showdown server");
    let server = LocalServer { _child: Killed(child), port };
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "the Showdown server did not start listening");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server
}

//! Operator configuration (`--config FILE`, TOML). Every limit has a safe
//! default; `[plugins.NAME]` tightens or loosens one plugin.
//!
//! ```toml
//! [limits]
//! call_timeout_ms = 2000
//! memory_mb = 64
//!
//! [plugins.hanoi]
//! idle_timeout_ms = 120000
//! prefix = "toh"
//!
//! [plugins.showdown.channels.sim]
//! process = { command = "node", args = ["pokemon-showdown", "simulate-battle", "--skip-build"], cwd = "/opt/ps" }
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// CPU (wall) time one call into a component may take before it is stopped.
    pub call_timeout_ms: u64,
    /// Linear memory one session may grow to.
    pub memory_mb: u64,
    /// Live sessions of one plugin.
    pub max_sessions_per_plugin: usize,
    /// Live sessions in the whole server.
    pub max_sessions: usize,
    /// Live sessions started by one client (MCP connection).
    pub max_sessions_per_caller: usize,
    /// Sessions untouched this long are dropped (a plugin may ask for less).
    pub idle_timeout_ms: u64,
    /// A game no call has touched this long leaves memory: kept in the
    /// session store (in the server's memory, compactly, with `store =
    /// "memory"`) and rebuilt by the next call on it. 0: games stay in
    /// memory until they end. Games with a timer armed or a process
    /// running stay anyway.
    pub unload_idle_after_ms: u64,
    /// Longest a waiting tool call is held before the plugin must answer.
    pub max_wait_ms: u64,
    /// Calls held waiting at once on one game session; beyond it a waiting
    /// call gets its "call again" answer at once instead of being held.
    pub max_waits_per_session: u64,
    /// Calls held waiting at once for one client (MCP connection) over all
    /// its games; beyond it a waiting call gets its "call again" answer at once.
    pub max_waits_per_caller: u64,
    /// Largest JSON arguments object accepted for one call.
    pub max_argument_bytes: usize,
    /// Largest result a plugin may return for one call.
    pub max_result_bytes: usize,
    /// Guest stdout/stderr kept per call (the rest is dropped and counted).
    pub max_guest_output_bytes: usize,
    /// Channels one session may have open at once.
    pub max_channels_per_session: usize,
    /// Largest message (line, frame, response) sent or received on a channel.
    pub max_channel_message_bytes: usize,
    /// HTTP: open connections at once. At the cap a new connection takes the
    /// place of the oldest one that is not being answered (idle, or still
    /// sending its request); only when every one is being answered is it refused.
    pub max_http_connections: usize,
    /// HTTP: open connections from one address, under the same rule; the
    /// rest of `max_http_connections` stays for other addresses.
    pub max_http_connections_per_address: usize,
    /// HTTP: how long a client has to send a request's headers, on a new
    /// connection or between requests on a kept-alive one.
    pub http_header_timeout_ms: u64,
    /// HTTP: time a request's body may take, plus one second per
    /// `http_min_body_rate` bytes of it; a slower body is cut off (408).
    pub http_body_timeout_ms: u64,
    /// HTTP: the slowest rate (bytes per second) a large body may arrive at.
    pub http_min_body_rate: u64,
    /// HTTP: server-sent event streams (GET) open at once from one address.
    pub max_sse_streams_per_address: usize,
    /// HTTP: event streams open at once for one bearer token's holder, from
    /// any address.
    pub max_sse_streams_per_caller: usize,
    /// Game processes (channel endpoints of kind `process`, counted by their
    /// weight) running at once in the whole server.
    pub max_processes: usize,
    /// The same, for the sessions of one caller.
    pub max_processes_per_caller: usize,
    /// Games one caller may have at once in shared engine processes (which
    /// `max_processes` counts as processes, not games).
    pub max_engine_games_per_caller: usize,
    /// HTTP: MCP sessions (initialize-era clients) at once. At the cap a new
    /// one takes the place of the longest-idle session of the caller holding
    /// the most; only when every session is answering a request is it refused.
    pub max_mcp_sessions: usize,
    /// HTTP: MCP sessions one caller holds at once (a bearer token's holder,
    /// else one address): its own longest-idle session makes room for a new one.
    pub max_mcp_sessions_per_caller: usize,
    /// HTTP: an MCP session without requests this long is closed.
    pub mcp_session_idle_ms: u64,
    /// stdio and HTTP: after an answer, watch this long for the client's next
    /// request before the thread sleeps (spends CPU to skip a wake-up; 0: off).
    pub busy_poll_us: u64,
    /// stdio: answers written but not yet read by the client, in bytes. Past
    /// it a new request is refused (not run) with an error saying so; past
    /// twice it the server stops reading requests until the client reads.
    pub max_unread_output_bytes: usize,
    /// Items per page of `tools/list`, `resources/list` and
    /// `resources/templates/list`; clients follow `nextCursor` for the rest.
    pub list_page_size: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_timeout_ms: 5_000,
            memory_mb: 64,
            max_sessions_per_plugin: 20_000,
            max_sessions: 50_000,
            max_sessions_per_caller: 10_000,
            idle_timeout_ms: 30 * 60 * 1000,
            unload_idle_after_ms: 30_000,
            max_wait_ms: 25_000,
            max_waits_per_session: 64,
            max_waits_per_caller: 256,
            max_argument_bytes: 4 << 20,
            max_result_bytes: 8 << 20,
            max_guest_output_bytes: 64 << 10,
            max_channels_per_session: 4,
            max_channel_message_bytes: 1 << 20,
            max_http_connections: 1024,
            max_http_connections_per_address: 512,
            http_header_timeout_ms: 10_000,
            http_body_timeout_ms: 10_000,
            http_min_body_rate: 64 << 10,
            max_sse_streams_per_address: 128,
            max_sse_streams_per_caller: 32,
            max_processes: 32,
            max_processes_per_caller: 8,
            max_engine_games_per_caller: 200,
            max_mcp_sessions: 10_000,
            max_mcp_sessions_per_caller: 1_000,
            mcp_session_idle_ms: 30 * 60 * 1000,
            busy_poll_us: 100,
            max_unread_output_bytes: 64 << 20,
            list_page_size: 100,
        }
    }
}

/// Per-plugin settings; unset fields fall back to `[limits]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PluginConfig {
    /// Tool prefix instead of the plugin's own name.
    pub prefix: Option<String>,
    /// Tool names instead of `<prefix>_<function>`, by function (its
    /// snake_case name): for a client that expects a name a WIT function
    /// cannot spell, or two plugins whose tools would clash.
    pub rename: BTreeMap<String, String>,
    /// Do not load this plugin at all.
    pub disabled: bool,
    pub call_timeout_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub max_sessions: Option<usize>,
    pub idle_timeout_ms: Option<u64>,
    pub max_wait_ms: Option<u64>,
    /// This game's illegal-move policy, instead of the server's.
    pub illegal_moves: Option<IllegalMovePolicy>,
    /// Endpoints this plugin may open by name (`[plugins.NAME.channels.ENDPOINT]`).
    pub channels: BTreeMap<String, Endpoint>,
    /// Environment variables the plugin sees, with their values.
    pub env: BTreeMap<String, String>,
    /// Names of the server's own environment variables to pass on to the
    /// plugin, for secrets that should not sit in a config file.
    pub pass_env: Vec<String>,
    /// What this plugin's engine processes are granted beyond `[engines]`
    /// (`[plugins.NAME.engine]`).
    pub engine: EngineConfig,
    /// The grants of this table (channels, environment, engine) go only to
    /// a component with this SHA-256 (as `ludus inspect` shows it), not to
    /// any component that takes the name.
    pub sha256: Option<String>,
}

/// What engine processes (channel endpoints of kind `process`) may use, for
/// every plugin (`[engines]`). An engine starts with an empty environment,
/// its own scratch directory, `no_new_privs` and these limits; Landlock
/// confines its files and network where the kernel has it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Engines {
    /// Where the kernel lacks Landlock: `"best-effort"` runs engines with
    /// the other limits only (and says so at start and in `ludus doctor`);
    /// `"required"` refuses to start them.
    pub landlock: LandlockPolicy,
    /// Games one shared engine process serves at most (an engine that
    /// speaks tagged lines); 1 gives every game its own process.
    pub games_per_process: usize,
    /// Shared processes of one engine started before games double up in
    /// them: a game joins the one with the fewest games. 0: one per core.
    pub shards: usize,
    #[serde(flatten)]
    pub limits: EngineLimits,
}

impl Default for Engines {
    fn default() -> Self {
        Engines { landlock: LandlockPolicy::BestEffort, games_per_process: 250, shards: 0, limits: EngineLimits::default() }
    }
}

impl Engines {
    /// How shared processes are filled, for a plugin with these grants.
    pub fn sharing(&self, own: &EngineConfig) -> Sharing {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let shards = own.shards.unwrap_or(self.shards);
        Sharing {
            games_per_process: own.games_per_process.unwrap_or(self.games_per_process).max(1),
            shards: if shards == 0 { cores } else { shards },
        }
    }
}

/// How the games of one engine share processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sharing {
    pub games_per_process: usize,
    pub shards: usize,
}

/// What to do where the kernel cannot confine engine processes with Landlock.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockPolicy {
    BestEffort,
    Required,
}

/// The limits on one engine process, each a kernel limit (`setrlimit`, or
/// the pids controller of a cgroup for processes).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineLimits {
    /// Address space (`RLIMIT_AS`), in MiB: Node.js reserves about 1 GiB
    /// of it before it runs anything.
    pub memory_mb: u64,
    /// CPU time over the process's life (`RLIMIT_CPU`), in seconds.
    pub cpu_s: u64,
    /// Processes and threads at once (a cgroup's `pids.max`).
    pub processes: u64,
    /// Open files and sockets (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Largest file it may write (`RLIMIT_FSIZE`), in MiB.
    pub file_mb: u64,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits { memory_mb: 4096, cpu_s: 3600, processes: 64, open_files: 256, file_mb: 256 }
    }
}

/// One plugin's engine grants (`[plugins.NAME.engine]`): limits that differ
/// from `[engines]`, and what its processes may see beyond their own.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    pub memory_mb: Option<u64>,
    pub cpu_s: Option<u64>,
    pub processes: Option<u64>,
    pub open_files: Option<u64>,
    pub file_mb: Option<u64>,
    /// Games one shared process of its engine serves (1: a process per game).
    pub games_per_process: Option<usize>,
    /// Shared processes of its engine before games double up (0: one per core).
    pub shards: Option<usize>,
    /// Environment variables its engine processes get, with their values.
    pub env: BTreeMap<String, String>,
    /// Names of the server's environment variables passed on to them.
    pub pass_env: Vec<String>,
    /// Files and directories they may read (beneath each, recursively).
    pub read: Vec<std::path::PathBuf>,
    /// Files and directories they may read and write.
    pub write: Vec<std::path::PathBuf>,
    /// TCP ports they may connect to (an online server's); none by default.
    pub connect: Vec<u16>,
}

impl EngineConfig {
    /// The limits for this plugin's engines: its own, else the server's.
    pub fn limits(&self, server: &EngineLimits) -> EngineLimits {
        EngineLimits {
            memory_mb: self.memory_mb.unwrap_or(server.memory_mb),
            cpu_s: self.cpu_s.unwrap_or(server.cpu_s),
            processes: self.processes.unwrap_or(server.processes),
            open_files: self.open_files.unwrap_or(server.open_files),
            file_mb: self.file_mb.unwrap_or(server.file_mb),
        }
    }

    /// The environment the operator grants its engines: `env`, then the
    /// `pass_env` variables the server has.
    pub fn environment(&self) -> Vec<(String, String)> {
        granted_env(&self.env, &self.pass_env)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub limits: Limits,
    pub plugins: BTreeMap<String, PluginConfig>,
    /// Directory for precompiled components (default: the user cache dir).
    pub cache_dir: Option<std::path::PathBuf>,
    /// HTTP Origins a browser may send requests from (`scheme://host:port`,
    /// or `:*` for any port); the operator's list replaces the default.
    pub allowed_origins: Vec<String>,
    /// HTTP Host names (optionally `:port`) besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Bearer tokens the operator issued (`ludus token NAME`). With any
    /// configured, every HTTP request must carry one.
    pub tokens: Vec<Token>,
    /// Where games are kept across restarts: a file path, or "memory" for
    /// nowhere (default: `sessions.db` in the data directory), or
    /// `redis://HOST:PORT` (or a Redis Cluster's
    /// `redis+cluster://HOST:PORT,HOST:PORT…`) for a store several servers share.
    pub store: Option<String>,
    /// A JSON Lines file each ended game's result record is appended to
    /// (`ludus report` summarises it); none: no records.
    pub records: Option<std::path::PathBuf>,
    /// The key the records' lines are signed with (made there at the first
    /// start); default: `records.key` in the server's data directory.
    pub records_key: Option<std::path::PathBuf>,
    /// A run file: the matches of an evaluation, which players ask for
    /// with `ludus_next_game` (docs/evaluation.md). Default: none.
    pub run: Option<std::path::PathBuf>,
    /// This server's name among several sharing a store: its MCP session
    /// ids start with it (`NAME-`), so a proxy can send each session's
    /// requests back to it. Default: none (a random name in leases).
    pub server_name: Option<String>,
    /// The games this server serves, by name (built-in or in the plugins
    /// directory); the others are not loaded and their tools not listed.
    /// Default: every game.
    pub games: Option<Vec<String>>,
    /// Every caller's chosen seed is the game's whole seed: nothing hidden
    /// is mixed in, so the same seed gives the same game, hidden parts
    /// included. For an evaluator's own server whose agents it trusts; a
    /// token can be given the same (`whole_seeds = true` on it). Default:
    /// false (a player's seed never decides what another seat hides).
    pub whole_seeds: bool,
    /// HTTP: proxies whose forwarded client address (`Forwarded: for=`,
    /// else `X-Forwarded-For`) is believed, as addresses or networks
    /// (`["127.0.0.1", "10.0.0.0/8"]`): behind them the per-address caps
    /// count each client, not the proxy. Default: none (every peer is a client).
    pub trusted_proxies: Vec<String>,
    /// What happens to a player whose moves a game keeps refusing as
    /// illegal, for every game (`[plugins.NAME] illegal_moves` for one):
    /// `{ attempts = 3, then = "lose" }` or `then = "random"` (a random
    /// legal move is played for the player). Default: nothing happens.
    pub illegal_moves: IllegalMovePolicy,
    /// A time per move for every game with seats: `{ move_ms = 2000, then =
    /// "lose" }`. Default: none.
    pub clock: Clock,
    /// What engine processes may use (`[engines]`).
    pub engines: Engines,
    /// The built-in games' own endpoints (their bundled engines), by game:
    /// granted to the built-in component alone, never through the config.
    #[serde(skip)]
    pub builtin_channels: BTreeMap<String, BTreeMap<String, Endpoint>>,
}

/// What happens to a player whose moves a game keeps refusing as illegal
/// (`illegal_moves` in the config): after `attempts` refused moves in a row
/// (no move of theirs accepted in between), `then`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IllegalMovePolicy {
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub then: AfterRefusals,
}

/// A time per move (`clock` in the config, or per match in a run file):
/// a seated agent with a decision due for longer than `move_ms` is dealt
/// with as `then` says. The clock runs while every seat is taken and the
/// player has something to decide, from when it became due (its own
/// accepted move starts it again).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    /// Milliseconds a move may take; 0: no clock.
    #[serde(default)]
    pub move_ms: u64,
    #[serde(default)]
    pub then: OnTime,
}

/// What happens to a player whose time ran out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnTime {
    /// Nothing: the time is recorded with each move, no more.
    #[default]
    Nothing,
    /// The player loses the game.
    Lose,
}

impl Clock {
    /// Whether it deals with anyone.
    pub fn runs(&self) -> bool {
        self.move_ms > 0 && self.then != OnTime::Nothing
    }

    pub fn in_words(&self) -> String {
        match (self.move_ms, self.then) {
            (0, _) => "no clock".into(),
            (ms, OnTime::Nothing) => format!("{ms} ms a move, and nothing happens when it runs out"),
            (ms, OnTime::Lose) => format!("{ms} ms a move, or the game is lost"),
        }
    }
}

/// What an illegal-move policy does once it fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AfterRefusals {
    /// Nothing: the player may go on trying (refusals are still counted).
    #[default]
    Nothing,
    /// The player loses the game (a puzzle: it is failed).
    Lose,
    /// The host plays one of the player's legal moves for it, drawn from
    /// the game's whole seed (games that export `ludus:plugin/moves`).
    Random,
}

impl AfterRefusals {
    /// As the config writes it.
    pub fn name(self) -> &'static str {
        match self {
            AfterRefusals::Nothing => "nothing",
            AfterRefusals::Lose => "lose",
            AfterRefusals::Random => "random",
        }
    }
}

impl IllegalMovePolicy {
    /// What the policy does after `refused` moves in a row, if anything.
    pub fn fires_at(&self, refused: u32) -> Option<AfterRefusals> {
        (self.then != AfterRefusals::Nothing && self.attempts > 0 && refused >= self.attempts).then_some(self.then)
    }

    /// In words, for a refusal or a note ("3 refused moves in a row, then the game is lost").
    pub fn in_words(&self) -> String {
        match self.then {
            AfterRefusals::Nothing => "none: refused moves are counted, and the player may go on".into(),
            AfterRefusals::Lose => format!("{} refused moves in a row, then the game is lost", self.attempts),
            AfterRefusals::Random => format!("{} refused moves in a row, then a random legal move is played for the player", self.attempts),
        }
    }
}

/// A bearer token: the caller's name, and the SHA-256 of the token (the
/// token itself is never stored).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    pub name: String,
    pub sha256: String,
    /// This caller's chosen seed is the game's whole seed (`Config::whole_seeds`).
    #[serde(default)]
    pub whole_seeds: bool,
}

/// A server name goes into MCP session ids and a proxy's routing rules.
pub fn check_server_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    anyhow::ensure!(ok, "server_name {name:?}: use 1-32 letters, digits or _ (it starts this server's MCP session ids)");
    Ok(())
}

/// Origins allowed when the operator names none: local pages, any port.
pub const DEFAULT_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: Limits::default(),
            plugins: BTreeMap::new(),
            cache_dir: None,
            allowed_origins: DEFAULT_ORIGINS.iter().map(|o| o.to_string()).collect(),
            allowed_hosts: Vec::new(),
            tokens: Vec::new(),
            store: None,
            records: None,
            records_key: None,
            run: None,
            server_name: None,
            games: None,
            whole_seeds: false,
            trusted_proxies: Vec::new(),
            illegal_moves: IllegalMovePolicy::default(),
            clock: Clock::default(),
            engines: Engines::default(),
            builtin_channels: BTreeMap::new(),
        }
    }
}

impl Config {
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
        let config: Config = toml::from_str(&text).with_context(|| format!("in config {}", path.display()))?;
        check_tokens(&config.tokens).with_context(|| format!("in config {}", path.display()))?;
        if let Some(name) = &config.server_name {
            check_server_name(name).with_context(|| format!("in config {}", path.display()))?;
        }
        let at_zero = |p: &&IllegalMovePolicy| p.then != AfterRefusals::Nothing && p.attempts == 0;
        let policies = std::iter::once(&config.illegal_moves).chain(config.plugins.values().filter_map(|p| p.illegal_moves.as_ref()));
        if let Some(p) = policies.clone().find(at_zero) {
            anyhow::bail!(
                "in config {}: illegal_moves with then = \"{}\" needs attempts = 1 or more (how many refused moves in a row it takes)",
                path.display(),
                p.then.name()
            );
        }
        for (plugin, p) in &config.plugins {
            if let Some(sha) = &p.sha256
                && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
            {
                anyhow::bail!(
                    "in config {}: [plugins.{plugin}] sha256 must be 64 hex digits (`ludus inspect` shows a plugin's)",
                    path.display()
                );
            }
            if let Some(name) = p.channels.iter().find_map(|(name, e)| (*e == Endpoint::Disabled(false)).then_some(name)) {
                anyhow::bail!(
                    "in config {}: [plugins.{plugin}.channels.{name}] disabled = false names nothing to reach; \
                     give a process, websocket, tcp or http endpoint, or leave the table out",
                    path.display()
                );
            }
        }
        Ok(config)
    }

    /// Whether game `name` is among those this server serves (`games`).
    pub fn serves(&self, name: &str) -> bool {
        self.games.as_ref().is_none_or(|games| games.iter().any(|g| g == name))
    }

    pub fn channel_limits(&self) -> ChannelLimits {
        ChannelLimits { max_per_session: self.limits.max_channels_per_session, max_message_bytes: self.limits.max_channel_message_bytes }
    }

    /// The limits that apply to plugin `name`, given what the plugin itself asks for.
    pub fn limits_for(&self, name: &str, plugin_idle_ms: Option<u32>) -> PluginLimits {
        let p = self.plugins.get(name).cloned().unwrap_or_default();
        let l = &self.limits;
        PluginLimits {
            call_timeout: Duration::from_millis(p.call_timeout_ms.unwrap_or(l.call_timeout_ms)),
            memory_bytes: p.memory_mb.unwrap_or(l.memory_mb).saturating_mul(1 << 20) as usize,
            max_sessions: p.max_sessions.unwrap_or(l.max_sessions_per_plugin),
            idle_timeout: Duration::from_millis(p.idle_timeout_ms.or(plugin_idle_ms.map(u64::from)).unwrap_or(l.idle_timeout_ms)),
            max_wait: Duration::from_millis(p.max_wait_ms.unwrap_or(l.max_wait_ms)),
            max_waits: l.max_waits_per_session,
            max_result_bytes: l.max_result_bytes,
            max_output_bytes: l.max_guest_output_bytes,
            env: granted_env(&p.env, &p.pass_env),
            illegal_moves: p.illegal_moves.unwrap_or(self.illegal_moves),
            clock: self.clock,
        }
    }
}

/// A new token for caller `name`: the token, and the config lines that
/// admit it (its SHA-256, never the token).
pub fn issue_token(name: &str) -> anyhow::Result<(String, String)> {
    use sha2::{Digest, Sha256};
    let token = format!("ludus_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let sha256 = format!("{:x}", Sha256::digest(token.as_bytes()));
    check_tokens(&[Token { name: name.to_string(), sha256: sha256.clone(), whole_seeds: false }])?;
    Ok((token, format!("[[tokens]]\nname = \"{name}\"\nsha256 = \"{sha256}\"")))
}

/// The stdio client's caller name, which no bearer token may take.
pub const STDIO_CALLER: &str = "stdio";

/// Token names are callers' names: distinct, and unlike a connection's
/// (`client-…`); hashes are SHA-256 in hex, as `ludus token` prints them.
fn check_tokens(tokens: &[Token]) -> anyhow::Result<()> {
    let mut seen = std::collections::HashSet::new();
    for t in tokens {
        let name_ok = !t.name.is_empty()
            && t.name.len() <= 64
            && !t.name.starts_with("client-")
            && t.name != STDIO_CALLER
            && t.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
        if !name_ok {
            anyhow::bail!(
                "[[tokens]] name {:?}: 1-64 characters of A-Z a-z 0-9 - _ . @, not starting with `client-` and not `stdio`",
                t.name
            );
        }
        if t.sha256.len() != 64 || !t.sha256.chars().all(|c| c.is_ascii_hexdigit()) {
            anyhow::bail!("[[tokens]] {}: sha256 must be 64 hex digits (`ludus token {}` prints the line to use)", t.name, t.name);
        }
        if !seen.insert(&t.name) {
            anyhow::bail!("[[tokens]] name {} appears twice", t.name);
        }
    }
    Ok(())
}

/// What one endpoint name reaches, as the operator declared it.
///
/// ```toml
/// [plugins.showdown.channels.sim]
/// process = { command = "node", args = ["pokemon-showdown", "simulate-battle", "--skip-build"], cwd = "/opt/ps" }
///
/// [plugins.showdown.channels.server]
/// websocket = "ws://127.0.0.1:8000/showdown/websocket"
/// ```
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Endpoint {
    /// A child process; each line on its stdout is a message, each send a line on its stdin.
    Process {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        cwd: Option<std::path::PathBuf>,
        /// How many processes it counts as against `limits.max_processes`
        /// (a launcher that starts a second process counts 2).
        #[serde(default = "one")]
        weight: u32,
        /// The program speaks the shared-engine protocol (every line tagged
        /// with its game's number): one process then serves many games
        /// (`[engines] games_per_process`, `shards`).
        #[serde(default)]
        tagged: bool,
        /// A built-in game's own engine: set by the server, never by a config.
        #[serde(skip)]
        bundled: Option<BundledEngine>,
    },
    /// A WebSocket URL (`ws://` or `wss://`); text frames both ways.
    Websocket(String),
    /// A TCP `host:port`; lines both ways.
    Tcp(String),
    /// An HTTP base URL; each send is one request, each response one message.
    Http(String),
    /// `disabled = true`: turned off, including a bundled game's default for
    /// this name (`disabled = false` is refused: name what it reaches instead).
    Disabled(bool),
}

fn one() -> u32 {
    1
}

/// What a built-in game's engine needs besides its program: its installed
/// package (read-only while it plays) and the step that installs it on first use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BundledEngine {
    /// The user cache the engine is installed into (`XDG_CACHE_HOME` for it).
    pub user_cache: std::path::PathBuf,
    /// Where its package lives, under the user cache.
    pub package: std::path::PathBuf,
    /// A file that exists once the package is installed.
    pub installed: std::path::PathBuf,
    /// The engine's own data cache under the user cache, which it may write
    /// (the card engine's indexes), if it keeps one.
    pub data: Option<std::path::PathBuf>,
    /// The arguments that install the package and exit.
    pub install: Vec<String>,
}

impl Endpoint {
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::Process { .. } => "process",
            Endpoint::Websocket(_) => "websocket",
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Http(_) => "http",
            Endpoint::Disabled(_) => "disabled",
        }
    }
}

/// Channel limits of one plugin.
#[derive(Debug, Clone)]
pub struct ChannelLimits {
    pub max_per_session: usize,
    pub max_message_bytes: usize,
}

/// Effective limits of one plugin version.
#[derive(Debug, Clone)]
pub struct PluginLimits {
    pub call_timeout: Duration,
    pub memory_bytes: usize,
    pub max_sessions: usize,
    pub idle_timeout: Duration,
    pub max_wait: Duration,
    pub max_waits: u64,
    pub max_result_bytes: usize,
    pub max_output_bytes: usize,
    /// The environment the operator grants (`env`, then `pass_env` that are set).
    pub env: Vec<(String, String)>,
    pub illegal_moves: IllegalMovePolicy,
    pub clock: Clock,
}

/// An environment the operator grants (a plugin's, its engines'): the
/// literal `env`, then the `pass_env` variables the server itself has
/// (unset ones are left out; the plugin reports what it misses).
fn granted_env(env: &BTreeMap<String, String>, pass_env: &[String]) -> Vec<(String, String)> {
    let passed = pass_env.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v)));
    env.iter().map(|(k, v)| (k.clone(), v.clone())).chain(passed).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_settings_override_limits_and_plugin_hints() {
        let c: Config =
            toml::from_str("[limits]\ncall_timeout_ms = 100\n[plugins.hanoi]\nidle_timeout_ms = 5\nprefix = \"toh\"\n").unwrap();
        let l = c.limits_for("hanoi", Some(120_000));
        assert!(l.env.is_empty());
        assert_eq!(l.call_timeout, Duration::from_millis(100));
        assert_eq!(l.idle_timeout, Duration::from_millis(5));
        assert_eq!(c.limits_for("other", Some(7)).idle_timeout, Duration::from_millis(7));
    }

    #[test]
    fn plugin_environment_is_literal_values_then_passed_on_server_variables() {
        let c: Config =
            toml::from_str("[plugins.showdown]\nenv = { A = \"1\" }\npass_env = [\"PATH\", \"LUDUS_SURELY_UNSET_VAR\"]\n").unwrap();
        let env = c.limits_for("showdown", None).env;
        assert_eq!(env[0], ("A".to_string(), "1".to_string()));
        assert_eq!(env[1], ("PATH".to_string(), std::env::var("PATH").unwrap()));
        assert_eq!(env.len(), 2, "an unset variable is left out: {env:?}");
        assert!(c.limits_for("hanoi", None).env.is_empty(), "only the plugin named gets it");
    }

    #[test]
    fn channel_endpoints_of_every_kind_parse() {
        let c: Config = toml::from_str(
            r#"
            [plugins.showdown.channels.sim]
            process = { command = "node", args = ["ps", "simulate-battle"], cwd = "/tmp" }
            [plugins.showdown.channels.server]
            websocket = "ws://127.0.0.1:8000/showdown/websocket"
            [plugins.showdown.channels.raw]
            tcp = "127.0.0.1:9"
            [plugins.showdown.channels.api]
            http = "http://127.0.0.1:8080"
            "#,
        )
        .unwrap();
        let ch = &c.plugins["showdown"].channels;
        assert_eq!(ch.len(), 4);
        assert!(matches!(&ch["sim"], Endpoint::Process { args, .. } if args.len() == 2));
        assert!(toml::from_str::<Config>("[plugins.x.channels.a]\nftp = \"x\"\n").is_err());
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<Config>("[limits]\ncall_timeout = 1\n").is_err());
    }
}

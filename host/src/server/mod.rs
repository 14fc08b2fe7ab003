//! `ludus serve`: build the registry (built-in games, then the plugins
//! directory), start hot reload and the idle reaper, and serve MCP over stdio
//! or Streamable HTTP.

pub mod bundled;
mod busy_poll;
pub mod doctor;
mod http;
mod jsonrpc;
mod stdio;
pub mod verify;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::config::{Config, Endpoint};
use crate::mcp::Ludus;
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::session::{SessionLimits, Sessions};

pub struct ServeOptions {
    pub plugins: Option<PathBuf>,
    pub http: Option<SocketAddr>,
    pub config: Config,
    pub builtins: bool,
    /// Where games are kept across restarts.
    pub store: crate::store::StoreSpec,
    /// Where each game's result record is appended (none: no records).
    pub records: Option<PathBuf>,
    /// The run file: matches its players ask for with `ludus_next_game`.
    pub run: Option<PathBuf>,
}

/// Everything except the transport: loads the games and starts the background tasks.
pub async fn start(opts: &ServeOptions) -> Result<Arc<Registry>> {
    let started = Instant::now();
    let cache = opts.config.cache_dir.clone().or_else(crate::runtime::default_cache_dir);
    let mut config = opts.config.clone();
    if opts.builtins {
        grant_sidecars(&mut config, cache.as_deref());
    }
    check_plugin_tables(&config, opts.builtins, opts.plugins.is_some())?;
    let config = Arc::new(config);
    let runtime = Runtime::new(cache, &config.engines)?;
    runtime.processes.set_limits(
        config.limits.max_processes,
        config.limits.max_processes_per_caller,
        config.limits.max_engine_games_per_caller,
    );
    match runtime.sandbox.describe() {
        (said, true) => tracing::info!("{said}"),
        (said, false) => tracing::warn!("{said} (`ludus doctor` says more)"),
    }
    // Leases need a name for this server even when the operator gave none.
    let name = config.server_name.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_string());
    let store = crate::store::open(&opts.store, &name)?;
    let records = match opts.records.as_deref() {
        Some(path) => {
            let key = crate::seal::SigningKey::load_or_create(&records_key_path(&config)).map_err(anyhow::Error::msg)?;
            Some(crate::records::RecordsFile::open(path, Some(key))?)
        }
        None => None,
    };
    if let Some(records) = &records {
        let signer = records.signer().unwrap_or_default();
        tracing::info!("every game's result is recorded in {}, each line signed by key {signer}", records.path().display());
    }
    let records = records.map(Arc::new);
    let sessions = Sessions::new(session_limits(&config), tokio::runtime::Handle::current(), store, records)?;
    let registry = Registry::new(runtime, config, sessions.clone());

    if opts.builtins {
        for game in bundled::BUNDLED {
            let name = game.name;
            if registry.config.plugins.get(name).is_some_and(|p| p.disabled) || !registry.config.serves(name) {
                continue;
            }
            let r = registry.clone();
            let plugin = tokio::task::spawn_blocking(move || r.load_bundled(game.wasm, game.precompiled)).await?;
            let plugin = plugin.map_err(|e| anyhow::anyhow!("built-in game {name} failed to load: {e}"))?;
            registry.add_builtin(plugin).map_err(|e| anyhow::anyhow!("built-in game {name}: {e}"))?;
        }
    }
    if let Some(dir) = &opts.plugins {
        if !dir.is_dir() {
            bail!("the plugins directory {} does not exist (create it, or leave out --plugins)", dir.display());
        }
        scan_plugins(&registry, dir, opts.builtins).await?;
    }
    check_games_found(&registry, opts.builtins)?;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            // Games leaving memory are saved first: guest calls and writes.
            let table = sessions.clone();
            let _ = tokio::task::spawn_blocking(move || table.reap_idle()).await;
        }
    });
    let games: Vec<String> = registry.plugins().iter().map(|p| format!("{} {}", p.name, p.version)).collect();
    tracing::info!(ready_ms = started.elapsed().as_millis() as u64, "ready with games: {}", games.join(", "));
    Ok(registry)
}

/// Loads the plugins directory, then watches it. A first compile of a large
/// component (a Python game: tens of seconds) must not keep the server from
/// answering, so the first scan runs in the background and its games follow
/// with `list_changed` (lists wait for it a moment, `Registry::settled`, and
/// a call to one of its tools waits for it to end); unless `--games` names a
/// game only the directory can have, which the server then waits for.
async fn scan_plugins(registry: &Arc<Registry>, dir: &std::path::Path, builtins: bool) -> Result<()> {
    let (r, d) = (registry.clone(), dir.to_path_buf());
    let needed = registry
        .config
        .games
        .as_ref()
        .is_some_and(|games| games.iter().any(|g| !builtins || !bundled::BUNDLED.iter().any(|b| b.name == g)));
    registry.set_scanning(true);
    let scan = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        watch::initial_scan(&r, &d);
        r.set_scanning(false);
        let loaded: Vec<String> = r.plugins().iter().map(|p| p.name.clone()).collect();
        for name in r.config.plugins.keys().filter(|n| !loaded.contains(n)) {
            tracing::warn!("the config has [plugins.{name}], but no game of that name is built in or in {}", d.display());
        }
        tracing::info!(scan_ms = started.elapsed().as_millis() as u64, "plugins directory {} loaded", d.display());
    });
    // Watching starts once the first scan is over, so no file is compiled twice at once.
    let (r, d) = (registry.clone(), dir.to_path_buf());
    let then_watch = async move {
        scan.await?;
        watch::spawn(r, d).context("watching the plugins directory")
    };
    if needed {
        return then_watch.await;
    }
    tokio::spawn(async move {
        if let Err(e) = then_watch.await {
            tracing::error!("{e:#}");
        }
    });
    Ok(())
}

/// A `[plugins.NAME]` table must name a game, as an unknown key is refused:
/// a typo (`[plugins.chezz]`) would otherwise leave the operator's settings
/// unapplied without a word. Without a plugins directory the games are the
/// built-in ones; with one, a name not built in may be a plugin there, and a
/// table that matches nothing once the directory is read is warned about.
/// Where the records' signing key is kept: the config's `records_key`,
/// else `records.key` beside the server's stored games.
pub fn records_key_path(config: &Config) -> std::path::PathBuf {
    config.records_key.clone().unwrap_or_else(|| crate::store::data_dir().join("records.key"))
}

fn check_plugin_tables(config: &Config, builtins: bool, directory: bool) -> Result<()> {
    let builtin: Vec<&str> = bundled::BUNDLED.iter().map(|g| g.name).collect();
    let unknown: Vec<&String> = config.plugins.keys().filter(|name| !builtin.contains(&name.as_str())).collect();
    if unknown.is_empty() || directory {
        return Ok(());
    }
    bail!(
        "the config has {} but no such game: the built-in games are {}{}",
        unknown.iter().map(|n| format!("[plugins.{n}]")).collect::<Vec<_>>().join(", "),
        builtin.join(", "),
        if builtins { "" } else { " (not loaded: --no-builtin), and no plugins directory was given (--plugins)" }
    )
}

/// `--games` (or `games` in the config) must name games there are: a typo
/// would otherwise start a server without the game the operator asked for.
fn check_games_found(registry: &Registry, builtins: bool) -> Result<()> {
    let Some(games) = &registry.config.games else { return Ok(()) };
    let loaded: Vec<String> = registry.plugins().iter().map(|p| p.name.clone()).collect();
    let missing: Vec<&String> = games.iter().filter(|g| !loaded.contains(g)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let builtin: Vec<&str> = if builtins { bundled::BUNDLED.iter().map(|g| g.name).collect() } else { Vec::new() };
    bail!(
        "--games (or `games` in the config) names {}, which this server does not have; the built-in games are {}{}",
        missing.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", "),
        if builtin.is_empty() { "not loaded (--no-builtin)".to_string() } else { builtin.join(", ") },
        if loaded.iter().any(|l| !builtin.contains(&l.as_str())) { ", and the plugins directory adds the others loaded" } else { "" }
    )
}

/// Who may fix a game's whole seed (`whole_seeds`, in the config or on tokens).
fn whole_seeds(config: &crate::config::Config) -> crate::session::WholeSeeds {
    use crate::session::WholeSeeds;
    if config.whole_seeds {
        return WholeSeeds::Everyone;
    }
    let names: std::collections::HashSet<String> = config.tokens.iter().filter(|t| t.whole_seeds).map(|t| t.name.clone()).collect();
    if names.is_empty() { WholeSeeds::Nobody } else { WholeSeeds::Callers(names) }
}

/// The configured session limits, with the total capped where the kernel's
/// limit on memory mappings would make sessions fail before it.
fn session_limits(config: &crate::config::Config) -> SessionLimits {
    let limits = &config.limits;
    let mut total = SessionLimits {
        total: limits.max_sessions,
        total_reason: "limits.max_sessions".into(),
        per_caller: limits.max_sessions_per_caller,
        waits_per_caller: limits.max_waits_per_caller,
        maps: crate::runtime::maps_for_instances(),
        whole_seeds: whole_seeds(config),
        unload_after: (limits.unload_idle_after_ms > 0).then(|| Duration::from_millis(limits.unload_idle_after_ms)),
    };
    if let Some((allowed, max_maps)) = crate::runtime::instances_the_kernel_allows(false)
        && allowed < limits.max_sessions
    {
        // Where idle games leave memory, the limits count the games in
        // memory, and the longest-idle ones make room for new ones: the
        // map limit caps no game a user keeps, only how many run at once.
        let note = match total.unload_after {
            Some(_) => format!(
                "vm.max_map_count ({max_maps}) leaves room for about {allowed} games in memory at once; past that, the \
                 longest-idle games leave memory to make room (raise it with `sysctl vm.max_map_count=262144` for more at once)"
            ),
            None => format!(
                "limits.max_sessions is {}, but vm.max_map_count ({max_maps}) leaves room for about {allowed} sessions; \
                 capping at {allowed} (raise it with `sysctl vm.max_map_count=262144` for more)",
                limits.max_sessions
            ),
        };
        // The built-in default is capped quietly; an operator's own figure
        // loudly, unless idle games make room.
        if limits.max_sessions == crate::config::Limits::default().max_sessions || total.unload_after.is_some() {
            tracing::info!("{note}");
        } else {
            tracing::warn!("{note}");
        }
        total.total = allowed;
        total.total_reason = format!("capped by the kernel's vm.max_map_count of {max_maps}; the operator can raise it with sysctl");
    }
    total
}

/// The config with the built-in games' own engines granted, as a server
/// grants them (`ludus inspect` of a built-in game shows them so).
pub fn with_builtin_engines(mut config: Config) -> Config {
    let cache = config.cache_dir.clone().or_else(crate::runtime::default_cache_dir);
    grant_sidecars(&mut config, cache.as_deref());
    config
}

/// Writes each bundled sidecar into the cache directory and grants its
/// endpoint to the built-in game it belongs to (never to a plugin that takes
/// the game's name: `Config::builtin_channels`), unless the operator
/// configured that endpoint (or disabled the game). A sidecar that cannot be
/// written is left out with a warning: its game then says the endpoint is
/// not granted.
fn grant_sidecars(config: &mut Config, cache: Option<&std::path::Path>) {
    let root = cache.map(|c| c.join("sidecars")).unwrap_or_else(|| std::env::temp_dir().join("ludus-sidecars"));
    let user_cache = doctor::user_cache();
    for car in bundled::SIDECARS {
        if !config.serves(car.plugin) {
            continue;
        }
        let plugin = config.plugins.get(car.plugin);
        if plugin.is_some_and(|p| p.disabled || p.channels.contains_key(car.endpoint)) {
            continue;
        }
        let dir = root.join(car.plugin);
        match write_sidecar(&dir, car) {
            Ok(()) => {
                let entry = dir.join(car.entry).display().to_string();
                let installed = user_cache.join(car.needs.installed);
                let bundled = crate::config::BundledEngine {
                    user_cache: user_cache.clone(),
                    package: installed.parent().map(std::path::Path::to_path_buf).unwrap_or_else(|| user_cache.clone()),
                    installed,
                    data: car.data.map(|d| user_cache.join(d)),
                    install: vec![entry.clone(), "--install-only".into()],
                };
                let endpoint = Endpoint::Process {
                    command: car.command.into(),
                    args: vec![entry],
                    cwd: None,
                    weight: car.weight,
                    tagged: car.tagged,
                    bundled: Some(bundled),
                };
                config.builtin_channels.entry(car.plugin.to_string()).or_default().insert(car.endpoint.into(), endpoint);
            }
            Err(e) => tracing::warn!(plugin = car.plugin, dir = %dir.display(), "cannot write the bundled {} program: {e:#}", car.endpoint),
        }
    }
}

/// Writes files whose content changed, each atomically (a running sidecar of
/// another server keeps reading its old file).
fn write_sidecar(dir: &std::path::Path, car: &bundled::Sidecar) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in car.files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|old| old == *text) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

pub async fn serve(opts: ServeOptions) -> Result<()> {
    let registry = start(&opts).await?;
    let run = match &opts.run {
        Some(path) => Some(Arc::new(crate::arena::Run::load(path, &registry, opts.records.as_deref())?)),
        None => None,
    };
    let sessions = registry.sessions.clone();
    let sandbox = registry.runtime.sandbox.clone();
    let served = match opts.http {
        None => {
            let unread_limit = registry.config.limits.max_unread_output_bytes;
            let watch = Duration::from_micros(registry.config.limits.busy_poll_us);
            let ludus = Ludus::new(registry, run);
            stdio::Stdio::start(ludus, unread_limit, watch)?.served().await.map_err(anyhow::Error::from)
        }
        Some(addr) => http::serve(registry, run, addr).await,
    };
    // Games that end with this process (none is kept for a restart) are recorded now.
    sessions.stopping("the server stopped");
    sandbox.sweep();
    served
}

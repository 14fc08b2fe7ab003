//! `ludus serve`: build the registry (built-in games, then the plugins
//! directory), start hot reload and the idle reaper, and serve MCP over stdio
//! or Streamable HTTP.

mod bundled;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::serve::ListenerExt;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Endpoint};
use crate::mcp::Ludus;
use crate::plugin::Source;
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::session::Sessions;

pub struct ServeOptions {
    pub plugins: Option<PathBuf>,
    pub http: Option<SocketAddr>,
    pub config: Config,
    pub builtins: bool,
}

/// Everything except the transport: loads the games and starts the background tasks.
pub async fn start(opts: &ServeOptions) -> Result<Arc<Registry>> {
    let started = Instant::now();
    let cache = opts.config.cache_dir.clone().or_else(crate::runtime::default_cache_dir);
    let mut config = opts.config.clone();
    if opts.builtins {
        grant_sidecars(&mut config, cache.as_deref());
    }
    let config = Arc::new(config);
    let runtime = Runtime::new(cache)?;
    let sessions = Sessions::new(config.limits.max_sessions, tokio::runtime::Handle::current());
    let registry = Registry::new(runtime, config, sessions.clone());

    if opts.builtins {
        for (name, bytes) in bundled::BUNDLED {
            if registry.config.plugins.get(*name).is_some_and(|p| p.disabled) {
                continue;
            }
            let r = registry.clone();
            let plugin = tokio::task::spawn_blocking(move || r.load(bytes, Source::Builtin)).await?;
            let plugin = plugin.map_err(|e| anyhow::anyhow!("built-in game {name} failed to load: {e}"))?;
            registry.add_builtin(plugin).map_err(|e| anyhow::anyhow!("built-in game {name}: {e}"))?;
        }
    }
    if let Some(dir) = &opts.plugins {
        if !dir.is_dir() {
            bail!("the plugins directory {} does not exist (create it, or leave out --plugins)", dir.display());
        }
        let (r, d) = (registry.clone(), dir.clone());
        tokio::task::spawn_blocking(move || watch::initial_scan(&r, &d)).await?;
        watch::spawn(registry.clone(), dir.clone()).context("watching the plugins directory")?;
    }
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sessions.reap_idle();
        }
    });
    let games: Vec<String> = registry.plugins().iter().map(|p| format!("{} {}", p.name, p.version)).collect();
    tracing::info!(ready_ms = started.elapsed().as_millis() as u64, "ready with games: {}", games.join(", "));
    Ok(registry)
}

/// Writes each bundled sidecar into the cache directory and grants its
/// endpoint, unless the operator configured that endpoint (or disabled the
/// game). A sidecar that cannot be written is left out with a warning: its
/// game then says the endpoint is not granted.
fn grant_sidecars(config: &mut Config, cache: Option<&std::path::Path>) {
    let root = cache.map(|c| c.join("sidecars")).unwrap_or_else(|| std::env::temp_dir().join("ludus-sidecars"));
    for car in bundled::SIDECARS {
        let plugin = config.plugins.entry(car.plugin.to_string()).or_default();
        if plugin.disabled || plugin.channels.contains_key(car.endpoint) {
            continue;
        }
        let dir = root.join(car.plugin);
        match write_sidecar(&dir, car) {
            Ok(()) => {
                let entry = dir.join(car.entry).display().to_string();
                plugin.channels.insert(car.endpoint.into(), Endpoint::Process { command: car.command.into(), args: vec![entry], cwd: None });
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
    match opts.http {
        None => {
            let service = Ludus::new(registry).serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
            Ok(())
        }
        Some(addr) => serve_http(registry, addr).await,
    }
}

async fn serve_http(registry: Arc<Registry>, addr: SocketAddr) -> Result<()> {
    let ct = CancellationToken::new();
    let mut origins = vec!["http://localhost:*".to_string(), "http://127.0.0.1:*".to_string(), "http://[::1]:*".to_string()];
    origins.extend(registry.config.allowed_origins.iter().cloned());
    let max_body = registry.config.limits.max_argument_bytes + (64 << 10);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .with_legacy_session_mode(true)
        .with_max_request_body_bytes(max_body)
        .with_cancellation_token(ct.child_token());
    let r = registry.clone();
    let service = StreamableHttpService::new(move || Ok(Ludus::new(r.clone())), LocalSessionManager::default().into(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    // An answer goes out in several small writes (the SSE priming event, the
    // message, the chunk end); with Nagle's algorithm each waits for the
    // client's delayed ACK, about 40 ms, whenever the client reads the whole
    // answer before sending the next request.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
    });
    if !local.ip().is_loopback() {
        tracing::warn!("serving on {local}, which is reachable from other machines; Ludus has no authentication");
    }
    tracing::info!("serving MCP over Streamable HTTP at http://{local}/mcp");
    // Tests and scripts read the actual address (port 0 picks a free one) from stderr.
    eprintln!("LUDUS_HTTP_URL=http://{local}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

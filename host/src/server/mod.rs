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
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
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
    let config = Arc::new(opts.config.clone());
    let cache = config.cache_dir.clone().or_else(crate::runtime::default_cache_dir);
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

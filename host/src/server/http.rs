//! MCP over Streamable HTTP: rmcp's service behind our own accept loop and a
//! thin JSON-RPC gate, with our session manager (`http_sessions`) answering
//! tool calls on the direct lane.
//!
//! The accept loop (hyper directly rather than `axum::serve`) is here for the
//! limits `axum::serve` cannot set: a cap on open connections, and a deadline
//! for a request's headers, so half-open or idle connections cannot pile up.
//! Each connection is then served on a thread of its own (`http_thread`), so
//! a tool call's guest runs where its request was read, as on stdio.
//! The gate answers what rmcp answers badly: a body that is not JSON-RPC gets
//! 400 with `-32700`/`-32600` (rmcp: 415 and plain text), a known method with
//! unusable params gets `-32602` with the request's id (rmcp: "method not
//! found"), DELETE of an unknown session 404 and of a known one 200 (rmcp:
//! 202 for both, which the official Python SDK reports as a failed close).
//! It also refuses a request id already in flight in its session, and an
//! `initialize` beyond `limits.max_mcp_sessions` (503).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::http_sessions::{Admitted, Sessions};
use super::http_thread::{Socket, drive};
use super::jsonrpc;
use crate::mcp::Ludus;
use crate::registry::Registry;

pub async fn serve(registry: Arc<Registry>, addr: SocketAddr) -> Result<()> {
    let ct = CancellationToken::new();
    let max_body = registry.config.limits.max_argument_bytes + (64 << 10);
    let idle_limit = Duration::from_millis(registry.config.limits.mcp_session_idle_ms);
    let sessions = Sessions::new(Ludus::new(registry.clone()), idle_limit);
    let r = registry.clone();
    let service = StreamableHttpService::new(move || Ok(Ludus::new(r.clone())), sessions.clone(), mcp_config(&registry, max_body, &ct));
    let gate = Gate { sessions, max_body, max_sessions: registry.config.limits.max_mcp_sessions };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(Arc::new(gate), check_request));

    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        tracing::warn!("serving on {local}, which is reachable from other machines; Ludus has no authentication");
    }
    tracing::info!("serving MCP over Streamable HTTP at http://{local}/mcp");
    // Tests and scripts read the actual address (port 0 picks a free one) from stderr.
    eprintln!("LUDUS_HTTP_URL=http://{local}/mcp");

    let limits = &registry.config.limits;
    let (max_connections, header_timeout) = (limits.max_http_connections, Duration::from_millis(limits.http_header_timeout_ms));
    let open = Arc::new(Semaphore::new(max_connections));
    let shutdown = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    loop {
        let (tcp, peer) = tokio::select! {
            () = ct.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: wait rather than spin.
                Err(e) => {
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "refusing a connection: {max_connections} are open (limits.max_http_connections)");
            continue;
        };
        // An answer goes out in several small writes (the message, the chunk
        // end); with Nagle's algorithm each waits for the client's delayed
        // ACK, about 40 ms, whenever the client reads the whole answer before
        // sending the next request.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let (ct, rt) = (ct.clone(), tokio::runtime::Handle::current());
        let serve = move || {
            let _permit = permit;
            // On this thread tokio's timers, spawns and channels still work;
            // it is just not one of the runtime's workers.
            let _in_runtime = rt.enter();
            if let Err(e) = serve_connection(tcp, service, header_timeout, &ct) {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        };
        // The guest runs on this thread: room for its 2 MiB stack limit and the host's frames.
        if let Err(e) = std::thread::Builder::new().name("ludus-http".into()).stack_size(4 << 20).spawn(serve) {
            tracing::warn!(%peer, "refusing a connection: no thread for it ({e})");
        }
    }
}

/// Serves one connection on this thread (`http_thread`) until it closes, or
/// the server shuts down and the answers in progress are done.
fn serve_connection<S>(tcp: tokio::net::TcpStream, service: S, header_timeout: Duration, ct: &CancellationToken) -> Result<()>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (socket, interest) = Socket::new(tcp.into_std()?)?;
    let fd = socket.fd();
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(socket), service);
    let served = async {
        let mut conn = std::pin::pin!(conn);
        let stop = std::pin::pin!(ct.cancelled());
        match futures_util::future::select(conn.as_mut(), stop).await {
            futures_util::future::Either::Left((done, _)) => done,
            futures_util::future::Either::Right(((), _)) => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    };
    Ok(drive(served, fd, &interest)??)
}

fn mcp_config(registry: &Registry, max_body: usize, ct: &CancellationToken) -> StreamableHttpServerConfig {
    let mut origins = vec!["http://localhost:*".to_string(), "http://127.0.0.1:*".to_string(), "http://[::1]:*".to_string()];
    origins.extend(registry.config.allowed_origins.iter().cloned());
    StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .with_legacy_session_mode(true)
        // No SSE priming event (`id: 0`, empty `data:`): clients that negotiated
        // a version before 2025-11-25 read it as a broken message (Python SDK
        // 1.9 logs a parse error per request, the TypeScript SDK fires
        // onerror), its id repeats within a session, and a reconnect with
        // Last-Event-ID would replay nothing anyway (no event store).
        .with_sse_retry(None)
        .with_max_request_body_bytes(max_body)
        .with_cancellation_token(ct.child_token())
}

struct Gate {
    sessions: Arc<Sessions>,
    max_body: usize,
    max_sessions: usize,
}

async fn check_request(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    match *request.method() {
        Method::POST => check_post(&gate, request, next).await,
        Method::DELETE => check_delete(&gate, request, next).await,
        _ => next.run(request).await,
    }
}

/// A POST body is read here (within the size limit) and checked as JSON-RPC
/// before rmcp sees it.
async fn check_post(gate: &Arc<Gate>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, gate.max_body).await {
        Ok(b) => b,
        Err(_) => {
            let why = format!("the request body is larger than {} bytes (this server's limit) or was cut off", gate.max_body);
            return json_error(StatusCode::PAYLOAD_TOO_LARGE, jsonrpc::error_reply(serde_json::Value::Null, -32600, why));
        }
    };
    let message = match jsonrpc::classify(&bytes) {
        Ok(m) => m,
        Err(refusal) => {
            // An error to a readable request is its answer; anything else is 400.
            let status = if refusal.code == -32602 { StatusCode::OK } else { StatusCode::BAD_REQUEST };
            return json_error(status, refusal.reply);
        }
    };
    let opens_session = !parts.headers.contains_key("mcp-session-id")
        && matches!(&message, rmcp::model::JsonRpcMessage::Request(r) if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_)));
    if opens_session {
        let open = gate.sessions.count().await;
        if open >= gate.max_sessions {
            let why = format!(
                "this server already has {open} MCP sessions (limits.max_mcp_sessions); close one with DELETE, or wait for idle ones to expire"
            );
            return json_error(StatusCode::SERVICE_UNAVAILABLE, jsonrpc::error_reply(serde_json::Value::Null, -32000, why));
        }
    }
    // A request of a session is in the session manager's in-flight table
    // while its answer streams (`Sessions::admit`), so the same id twice in
    // flight is refused, and a `notifications/cancelled` finds the call it
    // names. A client that goes away cancels its request: its answer stream
    // is dropped (tests/http.rs checks both).
    let session = parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(Arc::<str>::from);
    let request_id = match &message {
        rmcp::model::JsonRpcMessage::Request(r) => Some(r.id.to_string()),
        _ => None,
    };
    let (Some(session), Some(request_id)) = (session, request_id) else {
        return next.run(Request::from_parts(parts, Body::from(bytes))).await;
    };
    let Some(in_flight) = gate.sessions.admit(session, request_id) else {
        let why = "this request id is already in flight in this session; give each request its own id";
        return json_error(StatusCode::CONFLICT, jsonrpc::error_reply(serde_json::Value::Null, -32600, why.into()));
    };
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::from_stream(Tracked { inner: body.into_data_stream(), in_flight: Some(in_flight) }))
}

/// An answer's body that ends its request's time in flight when it ends.
struct Tracked<S> {
    inner: S,
    in_flight: Option<Admitted>,
}

impl<S: futures_util::Stream + Unpin> futures_util::Stream for Tracked<S> {
    type Item = S::Item;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<S::Item>> {
        let next = std::pin::Pin::new(&mut self.inner).poll_next(cx);
        if let std::task::Poll::Ready(None) = next {
            self.in_flight = None;
        }
        next
    }
}

async fn check_delete(gate: &Gate, request: Request, next: Next) -> Response {
    let id = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(|s| Arc::<str>::from(s));
    if let Some(id) = &id
        && !gate.sessions.has_session(id).await.unwrap_or(false)
    {
        let reply = jsonrpc::error_reply(serde_json::Value::Null, -32600, format!("no MCP session {id} (it ended, or never existed)"));
        return json_error(StatusCode::NOT_FOUND, reply);
    }
    let mut response = next.run(request).await;
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

fn json_error(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = (status, Bytes::from(body)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

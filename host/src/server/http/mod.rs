//! MCP over Streamable HTTP: our own accept loop and a JSON-RPC gate that
//! answers every request itself. A POST is read and checked top down (its
//! body, `http::media`, `http::checks`), then answered as an MCP session's
//! (`http::mcp_sessions`: `initialize`, tool calls, pings, lists, reads,
//! subscriptions, notifications, as plain JSON or an event stream it
//! writes) or a stateless client's (`http::stateless`); a session's GET and
//! DELETE are `http::standalone`'s. rmcp supplies the protocol's types; its
//! service runs nothing here.
//!
//! The accept loop is ours for the limits a ready-made server does not set:
//! a cap on open connections, and a deadline for a request's headers, so
//! half-open or idle connections cannot pile up. Each connection is then
//! served by hyper on a thread of its own (`http::thread`), so a tool call's
//! guest runs where its request was read, as on stdio; its service
//! (`Connection`) hands every request to the gate, with no router between.
//! Every refusal is a JSON-RPC error that says what is wrong: a body that is
//! not JSON-RPC gets 400 with `-32700`/`-32600`, a known method with
//! unusable params `-32602` with the request's id, DELETE of an unknown
//! session 404 and of a known one 200, a POST that does not accept both
//! answers' types 406 or does not send JSON 415, protocol headers that do
//! not agree with the body 400. The gate also refuses a request id already
//! in flight in its session (409), and an `initialize` beyond
//! `limits.max_mcp_sessions` (503).
//!
//! Before any of that, `http::guard` decides who may send the request (Host,
//! Origin, bearer token) and who the caller is; `http::conns` keeps slow and
//! idle connections from locking new clients out; and a body is read into
//! one buffer against a deadline that grows with its size, so a client
//! trickling a body one byte at a time neither holds memory nor a slot.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{Context as _, Result};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest};
use tokio_util::sync::CancellationToken;

mod checks;
mod conns;
mod events;
mod guard;
mod mcp_sessions;
mod media;
mod outbox;
mod proxies;
mod resume;
mod standalone;
mod stateless;
mod thread;

use super::busy_poll::Watch;
use super::jsonrpc;
use crate::mcp::Ludus;
use crate::registry::Registry;
use crate::session::Caller;
use crate::turns::Turns;
use checks::Lifecycle;
use conns::{Answering, ConnRef, Conns};
use events::{Answered, event_stream};
use guard::{CallerNames, Guard, LastCaller, METADATA_PATHS, refuse};
use mcp_sessions::{Admitted, McpSessions};
use proxies::TrustedProxies;
use standalone::no_such_session;
use thread::{Socket, drive};

pub async fn serve(registry: Arc<Registry>, run: Option<Arc<crate::arena::Run>>, addr: SocketAddr) -> Result<()> {
    let ct = CancellationToken::new();
    let max_body = registry.config.limits.max_argument_bytes + (64 << 10);
    let idle_limit = Duration::from_millis(registry.config.limits.mcp_session_idle_ms);
    let ludus = Ludus::new(registry.clone(), run.clone());
    let names = CallerNames::new();
    let sessions =
        McpSessions::new(ludus.clone(), idle_limit, registry.config.server_name.clone(), names, registry.runtime.processes.clone());
    let limits = &registry.config.limits;
    // A loopback server the operator issued no tokens for makes one for its
    // own user, as notebook servers do: a client that keeps no MCP session
    // (a stateless 2026-07-28 client, the Python SDK's default) needs one to
    // keep its games from one request to the next.
    let local = (addr.ip().is_loopback() && registry.config.tokens.is_empty()).then(local_token).transpose()?;
    let mut guard = Guard::new(&registry.config, names);
    if let Some((token, _)) = &local {
        guard = guard.with_local_token(token);
    }
    let proxies = TrustedProxies::parse(&registry.config.trusted_proxies).map_err(anyhow::Error::msg)?;
    let gate = Gate {
        ludus,
        sessions,
        guard,
        proxies: proxies.clone(),
        max_body,
        max_sessions: limits.max_mcp_sessions,
        max_sessions_per_caller: limits.max_mcp_sessions_per_caller,
        body_time: Duration::from_millis(limits.http_body_timeout_ms),
        min_body_rate: limits.http_min_body_rate.max(1),
        stopping: ct.clone(),
        watch: Watch::new(Duration::from_micros(limits.busy_poll_us)),
        turns: Turns::new().context("starting the keeper of connection threads' turns")?,
    };
    let gate = Arc::new(gate);

    let listener = listen(addr).with_context(|| format!("binding {addr}"))?;
    if !addr.ip().is_loopback() && !gate.guard.uses_tokens() {
        tracing::warn!("serving on {addr}, which is reachable from other machines, without bearer tokens ([[tokens]] in the config)");
    }
    let bound = listener.local_addr()?;
    tracing::info!("serving MCP over Streamable HTTP at http://{bound}/mcp");
    if let Some((token, file)) = &local {
        eprintln!(
            "ludus: connect clients to http://{bound}/mcp?token={token}\n       (or send `Authorization: Bearer {token}`; \
             the token is kept in {}, and only your user can read it)",
            file.display()
        );
    }
    // Tests and scripts read the actual address (port 0 picks a free one) from stderr, after the line above.
    eprintln!("LUDUS_HTTP_URL=http://{bound}/mcp");

    let header_timeout = Duration::from_millis(limits.http_header_timeout_ms);
    let conns = Conns::new(limits, proxies);
    // Ctrl-C, or SIGTERM from a service manager (systemd, docker stop): the
    // server stops as it should (records written, shared games' leases given up).
    let shutdown = ct.clone();
    tokio::spawn(async move {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => drop(tokio::signal::ctrl_c().await),
        }
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
        let slot = match conns.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(why) => {
                tracing::warn!(%peer, "refusing a connection: {why}");
                continue;
            }
        };
        // An answer goes out in several small writes (the message, the chunk
        // end); with Nagle's algorithm each waits for the client's delayed
        // ACK, about 40 ms, whenever the client reads the whole answer before
        // sending the next request.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
        let (gate, ct, rt) = (gate.clone(), ct.clone(), tokio::runtime::Handle::current());
        let serve = move || {
            // On this thread tokio's timers, spawns and channels still work;
            // it is just not one of the runtime's workers.
            let _in_runtime = rt.enter();
            let service = Connection { gate: gate.clone(), conn: slot.conn.clone(), last_caller: Rc::default() };
            if let Err(e) = serve_connection(tcp, service, header_timeout, &ct, &slot.evicted, (&gate.watch, &gate.turns)) {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            drop(slot);
        };
        // The guest runs on this thread: room for its 2 MiB stack limit and the host's frames.
        if let Err(e) = std::thread::Builder::new().name("ludus-http".into()).stack_size(4 << 20).spawn(serve) {
            tracing::warn!(%peer, "refusing a connection: no thread for it ({e})");
        }
    }
}

/// Every answer over HTTP: a body of bytes, whole (with its length) or
/// streamed. Unsync: hyper needs a body only to be `Send`, and a streamed
/// call's answer is a future that is not `Sync`.
pub type Response = http::Response<UnsyncBoxBody<Bytes, Infallible>>;

type Request = http::Request<Incoming>;

/// An answer whose whole body is `body` (its length goes in the headers).
fn whole(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response {
    let mut response = http::Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A JSON answer: a JSON-RPC response or error, or a document.
pub fn json_answer(status: StatusCode, body: impl Into<Bytes>) -> Response {
    whole(status, "application/json", body)
}

/// One connection's requests, each handed to the gate with the connection
/// it came on. The answer's future runs on the connection's thread, so it
/// need not be `Send`.
struct Connection {
    gate: Arc<Gate>,
    conn: ConnRef,
    last_caller: Rc<LastCaller>,
}

impl hyper::service::Service<Request> for Connection {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>>>>;

    fn call(&self, request: Request) -> Self::Future {
        let (gate, conn, last_caller) = (self.gate.clone(), self.conn.clone(), self.last_caller.clone());
        Box::pin(async move { Ok(gate.check_request(request, conn, &last_caller).await) })
    }
}

/// Serves one connection on this thread (`http::thread`) until it closes, a
/// newer connection takes its place (`http::conns`), or the server shuts
/// down and the answers in progress are done.
fn serve_connection<S>(
    tcp: tokio::net::TcpStream,
    service: S,
    header_timeout: Duration,
    ct: &CancellationToken,
    evicted: &CancellationToken,
    (watch, turns): (&Watch, &Turns),
) -> Result<()>
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
        tokio::select! {
            done = conn.as_mut() => done,
            // Its place went to a newer connection: it was idle or slow, so
            // closing it loses no answer.
            () = evicted.cancelled() => Ok(()),
            () = ct.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    };
    Ok(drive(served, fd, &interest, watch, turns)??)
}

struct Gate {
    /// The handler of requests without a session (stateless clients').
    ludus: Ludus,
    /// Cancelled when the server stops: the event streams the gate writes
    /// end then.
    stopping: CancellationToken,
    sessions: Arc<McpSessions>,
    guard: Guard,
    /// Whose forwarded client address to believe.
    proxies: TrustedProxies,
    max_body: usize,
    max_sessions: usize,
    /// MCP sessions one caller (a token, else an address) may hold.
    max_sessions_per_caller: usize,
    /// A body's time: this, plus a second per `min_body_rate` bytes.
    body_time: Duration,
    min_body_rate: u64,
    /// How connection threads watch for their clients' next requests.
    watch: Watch,
    /// Connection threads' turns at the CPU, in the order asked for.
    turns: Turns,
}

impl Gate {
    /// Every request, top down: the path, Host and Origin, the caller
    /// (bearer token), then what its method needs.
    async fn check_request(&self, request: Request, conn: ConnRef, last_caller: &LastCaller) -> Response {
        let (parts, body) = request.into_parts();
        if let Err(refusal) = self.guard.check_origin(&parts.headers) {
            return refusal;
        }
        let path = parts.uri.path();
        if self.guard.uses_tokens() && parts.method == Method::GET && METADATA_PATHS.contains(&path) {
            return self.guard.metadata(&parts);
        }
        if path != "/mcp" {
            return refuse(StatusCode::NOT_FOUND, "nothing here: the MCP endpoint is /mcp");
        }
        let caller = match self.guard.caller(&parts, last_caller) {
            Ok(caller) => caller,
            Err(challenge) => return challenge,
        };
        if let Err(refusal) = self.check_session_owner(&parts, &caller) {
            return refusal;
        }
        match parts.method {
            Method::POST => self.check_post(parts, body, caller, conn).await,
            Method::GET => self.check_get(&parts, &caller, conn),
            Method::DELETE => self.check_delete(&parts),
            _ => {
                let mut refusal = refuse(StatusCode::METHOD_NOT_ALLOWED, "/mcp takes POST, GET and DELETE");
                refusal.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                refusal
            }
        }
    }

    /// With bearer tokens, an MCP session is its creator's: another token
    /// naming it finds no such session.
    fn check_session_owner(&self, parts: &http::request::Parts, caller: &Caller) -> Result<(), Response> {
        let Caller::Token(name) = caller else { return Ok(()) };
        let Some(id) = parts.headers.get(&MCP_SESSION_ID).and_then(|v| v.to_str().ok()) else { return Ok(()) };
        match self.sessions.owner(id) {
            Some(owner) if owner != *name => {
                let reply =
                    jsonrpc::error_reply(serde_json::Value::Null, -32600, "no such MCP session (it ended, or never existed)".into());
                Err(json_answer(StatusCode::NOT_FOUND, reply))
            }
            _ => Ok(()),
        }
    }

    /// Reads a body into one buffer as it arrives, within the size limit
    /// and a deadline that grows with the size declared (or the limit).
    async fn read_body(&self, body: Incoming, declared: Option<usize>) -> Result<Vec<u8>, Response> {
        let too_large = || {
            let why = format!("the request body is larger than {} bytes (this server's limit)", self.max_body);
            closing(json_answer(StatusCode::PAYLOAD_TOO_LARGE, jsonrpc::error_reply(serde_json::Value::Null, -32600, why)))
        };
        if declared.is_some_and(|n| n > self.max_body) {
            return Err(too_large());
        }
        let size = declared.unwrap_or(self.max_body) as u64;
        let allowed = self.body_time + Duration::from_secs(size / self.min_body_rate);
        let deadline = tokio::time::Instant::now() + allowed;
        let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(64 << 10));
        let mut body = body;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => {
                    let why = format!(
                        "the request body did not arrive within {} s (limits.http_body_timeout_ms, plus a second per \
                         limits.http_min_body_rate bytes); the connection is closed",
                        allowed.as_secs()
                    );
                    return Err(closing(json_answer(
                        StatusCode::REQUEST_TIMEOUT,
                        jsonrpc::error_reply(serde_json::Value::Null, -32600, why),
                    )));
                }
                Ok(None) => return Ok(bytes),
                Ok(Some(Err(_))) => {
                    let why = "the request body was cut off".to_string();
                    return Err(closing(json_answer(StatusCode::BAD_REQUEST, jsonrpc::error_reply(serde_json::Value::Null, -32600, why))));
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > self.max_body {
                    return Err(too_large());
                }
                bytes.extend_from_slice(&data);
            }
        }
    }
}

/// The header naming a request's MCP session. A constant: looked up by its
/// text, a header's name is parsed again at every request.
pub const MCP_SESSION_ID: http::HeaderName = http::HeaderName::from_static("mcp-session-id");

/// An MCP session's id, as its client sends it in `Mcp-Session-Id`.
pub type SessionId = Arc<str>;

/// A refusal after which the connection closes (its body was not read to the end).
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

impl Gate {
    /// A POST: its body read (within the size limit and its deadline) and
    /// checked as JSON-RPC, its media types and protocol headers checked,
    /// then answered as a session's request or a stateless client's.
    async fn check_post(&self, parts: http::request::Parts, body: Incoming, caller: Caller, conn: ConnRef) -> Response {
        let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
        let bytes = match self.read_body(body, declared).await {
            Ok(b) => Bytes::from(b),
            Err(refusal) => return refusal,
        };
        // From here the request is being answered: its connection keeps its place.
        let answering = conn.answering();
        let message = match jsonrpc::classify(&bytes) {
            Ok(m) => m,
            Err(refusal) => {
                // An error to a readable request is its answer; anything else (a
                // broken notification too: it gets no answer) is 400.
                let answered = refusal.code == -32602 && !refusal.notification;
                let status = if answered { StatusCode::OK } else { StatusCode::BAD_REQUEST };
                return json_answer(status, refusal.reply);
            }
        };
        // The body first (its size, its deadline, JSON-RPC), then what the
        // client accepts and sends, then what its protocol headers say.
        if let Some((status, why)) = media::refused(&parts.headers) {
            return refuse(status, why);
        }
        match checks::lifecycle(&parts.headers, &message) {
            Err(refusal) => {
                let id = match &message {
                    JsonRpcMessage::Request(r) => Some(&r.id),
                    _ => None,
                };
                return refusal.answer(id);
            }
            Ok(Lifecycle::Stateless) => return self.answer_stateless(message, caller, answering).await,
            Ok(Lifecycle::Session) => {}
        }
        let session = parts.headers.get(&MCP_SESSION_ID).and_then(|v| v.to_str().ok()).map(SessionId::from);
        match (session, message) {
            (Some(session), message) => self.answer_in_session(session, message, caller, answering).await,
            (None, JsonRpcMessage::Request(request)) if matches!(request.request, ClientRequest::InitializeRequest(_)) => {
                let client = self.proxies.client(conn.address(), &parts.headers);
                self.open_session(request, &caller, client).await
            }
            (None, _) => {
                let why = "name the MCP session in an Mcp-Session-Id header (its initialize answer gave it); a client \
                           without a session speaks protocol 2026-07-28 and names it in each request's _meta";
                refuse(StatusCode::BAD_REQUEST, why)
            }
        }
    }

    /// A message of MCP session `session`: a notification or the client's
    /// answer to a game's question is taken (202); a request is filed in
    /// the session manager's in-flight table while its answer streams
    /// (`McpSessions::admit`), so the same id twice in flight is refused
    /// and a `notifications/cancelled` finds the call it names, then
    /// answered. A client that goes away cancels its request: its answer
    /// stream is dropped (tests/http.rs checks both).
    async fn answer_in_session(&self, session: SessionId, message: ClientJsonRpcMessage, caller: Caller, answering: Answering) -> Response {
        let JsonRpcMessage::Request(request) = message else {
            if !self.sessions.accept(&session, message) {
                return no_such_session(&session);
            }
            return whole(StatusCode::ACCEPTED, "application/json", Bytes::new());
        };
        let Some(in_flight) = self.sessions.admit(session.clone(), request.id.clone()) else {
            let why = "this request id is already in flight in this session; give each request its own id";
            return json_answer(StatusCode::CONFLICT, jsonrpc::error_reply(serde_json::Value::Null, -32600, why.into()));
        };
        match self.sessions.answer(&session, request, caller, in_flight.cancel()).await {
            Some(answered) => self.respond(answered, Some(in_flight), answering),
            None => no_such_session(&session),
        }
    }

    /// An `initialize` without a session opens one, within
    /// `limits.max_mcp_sessions`: its answer as plain JSON, with the new
    /// session's id.
    async fn open_session(&self, request: JsonRpcRequest<ClientRequest>, caller: &Caller, client: std::net::IpAddr) -> Response {
        // A caller's share of the table: its token's, else its address's.
        let (owner, share): (Option<String>, Arc<str>) = match caller {
            Caller::Token(name) => (Some(name.clone()), format!("token {name}").into()),
            _ => (None, client.to_string().into()),
        };
        if let Err(why) = self.sessions.make_room(&share, self.max_sessions, self.max_sessions_per_caller) {
            return json_answer(StatusCode::SERVICE_UNAVAILABLE, jsonrpc::error_reply(serde_json::Value::Null, -32000, why.to_string()));
        }
        let (id, answer) = self.sessions.open(request, owner, share).await;
        let mut response = json_answer(StatusCode::OK, answer);
        if let Some(id) = id.and_then(|id| HeaderValue::from_str(&id).ok()) {
            response.headers_mut().insert(MCP_SESSION_ID, id);
        }
        response
    }

    /// The gate's answer as the response: plain JSON, or an event stream
    /// that ends when the server stops.
    fn respond(&self, answered: Answered, in_flight: Option<Admitted>, answering: Answering) -> Response {
        match answered {
            Answered::Json(Some(body)) => json_answer(StatusCode::OK, body),
            // Cancelled: an event stream with no event, as the other route's would be.
            Answered::Json(None) => whole(StatusCode::OK, "text/event-stream", Bytes::new()),
            Answered::Events(events) => {
                let events = events.take_until(self.stopping.clone().cancelled_owned());
                track(event_stream(events), in_flight, answering)
            }
        }
    }
}

/// The response, with its body holding what must last as long as it streams.
fn track(response: Response, in_flight: Option<Admitted>, answering: Answering) -> Response {
    let held = StreamHolds { _in_flight: in_flight, _answering: answering };
    response.map(|inner| Tracked { inner, held: Some(held) }.boxed_unsync())
}

/// What a streaming answer holds: its request's place in the in-flight
/// table, and its connection's mark as answering.
struct StreamHolds {
    _in_flight: Option<Admitted>,
    _answering: Answering,
}

/// An answer's body that lets go of what it holds when it ends (or is
/// dropped: the client went away).
struct Tracked<B> {
    inner: B,
    held: Option<StreamHolds>,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let next = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = next {
            self.held = None;
        }
        next
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The token a loopback server without issued tokens accepts as its own
/// user's (caller `local`), and the file that keeps it: read back at every
/// start, so a client's URL and games stay the same; created (readable by
/// this user only) the first time.
fn local_token() -> Result<(String, std::path::PathBuf)> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = crate::store::data_dir();
    let file = dir.join("local-http-token");
    if let Ok(token) = std::fs::read_to_string(&file).map(|t| t.trim().to_string())
        && !token.is_empty()
    {
        return Ok((token, file));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let token = format!("ludus_{}", uuid::Uuid::new_v4().simple());
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&file)
        .with_context(|| format!("writing the local token to {}", file.display()))?;
    out.write_all(token.as_bytes()).with_context(|| format!("writing the local token to {}", file.display()))?;
    Ok((token, file))
}

/// A listening socket whose queue of connections not yet accepted is as long
/// as the system allows (`net.core.somaxconn`): a burst of clients connecting
/// at once would overflow a short one, and a client whose connection was
/// dropped there waits a whole second for its retry.
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok().and_then(|s| s.trim().parse().ok());
    socket.listen(somaxconn.unwrap_or(4096))
}

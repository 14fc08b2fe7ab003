//! MCP sessions over HTTP: a table of rmcp's local sessions, with tool
//! calls, pings and the requests that only read answered on the direct
//! lane, and idle expiry done here.
//!
//! The table is ours (rmcp's `SessionManager` trait, which it offers for
//! sessions kept elsewhere): each entry holds rmcp's handle to the
//! session's worker, which still runs `initialize` and subscriptions, with
//! what Ludus keeps beside it (last use, the token that opened it) under
//! the same lock. A session's tool call, ping, logging level, list,
//! resource read, prompt or completion does not reach it: the gate hands
//! it to `McpSessions::answer`, which runs it in the connection's own thread
//! (`Ludus::answer_directly`) and answers as plain JSON when nothing is
//! sent before the answer (and, for a tool call or ping, the session's
//! streams are not resumable), or as a stream of events (progress, log
//! lines and questions first, then the answer) that the gate writes. Only
//! a request the gate leaves to rmcp's checks (one naming protocol
//! 2026-07-28) comes back here through rmcp's `create_stream`, to the same
//! lane.
//!
//! Expiry is here because rmcp's session worker does not see the calls:
//! its own idle timer would close a session that is busy on the direct
//! lane.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, JsonRpcRequest, ProtocolVersion, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::streamable_http_server::session::local::{
    EventId, LocalSessionHandle, LocalSessionManagerError, SessionConfig, SessionError, StreamableHttpMessageReceiver, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use tokio_util::sync::CancellationToken;

use super::events::{Answered, CallEvents, Events, answered_alone};
use super::guard::CallerNames;
use super::resume::Resumable;
use crate::locking::lock;
use crate::mcp::{Ludus, Peer, caller_in};
use crate::session::Caller;

pub struct McpSessions {
    /// The open sessions.
    open: Mutex<HashMap<SessionId, Open>>,
    /// How rmcp runs each session's worker.
    config: SessionConfig,
    ludus: Ludus,
    idle_limit: Duration,
    in_flight: InFlight,
    /// This server's name (`server_name`): session ids start with it and a
    /// dash, so a proxy in front of several servers routes by them.
    server_name: Option<String>,
    /// Tool-call streams of the sessions whose clients can resume them.
    resumable: Resumable,
    /// Names the callers of sessions that present no token (the gate's).
    names: CallerNames,
    /// A trim of freed memory is due shortly (MCP sessions were closed).
    trim_due: Arc<AtomicBool>,
}

/// One open MCP session.
struct Open {
    /// rmcp's worker for the session: `initialize`, subscriptions, and what
    /// the gate leaves to rmcp.
    worker: LocalSessionHandle,
    last_used: Instant,
    /// With bearer tokens: the token (caller name) that opened it.
    owner: Option<String>,
}

/// Every request of a session whose answer is still streaming, by (session,
/// request id): the HTTP gate admits each one (`McpSessions::admit`, refusing an
/// id already in flight), and a direct-lane call files its cancellation token
/// there, so a `notifications/cancelled` can reach it.
type InFlight = Arc<Mutex<HashMap<(SessionId, String), Option<CancellationToken>>>>;

impl McpSessions {
    /// MCP sessions for `ludus`'s registry that close after `idle_limit` without
    /// a request; the sweep runs on the current runtime for as long as the
    /// returned manager lives.
    pub fn new(ludus: Ludus, idle_limit: Duration, server_name: Option<String>, names: CallerNames) -> Arc<McpSessions> {
        let mut config = SessionConfig::default();
        config.keep_alive = None;
        // No SSE priming events (see `http::mcp_config`).
        config.sse_retry = None;
        let sessions = Arc::new(McpSessions {
            open: Default::default(),
            config,
            ludus,
            idle_limit,
            in_flight: Default::default(),
            server_name,
            resumable: Resumable::default(),
            names,
            trim_due: Arc::default(),
        });
        let weak = Arc::downgrade(&sessions);
        let every = (idle_limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(sessions) = weak.upgrade() else { return };
                sessions.close_idle().await;
            }
        });
        sessions
    }

    pub fn count(&self) -> usize {
        lock(&self.open).len()
    }

    /// Session `id`'s worker, its use noted; an error when it is not open.
    fn worker(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        let mut open = lock(&self.open);
        let session = open.get_mut(id).ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        session.last_used = Instant::now();
        Ok(session.worker.clone())
    }

    /// Enters a request in the in-flight table until the returned guard is
    /// dropped (its answer ended or was abandoned); None when its id is in
    /// flight already in this session (a second answer would take over the
    /// first's stream and leave it unanswered).
    pub fn admit(&self, session: SessionId, request: String) -> Option<Admitted> {
        let key = (session, request);
        let mut table = lock(&self.in_flight);
        if table.contains_key(&key) {
            return None;
        }
        table.insert(key.clone(), None);
        Some(Admitted { table: self.in_flight.clone(), key })
    }

    /// A tool call, ping or request that only reads, of session `id`,
    /// answered here: as plain JSON (one body with its length) when nothing
    /// is sent before its answer (`Ludus::answers_alone`) and, for a tool
    /// call or ping, the session's streams are not resumable (a 2025-11-25
    /// client's calls stream, so that they can be resumed); otherwise as an
    /// event stream, progress and the game's log lines first. The request
    /// back when it is for rmcp's service (another method, or a session
    /// that does not exist, which rmcp refuses). It
    /// must have been admitted (`admit`): a `notifications/cancelled`
    /// finds it there (a cancelled call has no answer), and a client that
    /// goes away drops it, which cancels it.
    pub async fn answer(
        &self,
        id: &SessionId,
        request: JsonRpcRequest<ClientRequest>,
        caller: Caller,
    ) -> Result<Answered, JsonRpcRequest<ClientRequest>> {
        if !self.touch(id) {
            return Err(request);
        }
        if self.resumes(id, &request.request) || !self.ludus.answers_alone(id, &request.request) {
            return self.events(id, request, caller).map(Answered::Events);
        }
        let key = (id.clone(), request.id.to_string());
        let (answered, ct) = answered_alone(&self.ludus, caller, id, request, Peer::Legacy)?;
        if let Some(slot) = lock(&self.in_flight).get_mut(&key) {
            *slot = Some(ct);
        }
        Ok(answered.await)
    }

    /// Notes a use of session `id`; false when it is not open.
    fn touch(&self, id: &SessionId) -> bool {
        lock(&self.open).get_mut(id).map(|session| session.last_used = Instant::now()).is_some()
    }

    /// The token that opened session `id`, when tokens are in use.
    pub fn owner(&self, id: &str) -> Option<String> {
        lock(&self.open).get(id).and_then(|session| session.owner.clone())
    }

    pub fn set_owner(&self, id: &str, token: &str) {
        if let Some(session) = lock(&self.open).get_mut(id) {
            session.owner = Some(token.to_string());
        }
    }

    /// Takes session `id` out of the table and closes its worker; has the
    /// memory it freed handed back soon: glibc keeps what thousands of
    /// deleted sessions freed (about 50 KB each) unless asked, and one trim
    /// covers a burst.
    async fn close(&self, id: &SessionId) -> Result<(), LocalSessionManagerError> {
        let Some(session) = lock(&self.open).remove(id) else { return Ok(()) };
        self.forget(id);
        match session.worker.close().await {
            // Its worker ended already: nothing is left to close.
            Ok(()) | Err(SessionError::SessionServiceTerminated) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Forgets what else is kept of a closed session.
    fn forget(&self, id: &SessionId) {
        self.resumable.forget(id);
        self.ludus.clients().closed(id);
        if !self.trim_due.swap(true, Ordering::Relaxed) {
            let due = self.trim_due.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                due.store(false, Ordering::Relaxed);
                crate::runtime::release_freed_memory_after_sweep(true);
            });
        }
    }

    async fn close_idle(&self) {
        // A table that held many sessions keeps its room unless shrunk.
        shrink(&self.open);
        self.resumable.sweep();
        let idle: Vec<SessionId> = {
            let now = Instant::now();
            let open = lock(&self.open);
            open.iter().filter(|(_, session)| now - session.last_used > self.idle_limit).map(|(id, _)| id.clone()).collect()
        };
        for id in idle {
            tracing::debug!(session = %id, "closing an idle MCP session");
            let _ = self.close(&id).await;
        }
    }

    /// Whether `request` of session `id` answers on a stream it can
    /// resume: a tool call or ping of a session whose streams are
    /// resumable. A request that only reads answers alone, as rmcp's
    /// service answers it.
    fn resumes(&self, id: &SessionId, request: &ClientRequest) -> bool {
        matches!(request, ClientRequest::CallToolRequest(_) | ClientRequest::PingRequest(_)) && self.resumable.holds(id)
    }

    /// A request as its events, resumable when it `resumes`; the request
    /// back when it is for rmcp.
    fn events(
        &self,
        id: &SessionId,
        request: JsonRpcRequest<ClientRequest>,
        caller: Caller,
    ) -> Result<Events, JsonRpcRequest<ClientRequest>> {
        let resumes = self.resumes(id, &request.request);
        let call = self.direct_stream(id, request, caller)?;
        if !resumes {
            return Ok(Box::pin(call));
        }
        Ok(match self.resumable.open(id, call) {
            Ok(resumable) => Box::pin(resumable),
            Err(call) => Box::pin(call),
        })
    }

    /// A request as the events of its call (progress first), filed in
    /// flight so that a cancellation reaches it; the request back when it
    /// is for rmcp.
    fn direct_stream(
        &self,
        id: &SessionId,
        request: JsonRpcRequest<ClientRequest>,
        caller: Caller,
    ) -> Result<CallEvents, JsonRpcRequest<ClientRequest>> {
        let key = (id.clone(), request.id.to_string());
        let (call, ct) = CallEvents::of(&self.ludus, caller, id, request, Peer::Legacy)?;
        // The gate admitted the request; from now on a cancellation reaches it.
        if let Some(slot) = lock(&self.in_flight).get_mut(&key) {
            *slot = Some(ct);
        }
        Ok(call)
    }
}

/// Gives back the room of a table that emptied out.
fn shrink<V>(table: &Mutex<HashMap<SessionId, V>>) {
    let mut table = lock(table);
    if table.capacity() > 64 && table.capacity() > 4 * table.len() {
        table.shrink_to_fit();
    }
}

/// A request in the in-flight table until its answer ends or is dropped.
pub struct Admitted {
    table: InFlight,
    key: (SessionId, String),
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.table).remove(&self.key);
    }
}

impl SessionManager for McpSessions {
    type Error = LocalSessionManagerError;
    type Transport = rmcp::transport::WorkerTransport<rmcp::transport::streamable_http_server::session::local::LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // With a server name, ids start with it and a dash (a proxy routes by them).
        let uuid = uuid::Uuid::new_v4();
        let id: SessionId = match &self.server_name {
            Some(name) => format!("{name}-{}", uuid.simple()).into(),
            None => uuid.to_string().into(),
        };
        let (worker, run) = create_local_session(id.clone(), self.config.clone());
        lock(&self.open).insert(id.clone(), Open { worker, last_used: Instant::now(), owner: None });
        Ok((id, rmcp::transport::WorkerTransport::spawn(run)))
    }

    async fn initialize_session(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let ClientJsonRpcMessage::Request(r) = &message
            && let ClientRequest::InitializeRequest(init) = &r.request
        {
            self.ludus.clients().initialized(id, &init.params.capabilities);
        }
        let answer = self.worker(id)?.initialize(message).await?;
        if let ServerJsonRpcMessage::Response(r) = &answer
            && let ServerResult::InitializeResult(init) = &r.result
            && init.protocol_version >= ProtocolVersion::V_2025_11_25
        {
            self.resumable.admit(id);
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(lock(&self.open).contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.close(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let worker = self.worker(id)?;
        // What the gate does not answer itself (`McpSessions::answer`) but
        // rmcp's checks let through: a request of a session that names a
        // protocol version from 2026-07-28 on in its headers or its
        // `_meta`. The gate filed the caller with the request's HTTP parts.
        let message = match message {
            ClientJsonRpcMessage::Request(request) => {
                let caller = caller_in(request.request.extensions()).unwrap_or_else(|| self.names.of(id));
                match self.events(id, request, caller) {
                    Ok(events) => return Ok(events.left_stream()),
                    Err(request) => ClientJsonRpcMessage::Request(request),
                }
            }
            other => other,
        };
        // rmcp's own: the worker answers on a channel opened for this request.
        let answers = worker.establish_request_wise_channel().await?;
        worker.push_message(message, answers.http_request_id).await?;
        Ok(received(answers).right_stream())
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        let worker = self.worker(id)?;
        // The client answering a game's question (sampling, elicitation).
        if self.ludus.clients().answered(id, &message) {
            return Ok(());
        }
        if let ClientJsonRpcMessage::Notification(n) = &message
            && let ClientNotification::CancelledNotification(c) = &n.notification
            && let Some(request) = &c.params.request_id
            && let Some(Some(ct)) = lock(&self.in_flight).get(&(id.clone(), request.to_string()))
        {
            ct.cancel();
            return Ok(());
        }
        Ok(worker.push_message(message, None).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(received(self.worker(id)?.establish_common_channel().await?))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let worker = self.worker(id)?;
        match self.resumable.resume(id, &last_event_id) {
            Some(call) => Ok(call.left_stream()),
            None => Ok(received(worker.resume(last_event_id.parse::<EventId>()?).await?).right_stream()),
        }
    }
}

/// What rmcp's worker sends on a channel, as a stream.
fn received(mut channel: StreamableHttpMessageReceiver) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    futures_util::stream::poll_fn(move |cx| channel.inner.poll_recv(cx))
}

//! MCP sessions over HTTP: the table of open sessions, each with its own
//! handler (`Ludus`: its subscriptions, what its client can do) and its
//! outbox (`http::outbox`: list changes and resource updates, read by its
//! standalone GET), and idle expiry.
//!
//! Every request of a session is answered here, on the direct lane
//! (`Ludus::answer_directly`), in the connection's own thread: the gate
//! hands it over (`McpSessions::open`, `answer`, `accept`), and its GET
//! and DELETE (`http::standalone`) come to `stream` and `close`.
//! A request is answered as plain JSON when nothing is sent before its
//! answer (and, for a tool call or ping, the session's streams are not
//! resumable), or as a stream of events (progress, log lines and
//! questions first, then the answer) that the gate writes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::SessionId;
use futures_util::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcRequest, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use tokio_util::sync::CancellationToken;

use super::events::{Answered, CallEvents, Event, Events, answered_alone};
use super::guard::CallerNames;
use super::outbox::{Outbox, event_number};
use super::resume::Resumable;
use crate::locking::{lock, shrink_emptied};
use crate::mcp::{Direct, Ludus, Notify, Peer};
use crate::runtime::processes::ProcessBudget;
use crate::session::Caller;

pub struct McpSessions {
    /// The open sessions.
    open: Mutex<HashMap<SessionId, Open>>,
    /// How many of them each share (a token's, an address's) holds. Locked
    /// after `open` where both are.
    held: Mutex<HashMap<Arc<str>, usize>>,
    ludus: Ludus,
    idle_limit: Duration,
    in_flight: InFlight,
    /// This server's name (`server_name`): session ids start with it and a
    /// dash, so a proxy in front of several servers routes by them.
    server_name: Option<String>,
    /// Tool-call streams of the sessions whose clients can resume them.
    resumable: Resumable,
    /// A trim of freed memory is due shortly (MCP sessions were closed).
    trim_due: Arc<AtomicBool>,
    /// The callers of sessions without a token, whose game processes
    /// count in their address's share of the budget.
    names: CallerNames,
    processes: Arc<ProcessBudget>,
}

/// One open MCP session.
struct Open {
    /// Its handler: its subscriptions and list changes go to its outbox.
    /// In an `Arc`: each request takes it out of the table, and a
    /// handler's clone is several.
    handler: Arc<Ludus>,
    outbox: Arc<Outbox>,
    last_used: Instant,
    /// With bearer tokens: the token (caller name) that opened it.
    owner: Option<String>,
    /// Whose share of the table it takes: its token's, else its address's.
    share: Arc<str>,
}

/// Why no MCP session can be opened for a caller now.
#[derive(Debug, thiserror::Error)]
pub enum NoRoom {
    #[error(
        "you already have {open} MCP sessions, each answering a request (limits.max_mcp_sessions_per_caller = {max}); \
         at that limit your longest-idle session is closed for a new one, but none of yours is idle"
    )]
    Caller { open: usize, max: usize },
    #[error(
        "this server already has {open} MCP sessions, each answering a request (limits.max_mcp_sessions); \
         try again in a moment"
    )]
    Server { open: usize },
}

/// Why the session table could not give a GET its stream: the gate
/// answers 404, or an empty stream for an event no stream sent.
#[derive(Debug, thiserror::Error)]
pub enum McpSessionError {
    #[error("no MCP session {0} (it ended, or never existed)")]
    NotFound(SessionId),
    #[error("MCP session {session} has no stream with event {event} to resume (it ended, or was never sent)")]
    NoSuchEvent { session: SessionId, event: String },
}

/// Every request of a session whose answer is still streaming, by (session,
/// request id), with the token that cancels it: the HTTP gate admits each
/// one (`McpSessions::admit`, refusing an id already in flight), so a
/// `notifications/cancelled` can reach it.
type InFlight = Arc<Mutex<HashMap<(SessionId, RequestId), CancellationToken>>>;

impl McpSessions {
    /// MCP sessions for `ludus`'s registry that close after `idle_limit` without
    /// a request; the sweep runs on the current runtime for as long as the
    /// returned manager lives.
    pub fn new(
        ludus: Ludus,
        idle_limit: Duration,
        server_name: Option<String>,
        names: CallerNames,
        processes: Arc<ProcessBudget>,
    ) -> Arc<McpSessions> {
        let sessions = Arc::new(McpSessions {
            open: Default::default(),
            held: Default::default(),
            ludus,
            idle_limit,
            in_flight: Default::default(),
            server_name,
            resumable: Resumable::default(),
            trim_due: Arc::default(),
            names,
            processes,
        });
        let weak = Arc::downgrade(&sessions);
        let every = (idle_limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(sessions) = weak.upgrade() else { return };
                sessions.close_idle();
            }
        });
        sessions
    }

    /// Opens a session with its `initialize` for the caller whose token is
    /// `owner` (if tokens are in use): the session's id, and the answer as
    /// JSON. No id when the answer is an error (no protocol version agreed
    /// on): then no session is kept.
    pub async fn open(
        &self,
        request: JsonRpcRequest<ClientRequest>,
        owner: Option<String>,
        share: Arc<str>,
    ) -> (Option<SessionId>, Vec<u8>) {
        let id = self.create(owner, share);
        let answer = self.initialize(&id, request).await;
        let opened = matches!(answer, Direct::Result(..));
        (opened.then_some(id), answer.into_line(Peer::Legacy))
    }

    /// A new session's entry, not yet initialized.
    fn create(&self, owner: Option<String>, share: Arc<str>) -> SessionId {
        // With a server name, ids start with it and a dash (a proxy routes by them).
        let uuid = uuid::Uuid::new_v4();
        let id: SessionId = match &self.server_name {
            Some(name) => format!("{name}-{}", uuid.simple()).into(),
            None => uuid.to_string().into(),
        };
        let outbox = Arc::new(Outbox::default());
        let to_outbox = outbox.clone();
        let handler = Arc::new(self.ludus.another().with_outbox(Arc::new(move |m| to_outbox.send(m))));
        if owner.is_none() {
            self.processes.count_as(self.names.of(&id).name(), &share);
        }
        *lock(&self.held).entry(share.clone()).or_default() += 1;
        let open = Open { handler, outbox, last_used: Instant::now(), owner, share };
        lock(&self.open).insert(id.clone(), open);
        id
    }

    /// Session `id`'s answer to its `initialize`; its tool calls stream,
    /// so that they can be resumed, when it agreed on 2025-11-25 or later.
    /// A session whose answer is an error (no version agreed on) is closed
    /// again.
    async fn initialize(&self, id: &SessionId, request: JsonRpcRequest<ClientRequest>) -> Direct {
        let Some(handler) = self.touch(id) else {
            let why = rmcp::ErrorData::invalid_request(McpSessionError::NotFound(id.clone()).to_string(), None);
            return Direct::Message(ServerJsonRpcMessage::error(why, Some(request.id)));
        };
        let answer = handler.answer_directly(None, id, request, CancellationToken::new(), dropped()).await;
        match &answer {
            Direct::Result(_, ServerResult::InitializeResult(init)) if init.protocol_version >= ProtocolVersion::V_2025_11_25 => {
                self.resumable.admit(id)
            }
            Direct::Result(..) => {}
            _ => {
                self.close(id);
            }
        }
        answer
    }

    /// Enters a request in the in-flight table until the returned guard is
    /// dropped (its answer ended or was abandoned); None when its id is in
    /// flight already in this session (a second answer would take over the
    /// first's stream and leave it unanswered).
    pub fn admit(&self, session: SessionId, request: RequestId) -> Option<Admitted> {
        let key = (session, request);
        let cancel = CancellationToken::new();
        let mut table = lock(&self.in_flight);
        if table.contains_key(&key) {
            return None;
        }
        table.insert(key.clone(), cancel.clone());
        Some(Admitted { table: self.in_flight.clone(), key, cancel })
    }

    /// The token that cancels admitted request `request` of session `id`
    /// (a new one, cancelling nothing, when it was not admitted).
    fn cancel_of(&self, id: &SessionId, request: &RequestId) -> CancellationToken {
        lock(&self.in_flight).get(&(id.clone(), request.clone())).cloned().unwrap_or_default()
    }

    /// A request of session `id`, answered: as plain JSON (one body with
    /// its length) when nothing is sent before its answer
    /// (`Ludus::answers_alone`) and, for a tool call or ping, the
    /// session's streams are not resumable (a 2025-11-25 client's calls
    /// stream, so that they can be resumed); otherwise as an event stream,
    /// progress and the game's log lines first. None when the session is
    /// not open (the gate answers 404). It must have
    /// been admitted (`admit`), and `cancel` is its token: a
    /// `notifications/cancelled` finds it there (a cancelled call has no
    /// answer), and a client that goes away drops it, which cancels it.
    pub async fn answer(
        &self,
        id: &SessionId,
        request: JsonRpcRequest<ClientRequest>,
        caller: Caller,
        cancel: CancellationToken,
    ) -> Option<Answered> {
        let handler = self.touch(id)?;
        if self.resumes(id, &request.request) || !handler.answers_alone(id, &request.request) {
            return Some(Answered::Events(self.events(&handler, id, request, caller, cancel)));
        }
        Some(answered_alone(&handler, caller, id, request, Peer::Legacy, cancel).await)
    }

    /// A notification of session `id`, or its client's answer to a game's
    /// question (sampling, elicitation); false when there is no such
    /// session.
    pub fn accept(&self, id: &SessionId, message: ClientJsonRpcMessage) -> bool {
        let Some(handler) = self.touch(id) else { return false };
        if handler.clients().answered(id, &message) {
            return true;
        }
        let ClientJsonRpcMessage::Notification(n) = &message else { return true };
        match &n.notification {
            ClientNotification::InitializedNotification(_) => handler.initialized(),
            ClientNotification::CancelledNotification(c) => {
                if let Some(request) = &c.params.request_id {
                    self.cancel_of(id, request).cancel();
                }
            }
            // The client's roots or progress: nothing here depends on them.
            _ => {}
        }
        true
    }

    /// Session `id`'s handler, its use noted; None when it is not open.
    fn touch(&self, id: &SessionId) -> Option<Arc<Ludus>> {
        let mut open = lock(&self.open);
        let session = open.get_mut(id)?;
        session.last_used = Instant::now();
        Some(session.handler.clone())
    }

    /// What session `id`'s GET is sent: its standalone stream (list
    /// changes, resource updates: `http::outbox`); or, naming the `last`
    /// event its client saw, the rest of the stream that sent it (a tool
    /// call's resumable stream, or the standalone stream's kept events).
    pub fn stream(&self, id: &SessionId, last: Option<&str>) -> Result<Events, McpSessionError> {
        let Some(last) = last else { return Ok(Box::pin(self.listen(id, None)?)) };
        if let Some(call) = self.resumable.resume(id, last) {
            return Ok(Box::pin(call));
        }
        match event_number(last) {
            Some(n) => Ok(Box::pin(self.listen(id, Some(n))?)),
            None => Err(McpSessionError::NoSuchEvent { session: id.clone(), event: last.to_string() }),
        }
    }

    /// The standalone stream of session `id` (`http::outbox`): the kept
    /// events after `last` first, when it resumes.
    fn listen(&self, id: &SessionId, last: Option<u64>) -> Result<impl Stream<Item = Event> + use<>, McpSessionError> {
        let outbox = lock(&self.open).get(id).map(|session| session.outbox.clone());
        Ok(outbox.ok_or_else(|| McpSessionError::NotFound(id.clone()))?.listen(last))
    }

    pub fn is_open(&self, id: &SessionId) -> bool {
        lock(&self.open).contains_key(id)
    }

    /// The token that opened session `id`, when tokens are in use.
    pub fn owner(&self, id: &str) -> Option<String> {
        lock(&self.open).get(id).and_then(|session| session.owner.clone())
    }

    /// Takes session `id` out of the table and ends what served only it
    /// (its subscriptions, list changes, GET streams); has the memory it
    /// freed handed back soon: glibc keeps what thousands of deleted
    /// sessions freed unless asked, and one trim covers a burst. False when
    /// it was not open.
    pub fn close(&self, id: &SessionId) -> bool {
        let Some(session) = ({
            let mut open = lock(&self.open);
            let removed = open.remove(id);
            shrink_emptied(&mut open);
            removed
        }) else {
            return false;
        };
        let mut held = lock(&self.held);
        if let Some(n) = held.get_mut(&session.share) {
            *n -= 1;
            if *n == 0 {
                held.remove(&session.share);
            }
        }
        drop(held);
        session.handler.close();
        if session.owner.is_none() {
            self.processes.forget(self.names.of(id).name());
        }
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
        true
    }

    /// Makes room for a new session of `share` (a token's or an address's):
    /// at its own limit its longest-idle session closes; at the server's,
    /// the longest-idle session of whoever holds the most. A session
    /// answering a request is never closed for another, so one caller can
    /// fill neither the table nor another caller's place in it.
    pub fn make_room(&self, share: &str, max_total: usize, max_share: usize) -> Result<(), NoRoom> {
        let mine = lock(&self.held).get(share).copied().unwrap_or(0);
        // The common case, below both caps, looks at no other session.
        if mine < max_share && lock(&self.open).len() < max_total {
            return Ok(());
        }
        let victim = {
            let open = lock(&self.open);
            let held = lock(&self.held);
            let in_flight = lock(&self.in_flight);
            let busy: std::collections::HashSet<&SessionId> = in_flight.keys().map(|(session, _)| session).collect();
            let idle = open.iter().filter(|(id, _)| !busy.contains(id));
            if mine >= max_share {
                let oldest = idle.filter(|(_, s)| &*s.share == share).min_by_key(|(_, s)| s.last_used);
                Some(oldest.map(|(id, _)| id.clone()).ok_or(NoRoom::Caller { open: mine, max: max_share })?)
            } else if open.len() >= max_total {
                let most = idle.max_by_key(|(_, s)| (held.get(&s.share).copied().unwrap_or(0), std::cmp::Reverse(s.last_used)));
                Some(most.map(|(id, _)| id.clone()).ok_or(NoRoom::Server { open: open.len() })?)
            } else {
                None
            }
        };
        if let Some(id) = victim {
            tracing::info!(session = %id, caller = share, "closing an idle MCP session to make room for a new one");
            self.close(&id);
        }
        Ok(())
    }

    fn close_idle(&self) {
        self.resumable.sweep();
        let idle: Vec<SessionId> = {
            let now = Instant::now();
            let open = lock(&self.open);
            open.iter().filter(|(_, session)| now - session.last_used > self.idle_limit).map(|(id, _)| id.clone()).collect()
        };
        for id in idle {
            tracing::debug!(session = %id, "closing an idle MCP session");
            self.close(&id);
        }
    }

    /// Whether `request` of session `id` answers on a stream it can
    /// resume: a tool call or ping of a session whose streams are
    /// resumable. A request that only reads answers alone, as rmcp's
    /// service answers it.
    fn resumes(&self, id: &SessionId, request: &ClientRequest) -> bool {
        matches!(request, ClientRequest::CallToolRequest(_) | ClientRequest::PingRequest(_)) && self.resumable.holds(id)
    }

    /// A request as its events (progress first), resumable when it
    /// `resumes`, cancelled by `cancel` (its token in flight).
    fn events(
        &self,
        handler: &Ludus,
        id: &SessionId,
        request: JsonRpcRequest<ClientRequest>,
        caller: Caller,
        cancel: CancellationToken,
    ) -> Events {
        let resumes = self.resumes(id, &request.request);
        let call = CallEvents::of(handler, caller, id, request, Peer::Legacy, cancel);
        if !resumes {
            return Box::pin(call);
        }
        match self.resumable.open(id, call) {
            Ok(resumable) => Box::pin(resumable),
            Err(call) => Box::pin(call),
        }
    }
}

/// Where what an answer sent alone would send goes: nowhere (`initialize` sends nothing).
fn dropped() -> Notify {
    Arc::new(|m| tracing::debug!("a message sent while answering `initialize` is dropped: {m:?}"))
}

/// A request in the in-flight table until its answer ends or is dropped.
pub struct Admitted {
    table: InFlight,
    key: (SessionId, RequestId),
    cancel: CancellationToken,
}

impl Admitted {
    /// The token that cancels the request (`notifications/cancelled`).
    pub fn cancel(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.table).remove(&self.key);
    }
}

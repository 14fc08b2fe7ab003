//! Requests to the client on a game's behalf (`ludus:plugin/client`):
//! sampling and elicitation go out on the tool call's own stream, as the
//! protocol asks of requests made while serving a request, and the client's
//! response, which arrives as a message of its own, is routed back to the
//! waiting call by its id. A response is accepted only from the transport
//! session the request went to.
//!
//! What each client declared at `initialize` is kept per transport session
//! (an MCP session over HTTP, the one client over stdio) until it closes.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, CustomRequest, ProgressNotification, ProgressNotificationParam, ProgressToken, RequestId,
    ServerJsonRpcMessage, ServerRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Notify;
use crate::capability::{Ask, ClientLink};
use crate::locking::lock;

/// What a client may be asked, by transport session.
static DECLARED: LazyLock<Mutex<HashMap<String, Declared>>> = LazyLock::new(Default::default);

/// Requests sent and not yet answered, by id: their transport session and
/// where the answer goes.
static WAITING: LazyLock<Mutex<HashMap<String, Waiting>>> = LazyLock::new(Default::default);

struct Waiting {
    session: String,
    to: Sender<Result<Value, String>>,
    since: Instant,
}

/// A request unanswered this long has long been given up by its call (the
/// longest wait is far shorter): it is dropped when the next one is sent.
const FORGOTTEN: Duration = Duration::from_secs(3600);

#[derive(Clone, Copy, Default)]
struct Declared {
    sampling: bool,
    elicitation: bool,
}

/// The client of transport session `session` said what it can at `initialize`.
pub fn initialized(session: &str, capabilities: &ClientCapabilities) {
    let declared = Declared { sampling: capabilities.sampling.is_some(), elicitation: capabilities.elicitation.is_some() };
    lock(&DECLARED).insert(session.to_string(), declared);
}

/// The transport session closed: what it declared is forgotten and its
/// unanswered requests fail (their senders are dropped).
pub fn closed(session: &str) {
    lock(&DECLARED).remove(session);
    lock(&WAITING).retain(|_, w| w.session != session);
}

/// A message from the client of `session`: true when it answered one of our
/// requests (and is consumed here), false when it is for someone else.
pub fn answered(session: &str, message: &ClientJsonRpcMessage) -> bool {
    let (id, answer) = match message {
        ClientJsonRpcMessage::Response(r) => (&r.id, Ok(serde_json::to_value(&r.result).unwrap_or_default())),
        ClientJsonRpcMessage::Error(e) => match &e.id {
            Some(id) => (id, Err(format!("the client refused: {} (code {})", e.error.message, e.error.code.0))),
            None => return false,
        },
        _ => return false,
    };
    let mut waiting = lock(&WAITING);
    let key = id.to_string();
    match waiting.get(&key) {
        Some(w) if w.session == session => {
            let w = waiting.remove(&key).expect("present");
            // The call may have stopped waiting meanwhile.
            let _ = w.to.send(answer);
            true
        }
        _ => false,
    }
}

/// The client of one tool call.
pub struct Link {
    session: String,
    notify: Notify,
    progress: Option<ProgressToken>,
    cancelled: CancellationToken,
}

impl Link {
    pub fn new(session: &str, notify: Notify, progress: Option<ProgressToken>, cancelled: CancellationToken) -> Arc<Link> {
        Arc::new(Link { session: session.to_string(), notify, progress, cancelled })
    }
}

impl ClientLink for Link {
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress else { return };
        let mut p = ProgressNotificationParam::new(token.clone(), done);
        p.total = total;
        p.message = message;
        (self.notify)(ServerJsonRpcMessage::notification(ProgressNotification::new(p).into()));
    }

    fn declares(&self, ask: Ask) -> bool {
        let declared = lock(&DECLARED).get(&self.session).copied().unwrap_or_default();
        match ask {
            Ask::Sampling => declared.sampling,
            Ask::Elicitation => declared.elicitation,
        }
    }

    fn send(&self, ask: Ask, params: Value) -> Result<Receiver<Result<Value, String>>, String> {
        let id = RequestId::String(format!("ludus-{}", uuid::Uuid::new_v4().simple()).into());
        let (to, from) = channel();
        let mut waiting = lock(&WAITING);
        waiting.retain(|_, w| w.since.elapsed() < FORGOTTEN);
        waiting.insert(id.to_string(), Waiting { session: self.session.clone(), to, since: Instant::now() });
        drop(waiting);
        // Sent as written: rmcp's own types would re-shape a form's schema.
        let request = ServerRequest::CustomRequest(CustomRequest::new(ask.method(), Some(params)));
        (self.notify)(ServerJsonRpcMessage::request(request, id));
        Ok(from)
    }

    fn cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }
}

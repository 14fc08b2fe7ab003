//! Requests to the client on a game's behalf (`ludus:plugin/client`):
//! sampling and elicitation go out on the tool call's own stream, as the
//! protocol asks of requests made while serving a request, and the client's
//! response, which arrives as a message of its own, is routed back to the
//! waiting call by its id. A response is accepted only from the transport
//! session the request went to.
//!
//! What each client declared at `initialize`, and the log level it set, is
//! kept per transport session (an MCP session over HTTP, the one client over
//! stdio) until it closes, in the server's [`Clients`].

// The log level a client sets is MCP logging's, which rmcp marks deprecated
// (see `logging`); the clients Ludus serves use it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, CustomRequest, LoggingLevel, ProgressNotification, ProgressNotificationParam, ProgressToken,
    RequestId, ServerJsonRpcMessage, ServerRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Notify;
use crate::capability::{Ask, ClientLink};
use crate::locking::{lock, shrink_emptied};

/// The clients of one server: what each transport session declared and
/// chose, and the requests sent to them and not yet answered. Each table
/// under its own lock; an entry lives as long as its transport session.
#[derive(Default)]
pub struct Clients {
    /// What each client said at `initialize` and chose since, by transport session.
    declared: Mutex<HashMap<String, Declared>>,
    /// Requests sent and not yet answered, by id: their transport session
    /// and where the answer goes.
    waiting: Arc<Mutex<HashMap<String, Waiting>>>,
}

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
    /// Set by `logging/setLevel`; info until then.
    log_level: Option<LoggingLevel>,
}

impl Clients {
    /// The client of transport session `session` said what it can at `initialize`.
    pub fn initialized(&self, session: &str, capabilities: &ClientCapabilities) {
        let mut declared = lock(&self.declared);
        let d = declared.entry(session.to_string()).or_default();
        d.sampling = capabilities.sampling.is_some();
        d.elicitation = capabilities.elicitation.is_some();
    }

    /// `logging/setLevel` from the client of `session`.
    pub fn set_log_level(&self, session: &str, level: LoggingLevel) {
        lock(&self.declared).entry(session.to_string()).or_default().log_level = Some(level);
    }

    /// The level the client of `session` set, if it set one.
    pub fn log_level(&self, session: &str) -> Option<LoggingLevel> {
        lock(&self.declared).get(session).and_then(|d| d.log_level)
    }

    /// The transport session closed: what it declared is forgotten and its
    /// unanswered requests fail (their senders are dropped).
    pub fn closed(&self, session: &str) {
        let mut declared = lock(&self.declared);
        declared.remove(session);
        shrink_emptied(&mut declared);
        drop(declared);
        lock(&self.waiting).retain(|_, w| w.session != session);
    }

    /// A message from the client of `session`: true when it answered one of
    /// our requests (and is consumed here), false when it is for someone else.
    pub fn answered(&self, session: &str, message: &ClientJsonRpcMessage) -> bool {
        let (id, answer) = match message {
            ClientJsonRpcMessage::Response(r) => (&r.id, Ok(serde_json::to_value(&r.result).unwrap_or_default())),
            ClientJsonRpcMessage::Error(e) => match &e.id {
                Some(id) => (id, Err(format!("the client refused: {} (code {})", e.error.message, e.error.code.0))),
                None => return false,
            },
            _ => return false,
        };
        let mut waiting = lock(&self.waiting);
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

    /// The client of one tool call made in transport session `session`.
    pub fn link(&self, session: &str, notify: Notify, progress: Option<ProgressToken>, cancelled: CancellationToken) -> Arc<Link> {
        let declared = lock(&self.declared).get(session).copied().unwrap_or_default();
        Arc::new(Link { session: session.to_string(), declared, waiting: self.waiting.clone(), notify, progress, cancelled })
    }
}

/// The client of one tool call.
pub struct Link {
    session: String,
    /// What the client declared when the call began.
    declared: Declared,
    waiting: Arc<Mutex<HashMap<String, Waiting>>>,
    notify: Notify,
    progress: Option<ProgressToken>,
    cancelled: CancellationToken,
}

impl Link {
    /// The log level the client had set when the call began.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.declared.log_level
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
        // A stateless request (protocol 2026-07-28) has no session for the
        // client's answer to come back in.
        !self.session.is_empty()
            && match ask {
                Ask::Sampling => self.declared.sampling,
                Ask::Elicitation => self.declared.elicitation,
            }
    }

    fn why_not(&self, ask: Ask) -> Option<String> {
        if self.session.is_empty() {
            let why = format!(
                "a client without an MCP session cannot be asked during a call (protocol 2026-07-28 has the server ask no \
                 questions); open a session with `initialize` and declare `{}`",
                ask.capability()
            );
            return Some(why);
        }
        (!self.declares(ask)).then(|| ask.undeclared())
    }

    fn send(&self, ask: Ask, params: Value) -> Result<Receiver<Result<Value, String>>, String> {
        let id = RequestId::String(format!("ludus-{}", uuid::Uuid::new_v4().simple()).into());
        let (to, from) = channel();
        let mut waiting = lock(&self.waiting);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn link(clients: &Clients, session: &str) -> Arc<Link> {
        clients.link(session, Arc::new(|_| {}), None, CancellationToken::new())
    }

    #[test]
    fn what_a_client_chose_lives_as_long_as_its_session() {
        let clients = Clients::default();
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(Default::default());
        clients.initialized("a", &caps);
        clients.set_log_level("a", LoggingLevel::Warning);
        clients.set_log_level("b", LoggingLevel::Debug);
        assert!(link(&clients, "a").declares(Ask::Sampling) && !link(&clients, "a").declares(Ask::Elicitation));
        assert!(!link(&clients, "b").declares(Ask::Sampling));
        assert_eq!((clients.log_level("a"), clients.log_level("b")), (Some(LoggingLevel::Warning), Some(LoggingLevel::Debug)));
        clients.closed("a");
        assert_eq!((clients.log_level("a"), clients.log_level("b")), (None, Some(LoggingLevel::Debug)));
        assert!(!link(&clients, "a").declares(Ask::Sampling));
        assert!(link(&clients, "").why_not(Ask::Elicitation).unwrap().contains("without an MCP session"), "a stateless request");
    }

    #[test]
    fn an_answer_counts_only_from_the_session_asked() {
        let clients = Clients::default();
        let sent = Arc::new(Mutex::new(None));
        let seen = sent.clone();
        let notify: Notify = Arc::new(move |m| *lock(&seen) = Some(m));
        let answers = clients.link("a", notify, None, CancellationToken::new()).send(Ask::Sampling, serde_json::json!({})).unwrap();
        let Some(ServerJsonRpcMessage::Request(request)) = lock(&sent).take() else { panic!("a request went out") };
        let reply: ClientJsonRpcMessage =
            serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": request.id, "result": {"ok": 1}})).unwrap();
        assert!(!clients.answered("b", &reply), "another session cannot answer it");
        assert!(clients.answered("a", &reply));
        assert_eq!(answers.recv().unwrap().unwrap()["ok"], 1);
        assert!(!clients.answered("a", &reply), "answered once");
    }
}

//! The client of a call as the capabilities see it: what it may be asked
//! and how to reach it. The protocol layer implements [`ClientLink`] for
//! each call; `host` carries it in the call's info and `client` uses it.

use std::sync::mpsc::Receiver;

use serde_json::Value;

/// What a client may be asked, when it declared it at `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Sampling,
    Elicitation,
}

impl Ask {
    pub fn method(self) -> &'static str {
        match self {
            Ask::Sampling => "sampling/createMessage",
            Ask::Elicitation => "elicitation/create",
        }
    }
    pub fn capability(self) -> &'static str {
        match self {
            Ask::Sampling => "sampling",
            Ask::Elicitation => "elicitation",
        }
    }
    /// Why a client that did not declare this cannot be asked it.
    pub fn undeclared(self) -> String {
        format!("the client did not declare the `{}` capability, so it cannot be asked", self.capability())
    }
}

/// The client of one call, as the protocol layer reaches it.
pub trait ClientLink: Send + Sync {
    /// A progress notification, if the call asked for progress.
    fn progress(&self, done: f64, total: Option<f64>, message: Option<String>);
    /// Whether the client may be asked `ask` (it declared it at
    /// `initialize`). Asked at every call: cheap.
    fn declares(&self, ask: Ask) -> bool;
    /// Why the client may not be asked `ask`, when it may not.
    fn why_not(&self, ask: Ask) -> Option<String> {
        (!self.declares(ask)).then(|| ask.undeclared())
    }
    /// Sends the request; its answer (the result's JSON, or the error's
    /// message) arrives on the receiver.
    fn send(&self, ask: Ask, params: Value) -> Result<Receiver<Result<Value, String>>, String>;
    /// The call was cancelled (or its client left): stop waiting.
    fn cancelled(&self) -> bool;
}

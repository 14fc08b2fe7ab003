//! Why the sessions layer could not run a call: one type, so that a caller
//! decides by variant and the text is made once, where the call is
//! answered (`mcp::answer`). The texts are the ones players read: each says
//! what was wrong and what to do instead.

use super::SessionError;
use crate::runtime::RunError;

/// The error type of the sessions layer.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// No session has this id.
    #[error("unknown `{param}` {id:?}: no such game session (ids come from the tool that starts a game)")]
    Unknown { param: String, id: String },
    /// The session ended earlier (it expired, crashed or was ended), as `why` says.
    #[error("`{param}` {id} is no longer available: {why}. Start a new game.")]
    Gone { param: String, id: String, why: String },
    /// The id names a game of another plugin.
    #[error("`{param}` {id} belongs to a {is} game, not {not}")]
    OtherGame { param: String, id: String, is: String, not: String },
    /// The session is listed, but its game takes no more calls.
    #[error("this game session has ended: {0}. Start a new game.")]
    Ended(String),
    /// The caller does not play in the session (`joins`: the tool that takes a seat).
    #[error("`{param}` {id} is not one of your game sessions: only its players may {what}.{}", join_hint(.joins.as_deref()))]
    NotYours { param: String, id: String, what: String, joins: Option<String> },
    /// A stateless HTTP request without a token: no game can be its.
    #[error("{}", super::STATELESS_REFUSAL)]
    Stateless,
    /// A seat could not be taken: no code, a wrong one, none open, a replay.
    #[error("{0}")]
    Seat(String),
    /// A limit on sessions: the text names the key that raises it.
    #[error("{0}")]
    Limit(String),
    /// The arguments cannot make this call: one missing or mistyped, or
    /// which game is meant left open.
    #[error("{0}")]
    Arguments(String),
    /// The game runs a version of its plugin that cannot take this call.
    #[error("{0}")]
    Version(String),
    /// The game could not run it: it crashed, would not start, or the store refused.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The plugin has no such thing, or gave what this host cannot read.
    #[error("{0}")]
    Plugin(String),
    /// The client cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server could not run the call (its thread for it failed).
    #[error("internal error running the call: {0}")]
    Internal(#[from] RunError),
}

fn join_hint(joins: Option<&str>) -> String {
    match joins {
        Some(tool) => format!(" To take a free seat, call `{tool}` with the join code its creator hands out."),
        None => String::new(),
    }
}

/// What a guest's work on a blocking thread came to (`runtime::run_guest`):
/// the thread's failure, or the session's.
pub fn ran<T>(outcome: Result<Result<T, SessionError>, RunError>) -> Result<T, Refusal> {
    outcome?.map_err(Refusal::Session)
}

//! What can go wrong in a session's game: one type, so that the session
//! layer decides by variant (an event on a copy that another server has
//! taken over is no failure; a move a shared store did not take is "send it
//! again") and the text is made once, where the call is answered.

use crate::store::StoreError;

/// The error type of a session's instance.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The session has ended (a trap earlier, an expiry, its stored copy gone), with why.
    #[error("this game session has ended: {0}")]
    Ended(String),
    /// The game trapped or ran past a limit in this call; the session has ended.
    #[error("the game session crashed and has ended: {0}")]
    Crashed(String),
    /// The game's component would not start or be rebuilt; the text says why.
    #[error("{0}")]
    Game(String),
    /// A change that a shared store refused to write (another server took the
    /// game over meanwhile): it is not made.
    #[error("the move was not made: {0}; send it again")]
    NotMade(StoreError),
    /// The session store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server could not run the call or event (its thread for it failed).
    #[error(transparent)]
    Run(#[from] crate::runtime::RunError),
    /// An event reached this server's copy of a game that runs on another
    /// server now: it is not delivered, and that is not a failure.
    #[error("the game runs on another server now")]
    Elsewhere,
}

//! What can go wrong in a session store, as one type: the session layer
//! tells a busy lease from a broken store by its variant, and the text is
//! made once, where it is said (a refusal to the player, the server's log,
//! `ludus doctor`).

/// The error type of the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be opened or is not one this build may use; nothing
    /// in it was changed.
    #[error("the session store {store}: {why}")]
    Open { store: String, why: String },
    /// Another Ludus server holds the store's file.
    #[error("the session store {0} is in use by another Ludus server")]
    InUse(String),
    /// The database answered with an error while doing something.
    #[error("{doing}: {source}")]
    Backend { doing: String, source: Box<dyn std::error::Error + Send + Sync> },
    /// Another server held the game's lease for longer than this server waited.
    #[error("game {id} is busy on server {server} (its lease was not given back within {waited_s} s)")]
    Busy { id: String, server: String, waited_s: u64 },
    /// Another server took the game over between this server's lease and its write.
    #[error("game {0} was taken over by another server before this write")]
    TakenOver(String),
    /// A stored record that cannot be read.
    #[error("game {id}'s stored record cannot be read: {why}")]
    Unreadable { id: String, why: String },
    /// A write to a shared store without the game's lease (a bug of the caller).
    #[error("a shared store is written only under the game's lease")]
    NoLease,
}

impl StoreError {
    /// A database error met while `doing` something.
    pub fn backend(doing: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError::Backend { doing: doing.into(), source: Box::new(source) }
    }
}

//! Why a component cannot be loaded as a game: one type for the plugin
//! layer, in complete sentences for the operator (the registry adds the
//! file, `ludus inspect` and the log print it).

/// The error type of loading a plugin.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a component wasmtime can compile.
    #[error("not a valid WebAssembly component (build it for wasm32-wasip2): {0}")]
    NotAComponent(String),
    /// It imports what the host does not grant (`what`: those imports).
    #[error(
        "it imports {what}, which this host does not grant (granted: WASI p2 without files or network, and the \
         ludus:plugin interfaces host, outcome, decisions, seeds, seats, channels, lifecycle, content, client and \
         watchers). Details: {details}"
    )]
    Ungranted { what: String, details: String },
    /// It does not export the game interfaces.
    #[error("it is not a Ludus game: {0}")]
    NotAGame(String),
    /// Its throwaway instance would not start.
    #[error("it failed to start: {0}")]
    Start(String),
    /// A call that describes it (`describe()`, `access.grants()`, …) failed.
    #[error("its {what} failed: {details}")]
    Call { what: &'static str, details: String },
    /// What it declares breaks the plugin contract: a name, a tool, a
    /// parameter, a grant, its docs, or a clash with a game already loaded.
    #[error("{0}")]
    Contract(String),
    /// The host itself could not link its grants.
    #[error("the host could not link its grants: {0}")]
    Host(String),
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Unreadable(String),
    /// The operator turned the game off (`[plugins.NAME] disabled = true`).
    #[error("plugin `{0}` is disabled in the config")]
    Disabled(String),
    /// The operator serves other games (`--games`, `games`).
    #[error("plugin `{0}` is not among the games this server serves (--games, or `games` in the config)")]
    NotServed(String),
}

//! Where game sessions are kept so that they outlive the server process: a
//! session's record ([`Record`]: who plays it, which plugin version runs it,
//! its seed, when it was last changed) and the state its game hands over
//! (`ludus:plugin/durable`). The `session` layer writes a session here after
//! every call that may have changed it, before the call is answered, and
//! reads it back after a restart. Why SQLite and how a write is made
//! durable: docs/design/durability.md.

mod error;
mod redis;
mod sqlite;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use error::StoreError;
pub use redis::{LEASE, RedisStore};
pub use sqlite::SqliteStore;

/// What the host keeps of a session besides the game's own state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub id: String,
    pub plugin: String,
    pub plugin_version: String,
    /// The component's SHA-256: a session continues only on the very build it started on.
    pub plugin_sha256: String,
    /// The seed its creator chose (or the server drew): `seeds.visible`.
    pub seed: u64,
    /// The creator chose the seed (else the server drew it).
    #[serde(default)]
    pub seed_chosen: bool,
    /// The secret mixed into it for everything hidden (`host.seed`): kept
    /// from the players until the game is over. None: the operator let the
    /// creator fix whole seeds, and the seed is the whole seed.
    #[serde(default)]
    pub secret: Option<u64>,
    /// The creator gave the secret (a finished game replayed): nobody may join.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    pub created_by: String,
    pub created_at_ms: u64,
    /// The callers that may play (creator first).
    pub players: Vec<String>,
    pub join_code: Option<String>,
    /// The game said it is over (`lifecycle.game-over`).
    pub over: bool,
    /// The plugin renamed the session (`host.rename-session`); once only.
    pub renamed: bool,
    pub calls: u64,
    /// When a call last changed the session (milliseconds since the epoch):
    /// idle expiry counts from here after a restart.
    pub changed_at_ms: u64,
    /// How long the session may stay idle, as its plugin said when it was written.
    pub idle_timeout_ms: u64,
    /// Each player's last answered decision (`ludus:plugin/decisions`), by
    /// caller: a retry after a restart, or on another server, gets its answer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub last_calls: BTreeMap<String, StoredCall>,
    /// The game's seats as it last told them (games with seats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seats: Vec<crate::records::Seat>,
    /// Where its current game stands, for its result record (`records`).
    #[serde(default)]
    pub standing: crate::records::Standing,
    /// The match of a run it was started for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_match: Option<crate::records::MatchTag>,
}

/// A decision call answered, kept to answer its retry.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StoredCall {
    /// The function (kebab-case, as in WIT).
    pub tool: String,
    /// The decision number it named.
    #[serde(default)]
    pub decision: u64,
    /// Its answer, as the tool's result converts to JSON.
    pub answer: serde_json::Value,
}

impl Record {
    /// The game's whole seed (`host.seed`): its seed with the secret mixed
    /// in, or the seed itself where the operator fixes whole seeds.
    pub fn whole_seed(&self) -> u64 {
        whole_seed(self.seed, self.secret)
    }
}

/// `seed` with `secret` mixed in by SHA-256, so that knowing the seed and
/// everything the game shows says nothing of what it keeps hidden.
pub fn whole_seed(seed: u64, secret: Option<u64>) -> u64 {
    use sha2::{Digest, Sha256};
    let Some(secret) = secret else { return seed };
    let digest =
        Sha256::new().chain_update(b"ludus whole seed").chain_update(seed.to_le_bytes()).chain_update(secret.to_le_bytes()).finalize();
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

impl Record {
    /// Whether it has been idle past its timeout at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.changed_at_ms) > self.idle_timeout_ms
    }
}

/// A place sessions are written to and read back from.
pub trait SessionStore: Send + Sync {
    /// Writes (or replaces) a session: its record and its game's state. A
    /// shared store writes only under the game's `lease`, gives the lease
    /// back with the write, and answers the version written (a local store: 0).
    fn put(&self, record: &Record, state: &[u8], lease: Option<&Lease>) -> Result<u64, StoreError>;
    /// Forgets a session (it ended or expired).
    fn remove(&self, id: &str) -> Result<(), StoreError>;
    /// Every stored session's record (read once at start).
    fn records(&self) -> Result<Vec<Record>, StoreError>;
    /// A stored session's game state.
    fn state(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// A stored session's record (a game out of memory is listed and
    /// rebuilt from it; the table keeps only what it finds games by).
    fn record(&self, id: &str) -> Result<Option<Record>, StoreError>;
    /// Where it is, for logs and `ludus doctor`.
    fn describe(&self) -> String;
    /// The same store, when other servers share it.
    fn shared(&self) -> Option<&dyn SharedStore> {
        None
    }
}

/// A store other servers share: any of them may run a game, one at a time
/// (each call or event under the game's lease), and each learns when
/// another one changed a game.
pub trait SharedStore: Send + Sync {
    /// Takes game `id`'s lease, waiting up to `wait` while another server holds it.
    fn lease(&self, id: &str, wait: Duration) -> Result<Lease, StoreError>;
    /// The version game `id` is stored at (0: not stored).
    fn version(&self, id: &str) -> Result<u64, StoreError>;
    /// Gives the lease back (a write gives it back too; it also expires by
    /// itself, `LEASE` after it was taken).
    fn release(&self, id: &str, lease: &Lease);
    /// A stored game: its record, its state and its version.
    fn load(&self, id: &str) -> Result<Option<Stored>, StoreError>;
    /// The stored games `caller` plays in.
    fn records_of(&self, caller: &str) -> Result<Vec<Record>, StoreError>;
    /// Calls `changed(id, version)`, from a thread of its own, whenever
    /// another server wrote a game.
    fn watch(&self, changed: OnChange);
}

/// What a shared store calls when another server wrote a game: its id and new version.
pub type OnChange = Box<dyn Fn(&str, u64) + Send + Sync>;

/// A game's lease, held by this server for one call or event.
#[derive(Debug)]
pub struct Lease {
    /// Unique and increasing over all leases: stored with each write (`fence`).
    pub token: u64,
    /// The game's stored version when the lease was taken (0: never written).
    pub version: u64,
}

/// A game as a shared store holds it.
pub struct Stored {
    pub record: Record,
    pub state: Vec<u8>,
    pub version: u64,
}

/// Where the operator asked sessions to be kept.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreSpec {
    /// Nowhere: sessions live only in this process (`store = "memory"`).
    Memory,
    /// An SQLite file the operator named.
    File(PathBuf),
    /// The default: `sessions.db` in the data directory.
    Default,
    /// A Redis server that several Ludus servers share (`redis://HOST:PORT`).
    Redis(String),
}

impl StoreSpec {
    pub fn parse(text: &str) -> StoreSpec {
        match text {
            "memory" => StoreSpec::Memory,
            "" | "default" => StoreSpec::Default,
            url if url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("redis+unix://") => {
                StoreSpec::Redis(url.to_string())
            }
            path => StoreSpec::File(PathBuf::from(path)),
        }
    }
}

/// Opens the store the operator chose. The default file falls back to
/// memory when another server already holds it (two stdio clients started
/// by one desktop app each start a server); a file the operator named is
/// an error then, as is any file that is not a Ludus session store.
/// `server` names this server in a shared store's leases.
pub fn open(spec: &StoreSpec, server: &str) -> Result<Option<Box<dyn SessionStore>>, StoreError> {
    let path = match spec {
        StoreSpec::Memory => return Ok(None),
        StoreSpec::Redis(url) => return Ok(Some(Box::new(RedisStore::open(url, server)?))),
        StoreSpec::File(path) => path.clone(),
        StoreSpec::Default => {
            let path = data_dir().join("sessions.db");
            return match SqliteStore::open(&path) {
                Ok(store) => Ok(Some(Box::new(store))),
                Err(e @ StoreError::InUse(_)) => {
                    tracing::warn!("{e}; this server keeps its games in memory only");
                    Ok(None)
                }
                Err(e) => Err(e),
            };
        }
    };
    SqliteStore::open(&path).map(|s| Some(Box::new(s) as Box<dyn SessionStore>))
}

/// `$XDG_DATA_HOME/ludus` or `~/.local/share/ludus` (the current directory
/// when neither is known).
pub fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("ludus")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

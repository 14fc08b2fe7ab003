//! Where game sessions are kept so that they outlive the server process: a
//! session's record ([`Record`]: who plays it, which plugin version runs it,
//! its seed, when it was last changed) and the state its game hands over
//! (`ludus:plugin/durable`). The `session` layer writes a session here after
//! every call that may have changed it, before the call is answered, and
//! reads it back after a restart. Why SQLite and how a write is made
//! durable: docs/design/durability.md.

mod error;
mod group_commit;
mod redis;
mod sqlite;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::records::MatchTag;

pub use error::StoreError;
pub use redis::RedisStore;
pub use sqlite::SqliteStore;

/// What the host keeps of a session besides the game's own state.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
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
    /// The creator gave the secret (a finished game replayed): its hidden
    /// parts are known, and its joiner is told so.
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
    /// The decisions each player answered before its last one, oldest
    /// first (up to `KEPT_ANSWERS` in all with the last): an older
    /// decision resent gets its answer too.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub earlier_calls: BTreeMap<String, Vec<StoredCall>>,
    /// The game's seats as it last told them (games with seats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seats: Vec<crate::records::Seat>,
    /// Where its current game stands, for its result record (`records`).
    #[serde(default)]
    pub standing: crate::records::Standing,
    /// The match of a run it was started for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_match: Option<crate::records::MatchTag>,
    /// The last timer and channel ids the game was given: a rebuilt game
    /// goes on from them, so its log numbers them as one that never left
    /// memory would (and `ludus verify` replays it).
    #[serde(default, skip_serializing_if = "Counters::is_none")]
    pub counters: Counters,
}

/// The ids a session has handed out so far (`Record::counters`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// The last timer id (`host.set-timer`).
    #[serde(default)]
    pub timers: u64,
    /// The last channel id (`channels.open`).
    #[serde(default)]
    pub channels: u32,
}

impl Counters {
    /// None handed out (a puzzle): nothing to store.
    fn is_none(&self) -> bool {
        *self == Counters::default()
    }
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
    /// shared store writes only under the game's `lease`, and answers the
    /// version written (a local store: 0).
    fn put(&self, record: &Record, state: &[u8], lease: Option<&Lease>) -> Result<u64, StoreError>;
    /// Forgets a session (it ended or expired).
    fn remove(&self, id: &str) -> Result<(), StoreError>;
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
    /// The same store, when it indexes its games for the one server that
    /// uses it (a shared store's games are found through [`SharedStore`]).
    fn index(&self) -> Option<&dyn GameIndex> {
        None
    }
}

/// How one server finds the games a store of its own keeps, without
/// keeping anything of them in memory: a game out of memory is found by
/// id (`SessionStore::record`), by player, by match, by expiry.
pub trait GameIndex: Send + Sync {
    /// The ids of the stored games `caller` plays in.
    fn ids_of(&self, caller: &str) -> Result<Vec<String>, StoreError>;
    /// The stored game a run started for `creator` as `tag`.
    fn started_for(&self, tag: &MatchTag, creator: &str) -> Result<Option<String>, StoreError>;
    /// The ids of the stored games idle past their timeout at `now_ms`
    /// (by their last write: a game in memory may have been read since).
    fn expired(&self, now_ms: u64) -> Result<Vec<String>, StoreError>;
    /// Whether game `id` is stored.
    fn contains(&self, id: &str) -> Result<bool, StoreError>;
    /// The stored games whose result record is due (a restart writes them).
    fn due(&self) -> Result<Vec<Record>, StoreError>;
    /// How many games it keeps.
    fn count(&self) -> Result<u64, StoreError>;
}

/// A store other servers share: any of them may run a game, one at a time.
/// The server that plays a game holds its lease until the game goes idle,
/// the server stops, or another server asks for it; it renews the lease as
/// calls come, and each of its writes is fenced by it.
pub trait SharedStore: Send + Sync {
    /// Takes game `id`'s lease for this server, or renews the one it holds
    /// (`token`), waiting up to `wait` while another server holds it; when
    /// `ask`, that server is asked to hand it over (it does once its call
    /// on the game is done).
    fn lease(&self, id: &str, token: Option<u64>, ask: bool, wait: Duration) -> Result<Lease, StoreError>;
    /// Gives the lease up: to the server waiting for it, if one asked, else
    /// to whoever takes it next. It also expires by itself, `LEASE` after
    /// it was last taken or renewed.
    fn release(&self, id: &str, lease: &Lease);
    /// Has every write of game `id` announced to the servers for at least
    /// `how_long` (this server holds calls waiting on it, which another
    /// server's move must wake).
    fn follow(&self, id: &str, how_long: Duration) -> Result<(), StoreError>;
    /// A stored game: its record, its state and its version.
    fn load(&self, id: &str) -> Result<Option<Stored>, StoreError>;
    /// The stored games `caller` plays in.
    fn records_of(&self, caller: &str) -> Result<Vec<Record>, StoreError>;
    /// Calls `notice`, from a thread of its own, whenever another server
    /// wrote a game that is followed, or asks for one this server holds.
    fn watch(&self, notice: OnNotice);
}

/// What a shared store tells a server about the others.
#[derive(Debug, PartialEq)]
pub enum Notice<'a> {
    /// Another server wrote game `id` (one a server follows), which is now at `version`.
    Changed { id: &'a str, version: u64 },
    /// Another server waits for game `id`, whose lease this server holds.
    Wanted { id: &'a str },
}

/// What a shared store calls with each [`Notice`].
pub type OnNotice = Box<dyn Fn(Notice) + Send + Sync>;

/// How long a lease lasts when its server neither renews nor gives it up
/// (it died): the longest a call or event may run under it, with room to
/// spare. A server renews the leases it uses once a third of this has gone.
pub const LEASE: Duration = Duration::from_secs(15);

/// How long before a lease would lapse in the store its holder stops
/// counting on it: room for the two clocks to run apart.
const LEASE_MARGIN: Duration = Duration::from_secs(2);

/// A game's lease, held by this server while it plays the game.
#[derive(Debug)]
pub struct Lease {
    /// Unique over all leases: what makes a write this holder's.
    pub token: u64,
    /// The game's stored version: when the lease was taken, then as each
    /// write under it left it (0: never written).
    pub version: u64,
    /// When it was last taken or renewed, by this server's clock as the
    /// request went out (the store's clock starts it later).
    pub renewed: Instant,
    /// The players last written to the callers' index under it, and when
    /// (a shared store's index of who plays what expires by itself).
    pub indexed: Mutex<Option<(u64, Instant)>>,
}

impl Lease {
    pub fn new(token: u64, version: u64, renewed: Instant) -> Lease {
        Lease { token, version, renewed, indexed: Mutex::new(None) }
    }

    /// Whether it certainly still holds: no other server can have taken it.
    pub fn is_fresh(&self) -> bool {
        self.renewed.elapsed() < LEASE - LEASE_MARGIN
    }

    /// Whether the next call renews it.
    pub fn renewal_due(&self) -> bool {
        self.renewed.elapsed() > LEASE / 3
    }
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
    /// A Redis server that several Ludus servers share (`redis://HOST:PORT`),
    /// or a Redis Cluster (`redis+cluster://HOST:PORT,HOST:PORT…`).
    Redis(String),
}

impl StoreSpec {
    pub fn parse(text: &str) -> StoreSpec {
        match text {
            "memory" => StoreSpec::Memory,
            "" | "default" => StoreSpec::Default,
            url if ["redis://", "rediss://", "redis+unix://", redis::CLUSTER_SCHEME].iter().any(|scheme| url.starts_with(scheme)) => {
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

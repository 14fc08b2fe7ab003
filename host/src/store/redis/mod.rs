//! The store several servers share: Redis (`--store redis://HOST:PORT`).
//! A game is active on one server at a time: that server holds the game's
//! lease while it plays it (renewing it as calls come, giving it up when
//! the game goes idle, the server stops, or another server asks for it),
//! answers reads from memory, and writes each change through in one round
//! trip before answering. The write goes in only while the writer still
//! holds the lease (the check and the write are one Lua script, so a server
//! that stalled past its lease cannot overwrite what the next holder
//! wrote). Each write bumps the game's version; while a server holds calls
//! waiting on a game, the game's writes are announced (pub/sub), so that
//! server wakes them when another one changed it. Why:
//! docs/design/several-servers.md.
//!
//! Keys: a game's keys share its id as their hash tag, so that a Redis
//! Cluster keeps them on one shard and one script may touch them all
//! (`scripts.rs`): `ludus:{id}:game` a hash of `record` (JSON), `state`
//! (the game's bytes), `version`, `server` (its last writer) and `followed`
//! (until when writes are announced), expiring after the game's idle
//! timeout; `ludus:{id}:lease` the holder (`server token`);
//! `ludus:{id}:next` the holder of a server waiting for it. Besides:
//! `ludus:caller:{name}` the ids a caller plays in; `ludus:format` the
//! layout. The connection, to one Redis or a Redis Cluster: `link.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use redis::{Cmd, ConnectionLike, RedisResult, Script};

use super::group_commit::GroupCommit;
use super::{LEASE, Lease, Notice, OnNotice, Record, SessionStore, SharedStore, StoreError, Stored};
use crate::locking::lock;

mod link;
mod scripts;

pub use link::CLUSTER_SCHEME;
use link::{Con, Link};
use scripts::{FOLLOW, GIVE_BACK, TAKE, WRITE, caller_key, game_key, lease_key, millis, next_key};

/// The layout this build writes (`ludus:format`): 2 since a game's keys
/// share its hash tag (1 read `ludus:game:ID` and one lease counter).
const FORMAT: u64 = 2;
/// Where writes are announced: `server version id`.
const CHANGED: &str = "ludus:changed";
/// Where a server hears that another one waits for a game it holds:
/// `ludus:want:SERVER`, the game's id.
const WANT: &str = "ludus:want:";
/// Where a server hears that a lease it asked for was handed to it:
/// `ludus:given:SERVER`.
const GIVEN: &str = "ludus:given:";
/// How long a lease handed to a waiting server lasts until that server
/// takes it up (it tries again as soon as it hears, else within 10 ms).
const HANDED: Duration = Duration::from_secs(2);
/// The longest pause between two tries for a lease another server holds.
const MOST_PAUSE: Duration = Duration::from_millis(10);

/// Rings when a lease this server asked for was handed to it: a call
/// waiting for a game tries again at once instead of at its next pause.
#[derive(Default)]
struct Handed {
    rings: Mutex<u64>,
    rang: Condvar,
}

impl Handed {
    fn rings(&self) -> u64 {
        *lock(&self.rings)
    }

    fn ring(&self) {
        *lock(&self.rings) += 1;
        self.rang.notify_all();
    }

    /// Waits until it rang after `seen` rings, or `pause` has passed.
    fn wait(&self, seen: u64, pause: Duration) {
        let rings = lock(&self.rings);
        let _ = self.rang.wait_timeout_while(rings, pause, |rings| *rings == seen);
    }
}

pub struct RedisStore {
    url: String,
    link: Link,
    /// Connections not in use (one per thread that talks to Redis at once).
    idle: Mutex<Vec<Con>>,
    server: String,
    /// Where lease tokens come from: a random start, then counting, so that
    /// no two leases of this process (or, but for a one in 2^64 chance, of
    /// two servers given one name) are the same.
    tokens: AtomicU64,
    take: Script,
    give_back: Script,
    write: Script,
    follow: Script,
    /// Leases handed to this server (heard by the listener of `watch`).
    handed: Arc<Handed>,
    /// Writes of games (`put`) on their way, together (`group_commit.rs`).
    writes: GroupCommit<redis::Cmd, Result<i64, String>>,
}

impl RedisStore {
    /// Connects to the Redis (or Redis Cluster) at `url` as server
    /// `server`, refusing one whose Ludus keys were laid out by a newer
    /// build, and moving games laid out by an older one to this layout.
    pub fn open(url: &str, server: &str) -> Result<RedisStore, StoreError> {
        let fail = |e: redis::RedisError| StoreError::Open { store: url.to_string(), why: e.to_string() };
        let link = Link::open(url).map_err(fail)?;
        let mut con = link.connect().map_err(fail)?;
        let format: Option<u64> = redis::cmd("GET").arg("ludus:format").query(con.like()).map_err(fail)?;
        match format {
            Some(f) if f > FORMAT => {
                return Err(StoreError::Open {
                    store: url.to_string(),
                    why: format!("it was written by a newer Ludus (layout {f}; this build knows {FORMAT}); it is left as it is"),
                });
            }
            Some(FORMAT) => {}
            Some(_) => relayout(con.like()).map_err(fail)?,
            None => redis::cmd("SET").arg("ludus:format").arg(FORMAT).arg("NX").exec(con.like()).map_err(fail)?,
        }
        Ok(RedisStore {
            url: url.to_string(),
            link,
            idle: Mutex::new(vec![con]),
            server: server.to_string(),
            tokens: AtomicU64::new(uuid::Uuid::new_v4().as_u64_pair().0 >> 1),
            take: Script::new(TAKE),
            give_back: Script::new(GIVE_BACK),
            write: Script::new(WRITE),
            follow: Script::new(FOLLOW),
            handed: Arc::default(),
            writes: GroupCommit::default(),
        })
    }

    /// Runs `f` on an idle connection (a new one when none is idle); a
    /// connection that failed is not reused.
    fn with<T>(&self, f: impl FnOnce(&mut Con) -> RedisResult<T>) -> Result<T, StoreError> {
        let doing = || format!("Redis at {}", self.url);
        let popped = lock(&self.idle).pop();
        let mut con = match popped {
            Some(con) => con,
            None => self.link.connect().map_err(|e| StoreError::backend(doing(), e))?,
        };
        let out = f(&mut con);
        match &out {
            Err(e) if e.is_connection_dropped() || e.is_io_error() || e.is_timeout() => {}
            _ => lock(&self.idle).push(con),
        }
        out.map_err(|e| StoreError::backend(doing(), e))
    }

    fn holder(&self, token: u64) -> String {
        format!("{} {token}", self.server)
    }

    /// Adds the game to its players' index (who plays what, for
    /// `records_of`) when its players changed under this lease, or half its
    /// idle time after it last did: the index expires by itself, and most
    /// writes leave it as it is.
    fn index(&self, record: &Record, lease: &Lease) -> Result<(), StoreError> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        record.players.hash(&mut hasher);
        let players = hasher.finish();
        let idle = Duration::from_millis(record.idle_timeout_ms.max(1));
        let mut indexed = lock(&lease.indexed);
        if indexed.is_some_and(|(said, at)| said == players && at.elapsed() < idle / 2) {
            return Ok(());
        }
        let mut commands = Vec::new();
        for player in &record.players {
            let key = caller_key(player);
            commands.push(redis::cmd("SADD").arg(&key).arg(&record.id).clone());
            commands.push(redis::cmd("PEXPIRE").arg(&key).arg(millis(idle)).arg("GT").clone());
            commands.push(redis::cmd("PEXPIRE").arg(&key).arg(millis(idle)).arg("NX").clone());
        }
        self.with(|con| con.pipeline(commands))?;
        *indexed = Some((players, Instant::now()));
        Ok(())
    }
}

impl RedisStore {
    /// Sends a batch of writes in one round trip (loading the write script
    /// first when Redis lost it, as a restarted Redis has): each write's
    /// answer, in order.
    fn send_writes(&self, batch: Vec<Cmd>) -> Vec<Result<i64, String>> {
        let count = batch.len();
        let mut sent = self.with(|con| con.pipeline(batch.iter().cloned()));
        // A Redis that restarted has lost its scripts: loaded again, the batch goes once more.
        if sent.is_err() && self.with(|con| self.write.load(con.like())).is_ok() {
            sent = self.with(|con| con.pipeline(batch.iter().cloned()));
        }
        match sent {
            Ok(values) => values.into_iter().map(|v| redis::from_redis_value::<i64>(v).map_err(|e| e.to_string())).collect(),
            Err(e) => vec![Err(e.to_string()); count],
        }
    }
}

/// A write that failed, as Redis or the connection said.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

/// Moves the games of layout 1 (`ludus:game:ID`) to this one. Every
/// server of the older build must be stopped first: they read the old keys.
fn relayout(con: &mut dyn ConnectionLike) -> RedisResult<()> {
    let old: Vec<String> = redis::cmd("KEYS").arg("ludus:game:*").query(con)?;
    for key in &old {
        let id = key.trim_start_matches("ludus:game:");
        redis::cmd("RENAMENX").arg(key).arg(game_key(id)).exec(con)?;
    }
    redis::cmd("DEL").arg("ludus:tokens").exec(con)?;
    redis::cmd("SET").arg("ludus:format").arg(FORMAT).exec(con)?;
    tracing::info!(games = old.len(), "the games in Redis were moved to layout {FORMAT}");
    Ok(())
}

impl SessionStore for RedisStore {
    fn put(&self, record: &Record, state: &[u8], lease: Option<&Lease>) -> Result<u64, StoreError> {
        let Some(lease) = lease else { return Err(StoreError::NoLease) };
        let json = serde_json::to_string(record).map_err(|e| StoreError::backend(format!("writing session {}", record.id), e))?;
        let mut write = redis::cmd("EVALSHA");
        write.arg(self.write.get_hash()).arg(2).arg(lease_key(&record.id)).arg(game_key(&record.id));
        write.arg(self.holder(lease.token)).arg(&json).arg(state).arg(lease.version + 1);
        write.arg(record.idle_timeout_ms.max(1)).arg(&self.server).arg(&record.id);
        let version = self.writes.submit(write, |batch| self.send_writes(batch));
        let version =
            version.map_err(|why| StoreError::backend(format!("writing game {} to Redis at {}", record.id, self.url), Failed(why)))?;
        let version = u64::try_from(version).map_err(|_| StoreError::TakenOver(record.id.clone()))?;
        // After the write: a refused write indexes nothing.
        if let Err(e) = self.index(record, lease) {
            tracing::warn!(session = record.id, "indexing a game by its players: {e} (it is listed again after its next write)");
        }
        Ok(version)
    }

    fn remove(&self, id: &str) -> Result<(), StoreError> {
        self.with(|con| redis::cmd("DEL").arg(game_key(id)).arg(lease_key(id)).arg(next_key(id)).exec(con.like()))
    }

    /// Games are looked up by id when a call names them (`load`): another
    /// server may start one at any time, so nothing is read at start.
    fn state(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|con| redis::cmd("HGET").arg(game_key(id)).arg("state").query(con.like()))
    }

    fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let json: Option<String> = self.with(|con| redis::cmd("HGET").arg(game_key(id)).arg("record").query(con.like()))?;
        let Some(json) = json else { return Ok(None) };
        serde_json::from_str(&json).map(Some).map_err(|e| StoreError::Unreadable { id: id.to_string(), why: e.to_string() })
    }

    fn describe(&self) -> String {
        self.url.clone()
    }

    fn shared(&self) -> Option<&dyn SharedStore> {
        Some(self)
    }
}

impl SharedStore for RedisStore {
    fn lease(&self, id: &str, token: Option<u64>, ask: bool, wait: Duration) -> Result<Lease, StoreError> {
        let token = token.unwrap_or_else(|| self.tokens.fetch_add(1, Ordering::Relaxed));
        let holder = self.holder(token);
        let until = Instant::now() + wait;
        let mut pause = Duration::from_millis(1);
        loop {
            let seen = self.handed.rings();
            let sent = Instant::now();
            let (taken, second): (u64, redis::Value) = self.with(|con| {
                self.take
                    .key(lease_key(id))
                    .key(game_key(id))
                    .key(next_key(id))
                    .arg(&holder)
                    .arg(millis(LEASE))
                    .arg(u8::from(ask))
                    .arg(id)
                    .arg(millis(HANDED))
                    .invoke(con.like())
            })?;
            if taken == 1 {
                let version = redis::from_redis_value(second).map_err(|e| StoreError::backend(format!("taking game {id}'s lease"), e))?;
                return Ok(Lease::new(token, version, sent));
            }
            if Instant::now() >= until {
                let holder: String = redis::from_redis_value(second).unwrap_or_default();
                let server = holder.rsplit_once(' ').map_or("another server", |(server, _)| server);
                return Err(StoreError::Busy { id: id.to_string(), server: server.to_string(), waited_s: wait.as_secs() });
            }
            self.handed.wait(seen, pause);
            pause = (pause * 2).min(MOST_PAUSE);
        }
    }

    fn release(&self, id: &str, lease: &Lease) {
        let given = self.with(|con| {
            self.give_back.key(lease_key(id)).key(next_key(id)).arg(self.holder(lease.token)).arg(millis(HANDED)).invoke::<i64>(con.like())
        });
        if let Err(e) = given {
            tracing::warn!(session = id, "giving up a game's lease: {e} (it expires by itself)");
        }
    }

    fn follow(&self, id: &str, how_long: Duration) -> Result<(), StoreError> {
        self.with(|con| self.follow.key(game_key(id)).arg(millis(how_long)).invoke::<i64>(con.like())).map(drop)
    }

    fn load(&self, id: &str) -> Result<Option<Stored>, StoreError> {
        let (record, state, version): (Option<String>, Option<Vec<u8>>, Option<u64>) =
            self.with(|con| redis::cmd("HMGET").arg(game_key(id)).arg("record").arg("state").arg("version").query(con.like()))?;
        let (Some(record), Some(state)) = (record, state) else { return Ok(None) };
        let record = serde_json::from_str(&record).map_err(|e| StoreError::Unreadable { id: id.to_string(), why: e.to_string() })?;
        Ok(Some(Stored { record, state, version: version.unwrap_or(0) }))
    }

    fn records_of(&self, caller: &str) -> Result<Vec<Record>, StoreError> {
        let index = caller_key(caller);
        let ids: Vec<String> = self.with(|con| redis::cmd("SMEMBERS").arg(&index).query(con.like()))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let reads: Vec<Cmd> = ids.iter().map(|id| redis::cmd("HGET").arg(game_key(id)).arg("record").clone()).collect();
        let records = self.with(|con| con.pipeline(reads))?;
        let records: Vec<Option<String>> = records
            .into_iter()
            .map(redis::from_redis_value)
            .collect::<Result<_, _>>()
            .map_err(|e| StoreError::backend(format!("reading {caller}'s games"), e))?;
        let mut out = Vec::new();
        let mut gone = Vec::new();
        for (id, record) in ids.iter().zip(records) {
            match record.map(|r| serde_json::from_str::<Record>(&r)) {
                Some(Ok(r)) => out.push(r),
                Some(Err(e)) => tracing::error!(session = id, "a stored record cannot be read ({e}); it is left out"),
                None => gone.push(id.clone()),
            }
        }
        if !gone.is_empty() {
            let _ = self.with(|con| redis::cmd("SREM").arg(&index).arg(&gone).exec(con.like()));
        }
        Ok(out)
    }

    fn watch(&self, notice: OnNotice) {
        let client = match self.link.listener() {
            Ok(client) => client,
            Err(e) => return tracing::error!("cannot listen to Redis at {}: {e}", self.url),
        };
        let (me, url, handed) = (self.server.clone(), self.url.clone(), self.handed.clone());
        let (wanted, given) = (format!("{WANT}{me}"), format!("{GIVEN}{me}"));
        let listen = move || -> RedisResult<()> {
            let mut con = client.get_connection_with_timeout(Duration::from_secs(5))?;
            let mut sub = con.as_pubsub();
            sub.subscribe(&[CHANGED, wanted.as_str(), given.as_str()])?;
            loop {
                let message = sub.get_message()?;
                if message.get_channel_name() == given {
                    handed.ring();
                    continue;
                }
                let payload: String = message.get_payload()?;
                if message.get_channel_name() == wanted {
                    notice(Notice::Wanted { id: &payload });
                    continue;
                }
                let mut words = payload.splitn(3, ' ');
                let (Some(server), Some(version), Some(id)) = (words.next(), words.next(), words.next()) else { continue };
                if server != me {
                    notice(Notice::Changed { id, version: version.parse().unwrap_or(u64::MAX) });
                }
            }
        };
        let spawned = std::thread::Builder::new().name("ludus-redis-watch".into()).spawn(move || {
            loop {
                if let Err(e) = listen() {
                    tracing::warn!("listening to Redis at {url} for other servers' changes: {e}; trying again in 1 s");
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        if let Err(e) = spawned {
            tracing::error!("cannot start the thread that listens to Redis: {e}");
        }
    }
}

//! The store several servers share: Redis (`--store redis://HOST:PORT`).
//! Any server can run any game, one at a time: a server takes a game's
//! lease for each call or event it runs on it, and its write goes in only
//! while it still holds that lease (the check and the write are one Lua
//! script, so a server that stalled past its lease cannot overwrite what the
//! next holder wrote). Each write bumps the game's version and tells the
//! other servers (pub/sub), so they let go of their stale copy and wake
//! the calls they hold waiting on it. Why this way: docs/design/several-servers.md.
//!
//! Keys (all under `ludus:`): `game:{id}` a hash of `record` (JSON),
//! `state` (the game's bytes), `version`, `fence` (the lease token of the
//! last write) and `server` (its writer), expiring after the game's idle
//! timeout; `lease:{id}`
//! the holder (`server token`); `caller:{name}` the ids a caller plays in;
//! `tokens` the counter lease tokens come from; `format` the layout.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::{Client, Connection, RedisResult, Script};

use super::{Lease, OnChange, Record, SessionStore, SharedStore, StoreError, Stored};
use crate::locking::lock;

/// The layout this build writes (`ludus:format`).
const FORMAT: u64 = 1;
/// Where writes are announced: `server version id`.
const CHANGED: &str = "ludus:changed";
/// How long a lease lasts when its server dies holding it: the longest a
/// call or event may run under it, with room to spare.
pub const LEASE: Duration = Duration::from_secs(15);

pub struct RedisStore {
    url: String,
    client: Client,
    /// Connections not in use (one per thread that talks to Redis at once).
    idle: Mutex<Vec<Connection>>,
    server: String,
    take: Script,
    give_back: Script,
    write: Script,
}

/// Takes the lease if no one holds it: `{token, version}`, or `{0, holder}`.
const TAKE: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder then return {0, holder} end
local token = redis.call('INCR', KEYS[3])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return {token, tonumber(redis.call('HGET', KEYS[2], 'version') or '0')}
";

/// Gives the lease back if it is still this holder's.
const GIVE_BACK: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Writes the game if the lease is still this holder's, and gives the lease
/// back: the game's new version, or -1.
/// ARGV: holder, token, record, state, idle ms, server, id, players...
const WRITE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('HSET', KEYS[2], 'record', ARGV[3], 'state', ARGV[4], 'fence', ARGV[2], 'server', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('DEL', KEYS[1])
for i = 8, #ARGV do
  local index = 'ludus:caller:' .. ARGV[i]
  redis.call('SADD', index, ARGV[7])
  if redis.call('PTTL', index) < tonumber(ARGV[5]) then redis.call('PEXPIRE', index, ARGV[5]) end
end
redis.call('PUBLISH', KEYS[3], ARGV[6] .. ' ' .. version .. ' ' .. ARGV[7])
return version
";

fn game_key(id: &str) -> String {
    format!("ludus:game:{id}")
}

fn lease_key(id: &str) -> String {
    format!("ludus:lease:{id}")
}

impl RedisStore {
    /// Connects to the Redis at `url` as server `server`, refusing one whose
    /// Ludus keys were laid out by a newer build.
    pub fn open(url: &str, server: &str) -> Result<RedisStore, StoreError> {
        let fail = |e: redis::RedisError| StoreError::Open { store: url.to_string(), why: e.to_string() };
        let client = Client::open(url).map_err(fail)?;
        let mut con = client.get_connection_with_timeout(Duration::from_secs(5)).map_err(fail)?;
        let format: Option<u64> = redis::cmd("GET").arg("ludus:format").query(&mut con).map_err(fail)?;
        match format {
            Some(f) if f > FORMAT => {
                return Err(StoreError::Open {
                    store: url.to_string(),
                    why: format!("it was written by a newer Ludus (layout {f}; this build knows {FORMAT}); it is left as it is"),
                });
            }
            Some(_) => {}
            None => redis::cmd("SET").arg("ludus:format").arg(FORMAT).arg("NX").exec(&mut con).map_err(fail)?,
        }
        Ok(RedisStore {
            url: url.to_string(),
            client,
            idle: Mutex::new(vec![con]),
            server: server.to_string(),
            take: Script::new(TAKE),
            give_back: Script::new(GIVE_BACK),
            write: Script::new(WRITE),
        })
    }

    /// Runs `f` on an idle connection (a new one when none is idle); a
    /// connection that failed is not reused.
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> RedisResult<T>) -> Result<T, StoreError> {
        let doing = || format!("Redis at {}", self.url);
        let popped = lock(&self.idle).pop();
        let mut con = match popped {
            Some(con) => con,
            None => self.client.get_connection_with_timeout(Duration::from_secs(5)).map_err(|e| StoreError::backend(doing(), e))?,
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
}

impl SessionStore for RedisStore {
    fn put(&self, record: &Record, state: &[u8], lease: Option<&Lease>) -> Result<u64, StoreError> {
        let Some(lease) = lease else { return Err(StoreError::NoLease) };
        let json = serde_json::to_string(record).map_err(|e| StoreError::backend(format!("writing session {}", record.id), e))?;
        let version: i64 = self.with(|con| {
            let mut call = self.write.key(lease_key(&record.id));
            call.key(game_key(&record.id)).key(CHANGED);
            call.arg(self.holder(lease.token)).arg(lease.token).arg(&json).arg(state);
            call.arg(record.idle_timeout_ms.max(1)).arg(&self.server).arg(&record.id).arg(&record.players);
            call.invoke(con)
        })?;
        u64::try_from(version).map_err(|_| StoreError::TakenOver(record.id.clone()))
    }

    fn remove(&self, id: &str) -> Result<(), StoreError> {
        self.with(|con| redis::cmd("DEL").arg(game_key(id)).exec(con))
    }

    /// Games are looked up by id when a call names them (`load`): another
    /// server may start one at any time, so nothing is read at start.
    fn records(&self) -> Result<Vec<Record>, StoreError> {
        Ok(Vec::new())
    }

    fn state(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with(|con| redis::cmd("HGET").arg(game_key(id)).arg("state").query(con))
    }

    fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let json: Option<String> = self.with(|con| redis::cmd("HGET").arg(game_key(id)).arg("record").query(con))?;
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
    fn lease(&self, id: &str, wait: Duration) -> Result<Lease, StoreError> {
        let until = Instant::now() + wait;
        let mut pause = Duration::from_millis(1);
        loop {
            let (token, second): (u64, redis::Value) = self.with(|con| {
                self.take
                    .key(lease_key(id))
                    .key(game_key(id))
                    .key("ludus:tokens")
                    .arg(&self.server)
                    .arg(LEASE.as_millis() as u64)
                    .invoke(con)
            })?;
            if token > 0 {
                let version = redis::from_redis_value(second).map_err(|e| StoreError::backend(format!("taking game {id}'s lease"), e))?;
                return Ok(Lease { token, version });
            }
            if Instant::now() >= until {
                let holder: String = redis::from_redis_value(second).unwrap_or_default();
                let server = holder.split(' ').next().unwrap_or("another server");
                return Err(StoreError::Busy { id: id.to_string(), server: server.to_string(), waited_s: wait.as_secs() });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    fn version(&self, id: &str) -> Result<u64, StoreError> {
        let version: Option<u64> = self.with(|con| redis::cmd("HGET").arg(game_key(id)).arg("version").query(con))?;
        Ok(version.unwrap_or(0))
    }

    fn release(&self, id: &str, lease: &Lease) {
        if let Err(e) = self.with(|con| self.give_back.key(lease_key(id)).arg(self.holder(lease.token)).invoke::<i64>(con)) {
            tracing::warn!(session = id, "giving back a game's lease: {e} (it expires by itself)");
        }
    }

    fn load(&self, id: &str) -> Result<Option<Stored>, StoreError> {
        let (record, state, version): (Option<String>, Option<Vec<u8>>, Option<u64>) =
            self.with(|con| redis::cmd("HMGET").arg(game_key(id)).arg("record").arg("state").arg("version").query(con))?;
        let (Some(record), Some(state)) = (record, state) else { return Ok(None) };
        let record = serde_json::from_str(&record).map_err(|e| StoreError::Unreadable { id: id.to_string(), why: e.to_string() })?;
        Ok(Some(Stored { record, state, version: version.unwrap_or(0) }))
    }

    fn records_of(&self, caller: &str) -> Result<Vec<Record>, StoreError> {
        let index = format!("ludus:caller:{caller}");
        let ids: Vec<String> = self.with(|con| redis::cmd("SMEMBERS").arg(&index).query(con))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGET").arg(game_key(id)).arg("record");
        }
        let records: Vec<Option<String>> = self.with(|con| pipe.query(con))?;
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
            let _ = self.with(|con| redis::cmd("SREM").arg(&index).arg(&gone).exec(con));
        }
        Ok(out)
    }

    fn watch(&self, changed: OnChange) {
        let (client, me, url) = (self.client.clone(), self.server.clone(), self.url.clone());
        let listen = move || -> RedisResult<()> {
            let mut con = client.get_connection_with_timeout(Duration::from_secs(5))?;
            let mut sub = con.as_pubsub();
            sub.subscribe(CHANGED)?;
            loop {
                let payload: String = sub.get_message()?.get_payload()?;
                let mut words = payload.splitn(3, ' ');
                let (Some(server), Some(version), Some(id)) = (words.next(), words.next(), words.next()) else { continue };
                if server != me {
                    changed(id, version.parse().unwrap_or(u64::MAX));
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

//! Sessions: one game = one session = one component instance
//! (`instance`). This module is the table of live sessions: sessions
//! started, rebuilt from the store, expired and ended. A tool call's way
//! through them is `call` (find the session, run the call to its final
//! answer), one run in the game is `step`, a held call's wait is `wait`;
//! `limits` says what the server takes, `resources` serves resources and
//! prompts. Why: docs/design/sessions.md, "A session's life".

mod call;
mod dormant;
mod ended;
mod idle;
mod instance;
mod limits;
mod refusal;
mod resources;
mod results;
mod shared;
mod step;
mod verify;
mod wait;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

pub use crate::capability::LogSink;
use crate::locking::lock;
use crate::plugin::{Audience, Plugin};
use crate::records::RecordsFile;
pub use crate::runtime::bindings::ludus::plugin::content::Body;
use crate::runtime::run_guest;
use crate::store::{Notice, Record, SessionStore, Stored, now_ms};

pub use call::{Listeners, Plan, Progress, Reply, WaitProgress};
use dormant::{DormantGames, Found};
use ended::EndedSessions;
pub use instance::{Home, Invocation, Names, Run, Seeding, Session, SessionError, SessionInfo};
pub use limits::{SessionLimits, WholeSeeds};
pub use refusal::Refusal;
use refusal::ran;
pub use verify::Verdict;

/// Who makes a call. Sessions belong to callers, so every call has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The one client of a stdio server: the same caller when the server
    /// is started again, so its games continue after a restart.
    Stdio,
    /// An HTTP MCP session. Known until it closes; a reconnecting client is
    /// a new caller.
    Connection(String),
    /// The name of an operator's bearer token: the same caller on every
    /// connection and on stateless requests.
    Token(String),
    /// A stateless HTTP request without a token: nothing ties it to the next.
    Stateless,
}

impl Caller {
    /// The name plugins see (`host.caller`); empty for a stateless request.
    pub fn name(&self) -> &str {
        match self {
            Caller::Connection(name) | Caller::Token(name) => name,
            Caller::Stdio => STDIO_CALLER,
            Caller::Stateless => "",
        }
    }

    /// The bearer token's name, when the caller is known by one.
    pub fn token(&self) -> Option<&str> {
        match self {
            Caller::Token(name) => Some(name),
            _ => None,
        }
    }
}

pub use crate::config::STDIO_CALLER;

/// Why a stateless request without a token cannot start or play a game.
pub const STATELESS_REFUSAL: &str = "this request carries no caller identity (a stateless HTTP request without a bearer \
    token), so no game can be yours: a game it started could not be played by the next request. Connect with the URL \
    the server printed when it started (it ends in `?token=…`), or send `Authorization: Bearer <token>` with a token \
    the operator issued (`ludus token NAME`), or open an MCP session with `initialize`";

/// The plugin build a stored game runs on, as a refusal names it.
fn build_of(record: &Record) -> String {
    let sha = &record.plugin_sha256[..record.plugin_sha256.len().min(12)];
    format!("version {} of {} (component sha256 {sha}…)", record.plugin_version, record.plugin)
}

/// The table of live sessions.
pub struct Sessions {
    live: Mutex<Live>,
    /// Each plugin's instance for tools with role `none`, by plugin name;
    /// remade after a trap or when the plugin's version changed.
    shared: Mutex<HashMap<String, Arc<Session>>>,
    /// Recently ended sessions, to explain "expired" vs "unknown".
    gone: Mutex<EndedSessions>,
    /// Calls held waiting, by caller.
    waits: Mutex<HashMap<String, u64>>,
    /// Where sessions of durable games are kept across restarts (none:
    /// in memory only).
    store: Option<Arc<dyn SessionStore>>,
    /// Sessions not in memory: stored ones not rebuilt since the start,
    /// and games that left memory while idle (`idle`); each rebuilt when a
    /// call first names it. Its table is locked before `live` where both are held.
    dormant: DormantGames,
    /// Games being rebuilt now, each behind its own gate: a second call on
    /// one waits for the first to rebuild it.
    reviving: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Games that left memory since freed heap was last handed back.
    unloaded_since_trim: AtomicUsize,
    /// Where games' result records go (none: the operator keeps none).
    records: Option<Arc<RecordsFile>>,
    limits: SessionLimits,
    rt: tokio::runtime::Handle,
}

/// Live sessions by id, with how many each plugin and each caller runs,
/// kept as sessions come and go: counting them for every new session was a
/// pass over all of them (two string compares each) under this table's lock,
/// which every call takes.
#[derive(Default)]
struct Live {
    by_id: HashMap<String, Arc<Session>>,
    per_plugin: HashMap<String, usize>,
    per_caller: HashMap<String, usize>,
    /// Sessions whose instance maps its data (more memory mappings each).
    mapped: usize,
}

impl Live {
    fn insert(&mut self, s: Arc<Session>) {
        *self.per_plugin.entry(s.plugin.name.clone()).or_default() += 1;
        *self.per_caller.entry(s.created_by.clone()).or_default() += 1;
        self.mapped += usize::from(s.plugin.maps_data);
        if let Some(old) = self.by_id.insert(s.id(), s) {
            self.uncount(&old);
        }
    }

    fn remove(&mut self, id: &str) -> Option<Arc<Session>> {
        let s = self.by_id.remove(id)?;
        self.uncount(&s);
        Some(s)
    }

    /// Forgets a count that reaches zero, so the tables hold only who runs
    /// sessions now (callers come and go with their connections).
    fn uncount(&mut self, s: &Session) {
        self.mapped -= usize::from(s.plugin.maps_data);
        for (counts, key) in [(&mut self.per_plugin, &s.plugin.name), (&mut self.per_caller, &s.created_by)] {
            if let Some(n) = counts.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(key);
                }
            }
        }
    }
}

impl Sessions {
    /// The table, with the sessions `store` holds from an earlier run
    /// waiting to be rebuilt (those idle past their timeout are dropped).
    pub fn new(
        limits: SessionLimits,
        rt: tokio::runtime::Handle,
        store: Option<Box<dyn SessionStore>>,
        records: Option<Arc<RecordsFile>>,
    ) -> Result<Arc<Sessions>, crate::store::StoreError> {
        let store: Option<Arc<dyn SessionStore>> = store.map(Arc::from);
        write_due_records(records.as_deref(), store.as_deref())?;
        let sessions = Arc::new(Sessions {
            live: Mutex::default(),
            shared: Mutex::default(),
            gone: Mutex::default(),
            waits: Mutex::default(),
            dormant: DormantGames::new(store.clone()),
            store,
            reviving: Mutex::default(),
            unloaded_since_trim: AtomicUsize::new(0),
            records,
            limits,
            rt,
        });
        sessions.expire_dormant();
        if let Some(shared) = sessions.store.as_deref().and_then(|s| s.shared()) {
            let table = Arc::downgrade(&sessions);
            shared.watch(Box::new(move |notice| {
                let Some(table) = table.upgrade() else { return };
                match notice {
                    Notice::Changed { id, version } => table.changed_elsewhere(id, version),
                    Notice::Wanted { id } => table.wanted(id),
                }
            }));
        }
        if let Some(store) = &sessions.store {
            tracing::info!(store = store.describe(), sessions = sessions.dormant.len(), "games are kept in the session store");
        }
        Ok(sessions)
    }

    /// Whether sessions of durable games survive a restart here.
    pub fn is_durable(&self) -> bool {
        self.store.is_some()
    }

    pub fn len(&self) -> usize {
        lock(&self.live).by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live sessions per plugin name.
    pub fn count_by_plugin(&self) -> HashMap<String, usize> {
        lock(&self.live).per_plugin.clone()
    }

    /// The sessions `caller` plays in (no one else's: ids, join codes and
    /// what they run are the players' business).
    pub fn list_for(&self, caller: &Caller) -> Vec<SessionInfo> {
        let name = caller.name();
        // Asked before the live table is locked (a store's query is I/O); a
        // store lists the games in memory too, which the live table lists.
        let mut mine = self.dormant.ids_of(name);
        let mut v: Vec<SessionInfo> = {
            let live = lock(&self.live);
            mine.retain(|id| !live.by_id.contains_key(id));
            live.by_id.values().filter(|s| s.is_player(name)).map(|s| s.info()).collect()
        };
        v.extend(mine.iter().filter_map(|id| self.dormant.record(id)).map(|r| SessionInfo::of_stored(&r)));
        if let Some(shared) = self.shared().filter(|_| !name.is_empty()) {
            match shared.records_of(name) {
                Ok(records) => {
                    let here: std::collections::HashSet<String> = v.iter().map(|s| s.id.clone()).collect();
                    v.extend(records.iter().filter(|r| !here.contains(&r.id)).map(SessionInfo::of_stored));
                }
                Err(e) => tracing::warn!("listing a caller's games in the shared store: {e}"),
            }
        }
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// A session's state for a run (`arena`), rebuilt from the store if it
    /// is kept there: whether its game is over, and its join code while a
    /// seat is open; None when it is gone.
    pub async fn planned_state(self: &Arc<Self>, id: &str, plugin: &Arc<Plugin>) -> Option<(bool, Option<String>)> {
        self.revive(id, plugin).await;
        let session = lock(&self.live).by_id.get(id).cloned()?;
        let over = session.is_over() || session.has_ended();
        let code = session.join_code().filter(|_| session.has_open_seat()).map(String::from);
        Some((over, code))
    }

    /// The session a run started for `creator` as `tag`, live or kept in
    /// the store (a run picks up its games after a restart).
    pub fn started_for(&self, tag: &crate::records::MatchTag, creator: &str) -> Option<String> {
        let live = lock(&self.live);
        let mine = |s: &&Arc<Session>| s.in_match.as_ref() == Some(tag) && s.created_by == creator;
        if let Some(s) = live.by_id.values().find(mine) {
            return Some(s.id());
        }
        drop(live);
        self.dormant.started_for(tag, creator)
    }

    /// Whether `caller`'s chosen seeds are whole seeds (`whole_seeds`).
    pub fn whole_seeds_for(&self, caller: &str) -> bool {
        self.limits.whole_seeds.allow(caller)
    }

    /// Finds a session for a `uses` tool, or explains why there is none.
    pub fn get(&self, id: &str, plugin: &Plugin, param: &str) -> Result<Arc<Session>, Refusal> {
        let other = |is: &str| Refusal::OtherGame { param: param.into(), id: id.into(), is: is.into(), not: plugin.name.clone() };
        if let Some(s) = lock(&self.live).by_id.get(id) {
            if s.plugin.name != plugin.name {
                return Err(other(&s.plugin.name));
            }
            return Ok(s.clone());
        }
        if let Some(is) = self.dormant.plugin_of(id).filter(|is| *is != plugin.name) {
            return Err(other(&is));
        }
        match lock(&self.gone).why(id) {
            Some(why) => Err(Refusal::Gone { param: param.into(), id: id.into(), why: why.to_string() }),
            None => Err(Refusal::Unknown { param: param.into(), id: id.into() }),
        }
    }

    /// A session that can still take calls, or why not.
    fn live(&self, id: &str, plugin: &Plugin, param: &str) -> Result<Arc<Session>, Refusal> {
        let session = self.get(id, plugin, param)?;
        match session.is_dead() {
            Some(why) => Err(Refusal::Ended(why)),
            None => Ok(session),
        }
    }

    fn insert(&self, s: Arc<Session>) {
        lock(&self.live).insert(s);
    }

    /// Ends a session (`why`), with its game's result record.
    pub fn remove(&self, id: &str, why: &str) {
        if let Some(session) = self.end(id, why) {
            session.record_end(why);
        }
    }

    /// The server stops: the games that are not kept for its restart (no
    /// store, or a game that cannot be stored) end, with their records; the
    /// leases of games other servers share are given up.
    pub fn stopping(&self, why: &str) {
        let ending: Vec<Arc<Session>> = lock(&self.live).by_id.values().filter(|s| !s.is_kept()).cloned().collect();
        for session in ending {
            session.record_end(why);
        }
        // Games other servers share go to them now, not when their leases lapse.
        if self.shared().is_some() {
            let held: Vec<Arc<Session>> = lock(&self.live).by_id.values().cloned().collect();
            for session in held {
                session.hand_over();
            }
        }
        // Games out of memory that no store keeps end too.
        let Some(records) = &self.records else { return };
        let parked = self.dormant.kept_records();
        for record in parked {
            results::record_stored_end(records, &record, why);
        }
    }

    /// Ends a session whose game never began (it failed to start): no record.
    fn discard(&self, id: &str, why: &str) {
        self.end(id, why);
    }

    fn end(&self, id: &str, why: &str) -> Option<Arc<Session>> {
        let session = lock(&self.live).remove(id)?;
        // Marked gone before its stored copy goes: a call meanwhile must not
        // rebuild it from there.
        lock(&self.gone).record(id, why);
        session.stop_io();
        session.forget();
        Some(session)
    }

    fn is_live(&self, id: &str) -> bool {
        lock(&self.live).by_id.contains_key(id)
    }

    /// Where a session started or rebuilt here lives.
    fn home(self: &Arc<Self>) -> Home {
        Home { table: Arc::downgrade(self) as Weak<dyn Names>, store: self.store.clone(), records: self.records.clone() }
    }

    /// Rebuilds game `id` if it is out of memory (else does nothing): on
    /// the plugin version it ran (the same component); when that version is
    /// no longer loaded, or the game cannot be rebuilt, the session ends
    /// and the reason is what a call on it is told. One call rebuilds it;
    /// others on it meanwhile wait, then find it live.
    async fn revive(self: &Arc<Self>, id: &str, plugin: &Arc<Plugin>) {
        if self.shared().is_some() {
            return self.load_shared(id, plugin).await;
        }
        if self.is_live(id) || lock(&self.gone).why(id).is_some() || !self.dormant.contains(id) {
            return;
        }
        let gate = lock(&self.reviving).entry(id.to_string()).or_default().clone();
        let turn = gate.lock().await;
        self.revive_now(id, plugin).await;
        drop(turn);
        let mut reviving = lock(&self.reviving);
        // The table's entry and this one: nobody else waits at this gate.
        if Arc::strong_count(&gate) == 2 {
            reviving.remove(id);
        }
    }

    /// Rebuilds dormant game `id`, which stays dormant (a call finds it)
    /// until it is live.
    async fn revive_now(self: &Arc<Self>, id: &str, plugin: &Arc<Plugin>) {
        // A call before this one at the gate rebuilt it.
        if self.is_live(id) {
            return;
        }
        let (record, state) = match self.dormant.read(id) {
            Found::Nowhere => return,
            Found::Unreadable(why) => {
                self.dormant.forget(id, None);
                return lock(&self.gone).record(id, &why);
            }
            // Another game's: `get` says so.
            Found::Game(record, _) if record.plugin != plugin.name => return,
            Found::Game(record, state) => (record, state),
        };
        let ends = |why: &str| {
            self.dormant.forget(id, Some(&record.plugin_sha256));
            self.end_stored(&record, why);
        };
        // The version it left memory on, though a reload replaced it since.
        let version = self.dormant.version(&record.plugin_sha256);
        let plugin = version.as_ref().unwrap_or(plugin);
        if record.plugin_sha256 != plugin.sha256 {
            let why = format!("it ran {}, which this server no longer has, and a game does not move to another version", build_of(&record));
            return ends(&why);
        }
        let (p, me, rt, stub) = (plugin.clone(), self.clone(), self.rt.clone(), record.clone());
        let revive = move || Session::revive(p, Stored { record: *stub, state, version: 0 }, me.home(), rt);
        match run_guest(&plugin.start_pace, revive).await {
            Ok(Ok(session)) => {
                tracing::debug!(plugin = plugin.name, session = id, "rebuilt a game out of memory");
                self.dormant.back(id, Some(&record.plugin_sha256), || lock(&self.live).insert(session));
            }
            outcome => ends(&ran(outcome).err().map(|e| e.to_string()).unwrap_or_default()),
        }
    }

    /// A stored session that cannot run again: removed, with why (and its
    /// game's result record, from its stored standing).
    fn end_stored(&self, record: &Record, why: &str) {
        let id = record.id.as_str();
        tracing::info!(session = id, "a stored game ends: {why}");
        if let Some(records) = &self.records {
            results::record_stored_end(records, record, why);
        }
        if let Some(store) = &self.store {
            let _ = store.remove(id);
        }
        lock(&self.gone).record(id, why);
    }

    /// Drops sessions idle longer than their plugin allows.
    pub fn reap_idle(&self) {
        let expired: Vec<(String, Duration)> = lock(&self.live)
            .by_id
            .iter()
            .filter(|(_, s)| s.idle_for() > s.plugin.limits.idle_timeout)
            .map(|(id, s)| (id.clone(), s.plugin.limits.idle_timeout))
            .collect();
        let many = expired.len() >= 100;
        let shared = self.shared().is_some();
        for (id, limit) in expired {
            let why = expiry_reason(limit.as_millis() as u64);
            // A player whose clock ran when the game expired is charged with it.
            if let Some(session) = lock(&self.live).by_id.get(&id).cloned() {
                session.charge_expiry();
            }
            if shared { self.let_go(&id, &why) } else { self.remove(&id, &why) }
        }
        self.expire_dormant();
        let unloaded = self.unload_idle();
        self.dormant.tidy();
        // Counted across sweeps: the games of a burst leave over several,
        // each with fewer than a hundred, and their heap stayed resident.
        let since_trim = self.unloaded_since_trim.fetch_add(unloaded, Ordering::Relaxed) + unloaded;
        let freed_much = many || since_trim >= 100;
        if freed_much {
            self.unloaded_since_trim.store(0, Ordering::Relaxed);
        }
        crate::runtime::release_freed_memory_after_sweep(freed_much);
    }

    /// Ends the stored sessions not rebuilt yet that have been idle past
    /// their timeout (idle time counts from their last change, across restarts).
    fn expire_dormant(&self) {
        let mut stale = self.dormant.expired(now_ms());
        // A store's expiry is by its last write: a game in memory may have
        // been read since, and the live table expires it by its last call.
        {
            let (live, reviving) = (lock(&self.live), lock(&self.reviving));
            stale.retain(|id| !live.by_id.contains_key(id) && !reviving.contains_key(id));
        }
        for id in stale {
            let record = self.dormant.record(&id);
            self.dormant.forget(&id, record.as_ref().map(|r| r.plugin_sha256.as_str()));
            match record {
                Some(r) => self.end_stored(&r, &expiry_reason(r.idle_timeout_ms)),
                None => {
                    if let Some(store) = &self.store {
                        let _ = store.remove(&id);
                    }
                    lock(&self.gone).record(&id, "it expired");
                }
            }
        }
    }

    fn new_id() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }
}

impl Names for Sessions {
    fn rename(&self, old: &str, new: &str) -> Result<(), String> {
        let mut live = lock(&self.live);
        if live.by_id.contains_key(new) {
            return Err(format!("a session named {new} already exists"));
        }
        if let Some(s) = live.by_id.remove(old) {
            live.by_id.insert(new.to_string(), s);
        }
        Ok(())
    }
}

/// Writes the records a restart found due: games whose end was stored but
/// whose record was not marked written (the server stopped in between; the
/// records file's tail says whether the line went out).
fn write_due_records(records: Option<&RecordsFile>, store: Option<&dyn SessionStore>) -> Result<(), crate::store::StoreError> {
    // On a store other servers share, the server that ends a game writes its record.
    let (Some(records), Some(store)) = (records, store) else { return Ok(()) };
    let Some(index) = store.index() else { return Ok(()) };
    for mut record in index.due()? {
        records.append_once(&results::result_record(&record, results::GAME_ENDED, record.changed_at_ms));
        record.standing.recorded = true;
        let written = store.state(&record.id).and_then(|state| store.put(&record, &state.unwrap_or_default(), None));
        if let Err(e) = written {
            tracing::warn!(session = record.id, "the game's record was written but could not be marked so in the store: {e}");
        }
    }
    Ok(())
}

/// The tool that takes a seat in this plugin's games, if any.
pub(super) fn joins_tool(plugin: &Plugin) -> Option<&str> {
    plugin.tools.iter().find(|t| t.audience == Audience::Joins).map(|t| t.name.as_str())
}

fn expiry_reason(idle_timeout_ms: u64) -> String {
    format!("it expired after {} s without calls", idle_timeout_ms / 1000)
}

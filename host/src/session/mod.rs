//! Sessions: one game = one session = one component instance
//! (`instance`). This module is the table of live sessions and the way a tool
//! call runs to its final answer: find or start the session, call the guest
//! (`run_guest`; different sessions run in parallel), and hold a
//! provisional answer (`wait`) until the session changes or its deadline
//! passes, then run the call again. Why: docs/design/sessions.md, "A session's life".

mod ended;
mod instance;
mod results;
mod shared;
mod step;
mod wait;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Val;

pub use crate::capability::LogSink;
use crate::capability::content::body_of_val;
use crate::capability::{Ask, CallInfo, ClientLink};
use crate::locking::lock;
use crate::plugin::{Audience, JOIN_CODE, Plugin, Role, SECRET, SEED, ToolDef};
use crate::records::RecordsFile;
pub use crate::runtime::bindings::ludus::plugin::content::Body;
use crate::runtime::{maps_per_instance, run_guest, run_guest_that_may_ask};
use crate::store::{Record, SessionStore, Stored, now_ms};

use ended::EndedSessions;
pub use instance::{Home, Invocation, Names, Run, Seeding, Session, SessionError, SessionInfo};
use step::{Answered, Awaiting, Step, notes};
use wait::{Wait, Woken};

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

/// The one refusal for a call on a session the caller does not play in.
fn not_yours(param: &str, id: &str, what: &str, joins: Option<&str>) -> String {
    let join = match joins {
        Some(tool) => format!(" To take a free seat, call `{tool}` with the join code its creator hands out."),
        None => String::new(),
    };
    format!("`{param}` {id} is not one of your game sessions: only its players may {what}.{join}")
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
    /// Stored sessions not running yet: read at start, each rebuilt when a
    /// call first names it.
    dormant: Mutex<HashMap<String, Record>>,
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

/// How many sessions may live at once, and who may fix a game's whole seed.
pub struct SessionLimits {
    /// In the whole server.
    pub total: usize,
    /// Why `total` is what it is, for the refusal ("limits.max_sessions", or
    /// the kernel's map limit that capped it).
    pub total_reason: String,
    /// Started by one caller (MCP connection), so one client cannot take every slot.
    pub per_caller: usize,
    /// Calls of one caller held waiting at once, over all its sessions.
    pub waits_per_caller: u64,
    /// Memory mappings the kernel's limit leaves for instances, and that
    /// limit: sessions that map their data take more than `total` counts
    /// on (`runtime::maps_per_instance`). None where it cannot be read.
    pub maps: Option<(u64, u64)>,
    /// Callers whose chosen seed is the whole seed (no secret mixed in).
    pub whole_seeds: WholeSeeds,
}

/// Which callers may fix a game's whole seed, hidden parts included: the
/// operator's evaluation harness, never a player by itself (config
/// `whole_seeds`, or `whole_seeds = true` on a token).
#[derive(Clone, Debug, Default)]
pub enum WholeSeeds {
    #[default]
    Nobody,
    Everyone,
    Callers(std::collections::HashSet<String>),
}

impl WholeSeeds {
    fn allow(&self, caller: &str) -> bool {
        match self {
            WholeSeeds::Nobody => false,
            WholeSeeds::Everyone => true,
            WholeSeeds::Callers(names) => names.contains(caller),
        }
    }
}

/// Whether one more session (`mapped` or not) fits in `budget` mappings next
/// to `all` live sessions, `mapped_live` of them mapping their data.
fn maps_allow(budget: u64, all: usize, mapped_live: usize, mapped: bool) -> bool {
    let used = (all - mapped_live) as u64 * maps_per_instance(false) + mapped_live as u64 * maps_per_instance(true);
    used + maps_per_instance(mapped) <= budget
}

/// A call counted as held waiting, in its session and for its caller (the
/// two caps on held calls), for as long as this lives; it also ends the
/// count when a cancelled request drops the waiting future.
struct WaitCount<'a> {
    session: &'a std::sync::atomic::AtomicU64,
    waits: &'a Mutex<HashMap<String, u64>>,
    caller: &'a str,
}

impl<'a> WaitCount<'a> {
    fn start(session: &'a Session, waits: &'a Mutex<HashMap<String, u64>>, caller: &'a str) -> Self {
        session.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lock(waits).entry(caller.to_string()).or_default() += 1;
        WaitCount { session: &session.waiting, waits, caller }
    }
}

impl Drop for WaitCount<'_> {
    fn drop(&mut self) {
        self.session.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let mut waits = lock(self.waits);
        if let Some(n) = waits.get_mut(self.caller) {
            *n -= 1;
            if *n == 0 {
                waits.remove(self.caller);
            }
        }
    }
}

/// How a tool call that reached a plugin ended.
pub enum Reply {
    /// The function's value (none for functions without a result), with the
    /// plugin version and tool that produced it (the session's version), and
    /// what the host adds for the agent (a new game's join code).
    Value { value: Option<Val>, plugin: Arc<Plugin>, tool: usize, note: Option<String> },
    /// The host could not run the call (session unknown/ended, limits, trap).
    Failed(String),
}

/// Called while a call waits: every few seconds, and when its session's
/// channel process says something new.
pub type Progress = Box<dyn Fn(WaitProgress) + Send + Sync>;

/// Who hears about a call while it runs: its client's progress (while it
/// waits) and its game's log lines; and the client the game may talk to.
#[derive(Default)]
pub struct Listeners {
    pub progress: Option<Progress>,
    pub log: Option<LogSink>,
    pub client: Option<Arc<dyn ClientLink>>,
}

/// Where a waiting call stands, for a progress notification.
pub struct WaitProgress {
    pub waited_s: u64,
    pub limit_s: u64,
    /// What the session's channel process last said meanwhile (see `Session::news_since`).
    pub news: Option<String>,
}

impl Sessions {
    /// The table, with the sessions `store` holds from an earlier run
    /// waiting to be rebuilt (those idle past their timeout are dropped).
    pub fn new(
        limits: SessionLimits,
        rt: tokio::runtime::Handle,
        store: Option<Box<dyn SessionStore>>,
        records: Option<Arc<RecordsFile>>,
    ) -> Result<Arc<Sessions>, String> {
        let store: Option<Arc<dyn SessionStore>> = store.map(Arc::from);
        let stored = match &store {
            Some(store) => store.records().map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        let dormant = stored.into_iter().map(|r| (r.id.clone(), r)).collect();
        let sessions = Arc::new(Sessions {
            live: Mutex::default(),
            shared: Mutex::default(),
            gone: Mutex::default(),
            waits: Mutex::default(),
            store,
            dormant: Mutex::new(dormant),
            records,
            limits,
            rt,
        });
        sessions.write_due_records();
        sessions.expire_dormant();
        if let Some(shared) = sessions.store.as_deref().and_then(|s| s.shared()) {
            let table = Arc::downgrade(&sessions);
            shared.watch(Box::new(move |id, version| {
                if let Some(table) = table.upgrade() {
                    table.changed_elsewhere(id, version);
                }
            }));
        }
        if let Some(store) = &sessions.store {
            tracing::info!(store = store.describe(), sessions = lock(&sessions.dormant).len(), "games are kept in the session store");
        }
        Ok(sessions)
    }

    /// Writes the records a restart found due: games whose end was stored
    /// but whose record was not marked written (the server stopped in
    /// between; the records file's tail says whether the line went out).
    fn write_due_records(&self) {
        // On a store other servers share, the server that ends a game writes its record.
        let (Some(records), Some(store)) = (&self.records, &self.store) else { return };
        if store.shared().is_some() {
            return;
        }
        let mut dormant = lock(&self.dormant);
        for record in dormant.values_mut().filter(|r| r.standing.due()) {
            records.append_once(&results::result_record(record, results::GAME_ENDED, record.changed_at_ms));
            record.standing.recorded = true;
            let stored = store.state(&record.id).and_then(|state| store.put(record, &state.unwrap_or_default(), None));
            if let Err(e) = stored {
                tracing::warn!(session = record.id, "the game's record was written but could not be marked so in the store: {e}");
            }
        }
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
        let mut v: Vec<SessionInfo> = lock(&self.live).by_id.values().filter(|s| s.is_player(name)).map(|s| s.info()).collect();
        let mine = |r: &&Record| !name.is_empty() && r.players.iter().any(|p| p == name);
        v.extend(lock(&self.dormant).values().filter(mine).map(SessionInfo::of_stored));
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

    fn waits_of(&self, caller: &str) -> u64 {
        lock(&self.waits).get(caller).copied().unwrap_or(0)
    }

    /// Live sessions in all, of `plugin`, started by `caller`, and mapping their data.
    fn counts(&self, plugin: &str, caller: &str) -> (usize, usize, usize, usize) {
        let live = lock(&self.live);
        let count = |counts: &HashMap<String, usize>, key: &str| counts.get(key).copied().unwrap_or(0);
        (live.by_id.len(), count(&live.per_plugin, plugin), count(&live.per_caller, caller), live.mapped)
    }

    /// Why a new session of `plugin` for `caller` cannot start, if it cannot.
    fn refuse_new(&self, plugin: &Plugin, caller: &str) -> Option<String> {
        let (all, of_plugin, of_caller, mapped) = self.counts(&plugin.name, caller);
        let l = &self.limits;
        if all >= l.total {
            return Some(format!("the server already runs {all} game sessions, its limit ({}); finish some first", l.total_reason));
        }
        if let Some((budget, max_maps)) = l.maps
            && !maps_allow(budget, all, mapped, plugin.maps_data)
        {
            return Some(format!(
                "the server already runs {all} game sessions ({mapped} of them games that map their data, which take more memory \
                 mappings), all the kernel's vm.max_map_count of {max_maps} allows; finish some first (the operator can raise it with sysctl)"
            ));
        }
        if of_plugin >= plugin.limits.max_sessions {
            return Some(format!(
                "{name} already runs {of_plugin} game sessions, its limit (the config's limits.max_sessions_per_plugin, or \
                 plugins.{name}.max_sessions for this game alone); finish some first",
                name = plugin.name
            ));
        }
        if of_caller >= l.per_caller {
            return Some(format!(
                "you already run {of_caller} game sessions, the limit for one client (limits.max_sessions_per_caller); finish some first"
            ));
        }
        None
    }

    /// Finds a session for a `uses` tool, or explains why there is none.
    pub fn get(&self, id: &str, plugin: &Plugin, param: &str) -> Result<Arc<Session>, String> {
        if let Some(s) = lock(&self.live).by_id.get(id) {
            if s.plugin.name != plugin.name {
                return Err(format!("`{param}` {id} belongs to a {} game, not {}", s.plugin.name, plugin.name));
            }
            return Ok(s.clone());
        }
        if let Some(r) = lock(&self.dormant).get(id).filter(|r| r.plugin != plugin.name) {
            return Err(format!("`{param}` {id} belongs to a {} game, not {}", r.plugin, plugin.name));
        }
        match lock(&self.gone).why(id) {
            Some(why) => Err(format!("`{param}` {id} is no longer available: {why}. Start a new game.")),
            None => Err(format!("unknown `{param}` {id:?}: no such game session (ids come from the tool that starts a game)")),
        }
    }

    /// A session that can still take calls, or why not.
    fn live(&self, id: &str, plugin: &Plugin, param: &str) -> Result<Arc<Session>, String> {
        let session = self.get(id, plugin, param)?;
        match session.is_dead() {
            Some(why) => Err(format!("this game session has ended: {why}. Start a new game.")),
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
    /// store, or a game that cannot be stored) end, with their records.
    pub fn stopping(&self, why: &str) {
        let ending: Vec<Arc<Session>> = lock(&self.live).by_id.values().filter(|s| !s.is_kept()).cloned().collect();
        for session in ending {
            session.record_end(why);
        }
    }

    /// Ends a session whose game never began (it failed to start): no record.
    fn discard(&self, id: &str, why: &str) {
        self.end(id, why);
    }

    fn end(&self, id: &str, why: &str) -> Option<Arc<Session>> {
        let session = lock(&self.live).remove(id)?;
        session.stop_io();
        session.forget();
        lock(&self.gone).record(id, why);
        Some(session)
    }

    /// Where a session started or rebuilt here lives.
    fn home(self: &Arc<Self>) -> Home {
        Home { table: Arc::downgrade(self) as Weak<dyn Names>, store: self.store.clone(), records: self.records.clone() }
    }

    /// Rebuilds the stored session `id` if it is one not running yet (else
    /// does nothing): on the
    /// plugin version it ran (the same component); when that version is no
    /// longer loaded, or the game cannot be rebuilt, the session ends and
    /// the reason is what a call on it is told.
    async fn revive(self: &Arc<Self>, id: &str, plugin: &Arc<Plugin>) {
        if self.shared().is_some() {
            return self.load_shared(id, plugin).await;
        }
        let record = {
            let mut dormant = lock(&self.dormant);
            match dormant.get(id) {
                Some(r) if r.plugin == plugin.name => dormant.remove(id),
                _ => None,
            }
        };
        let (Some(record), Some(store)) = (record, self.store.clone()) else { return };
        if record.plugin_sha256 != plugin.sha256 {
            let why = format!("it ran {}, which this server no longer has, and a game does not move to another version", build_of(&record));
            return self.end_stored(&record, &why);
        }
        let state = match store.state(id) {
            Ok(Some(state)) => state,
            Ok(None) => return self.end_stored(&record, "its stored copy was removed"),
            Err(e) => return self.end_stored(&record, &format!("its stored copy could not be read: {e}")),
        };
        // Kept to record the game's end if it cannot be rebuilt.
        let stub = record.clone();
        let (p, me, rt) = (plugin.clone(), self.clone(), self.rt.clone());
        let revive = move || Session::revive(p, Stored { record, state, version: 0 }, me.home(), rt);
        match run_guest(&plugin.start_pace, revive).await {
            Ok(Ok(session)) => {
                tracing::info!(plugin = plugin.name, session = id, "rebuilt a stored game");
                self.insert(session);
            }
            outcome => self.end_stored(&stub, &in_words(outcome).err().unwrap_or_default()),
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
            if shared { self.let_go(&id, &why) } else { self.remove(&id, &why) }
        }
        self.expire_dormant();
        crate::runtime::release_freed_memory_after_sweep(many);
    }

    /// Ends the stored sessions not rebuilt yet that have been idle past
    /// their timeout (idle time counts from their last change, across restarts).
    fn expire_dormant(&self) {
        let now = now_ms();
        let stale: Vec<Record> = {
            let mut dormant = lock(&self.dormant);
            let ids: Vec<String> = dormant.values().filter(|r| r.expired(now)).map(|r| r.id.clone()).collect();
            ids.iter().filter_map(|id| dormant.remove(id)).collect()
        };
        for r in stale {
            self.end_stored(&r, &expiry_reason(r.idle_timeout_ms));
        }
    }

    fn new_id() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// Runs one tool call to its final answer: picks or creates the session,
    /// calls the guest, and holds the answer while the guest asks to wait.
    pub async fn call(
        self: &Arc<Self>,
        plugin: Arc<Plugin>,
        tool_index: usize,
        args: &serde_json::Map<String, serde_json::Value>,
        caller: Caller,
        cancel: CancellationToken,
        listeners: Listeners,
    ) -> Reply {
        match self.prepare(&plugin, tool_index, args, &caller).await {
            Ok(call) => self.run(call, caller.name().to_string(), cancel, listeners).await,
            Err(e) => Reply::Failed(e),
        }
    }

    /// Checks the arguments, finds or starts the session (and that the
    /// caller may use it), and picks the tool of the version that session
    /// runs (it keeps the one it started on).
    async fn prepare(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        tool_index: usize,
        args: &serde_json::Map<String, serde_json::Value>,
        caller: &Caller,
    ) -> Result<Prepared, String> {
        let current = &plugin.tools[tool_index];
        // A `joins` tool's join code is the host's, not the game's; so is a
        // seeded start's secret.
        let (args, code) = match current.audience {
            Audience::Joins => split_host_argument(args, JOIN_CODE, |v| v.as_str().map(String::from), "a string")?,
            _ => (std::borrow::Cow::Borrowed(args), None),
        };
        let (args, secret) = match current.role {
            Role::Creates if current.params.iter().any(|f| f.json == SEED) => {
                let (rest, secret) = split_host_argument(&args, SECRET, unsigned, "a whole number (or one as a decimal string)")?;
                (std::borrow::Cow::<Arguments>::Owned(rest.into_owned()), secret)
            }
            _ => (args, None),
        };
        let args = self.name_the_only_game(plugin, current, &args, caller)?;
        let args = args.as_ref();
        if let Role::Uses(i) = current.role
            && let Some(id) = args.get(&current.params[i].json).and_then(serde_json::Value::as_str)
        {
            self.revive(id, plugin).await;
        }
        // Whose session it is comes first: a stranger learns nothing from
        // its arguments being checked.
        let named = match current.role {
            Role::Uses(i) => self.named_session(plugin, current, &current.params[i].json, args, caller, code.as_deref())?,
            _ => None,
        };
        let params = current.convert_args(args)?;
        let seeds = (current.seed_argument(&params), secret);
        let session = match named {
            Some(session) => session,
            None => self.session_for(plugin, current, &params, caller, seeds).await?,
        };
        let version = session.plugin.clone();
        if Arc::ptr_eq(&version, plugin) {
            return Ok(Prepared { session, version, tool: tool_index, params });
        }
        let Some(tool) = version.tools.iter().position(|t| t.name == current.name) else {
            return Err(format!(
                "this game runs version {} of {}, which has no tool `{}`; start a new game",
                version.version, version.name, current.name
            ));
        };
        let params = version.tools[tool]
            .convert_args(args)
            .map_err(|e| format!("this game runs version {} of {}: {e}", version.version, version.name))?;
        Ok(Prepared { session, version, tool, params })
    }

    /// Calls the guest until it answers finally; a provisional answer is held
    /// until the session changes, the deadline passes, or the client cancels.
    async fn run(self: &Arc<Self>, call: Prepared, caller: String, cancel: CancellationToken, listeners: Listeners) -> Reply {
        let Listeners { progress, log, client } = listeners;
        let may_ask =
            call.version.asks_client && client.as_ref().is_some_and(|c| c.declares(Ask::Sampling) || c.declares(Ask::Elicitation));
        let Prepared { session, version, tool: index, params } = call;
        let tool = &version.tools[index];
        let creates = tool.role == Role::Creates;
        let mut changes = session.changed.subscribe();
        let mut wait = Wait::new();
        let (mut timed_out, mut rerun) = (false, false);
        let decision = tool.decision_argument(&params);
        // While this call is held waiting for its decision's answer, a
        // second call for the same decision waits for that answer too.
        let mut awaiting: Option<Awaiting> = None;
        loop {
            let turn = session.turn.lock().await;
            changes.borrow_and_update();
            let info = CallInfo { caller: caller.clone(), timed_out, log: log.clone(), client: client.clone(), ask_limit: tool.max_wait };
            let step = Step {
                session: session.clone(),
                version: version.clone(),
                index,
                params: params.clone(),
                caller: caller.clone(),
                decision,
                first: !rerun,
                timed_out,
            };
            let call = move || step.run(info);
            // A game that can ask its client, called by a client that can be
            // asked, must not hold the thread that carries that client's messages.
            let answered = if may_ask { run_guest_that_may_ask(&tool.pace, call).await } else { run_guest(&tool.pace, call).await };
            drop(turn);
            let inv = match answered {
                Ok(Ok(Answered::Game(inv))) => inv,
                Ok(Ok(Answered::Kept(answer))) => {
                    let note = format!(
                        "Decision {} was made already: this is the answer its call got then, and nothing was made again. \
                         Ask for the game's state to see what happened since.",
                        decision.unwrap_or_default()
                    );
                    return Reply::Value { value: Some(answer), plugin: version.clone(), tool: index, note: Some(note) };
                }
                Ok(Ok(Answered::AnswerPending)) => Invocation { value: None, wait: Some(0), made_already: None },
                Ok(Err(e)) => {
                    if creates {
                        self.discard(&session.id(), "it crashed while starting");
                    }
                    return Reply::Failed(e.to_string());
                }
                Err(e) => return Reply::Failed(format!("internal error running the call: {e}")),
            };
            if creates && !rerun {
                self.insert(session.clone());
            }
            let Some(asked) = inv.wait.filter(|_| !timed_out) else {
                drop(awaiting);
                if creates && matches!(inv.value, Some(Val::Result(Err(_)))) {
                    self.discard(&session.id(), "the game failed to start");
                }
                // A re-run of a waiting call is not a change, or two waiters would wake each other forever.
                if !rerun && !tool.read_only {
                    session.bump();
                }
                let note = notes(&session, &version, tool, &caller, &inv.value);
                return Reply::Value { value: inv.value, plugin: version.clone(), tool: index, note };
            };
            if let (None, Some(n), Some(_)) = (&awaiting, decision, &inv.value) {
                awaiting = Some(Awaiting::start(&session, &caller, n));
            }
            // Each held call is cheap but not free. Beyond the cap a call is not
            // held at all: it is answered at once as if its wait had run out (the
            // game's "call again" answer). Refusing it instead would lose what
            // the call already did.
            let held = session.waiting.load(std::sync::atomic::Ordering::Relaxed);
            let held_for_caller = self.waits_of(&caller);
            if held >= session.plugin.limits.max_waits {
                tracing::debug!(session = %session.id(), held, "not holding another waiting call (limits.max_waits_per_session)");
                timed_out = true;
            } else if held_for_caller >= self.limits.waits_per_caller {
                tracing::debug!(%caller, held_for_caller, "not holding another waiting call (limits.max_waits_per_caller)");
                timed_out = true;
            } else {
                let limit = if asked == 0 { tool.default_wait } else { Duration::from_millis(asked.into()).min(tool.max_wait) };
                let _counted = WaitCount::start(&session, &self.waits, &caller);
                match wait.hold(&session, &mut changes, limit, &cancel, progress.as_ref()).await {
                    Woken::Changed => {}
                    Woken::Deadline => timed_out = true,
                    Woken::Cancelled => return Reply::Failed("the call was cancelled".into()),
                }
            }
            rerun = true;
        }
    }

    /// The live session a `uses` tool's id names, if the caller may make
    /// this call on it; None when the id is missing, not a string or names
    /// no live session (the argument check and `session_for` say so).
    /// A session parameter that may be left out (`option<string>`) and was
    /// names the caller's only game of this plugin: the one not over, or
    /// else the one over. Several is said, with the ids to choose from; none
    /// too, unless the tool is read-only (it runs without a game).
    fn name_the_only_game<'a>(
        &self,
        plugin: &Plugin,
        tool: &ToolDef,
        args: &'a serde_json::Map<String, serde_json::Value>,
        caller: &Caller,
    ) -> Result<std::borrow::Cow<'a, serde_json::Map<String, serde_json::Value>>, String> {
        let Role::Uses(i) = tool.role else { return Ok(std::borrow::Cow::Borrowed(args)) };
        let param = &tool.params[i];
        if param.required() || !args.get(&param.json).is_none_or(serde_json::Value::is_null) {
            return Ok(std::borrow::Cow::Borrowed(args));
        }
        let games: Vec<SessionInfo> = self.list_for(caller).into_iter().filter(|s| s.plugin == plugin.name).collect();
        let playing: Vec<&SessionInfo> = games.iter().filter(|s| !s.game_over && s.ended.is_none()).collect();
        let chosen = match (playing.as_slice(), games.as_slice()) {
            ([only], _) => only.id.clone(),
            ([], [only]) => only.id.clone(),
            // A read-only tool may answer without a game (a card looked up
            // by name): the plugin's shared instance runs it.
            ([], []) if tool.read_only => return Ok(std::borrow::Cow::Borrowed(args)),
            ([], []) => {
                return Err(format!("`{}` names the game, and you have no game of {} (start one first)", param.json, plugin.name));
            }
            (several, _) => {
                let several = if several.is_empty() { games.iter().collect() } else { several.to_vec() };
                let ids: Vec<&str> = several.iter().map(|s| s.id.as_str()).collect();
                return Err(format!(
                    "you have {} games of {} ({}): say which with `{}`",
                    ids.len(),
                    plugin.name,
                    ids.join(", "),
                    param.json
                ));
            }
        };
        let mut named = args.clone();
        named.insert(param.json.clone(), serde_json::Value::String(chosen));
        Ok(std::borrow::Cow::Owned(named))
    }

    fn named_session(
        &self,
        plugin: &Plugin,
        tool: &ToolDef,
        param: &str,
        args: &serde_json::Map<String, serde_json::Value>,
        caller: &Caller,
        code: Option<&str>,
    ) -> Result<Option<Arc<Session>>, String> {
        let Some(id) = args.get(param).and_then(serde_json::Value::as_str) else { return Ok(None) };
        // An unknown or ended id is said after the arguments are checked, as before.
        let Ok(session) = self.live(id, plugin, param) else { return Ok(None) };
        admit(&session, tool, caller, code, param)?;
        Ok(Some(session))
    }

    async fn session_for(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        tool: &ToolDef,
        params: &[Val],
        caller: &Caller,
        (seed, secret): (Option<u64>, Option<u64>),
    ) -> Result<Arc<Session>, String> {
        match tool.role {
            Role::Uses(i) => {
                let id = match &params[i] {
                    // Left out by a caller with no game (`name_the_only_game`).
                    Val::Option(None) if tool.read_only => return self.shared_session(plugin),
                    Val::String(id) => id,
                    Val::Option(Some(v)) => match v.as_ref() {
                        Val::String(id) => id,
                        _ => return Err("session id must be a string".into()),
                    },
                    _ => return Err("session id must be a string".into()),
                };
                self.live(id, plugin, &tool.params[i].json)
            }
            Role::Creates => {
                if *caller == Caller::Stateless {
                    return Err(STATELESS_REFUSAL.into());
                }
                let caller = caller.name();
                if let Some(why) = self.refuse_new(plugin, caller) {
                    return Err(why);
                }
                let seeding = self.seeding(seed, secret, caller)?;
                let (p, me, caller, rt) = (plugin.clone(), self.clone(), caller.to_string(), self.rt.clone());
                let start = move || Session::start(p, Sessions::new_id(), seeding, &caller, Some(me.home()), rt);
                in_words(run_guest(&plugin.start_pace, start).await)
            }
            Role::Shared => self.shared_session(plugin),
        }
    }

    /// How a new game of `caller` is seeded: its seed (or a drawn one) with
    /// a fresh secret mixed in for what is hidden; with the secret given, a
    /// replay of a finished game; a caller the operator lets fix whole
    /// seeds gets none.
    fn seeding(&self, seed: Option<u64>, secret: Option<u64>, caller: &str) -> Result<Seeding, String> {
        let chosen = seed.is_some();
        let seed = seed.unwrap_or_else(rand_seed);
        if let Some(secret) = secret {
            if !chosen {
                return Err(format!("`{SECRET}` replays a finished game together with its `{SEED}`: give both"));
            }
            return Ok(Seeding { seed, chosen, secret: Some(secret), replay: true });
        }
        let secret = (!self.limits.whole_seeds.allow(caller)).then(rand_seed);
        Ok(Seeding { seed, chosen, secret, replay: false })
    }

    /// The plugin's instance for session-less calls; remade after a trap.
    fn shared_session(&self, plugin: &Arc<Plugin>) -> Result<Arc<Session>, String> {
        let mut shared = lock(&self.shared);
        if let Some(s) = shared.get(&plugin.name).filter(|s| Arc::ptr_eq(&s.plugin, plugin) && s.is_dead().is_none()) {
            return Ok(s.clone());
        }
        let seeding = Seeding { seed: rand_seed(), chosen: false, secret: None, replay: false };
        let s = Session::start(plugin.clone(), format!("{}-shared", plugin.name), seeding, "", None, self.rt.clone())
            .map_err(|e| e.to_string())?;
        shared.insert(plugin.name.clone(), s.clone());
        Ok(s)
    }

    /// Reads a plugin resource (through `resources.read` where the plugin
    /// exports it, else `meta.read-resource`): in the named session's
    /// instance for per-session resources (for its players, or anyone when
    /// the plugin opens it to spectators), else in the shared one.
    pub async fn read_resource(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        session: Option<(&str, Audience)>,
        caller: &Caller,
    ) -> Result<Body, String> {
        let session = match session {
            Some((id, audience)) => self.readable(plugin, uri, id, audience, caller).await?,
            None => self.shared_session(plugin)?,
        };
        let export = session.plugin.read_body.unwrap_or(session.plugin.read_resource);
        let uri = uri.to_string();
        // The reader is the caller: a game with seats shows each its own side.
        let info = CallInfo { caller: caller.name().to_string(), ..CallInfo::default() };
        // Under the game's lease, on a copy brought up to date (another server may have changed it).
        let call = move || session.leased(Run::Read, || session.invoke(&export, &[Val::String(uri)], 1, info)).and_then(|r| r);
        let inv = in_words(run_guest(&plugin.event_pace, call).await)?;
        let body = |v: Option<Box<Val>>| match v.map(|b| *b) {
            Some(Val::String(s)) => Some(Body::Text(s)),
            Some(other) => body_of_val(&other),
            None => None,
        };
        match inv.value {
            Some(Val::Result(Ok(v))) => body(v).ok_or_else(|| "the plugin gave a resource this host cannot read".into()),
            Some(Val::Result(Err(Some(e)))) => Err(match *e {
                Val::String(s) => s,
                _ => "the plugin refused".into(),
            }),
            _ => Err("the plugin gave no resource".into()),
        }
    }

    /// Runs a prompt's `get` or `complete` (`ludus:plugin/prompts`) in the
    /// plugin's shared instance.
    pub async fn prompt_call(self: &Arc<Self>, plugin: &Arc<Plugin>, complete: bool, params: Vec<Val>) -> Result<Option<Val>, String> {
        let exports = plugin.prompt_exports.ok_or("this plugin offers no prompts")?;
        let export = if complete { exports.complete } else { exports.get };
        let session = self.shared_session(plugin)?;
        let call = move || session.invoke(&export, &params, 1, CallInfo::default());
        Ok(in_words(run_guest(&plugin.event_pace, call).await)?.value)
    }

    async fn readable(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        id: &str,
        audience: Audience,
        caller: &Caller,
    ) -> Result<Arc<Session>, String> {
        self.revive(id, plugin).await;
        let s = self.live(id, plugin, "session")?;
        if audience != Audience::Spectators && !s.is_player(caller.name()) {
            if *caller == Caller::Stateless {
                return Err(STATELESS_REFUSAL.into());
            }
            return Err(not_yours("session", id, &format!("read {uri}"), None));
        }
        Ok(s)
    }

    /// Changes of the game behind a per-game resource, for a subscriber who
    /// may read it: the receiver wakes on every change of the game (here or
    /// on another server) and fails once the game has ended.
    pub async fn watch_resource(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        id: &str,
        audience: Audience,
        caller: &Caller,
    ) -> Result<tokio::sync::watch::Receiver<u64>, String> {
        Ok(self.readable(plugin, uri, id, audience, caller).await?.changed.subscribe())
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

/// Whether `caller` may make this call on `session`: spectators' tools are
/// open to all, a `joins` tool to whoever brings the join code, every other
/// tool to the players only.
/// What a guest's work on a blocking thread came to (`run_guest`), with a
/// session's error in words: this layer answers callers in text.
fn in_words<T>(outcome: Result<Result<T, SessionError>, String>) -> Result<T, String> {
    outcome?.map_err(|e| e.to_string())
}

fn admit(session: &Session, tool: &ToolDef, caller: &Caller, code: Option<&str>, param: &str) -> Result<(), String> {
    if tool.audience == Audience::Spectators {
        return Ok(());
    }
    let player = session.is_player(caller.name());
    if tool.audience != Audience::Joins && player {
        return Ok(());
    }
    if *caller == Caller::Stateless {
        return Err(STATELESS_REFUSAL.into());
    }
    let id = session.id();
    if tool.audience != Audience::Joins {
        return Err(not_yours(param, &id, &format!("call `{}`", tool.name), joins_tool(&session.plugin)));
    }
    // A seat is taken with the code by everyone, the creator taking the
    // other seat itself included: nobody plays a seat by default.
    if session.seeding.replay {
        return Err(format!("`{param}` {id} replays a finished game whose hidden parts were published: nobody else may take a seat in it"));
    }
    // The code first: who holds the seats is told only to those with it.
    match code {
        Some(code) if session.join_code_is(code) => {}
        Some(_) => return Err(format!("wrong `{JOIN_CODE}` for `{param}` {id}: ask the game's creator for its join code")),
        None => return Err(format!("taking a seat in `{param}` {id} needs its `{JOIN_CODE}`, which the game's creator hands out")),
    }
    match session.seats_all_taken() {
        Some(taken) => Err(format!("no seat of `{param}` {id} is open: {taken}")),
        None => Ok(()),
    }
}

/// The tool that takes a seat in this plugin's games, if any.
pub(super) fn joins_tool(plugin: &Plugin) -> Option<&str> {
    plugin.tools.iter().find(|t| t.audience == Audience::Joins).map(|t| t.name.as_str())
}

type Arguments = serde_json::Map<String, Value>;
use serde_json::Value;

/// The arguments without the host's argument `name`, and its value as
/// `read` reads it (a value it cannot read is refused, saying what it must be).
fn split_host_argument<'a, T>(
    args: &'a Arguments,
    name: &str,
    read: fn(&Value) -> Option<T>,
    must_be: &str,
) -> Result<(std::borrow::Cow<'a, Arguments>, Option<T>), String> {
    let Some(value) = args.get(name).filter(|v| !v.is_null()) else { return Ok((std::borrow::Cow::Borrowed(args), None)) };
    let value = read(value).ok_or_else(|| format!("`{name}` must be {must_be}"))?;
    let mut rest = args.clone();
    rest.remove(name);
    Ok((std::borrow::Cow::Owned(rest), Some(value)))
}

/// A non-negative integer given as a JSON number or a decimal string.
fn unsigned(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A call on its way: the session, the version it runs, and that version's tool.
struct Prepared {
    session: Arc<Session>,
    version: Arc<Plugin>,
    tool: usize,
    params: Vec<Val>,
}

fn expiry_reason(idle_timeout_ms: u64) -> String {
    format!("it expired after {} s without calls", idle_timeout_ms / 1000)
}

fn rand_seed() -> u64 {
    let u = uuid::Uuid::new_v4();
    u.as_u64_pair().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_that_map_their_data_count_their_extra_mappings() {
        let (copied, mapped) = (maps_per_instance(false), maps_per_instance(true));
        let budget = 10 * copied;
        // Ten copied sessions fill a budget of ten; a mapped one takes more room.
        assert!(maps_allow(budget, 9, 0, false));
        assert!(!maps_allow(budget, 10, 0, false));
        assert_eq!(maps_allow(budget, 9, 0, true), 9 * copied + mapped <= budget);
        // Mixed: what the mapped ones use leaves less for the others.
        let mixed = ((budget - 2 * mapped) / copied) as usize;
        assert!(maps_allow(budget, 2 + mixed - 1, 2, false));
        assert!(!maps_allow(budget, 2 + mixed, 2, false));
    }
}

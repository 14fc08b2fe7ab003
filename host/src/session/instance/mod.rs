//! One session: one component instance with its store. Calls and events run
//! one at a time (a guest never blocks, so each is short); a trap ends only
//! this session, and the next call says what happened. The session is what
//! the capabilities see through `SessionControl` and `Inbox`.

mod error;
mod lease;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use wasmtime::component::{ComponentExportIndex, Instance, Val};
use wasmtime::{Store, Trap};

use crate::capability::channels::{ChannelInfo, Channels, Inbox, Input};
use crate::capability::host::SessionControl;
use crate::capability::{self, CallInfo, ChannelsCtx, GameSeeds, GuestOutput, HostCtx, HostState, Output};
use crate::locking::lock;
use crate::plugin::{Durable, Plugin};
use crate::records::{Holder, RecordsFile, Seat, Standing};
use crate::runtime::clock::TimerKey;
use crate::runtime::{run_guest, ticks};
use crate::store::{Lease, Record, SessionStore, Stored, StoredCall, now_ms};

pub use error::SessionError;
pub use lease::Run;

/// Pending timers one session may have at once.
const MAX_TIMERS: usize = 64;
/// The table a session is listed in, as far as the session needs it: a
/// rename must change its key there too.
pub trait Names: Send + Sync {
    fn rename(&self, old: &str, new: &str) -> Result<(), String>;
}

/// Where a session lives: the table that lists it, the store that keeps
/// it across restarts (none when the server keeps games in memory only, or
/// the plugin cannot hand over its state), and the file its games' result
/// records go to (none: the operator keeps no records).
pub struct Home {
    pub table: Weak<dyn Names>,
    pub store: Option<Arc<dyn SessionStore>>,
    pub records: Option<Arc<RecordsFile>>,
}

enum Slot {
    Live(Box<Live>),
    Dead(String),
}

struct Live {
    store: Store<HostState>,
    instance: Instance,
}

/// What one call into the guest produced.
pub struct Invocation {
    pub value: Option<Val>,
    /// The guest asked to wait (milliseconds, 0 = the tool's default).
    pub wait: Option<u32>,
    /// The guest said the decision this call names was made already
    /// (`decisions.made-already`): its answer is the one kept for it.
    pub made_already: Option<u32>,
}

/// How a new game is seeded (`store::Record::seed` and `secret`).
#[derive(Clone, Copy, Debug)]
pub struct Seeding {
    /// The seed: chosen by the creator, or drawn.
    pub seed: u64,
    /// The creator chose it.
    pub chosen: bool,
    /// The secret mixed in for what is hidden; none: the seed is the whole seed.
    pub secret: Option<u64>,
    /// The creator gave the secret: a finished game replayed.
    pub replay: bool,
}

/// Who plays: the callers that may call the session's tools, the seats as
/// the game told them, and who has been told the game's secret.
#[derive(Default)]
struct Seating {
    /// The creator first, then each caller that took a seat with the join code.
    players: Vec<String>,
    seats: Vec<Seat>,
    /// Players whose answers have published the secret of the game that ended.
    told_secret: HashSet<String>,
}

/// Each player's last answered decision (`ludus:plugin/decisions`), and the
/// decisions whose calls are still held waiting for their answer.
#[derive(Default)]
struct Answers {
    last: HashMap<String, LastCall>,
    waiting: HashSet<(String, u64)>,
}

pub struct Session {
    id: Mutex<String>,
    renamed: AtomicBool,
    pub plugin: Arc<Plugin>,
    pub seeding: Seeding,
    pub created_by: String,
    pub created_at: SystemTime,
    /// When a call last changed it, as stored (milliseconds since the epoch).
    changed_at_ms: AtomicU64,
    /// Who may call the session's tools: its creator, then each caller that
    /// took a seat with the join code (`plugin::Audience`); and its seats.
    seating: Mutex<Seating>,
    /// What the creator hands out for a seat (plugins with `joins` tools).
    join_code: Option<String>,
    /// The game said it is over (`lifecycle.game-over`): its channels are
    /// closed, it stays readable until it expires.
    over: AtomicBool,
    last_used: Mutex<Instant>,
    /// Tool calls its clients made (a re-run of a waiting call is not one).
    calls: AtomicU64,
    /// Calls currently held in a wait on this session.
    pub(super) waiting: AtomicU64,
    /// Each player's last answered decision, for its retries.
    answers: Mutex<Answers>,
    slot: Mutex<Slot>,
    /// Tool calls take turns in arrival order (tokio's mutex is fair): two
    /// calls on one session never overtake each other, even when the first
    /// waits for a blocking thread.
    pub turn: tokio::sync::Mutex<()>,
    stdout: GuestOutput,
    stderr: GuestOutput,
    last_stderr: Mutex<String>,
    /// The latest line a channel process said on stderr, and when: waiting
    /// clients see it in their progress (a sidecar installing its engine).
    news: Mutex<Option<(Instant, Box<str>)>>,
    pub(super) news_arrived: tokio::sync::Notify,
    /// Bumped on every change; waiting calls watch it.
    pub(super) changed: watch::Sender<u64>,
    /// Pending timers by the id the guest knows them by.
    timers: Mutex<HashMap<u64, TimerKey>>,
    next_timer: AtomicU64,
    pub channels: Arc<Channels>,
    /// The table that lists this session (none for a plugin's shared instance).
    table: Option<Weak<dyn Names>>,
    /// Where it is kept across restarts, and a digest of what was last
    /// written there (a call that changed nothing writes nothing).
    store: Option<Arc<dyn SessionStore>>,
    stored: Mutex<Option<u64>>,
    /// In a store other servers share: the stored version this copy is
    /// (0: never written), and the game's lease while a call or event runs.
    version: AtomicU64,
    lease: Mutex<Option<Lease>>,
    /// Where its current game stands (`ludus:plugin/outcome`), and where
    /// its result record goes.
    standing: Mutex<Standing>,
    records: Option<Arc<RecordsFile>>,
    /// One call or event of this process at a time between taking the lease
    /// and knowing the version it wrote: events do not take `turn`, and an
    /// event that took the lease the instant a call's write gave it back
    /// would see the stored version ahead of this copy's and drop itself.
    leasing: Mutex<()>,
    rt: tokio::runtime::Handle,
}

impl Session {
    /// Instantiates a plugin. `home` is none for a plugin's shared instance.
    pub fn start(
        plugin: Arc<Plugin>,
        id: String,
        seeding: Seeding,
        caller: &str,
        home: Option<Home>,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Session>, SessionError> {
        let record = Record {
            id,
            plugin: plugin.name.clone(),
            plugin_version: plugin.version.clone(),
            plugin_sha256: plugin.sha256.clone(),
            seed: seeding.seed,
            seed_chosen: seeding.chosen,
            secret: seeding.secret,
            replay: seeding.replay,
            created_by: caller.to_string(),
            created_at_ms: now_ms(),
            players: vec![caller.to_string()],
            join_code: plugin.has_seats().then(new_join_code),
            over: false,
            renamed: false,
            calls: 0,
            changed_at_ms: now_ms(),
            idle_timeout_ms: plugin.limits.idle_timeout.as_millis() as u64,
            last_calls: Default::default(),
            seats: Vec::new(),
            standing: Standing::new(now_ms()),
        };
        Session::instantiate(plugin, record, home, rt)
    }

    /// Rebuilds a stored session: a fresh instance of the same plugin
    /// version with the session's id and seed, handed the game's state
    /// (`durable.restore`). Its idle time goes on from when it was last
    /// changed. `version` is the stored version (a shared store's; else 0),
    /// known before the restore: an event the restore arms may fire at once.
    pub fn revive(plugin: Arc<Plugin>, stored: Stored, home: Home, rt: tokio::runtime::Handle) -> Result<Arc<Session>, SessionError> {
        let Stored { record, state, version } = stored;
        let Some(durable) = plugin.durable else { return Err(cannot_rebuild(&plugin)) };
        let idle = Duration::from_millis(now_ms().saturating_sub(record.changed_at_ms));
        let session = Session::instantiate(plugin, record, Some(home), rt)?;
        if let Some(at) = Instant::now().checked_sub(idle) {
            *lock(&session.last_used) = at;
        }
        session.set_version(version);
        session.restore(durable, &state)?;
        // Its server may have stopped between writing its end and its record.
        session.settle_recovered();
        Ok(session)
    }

    /// Hands the game its stored state (`durable.restore`).
    fn restore(&self, durable: Durable, state: &[u8]) -> Result<(), SessionError> {
        let restored = self.run_export(CallInfo::default(), |store, instance| {
            let restore = instance.get_typed_func::<(&[u8],), (Result<(), String>,)>(&mut *store, durable.restore)?;
            Ok(restore.call(&mut *store, (state,))?.0)
        });
        match restored {
            Ok((Ok(()), _)) => {
                *lock(&self.stored) = Some(self.digest(state));
                Ok(())
            }
            Ok((Err(why), _)) => Err(SessionError::Game(format!("the game could not be rebuilt from its stored state: {why}"))),
            Err(why) => Err(why),
        }
    }

    fn instantiate(
        plugin: Arc<Plugin>,
        record: Record,
        home: Option<Home>,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Session>, SessionError> {
        let out_cap = plugin.limits.max_output_bytes;
        let caller = record.created_by.as_str();
        let (table, store, records) = match home {
            Some(Home { table, store, records }) => (Some(table), store.filter(|_| plugin.durable.is_some()), records),
            None => (None, None, None),
        };
        let session = Arc::new(Session {
            id: Mutex::new(record.id.clone()),
            renamed: AtomicBool::new(record.renamed),
            plugin: plugin.clone(),
            seeding: Seeding { seed: record.seed, chosen: record.seed_chosen, secret: record.secret, replay: record.replay },
            created_by: caller.to_string(),
            created_at: SystemTime::UNIX_EPOCH + Duration::from_millis(record.created_at_ms),
            changed_at_ms: AtomicU64::new(record.changed_at_ms),
            seating: Mutex::new(Seating { players: record.players.clone(), seats: record.seats.clone(), ..Seating::default() }),
            join_code: record.join_code.clone(),
            over: AtomicBool::new(record.over),
            last_used: Mutex::new(Instant::now()),
            calls: AtomicU64::new(record.calls),
            answers: Mutex::new(Answers { last: last_calls_of(&plugin, &record), ..Answers::default() }),
            waiting: AtomicU64::new(0),
            slot: Mutex::new(Slot::Dead("the session is still starting".into())),
            turn: tokio::sync::Mutex::new(()),
            stdout: GuestOutput::new(out_cap),
            stderr: GuestOutput::new(out_cap),
            last_stderr: Mutex::new(String::new()),
            news: Mutex::new(None),
            news_arrived: tokio::sync::Notify::new(),
            changed: watch::channel(0).0,
            timers: Mutex::new(HashMap::new()),
            next_timer: AtomicU64::new(0),
            channels: Arc::new(Channels::new(plugin.channels.clone(), caller, rt.clone())),
            table,
            store,
            stored: Mutex::new(None),
            version: AtomicU64::new(0),
            lease: Mutex::new(None),
            standing: Mutex::new(record.standing.clone()),
            records,
            leasing: Mutex::new(()),
            rt,
        });
        session.fresh_instance()?;
        Ok(session)
    }

    /// Gives the session a new instance of its plugin (at its start, and
    /// when another server changed the game).
    fn fresh_instance(self: &Arc<Self>) -> Result<(), SessionError> {
        let (session, plugin) = (self, &self.plugin);
        let Seeding { seed, secret, .. } = self.seeding;
        let seed = GameSeeds { visible: seed, whole: crate::store::whole_seed(seed, secret) };
        // A plugin's shared instance belongs to no session: it has no timers and no channels.
        let (host, channels) = if session.table.is_some() {
            let control: Weak<dyn SessionControl> = Arc::downgrade(session) as _;
            let inbox: Weak<dyn Inbox> = Arc::downgrade(session) as _;
            (HostCtx::new(&plugin.name, seed, Some(control)), ChannelsCtx::new(session.channels.clone(), inbox))
        } else {
            (HostCtx::new(&plugin.name, seed, None), ChannelsCtx::default())
        };
        let output = Output { stdout: session.stdout.clone(), stderr: session.stderr.clone() };
        let mut store = capability::new_store(plugin.pre.engine(), &plugin.limits, host, channels, output);
        let instance = plugin.pre.instantiate(&mut store);
        session.flush_output();
        let instance = instance.map_err(|e| SessionError::Game(format!("the plugin failed to start: {e:#}")))?;
        *lock(&session.slot) = Slot::Live(Box::new(Live { store, instance }));
        Ok(())
    }

    pub fn id(&self) -> String {
        lock(&self.id).clone()
    }

    pub fn is_player(&self, caller: &str) -> bool {
        !caller.is_empty() && lock(&self.seating).players.iter().any(|p| p == caller)
    }

    /// Seats `caller` (it joined with the code); once only.
    pub fn seat(&self, caller: &str) {
        let mut seating = lock(&self.seating);
        if !seating.players.iter().any(|p| p == caller) {
            seating.players.push(caller.to_string());
        }
    }

    /// Whether a seat may still be taken: one the game told is open, or,
    /// for a game that tells no seats (a plugin older than 0.1.6), any game
    /// that is not over. A replay has no seat for anyone else.
    pub fn has_open_seat(&self) -> bool {
        if self.seeding.replay || self.is_over() {
            return false;
        }
        let seating = lock(&self.seating);
        seating.seats.is_empty() || seating.seats.iter().any(|s| s.kind == Holder::Open)
    }

    /// Who holds each seat, in words, when the game told its seats and none
    /// is open ("white: alice; black: chess-engine/1").
    pub fn seats_all_taken(&self) -> Option<String> {
        let seating = lock(&self.seating);
        if seating.seats.is_empty() || seating.seats.iter().any(|s| s.kind == Holder::Open) {
            return None;
        }
        let who: Vec<String> = seating.seats.iter().map(|s| format!("{}: {}", s.seat, s.player.as_deref().unwrap_or("?"))).collect();
        Some(who.join("; "))
    }

    /// The game's secret, for `caller`'s answer, the first time that caller
    /// is answered after the game ended: the seed and secret that replay it.
    /// None while it runs, when it has no secret, or once told.
    pub fn secret_for(&self, caller: &str) -> Option<(u64, u64)> {
        let secret = self.seeding.secret?;
        if !self.has_ended() || caller.is_empty() {
            return None;
        }
        lock(&self.seating).told_secret.insert(caller.to_string()).then_some((self.seeding.seed, secret))
    }

    /// The game has ended: it said it is over, or its verdict is final (a
    /// puzzle solved or failed).
    pub fn has_ended(&self) -> bool {
        self.is_over() || lock(&self.standing).is_final()
    }

    /// A tool call from a client (the first run of it): counted for
    /// `ludus_sessions`; and for the game's result record unless its
    /// answer came from memory (`from_memory`).
    pub fn count_call(&self, from_memory: bool) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !from_memory {
            lock(&self.standing).tool_calls += 1;
        }
    }

    pub fn join_code(&self) -> Option<&str> {
        self.join_code.as_deref()
    }

    /// Whether `code` is this session's join code (compared in constant time).
    pub fn join_code_is(&self, code: &str) -> bool {
        self.join_code.as_deref().is_some_and(|mine| crate::runtime::same_secret(mine.as_bytes(), code.as_bytes()))
    }

    pub fn is_over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    pub fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }

    /// What a channel process last said on stderr, if it said it after `since`.
    pub fn news_since(&self, since: Instant) -> Option<String> {
        lock(&self.news).as_ref().filter(|(at, _)| *at >= since).map(|(_, line)| line.to_string())
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Wakes waiting calls: the session changed.
    pub fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    pub fn is_dead(&self) -> Option<String> {
        match &*lock(&self.slot) {
            Slot::Dead(why) => Some(why.clone()),
            Slot::Live(_) => None,
        }
    }

    /// Calls an exported function (blocking: run on a blocking thread).
    pub fn invoke(
        &self,
        export: &ComponentExportIndex,
        params: &[Val],
        results: usize,
        call: CallInfo,
    ) -> Result<Invocation, SessionError> {
        self.touch();
        let ((value, made_already), wait) = self.run_export(call, |store, instance| {
            let func =
                instance.get_func(&mut *store, export).ok_or_else(|| wasmtime::format_err!("the plugin does not export this function"))?;
            let mut out = vec![Val::Bool(false); results];
            func.call(&mut *store, params, &mut out)?;
            Ok((out.pop(), store.data_mut().host.made_already.take()))
        })?;
        Ok(Invocation { value, wait, made_already })
    }

    /// Runs `f` on the instance, within the plugin's CPU limit, and says
    /// whether the guest asked to wait. A trap ends the session (and its
    /// stored copy: it cannot go on from a state it crashed in).
    fn run_export<R>(
        &self,
        call: CallInfo,
        f: impl FnOnce(&mut Store<HostState>, &Instance) -> wasmtime::Result<R>,
    ) -> Result<(R, Option<u32>), SessionError> {
        let mut slot = lock(&self.slot);
        let live = match &mut *slot {
            Slot::Live(live) => live,
            Slot::Dead(why) => return Err(SessionError::Ended(why.clone())),
        };
        let Live { store, instance } = &mut **live;
        store.data_mut().host.call = call;
        store.data_mut().host.wait = None;
        store.data_mut().host.made_already = None;
        store.data_mut().host.waited = Default::default();
        store.set_epoch_deadline(ticks(self.plugin.limits.call_timeout));
        let outcome = f(store, instance);
        self.flush_output();
        match outcome {
            Ok(r) => {
                let host = &mut store.data_mut().host;
                let (wait, over, told, seats) =
                    (host.wait.take(), std::mem::take(&mut host.game_over), host.told.take(), host.seats.take());
                drop(slot);
                if let Some(told) = told {
                    lock(&self.standing).tell(told, now_ms());
                }
                if let Some(seats) = seats {
                    lock(&self.seating).seats = seats;
                }
                if over {
                    self.end_game();
                }
                Ok((r, wait))
            }
            Err(e) => {
                let why = self.trap_reason(&e, store.data().limiter.hit);
                tracing::warn!(plugin = self.plugin.name, session = self.id(), "session ended: {why}");
                *slot = Slot::Dead(why.clone());
                drop(slot);
                self.stop_io();
                self.record_end(&format!("it crashed: {why}"));
                self.forget();
                self.bump();
                Err(SessionError::Crashed(why))
            }
        }
    }

    /// What the host keeps of the session besides the game's state.
    fn record(&self) -> Record {
        let (players, seats) = {
            let seating = lock(&self.seating);
            (seating.players.clone(), seating.seats.clone())
        };
        Record {
            id: self.id(),
            plugin: self.plugin.name.clone(),
            plugin_version: self.plugin.version.clone(),
            plugin_sha256: self.plugin.sha256.clone(),
            seed: self.seeding.seed,
            seed_chosen: self.seeding.chosen,
            secret: self.seeding.secret,
            replay: self.seeding.replay,
            created_by: self.created_by.clone(),
            created_at_ms: self.created_at.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
            players,
            seats,
            join_code: self.join_code.clone(),
            over: self.is_over(),
            renamed: self.renamed.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
            changed_at_ms: self.changed_at_ms.load(Ordering::Relaxed),
            idle_timeout_ms: self.plugin.limits.idle_timeout.as_millis() as u64,
            last_calls: self.stored_calls(),
            standing: lock(&self.standing).clone(),
        }
    }

    /// Whether a restart finds this session again (it is written to a store).
    pub fn is_kept(&self) -> bool {
        self.store.is_some()
    }

    /// Writes the current game's record once the game said it ended: after
    /// the write that stored the verdict (a restart then finds the record
    /// due, not lost), and before the one that stores it was written.
    pub fn settle(&self) {
        self.settle_as(false);
    }

    /// The same for a game read back from the store with its record due
    /// (the server that ended it stopped before marking it written): unless
    /// the records file already holds it.
    pub fn settle_recovered(&self) {
        self.settle_as(true);
    }

    fn settle_as(&self, recovered: bool) {
        let Some(records) = &self.records else { return };
        // A call and an event (the simulator's last line) may settle at once.
        if !self.claim_record(Standing::due) {
            return;
        }
        let line = super::results::result_record(&self.record(), super::results::GAME_ENDED, now_ms());
        if recovered {
            records.append_once(&line)
        } else {
            records.append(&line)
        }
        if let Err(e) = self.relet().and_then(|()| self.persist()) {
            tracing::warn!(plugin = self.plugin.name, session = line.record, "the record was written but not marked so in the store: {e}");
            self.let_lease_go();
        }
    }

    /// The session ends (`why`): the record of a game that has not ended,
    /// as `abandoned`, or of one whose record is still to be written.
    /// Nothing is stored after this, so a plain append.
    pub fn record_end(&self, why: &str) {
        let Some(records) = &self.records else { return };
        if self.claim_record(Standing::unrecorded) {
            records.append(&super::results::result_record(&self.record(), why, now_ms()));
        }
    }

    /// Marks the current game's record written if `ready` says it is to be
    /// written now: true for exactly one caller, which then writes it.
    fn claim_record(&self, ready: fn(&Standing) -> bool) -> bool {
        let mut standing = lock(&self.standing);
        let claimed = ready(&standing);
        if claimed {
            standing.recorded = true;
        }
        claimed
    }

    /// The answer `caller`'s call for decision `decision` got, if it is the
    /// last one this player answered (the game said it was made already:
    /// this call is its retry).
    pub fn answer_of(&self, caller: &str, decision: u64) -> Option<(String, Val)> {
        lock(&self.answers).last.get(caller).filter(|c| c.decision == decision).map(|c| (c.tool.clone(), c.answer.clone()))
    }

    /// Keeps `caller`'s answer of decision `decision` for its retries.
    pub fn remember(&self, caller: &str, tool: &str, decision: u64, answer: Val) {
        let kept = LastCall { tool: tool.to_string(), decision, answer };
        lock(&self.answers).last.insert(caller.to_string(), kept);
    }

    /// Marks `caller`'s call for `decision` as held waiting for its answer
    /// (`on`), or no longer: a second call for it waits for that answer.
    pub fn awaiting(&self, caller: &str, decision: u64, on: bool) {
        let mut answers = lock(&self.answers);
        let key = (caller.to_string(), decision);
        if on {
            answers.waiting.insert(key);
        } else {
            answers.waiting.remove(&key);
        }
    }

    /// Whether a call of `caller` for `decision` is held waiting for its answer.
    pub fn is_awaiting(&self, caller: &str, decision: u64) -> bool {
        lock(&self.answers).waiting.contains(&(caller.to_string(), decision))
    }

    fn stored_calls(&self) -> std::collections::BTreeMap<String, StoredCall> {
        let answers = lock(&self.answers);
        let mut stored = std::collections::BTreeMap::new();
        for (caller, c) in answers.last.iter() {
            let Some(shape) = self.plugin.result_of(&c.tool) else { continue };
            stored.insert(caller.clone(), StoredCall { tool: c.tool.clone(), decision: c.decision, answer: shape.to_json(&c.answer) });
        }
        stored
    }

    /// What identifies the session's stored content (with the game's
    /// `state`): a write that would store the same again is left out.
    fn digest(&self, state: &[u8]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        {
            let seating = lock(&self.seating);
            (self.id(), &seating.players, &seating.seats, self.is_over(), state).hash(&mut h);
        }
        let standing = lock(&self.standing);
        (standing.game, standing.recorded, standing.told.as_ref().map(|t| (t.outcome, t.moves, t.illegal_moves))).hash(&mut h);
        drop(standing);
        let answers = lock(&self.answers);
        let mut kept: Vec<(&String, u64)> = answers.last.iter().map(|(caller, c)| (caller, c.decision)).collect();
        kept.sort();
        kept.hash(&mut h);
        h.finish()
    }

    /// Writes the session to its store, if it has one and something changed
    /// since the last write: the game's state (`durable.save`) and the
    /// host's record. Blocking (a guest call and a write): run it where the
    /// call that changed the session ran, before that call is answered.
    /// Fails only when a shared store refused the write (another server
    /// took the game over meanwhile): the call must not be reported made.
    pub fn persist(&self) -> Result<(), SessionError> {
        let (Some(store), Some(durable)) = (&self.store, self.plugin.durable) else { return Ok(()) };
        let saved = self.run_export(CallInfo::default(), |store, instance| {
            let save = instance.get_typed_func::<(), (Vec<u8>,)>(&mut *store, durable.save)?;
            Ok(save.call(&mut *store, ())?.0)
        });
        let Ok((state, _)) = saved else { return Ok(()) };
        // Most events change nothing stored: that is known before the
        // record (with its stored answers as JSON) is built.
        let d = self.digest(&state);
        let mut stored = lock(&self.stored);
        if *stored == Some(d) {
            return Ok(());
        }
        self.changed_at_ms.store(now_ms(), Ordering::Relaxed);
        let record = self.record();
        let mut lease = lock(&self.lease);
        match store.put(&record, &state, lease.as_ref()) {
            Ok(version) => {
                *stored = Some(d);
                self.set_version(version);
                // A shared store's write gave the lease back with it.
                *lease = None;
                Ok(())
            }
            Err(e) if store.shared().is_some() => {
                // This copy went where the stored game did not: it is not the game any more.
                *stored = None;
                self.set_version(u64::MAX);
                Err(SessionError::NotMade(e))
            }
            Err(e) => {
                tracing::error!(plugin = self.plugin.name, session = record.id, "the session could not be stored: {e}");
                Ok(())
            }
        }
    }

    /// Removes the session's stored copy (it ended).
    pub fn forget(&self) {
        self.forget_as(&self.id());
    }

    fn forget_as(&self, id: &str) {
        if let Some(store) = &self.store
            && let Err(e) = store.remove(id)
        {
            tracing::error!(plugin = self.plugin.name, session = id, "the session's stored copy could not be removed: {e}");
        }
    }

    fn trap_reason(&self, e: &wasmtime::Error, memory_limit_hit: bool) -> String {
        let limits = &self.plugin.limits;
        if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return format!("the plugin ran past its CPU limit of {} ms for one call and was stopped", limits.call_timeout.as_millis());
        }
        if memory_limit_hit {
            return format!("the plugin ran out of memory (limit {} MiB per session)", limits.memory_bytes >> 20);
        }
        let detail = panic_message(&lock(&self.last_stderr));
        let trap = e.downcast_ref::<Trap>().map(|t| t.to_string()).unwrap_or_else(|| format!("{e:#}"));
        if detail.is_empty() { format!("the plugin crashed ({trap})") } else { format!("the plugin crashed: {detail} ({trap})") }
    }

    /// Sends what the guest printed to the log, never to stdout.
    fn flush_output(&self) {
        let plugin = self.plugin.name.as_str();
        for (stream, out) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let (text, dropped) = out.take();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                tracing::info!(target: "ludus::guest", plugin, stream, "{line}");
            }
            if dropped > 0 {
                tracing::warn!(target: "ludus::guest", plugin, stream, "dropped {dropped} bytes of guest output over the per-call limit");
            }
            if stream == "stderr" && !text.is_empty() {
                let mut last = lock(&self.last_stderr);
                *last = text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
            }
        }
    }

    /// The game is over (`lifecycle.game-over`): its channels close now (its
    /// processes are killed, their budget freed); its state stays readable.
    fn end_game(&self) {
        if !self.over.swap(true, Ordering::Relaxed) {
            tracing::debug!(plugin = self.plugin.name, session = self.id(), "the game is over; closing its channels");
        }
        self.channels.close_all();
    }

    /// The session ended: no more timers, and every channel closed (its
    /// processes killed).
    pub fn stop_io(&self) {
        for (_, key) in lock(&self.timers).drain() {
            self.plugin.runtime.timers.disarm(key);
        }
        self.channels.close_all();
    }

    async fn fire_timer(self: Arc<Self>, id: u64) {
        let Some(export) = self.plugin.on_timer else {
            tracing::warn!(plugin = self.plugin.name, "timer fired but the plugin exports no events.on-timer");
            return;
        };
        if let Err(e) = self.clone().event(export, vec![Val::U64(id)]).await {
            tracing::warn!(plugin = self.plugin.name, "timer event failed: {e}");
        }
    }

    /// Delivers an event to the guest and stores what it changed, then wakes
    /// waiting calls (which answer from the stored state).
    async fn event(self: Arc<Self>, export: ComponentExportIndex, params: Vec<Val>) -> Result<(), SessionError> {
        let s = self.clone();
        let run = move || {
            s.leased(Run::Event, || {
                s.invoke(&export, &params, 0, CallInfo::default())?;
                s.persist()?;
                s.settle();
                Ok(())
            })
        };
        match run_guest(&self.plugin.event_pace, run).await {
            Ok(Ok(Ok(()))) => {
                self.bump();
                Ok(())
            }
            Ok(Err(SessionError::Elsewhere)) => Ok(()),
            Ok(Ok(Err(e)) | Err(e)) => Err(e),
            Err(e) => Err(SessionError::Game(e)),
        }
    }

    /// The session as its players see it in `ludus_sessions`: the seed only
    /// once the game is over (it would let a player foresee a running game).
    pub fn info(&self) -> SessionInfo {
        let ended = self.is_dead();
        let over = self.has_ended();
        let public = over || ended.is_some();
        let (players, seats) = {
            let seating = lock(&self.seating);
            (seating.players.len(), seating.seats.clone())
        };
        SessionInfo {
            id: self.id(),
            plugin: self.plugin.name.clone(),
            plugin_version: self.plugin.version.clone(),
            seed: public.then_some(self.seeding.seed),
            secret: self.seeding.secret.filter(|_| public),
            replay: self.seeding.replay,
            created_by: self.created_by.clone(),
            players,
            seats,
            join_code: self.join_code.clone().filter(|_| self.has_open_seat()),
            game_over: over,
            idle_seconds: self.idle_for().as_secs(),
            calls: self.calls.load(Ordering::Relaxed),
            waiting_calls: self.waiting.load(Ordering::Relaxed),
            channels: self.channels.list(),
            ended,
        }
    }
}

/// A stored game of a plugin that cannot hand over its state.
fn cannot_rebuild(plugin: &Plugin) -> SessionError {
    SessionError::Game(format!("{} cannot rebuild a game from its state", plugin.name))
}

/// What the host interface may do to the session (`capability::host`).
impl SessionControl for Session {
    fn id(&self) -> String {
        Session::id(self)
    }

    /// Renames the session once (host import `rename-session`).
    fn rename(&self, name: &str) -> Result<(), String> {
        let ok = !name.is_empty() && name.len() <= 128 && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
        if !ok {
            return Err("a session name is 1-128 characters of A-Z a-z 0-9 - _ . :".into());
        }
        if self.renamed.swap(true, Ordering::SeqCst) {
            return Err("the session was already renamed".into());
        }
        let old = self.id();
        if let Some(table) = self.table.as_ref().and_then(Weak::upgrade)
            && let Err(e) = table.rename(&old, name)
        {
            self.renamed.store(false, Ordering::SeqCst);
            return Err(e);
        }
        *lock(&self.id) = name.to_string();
        // The next write stores it under its new name.
        self.forget_as(&old);
        *lock(&self.stored) = None;
        Ok(())
    }

    fn set_timer(self: Arc<Self>, delay_ms: u32) -> u64 {
        let mut timers = lock(&self.timers);
        if timers.len() >= MAX_TIMERS {
            tracing::warn!(plugin = self.plugin.name, "more than {MAX_TIMERS} pending timers; set-timer ignored");
            return 0;
        }
        let id = self.next_timer.fetch_add(1, Ordering::Relaxed) + 1;
        let (weak, rt) = (Arc::downgrade(&self), self.rt.clone());
        // Armed on the runtime's clock (no thread woken inside the call); when
        // due, the event goes to a task. A timer cancelled in between has
        // left the table and does not fire.
        let key = self.plugin.runtime.timers.arm(Duration::from_millis(delay_ms.into()), move || {
            rt.spawn(async move {
                let Some(s) = weak.upgrade() else { return };
                let pending = lock(&s.timers).remove(&id).is_some();
                if pending {
                    s.fire_timer(id).await;
                }
            });
        });
        timers.insert(id, key);
        id
    }

    fn cancel_timer(&self, id: u64) {
        if let Some(key) = lock(&self.timers).remove(&id) {
            self.plugin.runtime.timers.disarm(key);
        }
    }
}

/// Channel input comes back in here (`capability::channels`).
#[async_trait::async_trait]
impl Inbox for Session {
    /// Delivers channel input into the guest (`events.on-message` /
    /// `on-closed`) and wakes waiting calls. False when the guest could not
    /// take it (the session ended or the plugin has no such event).
    fn note(&self, line: &str) {
        *lock(&self.news) = Some((Instant::now(), line.into()));
        self.news_arrived.notify_waiters();
    }

    async fn deliver(self: Arc<Self>, channel: u32, input: Input) -> bool {
        let (export, params) = match input {
            Input::Message(data) => (self.plugin.on_message, vec![Val::U32(channel), Val::String(data)]),
            Input::Closed(reason) => (self.plugin.on_closed, vec![Val::U32(channel), Val::String(reason)]),
        };
        let Some(export) = export else { return false };
        let plugin = self.plugin.name.clone();
        match self.event(export, params).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(plugin, channel, "channel event failed: {e}");
                false
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop_io();
    }
}

#[derive(Serialize, Debug, schemars::JsonSchema)]
pub struct SessionInfo {
    pub id: String,
    pub plugin: String,
    pub plugin_version: String,
    /// Shown once the game is over or ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The secret mixed into the seed for what is hidden, shown once the
    /// game is over or ended: with the seed, the starting tool's `secret`
    /// replays the game.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<u64>,
    /// The game replays a finished one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    pub created_by: String,
    /// Callers that may play: the creator and those who joined.
    pub players: usize,
    /// For games with seats: each seat and who holds it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub seats: Vec<Seat>,
    /// For games with a seat still open: what to hand the agent who should take it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_code: Option<String>,
    /// The game is over (it said so, or a puzzle was solved or failed); a
    /// game's processes are gone, its state readable.
    pub game_over: bool,
    pub idle_seconds: u64,
    pub calls: u64,
    pub waiting_calls: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl SessionInfo {
    /// A stored session not running yet, from its record.
    pub fn of_stored(r: &Record) -> SessionInfo {
        SessionInfo {
            id: r.id.clone(),
            plugin: r.plugin.clone(),
            plugin_version: r.plugin_version.clone(),
            seed: r.over.then_some(r.seed),
            secret: r.secret.filter(|_| r.over),
            replay: r.replay,
            created_by: r.created_by.clone(),
            players: r.players.len(),
            seats: r.seats.clone(),
            join_code: r
                .join_code
                .clone()
                .filter(|_| !r.over && !r.replay && (r.seats.is_empty() || r.seats.iter().any(|s| s.kind == Holder::Open))),
            game_over: r.over || r.standing.is_final(),
            idle_seconds: now_ms().saturating_sub(r.changed_at_ms) / 1000,
            calls: r.calls,
            waiting_calls: 0,
            channels: Vec::new(),
            ended: None,
        }
    }
}

/// A decision call answered, kept to answer its retry.
struct LastCall {
    tool: String,
    decision: u64,
    answer: Val,
}

/// The stored calls of a record, as values of the plugin's result types
/// (one that no longer converts is left out: its retry runs as a new call).
fn last_calls_of(plugin: &Plugin, record: &Record) -> HashMap<String, LastCall> {
    let mut calls = HashMap::new();
    for (caller, c) in &record.last_calls {
        let Some(shape) = plugin.result_of(&c.tool) else { continue };
        if let Ok(answer) = shape.to_val(&c.answer, "answer") {
            calls.insert(caller.clone(), LastCall { tool: c.tool.clone(), decision: c.decision, answer });
        }
    }
    calls
}

/// A join code: 16 characters from a v4 UUID's random bits (about 64 bits),
/// grouped for reading aloud or copying.
fn new_join_code() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}-{}-{}", &hex[0..4], &hex[4..8], &hex[8..12], &hex[16..20])
}

/// What a guest said on stderr as it crashed: a Python exception
/// (componentize-py prints the traceback, then panics in its Rust runtime:
/// the exception is the useful part); a Rust panic ("panicked at …:" then
/// the message); a JavaScript error (componentize-js prints the message, then
/// "Stack:" and frames, then its own abort notice); otherwise the last line.
fn panic_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note: run with")).collect();
    if let Some(t) = lines.iter().rposition(|l| l.starts_with("Traceback (most recent call last)")) {
        let traceback = &lines[t + 1..];
        let traceback = &traceback[..traceback.iter().position(|l| l.contains("panicked at")).unwrap_or(traceback.len())];
        if let Some(exception) = traceback.last() {
            let frame = traceback.iter().rev().find(|l| l.starts_with("File \"")).map(|f| format!(" ({f})")).unwrap_or_default();
            return format!("{exception}{frame}");
        }
    }
    if let Some(i) = lines.iter().rposition(|l| l.contains("panicked at")) {
        let location = lines[i].split("panicked at").nth(1).unwrap_or("").trim().trim_end_matches(':');
        let message = lines[i + 1..].join(" ");
        return format!("panicked: {message} (at {location})");
    }
    if let Some(i) = lines.iter().rposition(|l| *l == "Stack:").filter(|&i| i > 0) {
        let frame = lines.get(i + 1).map(|f| format!(" (at {f})")).unwrap_or_default();
        return format!("{}{frame}", lines[i - 1]);
    }
    lines.last().map(|l| l.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn crash_messages_of_each_language() {
        let rust = "thread '<unnamed>' panicked at src/lib.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(panic_message(rust), "panicked: boom (at src/lib.rs:3:5)");
        let js = "boom error\nStack:\n  fail@probe.js:15:56\n  export_tools$fail@initializer.js:486:15\nRedirecting call to abort() to mozalloc_abort\n";
        assert_eq!(panic_message(js), "boom error (at fail@probe.js:15:56)");
        let python = "Traceback (most recent call last):\n  File \"/0/probe.py\", line 39, in fail\nValueError: raised on purpose\n\
                      thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1280:25:\nPython function threw an unexpected exception\n";
        assert_eq!(panic_message(python), "ValueError: raised on purpose (File \"/0/probe.py\", line 39, in fail)");
        assert_eq!(panic_message("first\nlast words\n"), "last words");
    }
}

//! One session: one component instance with its store. Calls and events run
//! one at a time (a guest never blocks, so each is short); a trap ends only
//! this session, and the next call says what happened. The session is what
//! the capabilities see through `SessionControl` and `Inbox`.
//!
//! Its changing state is in parts, each behind its own lock: the ledger
//! (what the host keeps of the game: `ledger.rs`), the guest (the instance
//! and its output: `guest.rs`), turns and waits and timers (`waits.rs`),
//! and what is kept in the store (`persist.rs`, with leases in `lease.rs`).

mod clock;
mod error;
mod guest;
mod info;
mod lease;
mod ledger;
mod legal;
mod persist;
mod replay;
mod unload;
mod waits;

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, Instance, Val};

use crate::capability::channels::{Channels, Inbox, Input};
use crate::capability::host::SessionControl;
use crate::capability::{self, CallInfo, ChannelsCtx, GameSeeds, GuestOutput, HostCtx, HostState, Output};
use crate::locking::lock;
use crate::plugin::{Durable, Plugin};
use crate::records::{Action, IllegalMovePolicy, MatchTag, RecordsFile, Standing};
use crate::runtime::{run_guest, ticks};
use crate::store::{Record, SessionStore, Stored, StoredCall, now_ms};

pub use error::SessionError;
pub use info::SessionInfo;
pub use lease::Run;

pub use waits::Waits;

use guest::{Guest, Live, Slot};
use ledger::Ledger;
use persist::Kept;
use waits::{MAX_TIMERS, Timers};

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

/// What one call into the guest produced.
pub struct Invocation {
    pub value: Option<Val>,
    /// The guest asked to wait (milliseconds, 0 = the tool's default).
    pub wait: Option<u32>,
    /// The guest said the decision this call names was made already
    /// (`decisions.made-already`): its answer is the one kept for it.
    pub made_already: Option<u32>,
    /// Where the game's log entered the call (none: it did not).
    pub logged_at: Option<usize>,
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

/// A session. What never changes is in plain fields; each changing part
/// is behind one lock, and no lock is taken while holding a later one in
/// this order: `kept.leasing` → `kept.written` → `guest` → `ledger`
/// (`timers` and the news are taken alone).
pub struct Session {
    pub plugin: Arc<Plugin>,
    pub seeding: Seeding,
    /// The match of a run it was started for (`arena`).
    pub in_match: Option<MatchTag>,
    pub created_by: String,
    pub created_at: SystemTime,
    /// What the creator hands out for a seat (plugins with `joins` tools).
    join_code: Option<String>,
    /// The table that lists this session (none for a plugin's shared instance).
    table: Option<Weak<dyn Names>>,
    pub channels: Arc<Channels>,
    rt: tokio::runtime::Handle,
    /// Name, players, seats, answers kept for retries, standing, counts.
    ledger: Mutex<Ledger>,
    /// The instance, held for the length of each call into it.
    guest: Mutex<Guest>,
    /// What the guest prints (the WASI pipes' buffers, each its own lock).
    output: Output,
    /// Turns, waiting calls and the news they are shown.
    pub waits: Waits,
    timers: Mutex<Timers>,
    /// The store and records file, what was last written, the lease.
    kept: Kept,
    /// Timers and process input held back for a replay (`ludus verify`).
    held: Option<replay::Held>,
    /// Each agent whose decision is due under a clock, and its clock's
    /// epoch (`clock`): a timer that fires for another epoch does nothing.
    clock_due: Mutex<std::collections::HashMap<String, u64>>,
    clock_epoch: std::sync::atomic::AtomicU64,
}

impl Session {
    /// Instantiates a plugin. `home` is none for a plugin's shared instance.
    pub fn start(
        plugin: Arc<Plugin>,
        id: String,
        seeding: Seeding,
        caller: &str,
        in_match: Option<MatchTag>,
        home: Option<Home>,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Session>, SessionError> {
        let mut record = Session::new_record(&plugin, id, seeding, caller, plugin.limits.illegal_moves);
        record.in_match = in_match;
        Session::instantiate(plugin, record, home, rt, false)
    }

    /// Instantiates a plugin to play a recorded game again (`ludus
    /// verify`), under the policy it was played under: its timers and
    /// process input wait for the replay (`replay.rs`).
    pub fn start_replay(
        plugin: Arc<Plugin>,
        seeding: Seeding,
        caller: &str,
        policy: IllegalMovePolicy,
        home: Home,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Session>, SessionError> {
        let record = Session::new_record(&plugin, "replay".into(), seeding, caller, policy);
        Session::instantiate(plugin, record, Some(home), rt, true)
    }

    fn new_record(plugin: &Plugin, id: String, seeding: Seeding, caller: &str, policy: IllegalMovePolicy) -> Record {
        Record {
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
            standing: Standing { clock: plugin.limits.clock, ..Standing::new(now_ms(), policy) },
            ..Default::default()
        }
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
        let session = Session::instantiate(plugin, record, Some(home), rt, false)?;
        if let Some(at) = Instant::now().checked_sub(idle) {
            lock(&session.ledger).last_used = at;
        }
        session.set_version(version);
        session.log_rebuilt();
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
                let digest = lock(&self.ledger).digest(state);
                lock(&self.kept.written).digest = Some(digest);
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
        replaying: bool,
    ) -> Result<Arc<Session>, SessionError> {
        let out_cap = plugin.limits.max_output_bytes;
        let caller = record.created_by.as_str();
        let counters = record.counters;
        let (table, store, records) = match home {
            Some(Home { table, store, records }) => (Some(table), store.filter(|_| plugin.durable.is_some()), records),
            None => (None, None, None),
        };
        let session = Arc::new(Session {
            ledger: Mutex::new(Ledger::of(&record)),
            plugin: plugin.clone(),
            seeding: Seeding { seed: record.seed, chosen: record.seed_chosen, secret: record.secret, replay: record.replay },
            in_match: record.in_match.clone(),
            created_by: caller.to_string(),
            created_at: SystemTime::UNIX_EPOCH + Duration::from_millis(record.created_at_ms),
            join_code: record.join_code.clone(),
            table,
            channels: Arc::new(Channels::new(plugin.channels.clone(), caller, rt.clone())),
            rt,
            guest: Mutex::new(Guest::starting()),
            output: Output { stdout: GuestOutput::new(out_cap), stderr: GuestOutput::new(out_cap) },
            waits: Waits::new(),
            timers: Mutex::new(Timers::default()),
            kept: Kept::new(store, records),
            held: replaying.then(replay::Held::default),
            clock_due: Mutex::default(),
            clock_epoch: Default::default(),
        });
        session.resume_counters(counters);
        session.fresh_instance()?;
        Ok(session)
    }

    /// Gives the session a new instance of its plugin (at its start, and
    /// when another server changed the game).
    fn fresh_instance(self: &Arc<Self>) -> Result<(), SessionError> {
        let (session, plugin) = (self, &self.plugin);
        let Seeding { seed, secret, .. } = self.seeding;
        let seed = GameSeeds { visible: seed, whole: crate::store::whole_seed(seed, secret) };
        let changes = plugin.runtime.resource_changes.clone();
        // A plugin's shared instance belongs to no session: it has no timers and no channels.
        let (host, channels) = if session.table.is_some() {
            let control: Weak<dyn SessionControl> = Arc::downgrade(session) as _;
            let inbox: Weak<dyn Inbox> = Arc::downgrade(session) as _;
            (HostCtx::new(&plugin.name, seed, Some(control), changes), ChannelsCtx::new(session.channels.clone(), inbox))
        } else {
            (HostCtx::new(&plugin.name, seed, None, changes), ChannelsCtx::default())
        };
        let mut store = capability::new_store(plugin.pre.engine(), &plugin.limits, host, channels, session.output.clone());
        let instance = plugin.pre.instantiate(&mut store);
        let mut guest = lock(&session.guest);
        guest.flush(&plugin.name, &session.output);
        let instance =
            instance.map_err(|e| SessionError::Game(format!("the plugin failed to start: {}", crate::runtime::error_text(&e))))?;
        guest.slot = Slot::Live(Box::new(Live { store, instance }));
        Ok(())
    }

    pub fn id(&self) -> String {
        lock(&self.ledger).id.clone()
    }

    pub fn is_player(&self, caller: &str) -> bool {
        !caller.is_empty() && lock(&self.ledger).players.iter().any(|p| p == caller)
    }

    /// Seats `caller` (it joined with the code); once only.
    pub fn seat(&self, caller: &str) {
        let mut ledger = lock(&self.ledger);
        if !ledger.players.iter().any(|p| p == caller) {
            ledger.players.push(caller.to_string());
        }
    }

    /// Whether a seat may still be taken: one the game told is open, or,
    /// for a game that tells no seats (a plugin older than 0.1.6), any game
    /// that is not over. A replay's seats are taken as any game's: its
    /// joiner is told that its hidden parts are published.
    pub fn has_open_seat(&self) -> bool {
        let ledger = lock(&self.ledger);
        !ledger.over && ledger.has_open_seat()
    }

    /// Who holds each seat, in words, when the game told its seats and none
    /// is open ("white: alice; black: chess-engine/1").
    pub fn seats_all_taken(&self) -> Option<String> {
        let ledger = lock(&self.ledger);
        if ledger.has_open_seat() {
            return None;
        }
        let who: Vec<String> = ledger.seats.iter().map(|s| format!("{}: {}", s.seat, s.player.as_deref().unwrap_or("?"))).collect();
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
        lock(&self.ledger).told_secret.insert(caller.to_string()).then_some((self.seeding.seed, secret))
    }

    /// The game has ended: it said it is over, or its verdict is final (a
    /// puzzle solved or failed).
    pub fn has_ended(&self) -> bool {
        let ledger = lock(&self.ledger);
        ledger.over || ledger.standing.is_final()
    }

    /// A tool call from a client (the first run of it): counted for
    /// `ludus_sessions`; and for the game's result record unless its
    /// answer came from memory (`from_memory`).
    pub fn count_call(&self, from_memory: bool) {
        let mut ledger = lock(&self.ledger);
        ledger.calls += 1;
        if !from_memory {
            ledger.standing.tool_calls += 1;
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
        lock(&self.ledger).over
    }

    pub fn idle_for(&self) -> Duration {
        lock(&self.ledger).last_used.elapsed()
    }

    /// What a channel process last said on stderr, if it said it after `since`.
    pub fn news_since(&self, since: Instant) -> Option<String> {
        self.waits.news_since(since)
    }

    fn touch(&self) {
        lock(&self.ledger).last_used = Instant::now();
    }

    /// Wakes waiting calls: the session changed.
    pub fn bump(&self) {
        self.waits.bump();
    }

    pub fn is_dead(&self) -> Option<String> {
        lock(&self.guest).dead().map(str::to_string)
    }

    /// Calls an exported function (blocking: run on a blocking thread).
    /// `logged`: what the game's log says of it, when it may change the game
    /// (entered in the order calls and events run, unless the game said the
    /// call's decision was made already: then nothing ran).
    pub fn invoke(
        &self,
        export: &ComponentExportIndex,
        params: &[Val],
        results: usize,
        call: CallInfo,
        logged: Option<Action>,
    ) -> Result<Invocation, SessionError> {
        self.touch();
        let ((value, made_already, logged_at), wait) = self.run_export(call, |store, instance| {
            let func =
                instance.get_func(&mut *store, export).ok_or_else(|| wasmtime::format_err!("the plugin does not export this function"))?;
            let mut out = vec![Val::Bool(false); results];
            func.call(&mut *store, params, &mut out)?;
            let (value, made_already) = (out.pop(), store.data_mut().host.made_already.take());
            let logged_at = logged
                .filter(|_| made_already.is_none() && self.keeps_log())
                .map(|a| self.log(a, matches!(value, Some(Val::Result(Err(_))))));
            Ok((value, made_already, logged_at))
        })?;
        Ok(Invocation { value, wait, made_already, logged_at })
    }

    /// Whether the session keeps its game's log: only for result records
    /// (the server keeps them, or this is a replay of one), since the log
    /// is written with every change of a stored game.
    pub fn keeps_log(&self) -> bool {
        self.kept.records.is_some() || self.held.is_some()
    }

    /// Enters in the game's log that it is rebuilt from its stored state
    /// here: a replay rebuilds it at the same place.
    fn log_rebuilt(&self) {
        if self.keeps_log() {
            self.log(Action::Rebuilt { rebuilt: true }, false);
        }
    }

    /// Enters what ran in the game's log (`refused`: the game refused the
    /// call), and says where. Called with the guest's lock held, so the
    /// log's order is the order things ran.
    fn log(&self, mut action: Action, refused: bool) -> usize {
        let now = now_ms();
        let standing = &mut lock(&self.ledger).standing;
        if let Action::Call { refused: r, at_ms, think_ms, .. } = &mut action {
            *r = refused;
            *at_ms = Some(now.saturating_sub(standing.started_at_ms));
            *think_ms = (standing.last_logged_ms > 0).then(|| now.saturating_sub(standing.last_logged_ms));
        }
        standing.last_logged_ms = now;
        let log = &mut standing.log;
        if !log.last_mut().is_some_and(|last| last.absorb(&action)) {
            log.push(action);
        }
        log.len() - 1
    }

    /// Runs `f` on the instance, within the plugin's CPU limit, and says
    /// whether the guest asked to wait. A trap ends the session (and its
    /// stored copy: it cannot go on from a state it crashed in).
    fn run_export<R>(
        &self,
        call: CallInfo,
        f: impl FnOnce(&mut Store<HostState>, &Instance) -> wasmtime::Result<R>,
    ) -> Result<(R, Option<u32>), SessionError> {
        let mut guest = lock(&self.guest);
        let live = match &mut guest.slot {
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
        let outcome = match outcome {
            Ok(r) => Ok((r, guest::take_said(store.data_mut()))),
            Err(e) => Err((e, store.data().limiter.hit)),
        };
        guest.flush(&self.plugin.name, &self.output);
        match outcome {
            Ok((r, said)) => {
                let wait = said.wait;
                // Taken before the next call or event can run: statements
                // enter the game's standing in the order they were made. (A
                // final verdict overtaken by the statement of play of the
                // call before it would leave the game unfinished, its record
                // never written.)
                let ends = self.take_said(said);
                drop(guest);
                if ends {
                    self.end_game();
                }
                Ok((r, wait))
            }
            Err((e, memory_hit)) => {
                let why = guest.trap_reason(&e, memory_hit, &self.plugin.limits);
                tracing::warn!(plugin = self.plugin.name, session = self.id(), "session ended: {why}");
                guest.slot = Slot::Dead(why.clone());
                drop(guest);
                self.stop_io();
                self.record_end(&format!("it crashed: {why}"));
                self.forget();
                self.bump();
                Err(SessionError::Crashed(why))
            }
        }
    }

    /// Takes what the game told the host in a call: where it stands, its
    /// seats, that it is over. A player the illegal-move policy makes lose
    /// (its refused moves counted from the game's own counts) loses here.
    /// True when the game is over now (the caller ends it, `end_game`,
    /// once it has let go of the guest). Called with the guest's lock held.
    fn take_said(&self, said: guest::Said) -> bool {
        let mut ledger = lock(&self.ledger);
        if let Some(seats) = said.seats {
            ledger.seats = seats;
        }
        let game = ledger.standing.game;
        let lost = said.told.is_some_and(|told| ledger.standing.tell_in_call(told, &said.caller, now_ms()));
        if ledger.standing.game != game {
            // The ledger is held: its id is read from it (`self.id()` would lock it again).
            tracing::debug!(
                plugin = self.plugin.name,
                session = ledger.id,
                caller = said.caller,
                "a statement of play after a recorded game begins game {}",
                ledger.standing.game
            );
        }
        if lost {
            ledger.lose_by_policy(&said.caller, &self.created_by);
        }
        said.over || lost
    }

    /// Who lost the game under the illegal-move policy, and the policy.
    pub fn lost_by_policy(&self) -> Option<(String, IllegalMovePolicy)> {
        let ledger = lock(&self.ledger);
        ledger.standing.forfeit.clone().map(|who| (who, ledger.standing.policy))
    }

    /// The answer `caller`'s call for decision `decision` got, if it is one
    /// of the last this player answered (the game said it was made
    /// already: this call is its retry).
    /// One that no longer converts to the tool's result is none: its retry
    /// is answered as a new call.
    pub fn answer_of(&self, caller: &str, decision: u64) -> Option<(String, Val)> {
        let kept = lock(&self.ledger).answer_of(caller, decision).cloned()?;
        let answer = self.plugin.result_of(&kept.tool)?.to_val(&kept.answer, "answer").ok()?;
        Some((kept.tool, answer))
    }

    /// Keeps `caller`'s answer of decision `decision` for its retries (as
    /// JSON, converted once here).
    pub fn remember(&self, caller: &str, tool: &str, decision: u64, answer: Val) {
        let Some(shape) = self.plugin.result_of(tool) else { return };
        let kept = StoredCall { tool: tool.to_string(), decision, answer: shape.to_json(&answer) };
        lock(&self.ledger).remember(caller, kept);
    }

    /// Marks `caller`'s call for `decision` as held waiting for its answer
    /// (`on`), or no longer: a second call for it waits for that answer.
    pub fn awaiting(&self, caller: &str, decision: u64, on: bool) {
        let awaiting = &mut lock(&self.ledger).awaiting;
        let key = (caller.to_string(), decision);
        if on {
            awaiting.insert(key);
        } else {
            awaiting.remove(&key);
        }
    }

    /// Whether a call of `caller` for `decision` is held waiting for its answer.
    pub fn is_awaiting(&self, caller: &str, decision: u64) -> bool {
        lock(&self.ledger).awaiting.contains(&(caller.to_string(), decision))
    }

    /// The game is over (`lifecycle.game-over`): its channels close now (its
    /// processes are killed, their budget freed); its state stays readable.
    fn end_game(&self) {
        let (was_over, told) = {
            let mut ledger = lock(&self.ledger);
            (std::mem::replace(&mut ledger.over, true), ledger.standing.is_final())
        };
        if !was_over {
            tracing::debug!(plugin = self.plugin.name, session = self.id(), "the game is over; closing its channels");
            // A plugin's slip that would otherwise show only as a result
            // record missing (or abandoned) when the session ends.
            if !told {
                tracing::warn!(
                    plugin = self.plugin.name,
                    session = self.id(),
                    "the game said it is over without telling its result (`outcome.tell` with a verdict): its result record waits for one"
                );
            }
        }
        self.channels.close_all();
    }

    /// The session ended: no more timers, and every channel closed (its
    /// processes killed). Whether a timer or a channel was running.
    pub fn stop_io(&self) -> bool {
        let mut stopped = false;
        for (_, key) in lock(&self.timers).pending.drain() {
            self.plugin.runtime.timers.disarm(key);
            stopped = true;
        }
        self.channels.close_all() || stopped
    }

    async fn fire_timer(self: Arc<Self>, id: u64) {
        let Some(export) = self.plugin.on_timer else {
            tracing::warn!(plugin = self.plugin.name, "timer fired but the plugin exports no events.on-timer");
            return;
        };
        if let Err(e) = self.clone().event(export, vec![Val::U64(id)], Some(Action::Timer { timer: id })).await {
            tracing::warn!(plugin = self.plugin.name, "timer event failed: {e}");
        }
    }

    /// Delivers an event to the guest and stores what it changed, then wakes
    /// waiting calls (which answer from the stored state).
    async fn event(self: Arc<Self>, export: ComponentExportIndex, params: Vec<Val>, logged: Option<Action>) -> Result<(), SessionError> {
        let s = self.clone();
        let run = move || {
            let ran = s.leased(Run::Event, || {
                s.invoke(&export, &params, 0, CallInfo::default(), logged)?;
                s.persist()?;
                s.settle();
                s.run_clock(None);
                Ok(())
            });
            // Woken here, not after the await below: an event that ends the
            // game closes the session's channels, which aborts the channel
            // task awaiting this run when it runs on a blocking thread.
            if matches!(ran, Ok(Ok(()))) {
                s.bump();
            }
            ran
        };
        match run_guest(&self.plugin.event_pace, run).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Err(SessionError::Elsewhere)) => Ok(()),
            Ok(Ok(Err(e)) | Err(e)) => Err(e),
            Err(e) => Err(SessionError::Run(e)),
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
        let old = {
            let mut ledger = lock(&self.ledger);
            if std::mem::replace(&mut ledger.renamed, true) {
                return Err("the session was already renamed".into());
            }
            ledger.id.clone()
        };
        // Not under the ledger's lock: the table takes its own, and reads ids under it.
        if let Some(table) = self.table.as_ref().and_then(Weak::upgrade)
            && let Err(e) = table.rename(&old, name)
        {
            lock(&self.ledger).renamed = false;
            return Err(e);
        }
        lock(&self.ledger).id = name.to_string();
        // The next write stores it under its new name (and its new lease,
        // where servers share the store: the old one went with the old name).
        self.forget_as(&old);
        let mut written = lock(&self.kept.written);
        written.digest = None;
        written.lease = None;
        drop(written);
        self.relet().map_err(|e| e.to_string())
    }

    fn set_timer(self: Arc<Self>, delay_ms: u32) -> u64 {
        let mut timers = lock(&self.timers);
        if timers.pending.len() >= MAX_TIMERS {
            tracing::warn!(plugin = self.plugin.name, "more than {MAX_TIMERS} pending timers; set-timer ignored");
            return 0;
        }
        timers.last += 1;
        let id = timers.last;
        if let Some(held) = &self.held {
            lock(&held.timers).insert(id);
            return id;
        }
        let (weak, rt) = (Arc::downgrade(&self), self.rt.clone());
        // Armed on the runtime's clock (no thread woken inside the call); when
        // due, the event goes to a task. A timer cancelled in between has
        // left the table and does not fire.
        let key = self.plugin.runtime.timers.arm(Duration::from_millis(delay_ms.into()), move || {
            rt.spawn(async move {
                let Some(s) = weak.upgrade() else { return };
                let pending = lock(&s.timers).pending.remove(&id).is_some();
                if pending {
                    s.fire_timer(id).await;
                }
            });
        });
        timers.pending.insert(id, key);
        id
    }

    fn cancel_timer(&self, id: u64) {
        if let Some(held) = &self.held {
            lock(&held.timers).remove(&id);
        }
        if let Some(key) = lock(&self.timers).pending.remove(&id) {
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
        self.waits.tell_news(line);
    }

    async fn deliver(self: Arc<Self>, channel: u32, input: Input) -> bool {
        match &self.held {
            Some(held) => {
                held.hold(channel, input);
                true
            }
            None => self.deliver_now(channel, input).await,
        }
    }
}

impl Session {
    async fn deliver_now(self: Arc<Self>, channel: u32, input: Input) -> bool {
        let (export, params, logged) = match input {
            Input::Message(data) => {
                let logged = self.keeps_log().then(|| Action::line(channel, &data));
                (self.plugin.on_message, vec![Val::U32(channel), Val::String(data)], logged)
            }
            Input::Closed(reason) => {
                (self.plugin.on_closed, vec![Val::U32(channel), Val::String(reason)], Some(Action::Closed { closed: channel }))
            }
        };
        let Some(export) = export else { return false };
        let plugin = self.plugin.name.clone();
        match self.event(export, params, logged).await {
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

/// A join code: 16 characters from a v4 UUID's random bits (about 64 bits),
/// grouped for reading aloud or copying.
fn new_join_code() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}-{}-{}", &hex[0..4], &hex[4..8], &hex[8..12], &hex[16..20])
}

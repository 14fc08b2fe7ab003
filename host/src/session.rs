//! Sessions (DESIGN §5): one game = one session = one component instance.
//!
//! A session owns its store. Calls and events for it run one at a time on a
//! blocking thread (a guest never blocks, so each is short); different
//! sessions run in parallel. A trap kills only its own session, and the next
//! call on it says what happened. Waiting is done here, not in the guest: a
//! call that asked to wait is held and re-run when the session changes or
//! its deadline passes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{ComponentExportIndex, Instance, Val};
use wasmtime::{Store, Trap};

use crate::capability::channels::{ChannelInfo, Channels, Inbox, Input};
use crate::capability::host::SessionControl;
use crate::capability::{self, CallInfo, ChannelsCtx, GuestOutput, HostCtx, HostState, Output};
use crate::plugin::{Plugin, Role, ToolDef};
use crate::runtime::ticks;
use crate::sync::lock;

/// Pending timers one session may have at once.
const MAX_TIMERS: usize = 64;
/// Recently ended session ids remembered to explain "expired" vs "unknown".
const GONE_MEMORY: usize = 10_000;

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
}

pub struct Session {
    id: Mutex<String>,
    renamed: AtomicBool,
    pub plugin: Arc<Plugin>,
    pub seed: u64,
    pub created_by: String,
    pub created_at: SystemTime,
    last_used: Mutex<Instant>,
    calls: AtomicU64,
    /// Calls currently held in a wait on this session.
    waiting: AtomicU64,
    slot: Mutex<Slot>,
    stdout: GuestOutput,
    stderr: GuestOutput,
    last_stderr: Mutex<String>,
    /// Bumped on every change; waiting calls watch it.
    changed: watch::Sender<u64>,
    timers: Mutex<HashMap<u64, tokio::task::AbortHandle>>,
    next_timer: AtomicU64,
    pub channels: Arc<Channels>,
    table: Weak<Sessions>,
    rt: tokio::runtime::Handle,
}

impl Session {
    /// Instantiates a plugin. `table` is none for a plugin's shared instance.
    pub fn start(
        plugin: Arc<Plugin>,
        id: String,
        seed: u64,
        caller: &str,
        table: Option<&Arc<Sessions>>,
        rt: tokio::runtime::Handle,
    ) -> Result<Arc<Session>, String> {
        let out_cap = plugin.limits.max_output_bytes;
        let session = Arc::new(Session {
            id: Mutex::new(id),
            renamed: AtomicBool::new(false),
            plugin: plugin.clone(),
            seed,
            created_by: caller.to_string(),
            created_at: SystemTime::now(),
            last_used: Mutex::new(Instant::now()),
            calls: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            slot: Mutex::new(Slot::Dead("the session is still starting".into())),
            stdout: GuestOutput::new(out_cap),
            stderr: GuestOutput::new(out_cap),
            last_stderr: Mutex::new(String::new()),
            changed: watch::channel(0).0,
            timers: Mutex::new(HashMap::new()),
            next_timer: AtomicU64::new(0),
            channels: Arc::new(Channels::new(plugin.channels.clone(), rt.clone())),
            table: table.map(Arc::downgrade).unwrap_or_default(),
            rt,
        });
        // A plugin's shared instance belongs to no session: it has no timers and no channels.
        let (host, channels) = match table {
            Some(_) => {
                let control: Weak<dyn SessionControl> = Arc::downgrade(&session) as _;
                let inbox: Weak<dyn Inbox> = Arc::downgrade(&session) as _;
                (HostCtx::new(&plugin.name, seed, Some(control)), ChannelsCtx::new(session.channels.clone(), inbox))
            }
            None => (HostCtx::new(&plugin.name, seed, None), ChannelsCtx::default()),
        };
        let output = Output { stdout: session.stdout.clone(), stderr: session.stderr.clone() };
        let mut store = capability::new_store(&plugin.runtime, &plugin.limits, host, channels, output);
        let instance = plugin.pre.instantiate(&mut store);
        session.flush_output();
        let instance = instance.map_err(|e| format!("the plugin failed to start: {e:#}"))?;
        *lock(&session.slot) = Slot::Live(Box::new(Live { store, instance }));
        Ok(session)
    }

    pub fn id(&self) -> String {
        lock(&self.id).clone()
    }

    pub fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
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
    pub fn invoke(&self, export: &ComponentExportIndex, params: &[Val], results: usize, call: CallInfo) -> Result<Invocation, String> {
        self.touch();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut slot = lock(&self.slot);
        let live = match &mut *slot {
            Slot::Live(live) => live,
            Slot::Dead(why) => return Err(format!("this game session has ended: {why}")),
        };
        let Live { store, instance } = &mut **live;
        store.data_mut().host.call = call;
        store.data_mut().host.wait = None;
        store.set_epoch_deadline(ticks(self.plugin.limits.call_timeout));
        let Some(func) = instance.get_func(&mut *store, export) else {
            return Err("the plugin does not export this function".into());
        };
        let mut out = vec![Val::Bool(false); results];
        let outcome = func.call(&mut *store, params, &mut out);
        self.flush_output();
        match outcome {
            Ok(()) => Ok(Invocation { value: out.pop(), wait: store.data_mut().host.wait.take() }),
            Err(e) => {
                let why = self.trap_reason(&e, store.data().limiter.hit);
                tracing::warn!(plugin = self.plugin.name, session = self.id(), "session ended: {why}");
                *slot = Slot::Dead(why.clone());
                drop(slot);
                self.stop_io();
                self.bump();
                Err(format!("the game session crashed and has ended: {why}"))
            }
        }
    }

    fn trap_reason(&self, e: &wasmtime::Error, memory_limit_hit: bool) -> String {
        let limits = &self.plugin.limits;
        if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return format!(
                "the plugin ran past its CPU limit of {} ms for one call and was stopped",
                limits.call_timeout.as_millis()
            );
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

    /// The session ended: no more timers, and every channel closed (its
    /// processes killed).
    pub fn stop_io(&self) {
        for (_, t) in lock(&self.timers).drain() {
            t.abort();
        }
        self.channels.close_all();
    }

    async fn fire_timer(self: Arc<Self>, id: u64) {
        let Some(export) = self.plugin.on_timer else {
            tracing::warn!(plugin = self.plugin.name, "timer fired but the plugin exports no events.on-timer");
            return;
        };
        let s = self.clone();
        let call = move || s.invoke(&export, &[Val::U64(id)], 0, CallInfo::default());
        match tokio::task::spawn_blocking(call).await {
            Ok(Ok(_)) => self.bump(),
            Ok(Err(e)) => tracing::warn!(plugin = self.plugin.name, "timer event failed: {e}"),
            Err(e) => tracing::error!("timer task failed: {e}"),
        }
    }

    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id(),
            plugin: self.plugin.name.clone(),
            plugin_version: self.plugin.version.clone(),
            seed: self.seed,
            created_by: self.created_by.clone(),
            idle_seconds: self.idle_for().as_secs(),
            calls: self.calls.load(Ordering::Relaxed),
            waiting_calls: self.waiting.load(Ordering::Relaxed),
            channels: self.channels.list(),
            ended: self.is_dead(),
        }
    }
}


/// What the host interface may do to the session (`capability::host`).
impl SessionControl for Session {
    fn id(&self) -> String {
        Session::id(self)
    }

    /// Renames the session once (host import `rename-session`).
    fn rename(&self, name: &str) -> Result<(), String> {
        let ok = !name.is_empty()
            && name.len() <= 128
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
        if !ok {
            return Err("a session name is 1-128 characters of A-Z a-z 0-9 - _ . :".into());
        }
        if self.renamed.swap(true, Ordering::SeqCst) {
            return Err("the session was already renamed".into());
        }
        let old = self.id();
        if let Some(table) = self.table.upgrade() {
            if let Err(e) = table.rename(&old, name) {
                self.renamed.store(false, Ordering::SeqCst);
                return Err(e);
            }
        }
        *lock(&self.id) = name.to_string();
        Ok(())
    }

    fn set_timer(self: Arc<Self>, delay_ms: u32) -> u64 {
        let mut timers = lock(&self.timers);
        if timers.len() >= MAX_TIMERS {
            tracing::warn!(plugin = self.plugin.name, "more than {MAX_TIMERS} pending timers; set-timer ignored");
            return 0;
        }
        let id = self.next_timer.fetch_add(1, Ordering::Relaxed) + 1;
        let weak = Arc::downgrade(&self);
        let task = self.rt.spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms.into())).await;
            if let Some(s) = weak.upgrade() {
                lock(&s.timers).remove(&id);
                s.fire_timer(id).await;
            }
        });
        timers.insert(id, task.abort_handle());
        id
    }

    fn cancel_timer(&self, id: u64) {
        if let Some(t) = lock(&self.timers).remove(&id) {
            t.abort();
        }
    }
}

/// Channel input comes back in here (`capability::channels`).
#[async_trait::async_trait]
impl Inbox for Session {
    /// Delivers channel input into the guest (`events.on-message` /
    /// `on-closed`) and wakes waiting calls. False when the guest could not
    /// take it (the session ended or the plugin has no such event).
    async fn deliver(self: Arc<Self>, channel: u32, input: Input) -> bool {
        let (export, params) = match input {
            Input::Message(data) => (self.plugin.on_message, vec![Val::U32(channel), Val::String(data)]),
            Input::Closed(reason) => (self.plugin.on_closed, vec![Val::U32(channel), Val::String(reason)]),
        };
        let Some(export) = export else { return false };
        let s = self.clone();
        match tokio::task::spawn_blocking(move || s.invoke(&export, &params, 0, CallInfo::default())).await {
            Ok(Ok(_)) => {
                self.bump();
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(plugin = self.plugin.name, channel, "channel event failed: {e}");
                false
            }
            Err(e) => {
                tracing::error!("channel event task failed: {e}");
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

#[derive(Serialize, Debug)]
pub struct SessionInfo {
    pub id: String,
    pub plugin: String,
    pub plugin_version: String,
    pub seed: u64,
    pub created_by: String,
    pub idle_seconds: u64,
    pub calls: u64,
    pub waiting_calls: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

/// The table of live sessions.
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// Each plugin's instance for tools with role `none`, by plugin name;
    /// remade after a trap or when the plugin's version changed.
    shared: Mutex<HashMap<String, Arc<Session>>>,
    gone: Mutex<(HashMap<String, String>, VecDeque<String>)>,
    max_total: usize,
    rt: tokio::runtime::Handle,
}

/// How a tool call that reached a plugin ended.
pub enum Reply {
    /// The function's value (none for functions without a result), with the
    /// plugin version and tool that produced it (the session's version).
    Value { value: Option<Val>, plugin: Arc<Plugin>, tool: usize },
    /// The host could not run the call (session unknown/ended, limits, trap).
    Failed(String),
}

/// Called every few seconds while a call waits: (seconds waited, of at most).
pub type Progress = Box<dyn Fn(u64, u64) + Send + Sync>;

impl Sessions {
    pub fn new(max_total: usize, rt: tokio::runtime::Handle) -> Arc<Sessions> {
        Arc::new(Sessions { map: Mutex::default(), shared: Mutex::default(), gone: Mutex::default(), max_total, rt })
    }

    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        let mut v: Vec<SessionInfo> = lock(&self.map).values().map(|s| s.info()).collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    fn count_for(&self, plugin: &str) -> usize {
        lock(&self.map).values().filter(|s| s.plugin.name == plugin).count()
    }

    /// Finds a session for a `uses` tool, or explains why there is none.
    pub fn get(&self, id: &str, plugin: &Plugin, param: &str) -> Result<Arc<Session>, String> {
        if let Some(s) = lock(&self.map).get(id) {
            if s.plugin.name != plugin.name {
                return Err(format!("`{param}` {id} belongs to a {} game, not {}", s.plugin.name, plugin.name));
            }
            return Ok(s.clone());
        }
        match lock(&self.gone).0.get(id) {
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

    fn rename(&self, old: &str, new: &str) -> Result<(), String> {
        let mut map = lock(&self.map);
        if map.contains_key(new) {
            return Err(format!("a session named {new} already exists"));
        }
        if let Some(s) = map.remove(old) {
            map.insert(new.to_string(), s);
        }
        Ok(())
    }

    fn insert(&self, s: Arc<Session>) {
        lock(&self.map).insert(s.id(), s);
    }

    pub fn remove(&self, id: &str, why: &str) {
        let removed = lock(&self.map).remove(id);
        if let Some(session) = removed {
            session.stop_io();
            let mut gone = lock(&self.gone);
            gone.0.insert(id.to_string(), why.to_string());
            gone.1.push_back(id.to_string());
            while gone.1.len() > GONE_MEMORY {
                if let Some(old) = gone.1.pop_front() {
                    gone.0.remove(&old);
                }
            }
        }
    }

    /// Drops sessions idle longer than their plugin allows.
    pub fn reap_idle(&self) {
        let expired: Vec<(String, Duration)> = lock(&self.map)
            .iter()
            .filter(|(_, s)| s.idle_for() > s.plugin.limits.idle_timeout)
            .map(|(id, s)| (id.clone(), s.plugin.limits.idle_timeout))
            .collect();
        for (id, limit) in expired {
            self.remove(&id, &format!("it expired after {} s without calls", limit.as_secs()));
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
        caller: String,
        cancel: CancellationToken,
        progress: Option<Progress>,
    ) -> Reply {
        match self.prepare(&plugin, tool_index, args, &caller).await {
            Ok(call) => self.run(call, caller, cancel, progress).await,
            Err(e) => Reply::Failed(e),
        }
    }

    /// Checks the arguments, finds or starts the session, and picks the tool
    /// of the version that session runs (it keeps the one it started on).
    async fn prepare(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        tool_index: usize,
        args: &serde_json::Map<String, serde_json::Value>,
        caller: &str,
    ) -> Result<Prepared, String> {
        let current = &plugin.tools[tool_index];
        let params = current.convert_args(args)?;
        let seed = current.seed_argument(&params);
        let session = self.session_for(plugin, current, &params, caller, seed).await?;
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
    async fn run(self: &Arc<Self>, call: Prepared, caller: String, cancel: CancellationToken, progress: Option<Progress>) -> Reply {
        let Prepared { session, version, tool: index, params } = call;
        let tool = &version.tools[index];
        let creates = tool.role == Role::Creates;
        let results = usize::from(tool.result.is_some());
        let mut changes = session.changed.subscribe();
        let mut wait = Wait::new();
        let (mut timed_out, mut rerun) = (false, false);
        loop {
            changes.borrow_and_update();
            let (s, export, p, info) = (session.clone(), tool.export, params.clone(), CallInfo { caller: caller.clone(), timed_out });
            let inv = match tokio::task::spawn_blocking(move || s.invoke(&export, &p, results, info)).await {
                Ok(Ok(inv)) => inv,
                Ok(Err(e)) => {
                    if creates {
                        self.remove(&session.id(), "it crashed while starting");
                    }
                    return Reply::Failed(e);
                }
                Err(e) => return Reply::Failed(format!("internal error running the call: {e}")),
            };
            if creates && !rerun {
                self.insert(session.clone());
            }
            let Some(asked) = inv.wait.filter(|_| !timed_out) else {
                if creates && matches!(inv.value, Some(Val::Result(Err(_)))) {
                    self.remove(&session.id(), "the game failed to start");
                }
                // A re-run of a waiting call is not a change, or two waiters would wake each other forever.
                if !rerun && !tool.read_only {
                    session.bump();
                }
                return Reply::Value { value: inv.value, plugin: version.clone(), tool: index };
            };
            let limit = if asked == 0 { tool.default_wait } else { Duration::from_millis(asked.into()).min(tool.max_wait) };
            match wait.hold(&session, &mut changes, limit, &cancel, progress.as_ref()).await {
                Held::Changed => {}
                Held::Deadline => timed_out = true,
                Held::Cancelled => return Reply::Failed("the call was cancelled".into()),
            }
            rerun = true;
        }
    }

    async fn session_for(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        tool: &ToolDef,
        params: &[Val],
        caller: &str,
        seed: Option<u64>,
    ) -> Result<Arc<Session>, String> {
        match tool.role {
            Role::Uses(i) => {
                let Val::String(id) = &params[i] else { return Err("session id must be a string".into()) };
                self.live(id, plugin, &tool.params[i].json)
            }
            Role::Creates => {
                if self.len() >= self.max_total {
                    return Err(format!("the server already runs {} game sessions (its limit); finish some first", self.max_total));
                }
                if self.count_for(&plugin.name) >= plugin.limits.max_sessions {
                    return Err(format!(
                        "{} already runs {} game sessions (its limit); finish some first",
                        plugin.name, plugin.limits.max_sessions
                    ));
                }
                let seed = seed.unwrap_or_else(rand_seed);
                let (p, me, caller, rt) = (plugin.clone(), self.clone(), caller.to_string(), self.rt.clone());
                let start = move || Session::start(p, Sessions::new_id(), seed, &caller, Some(&me), rt);
                tokio::task::spawn_blocking(start).await.map_err(|e| e.to_string())?
            }
            Role::Shared => self.shared_session(plugin),
        }
    }

    /// The plugin's instance for session-less calls; remade after a trap.
    fn shared_session(&self, plugin: &Arc<Plugin>) -> Result<Arc<Session>, String> {
        let mut shared = lock(&self.shared);
        if let Some(s) = shared.get(&plugin.name).filter(|s| Arc::ptr_eq(&s.plugin, plugin) && s.is_dead().is_none()) {
            return Ok(s.clone());
        }
        let s = Session::start(plugin.clone(), format!("{}-shared", plugin.name), rand_seed(), "", None, self.rt.clone())?;
        shared.insert(plugin.name.clone(), s.clone());
        Ok(s)
    }

    /// Reads a plugin resource through `meta.read-resource`: in the named
    /// session's instance for per-session resources, else in the shared one.
    pub async fn read_resource(&self, plugin: &Arc<Plugin>, uri: &str, session: Option<&str>) -> Result<String, String> {
        let session = match session {
            Some(id) => self.live(id, plugin, "session")?,
            None => self.shared_session(plugin)?,
        };
        let (export, uri) = (session.plugin.read_resource, uri.to_string());
        let call = move || session.invoke(&export, &[Val::String(uri)], 1, CallInfo::default());
        let inv = tokio::task::spawn_blocking(call).await.map_err(|e| e.to_string())??;
        let text = |v: Option<Box<Val>>| match v.map(|b| *b) {
            Some(Val::String(s)) => s,
            _ => String::new(),
        };
        match inv.value {
            Some(Val::Result(Ok(v))) => Ok(text(v)),
            Some(Val::Result(Err(e))) => Err(text(e)),
            _ => Err("the plugin gave no resource".into()),
        }
    }
}

/// A call on its way: the session, the version it runs, and that version's tool.
struct Prepared {
    session: Arc<Session>,
    version: Arc<Plugin>,
    tool: usize,
    params: Vec<Val>,
}

/// Why a held call goes on.
enum Held {
    Changed,
    Deadline,
    Cancelled,
}

/// The clock of one waiting call: its deadline is fixed at the first
/// provisional answer; progress goes out every 3 s.
struct Wait {
    started: tokio::time::Instant,
    deadline: Option<tokio::time::Instant>,
    next_progress: tokio::time::Instant,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(3);

impl Wait {
    fn new() -> Wait {
        let started = tokio::time::Instant::now();
        Wait { started, deadline: None, next_progress: started + PROGRESS_EVERY }
    }

    async fn hold(
        &mut self,
        session: &Session,
        changes: &mut watch::Receiver<u64>,
        limit: Duration,
        cancel: &CancellationToken,
        progress: Option<&Progress>,
    ) -> Held {
        let deadline = *self.deadline.get_or_insert(self.started + limit);
        // Counted while held; the guard also runs when a cancelled request drops this future.
        let _waiting = WaitGuard::new(&session.waiting);
        loop {
            tokio::select! {
                r = changes.changed() => return if r.is_ok() { Held::Changed } else { Held::Cancelled },
                () = tokio::time::sleep_until(deadline) => return Held::Deadline,
                () = cancel.cancelled() => return Held::Cancelled,
                () = tokio::time::sleep_until(self.next_progress) => {
                    if let Some(p) = progress {
                        p(self.started.elapsed().as_secs(), (deadline - self.started).as_secs());
                    }
                    self.next_progress += PROGRESS_EVERY;
                }
            }
        }
    }
}

/// Counts a call as waiting for as long as it lives.
struct WaitGuard<'a>(&'a AtomicU64);

impl<'a> WaitGuard<'a> {
    fn new(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        WaitGuard(counter)
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a Rust guest printed when it panicked ("panicked at …:" then the
/// message), or the last line it wrote to stderr.
fn panic_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note: run with")).collect();
    match lines.iter().rposition(|l| l.contains("panicked at")) {
        Some(i) => {
            let location = lines[i].split("panicked at").nth(1).unwrap_or("").trim().trim_end_matches(':');
            let message = lines[i + 1..].join(" ");
            format!("panicked: {message} (at {location})")
        }
        None => lines.last().map(|l| l.to_string()).unwrap_or_default(),
    }
}

fn rand_seed() -> u64 {
    let u = uuid::Uuid::new_v4();
    u.as_u64_pair().0
}

//! A tool call's way through the sessions: find or start the session the
//! call names (and check the caller may make it), then run it to its final
//! answer — a small state machine (`Stage`): the guest runs the call, a
//! provisional answer holds it until the session changes or its deadline
//! passes, and it runs again. Why: docs/design/sessions.md, "A session's life".

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Val;

use super::step::{Answered, Awaiting, Pick, Step, notes};
use super::wait::{Wait, Woken};
use super::{Caller, Invocation, Refusal, Seeding, Session, SessionInfo, Sessions, joins_tool, ran};
use crate::capability::{Ask, CallInfo, ClientLink, LogSink};
use crate::locking::lock;
use crate::plugin::{Audience, JOIN_CODE, MAX_REASONING, Plugin, REASONING, Role, SECRET, SEED, ToolDef, USAGE};
use crate::records::{Said, Usage};
use crate::runtime::{run_guest, run_guest_that_may_ask};

/// How a tool call that reached a plugin ended.
pub enum Reply {
    /// The function's value (none for functions without a result), with the
    /// plugin version and tool that produced it (the session's version), and
    /// what the host adds for the agent (a new game's join code).
    Value { value: Option<Val>, plugin: Arc<Plugin>, tool: usize, note: Option<String> },
    /// The host could not run the call (session unknown/ended, limits, trap).
    Failed(Refusal),
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
        session.waits.held.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lock(waits).entry(caller.to_string()).or_default() += 1;
        WaitCount { session: &session.waits.held, waits, caller }
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

/// Where a tool call stands (`Sessions::run`).
enum Stage {
    /// The guest is to run it: the client's call (`first`), or a re-run
    /// after a wait (`timed_out`: its deadline passed, so this answer is final).
    Run { first: bool, timed_out: bool },
    /// The guest's answer was provisional: hold the call for up to `asked`
    /// milliseconds (0: the tool's default).
    Hold { asked: u32 },
    /// The call is answered.
    Done(Reply),
}

/// A call being run: what it runs, for whom, and what its waits keep.
struct Running {
    session: Arc<Session>,
    version: Arc<Plugin>,
    index: usize,
    params: Vec<Val>,
    caller: String,
    /// The decision number the call names, when its tool takes one.
    decision: Option<u64>,
    /// The host's `reasoning` and `usage` arguments of a move.
    said: Said,
    /// Where the game's log entered the call's first run: a re-run is
    /// entered as that call again.
    logged_at: Option<usize>,
    /// The game may ask this call's client something (and the client can answer).
    may_ask: bool,
    cancel: CancellationToken,
    listeners: Listeners,
    /// The session's changes since the call last ran.
    changes: tokio::sync::watch::Receiver<u64>,
    /// The call's wait: its deadline holds across re-runs.
    wait: Wait,
    /// While the call is held waiting for its decision's answer, a second
    /// call for the same decision waits for that answer too.
    awaiting: Option<Awaiting>,
    /// The call now runs the legal move the illegal-move policy plays for
    /// its player: what the player is told of it.
    by_policy: Option<String>,
}

impl Running {
    fn new(call: Prepared, caller: String, cancel: CancellationToken, listeners: Listeners) -> Running {
        let Prepared { session, version, tool: index, params, said } = call;
        let tool = &version.tools[index];
        let may_ask =
            version.asks_client && listeners.client.as_ref().is_some_and(|c| c.declares(Ask::Sampling) || c.declares(Ask::Elicitation));
        let decision = tool.decision_argument(&params);
        let changes = session.waits.changed.subscribe();
        Running {
            session,
            version,
            index,
            params,
            caller,
            decision,
            said,
            logged_at: None,
            may_ask,
            cancel,
            listeners,
            changes,
            wait: Wait::new(),
            awaiting: None,
            by_policy: None,
        }
    }

    /// The call becomes the legal move the illegal-move policy plays for
    /// its player, after the game refused `refused`.
    fn play_instead(&mut self, refused: &Invocation, pick: Pick) {
        let policy = self.session.policy();
        let why = match &refused.value {
            Some(Val::Result(Err(Some(e)))) => match &**e {
                Val::String(e) => format!(" (\"{}\")", e.lines().next().unwrap_or_default()),
                _ => String::new(),
            },
            _ => String::new(),
        };
        self.by_policy = Some(format!(
            "The game refused that move{why}, and this game's illegal-move policy ({}) played a random legal move for you: \
             {}. The answer above is the game's answer to that move.",
            policy.in_words(),
            pick.shown()
        ));
        self.index = pick.index;
        self.decision = self.version.tools[pick.index].decision_argument(&pick.params);
        self.params = pick.params;
        self.said = Said::default();
        self.wait = Wait::new();
    }
}

impl Sessions {
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
        match self.prepare(&plugin, tool_index, args, &caller, None).await {
            Ok(call) => self.run(call, caller.name().to_string(), cancel, listeners).await,
            Err(e) => Reply::Failed(e),
        }
    }

    /// Starts a game a run planned (`arena`): a call of a creating tool
    /// made for `caller`, seeded and tagged as the plan says.
    pub async fn start_planned(
        self: &Arc<Self>,
        plugin: Arc<Plugin>,
        tool_index: usize,
        args: &serde_json::Map<String, serde_json::Value>,
        caller: Caller,
        plan: Plan,
    ) -> Result<(String, Reply), Refusal> {
        let call = self.prepare(&plugin, tool_index, args, &caller, Some(plan)).await?;
        let session = call.session.clone();
        let reply = self.run(call, caller.name().to_string(), CancellationToken::new(), Listeners::default()).await;
        Ok((session.id(), reply))
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
        plan: Option<Plan>,
    ) -> Result<Prepared, Refusal> {
        let current = &plugin.tools[tool_index];
        // A `joins` tool's join code is the host's, not the game's; so is a
        // seeded start's secret.
        let (args, code) = match current.audience {
            Audience::Joins => {
                split_host_argument(args, JOIN_CODE, |v| v.as_str().map(String::from), "a string").map_err(Refusal::Arguments)?
            }
            _ => (std::borrow::Cow::Borrowed(args), None),
        };
        let (args, reasoning) = match current.host_reasoning {
            true => split_host_argument(&args, REASONING, |v| v.as_str().map(String::from), "a string").map_err(Refusal::Arguments)?,
            false => (args, None),
        };
        if reasoning.as_ref().is_some_and(|r| r.chars().count() > MAX_REASONING) {
            return Err(Refusal::Arguments(format!("`{REASONING}` is at most {MAX_REASONING} characters")));
        }
        let (args, usage) = match current.host_usage {
            true => match args.get(USAGE).filter(|v| !v.is_null()) {
                Some(value) => {
                    let usage = Usage::from_argument(value).map_err(Refusal::Arguments)?;
                    let mut rest = args.into_owned();
                    rest.remove(USAGE);
                    (std::borrow::Cow::Owned(rest), Some(usage))
                }
                None => (args, None),
            },
            false => (args, None),
        };
        let said = Said { reasoning, usage };
        let (args, secret) = match current.role {
            Role::Creates if current.params.iter().any(|f| f.json == SEED) => {
                let (rest, secret) = split_host_argument(&args, SECRET, unsigned, "a whole number (or one as a decimal string)")
                    .map_err(Refusal::Arguments)?;
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
        let params = current.convert_args(args).map_err(Refusal::Arguments)?;
        let seeds = (current.seed_argument(&params), secret);
        let session = match named {
            Some(session) => session,
            None => self.session_for(plugin, current, &params, caller, seeds, plan).await?,
        };
        let version = session.plugin.clone();
        if Arc::ptr_eq(&version, plugin) {
            return Ok(Prepared { session, version, tool: tool_index, params, said });
        }
        let Some(tool) = version.tools.iter().position(|t| t.name == current.name) else {
            return Err(Refusal::Version(format!(
                "this game runs version {} of {}, which has no tool `{}`; start a new game",
                version.version, version.name, current.name
            )));
        };
        let params = version.tools[tool]
            .convert_args(args)
            .map_err(|e| Refusal::Version(format!("this game runs version {} of {}: {e}", version.version, version.name)))?;
        Ok(Prepared { session, version, tool, params, said })
    }

    /// Runs a prepared call to its final answer, one stage at a time
    /// (`Stage`): the guest runs it; a provisional answer holds it until
    /// the session changes or its deadline passes; then it runs again.
    async fn run(self: &Arc<Self>, call: Prepared, caller: String, cancel: CancellationToken, listeners: Listeners) -> Reply {
        let mut call = Running::new(call, caller, cancel, listeners);
        let mut stage = Stage::Run { first: true, timed_out: false };
        loop {
            stage = match stage {
                Stage::Run { first, timed_out } => self.run_guest(&mut call, first, timed_out).await,
                Stage::Hold { asked } => self.hold(&mut call, asked).await,
                Stage::Done(reply) => return reply,
            };
        }
    }

    /// The guest runs the call (in turn with the session's other calls).
    async fn run_guest(self: &Arc<Self>, call: &mut Running, first: bool, timed_out: bool) -> Stage {
        let session = &call.session;
        let tool = &call.version.tools[call.index];
        let creates = tool.role == Role::Creates;
        let turn = session.waits.turn.lock().await;
        call.changes.borrow_and_update();
        let Listeners { log, client, .. } = &call.listeners;
        let info = CallInfo { caller: call.caller.clone(), timed_out, log: log.clone(), client: client.clone(), ask_limit: tool.max_wait };
        let step = Step {
            session: session.clone(),
            version: call.version.clone(),
            index: call.index,
            params: call.params.clone(),
            caller: call.caller.clone(),
            decision: call.decision,
            said: call.said.clone(),
            again: if first { None } else { call.logged_at },
            first,
            timed_out,
            by_policy: call.by_policy.is_some(),
        };
        let run = move || step.run(info);
        // A game that can ask its client, called by a client that can be
        // asked, must not hold the thread that carries that client's messages.
        let answered = if call.may_ask { run_guest_that_may_ask(&tool.pace, run).await } else { run_guest(&tool.pace, run).await };
        drop(turn);
        let inv = match answered {
            Ok(Ok(Answered::Game(inv))) => inv,
            Ok(Ok(Answered::Kept(answer))) => {
                let note = format!(
                    "Decision {} was made already: this is the answer its call got then, and nothing was made again. \
                     Ask for the game's state to see what happened since.",
                    call.decision.unwrap_or_default()
                );
                return Stage::Done(Reply::Value { value: Some(answer), plugin: call.version.clone(), tool: call.index, note: Some(note) });
            }
            Ok(Ok(Answered::AnswerPending)) => Invocation { value: None, wait: Some(0), made_already: None, logged_at: None },
            Ok(Ok(Answered::Random { refused, pick })) => {
                call.play_instead(&refused, pick);
                return Stage::Run { first: true, timed_out: false };
            }
            Ok(Err(e)) => {
                if creates {
                    self.discard(&session.id(), "it crashed while starting");
                }
                return Stage::Done(Reply::Failed(Refusal::Session(e)));
            }
            Err(e) => return Stage::Done(Reply::Failed(Refusal::Internal(e))),
        };
        if creates && first {
            self.insert(session.clone());
        }
        if first {
            call.logged_at = inv.logged_at;
        }
        match inv.wait.filter(|_| !timed_out) {
            Some(asked) => {
                if let (None, Some(n), Some(_)) = (&call.awaiting, call.decision, &inv.value) {
                    call.awaiting = Some(Awaiting::start(session, &call.caller, n));
                }
                Stage::Hold { asked }
            }
            None => Stage::Done(self.answer(call, first, inv)),
        }
    }

    /// The call's final answer.
    fn answer(&self, call: &mut Running, first: bool, inv: Invocation) -> Reply {
        let (session, tool) = (&call.session, &call.version.tools[call.index]);
        // Calls held for this decision's answer wake now.
        call.awaiting = None;
        if tool.role == Role::Creates && matches!(inv.value, Some(Val::Result(Err(_)))) {
            self.discard(&session.id(), "the game failed to start");
        }
        // A re-run of a waiting call is not a change, or two waiters would wake each other forever.
        if first && !tool.read_only {
            session.bump();
        }
        let note = notes(session, &call.version, tool, &call.caller, &inv.value);
        let note = match (call.by_policy.take(), note) {
            (Some(policy), Some(note)) => Some(format!("{policy}\n\n{note}")),
            (policy, note) => policy.or(note),
        };
        Reply::Value { value: inv.value, plugin: call.version.clone(), tool: call.index, note }
    }

    /// Holds a call whose answer was provisional until the session changes,
    /// its deadline passes or its client cancels; then it runs again.
    /// Each held call is cheap but not free. Beyond the caps a call is not
    /// held at all: it runs again at once as if its wait had run out (the
    /// game's "call again" answer). Refusing it instead would lose what the
    /// call already did.
    async fn hold(&self, call: &mut Running, asked: u32) -> Stage {
        let (session, tool) = (&call.session, &call.version.tools[call.index]);
        let held = session.waits.held.load(std::sync::atomic::Ordering::Relaxed);
        let held_for_caller = self.waits_of(&call.caller);
        if held >= session.plugin.limits.max_waits {
            tracing::debug!(session = %session.id(), held, "not holding another waiting call (limits.max_waits_per_session)");
            return Stage::Run { first: false, timed_out: true };
        }
        if held_for_caller >= self.limits.waits_per_caller {
            tracing::debug!(caller = %call.caller, held_for_caller, "not holding another waiting call (limits.max_waits_per_caller)");
            return Stage::Run { first: false, timed_out: true };
        }
        let limit = if asked == 0 { tool.default_wait } else { Duration::from_millis(asked.into()).min(tool.max_wait) };
        let _counted = WaitCount::start(session, &self.waits, &call.caller);
        let progress = call.listeners.progress.as_ref();
        match call.wait.hold(session, &mut call.changes, limit, &call.cancel, progress).await {
            Woken::Changed => Stage::Run { first: false, timed_out: false },
            Woken::Deadline => Stage::Run { first: false, timed_out: true },
            Woken::Cancelled => Stage::Done(Reply::Failed(Refusal::Cancelled)),
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
    ) -> Result<std::borrow::Cow<'a, serde_json::Map<String, serde_json::Value>>, Refusal> {
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
                let why = format!("`{}` names the game, and you have no game of {} (start one first)", param.json, plugin.name);
                return Err(Refusal::Arguments(why));
            }
            (several, _) => {
                let several = if several.is_empty() { games.iter().collect() } else { several.to_vec() };
                let ids: Vec<&str> = several.iter().map(|s| s.id.as_str()).collect();
                return Err(Refusal::Arguments(format!(
                    "you have {} games of {} ({}): say which with `{}`",
                    ids.len(),
                    plugin.name,
                    ids.join(", "),
                    param.json
                )));
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
    ) -> Result<Option<Arc<Session>>, Refusal> {
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
        plan: Option<Plan>,
    ) -> Result<Arc<Session>, Refusal> {
        match tool.role {
            Role::Uses(i) => {
                let id = match &params[i] {
                    // Left out by a caller with no game (`name_the_only_game`).
                    Val::Option(None) if tool.read_only => return self.shared_session(plugin),
                    Val::String(id) => id,
                    Val::Option(Some(v)) => match v.as_ref() {
                        Val::String(id) => id,
                        _ => return Err(Refusal::Arguments("session id must be a string".into())),
                    },
                    _ => return Err(Refusal::Arguments("session id must be a string".into())),
                };
                self.live(id, plugin, &tool.params[i].json)
            }
            Role::Creates => {
                if *caller == Caller::Stateless {
                    return Err(Refusal::Stateless);
                }
                let caller = caller.name();
                if let Some(why) = self.refuse_new(plugin, caller) {
                    return Err(Refusal::Limit(why));
                }
                let (seeding, in_match, clock) = match plan {
                    Some(Plan { seeding, in_match, clock }) => (seeding, Some(in_match), clock),
                    None => (self.seeding(seed, secret, caller)?, None, None),
                };
                let (p, me, caller, rt) = (plugin.clone(), self.clone(), caller.to_string(), self.rt.clone());
                let start = move || {
                    let session = Session::start(p, Sessions::new_id(), seeding, &caller, in_match, Some(me.home()), rt)?;
                    if let Some(clock) = clock {
                        session.set_clock(clock);
                    }
                    Ok(session)
                };
                ran(run_guest(&plugin.start_pace, start).await)
            }
            Role::Shared => self.shared_session(plugin),
        }
    }

    /// How a new game of `caller` is seeded: its seed (or a drawn one) with
    /// a fresh secret mixed in for what is hidden; with the secret given, a
    /// replay of a finished game; a caller the operator lets fix whole
    /// seeds gets none.
    fn seeding(&self, seed: Option<u64>, secret: Option<u64>, caller: &str) -> Result<Seeding, Refusal> {
        let chosen = seed.is_some();
        let seed = seed.unwrap_or_else(rand_seed);
        if let Some(secret) = secret {
            if !chosen {
                return Err(Refusal::Arguments(format!("`{SECRET}` replays a finished game together with its `{SEED}`: give both")));
            }
            return Ok(Seeding { seed, chosen, secret: Some(secret), replay: true });
        }
        let secret = (!self.limits.whole_seeds.allow(caller)).then(rand_seed);
        Ok(Seeding { seed, chosen, secret, replay: false })
    }
}

/// Whether `caller` may make this call on `session`: spectators' tools are
/// open to all, a `joins` tool to whoever brings the join code, every other
/// tool to the players only.
fn admit(session: &Session, tool: &ToolDef, caller: &Caller, code: Option<&str>, param: &str) -> Result<(), Refusal> {
    if tool.audience == Audience::Spectators {
        return Ok(());
    }
    let player = session.is_player(caller.name());
    if tool.audience != Audience::Joins && player {
        return Ok(());
    }
    if *caller == Caller::Stateless {
        return Err(Refusal::Stateless);
    }
    let id = session.id();
    if tool.audience != Audience::Joins {
        let joins = joins_tool(&session.plugin).map(String::from);
        return Err(Refusal::NotYours { param: param.into(), id, what: format!("call `{}`", tool.name), joins });
    }
    // A seat is taken with the code by everyone, the creator taking the
    // other seat itself included: nobody plays a seat by default. A replay's
    // seats too (its joiner is told its hidden parts are published).
    // The code first: who holds the seats is told only to those with it.
    match code {
        Some(code) if session.join_code_is(code) => {}
        Some(_) => return Err(Refusal::Seat(format!("wrong `{JOIN_CODE}` for `{param}` {id}: ask the game's creator for its join code"))),
        None => {
            return Err(Refusal::Seat(format!(
                "taking a seat in `{param}` {id} needs its `{JOIN_CODE}`, which the game's creator hands out"
            )));
        }
    }
    match session.seats_all_taken() {
        Some(taken) => Err(Refusal::Seat(format!("no seat of `{param}` {id} is open: {taken}"))),
        None => Ok(()),
    }
}

type Arguments = serde_json::Map<String, Value>;

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

/// How a run's planned game starts: its seeding (a pair's games share it)
/// and its place in its match.
pub struct Plan {
    pub seeding: Seeding,
    pub in_match: crate::records::MatchTag,
    /// The match's clock (none: the server's).
    pub clock: Option<crate::records::Clock>,
}

/// A call on its way: the session, the version it runs, and that version's tool.
struct Prepared {
    session: Arc<Session>,
    version: Arc<Plugin>,
    tool: usize,
    params: Vec<Val>,
    /// The host's `reasoning` and `usage` arguments of a move.
    said: Said,
}

pub(super) fn rand_seed() -> u64 {
    let u = uuid::Uuid::new_v4();
    u.as_u64_pair().0
}

//! The `ludus:plugin/host` interface: log, identity, seed, timers and waits;
//! `ludus:plugin/lifecycle`, through which a game says it is over;
//! `ludus:plugin/outcome` and `ludus:plugin/seats`, through which it says
//! where it stands and who sits where; `ludus:plugin/decisions`, through
//! which it says a call names a decision made already; and
//! `ludus:plugin/seeds`, the seed its creator may know.
//! Each import is a short, non-blocking step; anything that takes time (a
//! timer, a wait) is only recorded here and carried out by the session.

use std::sync::{Arc, Weak};

use super::link::ClientLink;
use crate::records::{Outcome, Seat, Told};
use crate::runtime::bindings::ludus::plugin::{decisions, host, lifecycle, outcome, seats, seeds, types};

/// Who is calling, and why: set by the session before each call into the guest.
#[derive(Clone, Default)]
pub struct CallInfo {
    /// The MCP client session that made the tool call; empty inside events.
    pub caller: String,
    /// This call re-runs a wait whose deadline passed.
    pub timed_out: bool,
    /// Where the call's `host.log` lines go besides the server's own log:
    /// the calling client, at the level it asked for.
    pub log: Option<LogSink>,
    /// The calling client, for `ludus:plugin/client` (none inside events).
    pub client: Option<Arc<dyn ClientLink>>,
    /// Longest the call waits for its client's answer (the tool's longest
    /// wait; set with `client`).
    pub ask_limit: std::time::Duration,
}

/// A client's share of a call's log lines (MCP logging, above this layer).
#[derive(Clone)]
pub struct LogSink(pub Arc<LogLine>);

/// What a sink does with one line: its level and text.
pub type LogLine = dyn Fn(tracing::Level, &str) + Send + Sync;

impl std::fmt::Debug for LogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogSink")
    }
}

/// What this interface may do to the session its instance serves: the
/// session implements it, so this module never sees the session itself.
pub trait SessionControl: Send + Sync {
    fn id(&self) -> String;
    /// Renames the session once (`rename-session`).
    fn rename(&self, name: &str) -> Result<(), String>;
    /// Schedules `events.on-timer`; 0 when the timer was refused.
    fn set_timer(self: Arc<Self>, delay_ms: u32) -> u64;
    fn cancel_timer(&self, id: u64);
}

/// A game's seeds: the one its creator chose (or the server drew), and the
/// whole seed, which mixes in the game's secret (`store::Seeds`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GameSeeds {
    pub visible: u64,
    pub whole: u64,
}

/// This interface's part of a store's state.
pub struct HostCtx {
    pub plugin: Arc<str>,
    pub seeds: GameSeeds,
    pub call: CallInfo,
    /// Set by `host.wait`: the answer of the current call is provisional.
    pub wait: Option<u32>,
    /// Set by `lifecycle.game-over`: the session releases its channels
    /// when the current call returns.
    pub game_over: bool,
    /// Set by `outcome.tell`: the session takes the latest statement when
    /// the current call returns.
    pub told: Option<Told>,
    /// Set by `seats.tell`: the seats as the game last told them in this call.
    pub seats: Option<Vec<Seat>>,
    /// Set by `decisions.made-already`: the decision this call names was
    /// made already, and the game refused the call for it.
    pub made_already: Option<u32>,
    /// The session this instance serves (none for a plugin's shared instance).
    pub session: Option<Weak<dyn SessionControl>>,
    /// Time the current call spent waiting for its client, given back to
    /// its CPU budget (`runtime::new_store`).
    pub waited: std::time::Duration,
    /// Where `watchers.changed` goes (`Runtime::resource_changes`).
    pub resource_changes: tokio::sync::broadcast::Sender<(String, String)>,
}

impl HostCtx {
    pub fn new(
        plugin: &str,
        seeds: GameSeeds,
        session: Option<Weak<dyn SessionControl>>,
        resource_changes: tokio::sync::broadcast::Sender<(String, String)>,
    ) -> HostCtx {
        HostCtx {
            plugin: plugin.into(),
            seeds,
            call: CallInfo::default(),
            wait: None,
            game_over: false,
            told: None,
            seats: None,
            made_already: None,
            session,
            waited: Default::default(),
            resource_changes,
        }
    }

    fn session(&self) -> Option<Arc<dyn SessionControl>> {
        self.session.as_ref().and_then(Weak::upgrade)
    }

    fn session_label(&self) -> String {
        self.session().map(|s| s.id()).unwrap_or_else(|| "-".into())
    }
}

impl types::Host for HostCtx {}

impl lifecycle::Host for HostCtx {
    fn game_over(&mut self) {
        self.game_over = true;
    }
}

impl outcome::Host for HostCtx {
    fn tell(&mut self, s: outcome::Statement) {
        self.told = Some(Told {
            outcome: outcome_of(s.verdict),
            parameters: json_object(&s.parameters, "parameters"),
            moves: s.moves,
            illegal_moves: s.illegal_moves,
            first_failing_move: s.first_failing_move,
            optimum: s.optimum,
            figures: json_object(&s.figures, "figures"),
        });
    }
}

impl decisions::Host for HostCtx {
    fn made_already(&mut self, number: u32) {
        self.made_already = Some(number);
    }
}

impl seeds::Host for HostCtx {
    fn visible(&mut self) -> u64 {
        self.seeds.visible
    }
}

impl seats::Host for HostCtx {
    /// At most 64 seats of 64-character names are kept: a seat list is
    /// written into every stored copy and record of the game.
    fn tell(&mut self, seats: Vec<seats::Seat>) {
        const MAX_SEATS: usize = 64;
        if seats.len() > MAX_SEATS {
            tracing::warn!(plugin = &*self.plugin, "seats.tell: {} seats, more than {MAX_SEATS}; ignored", seats.len());
            return;
        }
        self.seats = Some(seats.into_iter().map(seat_of).collect());
    }
}

/// A seat as the game told it, as the host keeps it.
fn seat_of(s: seats::Seat) -> Seat {
    use seats::Holder;
    let name = truncate(&s.name, 64).to_string();
    let (kind, player) = match s.holder {
        Holder::Open => (crate::records::Holder::Open, None),
        Holder::Agent(caller) => (crate::records::Holder::Agent, Some(truncate(&caller, 128).to_string())),
        Holder::Builtin(what) => (crate::records::Holder::Builtin, Some(truncate(&what, 128).to_string())),
    };
    Seat { seat: name, kind, player, result: s.result.and_then(outcome_of) }
}

/// A verdict as a record says it (`playing`: none yet).
fn outcome_of(verdict: outcome::Verdict) -> Option<Outcome> {
    use outcome::Verdict;
    match verdict {
        Verdict::Playing => None,
        Verdict::Solved => Some(Outcome::Solved),
        Verdict::Won => Some(Outcome::Won),
        Verdict::Lost => Some(Outcome::Lost),
        Verdict::Draw => Some(Outcome::Draw),
        Verdict::Failed => Some(Outcome::Failed),
        Verdict::Abandoned => Some(Outcome::Abandoned),
    }
}

/// A statement's JSON object; what is not one is kept as its text, with a
/// warning (a record must still be written).
fn json_object(text: &str, what: &str) -> serde_json::Value {
    const MAX: usize = 256 * 1024;
    if text.len() > MAX {
        tracing::warn!("outcome.tell: {what} of {} bytes is over {MAX}; dropped", text.len());
        return serde_json::Value::Null;
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => v,
        _ if text.trim().is_empty() => serde_json::Value::Null,
        _ => {
            tracing::warn!("outcome.tell: {what} is not a JSON object; kept as text");
            serde_json::Value::String(text.to_string())
        }
    }
}

impl host::Host for HostCtx {
    fn log(&mut self, level: types::LogLevel, message: String) {
        let (plugin, session) = (&*self.plugin, self.session_label());
        let message = truncate(&message, 4096);
        let level = match level {
            types::LogLevel::Trace => tracing::Level::TRACE,
            types::LogLevel::Debug => tracing::Level::DEBUG,
            types::LogLevel::Info => tracing::Level::INFO,
            types::LogLevel::Warn => tracing::Level::WARN,
            types::LogLevel::Error => tracing::Level::ERROR,
        };
        match level {
            tracing::Level::TRACE => tracing::trace!(plugin, session, "{message}"),
            tracing::Level::DEBUG => tracing::debug!(plugin, session, "{message}"),
            tracing::Level::INFO => tracing::info!(plugin, session, "{message}"),
            tracing::Level::WARN => tracing::warn!(plugin, session, "{message}"),
            tracing::Level::ERROR => tracing::error!(plugin, session, "{message}"),
        }
        if let Some(sink) = &self.call.log {
            (sink.0)(level, message);
        }
    }

    fn session_id(&mut self) -> Option<String> {
        self.session().map(|s| s.id())
    }

    fn rename_session(&mut self, name: String) -> Result<(), String> {
        match self.session() {
            Some(s) => s.rename(&name),
            None => Err("this call runs outside any session".into()),
        }
    }

    fn caller(&mut self) -> String {
        self.call.caller.clone()
    }

    fn wait(&mut self, timeout_ms: u32) {
        self.wait = Some(timeout_ms);
    }

    fn wait_timed_out(&mut self) -> bool {
        self.call.timed_out
    }

    fn set_timer(&mut self, delay_ms: u32) -> u64 {
        match self.session() {
            Some(s) => s.set_timer(delay_ms),
            None => {
                tracing::warn!(plugin = &*self.plugin, "set-timer outside a session is ignored");
                0
            }
        }
    }

    fn cancel_timer(&mut self, id: u64) {
        if let Some(s) = self.session() {
            s.cancel_timer(id);
        }
    }

    fn seed(&mut self) -> u64 {
        self.seeds.whole
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

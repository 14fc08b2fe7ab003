//! One game inside the component: which backend serves it, who sits where,
//! and the backend calls in flight. A tool call that needs the backend sends
//! its request, asks the host to wait, and is run again when a message
//! arrives; the call recognises its own request by a key (tool and
//! arguments) and takes the answer then.

use std::cell::RefCell;
use std::collections::HashMap;

use ludus_sdk::held::{Held, Poll};
use ludus_sdk::tally::{End, Tally};
use ludus_sdk::{LogLevel, channels, host};
use serde_json::Value;

use crate::rpc::{self, Incoming};

/// Which program plays the rules.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Backend {
    /// The phase bridge: one process serves both seats (`_meta.seat`) and
    /// starts its game with the extra tool `new_game`.
    Phase,
    /// XMage's headless client: one process per seat, its game set up when the
    /// operator's command launches it.
    Xmage,
}

impl Backend {
    /// The operator's endpoint name for it.
    pub fn endpoint(self) -> &'static str {
        match self {
            Backend::Phase => "phase",
            Backend::Xmage => "xmage",
        }
    }
}

#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub enum Seat {
    Agent(String),
    Ai,
    Open,
}

/// A backend request some tool call is waiting for.
pub struct Game {
    pub backend: Backend,
    /// The channel serving each seat (the phase bridge serves both on one).
    pub channels: [Option<u32>; 2],
    pub seats: [Seat; 2],
    next_id: u64,
    /// The request each caller waits for, and the answers that arrived.
    held: Held<Result<Value, String>>,
    /// Tools the backend offers (`tools/list`), once it answered.
    pub offered: Vec<String>,
    list_request: Option<u64>,
    /// Why the game cannot go on (the backend process ended).
    pub failed: Option<String>,
    /// What the backend last said it is busy with (installing its engine),
    /// and since when (ms since the epoch).
    pub notice: Option<String>,
    pub notice_since: u64,
    /// The game has ended: its final log and each seat's final state are
    /// being fetched, then the backend is let go.
    ending: Option<Ending>,
    /// On phase: the `new_game` arguments and every change the bridge has
    /// reported since (its answers' `_meta.journal`), which rebuild the game
    /// in a new bridge after a restart.
    pub start: Option<Value>,
    pub journal: Vec<Value>,
    /// The creator's seat and what the game tells the host for its result
    /// record: actions accepted and refused, and the verdict (the creator's).
    pub creator: usize,
    pub tally: Tally,
    /// A player conceded (the phase bridge's answer does not say so; XMage's does).
    pub conceding: bool,
    /// Decisions each seat's agent has made (`ludus:plugin/decisions`):
    /// each seat numbers its own, so one seat's call never uses another's.
    pub decisions: [u32; 2],
    /// The decision call whose number a seat has taken and whose answer is
    /// still to come (its key): a refusal, or a wait that did nothing,
    /// gives the number back.
    pub unsettled: [Option<String>; 2],
    /// The AI's level, for the seat it plays (`phase-ai/Medium`).
    pub ai_level: String,
    /// A bridge started after the game ended, to look a card up by name.
    lookup: Option<u32>,
    /// The decision each seat was last seen to have pending (checking a
    /// `choose_action`): what the illegal-move policy's random move picks
    /// from (`decision::legal_answers`).
    pub pending_seen: [Option<Value>; 2],
}

/// The end of a game: why, the requests for its final views still out, and
/// the views (by tool and seat) that answer every later call.
struct Ending {
    why: String,
    /// The answer that said the game is over: every status tool's answer from now on.
    status: Value,
    pending: HashMap<u64, (&'static str, usize)>,
    finals: HashMap<(&'static str, usize), Value>,
}

/// The tools that answer a status: once the game is over, the final one.
const STATUS_TOOLS: [&str; 6] = ["is_action_on_me", "pass_priority", "wait_for_action", "auto_pass_until_event", "take_action", "concede"];

/// What stays readable once a game is over.
const FINAL_VIEWS: [&str; 2] = ["get_game_log", "get_game_state"];

thread_local! {
    pub static GAME: RefCell<Option<Game>> = const { RefCell::new(None) };
}

pub fn with_game<T>(f: impl FnOnce(&mut Game) -> Result<T, String>) -> Result<T, String> {
    // Only the shared instance, which runs read-only calls of a caller with
    // no game, holds none.
    ludus_sdk::with_state(&GAME, "you have no game of cards (start one with `cards_start_game`)", f)
}

pub fn game_id() -> String {
    host::session_id().unwrap_or_default()
}

/// What one backend call has come to.
pub enum Step {
    Done(Result<Value, String>),
    Waiting,
}

impl Game {
    pub fn new(backend: Backend, seats: [Seat; 2]) -> Game {
        Game {
            backend,
            channels: [None, None],
            seats,
            next_id: 0,
            held: Held::default(),
            offered: Vec::new(),
            list_request: None,
            failed: None,
            notice: None,
            notice_since: 0,
            ending: None,
            start: None,
            journal: Vec::new(),
            creator: 0,
            tally: Tally::default(),
            conceding: false,
            decisions: [0, 0],
            unsettled: [None, None],
            ai_level: "Medium".into(),
            lookup: None,
            pending_seen: [None, None],
        }
    }

    /// The number of the decision due next from `seat`.
    pub fn decision_due(&self, seat: usize) -> u32 {
        self.decisions[seat] + 1
    }

    /// `seat`'s decision call `key` was sent: it takes the number due.
    pub fn take_number(&mut self, seat: usize, key: &str) {
        self.decisions[seat] += 1;
        self.unsettled[seat] = Some(key.to_string());
    }

    /// `seat`'s call `key` was answered: if it took a number and did
    /// nothing (refused, or a wait that passed nothing before it timed
    /// out), the number is given back.
    pub fn settle_number(&mut self, seat: usize, key: &str, answer: &Result<Value, String>) {
        if self.unsettled[seat].as_deref() != Some(key) {
            return;
        }
        self.unsettled[seat] = None;
        let did_nothing = match answer {
            Err(_) => true,
            Ok(v) => v["timeout"] == true && v["actions_passed"].as_u64().unwrap_or(0) == 0,
        };
        if did_nothing {
            self.decisions[seat] = self.decisions[seat].saturating_sub(1);
        }
    }

    /// The seat no agent has taken yet, if one is open.
    pub fn open_seat(&self) -> Option<usize> {
        self.seats.iter().position(|s| *s == Seat::Open)
    }

    /// The answer that said the game is over, once its final views are in:
    /// what every decision tool answers from then on.
    pub fn final_status(&self) -> Option<Value> {
        self.ending.as_ref().filter(|e| e.pending.is_empty()).map(|e| e.status.clone())
    }

    /// Tells the host who sits where, and each seat's result once the game is over.
    pub fn tell_seats(&self) {
        use ludus_sdk::outcome::Verdict;
        use ludus_sdk::seats::{Holder, Seat as Told};
        let ai = match self.backend {
            Backend::Phase => format!("phase-ai/{}", self.ai_level),
            Backend::Xmage => "xmage-ai".to_string(),
        };
        let seats: Vec<Told> = self
            .seats
            .iter()
            .enumerate()
            .map(|(i, s)| Told {
                name: format!("seat {i}"),
                holder: match s {
                    Seat::Agent(caller) => Holder::Agent(caller.clone()),
                    Seat::Ai => Holder::Builtin(ai.clone()),
                    Seat::Open => Holder::Open,
                },
                result: self.ending.as_ref().map(|e| match e.status.get("winner").and_then(Value::as_u64) {
                    None => Verdict::Draw,
                    Some(w) if w as usize == i => Verdict::Won,
                    Some(_) => Verdict::Lost,
                }),
            })
            .collect();
        ludus_sdk::seats::tell(&seats);
    }

    /// Looks a card up by name once the game is over and its engine gone: in
    /// a bridge started for that, stopped as soon as it answers.
    pub fn look_up(&mut self, caller: &str, key: &str, args: Value) -> Step {
        match self.held.poll(caller, key) {
            Poll::Answered(answer) => {
                if let Some(channel) = self.lookup.take() {
                    channels::close(channel);
                }
                return Step::Done(answer.and_then(rpc::tool_result));
            }
            Poll::Waiting => return Step::Waiting,
            Poll::NotSent => {}
        }
        let channel = match self.lookup {
            Some(channel) => channel,
            None => match channels::open(Backend::Phase.endpoint()) {
                Ok(channel) => {
                    let init = self.id();
                    send(channel, &rpc::initialize(init));
                    send(channel, &rpc::initialized());
                    self.lookup = Some(channel);
                    channel
                }
                Err(e) => return Step::Done(Err(format!("the card data cannot be read now that the game is over: {e}"))),
            },
        };
        let id = self.id();
        send(channel, &rpc::tool_call(id, "get_oracle_text", args, Some(0)));
        self.held.sent(caller, key, id);
        Step::Waiting
    }

    /// A new game: its parameters for the result record, told at once.
    pub fn begin_tally(&mut self, creator: usize) {
        let opponent = if self.seats.contains(&Seat::Ai) { "ai" } else { "agent" };
        let backend = if self.backend == Backend::Phase { "phase" } else { "xmage" };
        self.creator = creator;
        self.tally = Tally::new(format!("{{\"game\":\"magic\",\"opponent\":\"{opponent}\",\"backend\":\"{backend}\"}}"), None);
        self.tally.tell();
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Opens the backend for `seat` and introduces ourselves. Lines queue
    /// until the process reads them, so nothing here waits.
    pub fn connect(&mut self, seat: usize) -> Result<(), String> {
        let endpoint = self.backend.endpoint();
        let channel = channels::open(endpoint).map_err(|e| {
            let hint = match self.backend {
                Backend::Phase => " (the built-in rules engine needs python3, 3.11 or newer, on the server's PATH)",
                Backend::Xmage => "",
            };
            format!("the card-game backend `{endpoint}` cannot start: {e}{hint}")
        })?;
        match self.backend {
            Backend::Phase => self.channels = [Some(channel), Some(channel)],
            Backend::Xmage => self.channels[seat] = Some(channel),
        }
        let (init, list) = (self.id(), self.id());
        send(channel, &rpc::initialize(init));
        send(channel, &rpc::initialized());
        send(channel, &rpc::request(list, "tools/list", Value::Object(Default::default())));
        self.list_request = Some(list);
        Ok(())
    }

    /// The seat of `caller`, or why it has none.
    pub fn seat_of(&self, caller: &str) -> Result<usize, String> {
        self.seats
            .iter()
            .position(|s| *s == Seat::Agent(caller.to_string()))
            .ok_or_else(|| "you have no seat in this game (a second agent takes the free seat with `cards_join_game`)".into())
    }

    /// One backend tool call for `caller`, across the host's re-runs: sent the
    /// first time, its answer returned once it came, else `Waiting`.
    pub fn step(&mut self, caller: &str, key: &str, seat: usize, tool: &str, args: Value) -> Step {
        match self.held.poll(caller, key) {
            Poll::Answered(r) => return Step::Done(r.and_then(rpc::tool_result)),
            Poll::Waiting if self.failed.is_some() => return Step::Done(Err(self.failed.clone().unwrap_or_default())),
            Poll::Waiting => return Step::Waiting,
            Poll::NotSent => {}
        }
        if let Some(why) = &self.failed {
            return Step::Done(Err(why.clone()));
        }
        let Some(channel) = self.channels[seat] else {
            return Step::Done(Err(format!("seat {seat} has no backend connection")));
        };
        let id = self.id();
        let meta_seat = (self.backend == Backend::Phase).then_some(seat as u32);
        send(channel, &rpc::tool_call(id, tool, args, meta_seat));
        // A call this caller abandoned is replaced; its answer is dropped when it comes.
        self.held.sent(caller, key, id);
        Step::Waiting
    }

    /// Starts the game on a new bridge as it was: the same `new_game`
    /// arguments, and the journal to apply again. Its answer is nobody's call.
    pub fn rebuild(&mut self) {
        let (Some(mut args), Some(channel)) = (self.start.clone(), self.channels[0]) else { return };
        args["replay"] = Value::Array(self.journal.clone());
        let id = self.id();
        send(channel, &rpc::tool_call(id, "new_game", args, Some(0)));
    }

    /// The request this caller waits for has this key.
    pub fn in_flight(&self, caller: &str, key: &str) -> bool {
        self.held.in_flight(caller, key)
    }

    /// A line from the backend.
    /// When an answer says the game has ended: asks the backend for the
    /// final log and each seat's final state; once they are in, tells the
    /// host (which closes the backend, freeing its process) and answers
    /// those tools from them, every other call with the result.
    /// A concession is an end too: its answer is marked `game_over` so that
    /// every seat's status reads as the result.
    pub fn note_if_over(&mut self, answer: &mut Value) {
        if answer.get("conceded").and_then(Value::as_bool) == Some(true) {
            answer["game_over"] = Value::Bool(true);
            self.conceding = true;
        }
        let over = answer.get("game_over").and_then(Value::as_bool) == Some(true);
        if !over || self.ending.is_some() || self.failed.is_some() {
            return;
        }
        let winner = match answer.get("winner") {
            Some(Value::Null) | None => "no winner".to_string(),
            Some(w) => format!("winner: {}", w.as_str().map_or_else(|| w.to_string(), String::from)),
        };
        let why = format!("the game is over ({winner}); its engine has shut down. Start a new game with `cards_start_game`");
        let seat_won = answer.get("winner").and_then(Value::as_u64);
        self.tally.end(match seat_won {
            None => End::Draw,
            Some(s) if s as usize == self.creator => End::Won,
            Some(_) => End::Lost,
        });
        let turn = answer.get("turn").and_then(Value::as_u64).map_or("null".into(), |t| t.to_string());
        self.tally.figures =
            format!("{{\"winner\":{},\"turn\":{turn},\"conceded\":{}}}", seat_won.map_or("null".into(), |s| s.to_string()), self.conceding);
        self.tally.tell();
        let mut ending = Ending { why, status: answer.clone(), pending: HashMap::new(), finals: HashMap::new() };
        for seat in 0..2 {
            let Some(channel) = self.channels[seat] else { continue };
            for tool in FINAL_VIEWS {
                let id = self.id();
                let meta_seat = (self.backend == Backend::Phase).then_some(seat as u32);
                send(channel, &rpc::tool_call(id, tool, Value::Object(Default::default()), meta_seat));
                ending.pending.insert(id, (tool, seat));
            }
        }
        self.ending = Some(ending);
        self.tell_seats();
        self.finish_if_ready();
    }

    /// The game has ended and its final views are still being fetched (the
    /// host is told once they are in).
    pub fn ending_pending(&self) -> bool {
        self.ending.as_ref().is_some_and(|e| !e.pending.is_empty())
    }

    /// `tool` is answered from the final views once the game is over.
    pub fn answers_when_over(tool: &str) -> bool {
        STATUS_TOOLS.contains(&tool) || FINAL_VIEWS.contains(&tool)
    }

    /// The final view of `tool` for `seat`, once the game is over.
    pub fn final_view(&self, tool: &str, seat: usize) -> Option<Value> {
        let ending = self.ending.as_ref().filter(|e| e.pending.is_empty())?;
        if STATUS_TOOLS.contains(&tool) {
            return Some(ending.status.clone());
        }
        ending.finals.iter().find(|((t, s), _)| *t == tool && *s == seat).map(|(_, v)| v.clone())
    }

    fn finish_if_ready(&mut self) {
        let Some(ending) = self.ending.as_ref().filter(|e| e.pending.is_empty()) else { return };
        if self.failed.is_none() {
            self.failed = Some(ending.why.clone());
            ludus_sdk::lifecycle::game_over();
        }
    }

    pub fn receive(&mut self, line: &str) {
        let incoming = rpc::parse(line);
        if let Incoming::Response { result: Ok(result), .. } = &incoming {
            self.journal.extend(rpc::journal(result).iter().cloned());
        }
        match incoming {
            Incoming::Response { id, result } if Some(id) == self.list_request => {
                self.list_request = None;
                self.offered = result.map(|r| rpc::tool_names(&r)).unwrap_or_default();
            }
            Incoming::Response { id, result } if self.ending.as_ref().is_some_and(|e| e.pending.contains_key(&id)) => {
                let ending = self.ending.as_mut().expect("checked");
                let view = ending.pending.remove(&id).expect("checked");
                if let Ok(v) = result.and_then(rpc::tool_result) {
                    ending.finals.insert(view, v);
                }
                self.finish_if_ready();
            }
            Incoming::Response { id, result } => {
                self.notice = None;
                self.held.answer(id, result);
            }
            Incoming::Notice(text) => {
                ludus_sdk::log(LogLevel::Info, &format!("{} backend: {text}", self.backend.endpoint()));
                if self.notice.is_none() {
                    self.notice_since = now_ms();
                }
                self.notice = Some(text);
            }
            Incoming::Other => {}
            Incoming::Garbage(text) => ludus_sdk::log(LogLevel::Debug, &format!("backend said: {text}")),
        }
    }
}

/// Milliseconds since the epoch (WASI's clock).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn send(channel: u32, line: &str) {
    if let Err(e) = channels::send(channel, line) {
        ludus_sdk::log(LogLevel::Warn, &format!("sending to the backend failed: {e}"));
    }
}

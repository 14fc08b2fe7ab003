//! One game inside the component: its seats, its last snapshot, and the
//! bridge that holds the engine. A tool call that needs the engine sends its
//! request, asks the host to wait, and is run again when the answer arrives;
//! the call recognises its own request by a key and takes the answer then.
//! Every answer's snapshot is taken when it arrives, so a seat waiting for
//! its turn sees the change at once.

use std::cell::RefCell;

use ludus_sdk::held::{Held, Poll};
use ludus_sdk::tally::{End, Tally};
use ludus_sdk::{LogLevel, channels, host};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::seats::Seat;
use crate::snapshot::{self, Incoming, Snapshot};

/// The operator's endpoint name for the bridge (bundled: `openspiel_bridge.py`).
pub const ENDPOINT: &str = "openspiel";

thread_local! {
    pub static GAME: RefCell<Option<Game>> = const { RefCell::new(None) };
}

pub fn with_game<T>(f: impl FnOnce(&mut Game) -> Result<T, String>) -> Result<T, String> {
    ludus_sdk::with_state(&GAME, "you have no OpenSpiel game here (start one with `openspiel_start_game`)", f)
}

/// What a restart keeps: everything but the bridge, which a later move
/// starts again from the history.
#[derive(Serialize, Deserialize)]
pub struct Game {
    pub name: String,
    /// The parameters as OpenSpiel takes them (a JSON object).
    pub parameters: String,
    pub seats: Vec<Seat>,
    /// The game's whole seed: chance and the opponents draw from it.
    pub seed: u64,
    pub creator: usize,
    /// The game as the bridge last told it; `None` until it first answered.
    pub snap: Option<Snapshot>,
    /// Decisions the agents have made, over every seat.
    pub decisions: u32,
    pub tally: Tally,
    #[serde(skip)]
    pub link: Link,
}

/// The bridge process and the requests in flight.
#[derive(Default)]
pub struct Link {
    channel: Option<u32>,
    next_id: u64,
    /// The request each caller waits for, and the answers that arrived for
    /// them: the snapshot is taken already; the caller learns whether its
    /// request was refused.
    held: Held<Result<(), String>>,
    /// What the bridge last said it is busy with, and since when (ms).
    pub notice: Option<(String, u64)>,
    /// The last request id sent before the running bridge was opened.
    opened_at: u64,
    /// The last scored agent move, shown to its seat (Kuhn, Leduc).
    pub last_scored: Option<crate::snapshot::Scored>,
}

/// What one bridge request has come to.
pub enum Step {
    Done(Result<(), String>),
    Waiting,
}

impl Game {
    pub fn new(name: String, parameters: String, seats: Vec<Seat>, creator: usize, tally: Tally) -> Game {
        Game { name, parameters, seats, seed: host::seed(), creator, snap: None, decisions: 0, tally, link: Link::default() }
    }

    pub fn decision_due(&self) -> u32 {
        self.decisions + 1
    }

    pub fn over(&self) -> bool {
        self.snap.as_ref().is_some_and(|s| s.over)
    }

    /// The seats `caller` holds (one caller may hold several: self-play).
    pub fn seats_of(&self, caller: &str) -> Vec<usize> {
        self.seats.iter().enumerate().filter(|(_, s)| **s == Seat::Agent(caller.to_string())).map(|(i, _)| i).collect()
    }

    /// The caller's seat as its views show it: the one to move, else its first.
    pub fn seat_of(&self, caller: &str) -> Option<usize> {
        let mine = self.seats_of(caller);
        let to_move = self.snap.as_ref().and_then(Snapshot::to_move);
        to_move.filter(|s| mine.contains(s)).or_else(|| mine.first().copied())
    }

    /// The seat `caller` moves for now, or why it may not move.
    pub fn seat_to_move(&self, caller: &str) -> Result<usize, String> {
        if self.seats_of(caller).is_empty() {
            return Err("you have no seat in this game (an agent takes a free seat with `openspiel_join_game`)".into());
        }
        let Some(snap) = &self.snap else { return Err("the game is still starting; call `openspiel_wait_for_turn`".into()) };
        if snap.over {
            return Err("the game is over; start a new one with `openspiel_start_game`".into());
        }
        match snap.to_move() {
            Some(seat) if self.seats[seat] == Seat::Agent(caller.to_string()) => Ok(seat),
            Some(seat) if self.seats[seat] == Seat::Open => {
                Err(format!("it is seat {seat}'s turn, and that seat is open: nobody plays it until an agent joins with the join code"))
            }
            Some(seat) => Err(format!("it is not your turn: seat {seat} is to move (call `openspiel_wait_for_turn`)")),
            None => Err("nobody is to move now".into()),
        }
    }

    /// A request to the bridge for `caller`, across the host's re-runs: sent
    /// the first time, its outcome returned once answered, else `Waiting`.
    pub fn request(&mut self, caller: &str, key: &str, body: Value) -> Step {
        match self.link.held.poll(caller, key) {
            Poll::Answered(result) => return Step::Done(result),
            Poll::Waiting => return Step::Waiting,
            Poll::NotSent => {}
        }
        let sent = self.connect().and_then(|()| match self.send(body.clone()) {
            Ok(id) => Ok(id),
            // The bridge ended and its close has not reached us yet: nothing
            // of this request was made; a new bridge rebuilds the game first.
            Err(_) => {
                self.link.channel = None;
                self.connect().and_then(|()| self.send(body))
            }
        });
        match sent {
            Ok(id) => {
                // A call this caller abandoned is replaced; its answer is dropped when it comes.
                self.link.held.sent(caller, key, id);
                Step::Waiting
            }
            Err(e) => Step::Done(Err(e)),
        }
    }

    /// The request `caller` waits for has this key.
    pub fn in_flight(&self, caller: &str, key: &str) -> bool {
        self.link.held.in_flight(caller, key)
    }

    /// Any agent's move is with the bridge: the next waits for its outcome.
    pub fn moving(&self) -> bool {
        self.link.held.any(|k| k.starts_with("move "))
    }

    /// The `new` request for this game: its seats, seed and history so far.
    pub fn new_request(&self) -> Value {
        let parameters: Value = serde_json::from_str(&self.parameters).unwrap_or_else(|_| json!({}));
        let seats: Vec<String> = self.seats.iter().map(Seat::bridge_name).collect();
        let history = self.snap.as_ref().map(|s| s.history.clone()).unwrap_or_default();
        json!({"op": "new", "game": self.name, "params": parameters, "seats": seats, "seed": self.seed, "history": history})
    }

    /// Opens the bridge when there is none. A game that has begun is rebuilt
    /// in it from its history first (after a restart, on another server);
    /// lines queue in order, so the request that follows finds it rebuilt.
    fn connect(&mut self) -> Result<(), String> {
        if self.link.channel.is_some() {
            return Ok(());
        }
        let channel = channels::open(ENDPOINT).map_err(|e| format!("the OpenSpiel engine cannot start: {e}"))?;
        self.link.channel = Some(channel);
        self.link.opened_at = self.link.next_id;
        if self.snap.is_some() {
            let rebuild = self.new_request();
            self.send(rebuild)?;
        }
        Ok(())
    }

    fn send(&mut self, mut body: Value) -> Result<u64, String> {
        self.link.next_id += 1;
        let id = self.link.next_id;
        body["id"] = json!(id);
        let channel = self.link.channel.ok_or("the OpenSpiel engine is not running")?;
        channels::send(channel, &body.to_string()).map_err(|e| format!("the OpenSpiel engine could not be reached: {e}"))?;
        Ok(id)
    }

    /// A line from the bridge.
    pub fn receive(&mut self, line: &str) {
        match snapshot::parse(line) {
            Incoming::Answer { id, result, scored } => {
                self.link.notice = None;
                // A move is counted when its answer comes, before the game
                // it may end is recorded (a count after that is too late).
                let a_move = self.link.held.key_of(id).is_some_and(|k| k.starts_with("move "));
                let outcome = match result {
                    Ok(snap) => {
                        if a_move {
                            self.tally.sent(true);
                        }
                        if let Some(s) = scored.filter(|_| a_move) {
                            self.scored(s);
                        }
                        self.take(snap);
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
                self.link.held.answer(id, outcome);
            }
            Incoming::Notice(text) => {
                ludus_sdk::log(LogLevel::Info, &format!("openspiel bridge: {text}"));
                let since = self.link.notice.as_ref().map_or_else(now_ms, |(_, t)| *t);
                self.link.notice = Some((text, since));
            }
            Incoming::Garbage(text) => ludus_sdk::log(LogLevel::Debug, &format!("openspiel bridge said: {text}")),
        }
    }

    /// The bridge ended: the requests it had are refused, and the next one
    /// starts a new bridge, which rebuilds the game from its history (the
    /// game is as the last answer left it).
    pub fn closed(&mut self, channel: u32, reason: &str) {
        // A bridge already replaced: only the requests sent to it are lost.
        let running = self.link.channel == Some(channel);
        if running {
            self.link.channel = None;
        }
        let opened_at = self.link.opened_at;
        let why = format!("the OpenSpiel engine stopped ({reason}); nothing of this call was made: call again");
        self.link.held.fail(|id| running || id <= opened_at, || Err(why.clone()));
    }

    /// The game as the bridge now tells it; once it is over, the result is
    /// recorded and the bridge let go.
    fn take(&mut self, snap: Snapshot) {
        let ended = snap.over && !self.over();
        self.snap = Some(snap.follow(self.snap.as_ref()));
        if ended {
            self.record_end();
            ludus_sdk::lifecycle::game_over();
        }
    }

    /// An agent's move was scored: shown to its seat, and its optimality
    /// kept in the record's figures (as Showdown's are, for `ludus report`).
    fn scored(&mut self, s: crate::snapshot::Scored) {
        self.link.last_scored = Some(s);
        let mut figures: Value = serde_json::from_str(&self.tally.figures).unwrap_or_else(|_| json!({}));
        if !figures.is_object() {
            figures = json!({});
        }
        let list = figures.as_object_mut().expect("an object").entry("optimality").or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            list.push(json!(s.optimality));
        }
        self.tally.figures = figures.to_string();
    }

    /// Each seat's result: won with the highest return, a draw when all are equal.
    pub fn results(&self) -> Option<Vec<End>> {
        let returns = self.snap.as_ref()?.returns.as_ref()?;
        let high = returns.iter().copied().fold(f64::MIN, f64::max);
        let low = returns.iter().copied().fold(f64::MAX, f64::min);
        Some(
            returns
                .iter()
                .map(|r| match returns.len() {
                    // One player: its return says it.
                    1 if *r > 0.0 => End::Won,
                    1 if *r < 0.0 => End::Lost,
                    _ if high == low => End::Draw,
                    _ if *r == high => End::Won,
                    _ => End::Lost,
                })
                .collect(),
        )
    }

    fn record_end(&mut self) {
        let Some(results) = self.results() else { return };
        self.tally.end(results[self.creator]);
        let snap = self.snap.as_ref().expect("over");
        let kept: Value = serde_json::from_str(&self.tally.figures).unwrap_or_else(|_| json!({}));
        let mut figures = json!({"returns": snap.returns, "actions": snap.history.len()});
        if let Some(list) = kept["optimality"].as_array().filter(|l| !l.is_empty()) {
            let mean = list.iter().filter_map(Value::as_f64).sum::<f64>() / list.len() as f64;
            (figures["optimality"], figures["optimality_mean"]) = (json!(list), json!(mean));
        }
        self.tally.figures = figures.to_string();
        self.tally.tell();
        self.tell_seats();
    }

    /// Tells the host who sits where, and each seat's result once the game is over.
    pub fn tell_seats(&self) {
        use ludus_sdk::outcome::Verdict;
        use ludus_sdk::seats::{Holder, Seat as Told};
        let results = self.results();
        let seats: Vec<Told> = self
            .seats
            .iter()
            .enumerate()
            .map(|(i, s)| Told {
                name: format!("seat {i}"),
                holder: match s {
                    Seat::Agent(caller) => Holder::Agent(caller.clone()),
                    Seat::Open => Holder::Open,
                    builtin => Holder::Builtin(builtin.builtin().unwrap_or_default()),
                },
                result: results.as_ref().map(|r| match r[i] {
                    End::Won => Verdict::Won,
                    End::Lost => Verdict::Lost,
                    _ => Verdict::Draw,
                }),
            })
            .collect();
        ludus_sdk::seats::tell(&seats);
    }
}

/// Milliseconds since the epoch (WASI's clock).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

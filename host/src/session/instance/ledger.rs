//! The ledger: what the host keeps of a game besides the game's own state —
//! its name, who plays, its seats, each player's last answered decision,
//! where the game stands, and its counts. These are the changing fields of
//! the session's stored [`Record`]; they live under one lock
//! (`Session::ledger`), so a record is read whole and a change to several
//! of them is seen at once.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Instant;

use crate::records::{Holder, Outcome, Seat, Standing};
use crate::store::{Record, StoredCall};

pub(super) struct Ledger {
    /// The session's id (a game may rename it once: `renamed`).
    pub id: String,
    pub renamed: bool,
    /// Who may call the session's tools: its creator first, then each
    /// caller that took a seat with the join code (`plugin::Audience`).
    pub players: Vec<String>,
    /// The seats as the game last told them (`ludus:plugin/seats`).
    pub seats: Vec<Seat>,
    /// Players whose answers have published the secret of the game that ended.
    pub told_secret: HashSet<String>,
    /// Each player's last answered decisions (up to [`KEPT_ANSWERS`],
    /// oldest first), for their retries: as JSON, as the store keeps them,
    /// so that a write or a rebuild converts none (a retry converts its own).
    pub answers: HashMap<String, VecDeque<StoredCall>>,
    /// Decisions whose calls are held waiting for their answer: a twin
    /// waits for that answer instead of running.
    pub awaiting: HashSet<(String, u64)>,
    /// Where its current game stands (`ludus:plugin/outcome`).
    pub standing: Standing,
    /// The game said it is over (`lifecycle.game-over`).
    pub over: bool,
    /// Tool calls its clients made (a re-run of a waiting call is not one).
    pub calls: u64,
    /// When a call last changed it, as stored (milliseconds since the epoch).
    pub changed_at_ms: u64,
    /// When a call last ran on it (in this process: for idle expiry).
    pub last_used: Instant,
}

impl Ledger {
    /// The ledger of a game as its record stores it.
    pub fn of(record: &Record) -> Ledger {
        Ledger {
            id: record.id.clone(),
            renamed: record.renamed,
            players: record.players.clone(),
            seats: record.seats.clone(),
            told_secret: HashSet::new(),
            answers: last_calls_of(record),
            awaiting: HashSet::new(),
            standing: record.standing.clone(),
            over: record.over,
            calls: record.calls,
            changed_at_ms: record.changed_at_ms,
            last_used: Instant::now(),
        }
    }

    /// Takes what another server stored of the game (its copy here caught
    /// up); the name, the secrets told and the calls held here stay.
    pub fn catch_up(&mut self, record: &Record) {
        self.players = record.players.clone();
        self.seats = record.seats.clone();
        self.answers = last_calls_of(record);
        self.standing = record.standing.clone();
        self.over = record.over;
        self.calls = record.calls;
        self.changed_at_ms = record.changed_at_ms;
    }

    /// Whether a seat may still be taken: one the game told is open, or,
    /// for a game that tells no seats (a plugin older than 0.1.6), any.
    pub fn has_open_seat(&self) -> bool {
        self.seats.is_empty() || self.seats.iter().any(|s| s.kind == Holder::Open)
    }

    /// `caller` loses the game under the illegal-move policy: its seats
    /// lose, the others win, and the game's verdict (as its creator sees
    /// it; a game without seats, a puzzle, is failed) is final.
    pub fn lose_by_policy(&mut self, caller: &str, creator: &str) {
        for seat in self.seats.iter_mut().filter(|s| s.player.is_some()) {
            seat.result = Some(if seat.player.as_deref() == Some(caller) { Outcome::Lost } else { Outcome::Won });
        }
        let verdict = match (self.seats.is_empty(), caller == creator) {
            (true, _) => Outcome::Failed,
            (false, true) => Outcome::Lost,
            (false, false) => Outcome::Won,
        };
        let told = self.standing.told.get_or_insert_with(Default::default);
        told.outcome = Some(verdict);
        self.over = true;
    }

    /// The kept answers as a record stores them: each player's last, and
    /// the ones before it.
    pub fn stored_calls(&self) -> (BTreeMap<String, StoredCall>, BTreeMap<String, Vec<StoredCall>>) {
        let (mut last, mut earlier) = (BTreeMap::new(), BTreeMap::new());
        for (caller, kept) in &self.answers {
            let mut stored: Vec<StoredCall> = kept.iter().cloned().collect();
            let Some(newest) = stored.pop() else { continue };
            last.insert(caller.clone(), newest);
            if !stored.is_empty() {
                earlier.insert(caller.clone(), stored);
            }
        }
        (last, earlier)
    }

    /// The answer `caller`'s decision `decision` got, if it is kept (the
    /// newest such: numbers start again after a reset).
    pub fn answer_of(&self, caller: &str, decision: u64) -> Option<&StoredCall> {
        self.answers.get(caller)?.iter().rev().find(|c| c.decision == decision)
    }

    /// Keeps `caller`'s answer for its retries, dropping the oldest past
    /// [`KEPT_ANSWERS`]; a decision answered again replaces its answer.
    pub fn remember(&mut self, caller: &str, kept: StoredCall) {
        let answers = self.answers.entry(caller.to_string()).or_default();
        if answers.back().is_some_and(|last| last.decision == kept.decision) {
            answers.pop_back();
        }
        answers.push_back(kept);
        while answers.len() > KEPT_ANSWERS {
            answers.pop_front();
        }
    }

    /// What identifies the stored content (with the game's `state`): a
    /// write that would store the same again is left out.
    pub fn digest(&self, state: &[u8]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&self.id, &self.players, &self.seats, self.over, state).hash(&mut h);
        let standing = &self.standing;
        (standing.game, standing.recorded, standing.told.as_ref().map(|t| (t.outcome, t.moves, t.illegal_moves))).hash(&mut h);
        let mut kept: Vec<(&String, Vec<u64>)> =
            self.answers.iter().map(|(caller, kept)| (caller, kept.iter().map(|c| c.decision).collect())).collect();
        kept.sort();
        kept.hash(&mut h);
        h.finish()
    }
}

/// How many answered decisions are kept per player: a client that resends
/// one of its last this many decisions gets the answer it got.
pub const KEPT_ANSWERS: usize = 8;

/// The stored calls of a record, oldest first, per player.
fn last_calls_of(record: &Record) -> HashMap<String, VecDeque<StoredCall>> {
    let mut calls = HashMap::new();
    for (caller, last) in &record.last_calls {
        let earlier = record.earlier_calls.get(caller).map(Vec::as_slice).unwrap_or_default();
        calls.insert(caller.clone(), earlier.iter().chain(std::iter::once(last)).cloned().collect());
    }
    calls
}

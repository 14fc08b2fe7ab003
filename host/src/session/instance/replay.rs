//! A session that plays a recorded game again (`ludus verify`). Its timers
//! are not armed and its processes' lines are not delivered as they come:
//! the replay fires each timer and delivers each line where the record's
//! log has it, so the game sees the same things in the same order as when
//! it was played, whatever the clock and the processes' speed.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Session;
use crate::capability::channels::Input;
use crate::locking::lock;
use crate::records::{ResultRecord, line_digest, line_digests};

/// What a replaying session holds back until its log asks for it.
#[derive(Default)]
pub(super) struct Held {
    /// Timers set and not cancelled, by id.
    pub timers: Mutex<BTreeSet<u64>>,
    /// The records of the games that ended, in order.
    ended: Mutex<Vec<ResultRecord>>,
    /// What the game had asked its processes (`Channels::asked`) when a
    /// line was last delivered or a wait for one ended.
    answered_at: std::sync::atomic::AtomicU64,
    /// Lines (and ends) from its processes, in arrival order.
    input: Mutex<VecDeque<(u32, Input)>>,
    arrived: tokio::sync::Notify,
}

impl Held {
    pub fn reached(&self, record: ResultRecord) {
        lock(&self.ended).push(record);
    }

    pub fn hold(&self, channel: u32, input: Input) {
        lock(&self.input).push_back((channel, input));
        self.arrived.notify_one();
    }

    /// Puts a line taken back, first in line.
    fn put_back(&self, channel: u32, input: Input) {
        lock(&self.input).push_front((channel, input));
    }

    /// The first input held from `channel` that `wanted` takes, waiting up to `within` for it.
    async fn take(&self, channel: u32, wanted: fn(&Input) -> bool, within: Duration) -> Option<Input> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            {
                let mut input = lock(&self.input);
                if let Some(at) = input.iter().position(|(c, i)| *c == channel && wanted(i)) {
                    return input.remove(at).map(|(_, i)| i);
                }
            }
            if tokio::time::timeout_at(deadline, self.arrived.notified()).await.is_err() {
                return None;
            }
        }
    }
}

/// How long a replay waits for the first of the lines its log says a
/// process sent, when the game asked it something since its last line (an
/// engine thinking); nothing by then: they are not said.
const FIRST_WAIT: Duration = Duration::from_secs(30);

/// How long it waits otherwise, and for each further line: a process writes
/// the lines of one answer together, so a pause this long means it said less.
const SETTLE: Duration = Duration::from_secs(1);

fn shown(line: &str) -> String {
    line.chars().take(120).collect()
}

impl Session {
    fn held(&self) -> Result<&Held, String> {
        self.held.as_ref().ok_or_else(|| "this session does not replay a record".to_string())
    }

    /// The record of the replayed game `game` once it ended.
    pub fn replayed_record(&self, game: u32) -> Option<ResultRecord> {
        let ended = lock(&self.held.as_ref()?.ended);
        ended.iter().find(|r| r.record.ends_with(&format!("/{game}"))).cloned()
    }

    /// Fires the game's timer `id`, as its log says it fired.
    pub async fn replay_timer(self: &Arc<Self>, id: u64) -> Result<(), String> {
        if !lock(&self.held()?.timers).remove(&id) {
            return Err(format!("the log fires timer {id}, which the game has not set"));
        }
        self.clone().fire_timer(id).await;
        Ok(())
    }

    /// Delivers channel `channel`'s lines that stand where the log has
    /// `lines` (their digests), keeping the process's lines in step with
    /// the log. A process may say more or less than when the game was
    /// played (a first-use install's notices) or say it otherwise (a
    /// process that prints the time): a line that matches one further on
    /// means the ones between are not said this time; a line that matches a
    /// later entry of the log (`later`) means the rest of these are not; a
    /// line that matches nothing takes the place of the next; and a pause
    /// (`FIRST_WAIT`, then `SETTLE`) ends them. Returns how the lines first
    /// differed, for the verdict to show should the game end otherwise.
    pub async fn replay_lines(self: &Arc<Self>, channel: u32, lines: &str, later: &HashSet<&str>) -> Result<Option<String>, String> {
        let held = self.held()?;
        let is_line = |i: &Input| matches!(i, Input::Message(_));
        let expected: Vec<&str> = line_digests(lines).collect();
        let (mut at, mut differed) = (0, None);
        while at < expected.len() {
            // A process answers what it is asked: with nothing asked since
            // its last line, more lines are unlikely, and not worth a long wait.
            let asked = self.channels.asked() != held.answered_at.load(Ordering::Relaxed);
            let within = if at == 0 && asked { FIRST_WAIT } else { SETTLE };
            held.answered_at.store(self.channels.asked(), Ordering::Relaxed);
            let not_said = format!("{} of its {} lines were not said", expected.len() - at, expected.len());
            let Some(line) = held.take(channel, is_line, within).await else {
                tracing::debug!(channel, lines, at, "replay: no line within {within:?}");
                differed.get_or_insert(not_said);
                break;
            };
            let Input::Message(text) = &line else { break };
            let digest = line_digest(text);
            tracing::debug!(channel, lines, at, digest, "replay: line {}", shown(text));
            match expected[at..].iter().position(|d| *d == digest) {
                Some(ahead) => {
                    if ahead > 0 {
                        differed.get_or_insert_with(|| format!("{ahead} lines before {:?} were not said", shown(text)));
                    }
                    at += ahead + 1;
                }
                None if later.contains(digest.as_str()) => {
                    held.put_back(channel, line);
                    differed.get_or_insert(not_said);
                    break;
                }
                None => {
                    differed.get_or_insert_with(|| format!("{:?}", shown(text)));
                    at += 1;
                }
            }
            self.clone().deliver_now(channel, line).await;
        }
        Ok(differed)
    }

    /// Rebuilds the game from its own state where its log says it was
    /// rebuilt when played: what it had pending (timers, processes) is
    /// dropped, as it was then, and a fresh instance is handed its state.
    pub async fn replay_rebuilt(self: &Arc<Self>) -> Result<(), String> {
        let held = self.held()?;
        let durable = self.plugin.durable.ok_or("the log rebuilds the game, which cannot hand over its state")?;
        lock(&held.timers).clear();
        self.channels.close_all();
        let session = self.clone();
        let rebuilt = tokio::task::spawn_blocking(move || {
            let state = session.saved_state().ok_or_else(|| "the game would not hand over its state".to_string())?;
            session.fresh_instance().map_err(|e| e.to_string())?;
            session.restore(durable, &state).map_err(|e| e.to_string())
        });
        rebuilt.await.map_err(|e| format!("rebuilding the game failed: {e}"))?
    }

    /// Delivers the end of channel `channel`, as its log says it ended.
    /// A process that ended by itself when the game was played (killed,
    /// crashed) still runs here: once its lines are all in (`SETTLE`), the
    /// replay ends it the same way, and the game hears of it as it did then.
    pub async fn replay_closed(self: &Arc<Self>, channel: u32) -> Result<(), String> {
        let held = self.held()?;
        let is_end = |i: &Input| matches!(i, Input::Closed(_));
        let end = match held.take(channel, is_end, SETTLE).await {
            Some(end) => end,
            None => {
                tracing::debug!(channel, "replay: the channel's process ended when the game was played; ending it");
                self.channels.close(channel);
                Input::Closed("the process ended here when the game was played, and the replay ends it too".into())
            }
        };
        self.clone().deliver_now(channel, end).await;
        Ok(())
    }
}

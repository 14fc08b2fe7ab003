//! Games that leave memory while idle. A game no call has touched for
//! `limits.unload_idle_after_ms` (or the longest-idle games, when a new one
//! would not fit) leaves the table of live sessions for the dormant ones:
//! its record stays, its state stays in the session store (or here, with
//! `store = "memory"`), its instance goes. The next call on it rebuilds it
//! as a restart does. Why: docs/design/sessions.md, "Idle games leave
//! memory".

use std::sync::Arc;
use std::time::Instant;

use super::{Session, Sessions};
use crate::locking::lock;
use crate::plugin::Plugin;
use crate::records::MatchTag;
use crate::store::{Record, now_ms};

/// A game out of memory, kept compactly: the few fields the table finds
/// games by, and, when no store keeps the game (`store = "memory"`), its
/// record (as JSON, in one allocation) and its state. With a store, the
/// record and state are read back from it when the game is rebuilt or
/// listed, so a game out of memory costs the table only this index.
pub(super) struct Dormant {
    kept: Option<Kept>,
    pub plugin: Box<str>,
    players: Box<[Box<str>]>,
    pub created_by: Box<str>,
    pub in_match: Option<MatchTag>,
    /// When it expires (its last change plus its idle timeout), in ms since the epoch.
    expires_at_ms: u64,
    /// The plugin version it ran, for a game that left memory here: a
    /// reload of the plugin meanwhile does not end it (a game runs on the
    /// version it started on). None for a game read from the store at start.
    pub version: Option<Arc<Plugin>>,
}

/// What no store keeps of a game out of memory.
struct Kept {
    record: Box<[u8]>,
    state: Box<[u8]>,
}

impl Dormant {
    /// `record`'s index; `state`: the game's state, kept here because no
    /// store keeps it (the record is then kept too).
    pub fn new(record: &Record, state: Option<Vec<u8>>, version: Option<Arc<Plugin>>) -> Dormant {
        let kept = state.map(|state| Kept {
            record: serde_json::to_vec(record).unwrap_or_default().into_boxed_slice(),
            state: state.into_boxed_slice(),
        });
        Dormant {
            kept,
            plugin: record.plugin.as_str().into(),
            players: record.players.iter().map(|p| p.as_str().into()).collect(),
            created_by: record.created_by.as_str().into(),
            in_match: record.in_match.clone(),
            expires_at_ms: record.changed_at_ms.saturating_add(record.idle_timeout_ms),
            version,
        }
    }

    /// A game the session store keeps, read at start.
    pub fn stored(record: &Record) -> Dormant {
        Dormant::new(record, None, None)
    }

    /// No store keeps it: its record and state are here.
    pub fn kept_here(&self) -> bool {
        self.kept.is_some()
    }

    /// Its record, when it is kept here (none: not here, or it does not
    /// read back, which the table wrote itself and so does not happen).
    pub fn kept_record(&self) -> Option<Record> {
        self.kept.as_ref().and_then(|k| serde_json::from_slice(&k.record).ok())
    }

    /// Its state, when it is kept here.
    pub fn kept_state(&self) -> Option<Vec<u8>> {
        self.kept.as_ref().map(|k| k.state.to_vec())
    }

    /// `caller` plays in it.
    pub fn plays(&self, caller: &str) -> bool {
        !caller.is_empty() && self.players.iter().any(|p| &**p == caller)
    }

    /// It has been idle past its timeout at `now_ms` (`Record::expired`).
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms > self.expires_at_ms
    }
}

impl Sessions {
    /// The record of dormant game `id`: kept here, or read from the store.
    pub(super) fn dormant_record(&self, id: &str) -> Option<Record> {
        let (here, kept) = lock(&self.dormant).get(id).map(|d| (d.kept_here(), d.kept_record()))?;
        match here {
            true => kept,
            false => match self.store.as_ref()?.record(id) {
                Ok(record) => record,
                Err(e) => {
                    tracing::warn!(session = id, "reading a game out of memory from the store: {e}");
                    None
                }
            },
        }
    }
}

/// The share of live games that leave memory at once when a new game
/// would not fit (at least `MIN_ROOM`): one pass over the table makes room
/// for many starts.
const ROOM_SHARE: usize = 100;
const MIN_ROOM: usize = 16;

impl Sessions {
    /// Unloads the games idle past `limits.unload_idle_after_ms` (the
    /// reaper calls it every second); how many it picked.
    pub(super) fn unload_idle(&self) -> usize {
        let Some(after) = self.limits.unload_after else { return 0 };
        let idle = self.unload_candidates(|s| s.idle_for() > after, usize::MAX);
        let picked = idle.len();
        for (session, seen) in idle {
            self.unload(session, seen);
        }
        picked
    }

    /// Unloads the longest-idle games that `of` picks, a share of the live
    /// ones, so that a new game fits; whether any left.
    pub(super) fn make_room(&self, of: impl Fn(&Session) -> bool) -> bool {
        if self.limits.unload_after.is_none() {
            return false;
        }
        let want = (self.len() / ROOM_SHARE).max(MIN_ROOM);
        let mut unloaded = 0;
        for (session, seen) in self.unload_candidates(of, want) {
            unloaded += usize::from(self.unload(session, seen));
        }
        unloaded > 0
    }

    /// Up to `most` live games that `pick` picks and that may leave memory,
    /// the longest idle first, each with when a call last ran on it. Only a
    /// game nothing else holds (no call on it now, no call held waiting).
    fn unload_candidates(&self, pick: impl Fn(&Session) -> bool, most: usize) -> Vec<(Arc<Session>, Instant)> {
        let mut found: Vec<(Arc<Session>, Instant)> =
            lock(&self.live).by_id.values().filter(|s| Arc::strong_count(s) == 1 && pick(s)).map(|s| (s.clone(), s.last_used())).collect();
        found.retain(|(s, _)| s.may_leave_memory());
        if found.len() > most {
            found.select_nth_unstable_by_key(most, |(_, seen)| *seen);
            found.truncate(most);
        }
        found
    }

    /// Moves one game out of memory, unless a call touched it since `seen`
    /// or holds it now; whether it left. Its state is kept first (written
    /// to the store if it changed, or saved here), then, under the tables'
    /// locks, it becomes dormant and leaves the live table in one step: a
    /// call finds it in one or the other.
    fn unload(&self, session: Arc<Session>, seen: Instant) -> bool {
        let id = session.id();
        // A shared store has every change already, and other servers load
        // it from there: the game only leaves this table.
        let dormant = match &self.store {
            _ if self.shared().is_some() => None,
            Some(_) if session.persist_whole().is_err() => return false,
            Some(_) => Some(self.dormant_of(&session, None)),
            None => match session.saved_state() {
                Some(state) => Some(self.dormant_of(&session, Some(state))),
                None => return false,
            },
        };
        let mut table = lock(&self.dormant);
        let mut live = lock(&self.live);
        if !untouched(&session, seen) || !live.by_id.get(&id).is_some_and(|s| Arc::ptr_eq(s, &session)) {
            return false;
        }
        if let Some(dormant) = dormant {
            table.insert(id.clone(), dormant);
        }
        live.remove(&id);
        true
    }

    /// What the table keeps of `session` once it leaves memory (`state`:
    /// its state, when no store keeps it).
    fn dormant_of(&self, session: &Session, state: Option<Vec<u8>>) -> Dormant {
        // Its idle time runs from its last call, a read too, as it did in
        // memory (with a store, from the write just made: at most the
        // unload delay later).
        let mut record = session.record();
        let last_used = now_ms().saturating_sub(session.idle_for().as_millis() as u64);
        record.changed_at_ms = record.changed_at_ms.max(last_used);
        Dormant::new(&record, state, Some(session.plugin.clone()))
    }
}

/// No call ran on the session since `seen`, and only the live table and
/// the caller hold it.
fn untouched(session: &Arc<Session>, seen: Instant) -> bool {
    Arc::strong_count(session) == 2 && session.last_used() == seen
}

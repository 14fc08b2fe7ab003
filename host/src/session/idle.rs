//! Games that leave memory while idle. A game no call has touched for
//! `limits.unload_idle_after_ms` (or the longest-idle games, when a new one
//! would not fit) leaves the table of live sessions for the dormant ones:
//! its record stays, its state stays in the session store (or here, with
//! `store = "memory"`), its instance goes. The next call on it rebuilds it
//! as a restart does. Why: docs/design/sessions.md, "Idle games leave
//! memory".

use std::sync::Arc;
use std::time::Instant;

use super::dormant::Kept;
use super::{Session, Sessions};
use crate::locking::lock;
use crate::store::{Record, now_ms};

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
        let shared = self.shared().is_some();
        // A store has every change once it is written whole; a shared one
        // had it already, and other servers load it from there. With no
        // store, the game's state is kept here.
        let kept = match &self.store {
            _ if shared => None,
            Some(_) if session.persist_whole().is_err() => return false,
            Some(_) => None,
            None => match session.saved_state() {
                Some(state) => Some(self.kept_of(&session, state)),
                None => return false,
            },
        };
        // The version is held for its rebuilding here (a shared store's
        // games are rebuilt on the version loaded then).
        let version = Some(&session.plugin).filter(|_| !shared);
        let leave = || {
            let mut live = lock(&self.live);
            if !untouched(&session, seen) || !live.by_id.get(&id).is_some_and(|s| Arc::ptr_eq(s, &session)) {
                return false;
            }
            live.remove(&id);
            true
        };
        if !self.dormant.park(kept, version, leave) {
            return false;
        }
        // Another server may play it now without waiting for the lease to lapse.
        session.hand_over();
        true
    }

    /// What the table keeps of `session` once it leaves memory with its
    /// `state` (no store keeps it): its record and the state.
    fn kept_of(&self, session: &Session, state: Vec<u8>) -> (Record, Kept) {
        // Its idle time runs from its last call, a read too, as it did in
        // memory.
        let mut record = session.record();
        let last_used = now_ms().saturating_sub(session.idle_for().as_millis() as u64);
        record.changed_at_ms = record.changed_at_ms.max(last_used);
        // Written here, not under the table's lock.
        let kept = Kept { record: serde_json::to_vec(&record).unwrap_or_default(), state };
        (record, kept)
    }
}

/// No call ran on the session since `seen`, and only the live table and
/// the caller hold it.
fn untouched(session: &Arc<Session>, seen: Instant) -> bool {
    Arc::strong_count(session) == 2 && session.last_used() == seen
}

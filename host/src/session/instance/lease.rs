//! A session on a store other servers share. The server that plays a game
//! holds its lease while it does: calls and events run on its copy without
//! asking the store (reads answer from memory), each change is written
//! through under the lease, and the lease is renewed as calls come. A call
//! on a game another server holds asks that server to hand it over, then
//! brings this copy up to date from the store before it runs. Why:
//! docs/design/several-servers.md.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Session, SessionError, cannot_rebuild};
use crate::locking::lock;
use crate::store::{LEASE, SharedStore, StoreError};

/// What runs on a game (`Session::leased`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Run {
    /// A call that may change it.
    Change,
    /// A call that only reads it (a read-only tool, a resource).
    Read,
    /// An event the game itself raised (a timer, a process's line).
    Event,
}

/// How long a call waits for a game another server holds: its lease
/// lapses within `LEASE` even when that server died holding it.
const WAIT: Duration = Duration::from_secs(LEASE.as_secs() + 1);

impl Session {
    /// The store, when other servers share it.
    fn shared(&self) -> Option<&dyn SharedStore> {
        self.kept.store.as_deref().and_then(|s| s.shared())
    }

    /// Runs `f` (a call or an event, with the write after it) with this
    /// server holding the game's lease when other servers share the store,
    /// after bringing this copy up to date if another server changed the
    /// game since. An event on a copy whose game runs elsewhere now is a
    /// leftover: it is not delivered (`SessionError::Elsewhere`), and the
    /// copy's timers and processes stop. Without a shared store, just runs `f`.
    pub fn leased<R>(self: &Arc<Self>, kind: Run, f: impl FnOnce() -> R) -> Result<R, SessionError> {
        let Some(shared) = self.shared() else { return Ok(f()) };
        let _one_at_a_time = lock(&self.kept.leasing);
        let behind = match self.hold(shared, kind != Run::Event) {
            Ok(behind) => behind,
            Err(StoreError::Busy { .. }) if kind == Run::Event => {
                self.leave_copy();
                return Err(SessionError::Elsewhere);
            }
            Err(e) => return Err(e.into()),
        };
        if behind {
            let caught_up = if kind == Run::Event { Err(SessionError::Elsewhere) } else { self.catch_up(shared, &self.id()) };
            if let Err(why) = caught_up {
                self.give_up_lease();
                self.stop_io();
                return Err(why);
            }
        }
        let out = f();
        // The game as another server left it may have its record due.
        if behind {
            self.settle_recovered();
        }
        Ok(out)
    }

    /// Makes sure this server holds the game's lease: nothing to do while
    /// it holds a fresh one; renewed once a third of it has gone; else
    /// taken, asking the server that holds it to hand it over when `ask`
    /// (an event does not ask: it waits for nobody). Whether the stored
    /// game is ahead of this copy.
    fn hold(&self, shared: &dyn SharedStore, ask: bool) -> Result<bool, StoreError> {
        let held = {
            let written = lock(&self.kept.written);
            match &written.lease {
                Some(lease) if !lease.renewal_due() => return Ok(false),
                Some(lease) => Some((lease.token, lease.is_fresh())),
                None => None,
            }
        };
        let wait = if ask { WAIT } else { Duration::ZERO };
        let lease = match shared.lease(&self.id(), held.map(|(token, _)| token), ask, wait) {
            Ok(lease) => lease,
            // A lease still fresh holds whatever the store said: the call goes on.
            Err(e) if held.is_some_and(|(_, fresh)| fresh) => {
                tracing::warn!(plugin = self.plugin.name, session = self.id(), "renewing a game's lease: {e}");
                return Ok(false);
            }
            Err(e) => {
                lock(&self.kept.written).lease = None;
                return Err(e);
            }
        };
        let behind = lease.version != self.kept.version.load(Ordering::Relaxed);
        lock(&self.kept.written).lease = Some(lease);
        Ok(behind)
    }

    /// Makes sure this server holds the game's lease for one more write in
    /// this call or event (a renamed game's lease is taken anew). Without a
    /// shared store, nothing to take.
    pub(super) fn relet(&self) -> Result<(), SessionError> {
        let Some(shared) = self.shared() else { return Ok(()) };
        self.hold(shared, true)?;
        Ok(())
    }

    /// Gives the game's lease up, if this server holds it: the game goes to
    /// the server waiting for it, or to whichever takes it next.
    pub(super) fn give_up_lease(&self) {
        let held = lock(&self.kept.written).lease.take();
        if let (Some(shared), Some(lease)) = (self.shared(), held) {
            shared.release(&self.id(), &lease);
        }
    }

    /// Another server asked for the game: once the call running on it is
    /// done, its timers and processes stop here and the lease goes to that
    /// server (which rebuilds the game from the store, where every change
    /// already is). A later call here asks for it back.
    pub fn hand_over(&self) {
        if self.shared().is_none() {
            return;
        }
        let _one_at_a_time = lock(&self.kept.leasing);
        self.kept.handing_over.store(false, Ordering::Relaxed);
        if lock(&self.kept.written).lease.is_some() {
            // A copy with nothing running (no timer, no process: a puzzle)
            // is the game as stored, and stays current until another server
            // writes it: a call that brings it back needs no rebuild.
            if self.stop_io() {
                self.set_version(0);
            }
            self.give_up_lease();
            tracing::debug!(plugin = self.plugin.name, session = self.id(), "handed the game to the server that asked for it");
        }
    }

    /// The game runs on another server now: this copy's timers and
    /// processes stop, and it counts as behind the store whatever its
    /// version, so the next call here rebuilds it (`catch_up`, which starts
    /// them again from the stored state) even when nobody wrote the game in
    /// between: else a copy revived while a dead server's lease lapsed
    /// would run on with the timer that just fired gone (a chess engine
    /// that never replies). A hand-over marks it so only when something
    /// was running (`hand_over`).
    fn leave_copy(&self) {
        self.stop_io();
        self.set_version(0);
    }

    /// Whether a hand-over is to be started (none is on its way already).
    pub fn start_hand_over(&self) -> bool {
        !self.kept.handing_over.swap(true, Ordering::Relaxed)
    }

    /// A call on the game waits here (up to `how_long`): where servers
    /// share the store, another server's move must wake it, so the game's
    /// writes are announced for that long.
    pub fn follow_changes(&self, how_long: Duration) {
        let Some(shared) = self.shared() else { return };
        if let Err(e) = shared.follow(&self.id(), how_long) {
            tracing::warn!(
                plugin = self.plugin.name,
                session = self.id(),
                "asking for a game's changes: {e} (a move on another server wakes its waiting calls only at their deadline)"
            );
        }
    }

    /// Another server wrote the game (`version`): this copy is outdated and
    /// holds no lease, whatever it thought.
    pub fn outdated_by(&self, version: u64) -> bool {
        if self.kept.version.load(Ordering::Relaxed) >= version {
            return false;
        }
        lock(&self.kept.written).lease = None;
        true
    }

    /// Replaces this copy with the game as another server stored it: a new
    /// instance restored from the stored state (its timers and processes
    /// start again from there), and the record's players and counts.
    fn catch_up(self: &Arc<Self>, shared: &dyn SharedStore, id: &str) -> Result<(), SessionError> {
        let Some(durable) = self.plugin.durable else { return Err(cannot_rebuild(&self.plugin)) };
        let stored = match shared.load(id)? {
            Some(stored) => stored,
            None => return Err(SessionError::Ended("its stored copy is gone (it ended or expired)".into())),
        };
        self.stop_io();
        lock(&self.ledger).catch_up(&stored.record);
        self.resume_counters(stored.record.counters);
        // The version first: the restore may arm an event that fires at once.
        self.set_version(stored.version);
        self.fresh_instance()?;
        self.log_rebuilt();
        self.restore(durable, &stored.state)?;
        lock(&self.kept.written).digest = None;
        tracing::debug!(plugin = self.plugin.name, session = id, version = stored.version, "caught up with another server's change");
        Ok(())
    }
}

//! A session leaving memory while idle: whether it may (nothing but a call
//! would run on it), when a call last ran on it, and its game's state for a
//! server that keeps it in memory. Why: docs/design/sessions.md, "Idle
//! games leave memory".

use std::time::Instant;

use super::{Session, SessionError};
use crate::capability::CallInfo;
use crate::locking::lock;

impl Session {
    /// Whether the session may leave memory now and be rebuilt later as a
    /// restart rebuilds it: its game hands over its state (`durable`), and
    /// nothing but a call would run on it (no timer armed, no clock
    /// running, no channel open, not a replay, not ended by a crash).
    pub fn may_leave_memory(&self) -> bool {
        self.plugin.durable.is_some()
            && self.held.is_none()
            && lock(&self.timers).pending.is_empty()
            && !self.clock_running()
            && self.channels.list().is_empty()
            && self.is_dead().is_none()
    }

    /// When a call last ran on it (any call: a read too).
    pub fn last_used(&self) -> Instant {
        lock(&self.ledger).last_used
    }

    /// The game's state as `durable.save` gives it: to write to the store,
    /// or, for a server that keeps none, to keep in the table. None: the
    /// game is not durable, or could not say.
    pub fn saved_state(&self) -> Option<Vec<u8>> {
        let durable = self.plugin.durable?;
        let saved = self.run_export(CallInfo::default(), |store, instance| {
            let save = instance.get_typed_func::<(), (Vec<u8>,)>(&mut *store, durable.save)?;
            Ok(save.call(&mut *store, ())?.0)
        });
        saved.ok().map(|(state, _)| state)
    }

    /// Writes the session to its store whole, as it is now: a game
    /// leaving memory is read back from there, counts that change no
    /// stored digest (calls that only read) included. When no call ran on
    /// it since its last write, the store has it whole already.
    pub fn persist_whole(&self) -> Result<(), SessionError> {
        {
            let mut written = lock(&self.kept.written);
            let last_used = self.last_used();
            if written.digest.is_some() && written.at.is_some_and(|at| at >= last_used) {
                return Ok(());
            }
            written.digest = None;
        }
        self.persist()
    }
}

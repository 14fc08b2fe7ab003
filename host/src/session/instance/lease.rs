//! A session on a store other servers share: each call or event runs under
//! the game's lease, on a copy brought up to date first when another server
//! changed the game. Why: docs/design/several-servers.md.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Session, SessionError, cannot_rebuild};
use crate::locking::lock;
use crate::store::{LEASE, SharedStore};

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

impl Session {
    /// The store, when other servers share it.
    fn shared(&self) -> Option<&dyn SharedStore> {
        self.kept.store.as_deref().and_then(|s| s.shared())
    }

    /// Runs `f` (a call or an event, with the write after it) under the
    /// game's lease when other servers share the store, after bringing
    /// this copy up to date if another server changed the game since. An
    /// event finds an outdated copy a leftover instead (the game runs on
    /// another server now): it is not delivered (`SessionError::Elsewhere`),
    /// and the copy's timers and processes stop. A read on an up-to-date copy takes no lease (it
    /// changes nothing; one round trip instead of two). Without a shared
    /// store, just runs `f`.
    pub fn leased<R>(self: &Arc<Self>, kind: Run, f: impl FnOnce() -> R) -> Result<R, SessionError> {
        let Some(shared) = self.shared() else { return Ok(f()) };
        let _one_at_a_time = lock(&self.kept.leasing);
        let id = self.id();
        let known = self.kept.version.load(Ordering::Relaxed);
        if kind == Run::Read && shared.version(&id)? == known {
            return Ok(f());
        }
        let lease = shared.lease(&id, LEASE + Duration::from_secs(1))?;
        let behind = lease.version != known;
        if behind {
            let caught_up = if kind == Run::Event { Err(SessionError::Elsewhere) } else { self.catch_up(shared, &id) };
            if let Err(why) = caught_up {
                shared.release(&id, &lease);
                self.stop_io();
                return Err(why);
            }
        }
        lock(&self.kept.written).lease = Some(lease);
        let out = f();
        // A copy that caught up is where the game runs now: a write (even
        // of what it read) tells the server it came from to let go of its own.
        let unwritten = || {
            let written = lock(&self.kept.written);
            written.digest.is_none() && written.lease.is_some()
        };
        if behind && unwritten() {
            let _ = self.persist();
        }
        // A write gives the lease back itself.
        let left = lock(&self.kept.written).lease.take();
        if let Some(lease) = left {
            shared.release(&id, &lease);
        }
        // The game as another server left it may have its record due.
        if behind {
            self.settle_recovered();
        }
        Ok(out)
    }

    /// Takes the game's lease again for one more write in this call or
    /// event (its own write gave the lease back). Without a shared store,
    /// nothing to take.
    pub(super) fn relet(&self) -> Result<(), SessionError> {
        let Some(shared) = self.shared() else { return Ok(()) };
        let mut written = lock(&self.kept.written);
        if written.lease.is_none() {
            written.lease = Some(shared.lease(&self.id(), LEASE + Duration::from_secs(1))?);
        }
        Ok(())
    }

    /// Gives back a lease a failed write left held.
    pub(super) fn let_lease_go(&self) {
        let held = lock(&self.kept.written).lease.take();
        if let (Some(shared), Some(lease)) = (self.shared(), held) {
            shared.release(&self.id(), &lease);
        }
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
        lock(&self.ledger).catch_up(&self.plugin, &stored.record);
        // The version first: the restore may arm an event that fires at once.
        self.set_version(stored.version);
        self.fresh_instance()?;
        self.restore(durable, &stored.state)?;
        lock(&self.kept.written).digest = None;
        tracing::debug!(plugin = self.plugin.name, session = id, version = stored.version, "caught up with another server's change");
        Ok(())
    }
}

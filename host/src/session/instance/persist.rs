//! Persistence: a session written to its store after each change (the
//! game's state and the host's [`Record`]), removed when it ends, and its
//! games' result records written once each.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use super::{Session, SessionError};
use crate::locking::lock;
use crate::records::{RecordsFile, Standing};
use crate::store::{Counters, Lease, Record, SessionStore, now_ms};

/// Where a session is kept, and what this copy is relative to it.
pub(super) struct Kept {
    /// Where it is kept across restarts (none when the server keeps games
    /// in memory only, or the plugin cannot hand over its state).
    pub store: Option<Arc<dyn SessionStore>>,
    /// Where its games' result records go (none: the operator keeps none).
    pub records: Option<Arc<RecordsFile>>,
    /// One call, event or hand-over of this process at a time on a game in
    /// a shared store: events do not take the call turn, and a hand-over
    /// waits for the call running on the game to have written.
    pub leasing: Mutex<()>,
    /// Another server asked for the game and its hand-over is on its way.
    pub handing_over: AtomicBool,
    pub written: Mutex<Written>,
    /// In a store other servers share, the stored version this copy is (0:
    /// never written). Not under `written`: the store's notices read it
    /// without waiting for a write in flight.
    pub version: AtomicU64,
}

/// What was last written, and the lease a call or event holds.
#[derive(Default)]
pub(super) struct Written {
    /// A digest of what was last written (a call that changed nothing
    /// writes nothing); none: write at the next chance.
    pub digest: Option<u64>,
    /// The game's lease while this server plays it (a shared store's).
    pub lease: Option<Lease>,
    /// When the last write went in.
    pub at: Option<Instant>,
}

impl Kept {
    pub fn new(store: Option<Arc<dyn SessionStore>>, records: Option<Arc<RecordsFile>>) -> Kept {
        Kept {
            store,
            records,
            leasing: Mutex::new(()),
            handing_over: AtomicBool::new(false),
            written: Mutex::new(Written::default()),
            version: AtomicU64::new(0),
        }
    }
}

impl Session {
    /// What the host keeps of the session besides the game's state.
    pub fn record(&self) -> Record {
        // Timers are taken alone, before the ledger.
        let counters = self.counters();
        let ledger = lock(&self.ledger);
        let (last_calls, earlier_calls) = ledger.stored_calls();
        Record {
            id: ledger.id.clone(),
            plugin: self.plugin.name.clone(),
            plugin_version: self.plugin.version.clone(),
            plugin_sha256: self.plugin.sha256.clone(),
            seed: self.seeding.seed,
            seed_chosen: self.seeding.chosen,
            secret: self.seeding.secret,
            replay: self.seeding.replay,
            created_by: self.created_by.clone(),
            created_at_ms: self.created_at.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
            players: ledger.players.clone(),
            seats: ledger.seats.clone(),
            join_code: self.join_code.clone(),
            over: ledger.over,
            renamed: ledger.renamed,
            calls: ledger.calls,
            changed_at_ms: ledger.changed_at_ms,
            idle_timeout_ms: self.plugin.limits.idle_timeout.as_millis() as u64,
            last_calls,
            earlier_calls,
            standing: ledger.standing.clone(),
            in_match: self.in_match.clone(),
            counters,
        }
    }

    /// The last timer and channel ids handed out.
    fn counters(&self) -> Counters {
        Counters { timers: lock(&self.timers).last, channels: self.channels.last_id() }
    }

    /// A rebuilt game goes on numbering its timers and channels where the
    /// stored one stopped: its log reads as if it had never left.
    pub(super) fn resume_counters(&self, counters: Counters) {
        let mut timers = lock(&self.timers);
        timers.last = timers.last.max(counters.timers);
        drop(timers);
        self.channels.resume_after(counters.channels);
    }

    /// Whether a restart finds this session again (it is written to a store).
    pub fn is_kept(&self) -> bool {
        self.kept.store.is_some()
    }

    /// Writes the session to its store, if it has one and something changed
    /// since the last write: the game's state (`durable.save`) and the
    /// host's record. Blocking (a guest call and a write): run it where the
    /// call that changed the session ran, before that call is answered.
    /// Fails only when a shared store refused the write (another server
    /// took the game over meanwhile): the call must not be reported made.
    pub fn persist(&self) -> Result<(), SessionError> {
        let Some(store) = &self.kept.store else { return Ok(()) };
        let Some(state) = self.saved_state() else { return Ok(()) };
        // Most events change nothing stored: that is known before the
        // record (with its stored answers as JSON) is built.
        let digest = lock(&self.ledger).digest(&state);
        let mut written = lock(&self.kept.written);
        if written.digest == Some(digest) {
            return Ok(());
        }
        lock(&self.ledger).changed_at_ms = now_ms();
        let record = self.record();
        match store.put(&record, &state, written.lease.as_ref()) {
            Ok(version) => {
                written.digest = Some(digest);
                written.at = Some(Instant::now());
                self.set_version(version);
                // The next write under the lease follows this one.
                if let Some(lease) = written.lease.as_mut() {
                    lease.version = version;
                }
                Ok(())
            }
            Err(e) if store.shared().is_some() => {
                // This copy went where the stored game did not: it is not
                // the game any more, and the lease is another server's.
                written.digest = None;
                written.lease = None;
                self.set_version(u64::MAX);
                Err(SessionError::NotMade(e))
            }
            Err(e) => {
                tracing::error!(plugin = self.plugin.name, session = record.id, "the session could not be stored: {e}");
                Ok(())
            }
        }
    }

    /// Removes the session's stored copy (it ended).
    pub fn forget(&self) {
        self.forget_as(&self.id());
    }

    pub(super) fn forget_as(&self, id: &str) {
        if let Some(store) = &self.kept.store
            && let Err(e) = store.remove(id)
        {
            tracing::error!(plugin = self.plugin.name, session = id, "the session's stored copy could not be removed: {e}");
        }
    }

    /// Writes the current game's record once the game said it ended: after
    /// the write that stored the verdict (a restart then finds the record
    /// due, not lost), and before the one that stores it was written.
    pub fn settle(&self) {
        self.settle_as(false, super::super::results::GAME_ENDED);
    }

    /// The same, the record saying how the game ended (`why`).
    pub(super) fn settle_because(&self, why: &str) {
        self.settle_as(false, why);
    }

    /// The same for a game read back from the store with its record due
    /// (the server that ended it stopped before marking it written): unless
    /// the records file already holds it.
    pub fn settle_recovered(&self) {
        self.settle_as(true, super::super::results::GAME_ENDED);
    }

    fn settle_as(&self, recovered: bool, why: &str) {
        if let Some(held) = &self.held {
            if self.claim_record(Standing::due) {
                held.reached(self.record_now(why));
            }
            return;
        }
        let Some(records) = &self.kept.records else { return };
        // A call and an event (the simulator's last line) may settle at once.
        if !self.claim_record(Standing::due) {
            return;
        }
        let line = self.record_now(why);
        if recovered {
            records.append_once(&line)
        } else {
            records.append(&line)
        }
        if let Err(e) = self.relet().and_then(|()| self.persist()) {
            tracing::warn!(plugin = self.plugin.name, session = line.record, "the record was written but not marked so in the store: {e}");
        }
    }

    /// The session ends (`why`): the record of a game that has not ended,
    /// as `abandoned`, or of one whose record is still to be written.
    /// Nothing is stored after this, so a plain append.
    pub fn record_end(&self, why: &str) {
        let Some(records) = &self.kept.records else { return };
        if self.claim_record(Standing::unrecorded) {
            records.append(&self.record_now(why));
        }
    }

    /// The result record of the current game as it stands now, ended as
    /// `why` says (a game still under way is `abandoned`).
    pub fn record_now(&self, why: &str) -> crate::records::ResultRecord {
        super::super::results::result_record(&self.record(), why, now_ms())
    }

    /// Marks the current game's record written if `ready` says it is to be
    /// written now: true for exactly one caller, which then writes it.
    fn claim_record(&self, ready: fn(&Standing) -> bool) -> bool {
        let standing = &mut lock(&self.ledger).standing;
        let claimed = ready(standing);
        if claimed {
            standing.recorded = true;
        }
        claimed
    }

    /// Sets the stored version this copy is (a shared store's).
    pub fn set_version(&self, version: u64) {
        self.kept.version.store(version, Ordering::Relaxed);
    }
}

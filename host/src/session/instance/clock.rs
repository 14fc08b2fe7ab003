//! The clock (`clock` in the config, or per match of a run): a seated agent
//! whose decision stays due longer than its time per move loses the game.
//! Whose decision is due the game says (`moves.legal`, asked as each
//! agent); the host arms one timer per due player, and when it fires with
//! that same decision still due, the loss is entered in the game's log
//! (`out_of_time`), so that a replay deals it at the same place.

use std::sync::Arc;
use std::time::Duration;

use super::{Run, Session, SessionError};
use crate::locking::lock;
use crate::records::{Action, Clock, Holder};
use crate::runtime::run_guest;

impl Session {
    /// After a call of `mover` (none: an event) changed the game: starts the
    /// clock of each agent whose decision is due and whose clock is not
    /// running yet (the mover's starts again), and stops the clock of one
    /// with nothing to decide. Nothing runs while a seat is open.
    pub fn run_clock(self: &Arc<Self>, mover: Option<&str>) {
        let (clock, agents) = {
            let ledger = lock(&self.ledger);
            let off = !ledger.standing.clock.runs() || self.held.is_some() || ledger.over || ledger.standing.is_final();
            if off || ledger.has_open_seat() {
                return;
            }
            let mut agents: Vec<String> =
                ledger.seats.iter().filter(|s| s.kind == Holder::Agent).filter_map(|s| s.player.clone()).collect();
            agents.dedup();
            (ledger.standing.clock, agents)
        };
        if let Some(mover) = mover {
            lock(&self.clock_due).remove(mover);
        }
        for player in agents {
            let due = self.legal_moves(&player).is_ok_and(|moves| !moves.is_empty());
            let mut dues = lock(&self.clock_due);
            if !due {
                dues.remove(&player);
                continue;
            }
            if dues.contains_key(&player) {
                continue;
            }
            let epoch = self.clock_epoch.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            dues.insert(player.clone(), epoch);
            drop(dues);
            self.arm_clock(player, epoch, clock);
        }
    }

    fn arm_clock(self: &Arc<Self>, player: String, epoch: u64, clock: Clock) {
        let (weak, rt) = (Arc::downgrade(self), self.rt.clone());
        // On the runtime's clock, as the game's timers are; a clock stopped
        // or started again in between has another epoch, and does nothing.
        self.plugin.runtime.timers.arm(Duration::from_millis(clock.move_ms), move || {
            rt.spawn(async move {
                if let Some(s) = weak.upgrade() {
                    s.time_ran_out(player, epoch).await;
                }
            });
        });
    }

    async fn time_ran_out(self: Arc<Self>, player: String, epoch: u64) {
        let s = self.clone();
        let run = move || {
            s.leased(Run::Event, || {
                let still_due = lock(&s.clock_due).get(&player) == Some(&epoch);
                if !still_due || s.has_ended() {
                    return Ok(());
                }
                lock(&s.clock_due).clear();
                s.lose_on_time(&player);
                s.persist()?;
                let clock = lock(&s.ledger).standing.clock;
                s.settle_because(&format!("{player} ran out of time ({})", clock.in_words()));
                s.bump();
                Ok::<(), SessionError>(())
            })
        };
        if let Ok(Ok(Err(e)) | Err(e)) = run_guest(&self.plugin.event_pace, run).await.map_err(SessionError::Run) {
            tracing::warn!(plugin = self.plugin.name, "the clock could not end the game: {e}");
        }
    }

    /// `player`'s time ran out: it loses, and the log says so.
    fn lose_on_time(&self, player: &str) {
        if self.keeps_log() {
            self.log(Action::OutOfTime { out_of_time: player.to_string() }, false);
        }
        let mut ledger = lock(&self.ledger);
        ledger.lose_by_policy(player, &self.created_by);
        ledger.standing.out_of_time = Some(player.to_string());
    }

    /// Whether a player's clock is running (the game then stays in memory).
    pub fn clock_running(&self) -> bool {
        !lock(&self.clock_due).is_empty()
    }

    /// The session expires while a player's clock runs: under a clock that
    /// makes it lose, that player loses (rather than the game being
    /// recorded abandoned). Blocking: it writes the game.
    pub fn charge_expiry(&self) {
        let due = lock(&self.clock_due).keys().min().cloned();
        let Some(player) = due.filter(|_| lock(&self.ledger).standing.clock.runs() && !self.has_ended()) else { return };
        lock(&self.clock_due).clear();
        self.lose_on_time(&player);
        if let Err(e) = self.persist() {
            tracing::warn!(plugin = self.plugin.name, "the loss on time of an expired game was not stored: {e}");
        }
        self.settle_because(&format!("the session expired while {player}'s move was due: {player} lost on time"));
    }

    /// Plays the game under `clock` (a run's match's), not the server's.
    pub fn set_clock(&self, clock: Clock) {
        lock(&self.ledger).standing.clock = clock;
    }

    /// Why the host ended the game, if it did: a player lost under the
    /// illegal-move policy, or on time. One read of the ledger, on every call.
    pub fn lost_to_the_host(&self) -> Option<String> {
        let ledger = lock(&self.ledger);
        let standing = &ledger.standing;
        if let Some(who) = &standing.forfeit {
            return Some(format!("{who} lost the game under its illegal-move policy ({})", standing.policy.in_words()));
        }
        let who = standing.out_of_time.as_ref()?;
        Some(format!("{who} lost the game on time (the clock: {})", standing.clock.in_words()))
    }

    /// Deals the loss on time where the replayed log has it.
    pub fn replay_out_of_time(&self, player: &str) -> Result<(), String> {
        self.lose_on_time(player);
        self.settle();
        Ok(())
    }
}

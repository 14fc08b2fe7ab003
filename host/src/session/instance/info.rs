//! A session as its players see it in `ludus_sessions`.

use serde::Serialize;

use super::Session;
use crate::capability::channels::ChannelInfo;
use crate::locking::lock;
use crate::records::{Holder, Seat};
use crate::store::{Record, now_ms};

impl Session {
    /// The session as its players see it in `ludus_sessions`: the seed only
    /// once the game is over (it would let a player foresee a running game).
    pub fn info(&self) -> SessionInfo {
        let ended = self.is_dead();
        let over = self.has_ended();
        let public = over || ended.is_some();
        let ledger = lock(&self.ledger);
        let (id, players, seats, calls) = (ledger.id.clone(), ledger.players.len(), ledger.seats.clone(), ledger.calls);
        drop(ledger);
        SessionInfo {
            id,
            plugin: self.plugin.name.clone(),
            plugin_version: self.plugin.version.clone(),
            seed: public.then_some(self.seeding.seed),
            secret: self.seeding.secret.filter(|_| public),
            replay: self.seeding.replay,
            created_by: self.created_by.clone(),
            players,
            seats,
            join_code: self.join_code.clone().filter(|_| self.has_open_seat()),
            game_over: over,
            idle_seconds: self.idle_for().as_secs(),
            calls,
            waiting_calls: self.waits.held.load(std::sync::atomic::Ordering::Relaxed),
            channels: self.channels.list(),
            ended,
        }
    }
}

#[derive(Serialize, Debug, schemars::JsonSchema)]
pub struct SessionInfo {
    pub id: String,
    pub plugin: String,
    pub plugin_version: String,
    /// Shown once the game is over or ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The secret mixed into the seed for what is hidden, shown once the
    /// game is over or ended: with the seed, the starting tool's `secret`
    /// replays the game.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<u64>,
    /// The game replays a finished one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    pub created_by: String,
    /// Callers that may play: the creator and those who joined.
    pub players: usize,
    /// For games with seats: each seat and who holds it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub seats: Vec<Seat>,
    /// For games with a seat still open: what to hand the agent who should take it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_code: Option<String>,
    /// The game is over (it said so, or a puzzle was solved or failed); a
    /// game's processes are gone, its state readable.
    pub game_over: bool,
    pub idle_seconds: u64,
    pub calls: u64,
    pub waiting_calls: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl SessionInfo {
    /// A stored session not running yet, from its record.
    pub fn of_stored(r: &Record) -> SessionInfo {
        SessionInfo {
            id: r.id.clone(),
            plugin: r.plugin.clone(),
            plugin_version: r.plugin_version.clone(),
            seed: r.over.then_some(r.seed),
            secret: r.secret.filter(|_| r.over),
            replay: r.replay,
            created_by: r.created_by.clone(),
            players: r.players.len(),
            seats: r.seats.clone(),
            join_code: r
                .join_code
                .clone()
                .filter(|_| !r.over && !r.replay && (r.seats.is_empty() || r.seats.iter().any(|s| s.kind == Holder::Open))),
            game_over: r.over || r.standing.is_final(),
            idle_seconds: now_ms().saturating_sub(r.changed_at_ms) / 1000,
            calls: r.calls,
            waiting_calls: 0,
            channels: Vec::new(),
            ended: None,
        }
    }
}

//! `openspiel`: OpenSpiel's games on the real `open_spiel` engine. The
//! plugin owns the game (seats, the action history, decisions, results);
//! a Python process per game (`bridge/openspiel_bridge.py`, reached through
//! a host channel) holds the engine's state, plays chance and the built-in
//! opponents, and answers with a snapshot of every seat's view. `catalogue`
//! (the games, embedded), `seats` (who plays each seat) and `snapshot` (the
//! bridge's answers) are plain Rust; `component` is the plugin.

pub mod catalogue;
pub mod seats;
pub mod snapshot;

#[cfg(feature = "component")]
mod component;

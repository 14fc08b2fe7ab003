//! `cards`: card games through the decision tools of XMage's headless client.
//! The plugin is an MCP client of a backend process reached through a host
//! channel: the phase bridge (`bridge/phase_bridge.py`, Magic on the phase
//! rules engine, one process per game) or XMage's headless client (one process
//! per seat, the operator's). `rpc` (JSON-RPC framing), `decision` (checks
//! on an agent's answer) and `card_book` (cards by name without a game) are
//! plain Rust; `component` is the plugin.

pub mod card_book;
pub mod decision;
pub mod rpc;

#[cfg(feature = "component")]
mod component;

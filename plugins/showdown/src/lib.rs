//! `showdown`: Pokémon Showdown battles as a Ludus game — on a Showdown
//! server (ladder or challenge) or offline against built-in bots through a
//! `pokemon-showdown simulate-battle` sidecar. `protocol`, `request`,
//! `battle`, `bot`, `engine` (move scoring with poke-engine), `login`, `rng`
//! and `data` are plain Rust (tested natively); `component` is the plugin.

pub mod battle;
pub mod bot;
pub mod data;
pub mod engine;
pub mod formats;
pub mod login;
pub mod protocol;
pub mod request;
pub mod rng;

#[cfg(feature = "component")]
mod component;

//! `chess`: chess against the built-in engine or another agent, as a Ludus
//! game. `rules` and `engine` are plain Rust (also used natively by the
//! calibration program and the benchmarks); `component` is the plugin.

pub mod engine;
pub mod eval;
pub mod rules;

#[cfg(feature = "component")]
mod component;
#[cfg(feature = "component")]
mod picture;

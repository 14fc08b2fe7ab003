//! Ludus: one MCP server through which AI agents play games shipped as
//! sandboxed WebAssembly components.
//!
//! The host is built in layers. A module imports only from its own layer or
//! the layers below it, never upwards, so no file imports a file that imports
//! it back (`tests/layers.rs` checks this on every test run). From the top,
//! in the order a tool call travels them:
//!
//! - `server`: `ludus serve`, the stdio and Streamable HTTP transports, the
//!   built-in games and hot reload of the plugins directory (`watch`).
//! - `mcp`: the protocol surface, a thin rmcp handler and the only layer
//!   below the transports that knows MCP: tools as MCP lists them, look the
//!   tool up, run it, write the answer as text plus structured content.
//! - `arena`: a run's matches (`run = "FILE"`): which game each player
//!   plays next, started when first asked for.
//! - `registry`: the loaded plugin versions; which one serves a tool.
//! - `session`: which instance a call runs in (`instance`), calls on blocking
//!   threads, waits (`wait`), timers, traps, the table of live sessions.
//! - `plugin`: loading one component: compile, link, `describe()`, and every
//!   tool's protocol-neutral definition: name, schemas and hints (`schema`:
//!   component values ⇄ JSON and JSON Schema; `docs`: the embedded WIT doc
//!   comments).
//! - `capability`: what a plugin may import, one module per interface
//!   (`wasi`, `host`, `channels`), each seeing the session only through a
//!   narrow trait the session implements; the store's state and the linker.
//! - `runtime`: wasmtime: the engine, the epoch ticker behind CPU limits,
//!   the cache of compiled components, the memory cap, the contract's bindings.
//! - `store`: where sessions of durable games are kept across restarts (an
//!   SQLite file by default), read and written by `session`.
//! - `records`, `report`, `seal`: the result records file, one JSON line per
//!   ended game (`session` writes it), each signed and chained to the line
//!   before it, and `ludus report`, which summarises it.
//! - `config`, `locking`, `turns`: the operator's configuration as plain
//!   data; the lock rule; turns at the CPU for the threads that serve
//!   requests, in the order the requests came.
//!
//! The answer goes back the same way: the component's value is converted by
//! `plugin::schema` and rendered by `mcp` for the client.

// Errors here are HTTP responses or a message handed back to its sender, made
// once per request and returned straight up: boxing them would cost an
// allocation on the refusal path and buy nothing.
#![allow(clippy::result_large_err)]

pub mod arena;
pub mod capability;
pub mod config;
pub mod locking;
pub mod mcp;
pub mod plugin;
pub mod records;
pub mod registry;
pub mod report;
pub mod runtime;
pub mod seal;
pub mod server;
pub mod session;
pub mod store;
pub mod turns;

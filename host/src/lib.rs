//! Ludus: one MCP server through which AI agents play games shipped as
//! sandboxed WebAssembly components.
//!
//! A tool call travels `mcp` (protocol surface) → `registry` (which plugin
//! version serves the tool) → `session` (which instance, waits, timers) →
//! the component (through `runtime` and the host imports in `capability`) →
//! back through `schema` (values ⇄ JSON) to the client. `watch` keeps the
//! registry in step with the plugins directory.

pub mod bundled;
pub mod capability;
pub mod config;
pub mod docs;
pub mod inspect;
pub mod mcp;
pub mod plugin;
pub mod registry;
pub mod runtime;
pub mod schema;
pub mod server;
pub mod session;
pub mod sync;
pub mod watch;

//! What a plugin may reach, one module per host interface it imports (as
//! wasmtime's `crates/wasi` and Spin's factors are cut): `wasi` (WASI p2 with
//! nothing to reach), `host` (`ludus:plugin/host`: log, identity, seed,
//! timers, waits; and `ludus:plugin/lifecycle`, the game's end) and `channels` (`ludus:plugin/channels`: processes, TCP,
//! WebSocket, HTTP). Each keeps its own context in the store and sees the
//! session only through a narrow trait of its own (`SessionControl`,
//! `Inbox`), which the session implements.
//!
//! This module puts them together: a store's state is the sum of their
//! contexts, and the linker holds exactly these grants, so anything else a
//! component imports fails to link, naming the import.

pub mod channels;
pub mod client;
pub mod content;
pub mod host;
pub mod link;
pub mod wasi;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::config::PluginLimits;
use crate::runtime::bindings::ludus::plugin as contract;
use crate::runtime::{self, MemoryLimiter};

pub use channels::ChannelsCtx;
pub use host::{CallInfo, GameSeeds, HostCtx, LogSink};
pub use link::{Ask, ClientLink};
pub use wasi::GuestOutput;

/// What every store carries: each capability's context and the memory cap.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub host: HostCtx,
    pub channels: ChannelsCtx,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The linker with every grant: WASI p2 as a Rust std guest needs it plus the
/// Ludus host and channels interfaces (what a channel reaches is the
/// operator's config).
pub fn linker(engine: &Engine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::<HostState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    contract::host::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::types::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::channels::add_to_linker::<_, Channels>(&mut linker, |s| &mut s.channels)?;
    contract::lifecycle::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::outcome::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::decisions::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::seeds::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::seats::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::content::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::client::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    contract::watchers::add_to_linker::<_, Host>(&mut linker, |s| &mut s.host)?;
    Ok(linker)
}

/// Each interface is implemented on its own context, not on the whole state.
struct Host;
impl HasData for Host {
    type Data<'a> = &'a mut HostCtx;
}

struct Channels;
impl HasData for Channels {
    type Data<'a> = &'a mut ChannelsCtx;
}

/// Guest stdout and stderr, captured.
#[derive(Clone)]
pub struct Output {
    pub stdout: GuestOutput,
    pub stderr: GuestOutput,
}

/// A fresh store for one instance, with the plugin's memory cap and CPU
/// budget, randomness seeded from the whole seed (`host.seed`), and the environment the
/// operator granted.
pub fn new_store(engine: &Engine, limits: &PluginLimits, host: HostCtx, channels: ChannelsCtx, output: Output) -> Store<HostState> {
    let state = HostState {
        wasi: wasi::context(host.seeds.whole, &limits.env, output.stdout, output.stderr),
        table: ResourceTable::new(),
        limiter: MemoryLimiter { max_bytes: limits.memory_bytes, hit: false },
        host,
        channels,
    };
    runtime::new_store(engine, state, |s| &mut s.limiter, |s| std::mem::take(&mut s.host.waited), limits.call_timeout)
}

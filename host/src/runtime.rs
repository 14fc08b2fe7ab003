//! The wasmtime side: one engine for every plugin, the epoch ticker that makes
//! CPU limits real, the linker that decides what a plugin may import, the
//! on-disk cache of compiled components, and new stores with their limits.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rand::SeedableRng;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::capability::{Ctx, GuestOutput};
use crate::config::PluginLimits;

/// Host-side bindings of the plugin contract (`wit/plugin`): every import
/// a plugin may have. Exports beyond `meta` are optional and looked up by
/// name (`plugin.rs`).
pub mod bindings {
    wasmtime::component::bindgen!({
        inline: "
            package ludus:host;
            world linked {
                include ludus:plugin/game@0.1.1;
                import ludus:plugin/channels@0.1.1;
            }
        ",
        path: "../wit/plugin",
    });
}

/// The epoch advances this often; CPU limits are counted in these ticks.
pub const TICK: Duration = Duration::from_millis(10);

/// What every store carries: WASI state, limits, and the Ludus call context.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub cx: Ctx,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Caps linear memory and remembers that the cap was hit, so a trap that
/// follows can be reported as "out of memory" rather than as a crash.
pub struct MemoryLimiter {
    pub max_bytes: usize,
    pub hit: bool,
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

pub struct Runtime {
    pub engine: Engine,
    pub linker: Linker<HostState>,
    cache_dir: Option<PathBuf>,
}

impl Runtime {
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Arc<Runtime>> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        config.max_wasm_stack(2 << 20);
        let engine = Engine::new(&config)?;
        start_epoch_ticker(&engine);

        // The grants: WASI p2 as a Rust std guest needs it (no preopened
        // directories, every socket address denied, no inherited stdio or
        // environment) plus the Ludus host and channels interfaces (what a
        // channel reaches is the operator's config). Anything else a
        // component imports fails to link, naming the import.
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        bindings::ludus::plugin::host::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s)?;
        bindings::ludus::plugin::types::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s)?;
        bindings::ludus::plugin::channels::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s)?;
        Ok(Arc::new(Runtime { engine, linker, cache_dir }))
    }

    /// Compiles a component, or loads it from the cache of precompiled
    /// artifacts keyed by content hash, engine settings and wasmtime version.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component> {
        let Some(dir) = &self.cache_dir else {
            return Ok(Component::new(&self.engine, bytes)?);
        };
        let path = dir.join(format!("{}.cwasm", self.cache_key(bytes)));
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of this
            // engine configuration (the key covers it) into the operator's
            // own cache directory; a damaged file fails to deserialize and is
            // rebuilt below.
            match unsafe { Component::deserialize_file(&self.engine, &path) } {
                Ok(c) => return Ok(c),
                Err(e) => tracing::warn!(path = %path.display(), "ignoring unusable cached component: {e:#}"),
            }
        }
        let component = Component::new(&self.engine, bytes)?;
        if let Err(e) = write_cache(dir, &path, &component) {
            tracing::warn!(dir = %dir.display(), "cannot cache compiled component: {e:#}");
        }
        Ok(component)
    }

    fn cache_key(&self, bytes: &[u8]) -> String {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        let mut sha = Sha256::new();
        sha.update(bytes);
        sha.update(h.finish().to_le_bytes());
        sha.update(env!("CARGO_PKG_VERSION"));
        hex(&sha.finalize()[..16])
    }

    /// A fresh store for one instance: its own WASI context (seeded random,
    /// captured stdout/stderr, the environment the operator granted), memory
    /// cap, and epoch deadline behaviour.
    pub fn new_store(&self, limits: &PluginLimits, cx: Ctx, stdout: GuestOutput, stderr: GuestOutput) -> Store<HostState> {
        let seed = cx.seed;
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout)
            .stderr(stderr)
            .envs(&limits.env)
            .secure_random(rand::rngs::StdRng::seed_from_u64(seed))
            .insecure_random(rand::rngs::StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15))
            .insecure_random_seed(u128::from(seed))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter { max_bytes: limits.memory_bytes, hit: false },
            cx,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        store.set_epoch_deadline(ticks(limits.call_timeout));
        store
    }
}

/// Epoch ticks for a time budget (at least one).
pub fn ticks(budget: Duration) -> u64 {
    (budget.as_millis() / TICK.as_millis()).max(1) as u64
}

fn write_cache(dir: &std::path::Path, path: &std::path::Path, component: &Component) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, component.serialize()?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Epoch interruption does nothing unless something advances the epoch. The
/// thread ends when the engine is dropped.
fn start_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("ludus-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(TICK);
            }
        })
        .expect("spawning the epoch ticker thread");
}

/// Default cache location: `$XDG_CACHE_HOME/ludus` or `~/.cache/ludus`.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("ludus").join("components"))
}

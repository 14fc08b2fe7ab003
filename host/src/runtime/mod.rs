//! The wasmtime side: the engines (one for plugins with little data, one for
//! plugins with a lot, `Runtime::compile`), the on-disk cache of compiled
//! components, and stores with their memory cap and CPU budget. Beside it:
//! the clock thread that makes CPU limits real and fires timers (`clock`),
//! where a guest call runs (`speed`), memory outside the guests (`memory`),
//! content hashes (`digest`), the game-process budget (`processes`) and what
//! confines those processes (`sandbox`). It
//! knows nothing of what a plugin may import (`capability`) or of sessions;
//! a store's state is whatever its caller hands it.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Store};

pub mod bindings;
pub mod clock;
mod digest;
mod engine;
mod memory;
pub mod processes;
pub mod sandbox;
mod speed;

pub use digest::{hex, same_secret, sha256_hex};
pub use engine::{MAPPED_DATA_BYTES, data_bytes};
pub use memory::{
    MemoryLimiter, instances_the_kernel_allows, limit_allocator_arenas, maps_for_instances, maps_per_instance, note_thread_end,
    release_freed_memory_after_sweep,
};
pub use speed::{RunError, ToolSpeed, is_client_reader, run_guest, run_guest_that_may_ask};

/// The epoch advances this often; CPU limits are counted in these ticks.
pub const TICK: Duration = Duration::from_millis(10);

/// Whether an instantiation failed for a reason the kernel may not give
/// again. A module's first instance writes its memory image into a memfd and
/// seals it (`memory_init_cow`); Linux refuses the write seal with EBUSY while
/// any of its pages is briefly held elsewhere (migration, compaction, a page
/// batch on another CPU), which a loaded machine shows now and then. Another
/// try makes a fresh memfd: wasmtime keeps a module's image only once made.
pub fn is_transient(e: &wasmtime::Error) -> bool {
    #[cfg(target_os = "linux")]
    if let Some(memfd::Error::AddSeals(_)) = e.downcast_ref::<memfd::Error>() {
        return true;
    }
    let _ = e;
    false
}

/// A wasmtime error as text with every cause, as `{e:#}` writes an anyhow
/// error. wasmtime's own alternate format leaves out the causes of an
/// error it wraps (a refused memfd seal names no errno by itself).
pub fn error_text(e: &wasmtime::Error) -> String {
    e.chain().map(ToString::to_string).collect::<Vec<_>>().join(": ")
}

pub struct Runtime {
    /// For components with little data: an instance's memory starts as a
    /// copy of the data segments.
    copied: Engine,
    /// For components with `MAPPED_DATA_BYTES` of data or more: an instance
    /// maps them copy-on-write.
    mapped: Engine,
    /// Plugins' timers, fired by the thread that advances the epoch.
    pub timers: Arc<clock::Timers>,
    /// The game processes plugins' sessions may run.
    pub processes: Arc<processes::ProcessBudget>,
    /// What confines those processes.
    pub sandbox: Arc<sandbox::Sandbox>,
    /// What games say changed (`watchers.changed`): (plugin, resource URI),
    /// heard by the protocol layer's resource subscriptions.
    pub resource_changes: tokio::sync::broadcast::Sender<(String, String)>,
    cache_dir: Option<PathBuf>,
}

impl Runtime {
    pub fn new(cache_dir: Option<PathBuf>, engines: &crate::config::Engines) -> Result<Arc<Runtime>> {
        let (copied, mapped) = (Engine::new(&config(false))?, Engine::new(&config(true))?);
        let timers = Arc::new(clock::Timers::default());
        clock::start(&[&copied, &mapped], timers.clone());
        let defaults = crate::config::Limits::default();
        let processes =
            processes::ProcessBudget::new(defaults.max_processes, defaults.max_processes_per_caller, defaults.max_engine_games_per_caller);
        let resource_changes = tokio::sync::broadcast::channel(256).0;
        let sandbox = sandbox::Sandbox::new(cache_dir.as_deref(), engines);
        Ok(Arc::new(Runtime { copied, mapped, timers, processes, sandbox, resource_changes, cache_dir }))
    }

    /// Whether `component`'s instances map their data segments rather than
    /// copy them (`MAPPED_DATA_BYTES`).
    pub fn maps_data(&self, component: &Component) -> bool {
        Engine::same(component.engine(), &self.mapped)
    }

    /// The engine for a component of these bytes (see `MAPPED_DATA_BYTES`).
    fn engine_for(&self, bytes: &[u8]) -> &Engine {
        if engine::maps_data(bytes) { &self.mapped } else { &self.copied }
    }

    /// Compiles a component, or loads it from the cache of precompiled
    /// artifacts keyed by content hash, engine settings and wasmtime version.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component> {
        let engine = self.engine_for(bytes);
        let Some(dir) = &self.cache_dir else {
            return Ok(Component::new(engine, bytes)?);
        };
        let path = dir.join(format!("{}.cwasm", cache_key(engine, bytes)));
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of this
            // engine configuration (the key covers it) into the operator's
            // own cache directory; a damaged file fails to deserialize and is
            // rebuilt below.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(c) => return Ok(c),
                Err(e) => tracing::warn!(path = %path.display(), "ignoring unusable cached component: {e:#}"),
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = write_cache(dir, &path, &component) {
            tracing::warn!(dir = %dir.display(), "cannot cache compiled component: {e:#}");
        }
        Ok(component)
    }

    /// A bundled game: `precompiled` is what `build.rs` compiled of `bytes`
    /// when this binary was built, LZ4-compressed. It loads in milliseconds
    /// where the engine's settings, wasmtime and the CPU's features are
    /// those it was compiled for (wasmtime checks); elsewhere the game is
    /// compiled (or read from the cache) as any component is.
    pub fn compile_bundled(&self, bytes: &[u8], precompiled: &[u8]) -> Result<Component> {
        let artifact = lz4_flex::decompress_size_prepended(precompiled).unwrap_or_default();
        if !artifact.is_empty() {
            // SAFETY: `artifact` is `Engine::precompile_component`'s output
            // for these very bytes, made by `build.rs` and embedded in this
            // binary beside them; `deserialize` refuses an artifact of
            // another wasmtime, other settings or another CPU.
            match unsafe { Component::deserialize(self.engine_for(bytes), &artifact) } {
                Ok(component) => return Ok(component),
                Err(e) => tracing::info!("a built-in game was compiled for another machine or settings ({e:#}); compiling it here"),
            }
        }
        self.compile(bytes)
    }
}

/// The engine settings (`engine.rs`), and what only a running server sets.
fn config(mapped: bool) -> wasmtime::Config {
    let mut config = engine::config(mapped);
    // LUDUS_PERF_MAP=1 writes /tmp/perf-PID.map, so `perf report` names
    // the games' own functions (profiling a game; off by default).
    if std::env::var_os("LUDUS_PERF_MAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// The cache file name of a component compiled by `engine`: its bytes, the
/// engine's settings and wasmtime's version, and this host's version.
fn cache_key(engine: &Engine, bytes: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let mut sha = Sha256::new();
    sha.update(bytes);
    sha.update(h.finish().to_le_bytes());
    sha.update(env!("CARGO_PKG_VERSION"));
    hex(&sha.finalize()[..16])
}

/// A store in `engine` for one instance with `data` as its state: linear
/// memory capped through the limiter the state carries, and the per-call CPU
/// budget armed (the caller re-arms it before each call). The budget counts
/// epoch ticks, which pass while a host function blocks too: time the state
/// reports as spent waiting (`waited`, taken when the budget runs out) is
/// given back rather than counted.
pub fn new_store<T: 'static>(
    engine: &Engine,
    data: T,
    limiter: fn(&mut T) -> &mut MemoryLimiter,
    waited: fn(&mut T) -> Duration,
    call_timeout: Duration,
) -> Store<T> {
    let mut store = Store::new(engine, data);
    store.limiter(move |s| limiter(s) as &mut dyn wasmtime::ResourceLimiter);
    store.epoch_deadline_callback(move |mut cx| match waited(cx.data_mut()) {
        d if d.is_zero() => Err(wasmtime::Trap::Interrupt.into()),
        d => Ok(wasmtime::UpdateDeadline::Continue(ticks(d))),
    });
    store.set_epoch_deadline(ticks(call_timeout));
    store
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

/// Default cache location: `$XDG_CACHE_HOME/ludus` or `~/.cache/ludus`.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("ludus").join("components"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_memfd_seal_is_worth_another_try_and_names_its_reason() {
        let busy = || std::io::Error::from_raw_os_error(libc::EBUSY);
        let refused = wasmtime::Error::from(memfd::Error::AddSeals(busy()));
        assert!(is_transient(&refused));
        let text = error_text(&refused);
        assert!(text.starts_with("cannot add seals to the memfd"), "{text}");
        assert_eq!(text.matches(&busy().to_string()).count(), 1, "the reason, once: {text}");
        assert!(!is_transient(&wasmtime::Error::from(memfd::Error::Create(busy()))));
        let other = wasmtime::Error::msg("unknown import");
        assert!(!is_transient(&other));
        assert_eq!(error_text(&other), "unknown import");
        let wrapped = wasmtime::Error::from(memfd::Error::AddSeals(busy())).context("instantiating");
        assert_eq!(error_text(&wrapped), format!("instantiating: cannot add seals to the memfd: {}", busy()));
        assert!(is_transient(&wrapped), "found under a context too");
    }

    #[test]
    fn large_data_segments_are_mapped_and_small_ones_copied() {
        let dir = std::path::Path::new(env!("LUDUS_WASM_DIR"));
        let (chess, hanoi) = (std::fs::read(dir.join("chess.wasm")).unwrap(), std::fs::read(dir.join("hanoi.wasm")).unwrap());
        assert!(data_bytes(&chess) >= MAPPED_DATA_BYTES, "chess carries {} bytes of data", data_bytes(&chess));
        assert!((1..MAPPED_DATA_BYTES).contains(&data_bytes(&hanoi)), "hanoi carries {} bytes of data", data_bytes(&hanoi));
        assert_eq!(data_bytes(b"not wasm"), 0);
        let runtime = Runtime::new(None, &Default::default()).unwrap();
        assert!(runtime.maps_data(&runtime.compile(&chess).unwrap()));
        assert!(!runtime.maps_data(&runtime.compile(&hanoi).unwrap()));
    }
}

//! The wasmtime side: the engines (one for plugins with little data, one for
//! plugins with a lot, `Runtime::compile`), the clock thread that makes
//! CPU limits real and fires timers (`clock`), the on-disk cache of compiled components, and stores with
//! their memory cap and CPU budget. It knows nothing of what a plugin may
//! import (`capability`) or of sessions; a store's state is whatever its
//! caller hands it.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Store};

pub mod bindings;
pub mod clock;
pub mod processes;

/// How a guest function has run so far, which decides where its next call
/// runs (`run_guest`). One per tool; a function whose calls ran long twice in
/// a row is slow for good.
///
/// One long call is not enough. A first call pays for its instance's first
/// touches of code and memory (page faults count as its CPU time), and on a
/// virtual machine a thread's CPU clock also counts the time the hypervisor
/// took the vCPU away: `hanoi_get_state` (20 µs) was seen at 2.4 and 6.7 ms
/// of "CPU" once in a few thousand calls, which made every later call of it
/// take the slower blocking-thread path for the rest of the run.
#[derive(Default)]
pub struct ToolSpeed {
    slow: AtomicBool,
    /// Calls in a row that ran long.
    long_in_a_row: AtomicU8,
    /// The last call took over `SLOW` in wall time without its CPU time
    /// read: the next one reads it.
    time_next: AtomicBool,
}

/// A call that computes longer than this would hold a runtime worker too
/// long. Counted in the thread's CPU time, not wall time: on a busy machine a
/// 4 µs call is sometimes preempted for milliseconds, and that says nothing
/// about the function.
const SLOW: Duration = Duration::from_millis(2);

/// A call that takes this long in wall time is slow whatever its CPU time
/// (it blocked in a host function).
const STALLED: Duration = Duration::from_millis(50);

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Runs guest code (a blocking call into a component) from async code.
///
/// Where depends on how the function has run before (`pace`):
/// - **Slow** (it computed for over 2 ms twice in a row: an engine thinking, a deep
///   search): on a blocking thread. The caller's task waits without holding
///   a worker, and a transport that runs calls in arrival order (stdio) sees
///   the call pending and goes on with the next request.
/// - **Otherwise** right here, inside `block_in_place`: tokio hands this
///   worker's queue to another thread, which only has work if the call
///   lasts, and the caller is not woken again afterwards (`spawn_blocking`
///   cost every call two thread wake-ups: 19 µs in-server p50 against 4.3).
///   Not plainly inline: WASI's blocking functions (a guest flushing its
///   stdout) start a tokio `block_on`, which panics on a worker thread
///   outside `block_in_place`. On a thread that is not a worker (the stdio
///   reader's), `block_in_place` just runs the call: no hand-off at all.
///
/// A current-thread runtime (some tests) always uses a blocking thread. A
/// panic is returned as an error, as `spawn_blocking` would.
pub async fn run_guest<T: Send + 'static>(pace: &ToolSpeed, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let on_workers = Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread;
    if !on_workers || pace.slow.load(Ordering::Relaxed) {
        return tokio::task::spawn_blocking(f).await.map_err(|e| e.to_string());
    }
    // The thread's CPU clock is two system calls (1.2 µs of a 40 µs
    // `hanoi_get_state`), so it is read only after a call that looked long
    // or was long: a call short in wall time was short in CPU time too. One
    // long in wall time but not stalled is not counted (200 HTTP clients on
    // two cores preempt quick calls for milliseconds all the time; counting
    // them sent `hanoi_get_state` to the blocking pool and cost a fifth of
    // the throughput); the next call is timed on the CPU clock instead.
    let started = Instant::now();
    let timed = pace.long_in_a_row.load(Ordering::Relaxed) > 0 || pace.time_next.load(Ordering::Relaxed);
    let cpu_before = timed.then(thread_cpu_time);
    // block_in_place runs the call on this same thread, so the thread's CPU
    // clock measures it.
    let (outcome, cpu_after) = tokio::task::block_in_place(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        (outcome, cpu_before.map(|_| thread_cpu_time()))
    });
    let wall = started.elapsed();
    let cpu = cpu_before.zip(cpu_after).map(|(before, after)| after.saturating_sub(before));
    tracing::trace!(cpu_us = cpu.map(|c| c.as_micros() as u64), wall_us = wall.as_micros() as u64, "guest call");
    pace.time_next.store(cpu.is_none() && wall > SLOW, Ordering::Relaxed);
    if cpu.unwrap_or_default() <= SLOW && wall <= STALLED {
        pace.long_in_a_row.store(0, Ordering::Relaxed);
    } else if pace.long_in_a_row.fetch_add(1, Ordering::Relaxed) >= 1 {
        tracing::debug!(
            cpu_us = cpu.map(|c| c.as_micros() as u64),
            wall_us = wall.as_micros() as u64,
            "a guest function ran long twice in a row; its calls run on blocking threads from now on"
        );
        pace.slow.store(true, Ordering::Relaxed);
    }
    outcome.map_err(|_| "the call panicked in the host".to_string())
}

/// Hands freed heap back to the system. glibc's allocator keeps what ended
/// sessions freed (tens of MiB after thousands expire at once, measured by
/// the soak benchmark) unless asked; a no-op elsewhere.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's allocator at one arena per core (its default is eight per
/// core). A burst of new sessions runs on dozens of blocking threads; each
/// that allocates claims an arena of its own, and what stays allocated when
/// the burst is over (a few KB per arena) pins pages in all of them. Five
/// waves of 10,000 expired sessions left 44–50 MiB resident from a 32 MiB
/// start with 16 arenas, 38–41 MiB with 2 (in use either way: 3.6 MiB).
/// Call before any thread starts; a no-op off glibc.
pub fn limit_allocator_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: mallopt only tunes the allocator; no thread allocates yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, cores.min(64) as libc::c_int);
        }
    }
}

/// Runtime threads that have ended since the start, and that count at the
/// last trim.
static THREADS_ENDED: AtomicU64 = AtomicU64::new(0);
static THREADS_ENDED_AT_TRIM: AtomicU64 = AtomicU64::new(0);

/// Hook for the runtime's `on_thread_stop`.
pub fn note_thread_end() {
    THREADS_ENDED.fetch_add(1, Ordering::Relaxed);
}

/// What a periodic sweep calls: trims when the sweep itself freed much, or
/// when runtime threads have ended since the last trim. The second matters
/// because a burst of sessions leaves its freed memory in the caches of the
/// blocking threads that served it, and those threads end (handing it back
/// to their arenas) seconds after the sweep that expired the sessions:
/// 10,000 expired sessions kept 68 MiB from a 32 MiB start until a later
/// trim brought it to 43.
pub fn release_freed_memory_after_sweep(freed_much: bool) {
    let ended = THREADS_ENDED.load(Ordering::Relaxed);
    let threads_ended = THREADS_ENDED_AT_TRIM.swap(ended, Ordering::Relaxed) != ended;
    if freed_much || threads_ended {
        release_freed_memory();
    }
}

/// Memory mappings one instance adds, with a margin for the channels'
/// threads and buffers: measured 2.03 with copied data segments, 4.00 with
/// mapped ones (`MAPPED_DATA_BYTES`).
const MAPS_PER_INSTANCE: u64 = 3;
const MAPS_PER_MAPPED_INSTANCE: u64 = 5;

/// How many instances the kernel's limit on memory mappings leaves room for,
/// and that limit: each instance reserves its linear memory as its own
/// mappings, and past `vm.max_map_count` every new one fails with "Cannot
/// allocate memory". `mapped`: instances that map their data segments. None
/// where the limit cannot be read.
pub fn instances_the_kernel_allows(mapped: bool) -> Option<(usize, u64)> {
    let (budget, max_maps) = maps_for_instances()?;
    Some((budget as usize / maps_per_instance(mapped) as usize, max_maps))
}

/// Memory mappings the kernel's limit leaves for instances, and that limit.
pub fn maps_for_instances() -> Option<(u64, u64)> {
    let max_maps: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok()?.trim().parse().ok()?;
    // What the server itself maps (code, heaps, threads, compiled games).
    let headroom = 4_096;
    Some((max_maps.saturating_sub(headroom), max_maps))
}

/// Mappings counted for one instance (with a margin).
pub fn maps_per_instance(mapped: bool) -> u64 {
    if mapped { MAPS_PER_MAPPED_INSTANCE } else { MAPS_PER_INSTANCE }
}

/// The epoch advances this often; CPU limits are counted in these ticks.
pub const TICK: Duration = Duration::from_millis(10);

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
    cache_dir: Option<PathBuf>,
}

/// Data segments from which a component's instances map their memory's
/// initial contents copy-on-write instead of copying them.
///
/// A copy costs two memory mappings fewer per instance (2.03 against 4.08),
/// and the kernel's map limit is what caps live sessions: right for the
/// puzzles' few KB. Chess carries 4.4 MB of move tables: copied, every new
/// game spent 2.5 ms writing them (most are never read) and kept them
/// resident, and the first move after it found every cache cold.
pub const MAPPED_DATA_BYTES: usize = 1 << 20;

/// Bytes of active data segments in a component's core modules (a copy of
/// each starts an instance's linear memory); 0 for what does not parse.
pub fn data_bytes(wasm: &[u8]) -> usize {
    let mut total = 0;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let Ok(wasmparser::Payload::DataSection(reader)) = payload else { continue };
        for data in reader.into_iter().flatten() {
            if matches!(data.kind, wasmparser::DataKind::Active { .. }) {
                total += data.data.len();
            }
        }
    }
    total
}

impl Runtime {
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Arc<Runtime>> {
        let (copied, mapped) = (Engine::new(&config(false))?, Engine::new(&config(true))?);
        let timers = Arc::new(clock::Timers::default());
        clock::start(&[&copied, &mapped], timers.clone());
        let defaults = crate::config::Limits::default();
        let processes = processes::ProcessBudget::new(defaults.max_processes, defaults.max_processes_per_caller);
        Ok(Arc::new(Runtime { copied, mapped, timers, processes, cache_dir }))
    }

    /// Whether `component`'s instances map their data segments rather than
    /// copy them (`MAPPED_DATA_BYTES`).
    pub fn maps_data(&self, component: &Component) -> bool {
        Engine::same(component.engine(), &self.mapped)
    }

    /// The engine for a component of these bytes (see `MAPPED_DATA_BYTES`).
    fn engine_for(&self, bytes: &[u8]) -> &Engine {
        if data_bytes(bytes) >= MAPPED_DATA_BYTES { &self.mapped } else { &self.copied }
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
}

/// The engine settings both engines share; `mapped` is how an instance's
/// memory gets its data segments (`MAPPED_DATA_BYTES`).
fn config(mapped: bool) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    config.max_wasm_stack(2 << 20);
    config.memory_init_cow(mapped);
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
/// budget armed (the caller re-arms it before each call).
pub fn new_store<T: 'static>(engine: &Engine, data: T, limiter: fn(&mut T) -> &mut MemoryLimiter, call_timeout: Duration) -> Store<T> {
    let mut store = Store::new(engine, data);
    store.limiter(move |s| limiter(s) as &mut dyn wasmtime::ResourceLimiter);
    store.epoch_deadline_trap();
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

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether two secrets are equal, in time that depends only on their lengths.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
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

    /// Computes (not sleeps) for `d` of this thread's CPU time.
    fn burn(d: Duration) {
        let start = thread_cpu_time();
        while thread_cpu_time() - start < d {
            std::hint::spin_loop();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_function_is_slow_after_two_long_calls_in_a_row_not_one() {
        let pace = ToolSpeed::default();
        let long = || burn(SLOW * 2);
        run_guest(&pace, long).await.unwrap();
        run_guest(&pace, || ()).await.unwrap();
        run_guest(&pace, long).await.unwrap();
        assert!(!pace.slow.load(Ordering::Relaxed), "long calls with a quick one between them are hiccups");
        run_guest(&pace, long).await.unwrap();
        assert!(!pace.slow.load(Ordering::Relaxed), "a call long in wall time only has the next one timed");
        run_guest(&pace, long).await.unwrap();
        assert!(pace.slow.load(Ordering::Relaxed), "two long calls in a row on the CPU clock make the function slow");
    }

    #[test]
    fn large_data_segments_are_mapped_and_small_ones_copied() {
        let dir = std::path::Path::new(env!("LUDUS_WASM_DIR"));
        let (chess, hanoi) = (std::fs::read(dir.join("chess.wasm")).unwrap(), std::fs::read(dir.join("hanoi.wasm")).unwrap());
        assert!(data_bytes(&chess) >= MAPPED_DATA_BYTES, "chess carries {} bytes of data", data_bytes(&chess));
        assert!((1..MAPPED_DATA_BYTES).contains(&data_bytes(&hanoi)), "hanoi carries {} bytes of data", data_bytes(&hanoi));
        assert_eq!(data_bytes(b"not wasm"), 0);
        let runtime = Runtime::new(None).unwrap();
        assert!(runtime.maps_data(&runtime.compile(&chess).unwrap()));
        assert!(!runtime.maps_data(&runtime.compile(&hanoi).unwrap()));
    }

    #[test]
    fn mapped_instances_are_counted_with_their_extra_mappings() {
        let (Some((copied, max)), Some((mapped, _))) = (instances_the_kernel_allows(false), instances_the_kernel_allows(true)) else {
            return; // no /proc here: nothing is capped
        };
        assert!(mapped < copied, "{mapped} mapped vs {copied} copied instances at vm.max_map_count {max}");
        assert!(mapped as u64 * 4 < max, "4 mappings per mapped instance must fit");
    }
}

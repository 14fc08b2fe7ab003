//! Memory outside the guests' own: handing freed heap back to the system,
//! the allocator's arenas, the kernel's limit on memory mappings (which caps
//! how many instances can live at once), and each store's cap on linear
//! memory (`MemoryLimiter`).

use std::sync::atomic::{AtomicU64, Ordering};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_instances_are_counted_with_their_extra_mappings() {
        let (Some((copied, max)), Some((mapped, _))) = (instances_the_kernel_allows(false), instances_the_kernel_allows(true)) else {
            return; // no /proc here: nothing is capped
        };
        assert!(mapped < copied, "{mapped} mapped vs {copied} copied instances at vm.max_map_count {max}");
        assert!(mapped as u64 * 4 < max, "4 mappings per mapped instance must fit");
    }
}

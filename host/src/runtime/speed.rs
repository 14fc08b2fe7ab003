//! Where a guest call runs: on the thread that read its request while the
//! tool is quick, on the blocking pool once it has proved slow (`ToolSpeed`,
//! `run_guest`). docs/design/sessions.md, "Where a guest call runs", says why.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

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

thread_local! {
    static CLIENT_READER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as the one that carries its client's messages (stdio's
/// reader, an HTTP connection's thread): a call that waited for that client
/// here would hold the thread that must send the question and read the
/// answer, so such calls go to a blocking thread.
pub fn is_client_reader() {
    CLIENT_READER.set(true);
}

/// `run_guest` for a call that may wait for its client's answer (a game
/// that imports `ludus:plugin/client`, called by a client that declared
/// sampling or elicitation): never on the thread that carries that client's
/// messages (`is_client_reader`), which must send the question and read the
/// answer.
pub async fn run_guest_that_may_ask<T: Send + 'static>(pace: &ToolSpeed, f: impl FnOnce() -> T + Send + 'static) -> Result<T, RunError> {
    if CLIENT_READER.get() {
        return tokio::task::spawn_blocking(f).await.map_err(RunError::from);
    }
    run_guest(pace, f).await
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
pub async fn run_guest<T: Send + 'static>(pace: &ToolSpeed, f: impl FnOnce() -> T + Send + 'static) -> Result<T, RunError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let on_workers = Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread;
    if !on_workers || pace.slow.load(Ordering::Relaxed) {
        return tokio::task::spawn_blocking(f).await.map_err(RunError::from);
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
    outcome.map_err(|_| RunError::Panicked)
}

/// Why guest work handed to `run_guest` came to no result: the runtime's
/// error type. (A trap in the guest is no such error: the session says it.)
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The host code around the call panicked.
    #[error("the call panicked in the host")]
    Panicked,
    /// The runtime shut down before the call ran.
    #[error("the server is shutting down")]
    ShuttingDown,
}

impl From<tokio::task::JoinError> for RunError {
    fn from(e: tokio::task::JoinError) -> RunError {
        if e.is_panic() { RunError::Panicked } else { RunError::ShuttingDown }
    }
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
}

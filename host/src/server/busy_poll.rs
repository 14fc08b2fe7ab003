//! Waiting for a client's next request: watch for it a little before sleeping.
//!
//! A thread asleep in poll(2) is woken by an interrupt to its CPU, which on a
//! virtual machine costs tens of microseconds when that CPU had gone idle:
//! more than a whole quick call. A client in a tight loop sends its next
//! request within tens of microseconds of reading an answer, so the thread
//! that wrote the answer (the stdio reader, an HTTP connection's thread)
//! first watches its inputs for `limits.busy_poll_us` (non-blocking polls)
//! and only then sleeps. It costs CPU only after an answer (not while a call
//! is still running), at most one thread per core but one watches at a time,
//! and a watching thread yields its CPU between looks: the client it just
//! answered is often woken on that same CPU. It watches only for a client
//! that keeps pace: once a client's next request came later than the watch
//! (an agent thinking, a person, an idle connection), its thread sleeps at
//! once after each answer until a request comes within the watch again, so
//! a slow or idle client costs no CPU. Figures: docs/design/mcp.md, "MCP
//! surface".
//!
//! A transport holds one `Watch` (its length and who watches now) for all
//! its threads; each waiting thread keeps its client's `Pace`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a transport's threads watch for their clients' next requests
/// (`limits.busy_poll_us`; zero: never), and how many watch at once.
pub struct Watch {
    length: Duration,
    /// Threads watching right now.
    watching: AtomicUsize,
    /// At most this many at once: one per core but one, at least one.
    allowed: usize,
}

/// Whether a thread's client keeps pace. Its last request came later than a
/// watch would have lasted: watching for its next one would most likely
/// burn CPU for nothing.
#[derive(Default)]
pub struct Pace {
    client_is_slow: bool,
}

/// What woke a thread from `wait_for`.
pub struct Woken {
    /// Its input has an event (readable, writable, closed: whatever it asked for).
    pub input: bool,
    /// Its bell rang (and has been answered).
    pub bell: bool,
}

impl Watch {
    pub fn new(length: Duration) -> Watch {
        let allowed = std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1));
        Watch { length, watching: AtomicUsize::new(0), allowed }
    }

    /// Sleeps until `input` has an event or `bell` rings; when
    /// `watch_first`, watches both without blocking first, unless the
    /// thread's client (`pace`) has been slower than a watch. A stdio reader
    /// and an HTTP connection's thread wait here between requests.
    /// `input.fd` may be -1 (poll(2) then ignores it: the thread waits only
    /// for its bell).
    pub fn wait_for(&self, input: libc::pollfd, bell: &Doorbell, watch_first: bool, pace: &mut Pace) -> io::Result<Woken> {
        let mut fds = [input, libc::pollfd { fd: bell.fd(), events: libc::POLLIN, revents: 0 }];
        // Only a wait right after an answer measures the client's pace.
        let answered_at = watch_first.then(Instant::now);
        if !(watch_first && !pace.client_is_slow && self.watch(&mut fds)?) {
            while poll(&mut fds, -1)? == 0 {}
        }
        let woken = Woken { input: fds[0].revents != 0, bell: fds[1].revents != 0 };
        if let Some(answered_at) = answered_at.filter(|_| woken.input) {
            // The client's pace since the answer decides whether to watch next time.
            pace.client_is_slow = answered_at.elapsed() > self.length;
        }
        if woken.bell {
            bell.answer();
        }
        Ok(woken)
    }

    /// Watches `fds` for up to the watch's length with non-blocking polls,
    /// if no more than the allowed threads already watch; true once one of
    /// them has an event.
    fn watch(&self, fds: &mut [libc::pollfd]) -> io::Result<bool> {
        if self.length.is_zero() {
            return Ok(false);
        }
        if poll(fds, 0)? > 0 {
            return Ok(true);
        }
        let Some(_slot) = Slot::take(self) else { return Ok(false) };
        let until = Instant::now() + self.length;
        while Instant::now() < until {
            if poll(fds, 0)? > 0 {
                return Ok(true);
            }
            // The client we just answered is often woken on this very CPU: it
            // must not wait behind our watching (chess over stdio lost 70 µs per
            // move to that, until this yield).
            // SAFETY: no arguments.
            unsafe { libc::sched_yield() };
        }
        Ok(false)
    }
}

/// A thread's doorbell: an eventfd it polls next to its input, rung from
/// other threads (an HTTP connection's waker; the stdio reader's "an answer
/// went out from a task").
pub struct Doorbell {
    fd: OwnedFd,
    rung: AtomicBool,
}

impl Doorbell {
    pub fn new() -> io::Result<Doorbell> {
        // SAFETY: eventfd takes no pointers; a valid fd is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created and is owned by nothing else.
        Ok(Doorbell { fd: unsafe { OwnedFd::from_raw_fd(fd) }, rung: AtomicBool::new(false) })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn ring(&self) {
        // One write until the thread has answered: the eventfd only needs to be readable.
        if !self.rung.swap(true, Ordering::AcqRel) {
            let one = 1u64;
            // SAFETY: writes 8 bytes from a u64 to our own eventfd.
            unsafe { libc::write(self.fd.as_raw_fd(), (&raw const one).cast(), 8) };
        }
    }

    /// Called by the thread after poll(2) found the bell readable, before it
    /// looks again at what it waits for.
    pub fn answer(&self) {
        // Drain first, then re-arm. The other order lost wake-ups for good: a
        // ring between the two saw the bell still rung (no write), the drain
        // then ate the earlier write, and with `rung` left set no later ring
        // ever wrote again (an HTTP connection hung in the soak benchmark).
        // In this order a ring between the two is not written either, but
        // the thread looks at its work right after this call and sees it.
        let mut count = 0u64;
        // SAFETY: reads 8 bytes into a u64 from our own eventfd.
        unsafe { libc::read(self.fd.as_raw_fd(), (&raw mut count).cast(), 8) };
        self.rung.store(false, Ordering::Release);
    }
}

fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<i32> {
    loop {
        // SAFETY: a valid slice of pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n >= 0 {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Leave to watch, within the watch's allowance.
struct Slot<'a>(&'a AtomicUsize);

impl Slot<'_> {
    fn take(watch: &Watch) -> Option<Slot<'_>> {
        let mut now = watch.watching.load(Ordering::Relaxed);
        while now < watch.allowed {
            match watch.watching.compare_exchange_weak(now, now + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Some(Slot(&watch.watching)),
                Err(seen) => now = seen,
            }
        }
        None
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn watching_sees_input_that_comes_and_gives_up_when_none_does() {
        let (rx, mut tx) = std::io::pipe().unwrap();
        let fds = || [libc::pollfd { fd: rx.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let started = Instant::now();
        assert!(!Watch::new(Duration::from_millis(20)).watch(&mut fds()).unwrap(), "nothing was written");
        assert!(started.elapsed() >= Duration::from_millis(20), "it watched for the whole budget");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            std::io::Write::write_all(&mut tx, b"next request\n").unwrap();
            tx
        });
        assert!(Watch::new(Duration::from_secs(5)).watch(&mut fds()).unwrap(), "the write came while it watched");
        let _tx = writer.join().unwrap();
        let off = Watch::new(Duration::ZERO);
        assert!(!off.watch(&mut fds()).unwrap(), "off: it does not look at all");
        let bell = Doorbell::new().unwrap();
        let woken = off.wait_for(fds()[0], &bell, true, &mut Pace::default()).unwrap();
        assert!(woken.input && !woken.bell, "waiting returns at once on pending input");
    }

    #[test]
    fn a_client_slower_than_the_watch_is_not_watched_for_until_it_keeps_pace_again() {
        let (rx, mut tx) = std::io::pipe().unwrap();
        let input = libc::pollfd { fd: rx.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let bell = Doorbell::new().unwrap();
        let drain = |rx: &std::io::PipeReader| std::io::Read::read(&mut &*rx, &mut [0u8; 64]).unwrap();
        let watch = Watch::new(Duration::from_millis(5));
        let mut pace = Pace::default();
        // A request 30 ms after the answer: the watch ran out, the client is slow.
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            std::io::Write::write_all(&mut tx, b"late\n").unwrap();
            tx
        });
        assert!(watch.wait_for(input, &bell, true, &mut pace).unwrap().input);
        let mut tx = late.join().unwrap();
        drain(&rx);
        assert!(pace.client_is_slow, "a request later than the watch marks the client slow");
        // A request at once: it is read, and the client keeps pace again.
        std::io::Write::write_all(&mut tx, b"quick\n").unwrap();
        assert!(watch.wait_for(input, &bell, true, &mut pace).unwrap().input);
        drain(&rx);
        assert!(!pace.client_is_slow, "a request within the watch makes the next wait watch again");
    }

    #[test]
    fn a_bell_rung_without_pause_is_never_lost() {
        // A ringer that never waits, against a thread that answers and
        // sleeps in a loop: any ring lost in between would leave the last
        // one unheard (the waiter times out).
        let bell = std::sync::Arc::new(Doorbell::new().unwrap());
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let ringer = std::thread::spawn({
            let (bell, done) = (bell.clone(), done.clone());
            move || {
                let until = Instant::now() + Duration::from_millis(500);
                while Instant::now() < until {
                    bell.ring();
                }
                done.store(true, Ordering::SeqCst);
                bell.ring();
            }
        });
        loop {
            let mut fds = [libc::pollfd { fd: bell.fd(), events: libc::POLLIN, revents: 0 }];
            assert_eq!(poll(&mut fds, 2_000).unwrap(), 1, "a ring was lost: the bell stayed silent");
            bell.answer();
            if done.load(Ordering::SeqCst) {
                break;
            }
        }
        ringer.join().unwrap();
    }
}

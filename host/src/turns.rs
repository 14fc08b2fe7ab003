//! Turns at the CPU for connection threads, given in the order they were
//! asked for.
//!
//! Each HTTP connection has a thread of its own (`server::http::thread`).
//! When many clients send at once (200 sessions each sending its next call
//! as soon as the last is answered), the kernel decides which woken thread
//! runs next, and it does not go by who asked first: some connections were
//! answered again and again while others waited 20–50 ms for their first
//! answer. So a connection thread takes a turn before it works on its
//! requests and gives it back before it sleeps, and at most
//! `TURNS_PER_CORE` threads per core hold one; the others wait in line and
//! are handed a turn in the order they came, as one thread serving many
//! connections from one queue would.
//!
//! Why four per core: with one, every call under load waited for a hand-over
//! (a wake-up of its own) and the server answered a fifth fewer calls per
//! second; with four, a core always has a thread to run while another is
//! handed its turn, and the 200 sessions get a twentieth fewer answers per
//! second than with no limit (at the median), while their slowest come in
//! under 13 ms instead of up to 50 (docs/benchmarks.md, "Speed"). With
//! eight a core the order began to slip again.
//!
//! A turn is for work that takes the CPU for a moment. A thread that waits
//! for something else while it holds one (the session store: a write to
//! Redis or SQLite) gives it back for the wait (`while_waiting`) and takes
//! it again first in line: others work meanwhile, and writes that wait
//! together go to the store together. One held longer than `STALE` (a long
//! guest: a search, an engine's reply; a call blocked on a lock) stops
//! counting against the limit, so the next in line goes on beside it: a
//! slow call delays the others by at most that long.
//!
//! The turn a thread holds is the thread's (a thread-local), so that code
//! far below the transport that took it can give it back for a wait.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::locking::lock;

/// How long a turn counts against the limit.
const STALE: Duration = Duration::from_millis(1);

/// Turns held at once, per core (the module's comment says why four).
const TURNS_PER_CORE: usize = 4;

pub struct Turns {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the keeper when the line forms or the server stops.
    line_formed: Condvar,
    /// Turns held at once, counting only those younger than `stale`.
    allowed: usize,
    /// How long a turn counts against the limit (`STALE`).
    stale: Duration,
    /// Someone waits in line (read without the lock).
    in_demand: AtomicBool,
}

#[derive(Default)]
struct State {
    /// When each turn held now began.
    held: Vec<Instant>,
    line: VecDeque<Arc<Waiter>>,
    stopping: bool,
}

struct Waiter {
    thread: Thread,
    /// When its turn began; set as it is handed over.
    granted: OnceLock<Instant>,
}

/// The thread's turn held now: whose, and when it began.
struct Held {
    shared: Arc<Shared>,
    began: Instant,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// The thread holds a turn; given back (to the next in line, if any) when
/// dropped. It stays on the thread that took it.
pub struct Turn {
    _this_thread: PhantomData<*const ()>,
}

/// Gives the thread's turn (if it holds one) back while `wait` runs, and
/// takes it again, first in line, after: for a wait on something other
/// than the CPU.
pub fn while_waiting<T>(wait: impl FnOnce() -> T) -> T {
    let Some(Held { shared, began }) = HELD.take() else { return wait() };
    shared.give_back(began);
    let out = wait();
    let began = shared.take(Place::First);
    HELD.set(Some(Held { shared, began }));
    out
}

impl Turns {
    /// `TURNS_PER_CORE` turns per core; a thread of its own (the keeper)
    /// lets the line go on beside turns held too long.
    pub fn new() -> std::io::Result<Turns> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Turns::with_limit(TURNS_PER_CORE * cores, STALE)
    }

    fn with_limit(allowed: usize, stale: Duration) -> std::io::Result<Turns> {
        let shared =
            Arc::new(Shared { state: Mutex::default(), line_formed: Condvar::new(), allowed, stale, in_demand: AtomicBool::new(false) });
        let keeper = shared.clone();
        std::thread::Builder::new().name("ludus-turns".into()).spawn(move || keeper.keep())?;
        Ok(Turns { shared })
    }

    /// A turn for this thread: at once if one is free and nobody waits,
    /// else when the threads in line before this one have had theirs.
    pub fn take(&self) -> Turn {
        debug_assert!(HELD.with_borrow(Option::is_none), "a thread holds one turn at a time");
        let began = self.shared.take(Place::Last);
        HELD.set(Some(Held { shared: self.shared.clone(), began }));
        Turn { _this_thread: PhantomData }
    }

    /// Whether threads wait for a turn now.
    pub fn in_demand(&self) -> bool {
        self.shared.in_demand.load(Ordering::Relaxed)
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        lock(&self.shared.state).stopping = true;
        self.shared.line_formed.notify_one();
    }
}

/// Where a thread asking for a turn stands if it must wait.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// A new request's work.
    Last,
    /// Work already under way, back from a wait.
    First,
}

impl Shared {
    /// A turn, when this thread's place in line comes; when it began.
    fn take(&self, place: Place) -> Instant {
        let mut state = lock(&self.state);
        let now = Instant::now();
        if (state.line.is_empty() || place == Place::First) && state.fresh(now, self.stale) < self.allowed {
            state.held.push(now);
            return now;
        }
        let me = Arc::new(Waiter { thread: std::thread::current(), granted: OnceLock::new() });
        match place {
            Place::Last => state.line.push_back(me.clone()),
            Place::First => state.line.push_front(me.clone()),
        }
        if state.line.len() == 1 {
            self.in_demand.store(true, Ordering::Relaxed);
            self.line_formed.notify_one();
        }
        drop(state);
        loop {
            if let Some(&began) = me.granted.get() {
                return began;
            }
            std::thread::park();
        }
    }

    /// Gives back the turn that began at `began`, to the next in line.
    fn give_back(&self, began: Instant) {
        let mut state = lock(&self.state);
        if let Some(i) = state.held.iter().position(|&b| b == began) {
            state.held.swap_remove(i);
        }
        self.grant(&mut state, Instant::now());
    }

    /// The keeper: while threads wait, it wakes each time a turn held now
    /// would go stale and lets the line go on if that made room.
    fn keep(&self) {
        let mut state = lock(&self.state);
        loop {
            if state.stopping {
                return;
            }
            let now = Instant::now();
            self.grant(&mut state, now);
            state = match state.next_stale(now, self.stale).filter(|_| !state.line.is_empty()) {
                Some(at) => wait_timeout(&self.line_formed, state, at.saturating_duration_since(now)),
                None => self.line_formed.wait(state).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// Hands turns to the first in line while there is room.
    fn grant(&self, state: &mut State, now: Instant) {
        while state.fresh(now, self.stale) < self.allowed {
            let Some(next) = state.line.pop_front() else { return };
            if state.line.is_empty() {
                self.in_demand.store(false, Ordering::Relaxed);
            }
            state.held.push(now);
            let _ = next.granted.set(now);
            next.thread.unpark();
        }
    }
}

fn wait_timeout<'a>(c: &Condvar, g: MutexGuard<'a, State>, d: Duration) -> MutexGuard<'a, State> {
    c.wait_timeout(g, d).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0)
}

impl State {
    /// When each turn held now that is younger than `stale` began.
    fn young(&self, now: Instant, stale: Duration) -> impl Iterator<Item = Instant> + '_ {
        self.held.iter().copied().filter(move |&began| now.saturating_duration_since(began) < stale)
    }

    /// Turns held now that are younger than `stale`.
    fn fresh(&self, now: Instant, stale: Duration) -> usize {
        self.young(now, stale).count()
    }

    /// When the next turn held now goes stale.
    fn next_stale(&self, now: Instant, stale: Duration) -> Option<Instant> {
        self.young(now, stale).min().map(|began| began + stale)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(Held { shared, began }) = HELD.take() {
            shared.give_back(began);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Waits until `n` threads stand in line.
    fn line_of(turns: &Turns, n: usize) {
        let until = Instant::now() + Duration::from_secs(10);
        while lock(&turns.shared.state).line.len() != n {
            assert!(Instant::now() < until, "{n} threads never stood in line");
            std::thread::yield_now();
        }
    }

    #[test]
    fn turns_are_given_in_the_order_asked_for() {
        let turns = Arc::new(Turns::with_limit(1, Duration::from_secs(3600)).unwrap());
        let held = turns.take();
        let (tx, rx) = mpsc::channel();
        let mut threads = Vec::new();
        for who in 0..5 {
            let (mine, tx) = (turns.clone(), tx.clone());
            threads.push(std::thread::spawn(move || {
                let _turn = mine.take();
                tx.send(who).unwrap();
            }));
            line_of(&turns, who + 1);
        }
        assert!(turns.in_demand());
        assert!(rx.try_recv().is_err(), "nobody had a turn while the only one was held");
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert!(!turns.in_demand());
    }

    #[test]
    fn a_turn_held_too_long_lets_the_next_go_on_beside_it() {
        let stale = Duration::from_millis(30);
        let turns = Arc::new(Turns::with_limit(1, stale).unwrap());
        let began = Instant::now();
        let _long = turns.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn({
            let turns = turns.clone();
            move || {
                let _turn = turns.take();
                tx.send(began.elapsed()).unwrap();
            }
        });
        let waited = rx.recv_timeout(Duration::from_secs(10)).expect("the next never had a turn while the long one was held");
        std::thread::sleep(Duration::from_millis(10));
        assert!(waited >= stale, "the next went on after {waited:?}, before the held turn went stale");
        assert_eq!(lock(&turns.shared.state).held.len(), 1, "the long turn is still held, the next one given back");
    }

    #[test]
    fn a_turn_is_given_back_for_a_wait_and_taken_again_first_in_line() {
        let turns = Arc::new(Turns::with_limit(1, Duration::from_secs(3600)).unwrap());
        let (order, heard) = mpsc::channel();
        let _turn = turns.take();
        // B waits in line for the only turn.
        let (release_b, b_may_go) = mpsc::channel::<()>();
        let b = std::thread::spawn({
            let (turns, order) = (turns.clone(), order.clone());
            move || {
                let _turn = turns.take();
                order.send("B").unwrap();
                b_may_go.recv().unwrap();
            }
        });
        line_of(&turns, 1);
        let c = while_waiting(|| {
            // Our turn went to B while we wait.
            assert_eq!(heard.recv_timeout(Duration::from_secs(10)), Ok("B"), "the turn was not given back for the wait");
            // C comes to the line now; we come back to it after, but first.
            let c = std::thread::spawn({
                let (turns, order) = (turns.clone(), order.clone());
                move || {
                    let _turn = turns.take();
                    order.send("C").unwrap();
                }
            });
            line_of(&turns, 1);
            // B gives the turn back once this thread stands in line again too.
            std::thread::spawn({
                let turns = turns.clone();
                move || {
                    line_of(&turns, 2);
                    release_b.send(()).unwrap();
                }
            });
            c
        });
        b.join().unwrap();
        // Back from the wait, this thread holds the turn again: C still waits.
        order.send("back").unwrap();
        assert!(HELD.with_borrow(Option::is_some));
        drop(_turn);
        c.join().unwrap();
        assert_eq!(heard.try_iter().collect::<Vec<_>>(), ["back", "C"]);
    }
}

//! The runtime's clock thread: it advances the engine's epoch every `TICK`
//! (what makes CPU limits real) and fires the plugins' timers.
//!
//! Timers ride on this thread so that arming one, inside a tool call (chess:
//! the engine's reply, 20 ms after the agent's move), wakes nobody: a task
//! spawned on tokio would wake a worker inside every such call (a quarter of
//! `chess_finish_turn`'s CPU; docs/design/sessions.md, "Where a guest call runs"). This thread
//! wakes every 10 ms anyway, sees the new timer then, and sleeps until it is
//! due; only a timer due before its next planned wake-up wakes it early.
//! A due timer's action runs here, so it must be short (hand real work to
//! the async runtime).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use wasmtime::{Engine, EngineWeak};

use super::TICK;
use crate::locking::lock;

type Action = Box<dyn FnOnce() + Send>;

/// Timers waiting for the clock thread, earliest first.
#[derive(Default)]
pub struct Timers {
    queue: Mutex<Queue>,
    woken: Condvar,
}

#[derive(Default)]
struct Queue {
    due: BTreeMap<TimerKey, Action>,
    armed: u64,
    /// When the clock thread will wake by itself; none while it works.
    sleeping_until: Option<Instant>,
}

/// One armed timer, to disarm it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerKey(Instant, u64);

impl Timers {
    /// Runs `action` on the clock thread once `after` has passed.
    pub fn arm(&self, after: Duration, action: impl FnOnce() + Send + 'static) -> TimerKey {
        let at = Instant::now() + after;
        let mut q = lock(&self.queue);
        q.armed += 1;
        let key = TimerKey(at, q.armed);
        q.due.insert(key, Box::new(action));
        if q.sleeping_until.is_some_and(|wake| at < wake) {
            self.woken.notify_one();
        }
        key
    }

    /// Forgets a timer; false if it had fired (or was disarmed) already.
    pub fn disarm(&self, key: TimerKey) -> bool {
        lock(&self.queue).due.remove(&key).is_some()
    }

    /// Timers armed and not yet fired.
    #[cfg(test)]
    fn pending(&self) -> usize {
        lock(&self.queue).due.len()
    }

    fn take_due(&self, now: Instant) -> Vec<Action> {
        let mut q = lock(&self.queue);
        let later = q.due.split_off(&TimerKey(now, u64::MAX));
        std::mem::replace(&mut q.due, later).into_values().collect()
    }

    /// Sleeps until `tick` or the first timer, whichever is sooner, or until
    /// a sooner timer is armed.
    fn sleep_until(&self, tick: Instant) {
        let mut q = lock(&self.queue);
        let wake = q.due.keys().next().map_or(tick, |k| k.0.min(tick));
        let now = Instant::now();
        if wake <= now {
            return;
        }
        q.sleeping_until = Some(wake);
        let (mut q, _) = self.woken.wait_timeout(q, wake - now).unwrap_or_else(|e| e.into_inner());
        q.sleeping_until = None;
    }
}

/// Starts the clock thread; it ends when the engine is dropped.
pub fn start(engines: &[&Engine], timers: Arc<Timers>) {
    let weak: Vec<EngineWeak> = engines.iter().map(|e| e.weak()).collect();
    std::thread::Builder::new().name("ludus-epoch".into()).spawn(move || run(&weak, &timers)).expect("spawning the clock thread");
}

fn run(engines: &[EngineWeak], timers: &Timers) {
    let mut next_tick = Instant::now();
    loop {
        let now = Instant::now();
        if now >= next_tick {
            for engine in engines {
                let Some(engine) = engine.upgrade() else { return };
                engine.increment_epoch();
            }
            next_tick = now + TICK;
        }
        for action in timers.take_due(now) {
            // A panicking action must not stop the epoch: CPU limits depend on it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(action));
        }
        timers.sleep_until(next_tick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn clock() -> (Engine, Arc<Timers>) {
        let engine = Engine::default();
        let timers = Arc::new(Timers::default());
        start(&[&engine], timers.clone());
        (engine, timers)
    }

    #[test]
    fn timers_fire_in_deadline_order_and_not_early() {
        let (_engine, timers) = clock();
        let (tx, rx) = mpsc::channel();
        let armed = Instant::now();
        for ms in [30u64, 5, 15] {
            let tx = tx.clone();
            timers.arm(Duration::from_millis(ms), move || tx.send((ms, armed.elapsed())).unwrap());
        }
        let fired: Vec<(u64, Duration)> = (0..3).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        assert_eq!(fired.iter().map(|f| f.0).collect::<Vec<_>>(), [5, 15, 30]);
        for (ms, after) in fired {
            assert!(after >= Duration::from_millis(ms), "a {ms} ms timer fired after {after:?}");
        }
        assert_eq!(timers.pending(), 0);
    }

    #[test]
    fn a_disarmed_timer_does_not_fire() {
        let (_engine, timers) = clock();
        let (tx, rx) = mpsc::channel::<()>();
        let key = timers.arm(Duration::from_millis(20), move || tx.send(()).unwrap());
        assert!(timers.disarm(key));
        assert!(!timers.disarm(key));
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    }
}

//! Calls taking turns and waiting, and the game's timers: the parts of a
//! session that decide when something runs on it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use tokio::sync::{Notify, watch};

use crate::locking::lock;
use crate::runtime::clock::TimerKey;

/// Pending timers one session may have at once.
pub(super) const MAX_TIMERS: usize = 64;

/// How calls on one session take turns and wait for it to change.
pub struct Waits {
    /// Tool calls take turns in arrival order (tokio's mutex is fair): two
    /// calls on one session never overtake each other, even when the first
    /// waits for a blocking thread.
    pub turn: tokio::sync::Mutex<()>,
    /// Bumped on every change; waiting calls watch it.
    pub changed: watch::Sender<u64>,
    /// Calls currently held in a wait on this session.
    pub held: AtomicU64,
    /// The latest line a channel process said on stderr, and when: waiting
    /// clients see it in their progress (a sidecar installing its engine).
    news: Mutex<Option<(Instant, Box<str>)>>,
    pub news_arrived: Notify,
}

impl Waits {
    pub(super) fn new() -> Waits {
        Waits {
            turn: tokio::sync::Mutex::new(()),
            changed: watch::channel(0).0,
            held: AtomicU64::new(0),
            news: Mutex::new(None),
            news_arrived: Notify::new(),
        }
    }

    /// Wakes waiting calls: the session changed.
    pub fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    /// Keeps a channel process's latest line and wakes the calls waiting.
    pub(super) fn tell_news(&self, line: &str) {
        *lock(&self.news) = Some((Instant::now(), line.into()));
        self.news_arrived.notify_waiters();
    }

    /// What a channel process last said on stderr, if it said it after `since`.
    pub fn news_since(&self, since: Instant) -> Option<String> {
        lock(&self.news).as_ref().filter(|(at, _)| *at >= since).map(|(_, line)| line.to_string())
    }
}

/// The game's pending timers (`host.set-timer`), by the id the guest knows
/// each by.
#[derive(Default)]
pub(super) struct Timers {
    pub pending: HashMap<u64, TimerKey>,
    /// The last id handed out.
    pub last: u64,
}

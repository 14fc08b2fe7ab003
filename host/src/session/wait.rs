//! The clock of a waiting call: a call whose guest answered provisionally is
//! held until the session changes, its deadline passes or the client cancels,
//! with progress every few seconds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Progress;
use super::instance::Session;

/// Why a held call goes on.
pub enum Held {
    Changed,
    Deadline,
    Cancelled,
}

/// The clock of one waiting call: its deadline is fixed at the first
/// provisional answer; progress goes out every 3 s.
pub struct Wait {
    started: tokio::time::Instant,
    deadline: Option<tokio::time::Instant>,
    next_progress: tokio::time::Instant,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(3);

impl Wait {
    pub fn new() -> Wait {
        let started = tokio::time::Instant::now();
        Wait { started, deadline: None, next_progress: started + PROGRESS_EVERY }
    }

    pub async fn hold(
        &mut self,
        session: &Session,
        changes: &mut watch::Receiver<u64>,
        limit: Duration,
        cancel: &CancellationToken,
        progress: Option<&Progress>,
    ) -> Held {
        let deadline = *self.deadline.get_or_insert(self.started + limit);
        // Counted while held; the guard also runs when a cancelled request drops this future.
        let _waiting = WaitGuard::new(&session.waiting);
        loop {
            tokio::select! {
                r = changes.changed() => return if r.is_ok() { Held::Changed } else { Held::Cancelled },
                () = tokio::time::sleep_until(deadline) => return Held::Deadline,
                () = cancel.cancelled() => return Held::Cancelled,
                () = tokio::time::sleep_until(self.next_progress) => {
                    if let Some(p) = progress {
                        p(self.started.elapsed().as_secs(), (deadline - self.started).as_secs());
                    }
                    self.next_progress += PROGRESS_EVERY;
                }
            }
        }
    }
}

/// Counts a call as waiting for as long as it lives.
struct WaitGuard<'a>(&'a AtomicU64);

impl<'a> WaitGuard<'a> {
    fn new(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        WaitGuard(counter)
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

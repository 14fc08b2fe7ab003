//! The clock of a waiting call: a call whose guest answered provisionally is
//! held until the session changes, its deadline passes or the client cancels,
//! with progress every few seconds.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::instance::Session;
use super::{Progress, WaitProgress};

/// Why a held call goes on.
pub enum Woken {
    Changed,
    Deadline,
    Cancelled,
}

/// The clock of one waiting call: its deadline is fixed at the first
/// provisional answer; progress goes out every 3 s, and at once when the
/// session's channel process says something new (an install under way).
pub struct Wait {
    started: tokio::time::Instant,
    deadline: Option<tokio::time::Instant>,
    next_progress: tokio::time::Instant,
    /// The process's news last reported, so each line goes out once.
    told: Option<String>,
}

const PROGRESS_EVERY: Duration = Duration::from_secs(3);

impl Wait {
    pub fn new() -> Wait {
        let started = tokio::time::Instant::now();
        Wait { started, deadline: None, next_progress: started + PROGRESS_EVERY, told: None }
    }

    pub async fn hold(
        &mut self,
        session: &Session,
        changes: &mut watch::Receiver<u64>,
        limit: Duration,
        cancel: &CancellationToken,
        progress: Option<&Progress>,
    ) -> Woken {
        let deadline = *self.deadline.get_or_insert(self.started + limit);
        loop {
            // Registered before the news is read, so no line slips between the two.
            let news_arrived = session.waits.news_arrived.notified();
            tokio::pin!(news_arrived);
            news_arrived.as_mut().enable();
            let news = session.news_since(self.started.into_std());
            if news.is_some() && news != self.told {
                self.told = news;
                self.report(deadline, progress);
            }
            tokio::select! {
                r = changes.changed() => return if r.is_ok() { Woken::Changed } else { Woken::Cancelled },
                () = tokio::time::sleep_until(deadline) => return Woken::Deadline,
                () = cancel.cancelled() => return Woken::Cancelled,
                () = &mut news_arrived => {}
                () = tokio::time::sleep_until(self.next_progress) => {
                    self.report(deadline, progress);
                    self.next_progress += PROGRESS_EVERY;
                }
            }
        }
    }

    fn report(&self, deadline: tokio::time::Instant, progress: Option<&Progress>) {
        if let Some(p) = progress {
            p(WaitProgress {
                waited_s: self.started.elapsed().as_secs(),
                limit_s: (deadline - self.started).as_secs(),
                news: self.told.clone(),
            });
        }
    }
}

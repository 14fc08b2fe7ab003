//! Group commit: writes that come while one batch is on its way to the
//! store go together in the next. The first writer to find no batch on its
//! way sends every write waiting, its own included, and hands each its
//! answer; the others wait for theirs. One write alone goes at once (no
//! thread between it and the store); under load, one round trip carries
//! many, which is what the store's CPU pays for (a request's read and
//! write cost it more than running the request).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, PoisonError};

use crate::locking::lock;

pub struct GroupCommit<W, A> {
    queue: Mutex<Queue<W, A>>,
    answered: Condvar,
}

struct Queue<W, A> {
    /// Writes not yet sent, each with its ticket.
    waiting: Vec<(u64, W)>,
    /// Answers not yet collected, by ticket.
    answers: HashMap<u64, A>,
    next: u64,
    /// A batch is on its way.
    sending: bool,
}

impl<W, A> Default for GroupCommit<W, A> {
    fn default() -> Self {
        GroupCommit {
            queue: Mutex::new(Queue { waiting: Vec::new(), answers: HashMap::new(), next: 0, sending: false }),
            answered: Condvar::new(),
        }
    }
}

impl<W, A> GroupCommit<W, A> {
    /// Sends `write` with the others waiting (`send` takes a batch and
    /// answers each of its writes, in order), and answers its answer.
    ///
    /// The thread's turn at the CPU (`crate::turns`) is given back while it
    /// waits: other requests work meanwhile, and theirs join the next batch.
    /// Holding it, at most as many writes as there are turns could ever go
    /// together (Redis's CPU per move under 100 sessions rose by half).
    pub fn submit(&self, write: W, send: impl Fn(Vec<W>) -> Vec<A>) -> A {
        crate::turns::while_waiting(|| self.submit_waiting(write, send))
    }

    fn submit_waiting(&self, write: W, send: impl Fn(Vec<W>) -> Vec<A>) -> A {
        let mut queue = lock(&self.queue);
        let ticket = queue.next;
        queue.next += 1;
        queue.waiting.push((ticket, write));
        loop {
            if let Some(answer) = queue.answers.remove(&ticket) {
                return answer;
            }
            if queue.sending {
                queue = self.answered.wait(queue).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            queue.sending = true;
            let (tickets, batch): (Vec<u64>, Vec<W>) = std::mem::take(&mut queue.waiting).into_iter().unzip();
            drop(queue);
            let answers = send(batch);
            debug_assert_eq!(answers.len(), tickets.len(), "one answer per write");
            queue = lock(&self.queue);
            queue.answers.extend(tickets.into_iter().zip(answers));
            queue.sending = false;
            self.answered.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::GroupCommit;

    #[test]
    fn each_write_gets_its_own_answer_and_writes_waiting_go_together() {
        let commit = Arc::new(GroupCommit::<u64, u64>::default());
        let batches = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..64u64)
            .map(|n| {
                let (commit, batches) = (commit.clone(), batches.clone());
                std::thread::spawn(move || {
                    let answer = commit.submit(n, |batch| {
                        batches.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        batch.iter().map(|w| w * 10).collect()
                    });
                    assert_eq!(answer, n * 10);
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let batches = batches.load(Ordering::Relaxed);
        assert!(batches < 64, "64 writers at once went in {batches} batches: none went together");
    }
}

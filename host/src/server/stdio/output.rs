//! Everything the server writes to stdout, through one queue that never
//! makes a writer wait.
//!
//! A client may write many requests before it reads any answer. If the
//! thread that reads stdin also waited for stdout to take its answers, the
//! two pipes would fill both ways and client and server would wait on each
//! other for good. So a line is written at once only as far as the pipe
//! takes it without blocking; the rest waits here in memory, and a task
//! writes it as the client reads. The reader asks `unread()` before it runs
//! a request: past `limits.max_unread_output_bytes` it refuses the request
//! with an error that says why, and past twice that it stops reading until
//! the client has read (`wait_until_read`), so memory stays bounded.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::locking::lock;

pub type Sink = Pin<Box<dyn AsyncWrite + Send>>;

/// The queue: shared by the stdin reader, tasks that answer later, and rmcp.
#[derive(Clone)]
pub struct Output(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    /// Wakes the writing task when bytes are left waiting.
    behind: Notify,
    /// Signalled whenever the task has written some of what waited.
    read: Condvar,
}

struct State {
    sink: Sink,
    /// Bytes not yet taken by stdout, in order.
    waiting: Vec<u8>,
    /// The task waits on stdout (to take more, or to flush): stdout then
    /// holds the task's wake-up, and only the task may look at it.
    task_waits: bool,
    /// stdout was closed or failed: the client is gone; lines are dropped.
    gone: bool,
}

impl Output {
    /// The queue over `sink`, with its writing task on `rt`.
    pub fn start(sink: Sink, rt: &Handle) -> Output {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { sink, waiting: Vec::new(), task_waits: false, gone: false }),
            behind: Notify::new(),
            read: Condvar::new(),
        });
        rt.spawn(write_behind(shared.clone()));
        Output(shared)
    }

    /// Sends one line (a newline is added). Writes what stdout takes now;
    /// never waits.
    pub fn send(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let mut s = lock(&self.0.state);
        if s.gone {
            return;
        }
        if !s.waiting.is_empty() || s.task_waits {
            // Behind others: the writing task owns stdout's readiness now.
            s.waiting.extend_from_slice(&line);
            return;
        }
        // The task is not waiting on stdout, so a look without a waker
        // cannot take its wake-up away.
        let mut cx = Context::from_waker(Waker::noop());
        let mut written = 0;
        while written < line.len() {
            match s.sink.as_mut().poll_write(&mut cx, &line[written..]) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => {
                    s.gone = true;
                    self.0.read.notify_all();
                    return;
                }
                Poll::Ready(Ok(n)) => written += n,
                Poll::Pending => break,
            }
        }
        let flushed = written == line.len() && matches!(s.sink.as_mut().poll_flush(&mut cx), Poll::Ready(Ok(())));
        if !flushed {
            s.waiting.extend_from_slice(&line[written..]);
            self.0.behind.notify_one();
        }
    }

    /// Bytes of answers the client has not taken yet.
    pub fn unread(&self) -> usize {
        lock(&self.0.state).waiting.len()
    }

    /// Blocks this (non-runtime) thread until at most `bytes` wait, or the
    /// client is gone.
    pub fn wait_until_read(&self, bytes: usize) {
        let mut s = lock(&self.0.state);
        while s.waiting.len() > bytes && !s.gone {
            s = self.0.read.wait_timeout(s, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Resolves when everything sent has been written and flushed.
    pub async fn flushed(&self) -> io::Result<()> {
        poll_fn(|cx| write_waiting(&self.0, cx)).await
    }
}

/// The task: writes what waits whenever some does, as stdout takes it.
async fn write_behind(shared: Arc<Shared>) {
    loop {
        shared.behind.notified().await;
        if poll_fn(|cx| write_waiting(&shared, cx)).await.is_err() {
            return;
        }
    }
}

fn write_waiting(shared: &Shared, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
    let mut s = lock(&shared.state);
    let s = &mut *s;
    if s.gone {
        return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
    }
    let mut written = 0;
    let result = loop {
        if written == s.waiting.len() {
            break s.sink.as_mut().poll_flush(cx);
        }
        match s.sink.as_mut().poll_write(cx, &s.waiting[written..]) {
            Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(n)) => written += n,
            other => break other.map_ok(|_| ()),
        }
    };
    s.waiting.drain(..written);
    s.task_waits = result.is_pending();
    if written > 0 {
        // Free what a burst left behind once the client has caught up.
        if s.waiting.is_empty() && s.waiting.capacity() > 1 << 20 {
            s.waiting = Vec::new();
        }
        shared.read.notify_all();
    }
    if let Poll::Ready(Err(_)) = &result {
        s.gone = true;
        s.waiting = Vec::new();
        shared.read.notify_all();
    }
    result
}

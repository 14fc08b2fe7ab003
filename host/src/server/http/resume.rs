//! Call streams a client can resume (SEP-1699, protocol 2025-11-25 on).
//!
//! A tool call answers on an SSE stream. For a session that negotiated
//! 2025-11-25 or later, the stream opens with a priming event (an event id,
//! no data, a retry hint) and every later event carries an id
//! `ludus-<stream>-<n>`. When the connection drops the call goes on; the
//! client reconnects with `GET` and `Last-Event-ID`, gets the events it
//! missed, then the rest. Older clients get none of this: they read an
//! event without data as a broken message.
//!
//! What is kept: a session's last [`KEPT`] call streams, each for
//! [`WINDOW`] after its reader left. A call nobody resumes within the
//! window is cancelled, as a call whose client went away always is.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::Stream;

use super::SessionId;
use super::events::{Event, Events};
use crate::locking::lock;

/// How long a client waits before it reconnects (the SSE `retry` field).
pub const RETRY: Duration = Duration::from_secs(1);
/// How long a stream stays resumable after its reader left.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Call streams kept per session; the oldest goes first.
pub const KEPT: usize = 8;

/// The resumable streams of every session that can resume them.
#[derive(Default)]
pub struct Resumable {
    sessions: Mutex<HashMap<SessionId, Streams>>,
}

#[derive(Default)]
struct Streams {
    next: u64,
    kept: VecDeque<(u64, Arc<Mutex<Kept>>)>,
}

/// One call's stream: the call while it runs, and every event it sent.
struct Kept {
    call: Option<Events>,
    /// Event `n` (from 1) is `sent[n - 1]`; the priming event is 0.
    sent: Vec<Event>,
    /// Which reader reads it now: a resume takes it over from the last.
    reader: u64,
    /// When its reader left, if none reads it now.
    left_at: Option<Instant>,
}

fn event_id(stream: u64, n: usize) -> String {
    format!("ludus-{stream}-{n}")
}

fn parse_event_id(id: &str) -> Option<(u64, usize)> {
    let (stream, n) = id.strip_prefix("ludus-")?.split_once('-')?;
    Some((stream.parse().ok()?, n.parse().ok()?))
}

impl Resumable {
    /// Session `id` negotiated a protocol version whose clients resume streams.
    pub fn admit(&self, id: &SessionId) {
        lock(&self.sessions).entry(id.clone()).or_default();
    }

    /// Whether session `id`'s client can resume its call streams.
    pub fn holds(&self, id: &SessionId) -> bool {
        lock(&self.sessions).contains_key(id)
    }

    /// The session closed: its kept calls are cancelled.
    pub fn forget(&self, id: &SessionId) {
        lock(&self.sessions).remove(id);
    }

    /// A call's stream, resumable when the session is; None when it is not.
    pub fn open<S>(&self, id: &SessionId, call: S) -> Result<Reader, S>
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        let mut sessions = lock(&self.sessions);
        let Some(streams) = sessions.get_mut(id) else { return Err(call) };
        let stream = streams.next;
        streams.next += 1;
        let kept = Arc::new(Mutex::new(Kept { call: Some(Box::pin(call)), sent: Vec::new(), reader: 0, left_at: None }));
        if streams.kept.len() == KEPT {
            streams.kept.pop_front();
        }
        streams.kept.push_back((stream, kept.clone()));
        Ok(Reader { kept, stream, me: 0, next: 0, primed: false })
    }

    /// Takes over the stream `last_event_id` came from, after that event.
    pub fn resume(&self, id: &SessionId, last_event_id: &str) -> Option<Reader> {
        let (stream, n) = parse_event_id(last_event_id)?;
        let sessions = lock(&self.sessions);
        let kept = sessions.get(id)?.kept.iter().find(|(s, _)| *s == stream)?.1.clone();
        let me = {
            let mut k = lock(&kept);
            if n > k.sent.len() {
                return None;
            }
            k.reader += 1;
            k.left_at = None;
            k.reader
        };
        Some(Reader { kept, stream, me, next: n, primed: true })
    }

    /// Lets go of streams whose reader left more than [`WINDOW`] ago.
    pub fn sweep(&self) {
        let now = Instant::now();
        let mut sessions = lock(&self.sessions);
        for streams in sessions.values_mut() {
            streams.kept.retain(|(_, k)| lock(k).left_at.is_none_or(|t| now - t < WINDOW));
        }
    }
}

/// Reads a kept stream for one connection, until the call ends or another
/// connection resumes it.
pub struct Reader {
    kept: Arc<Mutex<Kept>>,
    stream: u64,
    me: u64,
    /// The index in `sent` of the next event to send.
    next: usize,
    primed: bool,
}

impl Stream for Reader {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if !self.primed {
            self.primed = true;
            return Poll::Ready(Some(Event::priming(event_id(self.stream, 0), RETRY)));
        }
        let this = &mut *self;
        let mut k = lock(&this.kept);
        if k.reader != this.me {
            return Poll::Ready(None);
        }
        if let Some(event) = k.sent.get(this.next) {
            this.next += 1;
            return Poll::Ready(Some(event.clone()));
        }
        let Some(call) = k.call.as_mut() else { return Poll::Ready(None) };
        match call.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                k.call = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(mut event)) => {
                event.id = Some(event_id(this.stream, k.sent.len() + 1));
                k.sent.push(event.clone());
                this.next = k.sent.len();
                Poll::Ready(Some(event))
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut k = lock(&self.kept);
        if k.reader == self.me {
            k.left_at = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use rmcp::model::ServerJsonRpcMessage;
    use serde_json::json;

    fn note(n: u32) -> Event {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": n}});
        Event::of(serde_json::from_value::<ServerJsonRpcMessage>(progress).unwrap())
    }

    #[tokio::test]
    async fn a_left_stream_is_resumed_after_the_last_event_seen_and_a_second_resume_takes_it_over() {
        let r = Resumable::default();
        let session: SessionId = "s".into();
        assert!(r.open(&session, futures_util::stream::iter([note(1)])).is_err(), "not admitted: not resumable");
        r.admit(&session);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let call = futures_util::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|m| (m, rx)) });
        let mut first = r.open(&session, call).ok().unwrap();
        let priming = first.next().await.unwrap();
        assert_eq!((priming.id.as_deref(), priming.message.is_none(), priming.retry), (Some("ludus-0-0"), true, Some(RETRY)));
        tx.send(note(1)).unwrap();
        tx.send(note(2)).unwrap();
        assert_eq!(first.next().await.unwrap().id.as_deref(), Some("ludus-0-1"));
        assert_eq!(first.next().await.unwrap().id.as_deref(), Some("ludus-0-2"));
        drop(first);

        // The client saw event 1 only: event 2 comes again, then what follows.
        let mut second = r.resume(&session, "ludus-0-1").unwrap();
        assert_eq!(second.next().await.unwrap().id.as_deref(), Some("ludus-0-2"));
        tx.send(note(3)).unwrap();
        let mut third = r.resume(&session, "ludus-0-2").unwrap();
        assert!(second.next().await.is_none(), "taken over by the third reader");
        assert_eq!(third.next().await.unwrap().id.as_deref(), Some("ludus-0-3"));
        drop(tx);
        assert!(third.next().await.is_none(), "the call ended");
        assert!(r.resume(&session, "ludus-0-9").is_none(), "an event never sent");
        assert!(r.resume(&session, "ludus-7-0").is_none() && r.resume(&session, "0").is_none());
        r.forget(&session);
        assert!(r.resume(&session, "ludus-0-1").is_none());
    }
}

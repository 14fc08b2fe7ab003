//! What the server sends an MCP session outside any request (list
//! changes, resource updates), read by the session's standalone GET
//! stream.
//!
//! As rmcp's session worker did:
//! - one GET stream reads at a time; a second GET while it is open gets a
//!   stream that stays open and is sent nothing, so that two readers of one
//!   client (two tabs, a reconnect racing the old stream) do not take the
//!   stream from each other in turn; once the reader's stream is gone, the
//!   next GET reads;
//! - every event has an id (`ludus-out-<n>`, apart from a call stream's
//!   `ludus-<stream>-<n>`), and a GET with `Last-Event-ID` is first sent
//!   the kept events after it. The last `KEPT` events are kept.
//!
//! What is sent while no one reads is kept (for a reader that resumes) and
//! otherwise dropped: a notification is news, not an answer.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures_util::Stream;
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::mpsc;

use super::events::Event;
use crate::locking::lock;

/// Events kept for a reader that resumes; also how far a reader may fall
/// behind before it is let go (it can come back with `Last-Event-ID`).
const KEPT: usize = 64;

/// Idle streams kept open beside the reader's (rmcp's limit): past it,
/// the oldest is closed.
const MAX_IDLE: usize = 32;

#[derive(Default)]
pub struct Outbox {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The number of the next event.
    next: u64,
    kept: VecDeque<(u64, Event)>,
    /// The GET stream that reads.
    reader: Option<mpsc::Sender<Event>>,
    /// GET streams opened while the reader's was open, held so that they
    /// stay open.
    idle: Vec<mpsc::Sender<Event>>,
}

impl Outbox {
    /// Sends `message` to the reader, if one reads, and keeps it.
    pub fn send(&self, message: ServerJsonRpcMessage) {
        let mut state = lock(&self.state);
        let n = state.next;
        state.next += 1;
        let event = Event::numbered(format!("ludus-out-{n}"), message);
        if state.kept.len() == KEPT {
            state.kept.pop_front();
        }
        state.kept.push_back((n, event.clone()));
        // A reader that fell `KEPT` events behind (or left) is let go.
        if state.reader.as_ref().is_some_and(|reader| reader.try_send(event).is_err()) {
            state.reader = None;
        }
    }

    /// A GET's stream: the reader's when no other reads, first sent the
    /// kept events after event `last` (its `Last-Event-ID`, if it has one
    /// of this outbox); an idle one otherwise.
    pub fn listen(&self, last: Option<u64>) -> impl Stream<Item = Event> + Send + 'static + use<> {
        let (tx, mut rx) = mpsc::channel(KEPT);
        let mut state = lock(&self.state);
        state.idle.retain(|idle| !idle.is_closed());
        if state.reader.as_ref().is_some_and(|reader| !reader.is_closed()) {
            if state.idle.len() >= MAX_IDLE {
                state.idle.remove(0);
            }
            state.idle.push(tx);
        } else {
            if let Some(last) = last {
                for (_, event) in state.kept.iter().filter(|(n, _)| *n > last) {
                    // Room for every kept event: the channel holds as many.
                    let _ = tx.try_send(event.clone());
                }
            }
            state.reader = Some(tx);
        }
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}

/// The number of an outbox event's id; None for any other id.
pub fn event_number(id: &str) -> Option<u64> {
    id.strip_prefix("ludus-out-")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use rmcp::model::{ServerNotification, ToolListChangedNotification};

    use super::*;

    fn news() -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::notification(ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default()))
    }

    async fn next_id(stream: &mut (impl Stream<Item = Event> + Unpin)) -> Option<String> {
        let next = tokio::time::timeout(std::time::Duration::from_millis(100), stream.next()).await;
        next.ok().flatten().and_then(|e| e.id)
    }

    #[tokio::test]
    async fn one_stream_reads_a_second_idles_and_a_resumed_one_gets_what_it_missed() {
        let outbox = Outbox::default();
        outbox.send(news());
        let mut first = Box::pin(outbox.listen(None));
        outbox.send(news());
        assert_eq!(next_id(&mut first).await.as_deref(), Some("ludus-out-1"), "sent before it listened: not sent");
        let mut second = Box::pin(outbox.listen(None));
        outbox.send(news());
        assert_eq!(next_id(&mut first).await.as_deref(), Some("ludus-out-2"));
        assert_eq!(next_id(&mut second).await, None, "the second idles");
        drop(first);
        outbox.send(news());
        let mut resumed = Box::pin(outbox.listen(event_number("ludus-out-1")));
        assert_eq!(next_id(&mut resumed).await.as_deref(), Some("ludus-out-2"));
        assert_eq!(next_id(&mut resumed).await.as_deref(), Some("ludus-out-3"));
        outbox.send(news());
        assert_eq!(next_id(&mut resumed).await.as_deref(), Some("ludus-out-4"));
        assert_eq!(event_number("ludus-0-4"), None);
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_let_go() {
        let outbox = Outbox::default();
        let mut slow = Box::pin(outbox.listen(None));
        for _ in 0..=KEPT {
            outbox.send(news());
        }
        let mut read = 0;
        while next_id(&mut slow).await.is_some() {
            read += 1;
        }
        assert_eq!(read, KEPT, "its stream ends after what it held");
        let mut back = Box::pin(outbox.listen(Some(KEPT as u64 - 1)));
        assert_eq!(next_id(&mut back).await, Some(format!("ludus-out-{KEPT}")), "and it can resume");
    }
}

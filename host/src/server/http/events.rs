//! How the gate answers a call on the direct lane, for a session's client
//! and a stateless one alike: as plain JSON when it sends nothing before
//! its answer (`answered_alone`), else on an event stream the gate writes
//! (`CallEvents`): what the call sends first (progress, the game's log
//! lines and questions to its client), then the answer.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use http::{HeaderValue, header};
use http_body_util::BodyExt;
use rmcp::model::{ClientRequest, JsonRpcRequest, ServerJsonRpcMessage};
use sse_stream::{KeepAlive, Sse, SseBody, Timer};
use tokio_util::sync::CancellationToken;

use super::Response;
use crate::mcp::{DirectAnswer, Ludus, Notify, Peer};
use crate::session::Caller;

/// The media type of an event stream.
pub const EVENT_STREAM: &str = "text/event-stream";

/// One event of a stream the gate writes: a message (none: a resumable
/// stream's priming event), with its id and retry hint when it has them.
#[derive(Clone, Debug)]
pub struct Event {
    pub id: Option<String>,
    pub message: Option<Arc<ServerJsonRpcMessage>>,
    pub retry: Option<Duration>,
}

impl Event {
    /// `message`, without an id.
    pub fn of(message: ServerJsonRpcMessage) -> Event {
        Event { id: None, message: Some(Arc::new(message)), retry: None }
    }

    /// `message` as event `id`, which a client may resume after.
    pub fn numbered(id: String, message: ServerJsonRpcMessage) -> Event {
        Event { id: Some(id), ..Event::of(message) }
    }

    /// The first event of a resumable stream: its id, no data, and how
    /// long a client waits before it asks again.
    pub fn priming(id: String, retry: Duration) -> Event {
        Event { id: Some(id), message: None, retry: Some(retry) }
    }
}

/// How the gate answered a request.
pub enum Answered {
    /// Plain JSON: the JSON-RPC response, or none (the call was cancelled).
    Json(Option<Vec<u8>>),
    /// An event stream: progress, log lines and questions, then the answer.
    Events(Events),
}

/// A call's events, in order, as they come.
pub type Events = Pin<Box<dyn Stream<Item = Event> + Send>>;

/// `request` of transport session `session` (empty: none) run on the
/// direct lane and answered as plain JSON, cancelled by `ct`. Only a call
/// that sends nothing before its answer is answered so
/// (`Ludus::answers_alone`): anything it sent would be dropped. Dropping the future (the client went
/// away) cancels the call, and a cancelled call has no answer.
pub fn answered_alone(
    ludus: &Ludus,
    caller: Caller,
    session: &str,
    request: JsonRpcRequest<ClientRequest>,
    peer: Peer,
    ct: CancellationToken,
) -> impl Future<Output = Answered> + Send + use<> {
    let notify: Notify = Arc::new(|m| tracing::debug!("a message of a call answered as JSON is dropped: {m:?}"));
    let answer = ludus.answer_directly(Some(caller), session, request, ct.clone(), notify);
    let (cancelled, cancel_if_dropped) = (ct.clone(), ct.drop_guard());
    async move {
        let _cancel_if_dropped = cancel_if_dropped;
        let answer = answer.await;
        // MCP: a cancelled request gets no answer.
        Answered::Json((!cancelled.is_cancelled()).then(|| answer.into_line(peer)))
    }
}

/// Progress notifications (and the game's log lines and questions to the
/// client) while the call runs, then its answer, then the end.
pub struct CallEvents {
    progress: tokio::sync::mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    answer: Option<DirectAnswer>,
    /// The answer, once made, held back while messages sent before it are still queued.
    made: Option<ServerJsonRpcMessage>,
    /// Whom the answer is shaped for.
    peer: Peer,
    /// Cancelled by `notifications/cancelled`: the stream then ends without an answer.
    cancelled: CancellationToken,
    _cancel: tokio_util::sync::DropGuard,
}

impl CallEvents {
    /// `request` of transport session `session` (empty: none), run on the
    /// direct lane as its events, cancelled by `ct`. Dropping the stream
    /// (the client went away) cancels the call.
    pub fn of(
        ludus: &Ludus,
        caller: Caller,
        session: &str,
        request: JsonRpcRequest<ClientRequest>,
        peer: Peer,
        ct: CancellationToken,
    ) -> CallEvents {
        let (progress_tx, progress_rx) = tokio::sync::mpsc::unbounded_channel::<ServerJsonRpcMessage>();
        let notify = Arc::new(move |m| {
            let _ = progress_tx.send(m);
        });
        let answer = ludus.answer_directly(Some(caller), session, request, ct.clone(), notify);
        CallEvents { progress: progress_rx, answer: Some(answer), made: None, peer, cancelled: ct.clone(), _cancel: ct.drop_guard() }
    }
}

impl Stream for CallEvents {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        // What the call sent before it answered goes out before its answer.
        // Once the answer is made, the queue is read without waiting: a
        // `poll_recv` may say Pending when the task has used its share of
        // the runtime's time, and its messages would be lost with the stream.
        if self.made.is_some() {
            if let Ok(m) = self.progress.try_recv() {
                return Poll::Ready(Some(Event::of(m)));
            }
            let answer = self.made.take().expect("checked above");
            // MCP: a cancelled request is not answered (the client has forgotten it).
            return Poll::Ready((!self.cancelled.is_cancelled()).then(|| Event::of(answer)));
        }
        if self.answer.is_none() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(m)) = self.progress.poll_recv(cx) {
            return Poll::Ready(Some(Event::of(m)));
        }
        match self.answer.as_mut().expect("checked above").as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(m) => {
                self.answer = None;
                let peer = self.peer;
                self.made = Some(m.into_message(peer));
                self.poll_next(cx)
            }
        }
    }
}

/// How long an event stream stays silent before it is sent a comment: a
/// proxy in front (nginx's `proxy_read_timeout` is 60 s by default) would
/// otherwise close a stream that waits long (a session's standalone
/// stream, a call waiting for the other side's move).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Events as the response's body: each message one event, its data the
/// message's JSON, with its event id and retry hint when it has them (a
/// resumable stream's); a priming event has empty data; a comment after
/// `KEEP_ALIVE` without an event.
pub fn event_stream(events: impl Stream<Item = Event> + Send + 'static) -> Response {
    event_stream_kept_alive(events, KEEP_ALIVE)
}

fn event_stream_kept_alive(events: impl Stream<Item = Event> + Send + 'static, keep_alive: Duration) -> Response {
    let frames = events.map(|m| {
        let data = m.message.as_ref().map_or(String::new(), |m| serde_json::to_string(m).expect("a JSON-RPC message is JSON"));
        let retry = m.retry.map(|r| r.as_millis() as u64);
        Ok::<_, Infallible>(Sse { event: None, data: Some(data), id: m.id, retry })
    });
    let body = SseBody::new(frames).with_keep_alive::<Tick>(KeepAlive::new().interval(keep_alive));
    let mut response = http::Response::new(body.boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies such as nginx pass each event on as it comes.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The keep-alive's timer, on tokio's clock.
struct Tick(Pin<Box<tokio::time::Sleep>>);

impl Future for Tick {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Timer for Tick {
    fn reset(mut self: Pin<&mut Self>, at: std::time::Instant) {
        self.0.as_mut().reset(tokio::time::Instant::from_std(at));
    }

    fn from_duration(after: Duration) -> Tick {
        Tick(Box::pin(tokio::time::sleep(after)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body;

    #[tokio::test]
    async fn a_silent_event_stream_is_sent_a_comment_every_keep_alive() {
        let keep_alive = Duration::from_millis(200);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
        let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut body = std::pin::pin!(event_stream_kept_alive(events, keep_alive).into_body());
        let mut next = async || std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await.map(|f| f.unwrap().into_data().unwrap());
        let start = tokio::time::Instant::now();
        let comment = next().await.expect("a comment once it is due");
        assert_eq!(&comment[..], b":\n\n");
        assert!(start.elapsed() >= keep_alive, "not before it is due: {:?}", start.elapsed());
        drop(tx);
        assert!(next().await.is_none(), "the stream ends with its events");
    }
}

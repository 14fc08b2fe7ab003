//! MCP over stdio: one JSON-RPC message per line.
//!
//! Our own transport rather than rmcp's, for two reasons:
//! - A line that is not a valid request gets the answer JSON-RPC prescribes
//!   (`-32700` parse error, `-32600` invalid request with the request's `id`
//!   when it was readable, `-32602` for a known method with unusable params).
//!   rmcp's transport answers nothing to an unparsable line, so the client
//!   waits for its own timeout, and reads bad params as an unknown method.
//! - Every request takes the direct lane (`Ludus::answer_directly`), and
//!   notifications and a client's answers to a game's questions are taken
//!   there too, on a reader thread of our own (rmcp runs no service here):
//!   it sleeps in poll(2) on stdin (the kernel wakes it, no reactor in
//!   between; `busy_poll` first watches for the next request after an
//!   answer), runs each call as it reads it, in arrival order, guest included, and writes its answer before
//!   reading on. On that thread the guest needs no `block_in_place` (which
//!   handed the worker's core, reactor and all, to another thread on every
//!   call and back): outside the runtime's workers, WASI's blocking calls may
//!   block. A call that cannot finish at once (it waits for the game to
//!   change, or its tool is slow and runs on a blocking thread) moves to a
//!   task of its own and answers when done, so it holds up nothing behind it.
//!   Quick calls are therefore answered in request order, with no task
//!   spawned.
//! - Reading never waits on writing: answers go out through `output`, which
//!   writes what stdout takes at once and keeps the rest for a task, so a
//!   client that writes thousands of requests before reading does not wedge
//!   us. Writes stay on the runtime's reactor when stdout is a pipe or
//!   socket (as every MCP client starts us): tokio's `stdout()` would hand
//!   each write to a blocking thread.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use super::busy_poll::{Doorbell, Pace, Watch};
use super::jsonrpc::{classify, error_reply};
use crate::locking::lock;
use crate::mcp::{DirectAnswer, Ludus, Notify, Peer, STDIO_SESSION};
use output::{Output, Sink};

mod output;

type Input = std::io::BufReader<Stdin>;

/// The longest line read; a longer one is refused and skipped, not buffered.
const MAX_LINE: usize = 64 << 20;

/// The stdio transport while it serves: done when stdin ends.
pub struct Stdio {
    ended: tokio::sync::oneshot::Receiver<()>,
    output: Output,
}

impl Stdio {
    /// Starts reading stdin on a thread of its own; `unread_limit` is
    /// `limits.max_unread_output_bytes`, `watch` `limits.busy_poll_us`.
    pub fn start(ludus: Ludus, unread_limit: usize, watch: Duration) -> std::io::Result<Stdio> {
        let rt = Handle::current();
        let output = Output::start(sink()?, &rt);
        let bell = Arc::new(Doorbell::new()?);
        let input = std::io::BufReader::with_capacity(
            64 << 10,
            Stdin {
                file: std::io::stdin().as_fd().try_clone_to_owned()?.into(),
                answered: false,
                bell: bell.clone(),
                watch: Watch::new(watch),
                pace: Pace::default(),
            },
        );
        let notify = notifier(output.clone());
        let (end, ended) = tokio::sync::oneshot::channel();
        let reader = Reader {
            input,
            output: output.clone(),
            unread_limit,
            line: Vec::new(),
            // What is sent outside any request (list changes, resource updates) goes straight out too.
            ludus: ludus.with_outbox(notify.clone()),
            running: Default::default(),
            notify,
            rt,
            bell,
        };
        std::thread::Builder::new().name("ludus-stdin".into()).spawn(move || {
            reader.run();
            let _ = end.send(());
        })?;
        Ok(Stdio { ended, output })
    }

    /// Serves until stdin ends (the client went away), then writes out what
    /// is left to write.
    pub async fn served(self) -> std::io::Result<()> {
        let _ = self.ended.await;
        self.output.flushed().await
    }
}

/// Direct-lane calls that went on in tasks of their own, by request id, so
/// `notifications/cancelled` (or the end of stdin) can stop them.
type Running = Arc<std::sync::Mutex<HashMap<String, CancellationToken>>>;

struct Reader {
    input: Input,
    output: Output,
    unread_limit: usize,
    line: Vec<u8>,
    ludus: Ludus,
    running: Running,
    /// Where direct-lane calls send their progress (made once, shared).
    notify: Notify,
    rt: Handle,
    /// Rung when a call that moved to a task has written its answer.
    bell: Arc<Doorbell>,
}

impl Reader {
    fn run(mut self) {
        // The runtime's handle is current here (spawning, timers, I/O
        // registration work), but this thread is not one of its workers.
        let _in_runtime = self.rt.enter();
        crate::runtime::is_client_reader();
        while let Some(message) = self.next_message() {
            match message {
                JsonRpcMessage::Request(request) if self.output.unread() > self.unread_limit => self.refuse_while_unread(request.id),
                JsonRpcMessage::Request(request) => {
                    let (ct, id) = (CancellationToken::new(), request.id.to_string());
                    let answer = self.ludus.answer_directly(None, STDIO_SESSION, request, ct.clone(), self.notify.clone());
                    self.run_direct(answer, ct, id);
                }
                JsonRpcMessage::Notification(n) => match n.notification {
                    ClientNotification::InitializedNotification(_) => self.ludus.initialized(),
                    ClientNotification::CancelledNotification(c) => self.cancel_running(c.params.request_id),
                    // The client's roots or progress: nothing here depends on them.
                    _ => {}
                },
                // The client answering a game's question (sampling, elicitation).
                answer => {
                    if !self.ludus.clients().answered(STDIO_SESSION, &answer) {
                        tracing::debug!("stdio: an answer to no question of ours: {answer:?}");
                    }
                }
            }
        }
        // Stdin ended: the client is gone, and so is the point of its calls.
        for (_, ct) in lock(&self.running).drain() {
            ct.cancel();
        }
        self.ludus.close();
    }

    /// A request that arrives while the client leaves too many answers
    /// unread is not run: it is refused, and the client can send it again.
    fn refuse_while_unread(&self, id: rmcp::model::RequestId) {
        let unread = self.output.unread();
        tracing::warn!(unread, limit = self.unread_limit, "stdio: the client is not reading its answers; refusing requests");
        let why = format!(
            "not run: {unread} bytes of earlier answers wait for this client to read them (limits.max_unread_output_bytes \
             is {}); read them, then send this request again",
            self.unread_limit
        );
        self.output.send(error_reply(id, -32000, why));
    }

    fn cancel_running(&self, request: Option<rmcp::model::RequestId>) {
        if let Some(ct) = request.and_then(|id| lock(&self.running).remove(&id.to_string())) {
            ct.cancel();
        }
    }

    /// The next JSON-RPC message; lines that are not one are answered here.
    fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Memory stays bounded: a client that goes on writing without
            // reading is not read either (refusals are answers too).
            self.output.wait_until_read(self.unread_limit.saturating_mul(2));
            self.line.clear();
            let n = (&mut self.input).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut self.line).ok()?;
            if n == 0 {
                return None;
            }
            if self.line.len() > MAX_LINE && !self.line.ends_with(b"\n") {
                self.skip_rest_of_line()?;
                self.output.send(error_reply(Value::Null, -32600, format!("a message has at most {MAX_LINE} bytes")));
                continue;
            }
            let text = self.line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            match classify(text) {
                Ok(message) => return Some(message),
                Err(refusal) if !refusal.notification => self.output.send(refusal.reply),
                Err(_) => {}
            }
        }
    }

    fn skip_rest_of_line(&mut self) -> Option<()> {
        loop {
            self.line.clear();
            let n = (&mut self.input).take(1 << 20).read_until(b'\n', &mut self.line).ok()?;
            if n == 0 {
                return None;
            }
            if self.line.ends_with(b"\n") {
                return Some(());
            }
        }
    }

    /// Runs a direct-lane call as far as it goes now, on this thread; answers
    /// it if done, else lets it finish in a task of its own.
    fn run_direct(&mut self, mut answer: DirectAnswer, ct: CancellationToken, id: String) {
        // Polled here, not inside `block_on`: the guest's blocking WASI calls
        // enter the runtime themselves, which they may not do inside it. A
        // future that is not done moves to a task, which polls it with a real waker.
        if let Poll::Ready(answer) = answer.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            self.output.send(answer.into_line(Peer::Legacy));
            self.input.get_mut().answered = true;
            return;
        }
        let (output, running, bell) = (self.output.clone(), self.running.clone(), self.bell.clone());
        lock(&running).insert(id.clone(), ct.clone());
        self.rt.spawn(async move {
            let answer = answer.await;
            lock(&running).remove(&id);
            // A cancelled request gets no answer (MCP: the client has forgotten it).
            if !ct.is_cancelled() {
                // Rung first: the reader's wake-up overlaps the write and the
                // client's, so it is watching when the next request comes.
                bell.ring();
                output.send(answer.into_line(Peer::Legacy));
            }
        });
    }
}

/// Progress of a direct-lane call goes straight out.
fn notifier(output: Output) -> Notify {
    Arc::new(move |message| send_message(&output, &message))
}

/// Stdin, read when poll(2) says it has input (a socket that a client
/// shares between stdin and stdout is non-blocking for the writer's sake).
/// The reader sleeps on stdin and a bell, rung when a call it handed to a
/// task has been answered.
struct Stdin {
    file: std::fs::File,
    /// The client was just answered: its next request is likely on its way,
    /// and worth watching for before the thread sleeps (`busy_poll`).
    answered: bool,
    /// Rung by a task that wrote its answer: then the reader watches too,
    /// since the client answered last is the one most likely to send next.
    bell: Arc<Doorbell>,
    watch: Watch,
    pace: Pace,
}

impl Read for Stdin {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let stdin = libc::pollfd { fd: self.file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            let woken = self.watch.wait_for(stdin, &self.bell, std::mem::take(&mut self.answered), &mut self.pace)?;
            self.answered = woken.bell;
            if !woken.input {
                continue;
            }
            match self.file.read(buf) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) => {}
                other => return other,
            }
        }
    }
}

fn sink() -> std::io::Result<Sink> {
    let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd) {
        Kind::Pipe => Box::pin(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
        Kind::Socket => Box::pin(unix_stream(fd)?),
        Kind::Other => Box::pin(tokio::io::stdout()),
    })
}

enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> Kind {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::File::from(fd.try_clone().expect("dup of a valid fd")).metadata() else { return Kind::Other };
    let t = meta.file_type();
    if t.is_fifo() {
        Kind::Pipe
    } else if t.is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    }
}

/// Node.js clients (libuv) give their children Unix socket pairs, not pipes.
fn unix_stream(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

fn send_message(output: &Output, message: &impl serde::Serialize) {
    match serde_json::to_vec(message) {
        Ok(line) => output.send(line),
        Err(e) => tracing::error!("cannot write a message as JSON: {e}"),
    }
}

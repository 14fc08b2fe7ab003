//! MCP over stdio: one JSON-RPC message per line.
//!
//! Our own transport rather than rmcp's, for two reasons:
//! - A line that is not a valid request gets the answer JSON-RPC prescribes
//!   (`-32700` parse error, `-32600` invalid request with the request's `id`
//!   when it was readable, `-32602` for a known method with unusable params).
//!   rmcp's transport answers nothing to an unparsable line, so the client
//!   waits for its own timeout, and reads bad params as an unknown method.
//! - Reads and writes stay on the runtime's workers when stdin and stdout are
//!   pipes or sockets (as every MCP client starts us): tokio's `stdin()` and
//!   `stdout()` hand each read and write to a blocking thread, a thread hop
//!   per message in each direction.

use std::future::Future;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::jsonrpc::{classify, error_reply};

type Reader = BufReader<Pin<Box<dyn AsyncRead + Send>>>;
type Writer = Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>;

/// The longest line read; a longer one is refused and skipped, not buffered.
const MAX_LINE: usize = 64 << 20;

pub struct Stdio {
    input: Reader,
    output: Writer,
    line: Vec<u8>,
}

impl Stdio {
    pub fn new() -> std::io::Result<Stdio> {
        Ok(Stdio { input: BufReader::with_capacity(64 << 10, reader()?), output: Arc::new(Mutex::new(writer()?)), line: Vec::new() })
    }
}

/// Stdin as a non-blocking pipe or socket on the runtime's reactor; anything
/// else (a terminal, a file) through tokio's blocking-thread stdin.
fn reader() -> std::io::Result<Pin<Box<dyn AsyncRead + Send>>> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd) {
        Kind::Pipe => Box::pin(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
        Kind::Socket => Box::pin(unix_stream(fd)?),
        Kind::Other => Box::pin(tokio::io::stdin()),
    })
}

fn writer() -> std::io::Result<Pin<Box<dyn AsyncWrite + Send>>> {
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

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        let line = serde_json::to_vec(&item).map_err(std::io::Error::other);
        async move { write_line(&output, line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.line.clear();
            let n = (&mut self.input).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut self.line).await.ok()?;
            if n == 0 {
                return None;
            }
            if self.line.len() > MAX_LINE && !self.line.ends_with(b"\n") {
                self.skip_rest_of_line().await?;
                let reply = error_reply(Value::Null, -32600, format!("a message has at most {MAX_LINE} bytes"));
                let _ = write_line(&self.output, reply).await;
                continue;
            }
            let text = self.line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            match classify(text) {
                Ok(message) => return Some(message),
                Err(refusal) if !refusal.notification => {
                    if write_line(&self.output, refusal.reply).await.is_err() {
                        return None;
                    }
                }
                Err(_) => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.lock().await.flush().await
    }
}

impl Stdio {
    async fn skip_rest_of_line(&mut self) -> Option<()> {
        loop {
            self.line.clear();
            let n = (&mut self.input).take(1 << 20).read_until(b'\n', &mut self.line).await.ok()?;
            if n == 0 {
                return None;
            }
            if self.line.ends_with(b"\n") {
                return Some(());
            }
        }
    }
}

async fn write_line(output: &Writer, mut line: Vec<u8>) -> std::io::Result<()> {
    line.push(b'\n');
    let mut out = output.lock().await;
    out.write_all(&line).await?;
    out.flush().await
}

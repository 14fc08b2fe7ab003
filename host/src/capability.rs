//! What a plugin may reach: the `ludus:plugin/host` interface and captured
//! guest output. Each import is a short, non-blocking step; anything that
//! waits (timers, waits) is only recorded here and carried out by the session.

use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::runtime::HostState;
use crate::runtime::bindings::ludus::plugin::{channels, host, types};
use crate::session::Session;

/// Who is calling, and why: set by the session before each call into the guest.
#[derive(Clone, Debug, Default)]
pub struct CallInfo {
    /// The MCP client session that made the tool call; empty inside events.
    pub caller: String,
    /// This call re-runs a wait whose deadline passed.
    pub timed_out: bool,
}

/// The Ludus part of a store's state.
pub struct Ctx {
    pub plugin: Arc<str>,
    /// The session this instance belongs to (none for a plugin's shared instance).
    pub session: Option<Weak<Session>>,
    pub seed: u64,
    pub call: CallInfo,
    /// Set by `host.wait`: the answer of the current call is provisional.
    pub wait: Option<u32>,
}

impl Ctx {
    fn session(&self) -> Option<Arc<Session>> {
        self.session.as_ref().and_then(Weak::upgrade)
    }

    fn session_label(&self) -> String {
        self.session().map(|s| s.id()).unwrap_or_else(|| "-".into())
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: types::LogLevel, message: String) {
        let (plugin, session) = (&*self.cx.plugin, self.cx.session_label());
        let message = truncate(&message, 4096);
        match level {
            types::LogLevel::Trace => tracing::trace!(plugin, session, "{message}"),
            types::LogLevel::Debug => tracing::debug!(plugin, session, "{message}"),
            types::LogLevel::Info => tracing::info!(plugin, session, "{message}"),
            types::LogLevel::Warn => tracing::warn!(plugin, session, "{message}"),
            types::LogLevel::Error => tracing::error!(plugin, session, "{message}"),
        }
    }

    fn session_id(&mut self) -> Option<String> {
        self.cx.session().map(|s| s.id())
    }

    fn rename_session(&mut self, name: String) -> Result<(), String> {
        match self.cx.session() {
            Some(s) => s.rename(&name),
            None => Err("this call runs outside any session".into()),
        }
    }

    fn caller(&mut self) -> String {
        self.cx.call.caller.clone()
    }

    fn wait(&mut self, timeout_ms: u32) {
        self.cx.wait = Some(timeout_ms);
    }

    fn wait_timed_out(&mut self) -> bool {
        self.cx.call.timed_out
    }

    fn set_timer(&mut self, delay_ms: u32) -> u64 {
        match self.cx.session() {
            Some(s) => s.set_timer(delay_ms),
            None => {
                tracing::warn!(plugin = &*self.cx.plugin, "set-timer outside a session is ignored");
                0
            }
        }
    }

    fn cancel_timer(&mut self, id: u64) {
        if let Some(s) = self.cx.session() {
            s.cancel_timer(id);
        }
    }

    fn seed(&mut self) -> u64 {
        self.cx.seed
    }
}

/// Channels belong to a session; the channel module does the work.
impl channels::Host for HostState {
    fn open(&mut self, name: String) -> Result<u32, String> {
        let Some(session) = self.cx.session() else {
            return Err("channels can only be opened inside a game session".into());
        };
        if session.plugin.on_message.is_none() {
            return Err("this plugin exports no events.on-message, so it could not receive channel input".into());
        }
        session.channels.open(&session, &name)
    }

    fn send(&mut self, channel: u32, data: String) -> Result<(), String> {
        match self.cx.session() {
            Some(s) => s.channels.send(&s.plugin.channel_limits, channel, data),
            None => Err(format!("channel {channel} is not open")),
        }
    }

    fn close(&mut self, channel: u32) {
        if let Some(s) = self.cx.session() {
            s.channels.close(channel);
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Guest stdout or stderr: kept in a bounded buffer and written to the log
/// after each call, never to the process's stdout (the stdio MCP stream).
/// Bytes beyond the bound are dropped and counted; the guest never sees an
/// error, so a chatty plugin keeps working.
#[derive(Clone)]
pub struct GuestOutput(Arc<Mutex<OutBuf>>);

struct OutBuf {
    data: Vec<u8>,
    cap: usize,
    dropped: u64,
}

impl GuestOutput {
    pub fn new(cap: usize) -> Self {
        GuestOutput(Arc::new(Mutex::new(OutBuf { data: Vec::new(), cap, dropped: 0 })))
    }

    fn push(&self, bytes: &[u8]) {
        let mut b = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = b.cap.saturating_sub(b.data.len());
        let keep = room.min(bytes.len());
        b.data.extend_from_slice(&bytes[..keep]);
        b.dropped += (bytes.len() - keep) as u64;
    }

    /// Takes what was written since the last call, and how many bytes were dropped.
    pub fn take(&self) -> (String, u64) {
        let mut b = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&b.data).into_owned();
        b.data.clear();
        (text, std::mem::take(&mut b.dropped))
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

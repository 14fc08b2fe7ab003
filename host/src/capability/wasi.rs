//! The WASI p2 grant. A Rust std guest imports much of WASI, so it is linked
//! whole, with nothing to reach: no preopened directories, every socket
//! address denied and no name lookup, no inherited stdio or environment (only
//! what the operator grants per plugin). Random numbers come from the
//! session's seed, so a seeded game replays; stdout and stderr are captured
//! into bounded buffers that the session writes to the log.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use rand::SeedableRng;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

use crate::locking::lock;

/// The WASI context of one instance.
pub fn context(seed: u64, env: &[(String, String)], stdout: GuestOutput, stderr: GuestOutput) -> WasiCtx {
    WasiCtxBuilder::new()
        .stdout(stdout)
        .stderr(stderr)
        .envs(env)
        .secure_random(rand::rngs::StdRng::seed_from_u64(seed))
        .insecure_random(rand::rngs::StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15))
        .insecure_random_seed(u128::from(seed))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
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
        let mut b = lock(&self.0);
        let room = b.cap.saturating_sub(b.data.len());
        let keep = room.min(bytes.len());
        b.data.extend_from_slice(&bytes[..keep]);
        b.dropped += (bytes.len() - keep) as u64;
    }

    /// Takes what was written since the last call, and how many bytes were dropped.
    pub fn take(&self) -> (String, u64) {
        let mut b = lock(&self.0);
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

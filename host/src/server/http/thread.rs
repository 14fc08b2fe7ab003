//! One HTTP connection on a thread of its own, as stdin has its reader.
//!
//! On tokio's workers a tool call over HTTP took hops the stdio path does
//! not: the reactor's worker woke for the request, and the guest ran inside
//! `block_in_place`, which handed the worker's core to another thread on
//! every call (`perf`: about two thread wake-ups and five context switches
//! per `hanoi_get_state`, against under one for a `ping`). Here the kernel
//! wakes this thread itself when the client writes (poll(2) on the socket),
//! the guest runs right here (this thread is not a runtime worker, so
//! `run_guest` needs no hand-off and WASI's blocking calls may block), and
//! the answer is written before the thread sleeps again.
//!
//! Everything else still runs on the runtime: subscriptions, game
//! timers, waits for a game to change. What this connection waits on wakes
//! it through its waker, an eventfd in the same poll(2).
//!
//! Between waking and sleeping the thread holds a turn at the CPU
//! (`crate::turns`), so that under load connections are served in the order
//! their requests came, not in the order the kernel picks threads.

use std::cell::Cell;
use std::future::Future;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::server::busy_poll::{Doorbell, Pace, Watch};
use crate::turns::Turns;

/// What the connection last found its socket not ready for.
#[derive(Default)]
pub struct Interest {
    read: Cell<bool>,
    write: Cell<bool>,
}

/// The connection's socket, non-blocking; a read or write that would block
/// records the interest and leaves the waiting to `drive`.
pub struct Socket {
    tcp: std::net::TcpStream,
    interest: Rc<Interest>,
}

impl Socket {
    pub fn new(tcp: std::net::TcpStream) -> io::Result<(Socket, Rc<Interest>)> {
        tcp.set_nonblocking(true)?;
        let interest = Rc::new(Interest::default());
        Ok((Socket { tcp, interest: interest.clone() }, interest))
    }

    pub fn fd(&self) -> RawFd {
        self.tcp.as_raw_fd()
    }

    fn attempt<T>(&self, wants: &Cell<bool>, mut op: impl FnMut(&std::net::TcpStream) -> io::Result<T>) -> Poll<io::Result<T>> {
        loop {
            match op(&self.tcp) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wants.set(true);
                    return Poll::Pending;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return Poll::Ready(other),
            }
        }
    }
}

impl tokio::io::AsyncRead for Socket {
    /// Reads into the buffer's unfilled room as it is. hyper hands a fresh
    /// view of its read buffer's spare capacity to every read, so going
    /// through `initialize_unfilled` (as `Read::read` needs) zeroed all of
    /// it each time: a fifth of the instructions of a `ping` over HTTP.
    fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // SAFETY: `unfilled_mut` is writable room; nothing is read from it.
        let room = unsafe { buf.unfilled_mut() };
        let n = std::task::ready!(this.attempt(&this.interest.read, |tcp| {
            // SAFETY: read(2) writes at most `room.len()` bytes into `room`
            // and reports how many it wrote.
            let n = unsafe { libc::read(tcp.as_raw_fd(), room.as_mut_ptr().cast(), room.len()) };
            if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
        }))?;
        // SAFETY: read(2) initialised the first `n` bytes of the room.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for Socket {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.attempt(&self.interest.write, |mut tcp| tcp.write(buf))
    }

    fn poll_write_vectored(self: Pin<&mut Self>, _: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        self.attempt(&self.interest.write, |mut tcp| tcp.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.tcp.shutdown(std::net::Shutdown::Write) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// Drives `future` to its end on this thread. Between polls the thread
/// sleeps in poll(2) until the socket is ready for what the connection last
/// waited for, or something the connection waits on calls its waker.
/// Before sleeping for the next request it watches for it (`watch`).
/// Each poll runs in a turn of `turns`, given back before the thread sleeps.
pub fn drive<F: Future>(future: F, socket: RawFd, interest: &Interest, watch: &Watch, turns: &Turns) -> io::Result<F::Output> {
    crate::runtime::is_client_reader();
    let alarm = Arc::new(Alarm(Doorbell::new()?));
    let mut pace = Pace::default();
    let waker = Waker::from(alarm.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        interest.read.set(false);
        interest.write.set(false);
        let turn = turns.take();
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Ok(out);
        }
        drop(turn);
        alarm.sleep(socket, interest, watch, &mut pace, turns)?;
    }
}

/// The thread's waker: a bell it sleeps on next to its socket.
struct Alarm(Doorbell);

impl Alarm {
    fn sleep(&self, socket: RawFd, interest: &Interest, watch: &Watch, pace: &mut Pace, turns: &Turns) -> io::Result<()> {
        let events = if interest.read.get() { libc::POLLIN } else { 0 } | if interest.write.get() { libc::POLLOUT } else { 0 };
        // A socket the connection is not waiting on is left out (poll ignores
        // fd -1): input it has not asked for would wake the thread in a loop.
        let socket = libc::pollfd { fd: if events == 0 { -1 } else { socket }, events, revents: 0 };
        // Waiting for the next request: watch for it before sleeping (not while
        // an answer is pending or being sent, nor while other connections
        // wait for a turn: the CPU is theirs, and the request would wait
        // behind theirs anyway).
        watch.wait_for(socket, &self.0, events == libc::POLLIN && !turns.in_demand(), pace)?;
        Ok(())
    }
}

impl Wake for Alarm {
    fn wake(self: Arc<Self>) {
        self.0.ring();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_connection_is_served_on_its_thread_and_woken_from_others() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(b"ping").unwrap();
            let mut answer = [0u8; 4];
            c.read_exact(&mut answer).unwrap();
            answer
        });
        let (tcp, _) = listener.accept().unwrap();
        let (mut socket, interest) = Socket::new(tcp).unwrap();
        let fd = socket.fd();
        // The answer waits for another thread (as a call waits for a game to change).
        let (tx, rx) = tokio::sync::oneshot::channel::<[u8; 4]>();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(*b"pong").unwrap();
        });
        let served = drive(
            async move {
                let mut got = [0u8; 4];
                socket.read_exact(&mut got).await.unwrap();
                assert_eq!(&got, b"ping");
                socket.write_all(&rx.await.unwrap()).await.unwrap();
            },
            fd,
            &interest,
            &Watch::new(Duration::ZERO),
            &Turns::new().unwrap(),
        );
        served.unwrap();
        assert_eq!(&client.join().unwrap(), b"pong");
    }
}

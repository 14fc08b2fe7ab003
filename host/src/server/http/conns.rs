//! The open HTTP connections, kept so that no client can lock the others
//! out by holding connections open.
//!
//! A connection is *answering* while one of its requests has been read and
//! its answer is under way (a tool call, a held wait, an event stream);
//! otherwise it is idle or still sending a request, and costs the server
//! nothing it would miss. When a new connection would pass the cap — in all,
//! or from its address — it takes the place of the oldest connection that is
//! not answering (of that address, for the address cap); only when every one
//! is answering is it refused. So a thousand sockets trickling headers or
//! bodies delay a new client by nothing, and one address can fill at most
//! `max_http_connections_per_address` of the slots with answers in progress.
//! Event streams (GET) are capped on their own, per address and per caller
//! (a bearer token's holder may connect from many addresses). Behind a proxy
//! the operator trusts (`trusted_proxies`), the address is the client's the
//! proxy forwarded, and the proxy's own connections count only in all.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::proxies::TrustedProxies;
use crate::config::Limits;
use crate::locking::lock;

pub struct Conns {
    state: Mutex<State>,
    proxies: TrustedProxies,
    max_total: usize,
    max_per_address: usize,
    max_streams_per_address: usize,
    max_streams_per_caller: usize,
}

#[derive(Default)]
struct State {
    open: HashMap<u64, Conn>,
    per_address: HashMap<IpAddr, usize>,
    streams_per_address: HashMap<IpAddr, usize>,
    streams_per_caller: HashMap<String, usize>,
    next: u64,
}

struct Conn {
    address: IpAddr,
    /// Requests of this connection being answered now.
    answering: usize,
    /// Since when it has not been answering: the oldest goes first.
    idle_since: Instant,
    evict: CancellationToken,
}

/// A connection's place in the table; it leaves when this drops.
pub struct Slot {
    pub conn: ConnRef,
    /// Cancelled when a newer connection took this one's place.
    pub evicted: CancellationToken,
}

/// A connection, as its requests see it (filed in each request's extensions).
#[derive(Clone)]
pub struct ConnRef {
    conns: Arc<Conns>,
    id: u64,
    address: IpAddr,
}

impl Conns {
    pub fn new(limits: &Limits, proxies: TrustedProxies) -> Arc<Conns> {
        Arc::new(Conns {
            state: Mutex::default(),
            proxies,
            max_total: limits.max_http_connections,
            max_per_address: limits.max_http_connections_per_address,
            max_streams_per_address: limits.max_sse_streams_per_address,
            max_streams_per_caller: limits.max_sse_streams_per_caller,
        })
    }

    /// A slot for a new connection from `address`, evicting the oldest
    /// connection not answering where a cap is reached; or why not.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Result<Slot, Full> {
        let mut s = lock(&self.state);
        let from_address = s.per_address.get(&address).copied().unwrap_or(0);
        // A trusted proxy carries many clients' requests on its connections.
        let victim = if from_address >= self.max_per_address && !self.proxies.trusts(address) {
            Some(s.oldest_idle(Some(address)).ok_or(Full::Address { address, open: from_address })?)
        } else if s.open.len() >= self.max_total {
            Some(s.oldest_idle(None).ok_or(Full::Server { open: s.open.len() })?)
        } else {
            None
        };
        if let Some(id) = victim {
            tracing::debug!(%address, "a new connection takes the place of an idle or slow one");
            s.remove(id);
        }
        let id = s.next;
        s.next += 1;
        let evict = CancellationToken::new();
        s.open.insert(id, Conn { address, answering: 0, idle_since: Instant::now(), evict: evict.clone() });
        *s.per_address.entry(address).or_default() += 1;
        Ok(Slot { conn: ConnRef { conns: self.clone(), id, address }, evicted: evict })
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        lock(&self.state).open.len()
    }
}

impl State {
    /// The connection (of `address`, if given) idle the longest.
    fn oldest_idle(&self, address: Option<IpAddr>) -> Option<u64> {
        self.open
            .iter()
            .filter(|(_, c)| c.answering == 0 && address.is_none_or(|a| a == c.address))
            .min_by_key(|(_, c)| c.idle_since)
            .map(|(id, _)| *id)
    }

    fn remove(&mut self, id: u64) {
        let Some(conn) = self.open.remove(&id) else { return };
        conn.evict.cancel();
        decrement(&mut self.per_address, &conn.address);
    }
}

fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.conn.conns.state).remove(self.conn.id);
    }
}

impl ConnRef {
    /// Marks the connection answering until the guard drops.
    pub fn answering(&self) -> Answering {
        if let Some(c) = lock(&self.conns.state).open.get_mut(&self.id) {
            c.answering += 1;
        }
        Answering { conn: self.clone(), stream: None }
    }

    /// The peer's address (a proxy's, behind one).
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// Marks the connection answering with an event stream until the guard
    /// drops, or says why its client's address, or `caller` (a token's
    /// name), may open no more.
    pub fn stream(&self, client: IpAddr, caller: Option<&str>) -> Result<Answering, Full> {
        {
            let mut s = lock(&self.conns.state);
            let from_address = s.streams_per_address.get(&client).copied().unwrap_or(0);
            if from_address >= self.conns.max_streams_per_address {
                return Err(Full::StreamsOfAddress { address: client, open: from_address });
            }
            if let Some(caller) = caller {
                let n = s.streams_per_caller.entry(caller.to_string()).or_default();
                if *n >= self.conns.max_streams_per_caller {
                    return Err(Full::StreamsOfCaller { caller: caller.to_string(), open: *n });
                }
                *n += 1;
            }
            *s.streams_per_address.entry(client).or_default() += 1;
        }
        let mut guard = self.answering();
        guard.stream = Some((client, caller.map(String::from)));
        Ok(guard)
    }
}

/// Why a connection or an event stream is refused: a cap is reached and
/// nothing can make room. The text names the key that raises it.
#[derive(Debug, thiserror::Error)]
pub enum Full {
    #[error("{open} connections from {address} are all being answered (limits.max_http_connections_per_address)")]
    Address { address: IpAddr, open: usize },
    #[error("{open} connections are all being answered (limits.max_http_connections)")]
    Server { open: usize },
    #[error("{address} already has {open} event streams open, the limit for one address (limits.max_sse_streams_per_address)")]
    StreamsOfAddress { address: IpAddr, open: usize },
    #[error("{caller} already has {open} event streams open, the limit for one caller (limits.max_sse_streams_per_caller)")]
    StreamsOfCaller { caller: String, open: usize },
}

/// A request being answered; see [`ConnRef::answering`].
pub struct Answering {
    conn: ConnRef,
    /// For an event stream: the client address and caller it counts against.
    stream: Option<(IpAddr, Option<String>)>,
}

impl Drop for Answering {
    fn drop(&mut self) {
        let mut s = lock(&self.conn.conns.state);
        if let Some((client, caller)) = &self.stream {
            decrement(&mut s.streams_per_address, client);
            if let Some(caller) = caller {
                decrement(&mut s.streams_per_caller, caller);
            }
        }
        if let Some(c) = s.open.get_mut(&self.conn.id) {
            c.answering -= 1;
            if c.answering == 0 {
                c.idle_since = Instant::now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_connection_takes_the_place_of_the_oldest_idle_one() {
        let conns = Conns::new(&limits(3, 2, 1, 1), TrustedProxies::default());
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let first = conns.admit(a).unwrap();
        let second = conns.admit(a).unwrap();
        let _busy = second.conn.answering();
        // The address cap: the idle first one goes, the answering one stays.
        let third = conns.admit(a).unwrap();
        assert!(first.evicted.is_cancelled() && !second.evicted.is_cancelled());
        assert_eq!(conns.open(), 2);
        // Both of a's are answering now: a fourth from a is refused...
        let _busy3 = third.conn.answering();
        assert!(conns.admit(a).err().unwrap().to_string().contains("max_http_connections_per_address"));
        // ...while another address still gets in, up to the total cap.
        let other = conns.admit(b).unwrap();
        assert_eq!(conns.open(), 3);
        let _busy4 = other.conn.answering();
        assert!(conns.admit(b).err().unwrap().to_string().contains("limits.max_http_connections"));
        drop(_busy);
        let fifth = conns.admit(b).unwrap();
        assert!(second.evicted.is_cancelled() && !fifth.evicted.is_cancelled());
    }

    fn limits(total: usize, per_address: usize, streams_per_address: usize, streams_per_caller: usize) -> Limits {
        Limits {
            max_http_connections: total,
            max_http_connections_per_address: per_address,
            max_sse_streams_per_address: streams_per_address,
            max_sse_streams_per_caller: streams_per_caller,
            ..Limits::default()
        }
    }

    #[test]
    fn event_streams_are_capped_per_address() {
        let conns = Conns::new(&limits(10, 10, 1, 10), TrustedProxies::default());
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let (one, two) = (conns.admit(a).unwrap(), conns.admit(a).unwrap());
        let stream = one.conn.stream(a, None).unwrap();
        assert!(two.conn.stream(a, None).err().unwrap().to_string().contains("max_sse_streams_per_address"));
        drop(stream);
        assert!(two.conn.stream(a, None).is_ok());
    }

    #[test]
    fn behind_a_trusted_proxy_each_client_has_its_own_caps() {
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let conns = Conns::new(&limits(10, 1, 1, 10), TrustedProxies::parse(&["127.0.0.1".into()]).unwrap());
        // The proxy's connections count only in all.
        let (one, two) = (conns.admit(proxy).unwrap(), conns.admit(proxy).unwrap());
        let (alice, bob): (IpAddr, IpAddr) = ("203.0.113.1".parse().unwrap(), "203.0.113.2".parse().unwrap());
        let _a = one.conn.stream(alice, None).unwrap();
        let _b = two.conn.stream(bob, None).unwrap();
        assert!(two.conn.stream(alice, None).err().unwrap().to_string().contains("203.0.113.1 already has 1"));
    }

    #[test]
    fn event_streams_are_capped_per_caller_across_addresses() {
        let conns = Conns::new(&limits(10, 10, 10, 2), TrustedProxies::default());
        let slots: Vec<Slot> = (2..6).map(|i| conns.admit(IpAddr::from([127, 0, 0, i])).unwrap()).collect();
        let stream = |i: usize, caller| slots[i].conn.stream(slots[i].conn.address(), caller);
        let first = stream(0, Some("alice")).unwrap();
        let _second = stream(1, Some("alice")).unwrap();
        let refused = stream(2, Some("alice")).err().unwrap().to_string();
        assert!(refused.contains("alice already has 2") && refused.contains("max_sse_streams_per_caller"), "{refused}");
        // Another caller, and an address whose count the refusal did not raise, are unaffected.
        let _bob = stream(2, Some("bob")).unwrap();
        drop(first);
        assert!(stream(3, Some("alice")).is_ok());
    }
}

//! Which client a request comes from when a proxy stands in front: the
//! peer's own address, unless the peer is a proxy the operator trusts
//! (`trusted_proxies`), in which case the address the proxy forwarded
//! (`Forwarded: for=`, else `X-Forwarded-For`). Only a trusted proxy is
//! believed: any client can write those headers itself. The per-address caps
//! (event streams, connections) then count each client, not the proxy.

use std::net::IpAddr;

use http::HeaderMap;

/// The operator's trusted proxies: addresses, or networks (`10.0.0.0/8`).
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Reads `trusted_proxies` (an error names the entry that is not an
    /// address or a network).
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, String> {
        let net = |entry: &str| -> Option<(IpAddr, u8)> {
            let (ip, bits) = match entry.split_once('/') {
                Some((ip, bits)) => (ip.trim().parse::<IpAddr>().ok()?, bits.trim().parse::<u8>().ok()?),
                None => {
                    let ip = entry.trim().parse::<IpAddr>().ok()?;
                    (ip, if ip.is_ipv4() { 32 } else { 128 })
                }
            };
            (bits <= if ip.is_ipv4() { 32 } else { 128 }).then_some((ip, bits))
        };
        entries
            .iter()
            .map(|e| net(e).ok_or_else(|| format!("trusted_proxies: {e:?} is not an IP address or a network such as 10.0.0.0/8")))
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|(net, bits)| within(ip, canonical(*net), *bits))
    }

    /// The client behind `peer`: the rightmost forwarded address that is not
    /// a trusted proxy itself (the one the nearest trusted proxy saw), or
    /// `peer` when it is not trusted or forwarded nothing readable.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let chain = forwarded_for(headers);
        chain.iter().rev().copied().find(|ip| !self.trusts(*ip)).or(chain.first().copied()).unwrap_or(peer)
    }
}

/// The addresses a request was forwarded for, client first: from the
/// standard `Forwarded` header (RFC 7239) when there is one, else from
/// `X-Forwarded-For`. Entries that are not addresses (`unknown`, obfuscated
/// names) are left out.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let values = |name: &str| headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim);
    let standard: Vec<IpAddr> = values("forwarded")
        .flat_map(|element| element.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(key, _)| key.trim().eq_ignore_ascii_case("for"))
        .filter_map(|(_, node)| node_address(node))
        .collect();
    if !standard.is_empty() {
        return standard;
    }
    values("x-forwarded-for").filter_map(node_address).collect()
}

/// `192.0.2.1`, `"[2001:db8::1]:4711"`, `192.0.2.1:4711` → the address.
fn node_address(node: &str) -> Option<IpAddr> {
    let node = node.trim().trim_matches('"');
    if let Some(v6) = node.strip_prefix('[') {
        return v6.split_once(']').and_then(|(ip, _)| ip.parse().ok());
    }
    node.parse().ok().or_else(|| node.rsplit_once(':').and_then(|(ip, _)| ip.parse().ok()))
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) as the IPv4 one.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn within(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => prefix_equal(&a.octets(), &n.octets(), bits),
        (IpAddr::V6(a), IpAddr::V6(n)) => prefix_equal(&a.octets(), &n.octets(), bits),
        _ => false,
    }
}

fn prefix_equal(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = (usize::from(bits / 8), bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_trusted_peer_is_believed_and_its_nearest_untrusted_hop_is_the_client() {
        let trusted = TrustedProxies::parse(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap();
        let (proxy, stranger): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "192.0.2.9".parse().unwrap());
        let forwarded = headers(&[("x-forwarded-for", "203.0.113.5, 10.1.2.3")]);
        assert_eq!(trusted.client(proxy, &forwarded), "203.0.113.5".parse::<IpAddr>().unwrap());
        // A client writing the header itself gains nothing.
        assert_eq!(trusted.client(stranger, &forwarded), stranger);
        // A spoofed first hop behind the real client: the proxy saw 198.51.100.7.
        let spoofed = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7")]);
        assert_eq!(trusted.client(proxy, &spoofed), "198.51.100.7".parse::<IpAddr>().unwrap());
        // RFC 7239 wins over X-Forwarded-For, with ports and IPv6 brackets.
        let standard = headers(&[("forwarded", "for=\"[2001:db8::1]:4711\";proto=http"), ("x-forwarded-for", "203.0.113.5")]);
        assert_eq!(trusted.client(proxy, &standard), "2001:db8::1".parse::<IpAddr>().unwrap());
        assert_eq!(trusted.client(proxy, &HeaderMap::new()), proxy);
        assert!(trusted.trusts("::ffff:127.0.0.1".parse().unwrap()));
        assert!(TrustedProxies::parse(&["nginx".into()]).unwrap_err().contains("\"nginx\""));
        assert!(TrustedProxies::parse(&["10.0.0.0/33".into()]).is_err());
    }
}

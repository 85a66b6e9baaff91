//! Who is calling, by address: the TCP peer, or, when the peer is one of
//! the operator's trusted proxies (an ingress, a load balancer), the client
//! that proxy reports in `X-Forwarded-For`.
//!
//! The chain is read from the right, the hop nearest the gateway first:
//! every entry a trusted proxy added is skipped, and the first address not
//! in a trusted range is the client. Entries to its left were written by
//! the client itself and are never believed. An entry that is not an
//! address (`unknown`, garbage, an empty item) ends the walk, and the last
//! trusted hop is taken instead: an unreadable chain can only make callers
//! share a proxy's key, never choose their own. With no trusted proxies
//! configured (the default) the header is ignored.

use std::net::{IpAddr, SocketAddr};

use http::header::HeaderMap;
use ipnet::IpNet;

use crate::cidr;

pub fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let mut client = peer.to_canonical();
    if !cidr::contains(trusted, client) {
        return client;
    }
    // Several header lines form one list, in order.
    for line in headers.get_all("x-forwarded-for").iter().rev() {
        let Ok(text) = line.to_str() else {
            return client;
        };
        for entry in text.rsplit(',') {
            let Some(hop) = address(entry.trim()) else {
                return client;
            };
            client = hop;
            if !cidr::contains(trusted, hop) {
                return hop;
            }
        }
    }
    client
}

/// `1.2.3.4`, `2001:db8::1`, and the spellings with a port some proxies
/// write: `1.2.3.4:5678`, `[2001:db8::1]:5678`, `[2001:db8::1]`.
fn address(entry: &str) -> Option<IpAddr> {
    let ip = entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|a| a.ip()))
        .ok()
        .or_else(|| entry.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    Some(ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(items: &[&str]) -> Vec<IpNet> {
        items.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn xff(lines: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for line in lines {
            h.append("x-forwarded-for", line.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const INGRESS: &str = "10.0.0.5";

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let h = xff(&["1.2.3.4"]);
        assert_eq!(resolve(ip("192.0.2.7"), &h, &[]), ip("192.0.2.7"));
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(resolve(ip("192.0.2.7"), &h, &trusted), ip("192.0.2.7"));
    }

    #[test]
    fn a_trusted_peer_reports_the_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = xff(&["203.0.113.9"]);
        assert_eq!(resolve(ip(INGRESS), &h, &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn entries_a_client_wrote_itself_are_not_believed() {
        let trusted = nets(&["10.0.0.0/8"]);
        // The client sent "X-Forwarded-For: 1.1.1.1"; the ingress appended
        // the address it saw.
        let h = xff(&["1.1.1.1, 203.0.113.9"]);
        assert_eq!(resolve(ip(INGRESS), &h, &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn a_chain_of_trusted_proxies_is_walked_through() {
        let trusted = nets(&["10.0.0.0/8", "192.168.0.0/16"]);
        let h = xff(&["198.51.100.1, 203.0.113.9, 192.168.1.1", "10.1.1.1"]);
        assert_eq!(resolve(ip(INGRESS), &h, &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn only_trusted_hops_give_the_leftmost() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = xff(&["10.3.3.3, 10.2.2.2"]);
        assert_eq!(resolve(ip(INGRESS), &h, &trusted), ip("10.3.3.3"));
    }

    #[test]
    fn no_header_leaves_the_peer() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(
            resolve(ip(INGRESS), &HeaderMap::new(), &trusted),
            ip(INGRESS)
        );
    }

    #[test]
    fn an_unreadable_entry_stops_at_the_last_trusted_hop() {
        let trusted = nets(&["10.0.0.0/8"]);
        for (chain, expected) in [
            ("203.0.113.9, unknown", INGRESS),
            ("203.0.113.9,,", INGRESS),
            ("203.0.113.9, 10.1.1.1, x", INGRESS),
            ("203.0.113.9, x, 10.1.1.1", "10.1.1.1"),
        ] {
            assert_eq!(
                resolve(ip(INGRESS), &xff(&[chain]), &trusted),
                ip(expected),
                "{chain}"
            );
        }
    }

    #[test]
    fn ports_brackets_and_mapped_addresses_are_read() {
        let trusted = nets(&["10.0.0.0/8"]);
        for (entry, expected) in [
            ("203.0.113.9:4711", "203.0.113.9"),
            ("[2001:db8::9]:4711", "2001:db8::9"),
            ("[2001:db8::9]", "2001:db8::9"),
            ("::ffff:203.0.113.9", "203.0.113.9"),
        ] {
            assert_eq!(
                resolve(ip(INGRESS), &xff(&[entry]), &trusted),
                ip(expected),
                "{entry}"
            );
        }
        // The peer itself on a dual-stack socket.
        assert_eq!(
            resolve(ip("::ffff:10.0.0.5"), &xff(&["203.0.113.9"]), &trusted),
            ip("203.0.113.9")
        );
        assert_eq!(
            resolve(ip("::ffff:192.0.2.1"), &HeaderMap::new(), &[]),
            ip("192.0.2.1")
        );
    }
}

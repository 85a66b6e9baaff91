//! Which addresses a webhook may not point at, and why: loopback, private,
//! link-local, cloud metadata, documentation and other non-public ranges,
//! IPv4 addresses embedded in IPv6 ones included.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const METADATA: &str = "cloud metadata address";
const RESERVED: &str = "reserved address";
const DOCUMENTATION: &str = "documentation address";
const PRIVATE: &str = "private address";

/// IPv4 ranges, most specific first (the first match names the reason).
const V4_RANGES: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(169, 254, 169, 254), 32, METADATA), // AWS, GCP, Azure, OCI…
    (Ipv4Addr::new(168, 63, 129, 16), 32, METADATA),   // Azure WireServer
    (Ipv4Addr::new(100, 100, 100, 200), 32, METADATA), // Alibaba Cloud
    (Ipv4Addr::new(0, 0, 0, 0), 32, "unspecified address"),
    (Ipv4Addr::new(255, 255, 255, 255), 32, "broadcast address"),
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this-network address"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback address"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, PRIVATE),
    (Ipv4Addr::new(172, 16, 0, 0), 12, PRIVATE),
    (Ipv4Addr::new(192, 168, 0, 0), 16, PRIVATE),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local address"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared (CGNAT) address"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking address"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(198, 51, 100, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(203, 0, 113, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(192, 0, 0, 0), 24, RESERVED), // IETF protocol assignments
    (Ipv4Addr::new(192, 88, 99, 0), 24, RESERVED), // old 6to4 relay anycast
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast address"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, RESERVED),
];

/// IPv6 ranges with no IPv4 inside, most specific first.
const V6_RANGES: &[(Ipv6Addr, u8, &str)] = &[
    (
        Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
        128,
        METADATA,
    ), // AWS
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        128,
        "unspecified address",
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1),
        128,
        "loopback address",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "link-local address",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local address",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique-local address",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast address",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        DOCUMENTATION,
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        DOCUMENTATION,
    ),
    (
        Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0),
        48,
        "benchmarking address",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only address",
    ),
];

/// Why an address must not receive webhooks (`None`: a public address).
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|(base, prefix, _)| same_prefix(bits.into(), u32::from(*base).into(), *prefix, 32))
        .map(|(_, _, reason)| *reason)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if let Some((_, _, reason)) = V6_RANGES
        .iter()
        .find(|(base, prefix, _)| same_prefix(bits, u128::from(*base), *prefix, 128))
    {
        return Some(reason);
    }
    if let Some(v4) = embedded_v4(bits) {
        return forbidden_v4(v4);
    }
    // Whatever is left outside 2000::/3 is not public unicast.
    if !same_prefix(bits, 0x2000_u128 << 112, 3, 128) {
        return Some(RESERVED);
    }
    None
}

/// The IPv4 address an IPv6 form carries, for the forms that reach it:
/// mapped `::ffff:a.b.c.d`, translated `::ffff:0:a.b.c.d`, compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`,
/// and Teredo `2001::/32` (its client address, stored inverted).
fn embedded_v4(bits: u128) -> Option<Ipv4Addr> {
    let low = bits as u32; // the last 32 bits, on purpose
    let forms: [(u128, u8); 5] = [
        (0xffff_u128 << 32, 96),
        (0xffff_u128 << 48, 96),
        (0, 96),
        (0x0064_ff9b_u128 << 96, 96),
        (0x0064_ff9b_0001_u128 << 80, 48),
    ];
    if forms
        .iter()
        .any(|(base, prefix)| same_prefix(bits, *base, *prefix, 128))
    {
        return Some(Ipv4Addr::from(low));
    }
    if same_prefix(bits, 0x2002_u128 << 112, 16, 128) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    if same_prefix(bits, 0x2001_0000_u128 << 96, 32, 128) {
        return Some(Ipv4Addr::from(!low));
    }
    None
}

/// Whether `a` and `b` (`width`-bit numbers) agree on their first `prefix` bits.
fn same_prefix(a: u128, b: u128, prefix: u8, width: u32) -> bool {
    let shift = width.saturating_sub(u32::from(prefix));
    a.checked_shr(shift).unwrap_or(0) == b.checked_shr(shift).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        let text = text.trim_start_matches('[').trim_end_matches(']');
        text.parse().unwrap()
    }

    #[test]
    fn forbidden_addresses_name_their_reason() {
        let table = [
            ("127.0.0.1", "loopback address"),
            ("127.255.0.9", "loopback address"),
            ("10.1.2.3", "private address"),
            ("172.16.0.1", "private address"),
            ("172.31.255.255", "private address"),
            ("192.168.1.1", "private address"),
            ("169.254.169.254", "cloud metadata address"),
            ("169.254.1.1", "link-local address"),
            ("100.64.0.1", "shared (CGNAT) address"),
            ("100.100.100.200", "cloud metadata address"),
            ("168.63.129.16", "cloud metadata address"),
            ("0.0.0.0", "unspecified address"),
            ("0.1.2.3", "this-network address"),
            ("255.255.255.255", "broadcast address"),
            ("224.0.0.1", "multicast address"),
            ("239.255.255.250", "multicast address"),
            ("240.0.0.1", "reserved address"),
            ("198.18.0.1", "benchmarking address"),
            ("198.19.255.255", "benchmarking address"),
            ("192.0.2.1", "documentation address"),
            ("198.51.100.7", "documentation address"),
            ("203.0.113.9", "documentation address"),
            ("192.0.0.8", "reserved address"),
            ("[::1]", "loopback address"),
            ("::", "unspecified address"),
            ("::ffff:127.0.0.1", "loopback address"),
            ("::ffff:7f00:1", "loopback address"),
            ("::ffff:169.254.169.254", "cloud metadata address"),
            ("::ffff:10.0.0.1", "private address"),
            ("::ffff:0:10.0.0.1", "private address"),
            ("::127.0.0.1", "loopback address"),
            ("::a00:1", "private address"),
            ("64:ff9b::127.0.0.1", "loopback address"),
            ("64:ff9b::a9fe:a9fe", "cloud metadata address"),
            ("64:ff9b:1::192.168.0.1", "private address"),
            ("2002:7f00:1::", "loopback address"),
            ("2002:a9fe:a9fe::1", "cloud metadata address"),
            ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private address"), // Teredo client 10.0.0.1
            ("fd00:ec2::254", "cloud metadata address"),
            ("fd12:3456::1", "unique-local address"),
            ("fc00::1", "unique-local address"),
            ("fe80::1", "link-local address"),
            ("febf::1", "link-local address"),
            ("fec0::1", "site-local address"),
            ("ff02::1", "multicast address"),
            ("2001:db8::1", "documentation address"),
            ("3fff::1", "documentation address"),
            ("2001:2::1", "benchmarking address"),
            ("100::1", "discard-only address"),
            ("4000::1", "reserved address"),
            ("::2:0:0:1", "reserved address"),
        ];
        for (text, reason) in table {
            assert_eq!(forbidden(ip(text)), Some(reason), "{text}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for text in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo client 8.8.8.8
        ] {
            assert_eq!(forbidden(ip(text)), None, "{text}");
        }
    }
}

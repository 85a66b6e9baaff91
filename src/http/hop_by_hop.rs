//! Hop-by-hop headers (RFC 9110 §7.6.1): they belong to one connection and
//! are never forwarded; a configured upstream header may not be one.

use http::{header, HeaderName};

/// Headers that describe one connection and must not cross the gateway.
pub const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

pub fn is_hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(name) || name == header::UPGRADE
}

//! Hop-by-hop headers (RFC 9110 §7.6.1): they belong to one connection and
//! are never forwarded; a configured upstream header may not be one.

use http::{header, HeaderMap, HeaderName, HeaderValue};

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

/// Whether `name` is one of `HOP_BY_HOP` or `Upgrade`. Matched as text:
/// `HOP_BY_HOP.contains` builds and drops the const array on every call,
/// and this runs for each header of each request and answer.
pub fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// Takes out gRPC's own metadata (`grpc-timeout`, `grpc-encoding`, ...),
/// which each leg of a call sets for itself, and sets `content_type`: a
/// call's headers on their way from one binding's leg to another's.
pub fn clear_grpc_metadata(headers: &mut HeaderMap, content_type: &'static str) {
    let grpc: Vec<_> = (headers.keys())
        .filter(|name| name.as_str().starts_with("grpc-"))
        .cloned()
        .collect();
    for name in grpc {
        headers.remove(name);
    }
    let content_type = HeaderValue::from_static(content_type);
    headers.insert(header::CONTENT_TYPE, content_type);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_match_names_the_same_headers_as_the_list() {
        for name in HOP_BY_HOP.iter().chain([&header::UPGRADE]) {
            assert!(is_hop_by_hop(name), "{name}");
        }
        for name in [header::HOST, header::CONTENT_TYPE, header::AUTHORIZATION] {
            assert!(!is_hop_by_hop(&name), "{name}");
        }
        let custom = HeaderName::from_static("x-keep-alive");
        assert!(!is_hop_by_hop(&custom));
    }
}

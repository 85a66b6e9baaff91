//! Header hygiene between client, gateway and upstream (RFC 9110 §7.6.1).

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Headers that describe one connection and must not cross the gateway.
const HOP_BY_HOP: [HeaderName; 8] = [
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

/// Removes hop-by-hop headers, including any the `Connection` header names.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    headers.remove(header::UPGRADE);
}

/// Sets `X-Forwarded-For/Proto/Host`, appending the client to any chain the
/// request already carries (the gateway may itself sit behind a balancer).
pub fn add_forwarded(
    headers: &mut HeaderMap,
    client: IpAddr,
    proto: &'static str,
    host: Option<HeaderValue>,
) {
    let xff = HeaderName::from_static("x-forwarded-for");
    let mut chain: Vec<String> = headers
        .get_all(&xff)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    chain.push(client.to_string());
    if let Ok(v) = HeaderValue::from_str(&chain.join(", ")) {
        headers.insert(xff, v);
    }
    headers.insert(
        HeaderName::from_static("x-forwarded-proto"),
        HeaderValue::from_static(proto),
    );
    if let Some(host) = host {
        headers.insert(HeaderName::from_static("x-forwarded-host"), host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_standard_and_connection_named_headers() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            "keep-alive, x-custom-hop".parse().unwrap(),
        );
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("x-custom-hop", "1".parse().unwrap());
        h.insert(header::TE, "trailers".parse().unwrap());
        h.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        h.insert(header::UPGRADE, "h2c".parse().unwrap());
        h.insert("a2a-version", "1.0".parse().unwrap());
        h.insert("traceparent", "00-abc-def-01".parse().unwrap());
        strip_hop_by_hop(&mut h);
        let left: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["a2a-version", "traceparent"]);
    }

    #[test]
    fn forwarded_for_appends_to_chain() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        add_forwarded(
            &mut h,
            "127.0.0.1".parse().unwrap(),
            "http",
            Some("gw:8080".parse().unwrap()),
        );
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "gw:8080");
    }
}

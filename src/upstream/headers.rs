//! Header hygiene between client, gateway and upstream (RFC 9110 §7.6.1).

use std::net::SocketAddr;

use crate::http::hop_by_hop::{is_hop_by_hop, HOP_BY_HOP};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Where the client request came from, for `X-Forwarded-*`.
#[derive(Clone)]
pub struct Origin {
    /// The TCP peer: the hop appended to `X-Forwarded-For`.
    pub peer: SocketAddr,
    /// `peer`'s address as header text (`headers::hop`).
    pub peer_hop: HeaderValue,
    pub proto: &'static str,
    pub host: Option<HeaderValue>,
    /// The peer is a trusted proxy: its `X-Forwarded-Proto/Host` stand.
    pub trusted_peer: bool,
}

/// Keeps the client's `Content-Length` when it is the one value, written
/// plainly, of the body's length, as it nearly always is: hyper then sends
/// it as it is, rather than formatting and inserting its own (an allocation
/// a call). Any other spelling, or several values, is removed for hyper's.
pub fn keep_content_length(headers: &mut HeaderMap, len: usize) {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let plain = match (values.next(), values.next()) {
        (None, _) => return,
        (Some(v), None) => is_plain_decimal(v.as_bytes(), len),
        _ => false,
    };
    if !plain {
        headers.remove(header::CONTENT_LENGTH);
    }
}

/// `text` is `n` in decimal digits, with no sign and no leading zero.
fn is_plain_decimal(text: &[u8], n: usize) -> bool {
    let digits = !text.is_empty() && text.iter().all(u8::is_ascii_digit);
    let leading_zero = text.len() > 1 && text[0] == b'0';
    digits
        && !leading_zero
        && std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<usize>().ok())
            == Some(n)
}

/// Removes hop-by-hop headers, including any the `Connection` header names.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the few names they have is
    // cheaper than a lookup for each of the nine.
    if !headers.keys().any(is_hop_by_hop) {
        return;
    }
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

/// Sets `X-Forwarded-For/Proto/Host`, appending the peer to any chain the
/// request already carries (the gateway may itself sit behind a balancer).
/// The scheme and host a trusted proxy reports are kept: the client used
/// those, not the proxy's hop to the gateway.
pub fn add_forwarded(headers: &mut HeaderMap, origin: Origin) {
    let xff = HeaderName::from_static("x-forwarded-for");
    let mut earlier = headers
        .get_all(&xff)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .peekable();
    if earlier.peek().is_none() {
        // The usual case, a client that came straight here: the chain is
        // the peer alone, text the connection already has.
        headers.insert(xff, origin.peer_hop);
    } else {
        // One string for the whole chain.
        let mut chain = String::with_capacity(48);
        for hop in earlier {
            chain.push_str(hop);
            chain.push_str(", ");
        }
        chain.push_str(origin.peer_hop.to_str().unwrap_or_default());
        if let Ok(v) = HeaderValue::from_maybe_shared(bytes::Bytes::from(chain)) {
            headers.insert(xff, v);
        }
    }
    let proto = HeaderName::from_static("x-forwarded-proto");
    if !(origin.trusted_peer && headers.contains_key(&proto)) {
        headers.insert(proto, HeaderValue::from_static(origin.proto));
    }
    let host = HeaderName::from_static("x-forwarded-host");
    if let Some(value) = origin.host {
        if !(origin.trusted_peer && headers.contains_key(&host)) {
            headers.insert(host, value);
        }
    }
}

/// An address as header text, as `Display` writes it (an `X-Forwarded-For`
/// hop).
pub fn hop(ip: std::net::IpAddr) -> HeaderValue {
    let mut text = String::with_capacity(15);
    push_ip(&mut text, ip);
    // An address's text is always a valid header value.
    HeaderValue::from_maybe_shared(bytes::Bytes::from(text))
        .unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// Appends an address as `Display` writes it. IPv4 is written by hand:
/// std's formatting machinery costs ~1,000 instructions per address, and
/// this runs for every call.
pub fn push_ip(out: &mut String, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                if octet >= 100 {
                    out.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    out.push(char::from(b'0' + octet / 10 % 10));
                }
                out.push(char::from(b'0' + octet % 10));
            }
        }
        std::net::IpAddr::V6(v6) => {
            use std::fmt::Write;
            let _ = write!(out, "{v6}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_content_length_of_the_body_is_kept_any_other_removed() {
        let kept = |values: &[&'static str], len: usize| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(header::CONTENT_LENGTH, HeaderValue::from_static(v));
            }
            keep_content_length(&mut headers, len);
            let left: Vec<_> = headers.get_all(header::CONTENT_LENGTH).iter().collect();
            left.len() == values.len()
        };
        assert!(kept(&["860"], 860));
        assert!(kept(&["0"], 0));
        assert!(kept(&[], 5), "nothing to keep or remove");
        for (values, len) in [
            (&["861"][..], 860),
            (&["0860"], 860),
            (&["+860"], 860),
            (&[" 860"], 860),
            (&["00"], 0),
            (&["860", "860"], 860),
            (&["99999999999999999999999"], 860),
        ] {
            assert!(!kept(values, len), "{values:?} for {len}");
        }
    }

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.30.40",
            "255.255.255.255",
            "1.100.9.199",
            "::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:10.0.0.1",
            "::ffff:255.255.255.255",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "1111:2222:3333:4444:5555:6666:7777:8888",
        ] {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            let mut out = String::from("x ");
            push_ip(&mut out, ip);
            assert_eq!(out, format!("x {ip}"));
        }
        for n in 0..=255u8 {
            let ip = std::net::IpAddr::from([n, n / 3, n / 7, 255 - n]);
            let mut out = String::new();
            push_ip(&mut out, ip);
            assert_eq!(out, ip.to_string());
        }
    }

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

    fn origin(trusted_peer: bool) -> Origin {
        let peer: std::net::SocketAddr = "127.0.0.1:5000".parse().unwrap();
        Origin {
            peer,
            peer_hop: hop(peer.ip()),
            proto: "http",
            host: Some("gw:8080".parse().unwrap()),
            trusted_peer,
        }
    }

    fn from_a_proxy() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.0.0.1".parse().unwrap());
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-host", "agents.example.com".parse().unwrap());
        h
    }

    #[test]
    fn forwarded_for_appends_to_chain() {
        let mut h = from_a_proxy();
        add_forwarded(&mut h, origin(false));
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(
            h["x-forwarded-proto"], "http",
            "an untrusted peer's claim is replaced"
        );
        assert_eq!(h["x-forwarded-host"], "gw:8080");
    }

    #[test]
    fn forwarded_for_joins_every_earlier_line_then_the_peer() {
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", "203.0.113.7".parse().unwrap());
        h.append("x-forwarded-for", "10.0.0.1, 10.0.0.2".parse().unwrap());
        let mut v6 = origin(false);
        v6.peer = "[2001:db8::8a2e:370:7334]:443".parse().unwrap();
        v6.peer_hop = hop(v6.peer.ip());
        add_forwarded(&mut h, v6);
        let chain: Vec<_> = h.get_all("x-forwarded-for").iter().collect();
        assert_eq!(
            chain,
            ["203.0.113.7, 10.0.0.1, 10.0.0.2, 2001:db8::8a2e:370:7334"]
        );
        let mut first = HeaderMap::new();
        add_forwarded(&mut first, origin(false));
        assert_eq!(
            first["x-forwarded-for"], "127.0.0.1",
            "a new chain is the peer alone"
        );
    }

    #[test]
    fn a_trusted_proxy_keeps_its_scheme_and_host() {
        let mut h = from_a_proxy();
        add_forwarded(&mut h, origin(true));
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
        assert_eq!(h["x-forwarded-proto"], "https");
        assert_eq!(h["x-forwarded-host"], "agents.example.com");
        let mut bare = HeaderMap::new();
        add_forwarded(&mut bare, origin(true));
        assert_eq!(
            bare["x-forwarded-proto"], "http",
            "set when the proxy did not"
        );
        assert_eq!(bare["x-forwarded-host"], "gw:8080");
    }
}

/// The client credentials the gateway itself consumed (its auth schemes),
/// removed before a request goes to an agent that should not see them.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    pub headers: Vec<HeaderName>,
    pub query: Vec<String>,
    pub cookies: Vec<String>,
}

impl Credentials {
    pub fn from_auth(auth: &crate::auth::config::Auth) -> Self {
        use crate::auth::config::{KeyLocation, SchemeKind};
        let mut c = Credentials {
            headers: vec![header::AUTHORIZATION],
            ..Default::default()
        };
        for s in &auth.schemes {
            if let SchemeKind::ApiKey {
                location, param, ..
            } = &s.kind
            {
                match location {
                    KeyLocation::Header => c
                        .headers
                        .extend(HeaderName::from_bytes(param.as_bytes()).ok()),
                    KeyLocation::Query => c.query.push(param.clone()),
                    KeyLocation::Cookie => c.cookies.push(param.clone()),
                }
            }
        }
        c
    }

    pub fn strip_headers(&self, headers: &mut HeaderMap) {
        for name in &self.headers {
            headers.remove(name);
        }
        if self.cookies.is_empty() {
            return;
        }
        let kept: Vec<String> = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .filter(|c| {
                !self
                    .cookies
                    .iter()
                    .any(|name| c.split('=').next() == Some(name.as_str()))
            })
            .map(str::to_owned)
            .collect();
        headers.remove(header::COOKIE);
        if let Ok(v) = HeaderValue::from_str(&kept.join("; ")) {
            if !kept.is_empty() {
                headers.insert(header::COOKIE, v);
            }
        }
    }

    /// The query without the consumed parameters (`None` when nothing is left).
    pub fn strip_query(&self, query: Option<&str>) -> Option<String> {
        let query = query?;
        if self.query.is_empty() {
            return Some(query.to_string());
        }
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                // Compared decoded, as the key was looked for.
                let key = crate::auth::apikey::percent_decode(pair.split('=').next().unwrap_or(""));
                !self.query.contains(&key)
            })
            .collect();
        (!kept.is_empty()).then(|| kept.join("&"))
    }
}

#[cfg(test)]
mod credential_tests {
    use super::*;

    #[test]
    fn strips_what_the_gateway_consumed_and_keeps_the_rest() {
        let c = Credentials {
            headers: vec![header::AUTHORIZATION, HeaderName::from_static("x-api-key")],
            query: vec!["api_key".into()],
            cookies: vec!["session".into()],
        };
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer t".parse().unwrap());
        h.insert("x-api-key", "k".parse().unwrap());
        h.insert(header::COOKIE, "a=1; session=s3cret; b=2".parse().unwrap());
        h.insert("x-other", "kept".parse().unwrap());
        c.strip_headers(&mut h);
        assert!(h.get(header::AUTHORIZATION).is_none() && h.get("x-api-key").is_none());
        assert_eq!(h[header::COOKIE], "a=1; b=2");
        assert_eq!(h["x-other"], "kept");
        assert_eq!(
            c.strip_query(Some("api_key=k&tenant=t")),
            Some("tenant=t".into())
        );
        assert_eq!(c.strip_query(Some("api_key=k")), None);
        assert_eq!(c.strip_query(None), None);
    }
}

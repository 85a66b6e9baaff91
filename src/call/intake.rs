//! What the gateway reads from the client before it looks at the call:
//! who and where the client is, the body's media type, and the body itself
//! (bounded in size and time).

use std::net::IpAddr;

use bytes::Bytes;
use futures_util::FutureExt;
use http::request::Parts;
use http::{header, HeaderMap};
use hyper::body::Incoming;

use crate::call::client_ip;
use crate::cidr;
use crate::config::Limits;
use crate::http::body::ReadError;
use crate::http::error::GatewayError;
use crate::state::{AppState, ConnInfo};
use crate::upstream::Origin;

/// The client's address, as `crate::call::client_ip` resolves it.
pub(super) fn client_address(state: &AppState, conn: &ConnInfo, headers: &HeaderMap) -> IpAddr {
    client_ip::resolve(
        conn.remote().ip(),
        headers,
        &state.config.server.trusted_proxies,
    )
}

/// Where the client request came from, for `X-Forwarded-*`.
pub fn origin(state: &AppState, parts: &Parts, conn: &ConnInfo) -> Origin {
    let peer = conn.remote();
    Origin {
        peer,
        peer_hop: conn.remote_hop().clone(),
        proto: conn.proto,
        host: original_host(parts),
        trusted_peer: cidr::contains(&state.config.server.trusted_proxies, peer.ip()),
    }
}

/// The address the client used: `:authority` on HTTP/2, `Host` on HTTP/1.
fn original_host(parts: &Parts) -> Option<http::HeaderValue> {
    match parts.uri.authority() {
        Some(a) => http::HeaderValue::from_str(a.as_str()).ok(),
        None => parts.headers.get(header::HOST).cloned(),
    }
}

/// The `A2A-Version` the client names, in its header or in the query
/// parameter of that name (spec §3.6.1): refused when the gateway does not
/// speak it, before any agent is asked. Absent or empty means 0.3.
pub(super) fn check_version(parts: &Parts) -> Result<(), GatewayError> {
    for value in parts.headers.get_all(&crate::bridge::headers::VERSION) {
        let text = String::from_utf8_lossy(value.as_bytes());
        spoken(&text)?;
    }
    let Some(query) = parts.uri.query() else {
        return Ok(());
    };
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name.eq_ignore_ascii_case("a2a-version") {
            spoken(&value)?;
        }
    }
    Ok(())
}

fn spoken(text: &str) -> Result<(), GatewayError> {
    use crate::a2a::dialect::{requested_version, Requested};
    match requested_version(text) {
        Requested::Empty | Requested::Spoken(_) => Ok(()),
        Requested::NotSpoken => {
            let shown: String = text.chars().take(32).collect();
            Err(GatewayError::VersionNotSupported(
                shown.escape_default().to_string(),
            ))
        }
    }
}

/// The body is JSON by its `Content-Type`; else what it says instead (for
/// the binding's own error: JSON-RPC's -32005, HTTP+JSON's 415).
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), String> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err("no Content-Type".into());
    };
    let text = value.to_str().unwrap_or("");
    let mime = text.split(';').next().unwrap_or("").trim().as_bytes();
    let is = |prefix: &[u8], suffix: &[u8]| {
        mime.len() >= prefix.len() + suffix.len()
            && mime[..prefix.len()].eq_ignore_ascii_case(prefix)
            && mime[mime.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    // `application/a2a+json` and other `+json` types are JSON too.
    if mime.eq_ignore_ascii_case(b"application/json") || is(b"application/", b"+json") {
        Ok(())
    } else {
        let shown: String = text.chars().take(64).collect();
        Err(format!("'{shown}'"))
    }
}

pub(super) async fn read_body(
    limits: &Limits,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Bytes, GatewayError> {
    let max = limits.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // Refuse a declared oversize body before reading a byte of it.
    if declared.is_some_and(|len| len > max as u64) {
        return Err(GatewayError::PayloadTooLarge { limit: max });
    }
    let mut read = std::pin::pin!(crate::http::body::read_to_limit(body, max));
    // A small body has usually arrived with its head: read it without
    // setting up a timer (a clock read and the runtime's handle, made and
    // dropped). A body still on its way is awaited under the timeout; the
    // noop waker of this first poll is replaced at the next one.
    let read = match (&mut read).now_or_never() {
        Some(read) => read,
        None => match tokio::time::timeout(limits.body_read_timeout, read).await {
            Ok(read) => read,
            Err(_) => return Err(GatewayError::BodyTimeout(limits.body_read_timeout)),
        },
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(ReadError::TooLarge) => Err(GatewayError::PayloadTooLarge { limit: max }),
        Err(ReadError::Body(e)) => Err(GatewayError::BodyRead(e.to_string())),
    }
}

//! Serving a card: JSON bytes with a strong `ETag`, `Last-Modified`,
//! `Cache-Control`, and `304 Not Modified` when the client already has it
//! (`If-None-Match`, or `If-Modified-Since` when no tag is asked about).

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use serde_json::Value;

use crate::http::body::{self, Body};

/// A card ready to serve.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
    /// When this process first served these bytes (whole seconds).
    pub last_modified: SystemTime,
}

/// When each card content (by its tag) was first rendered. A card rebuilt
/// with the same content keeps its date, so a client's `If-Modified-Since`
/// stays good across refreshes; bounded, as cards change rarely.
fn first_rendered(tag: &str) -> SystemTime {
    static SEEN: OnceLock<moka::sync::Cache<String, SystemTime>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| moka::sync::Cache::new(1024));
    seen.get_with_by_ref(tag, || {
        let now = SystemTime::now();
        // HTTP dates have whole seconds: a date with a fraction would never
        // compare equal to the one a client echoes.
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    })
}

pub fn render(card: &Value) -> Rendered {
    let body = Bytes::from(serde_json::to_vec(card).unwrap_or_default());
    // Same bytes, same tag, on every replica of the same build.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    let tag = format!("\"{:016x}-{:x}\"", hasher.finish(), body.len());
    let etag = HeaderValue::from_str(&tag).unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    let last_modified = first_rendered(&tag);
    Rendered {
        body,
        etag,
        last_modified,
    }
}

/// A public card: shared caches may keep it for `max_age`.
pub fn respond(card: &Rendered, request: &HeaderMap, max_age: Duration) -> Response<Body> {
    let cache = HeaderValue::from_str(&format!("public, max-age={}", max_age.as_secs()))
        .unwrap_or_else(|_| HeaderValue::from_static("no-cache"));
    respond_with(card, request, cache)
}

/// A card with the given `Cache-Control`.
pub fn respond_with(card: &Rendered, request: &HeaderMap, cache: HeaderValue) -> Response<Body> {
    let fresh = not_modified(request, card);
    let mut response = if fresh {
        let mut r = Response::new(body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(body::full(card.body.clone()));
        crate::http::body::set_json(r.headers_mut());
        r
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, card.etag.clone());
    if let Ok(date) = HeaderValue::from_str(&httpdate::fmt_http_date(card.last_modified)) {
        headers.insert(header::LAST_MODIFIED, date);
    }
    headers.insert(header::CACHE_CONTROL, cache);
    response
}

/// RFC 9110 §13.2.2: `If-None-Match` when the request has one, else
/// `If-Modified-Since` (an unreadable date is ignored, as the RFC says).
fn not_modified(request: &HeaderMap, card: &Rendered) -> bool {
    if request.contains_key(header::IF_NONE_MATCH) {
        return if_none_match(request, &card.etag);
    }
    request
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .is_some_and(|since| card.last_modified <= since)
}

/// RFC 9110 §13.1.2: `*` or any listed tag, compared weakly.
fn if_none_match(request: &HeaderMap, etag: &HeaderValue) -> bool {
    let ours = etag.to_str().unwrap_or("").trim_start_matches("W/");
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_come_back_as_the_agent_wrote_them() {
        // Found by the card fuzzer: without exact float parsing a 48-digit
        // integer came back one unit in the last place off.
        let text = r#"{"examples":111111111111111111111111111111111111111111111111,"f":0.1}"#;
        let card: Value = serde_json::from_str(text).unwrap();
        let back: Value = serde_json::from_slice(&render(&card).body).unwrap();
        assert_eq!(back, card);
    }

    #[test]
    fn same_card_same_tag_other_card_other_tag() {
        let a = render(&json!({"name": "a"}));
        assert_eq!(a.etag, render(&json!({"name": "a"})).etag);
        assert_ne!(a.etag, render(&json!({"name": "b"})).etag);
    }

    #[test]
    fn conditional_requests() {
        let card = render(&json!({"name": "a"}));
        let tag = card.etag.to_str().unwrap().to_string();
        let ask = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::IF_NONE_MATCH, value.parse().unwrap());
            respond(&card, &h, Duration::from_secs(60)).status()
        };
        assert_eq!(ask(&tag), StatusCode::NOT_MODIFIED);
        assert_eq!(
            ask(&format!("\"other\", W/{tag}")),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(ask("*"), StatusCode::NOT_MODIFIED);
        assert_eq!(ask("\"other\""), StatusCode::OK);
        let plain = respond(&card, &HeaderMap::new(), Duration::from_secs(60));
        assert_eq!(plain.status(), StatusCode::OK);
        assert_eq!(plain.headers()[header::CACHE_CONTROL], "public, max-age=60");
        assert_eq!(plain.headers()[header::ETAG], card.etag);
        let date = plain.headers()[header::LAST_MODIFIED].to_str().unwrap();
        assert_eq!(httpdate::parse_http_date(date).unwrap(), card.last_modified);
    }

    #[test]
    fn if_modified_since_is_read_when_no_tag_is_asked_about() {
        let card = render(&json!({"name": "dated"}));
        let at = |offset: i64| {
            let secs = Duration::from_secs(offset.unsigned_abs());
            let when = if offset < 0 {
                card.last_modified - secs
            } else {
                card.last_modified + secs
            };
            httpdate::fmt_http_date(when)
        };
        let ask = |headers: &[(header::HeaderName, String)]| {
            let mut h = HeaderMap::new();
            for (name, value) in headers {
                h.insert(name, value.parse().unwrap());
            }
            respond(&card, &h, Duration::from_secs(60)).status()
        };
        let since = header::IF_MODIFIED_SINCE;
        assert_eq!(ask(&[(since.clone(), at(0))]), StatusCode::NOT_MODIFIED);
        assert_eq!(ask(&[(since.clone(), at(3600))]), StatusCode::NOT_MODIFIED);
        assert_eq!(ask(&[(since.clone(), at(-1))]), StatusCode::OK);
        assert_eq!(ask(&[(since.clone(), "not a date".into())]), StatusCode::OK);
        // A tag that does not match wins over a date that would.
        let other = (header::IF_NONE_MATCH, "\"other\"".to_string());
        assert_eq!(ask(&[other, (since, at(0))]), StatusCode::OK);
    }

    #[test]
    fn the_same_content_keeps_its_date() {
        let first = render(&json!({"name": "kept"}));
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(
            render(&json!({"name": "kept"})).last_modified,
            first.last_modified
        );
        assert!(render(&json!({"name": "newer"})).last_modified >= first.last_modified);
    }
}

//! Serving a card: JSON bytes with a strong `ETag`, `Cache-Control`, and
//! `304 Not Modified` when the client already has it.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use serde_json::Value;

use crate::body::{self, Body};

/// A card ready to serve.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
}

pub fn render(card: &Value) -> Rendered {
    let body = Bytes::from(serde_json::to_vec(card).unwrap_or_default());
    // Same bytes, same tag, on every replica of the same build.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    let tag = format!("\"{:016x}-{:x}\"", hasher.finish(), body.len());
    let etag = HeaderValue::from_str(&tag).unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    Rendered { body, etag }
}

pub fn respond(card: &Rendered, request: &HeaderMap, max_age: Duration) -> Response<Body> {
    let fresh = if_none_match(request, &card.etag);
    let mut response = if fresh {
        let mut r = Response::new(body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(body::full(card.body.clone()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, card.etag.clone());
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={}", max_age.as_secs())) {
        headers.insert(header::CACHE_CONTROL, v);
    }
    response
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
    }
}

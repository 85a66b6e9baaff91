//! The console's page, embedded in the binary: no CDN, no build step, so
//! it works air-gapped. Served with a strict Content-Security-Policy: only
//! these files run, nothing inline, and the page talks to its own origin.

use http::{header, HeaderValue, Response, StatusCode};
use serde_json::json;

use crate::http::body::{self, Body};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// The page's policy: its own files, its own endpoints, nothing inline.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// `/console`, `/console/` and the page's files.
pub fn serve(path: &str) -> Response<Body> {
    let (text, kind) = match path {
        "/console" | "/console/" | "/console/index.html" => (INDEX, "text/html; charset=utf-8"),
        "/console/console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "/console/console.css" => (STYLE, "text/css; charset=utf-8"),
        _ => {
            let why = format!("no console file {path}");
            return super::json_response(StatusCode::NOT_FOUND, &json!({"error": why}));
        }
    };
    let mut response = Response::new(body::full(text));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The files change with the binary; a reload must not mix versions.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

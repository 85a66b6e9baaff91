//! The operator's console, on the admin listener: its page (`assets`)
//! and the JSON endpoints the page reads (`/admin/…`): the fleet, the
//! skills and the text matcher, the recent calls (live over SSE), the
//! limits, and "Try it", which sends a call through the public listener.
//! docs/console.md documents each endpoint.

use std::sync::Arc;

use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use crate::http::body::{self, Body};
use crate::state::AppState;

mod assets;
mod calls;
pub mod fleet;
mod limits;
mod session;
mod skills;
mod try_grpc;
mod try_it;

/// Whether the admin listener's `path` is the console's.
pub fn owns(path: &str) -> bool {
    path == "/console" || path.starts_with("/console/") || path.starts_with("/admin/")
}

/// Answers one request for the console or its endpoints.
pub async fn handle(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    if !state.config.console.enabled {
        let why = "the console is off ([console] enabled = false)";
        return json_response(StatusCode::NOT_FOUND, &json!({"error": why}));
    }
    let path = request.uri().path().to_string();
    if !path.starts_with("/admin/") {
        return assets::serve(&path);
    }
    if path == "/admin/session" {
        return session::serve(&state, request).await;
    }
    if let Some(refused) = session::check(&state, request.headers()) {
        return refused;
    }
    // Someone has the console open: the recent calls are recorded.
    state.metrics.recent_calls.look();
    let query = request.uri().query().map(str::to_owned);
    let query = query.as_deref();
    match (request.method().clone(), path.as_str()) {
        (Method::GET, "/admin/fleet") => fleet::serve(&state),
        (Method::GET, "/admin/skills") => skills::list(&state),
        (Method::GET, "/admin/skills/match") => skills::pick(&state, query),
        (Method::GET, "/admin/calls") => calls::list(&state, query),
        (Method::GET, "/admin/calls/stream") => calls::stream(&state),
        (Method::GET, "/admin/limits") => limits::serve(&state),
        (Method::GET, "/admin/config") => try_it::config(&state),
        (Method::POST, "/admin/try") => try_it::send(&state, request).await,
        (method, path) => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": format!("no console endpoint {method} {path}; see docs/console.md")}),
        ),
    }
}

/// A JSON answer of the console's: never cached, never sniffed.
pub fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(body::full(value.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A query's parameter, decoded.
fn param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

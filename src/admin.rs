//! The admin listener: probes for orchestrators, on a port of its own so it
//! can stay private while the proxy port is public.

use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};

use crate::body::{self, Body};
use crate::state::AppState;

pub async fn handle(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    match request.uri().path() {
        // Liveness: the process answers. Never fails while it runs, so a
        // draining gateway is not killed before its streams finish.
        "/healthz" => json_response(StatusCode::OK, &json!({"status": "ok"})),
        "/readyz" => readiness(&state),
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not found; try /healthz or /readyz"}),
        ),
    }
}

/// Ready while not draining and the upstream cards satisfy
/// `card_refresh.ready_when`; the body says where each upstream stands.
fn readiness(state: &AppState) -> Response<Body> {
    let view = state.fleet.view();
    let mut upstreams = Map::new();
    for u in &state.config.upstreams {
        let attempt = state.fleet.store.attempt(&u.name);
        let entry = match view.card_of(&u.name) {
            Some(card) => {
                json!({"card": "fresh", "age_seconds": card.fetched_at.elapsed().as_secs(), "last_error": attempt.error.map(|e| e.to_string())})
            }
            None => json!({"card": "missing", "last_error": attempt.error.map(|e| e.to_string())}),
        };
        upstreams.insert(u.name.clone(), entry);
    }
    let (status, word) = if state.is_draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining")
    } else if !state.fleet.ready(&state.config) {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "waiting for upstream cards",
        )
    } else {
        (StatusCode::OK, "ready")
    };
    json_response(
        status,
        &json!({"status": word, "upstreams": Value::Object(upstreams)}),
    )
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(body::full(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

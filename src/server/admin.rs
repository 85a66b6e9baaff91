//! The admin listener: probes for orchestrators, on a port of its own so it
//! can stay private while the proxy port is public.

use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};

use crate::http::body::{self, Body};
use crate::state::AppState;

pub async fn handle(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    match request.uri().path() {
        // Liveness: the process answers. Never fails while it runs, so a
        // draining gateway is not killed before its streams finish.
        "/healthz" => json_response(StatusCode::OK, &json!({"status": "ok"})),
        "/readyz" => readiness(&state),
        "/metrics" => metrics(&state),
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not found; try /healthz, /readyz or /metrics"}),
        ),
    }
}

/// The Prometheus text format, with the gauges that describe current state
/// (affinity size, card age, upstream health) brought up to date first.
fn metrics(state: &AppState) -> Response<Body> {
    let m = &state.metrics;
    m.affinity_entries
        .set(i64::try_from(state.fleet.affinity.len()).unwrap_or(i64::MAX));
    let view = state.fleet.view();
    for upstream in &state.upstreams {
        let name = upstream.name.as_str();
        let age = view
            .card_of(name)
            .map_or(-1.0, |c| c.fetched_at.elapsed().as_secs_f64());
        m.card_age.with_label_values(&[name]).set(age);
        let health = upstream.health();
        let up = health.iter().any(|r| r.state != "open");
        m.upstream_up.with_label_values(&[name]).set(i64::from(up));
        for replica in &health {
            let value = match replica.state {
                "closed" => 0,
                "half_open" => 1,
                _ => 2,
            };
            m.breaker_state
                .with_label_values(&[name, &replica.url])
                .set(value);
        }
    }
    let mut response = Response::new(body::full(m.render()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
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
        let entry = with_versions(entry, &view.speaks(u));
        upstreams.insert(u.name.clone(), with_replicas(entry, state, &u.name));
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

/// Adds what the upstream speaks, by binding, and who says so (its card or
/// the config's `protocol_versions`).
fn with_versions(mut entry: Value, speaks: &crate::routing::fleet::Speaks) -> Value {
    let versions: Map<String, Value> = speaks
        .versions()
        .into_iter()
        .map(|(binding, versions)| (binding.label().to_string(), json!(versions)))
        .collect();
    if let Some(object) = entry.as_object_mut() {
        object.insert("versions".into(), Value::Object(versions));
        object.insert("versions_from".into(), speaks.from.into());
    }
    entry
}

/// Adds each replica's breaker state and calls awaiting headers; they do
/// not affect readiness (an ejected replica is the breaker's business).
fn with_replicas(mut entry: Value, state: &AppState, name: &str) -> Value {
    let Some(upstream) = state.upstreams.iter().find(|u| u.name == name) else {
        return entry;
    };
    let replicas: Vec<Value> = upstream
        .health()
        .into_iter()
        .map(|r| json!({"url": r.url, "state": r.state, "outstanding": r.outstanding}))
        .collect();
    if let Some(object) = entry.as_object_mut() {
        object.insert("replicas".into(), Value::Array(replicas));
    }
    entry
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

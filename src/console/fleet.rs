//! `GET /admin/fleet`: each agent as the gateway sees it now: its card
//! and what it speaks, its signature state, each replica's breaker, the
//! calls in flight, and its calls and errors over the last minute. The
//! readiness probe (`crate::server::admin`) shares the per-agent parts.

use http::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::json_response;
use crate::http::body::Body;
use crate::state::AppState;

pub fn serve(state: &AppState) -> Response<Body> {
    let view = state.fleet.view();
    let (minute, seconds) = state.metrics.last_minute();
    let mut agents = Vec::new();
    let configured = state.config.upstreams.iter().zip(&state.upstreams);
    for (i, (u, upstream)) in configured.enumerate() {
        let attempt = state.fleet.store.attempt(&u.name);
        let last_error = attempt.error.map(|e| e.to_string());
        let card = match view.card_of(&u.name) {
            Some(card) => json!({"state": "fresh",
                "age_seconds": card.fetched_at.elapsed().as_secs(),
                "name": card.card.get("name"), "description": card.card.get("description"),
                "streaming": card.streaming, "push_notifications": card.push_notifications,
                "last_error": last_error}),
            None => json!({"state": "missing", "last_error": last_error}),
        };
        let (calls, errors) = minute.get(&u.name).copied().unwrap_or((0.0, 0.0));
        let entry = json!({
            "name": u.name,
            "urls": u.urls.iter().map(|url| url.to_string()).collect::<Vec<_>>(),
            "card": card,
            "in_flight": state.in_flight.get(i).map_or(0, |f| f.in_flight(u.max_in_flight)),
            "max_in_flight": u.max_in_flight,
            "last_minute": {"calls": calls, "errors": errors, "seconds": seconds.round(),
                "per_second": if seconds > 0.0 { calls / seconds } else { 0.0 },
                "error_rate": if calls > 0.0 { errors / calls } else { 0.0 }},
        });
        let entry = with_signature(with_versions(entry, &view.speaks(u)), state, u);
        agents.push(with_replicas(entry, upstream));
    }
    let status = match state.fleet.ready(&state.config) {
        true => "ready",
        false => "waiting for upstream cards",
    };
    let body = json!({"status": status, "generation": view.generation, "agents": agents});
    json_response(StatusCode::OK, &body)
}

/// Adds where the agent's card signature stands, when it is checked.
pub fn with_signature(mut entry: Value, state: &AppState, u: &crate::config::Upstream) -> Value {
    let mode = u.card_signature.mode;
    if mode == crate::config::card_trust::SignatureMode::Off {
        return entry;
    }
    let described = match state.fleet.store.signatures.get(&u.name) {
        Some(s) if s.under == u.card_signature => s.describe(),
        _ => json!({"mode": mode.label(), "state": "unchecked"}),
    };
    if let Some(object) = entry.as_object_mut() {
        object.insert("card_signature".into(), described);
    }
    entry
}

/// Adds what the upstream speaks, by binding, and who says so (its card or
/// the config's `protocol_versions`).
pub fn with_versions(mut entry: Value, speaks: &crate::routing::fleet::Speaks) -> Value {
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
pub fn with_replicas(mut entry: Value, upstream: &crate::upstream::Upstream) -> Value {
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

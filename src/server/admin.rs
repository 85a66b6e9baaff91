//! The admin listener: probes for orchestrators, metrics and the console
//! (`crate::console`), on a port of its own so it can stay private while
//! the proxy port is public.

use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};

use crate::console::fleet::{with_replicas, with_signature, with_versions};
use crate::http::body::{self, Body};
use crate::state::AppState;

pub async fn handle(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    if crate::console::owns(request.uri().path()) {
        return Box::pin(crate::console::handle(state, request)).await;
    }
    match request.uri().path() {
        // Liveness: the process answers. Never fails while it runs, so a
        // draining gateway is not killed before its streams finish.
        "/healthz" => json_response(StatusCode::OK, &json!({"status": "ok"})),
        "/readyz" => readiness(&state, verbose(request.uri().query())),
        "/metrics" => metrics(&state),
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": "not found; try /healthz, /readyz, /metrics or /console"}),
        ),
    }
}

/// The Prometheus text format, with the gauges that describe current state
/// (affinity size, card age, upstream health, the push relay's queues)
/// brought up to date first.
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
    if let Some(relay) = &state.push_relay {
        m.push_queues(relay.queues.depth(), relay.queues.dropped());
    }
    let mut response = Response::new(body::full(m.render()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// Whether `/readyz` says where each upstream stands: yes, unless the
/// query says `verbose=false` (or `0`, `no`), as probes should ask.
fn verbose(query: Option<&str>) -> bool {
    let Some(query) = query else { return true };
    !form_urlencoded::parse(query.as_bytes())
        .any(|(name, value)| name == "verbose" && matches!(&*value, "false" | "0" | "no"))
}

/// Ready while not draining and the upstream cards satisfy
/// `card_refresh.ready_when`. The verbose body says where each upstream
/// stands; the compact one (`?verbose=false`, for probes) only counts them.
/// Either is linear in the fleet: every upstream is looked up by name in
/// maps, never by a scan, so a probe of a thousand agents stays cheap.
fn readiness(state: &AppState, verbose: bool) -> Response<Body> {
    let view = state.fleet.view();
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
    if !verbose {
        let fresh = view.cards.len();
        let total = state.config.upstreams.len();
        let mut body = json!({"status": word, "upstreams": total, "cards_fresh": fresh});
        return json_response(status, with_store(&mut body, state));
    }
    let mut upstreams = Map::new();
    for (u, upstream) in state.config.upstreams.iter().zip(&state.upstreams) {
        let attempt = state.fleet.store.attempt(&u.name);
        let entry = match view.card_of(&u.name) {
            Some(card) => {
                json!({"card": "fresh", "age_seconds": card.fetched_at.elapsed().as_secs(), "last_error": attempt.error.map(|e| e.to_string())})
            }
            None => json!({"card": "missing", "last_error": attempt.error.map(|e| e.to_string())}),
        };
        let entry = with_signature(with_versions(entry, &view.speaks(u)), state, u);
        upstreams.insert(u.name.clone(), with_replicas(entry, upstream));
    }
    let mut body = json!({"status": word, "upstreams": Value::Object(upstreams)});
    json_response(status, with_store(&mut body, state))
}

/// Adds the shared rate-limit store's state, when there is one. It does
/// not affect readiness: while it cannot answer, calls meet the
/// configured fallback, and the gateway still serves.
fn with_store<'a>(body: &'a mut Value, state: &AppState) -> &'a Value {
    if let (Some(store), Some(object)) = (state.rate.store(), body.as_object_mut()) {
        let fallback = store.settings().on_store_error.label();
        object.insert(
            "rate_limit_store".into(),
            json!({"address": store.describe(), "state": store.state().label(), "on_store_error": fallback}),
        );
    }
    body
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(body::full(value.to_string()));
    *response.status_mut() = status;
    crate::http::body::set_json(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A fleet of `n` agents with a card each (two skills, JSON-RPC 0.3),
    /// named `agent-{i}` after a long prefix they share: a lookup by scan
    /// compares the whole prefix with every name before the one it finds.
    fn fleet_of(n: usize) -> AppState {
        let prefix = "x".repeat(200);
        let text: String = (0..n)
            .map(|i| format!("[[upstreams]]\nname = \"{prefix}agent-{i:05}\"\nurl = \"http://127.0.0.1:9\"\n"))
            .collect();
        let state = AppState::new(crate::config::load_str(&text).unwrap());
        for (i, upstream) in state.upstreams.iter().enumerate() {
            let card = json!({"name": format!("agent-{i}"), "url": "http://127.0.0.1:9/",
                "protocolVersion": "0.3.0", "version": "1", "description": "d",
                "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [],
                "skills": [{"id": format!("a-{i}"), "name": "a", "description": "a", "tags": []},
                           {"id": format!("b-{i}"), "name": "b", "description": "b", "tags": []}]});
            state.fleet.store.insert(upstream, &card.to_string());
        }
        state.fleet.reconfigure(&state.config);
        state
    }

    async fn body_of(response: Response<Body>) -> Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// The quickest of a few answers, in seconds.
    fn quickest(state: &AppState, verbose: bool) -> f64 {
        (0..5)
            .map(|_| {
                let started = std::time::Instant::now();
                drop(readiness(state, verbose));
                started.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[tokio::test]
    async fn readiness_says_where_each_upstream_stands_or_only_counts_them() {
        let state = fleet_of(3);
        let detail = body_of(readiness(&state, true)).await;
        assert_eq!(detail["status"], "ready", "{detail}");
        let agent = |i: usize| &detail["upstreams"][format!("{}agent-{i:05}", "x".repeat(200))];
        assert_eq!(agent(2)["card"], "fresh", "{detail}");
        assert_eq!(agent(1)["replicas"][0]["state"], "closed", "{detail}");
        assert_eq!(agent(0)["versions"]["JSONRPC"], json!(["0.3"]), "{detail}");
        let compact = body_of(readiness(&state, false)).await;
        assert_eq!(
            compact,
            json!({"status": "ready", "upstreams": 3, "cards_fresh": 3})
        );
        assert!(verbose(None) && verbose(Some("x=1")) && verbose(Some("verbose=true")));
        assert!(!verbose(Some("verbose=false")) && !verbose(Some("a=b&verbose=0")));
    }

    /// Thirty times the fleet costs about thirty times as much (40x in a
    /// debug build: the body's map is a B-tree), not a thousand: each
    /// upstream is found by name in a map. Found by a scan, as before, 3,000
    /// agents cost 107 times 100 here. The quickest of five runs each, so
    /// that a busy machine slows both sides alike.
    #[tokio::test]
    async fn readiness_grows_linearly_with_the_fleet() {
        let (small, large) = (fleet_of(100), fleet_of(3000));
        for verbose in [true, false] {
            let (a, b) = (quickest(&small, verbose), quickest(&large, verbose));
            let ratio = b / a;
            assert!(
                ratio < 60.0,
                "verbose={verbose}: 100 agents {a:.6}s, 3000 agents {b:.6}s: {ratio:.1}x"
            );
        }
    }
}

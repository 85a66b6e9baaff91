//! `GET /admin/limits`: the rate limits as configured, with the calls each
//! refused so far and the shared store's state; open streams against
//! their bounds; each agent's calls in flight against its limit.

use http::{Response, StatusCode};
use prometheus::core::Collector;
use serde_json::{json, Map, Value};

use super::json_response;
use crate::http::body::Body;
use crate::limits::rate::{Period, QuotaSpec};
use crate::state::AppState;

fn quota(limit: &str, scope: Option<&str>, spec: &QuotaSpec) -> Value {
    let per = match spec.period {
        Period::Second => "second",
        Period::Minute => "minute",
    };
    json!({"limit": limit, "scope": scope, "amount": spec.amount.get(), "per": per, "burst": spec.burst.get()})
}

/// `rejections_total` by limit, as counted so far.
fn rejections(state: &AppState) -> Map<String, Value> {
    let mut counted = Map::new();
    for family in state.metrics.rejections.collect() {
        for metric in family.get_metric() {
            let limit = (metric.get_label().iter())
                .find(|l| l.name() == "limit")
                .map(|l| l.value().to_string());
            if let Some(limit) = limit {
                counted.insert(limit, json!(metric.get_counter().get_value()));
            }
        }
    }
    counted
}

pub fn serve(state: &AppState) -> Response<Body> {
    let rate = &state.config.rate_limits;
    let mut configured = Vec::new();
    if let Some(spec) = &rate.global {
        configured.push(quota("global", None, spec));
    }
    if let Some(spec) = &rate.per_caller {
        configured.push(quota("caller", None, spec));
    }
    for (name, spec) in &rate.upstreams {
        configured.push(quota("upstream", Some(name), spec));
    }
    for (name, spec) in &rate.skills {
        configured.push(quota("skill", Some(name), spec));
    }
    let store = state.rate.store().map(|store| {
        json!({"address": store.describe(), "state": store.state().label(),
            "on_store_error": store.settings().on_store_error.label()})
    });
    let in_flight: Vec<_> = (state.config.upstreams.iter().zip(&state.in_flight))
        .map(|(u, f)| {
            json!({"upstream": u.name, "in_flight": f.in_flight(u.max_in_flight),
                "max": u.max_in_flight, "queue": u.queue})
        })
        .collect();
    let c = &state.config.concurrency;
    let body = json!({
        "rate_limits": {"configured": configured, "store": store,
            "max_tracked_callers": rate.max_tracked_callers, "rejections": rejections(state)},
        "concurrency": {"streams_open": state.streams.open(), "max_streams": c.max_streams,
            "max_streams_per_caller": c.max_streams_per_caller},
        "in_flight": in_flight,
    });
    json_response(StatusCode::OK, &body)
}

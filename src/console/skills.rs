//! `GET /admin/skills`: every published skill, its owner and how calls
//! are routed; `GET /admin/skills/match?text=…`: which skill the text
//! matcher would pick for a sentence, with every skill's score.

use http::{Response, StatusCode};
use serde_json::json;

use super::{json_response, param};
use crate::http::body::Body;
use crate::state::AppState;

/// Bound on the sentence matched: a message's text, not a document.
const MAX_TEXT: usize = 4096;

pub fn list(state: &AppState) -> Response<Body> {
    let view = state.fleet.view();
    let skills: Vec<_> = (view.skills.iter())
        .map(|s| {
            json!({"id": s.id, "name": s.name, "description": s.description, "tags": s.tags,
                "examples": s.examples, "owner": s.upstream, "streaming": s.streaming})
        })
        .collect();
    let routing = &state.config.routing;
    let matcher = &routing.matcher;
    let body = json!({
        "skills": skills,
        "routing": {
            "default_upstream": routing.default_upstream,
            "skill_header": routing.skill_header.as_str(),
            "metadata_keys": routing.metadata_keys,
            "match": {"enabled": matcher.enabled, "min_score": matcher.min_score, "margin": matcher.margin},
        },
    });
    json_response(StatusCode::OK, &body)
}

pub fn pick(state: &AppState, query: Option<&str>) -> Response<Body> {
    let text = param(query, "text").unwrap_or_default();
    if text.len() > MAX_TEXT {
        let why = format!("text is over {MAX_TEXT} bytes");
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": why}));
    }
    let view = state.fleet.view();
    let owner = |id: &str| view.skill(id).map(|s| s.upstream.clone());
    let scores: Vec<_> = (view.matcher.scores(&text).into_iter())
        .map(|(skill, score)| json!({"skill": skill, "owner": owner(&skill), "score": score}))
        .collect();
    let picked = (view.matcher.pick(&text, &state.config.routing.matcher)).map(|p| {
        json!({"skill": p.skill_id, "owner": p.upstream, "score": p.score, "runner_up": p.runner_up})
    });
    let body = json!({"text": text, "picked": picked, "scores": scores});
    json_response(StatusCode::OK, &body)
}

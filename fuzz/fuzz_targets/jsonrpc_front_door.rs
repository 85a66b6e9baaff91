//! The JSON-RPC front door, composed as `proxy::handle_call` composes it:
//! bytes → envelope → method table → params → (routing reads) or an error
//! response. Never a panic, and every error answer is a JSON-RPC 2.0 error
//! object with the right code that mirrors the request id byte for byte.
#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use a2a_gateway::a2a::model::read;
use a2a_gateway::a2a::{jsonrpc, methods, validate};
use a2a_gateway::card::aggregate::upstream_skills;
use a2a_gateway::card::skills::PublishedSkill;
use a2a_gateway::config::{MatchSettings, SkillPolicy};
use a2a_gateway::http::error::GatewayError;
use a2a_gateway::routing::matcher::Matcher;
use a2a_gateway::routing::request;
use futures_util::FutureExt;
use http::{HeaderMap, HeaderName, StatusCode};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// As `proxy::MAX_ECHOED_METHOD`: unknown names are echoed this far.
const MAX_ECHOED_METHOD: usize = 64;

fuzz_target!(|data: &[u8]| front_door(data));

fn front_door(data: &[u8]) {
    let envelope = match jsonrpc::parse(data) {
        Ok(envelope) => envelope,
        Err(e) => {
            assert!(
                e.code == jsonrpc::PARSE_ERROR || e.code == jsonrpc::INVALID_REQUEST,
                "envelope error code {}",
                e.code
            );
            if e.code == jsonrpc::PARSE_ERROR {
                assert!(e.id.is_none(), "a parse error cannot have read an id");
            } else {
                // An invalid request is still JSON.
                assert!(serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok());
            }
            let response = GatewayError::Rpc {
                code: e.code,
                message: e.message,
            }
            .into_response(e.id);
            check_error(response, e.id, e.code);
            return;
        }
    };
    // What parse accepted is one JSON object, all of it UTF-8.
    assert!(
        serde_json::from_slice::<HashMap<String, Box<RawValue>>>(data).is_ok(),
        "the envelope accepted a body that is not a JSON object"
    );
    let id = envelope.id;
    if let Some(id) = id {
        let first = id.get().as_bytes()[0];
        assert!(
            matches!(first, b'"' | b'-' | b'0'..=b'9' | b'n'),
            "an id that is not a string, number or null was accepted: {}",
            id.get()
        );
    }
    if let Some(p) = envelope.params {
        assert!(matches!(p.get().as_bytes()[0], b'{' | b'['));
    }
    let Some(method) = methods::lookup(&envelope.method) else {
        let name: String = envelope.method.chars().take(MAX_ECHOED_METHOD).collect();
        let response = GatewayError::MethodNotFound(name).into_response(id);
        check_error(response, id, jsonrpc::METHOD_NOT_FOUND);
        return;
    };
    assert_eq!(method.name, envelope.method);
    let read = read::params(method, envelope.params)
        .and_then(|params| validate::check(method, &params).map(|()| params));
    let params = match read {
        Ok(params) => params,
        Err(message) => {
            assert!(!message.is_empty());
            let response = GatewayError::InvalidParams(message).into_response(id);
            check_error(response, id, jsonrpc::INVALID_PARAMS);
            return;
        }
    };
    // What routing reads from a validated request.
    let params = &params;
    if let Some(task) = request::task_ref(method, params) {
        assert!(!task.id.is_empty());
    }
    if let Some(context) = request::context_ref(method, params) {
        assert!(!context.is_empty());
    }
    let keys = ["skillId".to_string()];
    let header = HeaderName::from_static("a2a-skill");
    if let Some(hint) = request::skill_hint(&HeaderMap::new(), &header, &keys, params) {
        assert!(!hint.is_empty() && hint.trim() == hint);
    }
    if let Some(text) = request::message_text(params) {
        let settings = MatchSettings {
            enabled: true,
            min_score: 1.0,
            margin: 0.25,
        };
        for (_, score) in matcher().scores(&text) {
            assert!(score.is_finite() && score >= 0.0, "score {score}");
        }
        if let Some(pick) = matcher().pick(&text, &settings) {
            assert!(["weather", "travel"].contains(&pick.upstream.as_str()));
            assert!(pick.score >= pick.runner_up);
        }
    }
    // The success answer the gateway writes itself (extended card) mirrors
    // the id too.
    let body = jsonrpc::result_body(id, &json!({"ok": true}));
    let members: HashMap<String, Box<RawValue>> =
        serde_json::from_slice(&body).expect("result body is a JSON object");
    assert_eq!(raw_id(&members), id.map_or("null", RawValue::get));
}

/// Checks one gateway-made error response: HTTP 200 (these are JSON-RPC
/// level problems), JSON content, `jsonrpc` "2.0", the code, and the id
/// exactly as the request wrote it (`null` when there was none).
fn check_error(
    response: http::Response<a2a_gateway::http::body::Body>,
    id: Option<&RawValue>,
    code: i32,
) {
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        "application/json"
    );
    let body = response
        .into_body()
        .collect()
        .now_or_never()
        .expect("an error body is ready at once")
        .expect("an error body cannot fail")
        .to_bytes();
    let members: HashMap<String, Box<RawValue>> = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("error body is not a JSON object ({e}): {body:?}"));
    assert_eq!(members.get("jsonrpc").map(|v| v.get()), Some("\"2.0\""));
    assert!(!members.contains_key("result"));
    let want = id.map_or("null", RawValue::get);
    assert_eq!(raw_id(&members), want, "the id is mirrored byte for byte");
    if let Some(id) = id {
        let needle = format!("\"id\":{}", id.get());
        assert!(
            body.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "the body carries the raw id text"
        );
    }
    let error: Value = serde_json::from_str(members["error"].get()).expect("error object");
    assert_eq!(error["code"], code);
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
}

fn raw_id(members: &HashMap<String, Box<RawValue>>) -> &str {
    members.get("id").map(|v| v.get()).expect("an id member")
}

/// The demo fleet's skills, for the text matcher.
fn matcher() -> &'static Matcher {
    static MATCHER: OnceLock<Matcher> = OnceLock::new();
    MATCHER.get_or_init(|| {
        let weather = json!({"capabilities": {"streaming": true}, "skills": [
            {"id": "forecast", "name": "Weather forecast",
             "description": "Forecasts the weather for a city and day",
             "tags": ["weather", "forecast", "rain", "temperature"],
             "examples": ["will it rain in Paris tomorrow?"]}]});
        let travel = json!({"skills": [
            {"id": "book-flight", "name": "Flight booking",
             "description": "Books a flight to a destination on a date",
             "tags": ["travel", "flight", "booking"],
             "examples": ["book a plane ticket to Rome"]}]});
        let policy = SkillPolicy::default();
        let skills: Vec<PublishedSkill> = upstream_skills("weather", &weather, &policy)
            .into_iter()
            .chain(upstream_skills("travel", &travel, &policy))
            .collect();
        Matcher::new(&skills)
    })
}

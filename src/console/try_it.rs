//! "Try it": `GET /admin/config` says what the page needs to build a call
//! (the versions, bindings and credentials the gateway takes), and `POST
//! /admin/try` sends one call through the public listener, as a client
//! would, streaming its answer back. The page stays on its own origin, so
//! the public listener opens no CORS door; the user's credentials are
//! used for that one request and kept nowhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use super::json_response;
use super::try_grpc::HEAD_TIMEOUT;
use crate::auth::config::{KeyLocation, SchemeKind};
use crate::http::body::{Body, BoxError};
use crate::state::AppState;

/// Headers a tried call may carry, besides an `apiKey` scheme's own.
const PASSED: [&str; 6] = [
    "content-type",
    "accept",
    "a2a-version",
    "a2a-skill",
    "a2a-extensions",
    "authorization",
];

pub fn is_json(headers: &HeaderMap) -> bool {
    (headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok()))
    .is_some_and(|v| {
        v.trim_start()
            .to_ascii_lowercase()
            .starts_with("application/json")
    })
}

/// The gateway's schemes as the page offers them (those `keep` selects):
/// what to ask for and where it goes.
pub fn schemes(state: &AppState, keep: impl Fn(&str) -> bool) -> Vec<Value> {
    (state.config.auth.iter())
        .flat_map(|a| a.schemes.iter())
        .filter(|s| keep(&s.name))
        .map(|s| match &s.kind {
            SchemeKind::ApiKey {
                location, param, ..
            } => {
                let at = match location {
                    KeyLocation::Header => "header",
                    KeyLocation::Query => "query",
                    KeyLocation::Cookie => "cookie",
                };
                json!({"scheme": s.name, "type": "apiKey", "in": at, "name": param})
            }
            SchemeKind::Basic { .. } => json!({"scheme": s.name, "type": "basic"}),
            SchemeKind::MutualTls => json!({"scheme": s.name, "type": "mutualTLS"}),
            _ => json!({"scheme": s.name, "type": "bearer"}),
        })
        .collect()
}

pub fn config(state: &AppState) -> Response<Body> {
    let auth = schemes(state, |_| true);
    let public_url = match &state.config.server.public_url {
        Some(url) => format!("{}{}", url.origin, url.path),
        None => state
            .listening()
            .map_or_else(String::new, |a| format!("http://{a}")),
    };
    let body = json!({
        "public_url": public_url,
        "versions": ["1.0", "0.3", "0.1"],
        "bindings": ["JSONRPC", "HTTP+JSON", "GRPC"],
        "auth": auth,
        "console_auth": !state.config.console.auth.is_empty(),
    });
    json_response(StatusCode::OK, &body)
}

/// What the page asks to send.
struct Tried {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

pub async fn send(state: &AppState, request: Request<Incoming>) -> Response<Body> {
    let refuse = |status, why: String| json_response(status, &json!({"error": why}));
    if !is_json(request.headers()) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send application/json".into(),
        );
    }
    let Some(target) = target(state) else {
        let why = "Try it needs the public listener in plain HTTP (it has [tls])".to_string();
        return refuse(StatusCode::NOT_IMPLEMENTED, why);
    };
    let max = state.config.limits.max_body_bytes.saturating_add(64 * 1024);
    let bytes = match crate::http::body::read_to_limit(request.into_body(), max).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is over {max} bytes"),
            )
        }
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(value) => value,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the body is not JSON: {e}"),
            )
        }
    };
    let forwarded = match value["binding"].as_str() {
        Some("grpc") => match grpc_tried(state, &value) {
            Ok(tried) => super::try_grpc::send(target, tried).await,
            Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
        },
        _ => match tried(state, &value) {
            Ok(tried) => forward(target, tried).await,
            Err(why) => return refuse(StatusCode::BAD_REQUEST, why),
        },
    };
    match forwarded {
        Ok(response) => response,
        Err(why) => refuse(StatusCode::BAD_GATEWAY, why),
    }
}

/// Where the public listener takes calls from this host.
fn target(state: &AppState) -> Option<SocketAddr> {
    if state.config.tls.is_some() {
        return None;
    }
    let mut at = state.listening()?;
    if at.ip().is_unspecified() {
        at.set_ip(match at.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    Some(at)
}

/// The page's `{method, path, headers, body}`, checked: the gateway's own
/// paths only, and only the headers a client call needs.
fn tried(state: &AppState, value: &Value) -> Result<Tried, String> {
    let method = match value["method"].as_str().unwrap_or("POST") {
        "POST" => Method::POST,
        "GET" => Method::GET,
        other => return Err(format!("method {other}: only GET and POST")),
    };
    let path = value["path"].as_str().unwrap_or("/").to_string();
    if !path.starts_with('/') || path.starts_with("//") || path.len() > 2048 {
        return Err("path must be the gateway's own, like / or /message:send".into());
    }
    let headers = passed_headers(state, value)?;
    let body = Bytes::from(value["body"].as_str().unwrap_or_default().to_string());
    Ok(Tried {
        method,
        path,
        headers,
        body,
    })
}

/// A gRPC call's `{binding: "grpc", version, stream, params, headers}`.
fn grpc_tried(state: &AppState, value: &Value) -> Result<super::try_grpc::GrpcTried, String> {
    let version = match value["version"].as_str().unwrap_or("1.0") {
        "1.0" => crate::a2a::Version::V1_0,
        "0.3" => crate::a2a::Version::V0_3,
        other => {
            return Err(format!(
                "gRPC version {other}: the services are 1.0 and 0.3"
            ))
        }
    };
    let mut headers = passed_headers(state, value)?;
    headers.remove(header::CONTENT_TYPE);
    Ok(super::try_grpc::GrpcTried {
        version,
        stream: value["stream"].as_bool().unwrap_or(false),
        params: value["params"].clone(),
        headers,
    })
}

/// The headers a tried call passes on: a client call's, no others.
fn passed_headers(state: &AppState, value: &Value) -> Result<HeaderMap, String> {
    let api_keys: Vec<String> = (state.config.auth.iter())
        .flat_map(|a| a.schemes.iter())
        .filter_map(|s| match &s.kind {
            SchemeKind::ApiKey {
                location: KeyLocation::Header,
                param,
                ..
            } => Some(param.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let mut headers = HeaderMap::new();
    for (name, text) in value["headers"].as_object().into_iter().flatten() {
        let lower = name.to_ascii_lowercase();
        if !PASSED.contains(&lower.as_str()) && !api_keys.contains(&lower) {
            return Err(format!("header {name} is not one a tried call passes on"));
        }
        let name = HeaderName::from_bytes(lower.as_bytes())
            .map_err(|_| format!("bad header name {name}"))?;
        let text = text
            .as_str()
            .ok_or_else(|| format!("header {name} is not a string"))?;
        let text =
            HeaderValue::from_str(text).map_err(|_| format!("header {name} has a bad value"))?;
        headers.insert(name, text);
    }
    Ok(headers)
}

/// Sends the call to the public listener; its answer, streamed.
async fn forward(target: SocketAddr, tried: Tried) -> Result<Response<Body>, String> {
    let uri = format!("http://{target}{}", tried.path);
    let mut request = Request::builder()
        .method(tried.method)
        .uri(uri)
        .body(Full::new(tried.body))
        .map_err(|e| format!("the call could not be made: {e}"))?;
    *request.headers_mut() = tried.headers;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let answer = tokio::time::timeout(HEAD_TIMEOUT, client.request(request))
        .await
        .map_err(|_| "the public listener did not answer in time".to_string())?
        .map_err(|e| format!("the public listener could not be reached: {e}"))?;
    let (parts, body) = answer.into_parts();
    let mut response = Response::new(body.map_err(|e| Box::new(e) as BoxError).boxed_unsync());
    *response.status_mut() = parts.status;
    for name in [
        header::CONTENT_TYPE,
        header::RETRY_AFTER,
        header::WWW_AUTHENTICATE,
    ] {
        if let Some(value) = parts.headers.get(&name) {
            response.headers_mut().insert(name, value.clone());
        }
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

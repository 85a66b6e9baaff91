//! The gateway's one error type and the one place it becomes a response.
//!
//! Who failed decides the status (the pingora rule): a request the client got
//! wrong at the JSON-RPC level is answered HTTP 200 with a JSON-RPC error, as
//! A2A servers do; HTTP-level problems get their HTTP status; an upstream
//! failure is 502/504, never 4xx.

use http::{header, HeaderValue, Response, StatusCode};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::a2a::jsonrpc;
use crate::http::body::{self, Body};

/// The versions a client may name in `A2A-Version`, as error messages write them.
const SPOKEN: &str = "1.0, 0.3 (and 0.2) and 0.1";

pub mod grpc;
mod rest;
pub mod table;

pub use rest::status_body;

pub use table::Mapped;

/// Gateway-defined JSON-RPC codes (server range -32000..-32099), documented
/// in README.md.
pub mod codes {
    /// No upstream can take the request (no default, no matching skill).
    pub const NO_ROUTE: i32 = -32040;
    /// The request names a skill the gateway does not publish.
    pub const UNKNOWN_SKILL: i32 = -32041;
    /// Over a rate limit (HTTP 429, with Retry-After and RateLimit headers).
    pub const RATE_LIMITED: i32 = -32070;
    /// Shed: too many calls in flight or streams open (HTTP 503).
    pub const OVERLOADED: i32 = -32071;
    /// Every replica of the upstream is ejected by its breaker (HTTP 503).
    pub const UPSTREAM_EJECTED: i32 = -32055;
    /// Missing or refused credentials (HTTP 401).
    pub const UNAUTHENTICATED: i32 = -32030;
    /// A known caller without the right (HTTP 403).
    pub const FORBIDDEN: i32 = -32031;

    /// The upstream could not be reached or closed before answering.
    pub const UPSTREAM_UNAVAILABLE: i32 = -32050;
    /// The upstream did not connect or answer in time.
    pub const UPSTREAM_TIMEOUT: i32 = -32051;
    /// The upstream answered something that is not valid HTTP.
    pub const UPSTREAM_BAD_RESPONSE: i32 = -32052;
    /// The upstream's SSE stream broke before it ended (final SSE event).
    pub const UPSTREAM_STREAM_BROKEN: i32 = -32053;
    /// The upstream's SSE stream sent nothing for the idle timeout (final SSE event).
    pub const UPSTREAM_STREAM_IDLE: i32 = -32054;
    /// The gateway is shutting down and ended the stream (final SSE event);
    /// resubscribe to continue.
    pub const SHUTTING_DOWN: i32 = -32056;
}

/// The JSON-RPC error code of a response the gateway made itself (set by
/// `GatewayError::into_response`), so the access record can say which
/// error it was.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub i32);

/// Why a rate limit refused a call: which limit, when to retry, and the
/// IETF `RateLimit-Policy` / `RateLimit` header values (`crate::limits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRefusal {
    /// A bounded label: "global", "caller", "upstream", "skill".
    pub limit: &'static str,
    pub retry_after: std::time::Duration,
    pub policy: String,
    pub state: String,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum GatewayError {
    /// A JSON-RPC problem with the request's content (parse, envelope,
    /// method, params): HTTP 200 and the given standard code.
    #[error("{message}")]
    Rpc { code: i32, message: String },
    #[error("method '{0}' is not an A2A method")]
    MethodNotFound(String),
    #[error("invalid params: {0}")]
    InvalidParams(String),
    #[error("request body exceeds the limit of {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("request head (request line and headers) exceeds the limit of {limit} bytes")]
    HeadTooLarge { limit: usize },
    /// An HTTP+JSON body that is not JSON by its `Content-Type`: HTTP's 415.
    #[error("Content-Type must be application/json (got {0})")]
    UnsupportedMediaType(String),
    /// A JSON-RPC request that is not JSON by its `Content-Type`: the A2A
    /// ContentTypeNotSupportedError (-32005), which JSON-RPC clients read.
    #[error("content type not supported: a JSON-RPC request is application/json or application/a2a+json (got {0})")]
    ContentTypeNotSupported(String),
    /// An `A2A-Version` the gateway does not speak, answered before any
    /// agent is asked.
    #[error("A2A version '{0}' is not supported: this gateway speaks {SPOKEN}")]
    VersionNotSupported(String),
    #[error("request body was not received within {0:?}")]
    BodyTimeout(std::time::Duration),
    #[error("reading the request body failed: {0}")]
    BodyRead(String),
    #[error("no route for {method} {path}: {hint}")]
    NotFound {
        method: String,
        path: String,
        hint: &'static str,
    },
    #[error("{method} is not allowed on {path}; use {allow}")]
    MethodNotAllowed {
        method: String,
        path: String,
        allow: &'static str,
    },
    #[error("no upstream can take this request: {reason}")]
    NoRoute {
        reason: String,
        upstreams: Vec<String>,
        skills: Vec<String>,
    },
    #[error("unknown skill '{skill}': it is not in the published card")]
    UnknownSkill { skill: String, skills: Vec<String> },
    #[error("task '{0}' was not found on any agent")]
    TaskNotFound(String),
    #[error("unsupported operation: {0}")]
    UnsupportedOperation(String),
    #[error("push notifications are not supported: {0}")]
    PushNotificationNotSupported(String),
    #[error("the authenticated extended card is not configured on this gateway")]
    ExtendedCardNotConfigured,
    #[error("rate limit exceeded ({}): retry after {}s", .0.limit, .0.retry_after.as_secs_f64().ceil())]
    RateLimited(RateRefusal),
    #[error("overloaded: {reason}")]
    Overloaded {
        /// Which limit refused: "in_flight" or "streams" (a metrics label).
        limit: &'static str,
        reason: String,
    },
    #[error("upstream '{upstream}' is ejected: {detail}")]
    UpstreamEjected {
        upstream: String,
        detail: String,
        retry_after: std::time::Duration,
    },
    #[error("authentication failed: {reason}")]
    Unauthenticated {
        reason: String,
        challenge: String,
        /// The scheme whose credentials were refused ("none" when none were given).
        scheme: String,
    },
    #[error("forbidden: {reason}")]
    Forbidden {
        reason: String,
        challenge: Option<String>,
    },
    #[error("upstream '{upstream}' is unavailable: {detail}")]
    UpstreamUnavailable { upstream: String, detail: String },
    #[error("upstream '{upstream}' timed out: {detail}")]
    UpstreamTimeout { upstream: String, detail: String },
    #[error("upstream '{upstream}' sent an invalid response: {detail}")]
    UpstreamBadResponse { upstream: String, detail: String },
    /// An agent's A2A answer the bridge cannot write in the client's version.
    #[error("agent '{upstream}' sent an answer that cannot be translated: {detail}")]
    InvalidAgentResponse { upstream: String, detail: String },
    #[error("internal gateway error: {0}")]
    Internal(String),
}

impl GatewayError {
    /// The HTTP status of this error's JSON-RPC answer (`table`).
    pub fn status(&self) -> StatusCode {
        self.mapped().rpc_http
    }

    /// The JSON-RPC error code (`table`).
    pub fn code(&self) -> i32 {
        self.mapped().rpc_code
    }

    /// Structured detail for clients and tools, where there is any.
    pub fn data(&self) -> Option<Value> {
        use GatewayError::*;
        match self {
            NoRoute {
                upstreams, skills, ..
            } => Some(json!({ "skills": skills, "upstreams": upstreams })),
            UnknownSkill { skill, skills } => Some(json!({ "skill": skill, "skills": skills })),
            UpstreamUnavailable { upstream, .. }
            | UpstreamTimeout { upstream, .. }
            | UpstreamBadResponse { upstream, .. }
            | InvalidAgentResponse { upstream, .. } => Some(json!({ "upstream": upstream })),
            PayloadTooLarge { limit } | HeadTooLarge { limit } => Some(json!({ "limit": limit })),
            RateLimited(r) => Some(
                json!({ "limit": r.limit, "retryAfterSeconds": r.retry_after.as_secs_f64().ceil() }),
            ),
            UpstreamEjected { upstream, .. } => Some(json!({ "upstream": upstream })),
            VersionNotSupported(sent) => Some(json!({
                "version": sent,
                "supportedVersions": crate::a2a::dialect::SPOKEN_VERSIONS,
            })),
            _ => None,
        }
    }

    /// The response for this error, mirroring the request's id (null when the
    /// request had none or it could not be read).
    pub fn into_response(self, id: Option<&RawValue>) -> Response<Body> {
        let status = self.status();
        let code = self.code();
        let body = jsonrpc::error_body(id, self.code(), &self.to_string(), self.data().as_ref());
        self.answer(status, code, body)
    }

    /// An answer to this error with `body`, in any binding: its status, the
    /// code the access record reads, JSON, and the error's headers.
    fn answer(
        &self,
        status: StatusCode,
        code: i32,
        body: impl Into<bytes::Bytes>,
    ) -> Response<Body> {
        let mut response = Response::new(body::full(body));
        *response.status_mut() = status;
        response.extensions_mut().insert(ErrorCode(code));
        // How the error is written in the other bindings, for a front door
        // that reads the JSON-RPC answer back (`crate::ingress::grpc`).
        response.extensions_mut().insert(self.mapped());
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        self.add_headers(headers);
        response
    }
}

impl GatewayError {
    /// The headers an answer to this error carries in every binding:
    /// `Allow`, `Retry-After` and the rate-limit fields, the challenge.
    pub(crate) fn add_headers(&self, headers: &mut http::HeaderMap) {
        match self {
            GatewayError::MethodNotAllowed { allow, .. } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            GatewayError::RateLimited(r) => {
                let retry = r.retry_after.as_secs_f64().ceil().max(1.0) as u64;
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry));
                for (name, value) in [("ratelimit-policy", &r.policy), ("ratelimit", &r.state)] {
                    if let Ok(v) = HeaderValue::from_str(value) {
                        headers.insert(http::HeaderName::from_static(name), v);
                    }
                }
            }
            GatewayError::UpstreamEjected { retry_after, .. } => {
                let retry = retry_after.as_secs_f64().ceil().max(1.0) as u64;
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry));
            }
            GatewayError::Unauthenticated { challenge, .. }
            | GatewayError::Forbidden {
                challenge: Some(challenge),
                ..
            } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_failures_are_5xx_never_4xx() {
        let up = |d: &str| (d.to_string(), "u".to_string());
        let (detail, upstream) = up("x");
        for e in [
            GatewayError::UpstreamUnavailable {
                upstream: upstream.clone(),
                detail: detail.clone(),
            },
            GatewayError::UpstreamTimeout {
                upstream: upstream.clone(),
                detail: detail.clone(),
            },
            GatewayError::UpstreamBadResponse { upstream, detail },
        ] {
            assert!(e.status().is_server_error(), "{e}");
            assert!((-32099..=-32000).contains(&e.code()));
        }
    }

    #[test]
    fn response_carries_code_message_and_id() {
        let id = RawValue::from_string("\"abc\"".into()).unwrap();
        let r = GatewayError::MethodNotFound("x/y".into()).into_response(Some(&id));
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}

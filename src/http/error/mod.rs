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

pub mod grpc;
mod kind;
mod rest;
pub mod table;
pub use rest::status_body;
pub use table::Mapped;

pub use kind::{codes, ErrorCode, GatewayError, RateRefusal};

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
            | UpstreamNotVerified { upstream, .. }
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
        crate::http::body::set_json(headers);
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
            GatewayError::UpstreamEjected { retry_after, .. }
            | GatewayError::RateStoreUnavailable { retry_after, .. } => {
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

//! The one table: every gateway error in each of the three A2A bindings
//! (spec §5.4). JSON-RPC answers with an error code (and HTTP 200 for a
//! request the client got wrong at the JSON-RPC level); HTTP+JSON with an
//! HTTP status and a `google.rpc.Status` whose `status` is the canonical
//! code name, which is also the gRPC status; every binding names the error
//! by its `google.rpc.ErrorInfo` reason. `docs/errors.md` is this table.
//!
//! Agents' failures are 502/503/504 (UNAVAILABLE or DEADLINE_EXCEEDED) in
//! every binding, never a client error; InvalidAgentResponse included,
//! which the spec would make 500 INTERNAL: 500 here means a gateway bug.

use http::StatusCode;

use super::kind::{codes, GatewayError};
use crate::a2a::jsonrpc;

/// One error, written in every binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapped {
    /// JSON-RPC: the error's code, and the HTTP status of its answer.
    pub rpc_code: i32,
    pub rpc_http: StatusCode,
    /// HTTP+JSON: the HTTP status.
    pub http: StatusCode,
    /// The canonical code name: `google.rpc.Status.status`, and the gRPC
    /// status.
    pub grpc: &'static str,
    /// `google.rpc.ErrorInfo.reason`: the A2A error in UPPER_SNAKE without
    /// "Error", or the gateway's own.
    pub reason: &'static str,
}

const fn row(
    rpc_code: i32,
    rpc_http: StatusCode,
    http: StatusCode,
    grpc: &'static str,
    reason: &'static str,
) -> Mapped {
    Mapped {
        rpc_code,
        rpc_http,
        http,
        grpc,
        reason,
    }
}

const OK: StatusCode = StatusCode::OK;
const BAD: StatusCode = StatusCode::BAD_REQUEST;
const INVALID: &str = "INVALID_ARGUMENT";
const PRECONDITION: &str = "FAILED_PRECONDITION";
const UNAVAILABLE: &str = "UNAVAILABLE";
const DEADLINE: &str = "DEADLINE_EXCEEDED";

impl GatewayError {
    /// This error's row: one line each, JSON-RPC code and HTTP status, the
    /// REST status, the gRPC code and the ErrorInfo reason. A2A errors
    /// answer JSON-RPC with HTTP 200 (`OK`), the gateway's own errors with
    /// the status REST's answer has (`same`).
    #[rustfmt::skip]
    pub fn mapped(&self) -> Mapped {
        use jsonrpc::*;
        use GatewayError::*;
        use StatusCode as S;
        let same = |code, status, grpc, reason| row(code, status, status, grpc, reason);
        let exhausted = "RESOURCE_EXHAUSTED";
        match self {
            Rpc { code, .. } => rpc_row(*code),
            MethodNotFound(_) => row(METHOD_NOT_FOUND, OK, S::NOT_FOUND, "UNIMPLEMENTED", "METHOD_NOT_FOUND"),
            InvalidParams(_) => row(INVALID_PARAMS, OK, BAD, INVALID, "INVALID_PARAMS"),
            TaskNotFound(_) => row(TASK_NOT_FOUND, OK, S::NOT_FOUND, "NOT_FOUND", "TASK_NOT_FOUND"),
            PushNotificationNotSupported(_) => row(PUSH_NOTIFICATION_NOT_SUPPORTED, OK, BAD, PRECONDITION, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
            UnsupportedOperation(_) => row(UNSUPPORTED_OPERATION, OK, BAD, PRECONDITION, "UNSUPPORTED_OPERATION"),
            ExtendedCardNotConfigured => row(EXTENDED_CARD_NOT_CONFIGURED, OK, BAD, PRECONDITION, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
            NoRoute { .. } => row(codes::NO_ROUTE, OK, BAD, PRECONDITION, "NO_ROUTE"),
            UnknownSkill { .. } => row(codes::UNKNOWN_SKILL, OK, BAD, INVALID, "UNKNOWN_SKILL"),
            // Answered as JSON-RPC answers every A2A error, with 200.
            ContentTypeNotSupported(_) => row(CONTENT_TYPE_NOT_SUPPORTED, OK, BAD, INVALID, "CONTENT_TYPE_NOT_SUPPORTED"),
            // gRPC: UNIMPLEMENTED, as the 1.0 conformance suite expects
            // (the spec's §5.4 table says FAILED_PRECONDITION; docs/errors.md).
            VersionNotSupported(_) => row(VERSION_NOT_SUPPORTED, OK, BAD, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"),
            BodyRead(_) => row(INVALID_REQUEST, BAD, BAD, INVALID, "BODY_READ"),
            PayloadTooLarge { .. } => same(INVALID_REQUEST, S::PAYLOAD_TOO_LARGE, exhausted, "PAYLOAD_TOO_LARGE"),
            HeadTooLarge { .. } => same(INVALID_REQUEST, S::REQUEST_HEADER_FIELDS_TOO_LARGE, exhausted, "HEAD_TOO_LARGE"),
            UnsupportedMediaType(_) => same(INVALID_REQUEST, S::UNSUPPORTED_MEDIA_TYPE, INVALID, "UNSUPPORTED_MEDIA_TYPE"),
            BodyTimeout(_) => same(INVALID_REQUEST, S::REQUEST_TIMEOUT, DEADLINE, "BODY_TIMEOUT"),
            NotFound { .. } => same(INVALID_REQUEST, S::NOT_FOUND, "NOT_FOUND", "NOT_FOUND"),
            MethodNotAllowed { .. } => same(INVALID_REQUEST, S::METHOD_NOT_ALLOWED, "UNIMPLEMENTED", "METHOD_NOT_ALLOWED"),
            RateLimited(_) => same(codes::RATE_LIMITED, S::TOO_MANY_REQUESTS, exhausted, "RATE_LIMITED"),
            Overloaded { .. } => same(codes::OVERLOADED, S::SERVICE_UNAVAILABLE, UNAVAILABLE, "OVERLOADED"),
            RateStoreUnavailable { .. } => same(codes::OVERLOADED, S::SERVICE_UNAVAILABLE, UNAVAILABLE, "RATE_LIMIT_STORE_UNAVAILABLE"),
            UpstreamEjected { .. } => same(codes::UPSTREAM_EJECTED, S::SERVICE_UNAVAILABLE, UNAVAILABLE, "UPSTREAM_EJECTED"),
            Unauthenticated { .. } => same(codes::UNAUTHENTICATED, S::UNAUTHORIZED, "UNAUTHENTICATED", "UNAUTHENTICATED"),
            Forbidden { .. } => same(codes::FORBIDDEN, S::FORBIDDEN, "PERMISSION_DENIED", "FORBIDDEN"),
            UpstreamUnavailable { .. } => same(codes::UPSTREAM_UNAVAILABLE, S::BAD_GATEWAY, UNAVAILABLE, "UPSTREAM_UNAVAILABLE"),
            UpstreamNotVerified { .. } => same(codes::UPSTREAM_NOT_VERIFIED, S::SERVICE_UNAVAILABLE, UNAVAILABLE, "UPSTREAM_CARD_NOT_VERIFIED"),
            UpstreamTimeout { .. } => same(codes::UPSTREAM_TIMEOUT, S::GATEWAY_TIMEOUT, DEADLINE, "UPSTREAM_TIMEOUT"),
            UpstreamBadResponse { .. } => same(codes::UPSTREAM_BAD_RESPONSE, S::BAD_GATEWAY, UNAVAILABLE, "UPSTREAM_BAD_RESPONSE"),
            InvalidAgentResponse { .. } => same(INVALID_AGENT_RESPONSE, S::BAD_GATEWAY, UNAVAILABLE, "INVALID_AGENT_RESPONSE"),
            Internal(_) => same(INTERNAL_ERROR, S::INTERNAL_SERVER_ERROR, "INTERNAL", "INTERNAL"),
        }
    }
}

/// An error by its JSON-RPC code alone (an agent's, or the gateway's own
/// written in JSON-RPC), as the other bindings write it. An agent's internal
/// error, or a code no table knows, is the agent's failure: 502.
pub fn for_code(code: i64) -> Mapped {
    let Ok(code) = i32::try_from(code) else {
        return agent_error(jsonrpc::INTERNAL_ERROR);
    };
    let a2a = |http: StatusCode, grpc, reason| row(code, OK, http, grpc, reason);
    match code {
        -32700 | -32600 | -32602 | -32601 => rpc_row(code),
        -32001 => a2a(StatusCode::NOT_FOUND, "NOT_FOUND", "TASK_NOT_FOUND"),
        -32002 => a2a(BAD, PRECONDITION, "TASK_NOT_CANCELABLE"),
        -32003 => a2a(BAD, PRECONDITION, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        -32004 => a2a(BAD, PRECONDITION, "UNSUPPORTED_OPERATION"),
        -32005 => a2a(BAD, INVALID, "CONTENT_TYPE_NOT_SUPPORTED"),
        -32007 => a2a(BAD, PRECONDITION, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        -32008 => a2a(BAD, PRECONDITION, "EXTENSION_SUPPORT_REQUIRED"),
        -32009 => a2a(BAD, PRECONDITION, "VERSION_NOT_SUPPORTED"),
        -32006 => row(
            code,
            OK,
            StatusCode::BAD_GATEWAY,
            UNAVAILABLE,
            "INVALID_AGENT_RESPONSE",
        ),
        // The gateway's own ends of a stream (final SSE events).
        codes::UPSTREAM_UNAVAILABLE => failed(code, UNAVAILABLE, "UPSTREAM_UNAVAILABLE"),
        codes::UPSTREAM_TIMEOUT => failed(code, DEADLINE, "UPSTREAM_TIMEOUT"),
        codes::UPSTREAM_BAD_RESPONSE => failed(code, UNAVAILABLE, "UPSTREAM_BAD_RESPONSE"),
        codes::UPSTREAM_STREAM_BROKEN => failed(code, UNAVAILABLE, "UPSTREAM_STREAM_BROKEN"),
        codes::UPSTREAM_STREAM_IDLE => failed(code, DEADLINE, "UPSTREAM_STREAM_IDLE"),
        codes::SHUTTING_DOWN => {
            let s = StatusCode::SERVICE_UNAVAILABLE;
            row(code, OK, s, UNAVAILABLE, "SHUTTING_DOWN")
        }
        // Anything else (an agent's internal error, its own server codes,
        // another gateway's): the agent failed.
        _ => agent_error(code),
    }
}

/// The JSON-RPC code of an error an HTTP+JSON agent named by its
/// `google.rpc.ErrorInfo` reason, else by its canonical status: what the
/// table says the other way. What neither names is the agent's failure
/// (-32603: 502 in the other bindings).
pub fn code_for_rest(reason: Option<&str>, status: Option<&str>) -> i32 {
    const KNOWN: [i32; 13] = [
        -32700, -32600, -32601, -32602, -32001, -32002, -32003, -32004, -32005, -32006, -32007,
        -32008, -32009,
    ];
    let by_reason =
        reason.and_then(|r| (KNOWN.iter().copied()).find(|&c| for_code(i64::from(c)).reason == r));
    by_reason.unwrap_or(match status {
        Some("NOT_FOUND") => -32001,
        Some("INVALID_ARGUMENT" | "OUT_OF_RANGE") => jsonrpc::INVALID_PARAMS,
        Some("FAILED_PRECONDITION" | "UNIMPLEMENTED") => -32004,
        _ => jsonrpc::INTERNAL_ERROR,
    })
}

/// An agent's failure: 502, or 504 when it was too slow.
fn failed(code: i32, grpc: &'static str, reason: &'static str) -> Mapped {
    let http = match grpc {
        DEADLINE => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::BAD_GATEWAY,
    };
    row(code, OK, http, grpc, reason)
}

fn agent_error(code: i32) -> Mapped {
    let s = StatusCode::BAD_GATEWAY;
    row(code, OK, s, UNAVAILABLE, "AGENT_ERROR")
}

/// A JSON-RPC-level problem found while reading a request (parse,
/// envelope), by its code.
fn rpc_row(code: i32) -> Mapped {
    let reason = match code {
        jsonrpc::PARSE_ERROR => "PARSE_ERROR",
        jsonrpc::INVALID_REQUEST => "INVALID_REQUEST",
        jsonrpc::METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
        jsonrpc::INVALID_PARAMS => "INVALID_PARAMS",
        _ => "INTERNAL",
    };
    row(code, OK, BAD, INVALID, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<GatewayError> {
        use GatewayError::*;
        let (u, d) = (String::from("u"), String::from("d"));
        vec![
            Rpc {
                code: -32700,
                message: d.clone(),
            },
            MethodNotFound(d.clone()),
            InvalidParams(d.clone()),
            TaskNotFound(d.clone()),
            PushNotificationNotSupported(d.clone()),
            UnsupportedOperation(d.clone()),
            ExtendedCardNotConfigured,
            UpstreamUnavailable {
                upstream: u.clone(),
                detail: d.clone(),
            },
            UpstreamTimeout {
                upstream: u.clone(),
                detail: d.clone(),
            },
            UpstreamNotVerified {
                upstream: u.clone(),
                detail: d.clone(),
            },
            UpstreamBadResponse {
                upstream: u.clone(),
                detail: d.clone(),
            },
            InvalidAgentResponse {
                upstream: u,
                detail: d.clone(),
            },
            Internal(d),
        ]
    }

    #[test]
    fn a2a_errors_follow_the_specs_table() {
        use GatewayError::*;
        let m = |e: GatewayError| {
            let m = e.mapped();
            (m.rpc_code, m.http.as_u16(), m.grpc)
        };
        assert_eq!(m(TaskNotFound("t".into())), (-32001, 404, "NOT_FOUND"));
        assert_eq!(
            m(PushNotificationNotSupported("x".into())),
            (-32003, 400, "FAILED_PRECONDITION")
        );
        assert_eq!(
            m(UnsupportedOperation("x".into())),
            (-32004, 400, "FAILED_PRECONDITION")
        );
        assert_eq!(
            m(ExtendedCardNotConfigured),
            (-32007, 400, "FAILED_PRECONDITION")
        );
        assert_eq!(
            m(InvalidParams("x".into())),
            (-32602, 400, "INVALID_ARGUMENT")
        );
    }

    #[test]
    fn agent_failures_are_5xx_and_unavailable_or_deadline_in_every_binding() {
        for e in every_kind()
            .into_iter()
            .filter(|e| e.to_string().contains("'u'"))
        {
            let m = e.mapped();
            assert!(
                m.rpc_http.is_server_error() && m.http.is_server_error(),
                "{e}"
            );
            assert!(
                m.http != StatusCode::INTERNAL_SERVER_ERROR,
                "{e}: 500 is a gateway bug"
            );
            assert!(
                ["UNAVAILABLE", "DEADLINE_EXCEEDED"].contains(&m.grpc),
                "{e}"
            );
        }
    }

    #[test]
    fn reasons_are_upper_snake() {
        for e in every_kind() {
            let r = e.mapped().reason;
            assert!(
                r.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{r}"
            );
        }
    }
}

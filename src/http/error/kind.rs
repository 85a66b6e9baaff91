//! The gateway's error type: every way a call can fail, and the codes the
//! gateway defines. How each becomes a response is in `table`.

/// The versions a client may name in `A2A-Version`, as error messages write them.
const SPOKEN: &str = "1.0, 0.3 (and 0.2) and 0.1";

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
    /// The upstream's card has no valid signature from a trusted key, and
    /// its `card_signature` is "required" (HTTP 503).
    pub const UPSTREAM_NOT_VERIFIED: i32 = -32057;
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
    /// `on_store_error = "deny"` while the shared rate-limit store cannot
    /// answer (HTTP 503, with Retry-After).
    #[error("rate limits cannot be checked: the shared store {detail}; retry after {}s", .retry_after.as_secs_f64().ceil())]
    RateStoreUnavailable {
        detail: String,
        retry_after: std::time::Duration,
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
    /// `card_signature = "required"` and no valid card: the agent is not
    /// ready (HTTP 503).
    #[error("upstream '{upstream}' is not ready: {detail}")]
    UpstreamNotVerified { upstream: String, detail: String },
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

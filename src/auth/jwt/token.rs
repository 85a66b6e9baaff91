//! What a checked token yields, and why one is refused.

use std::sync::Arc;

use serde_json::{Map, Value};

/// What a valid token says about its bearer.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidToken {
    /// `sub`.
    pub subject: String,
    pub scopes: Vec<String>,
    /// Shared with every identity made from this token: a remembered token
    /// answers each call without copying its claims.
    pub claims: Arc<Map<String, Value>>,
}

/// Why a token was refused; `reason()` is a bounded label for metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("algorithm {0} is not allowed")]
    AlgorithmNotAllowed(String),
    #[error("no key matches the token")]
    UnknownKey,
    #[error("the signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token's issuer is not accepted")]
    WrongIssuer,
    #[error("the token's audience is not accepted")]
    WrongAudience,
    #[error("the token has no subject")]
    NoSubject,
    #[error("signing keys are unavailable: {0}")]
    KeysUnavailable(String),
}

impl JwtError {
    pub fn reason(&self) -> &'static str {
        match self {
            JwtError::Malformed => "malformed",
            JwtError::AlgorithmNotAllowed(_) => "algorithm",
            JwtError::UnknownKey => "unknown_key",
            JwtError::BadSignature => "signature",
            JwtError::Expired => "expired",
            JwtError::NotYetValid => "not_yet_valid",
            JwtError::WrongIssuer => "issuer",
            JwtError::WrongAudience => "audience",
            JwtError::NoSubject => "subject",
            JwtError::KeysUnavailable(_) => "keys_unavailable",
        }
    }
}

//! Bearer JWT validation (jsonwebtoken): static keys, a JWKS URL, or OIDC
//! discovery. (Being written: see the signatures.)

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

/// `jwt = { … }` of a bearer / oauth2 / openIdConnect scheme, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSection {
    /// Required `iss`.
    #[serde(default)]
    pub issuer: Option<String>,
    /// Accepted `aud` values (any one must be present in the token).
    #[serde(default)]
    pub audience: Vec<String>,
    /// Explicit allow-list, e.g. ["RS256", "ES256"]. Never "none".
    pub algorithms: Vec<String>,
    #[serde(default = "default_leeway")]
    pub leeway: String,
    /// Static keys.
    #[serde(default)]
    pub keys: Vec<JwtKeySection>,
    /// A JWKS document URL.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// OIDC discovery: `{oidc_issuer}/.well-known/openid-configuration`
    /// gives `jwks_uri` (and the issuer, if `issuer` is unset).
    #[serde(default)]
    pub oidc_issuer: Option<String>,
    /// How long fetched keys are used before they are fetched again.
    #[serde(default = "default_jwks_ttl")]
    pub jwks_cache_ttl: String,
    /// An unknown `kid` triggers a refetch at most this often.
    #[serde(default = "default_refetch")]
    pub jwks_min_refetch_interval: String,
    /// The claim holding scopes ("scope": space-separated string, or "scp":
    /// array, both understood).
    #[serde(default = "default_scope_claim")]
    pub scope_claim: String,
}

fn default_leeway() -> String {
    "30s".into()
}
fn default_jwks_ttl() -> String {
    "1h".into()
}
fn default_refetch() -> String {
    "30s".into()
}
fn default_scope_claim() -> String {
    "scope".into()
}

/// One static key: exactly one of the secret / PEM sources.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtKeySection {
    #[serde(default)]
    pub kid: Option<String>,
    /// The algorithm this key is for, e.g. "HS256", "RS256", "ES256", "EdDSA".
    pub algorithm: String,
    /// HMAC secret (HS*): literal, from an environment variable, or a file.
    #[serde(default)]
    pub secret: Option<String>,
    #[serde(default)]
    pub secret_env: Option<String>,
    #[serde(default)]
    pub secret_file: Option<String>,
    /// Public key PEM (RS*/PS*/ES*/EdDSA): inline or a file.
    #[serde(default)]
    pub pem: Option<String>,
    #[serde(default)]
    pub pem_file: Option<String>,
}

#[derive(Debug, Clone)]
pub struct JwtSettings {
    pub leeway: Duration,
}

/// Validates a section: `(field, message)` for every problem (paths
/// relative to the `jwt` table). Secrets and PEM files are read here.
pub fn settings(section: &JwtSection) -> Result<JwtSettings, Vec<(String, String)>> {
    let _ = section;
    Err(vec![(
        String::new(),
        "JWT validation is not implemented yet".into(),
    )])
}

/// What a valid token says about its bearer.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidToken {
    /// `sub`.
    pub subject: String,
    pub scopes: Vec<String>,
    pub claims: Map<String, Value>,
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

pub struct JwtValidator {
    _settings: JwtSettings,
}

impl JwtValidator {
    pub fn new(settings: &JwtSettings) -> Self {
        Self {
            _settings: settings.clone(),
        }
    }

    /// Validates `token` (the part after "Bearer ").
    pub async fn validate(&self, token: &str) -> Result<ValidToken, JwtError> {
        let _ = token;
        Err(JwtError::Malformed)
    }
}

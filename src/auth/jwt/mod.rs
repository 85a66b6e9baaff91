//! Bearer JWT validation (jsonwebtoken): static keys, a JWKS URL, or OIDC
//! discovery.
//!
//! The token's `alg` must be in the allow-list before any key is looked at,
//! and a key only ever verifies the algorithm it is configured (or published)
//! for: an RSA public key is never used as an HMAC secret, whatever the token
//! claims. Header fields that point at keys (`jku`, `x5u`, `jwk`) are ignored.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use jwks::{JwksLocation, JwksSource, Snapshot};
use verified::VerifiedTokens;

pub mod jwks;
mod keys;
mod settings;
mod token;
mod verified;

use keys::b64url_decode;
pub use settings::{settings, JwtKeySection, JwtSection, JwtSettings, StaticKey};
pub use token::{JwtError, ValidToken};

/// Tokens longer than this are refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

pub struct JwtValidator {
    settings: JwtSettings,
    remote: Option<Arc<JwksSource>>,
    /// Tokens already verified (see [`verified`]).
    verified: VerifiedTokens,
    /// Signature checks made (tokens not found in `verified`).
    checks: AtomicU64,
}

/// The keys that may verify a token, the issuer to require, and the JWKS
/// snapshot they came from.
struct Candidates {
    keys: Vec<DecodingKey>,
    issuer: Option<String>,
    snapshot: Option<Arc<Snapshot>>,
}

/// What the header says, read before any key is chosen.
#[derive(Debug, PartialEq)]
struct TokenHeader {
    alg: String,
    kid: Option<String>,
}

impl JwtValidator {
    /// Starts fetching remote keys in the background when called inside a
    /// Tokio runtime; otherwise the first token fetches them.
    pub fn new(settings: &JwtSettings) -> Self {
        let remote = settings
            .jwks
            .clone()
            .map(|config| Arc::new(JwksSource::new(config, settings.algorithms.clone())));
        if let (Some(source), Ok(runtime)) = (&remote, tokio::runtime::Handle::try_current()) {
            let source = Arc::clone(source);
            runtime.spawn(async move { source.prefetch().await });
        }
        Self {
            settings: settings.clone(),
            remote,
            verified: VerifiedTokens::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// How many tokens had their signature checked: repeated calls with
    /// the same token are served from the verified-token cache.
    pub fn signature_checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// Validates `token` (the part after "Bearer ").
    ///
    /// A token remembered as verified is answered before its header is
    /// read when the keys it was verified with are still the ones in use:
    /// the same bytes have the same header, so the same algorithm and kid.
    /// Only the time is checked again. Otherwise the keys are found (and
    /// fetched if they must be) and the cache is asked again with them.
    pub async fn validate(&self, token: &str) -> Result<Arc<ValidToken>, JwtError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(JwtError::Malformed);
        }
        let digest = VerifiedTokens::digest(token);
        if let Some(hit) = self.remembered_now(&digest) {
            return self.still_valid(&hit);
        }
        let header = parse_header(token)?;
        let alg = self.allowed(&header.alg)?;
        let found = self.keys_for(alg, header.kid.as_deref()).await?;
        if found.keys.is_empty() {
            return Err(JwtError::UnknownKey);
        }
        if let Some(hit) = self.verified.get(&digest, found.snapshot.as_ref()) {
            return self.still_valid(&hit);
        }
        self.checks.fetch_add(1, Ordering::Relaxed);
        let claims = self.verify(token, alg, &found.keys, found.issuer.as_deref())?;
        let valid = Arc::new(valid_token(claims, &self.settings.scope_claim)?);
        self.verified.insert(digest, &valid, found.snapshot);
        Ok(valid)
    }

    /// A remembered token, if its time has not run out: the signature and
    /// claims were checked when it was remembered, `exp` and `nbf` are
    /// checked on every call.
    fn still_valid(&self, hit: &verified::Verified) -> Result<Arc<ValidToken>, JwtError> {
        hit.check_time(verified::now(), self.settings.leeway.as_secs())?;
        Ok(Arc::clone(&hit.token))
    }

    /// The verified entry for `digest`, if it was checked against the keys
    /// in use now without fetching any: the static keys, or a JWKS snapshot
    /// that has not expired. An expired or missing snapshot is left to
    /// [`JwtValidator::keys_for`], which knows when to fetch.
    fn remembered_now(&self, digest: &verified::Digest32) -> Option<Arc<verified::Verified>> {
        let snapshot = match &self.remote {
            None => None,
            Some(source) => Some(source.fresh_now()?),
        };
        self.verified.get(digest, snapshot.as_ref())
    }

    fn allowed(&self, alg: &str) -> Result<Algorithm, JwtError> {
        match Algorithm::from_str(alg) {
            Ok(a) if self.settings.algorithms.contains(&a) => Ok(a),
            _ => Err(JwtError::AlgorithmNotAllowed(printable(alg))),
        }
    }

    /// Candidate keys for `alg` and `kid`, and the issuer to require. A key
    /// matches when its algorithm is `alg` and its kid equals the token's
    /// (a missing kid on either side matches any).
    async fn keys_for(&self, alg: Algorithm, kid: Option<&str>) -> Result<Candidates, JwtError> {
        let fixed = &self.settings.keys;
        let mut keys: Vec<DecodingKey> = fixed
            .iter()
            .filter(|k| k.algorithm == alg && kid_matches(k.kid.as_deref(), kid))
            .map(|k| k.key.clone())
            .collect();
        let only_static = |keys| Candidates {
            keys,
            issuer: self.settings.issuer.clone(),
            snapshot: None,
        };
        let Some(source) = &self.remote else {
            return Ok(only_static(keys));
        };
        // A kid naming a static key needs no JWKS refetch.
        let named_statically = kid.is_some() && fixed.iter().any(|k| k.kid.as_deref() == kid);
        let wanted = if named_statically { None } else { kid };
        let snapshot = match source.snapshot(wanted).await {
            Ok(s) => s,
            // Static keys still work while the JWKS is down, unless the
            // issuer itself comes from discovery.
            Err(_) if !keys.is_empty() && !self.issuer_from_discovery() => {
                return Ok(only_static(keys));
            }
            Err(e) => return Err(e),
        };
        keys.extend(
            snapshot
                .keys
                .iter()
                .filter(|k| k.algorithms.contains(&alg) && kid_matches(k.kid.as_deref(), kid))
                .map(|k| k.key.clone()),
        );
        let issuer = self.settings.issuer.clone().or(snapshot.issuer.clone());
        Ok(Candidates {
            keys,
            issuer,
            snapshot: Some(snapshot),
        })
    }

    fn issuer_from_discovery(&self) -> bool {
        let oidc = matches!(
            self.settings.jwks.as_ref().map(|j| &j.location),
            Some(JwksLocation::Oidc(_))
        );
        oidc && self.settings.issuer.is_none()
    }

    /// Signature first, then claims; the first key whose signature verifies
    /// decides.
    fn verify(
        &self,
        token: &str,
        alg: Algorithm,
        keys: &[DecodingKey],
        issuer: Option<&str>,
    ) -> Result<Map<String, Value>, JwtError> {
        let validation = self.validation(alg, issuer);
        for key in keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => return checked_issuer(data.claims, issuer),
                Err(e) => match refusal(e.kind()) {
                    JwtError::BadSignature => continue,
                    other => return Err(other),
                },
            }
        }
        Err(JwtError::BadSignature)
    }

    fn validation(&self, alg: Algorithm, issuer: Option<&str>) -> Validation {
        let mut v = Validation::new(alg);
        v.leeway = self.settings.leeway.as_secs();
        v.validate_exp = true;
        v.validate_nbf = true;
        let mut required = vec!["exp"];
        if let Some(iss) = issuer {
            v.set_issuer(&[iss]);
            required.push("iss");
        }
        if self.settings.audience.is_empty() {
            // No audience configured: accept any.
            v.validate_aud = false;
        } else {
            v.set_audience(&self.settings.audience);
            required.push("aud");
        }
        v.set_required_spec_claims(&required);
        v
    }
}

fn kid_matches(key: Option<&str>, token: Option<&str>) -> bool {
    match (key, token) {
        (Some(k), Some(t)) => k == t,
        _ => true,
    }
}

/// jsonwebtoken accepts an array `iss` if any element matches; RFC 7519
/// says it is one string.
fn checked_issuer(
    claims: Map<String, Value>,
    issuer: Option<&str>,
) -> Result<Map<String, Value>, JwtError> {
    match (issuer, claims.get("iss")) {
        (Some(_), Some(Value::String(_))) | (None, _) => Ok(claims),
        _ => Err(JwtError::WrongIssuer),
    }
}

fn refusal(kind: &ErrorKind) -> JwtError {
    match kind {
        ErrorKind::ExpiredSignature => JwtError::Expired,
        ErrorKind::ImmatureSignature => JwtError::NotYetValid,
        ErrorKind::InvalidIssuer => JwtError::WrongIssuer,
        ErrorKind::InvalidAudience => JwtError::WrongAudience,
        ErrorKind::MissingRequiredClaim(c) if c == "iss" => JwtError::WrongIssuer,
        ErrorKind::MissingRequiredClaim(c) if c == "aud" => JwtError::WrongAudience,
        ErrorKind::MissingRequiredClaim(c) if c == "sub" => JwtError::NoSubject,
        // A key that cannot verify this token is as good as a bad signature;
        // the next candidate may do.
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidAlgorithm
        | ErrorKind::InvalidKeyFormat
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey => JwtError::BadSignature,
        _ => JwtError::Malformed,
    }
}

fn valid_token(claims: Map<String, Value>, scope_claim: &str) -> Result<ValidToken, JwtError> {
    let subject = match claims.get("sub") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(JwtError::NoSubject),
    };
    let scopes = scopes(claims.get(scope_claim));
    Ok(ValidToken {
        subject,
        scopes,
        claims: Arc::new(claims),
    })
}

/// A space-separated string ("scope") or an array of strings ("scp").
fn scopes(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// `alg` and `kid` of a compact JWS, without trusting anything else.
fn parse_header(token: &str) -> Result<TokenHeader, JwtError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(JwtError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let bytes = b64url_decode(header).ok_or(JwtError::Malformed)?;
    let fields: Map<String, Value> =
        serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)?;
    // RFC 7515 §4.1.11: extensions we do not implement must be refused.
    if fields.contains_key("crit") {
        return Err(JwtError::Malformed);
    }
    let alg = match fields.get("alg") {
        Some(Value::String(alg)) => alg.clone(),
        _ => return Err(JwtError::Malformed),
    };
    let kid = match fields.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(JwtError::Malformed),
    };
    Ok(TokenHeader { alg, kid })
}

/// The caller's `alg`, safe to log: short and printable.
fn printable(alg: &str) -> String {
    alg.chars()
        .take(16)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    #[test]
    fn header_parsing() {
        let enc = |json: &str| URL_SAFE_NO_PAD.encode(json);
        let token = format!("{}.e30.sig", enc(r#"{"alg":"RS256","kid":"k1"}"#));
        assert_eq!(
            parse_header(&token),
            Ok(TokenHeader {
                alg: "RS256".into(),
                kid: Some("k1".into())
            })
        );
        for bad in [
            r#"{"kid":"k"}"#,
            r#"{"alg":1}"#,
            r#"{"alg":"RS256","kid":5}"#,
            r#"{"alg":"RS256","crit":["b64"]}"#,
            "[]",
        ] {
            let token = format!("{}.e30.sig", enc(bad));
            assert_eq!(parse_header(&token), Err(JwtError::Malformed), "{bad}");
        }
        let huge = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            "A".repeat(MAX_TOKEN_BYTES)
        );
        assert_eq!(parse_header(&huge), Err(JwtError::Malformed));
    }

    #[test]
    fn scopes_from_string_or_array() {
        assert_eq!(scopes(Some(&Value::from(" a  b\tc "))), ["a", "b", "c"]);
        assert_eq!(
            scopes(Some(&serde_json::json!(["x", 1, "", "y"]))),
            ["x", "y"]
        );
        assert!(scopes(Some(&Value::from(3))).is_empty());
        assert!(scopes(None).is_empty());
    }

    #[test]
    fn refused_algorithm_names_are_printable_and_short() {
        assert_eq!(printable("none"), "none");
        assert_eq!(printable("a\nb c"), "a?b?c");
        assert_eq!(printable(&"x".repeat(100)).len(), 16);
    }
}

//! `card_signature` and `[upstreams.card_trust]`: whether an agent's own
//! card must carry a valid signature, and the keys trusted to make it.
//!
//! Trusted keys come from a JWKS file and inline JWKs (read here, once) and
//! from a JWKS URL (fetched and cached by `JwksSource`). A `jku` in a
//! signature's header is fetched only when it is on `jku_allow`: by default
//! it is never followed, since it would let whoever answers for the agent
//! name the keys that vouch for it (and make the gateway fetch any URL).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::Value;

use crate::auth::jwt::jwks::{self, JwksConfig, JwksLocation, JwksSource, RemoteKey};

/// What is done with an agent's card signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignatureMode {
    /// Not looked at.
    #[default]
    Off,
    /// Checked, counted and logged; the card is used either way.
    Verify,
    /// A card without a valid signature from a trusted key is refused.
    Required,
}

impl SignatureMode {
    pub fn label(self) -> &'static str {
        match self {
            SignatureMode::Off => "off",
            SignatureMode::Verify => "verify",
            SignatureMode::Required => "required",
        }
    }
}

/// `[upstreams.card_trust]` as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CardTrustSection {
    #[serde(default)]
    pub jwks_url: Option<String>,
    #[serde(default)]
    pub jwks_file: Option<String>,
    /// Inline keys: public JWKs, or `{ kid, alg, public_file | pem }`.
    #[serde(default)]
    pub keys: Vec<Value>,
    #[serde(default)]
    pub algorithms: Option<Vec<String>>,
    #[serde(default)]
    pub jku_allow: Vec<String>,
    /// How long keys fetched from a URL are kept.
    #[serde(default = "default_cache_ttl")]
    pub jwks_cache_ttl: String,
}

fn default_cache_ttl() -> String {
    "5m".into()
}

/// After an unknown `kid`, a URL is fetched again at most this often.
const MIN_REFETCH: Duration = Duration::from_secs(10);

/// The algorithms a card signature may use: asymmetric only. `none` and the
/// HMAC family are never accepted (an HMAC "public" key is a shared secret).
const ASYMMETRIC: [(&str, Algorithm); 9] = [
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("PS384", Algorithm::PS384),
    ("PS512", Algorithm::PS512),
    ("EdDSA", Algorithm::EdDSA),
];

/// A key source fetched over HTTP, named by its URL (which is what a
/// reload compares).
#[derive(Clone)]
pub struct RemoteJwks {
    pub url: String,
    pub source: Arc<JwksSource>,
}

impl fmt::Debug for RemoteJwks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl PartialEq for RemoteJwks {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
    }
}

/// Keys read from the config: a JWKS file and inline keys.
pub struct StaticKeys {
    /// The documents as read, which is what a reload compares.
    written: Vec<Value>,
    pub keys: Vec<RemoteKey>,
}

impl fmt::Debug for StaticKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<_> = self.keys.iter().map(|k| k.kid.as_deref()).collect();
        f.debug_struct("StaticKeys").field("kids", &kids).finish()
    }
}

impl PartialEq for StaticKeys {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

/// An upstream's `card_signature` with its trust.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CardSignature {
    pub mode: SignatureMode,
    pub algorithms: Vec<Algorithm>,
    pub keys: Option<Arc<StaticKeys>>,
    pub jwks_url: Option<RemoteJwks>,
    pub jku_allow: Vec<RemoteJwks>,
}

/// Validates `card_signature` and `card_trust`: `(field, message)` for
/// each problem, the field under the upstream.
pub fn card_signature(
    mode: Option<&str>,
    trust: Option<&CardTrustSection>,
) -> Result<CardSignature, Vec<(String, String)>> {
    let mut problems = Vec::new();
    let mode = match mode.unwrap_or("off") {
        "off" => SignatureMode::Off,
        "verify" => SignatureMode::Verify,
        "required" => SignatureMode::Required,
        other => {
            let shown: String = other.chars().take(32).collect();
            let why = format!("must be \"off\", \"verify\" or \"required\", not \"{shown}\"");
            return Err(vec![("card_signature".into(), why)]);
        }
    };
    let Some(trust) = trust else {
        if mode != SignatureMode::Off {
            let why = "needs [upstreams.card_trust] with jwks_url, jwks_file, keys or jku_allow";
            problems.push(("card_signature".into(), why.into()));
            return Err(problems);
        }
        return Ok(CardSignature::default());
    };
    let algorithms = algorithms(trust.algorithms.as_deref(), &mut problems);
    let ttl = crate::duration::positive(&trust.jwks_cache_ttl)
        .map_err(|why| problems.push(("card_trust.jwks_cache_ttl".into(), why)))
        .unwrap_or(Duration::from_secs(300));
    let remote = |field: String, url: &str, problems: &mut Vec<(String, String)>| {
        let uri = jwks::parse_http_url(url)
            .map_err(|why| problems.push((field, why)))
            .ok()?;
        Some(remote_jwks(uri, ttl, &algorithms))
    };
    let jwks_url = (trust.jwks_url.as_deref())
        .and_then(|url| remote("card_trust.jwks_url".into(), url, &mut problems));
    let jku_allow: Vec<RemoteJwks> = (trust.jku_allow.iter().enumerate())
        .filter_map(|(i, url)| remote(format!("card_trust.jku_allow[{i}]"), url, &mut problems))
        .collect();
    let keys = static_keys(trust, &algorithms, &mut problems);
    if keys.is_none() && jwks_url.is_none() && trust.jku_allow.is_empty() {
        let why = "names no trusted key: set jwks_url, jwks_file, keys or jku_allow";
        problems.push(("card_trust".into(), why.into()));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(CardSignature {
        mode,
        algorithms,
        keys: keys.map(Arc::new),
        jwks_url,
        jku_allow,
    })
}

/// A key given as `{ kid, alg, public_file | pem }` (a PEM public key),
/// as its JWK; `None` when the entry is a JWK itself.
fn pem_key(entry: &Value) -> Option<Result<Value, String>> {
    let text = |name: &str| entry.get(name).and_then(Value::as_str);
    let pem = match (text("public_file"), text("pem")) {
        (None, None) => return None,
        (Some(path), None) => std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}")),
        (None, Some(pem)) => Ok(pem.as_bytes().to_vec()),
        _ => Err("give public_file or pem, not both".into()),
    };
    Some(pem.and_then(|pem| {
        let kid = text("kid").ok_or("a PEM key needs its kid")?;
        let alg = (text("alg").and_then(|a| ASYMMETRIC.iter().find(|(n, _)| *n == a)))
            .map(|(_, alg)| *alg)
            .ok_or("a PEM key needs its alg: ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA")?;
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => DecodingKey::from_ec_pem(&pem),
            Algorithm::EdDSA => DecodingKey::from_ed_pem(&pem),
            _ => DecodingKey::from_rsa_pem(&pem),
        }
        .map_err(|e| format!("not a PEM public key for {}: {e}", text("alg").unwrap_or("")))?;
        let mut jwk = Jwk::from_decoding_key(&key, Some(alg)).map_err(|e| e.to_string())?;
        jwk.common.key_id = Some(kid.to_string());
        serde_json::to_value(jwk).map_err(|e| e.to_string())
    }))
}

fn remote_jwks(uri: Uri, cache_ttl: Duration, algorithms: &[Algorithm]) -> RemoteJwks {
    let url = uri.to_string();
    let config = JwksConfig {
        location: JwksLocation::Url(uri),
        cache_ttl,
        min_refetch: MIN_REFETCH,
    };
    RemoteJwks {
        url,
        source: Arc::new(JwksSource::new(config, algorithms.to_vec())),
    }
}

/// The allow-list: the asymmetric algorithms named, every one by default.
fn algorithms(names: Option<&[String]>, problems: &mut Vec<(String, String)>) -> Vec<Algorithm> {
    let Some(names) = names else {
        return ASYMMETRIC.iter().map(|(_, a)| *a).collect();
    };
    if names.is_empty() {
        let why = "must name at least one algorithm, or be left out";
        problems.push(("card_trust.algorithms".into(), why.into()));
    }
    let mut allowed = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match ASYMMETRIC.iter().find(|(n, _)| n == name) {
            Some((_, alg)) => allowed.push(*alg),
            None => {
                let shown: String = name.chars().take(32).collect();
                let why = match shown.as_str() {
                    "none" => "\"none\" is never allowed: an unsigned card is not signed".into(),
                    n if n.starts_with("HS") => format!("\"{n}\" is an HMAC algorithm: a shared secret cannot vouch for a card; use ES256, RS256 or EdDSA"),
                    n => format!("\"{n}\" is not an algorithm the gateway verifies: ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA"),
                };
                problems.push((format!("card_trust.algorithms[{i}]"), why));
            }
        }
    }
    allowed
}

/// The JWKS file and the inline keys; `None` when neither is given.
fn static_keys(
    trust: &CardTrustSection,
    algorithms: &[Algorithm],
    problems: &mut Vec<(String, String)>,
) -> Option<StaticKeys> {
    let mut written = Vec::new();
    let mut keys = Vec::new();
    if let Some(path) = &trust.jwks_file {
        let field = "card_trust.jwks_file".to_string();
        let read = std::fs::read(path)
            .map_err(|e| format!("cannot read {path}: {e}"))
            .and_then(|b| {
                serde_json::from_slice::<Value>(&b).map_err(|e| format!("{path} is not JSON: {e}"))
            })
            .and_then(|doc| Ok((jwks::parse_jwks(&doc, algorithms)?, doc)));
        match read {
            Ok((found, _)) if found.is_empty() => problems.push((
                field,
                format!("{path} holds no usable public signing key for the allowed algorithms"),
            )),
            Ok((found, doc)) => {
                keys.extend(found);
                written.push(doc);
            }
            Err(why) => problems.push((field, why)),
        }
    }
    for (i, entry) in trust.keys.iter().enumerate() {
        if entry.get("d").is_some() || entry.get("k").is_some() {
            let why = "holds a private or secret key part (d or k): give the public key only";
            problems.push((format!("card_trust.keys[{i}]"), why.into()));
            continue;
        }
        let jwk = match pem_key(entry) {
            Some(Ok(jwk)) => jwk,
            Some(Err(why)) => {
                problems.push((format!("card_trust.keys[{i}]"), why));
                continue;
            }
            None => entry.clone(),
        };
        let doc = serde_json::json!({"keys": [jwk]});
        match jwks::parse_jwks(&doc, algorithms) {
            Ok(found) if !found.is_empty() => {
                keys.extend(found);
                written.push(doc);
            }
            _ => problems.push((format!("card_trust.keys[{i}]"), "is not a public signing JWK for an allowed algorithm (kty, crv, x/y or n/e; no private or symmetric keys)".into())),
        }
    }
    (trust.jwks_file.is_some() || !trust.keys.is_empty()).then_some(StaticKeys { written, keys })
}

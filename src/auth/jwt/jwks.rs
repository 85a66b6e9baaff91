//! Signing keys fetched over HTTP: a JWKS document, found directly or through
//! OIDC discovery. Fetched lazily (and once in the background at start),
//! cached for a TTL, refetched once for an unknown `kid` at most every
//! `min_refetch`, and single-flighted so a burst of requests makes one fetch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

// tokio's clock: the same as std's, and tests can pause it.
use tokio::time::Instant;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use http::{Request, StatusCode, Uri};
use http_body_util::Empty;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;
use tokio::sync::Mutex;

use super::keys::check_public_key;
use super::token::JwtError;

/// Bound on one discovery or JWKS fetch, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on a discovery or JWKS document.
const MAX_DOCUMENT: usize = 1024 * 1024;
/// After a failed fetch, requests wait this long (at most) before trying
/// again, so a dead endpoint is not hammered by every request.
const FAILURE_BACKOFF: Duration = Duration::from_secs(5);
const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

/// Where the keys come from.
#[derive(Debug, Clone)]
pub enum JwksLocation {
    /// A JWKS document URL.
    Url(Uri),
    /// An OIDC issuer whose discovery document names the JWKS (and issuer).
    Oidc(String),
}

/// The remote key source of a `jwt` section.
#[derive(Debug, Clone)]
pub struct JwksConfig {
    pub location: JwksLocation,
    pub cache_ttl: Duration,
    pub min_refetch: Duration,
}

/// A key from the JWKS and the algorithms it may verify.
#[derive(Debug)]
pub struct RemoteKey {
    pub kid: Option<String>,
    pub algorithms: Vec<Algorithm>,
    pub key: DecodingKey,
}

/// One successful fetch.
#[derive(Debug)]
pub struct Snapshot {
    pub keys: Vec<RemoteKey>,
    /// The issuer named by OIDC discovery.
    pub issuer: Option<String>,
    fetched_at: Instant,
}

impl Snapshot {
    #[cfg(test)]
    pub(crate) fn empty() -> Self {
        Self {
            keys: Vec::new(),
            issuer: None,
            fetched_at: Instant::now(),
        }
    }

    fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

/// State only the task holding the fetch lock touches.
#[derive(Default)]
struct Gate {
    last_failure: Option<(Instant, String)>,
    last_unknown_kid_refetch: Option<Instant>,
    /// (jwks_uri, issuer, when) from OIDC discovery.
    discovery: Option<(Uri, String, Instant)>,
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

pub struct JwksSource {
    config: JwksConfig,
    allowed: Vec<Algorithm>,
    client: Result<HttpClient, String>,
    current: ArcSwapOption<Snapshot>,
    /// Completed fetch attempts; a request that saw N and finds more after
    /// waiting for the lock knows someone fetched on its behalf.
    attempts: AtomicU64,
    gate: Mutex<Gate>,
}

impl JwksSource {
    pub fn new(config: JwksConfig, allowed: Vec<Algorithm>) -> Self {
        Self {
            config,
            allowed,
            client: http_client(),
            current: ArcSwapOption::empty(),
            attempts: AtomicU64::new(0),
            gate: Mutex::new(Gate::default()),
        }
    }

    /// The keys to verify a token with `kid`: fetched if none are cached or
    /// they expired; refetched (rate-limited) if `kid` is unknown.
    pub async fn snapshot(&self, kid: Option<&str>) -> Result<Arc<Snapshot>, JwtError> {
        let seen = self.attempts.load(Ordering::Acquire);
        let snapshot = self.fresh(seen).await?;
        match kid {
            Some(kid) if !snapshot.has_kid(kid) => self.refetch_for_unknown_kid(seen).await,
            _ => Ok(snapshot),
        }
    }

    /// Fetches once now (used in the background at start).
    pub async fn prefetch(&self) {
        let seen = self.attempts.load(Ordering::Acquire);
        let _ = self.fresh(seen).await;
    }

    /// The cached keys while they are fresh; nothing is fetched.
    pub fn fresh_now(&self) -> Option<Arc<Snapshot>> {
        self.current
            .load_full()
            .filter(|s| s.fetched_at.elapsed() < self.config.cache_ttl)
    }

    async fn fresh(&self, seen: u64) -> Result<Arc<Snapshot>, JwtError> {
        if let Some(s) = self.fresh_now() {
            return Ok(s);
        }
        let mut gate = self.gate.lock().await;
        let someone_tried = self.attempts.load(Ordering::Acquire) != seen;
        let backing_off = gate
            .last_failure
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < self.failure_backoff());
        if !someone_tried && !backing_off {
            self.fetch(&mut gate).await;
        }
        self.usable(&gate)
    }

    async fn refetch_for_unknown_kid(&self, seen: u64) -> Result<Arc<Snapshot>, JwtError> {
        let mut gate = self.gate.lock().await;
        let someone_tried = self.attempts.load(Ordering::Acquire) != seen;
        let too_soon = gate
            .last_unknown_kid_refetch
            .is_some_and(|at| at.elapsed() < self.config.min_refetch);
        if !someone_tried && !too_soon {
            gate.last_unknown_kid_refetch = Some(Instant::now());
            self.fetch(&mut gate).await;
        }
        self.usable(&gate)
    }

    fn failure_backoff(&self) -> Duration {
        self.config.min_refetch.min(FAILURE_BACKOFF)
    }

    /// The cached keys, if fresh or at most one TTL stale (an unreachable
    /// JWKS does not lock everybody out at once).
    fn usable(&self, gate: &Gate) -> Result<Arc<Snapshot>, JwtError> {
        let stale_limit = self.config.cache_ttl.saturating_mul(2);
        match self.current.load_full() {
            Some(s) if s.fetched_at.elapsed() < stale_limit => Ok(s),
            _ => Err(JwtError::KeysUnavailable(match &gate.last_failure {
                Some((_, why)) => why.clone(),
                None => "no signing keys fetched yet".into(),
            })),
        }
    }

    /// One attempt; the outcome lands in `current` or `gate.last_failure`.
    async fn fetch(&self, gate: &mut Gate) {
        match self.fetch_snapshot(gate).await {
            Ok(snapshot) => {
                tracing::debug!(keys = snapshot.keys.len(), "fetched the JWKS");
                self.current.store(Some(Arc::new(snapshot)));
                gate.last_failure = None;
            }
            Err(why) => {
                tracing::warn!(reason = %why, "cannot fetch JWT signing keys");
                // The discovery document may be what changed.
                gate.discovery = None;
                gate.last_failure = Some((Instant::now(), why));
            }
        }
        self.attempts.fetch_add(1, Ordering::AcqRel);
    }

    async fn fetch_snapshot(&self, gate: &mut Gate) -> Result<Snapshot, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let (jwks_uri, issuer) = match &self.config.location {
            JwksLocation::Url(uri) => (uri.clone(), None),
            JwksLocation::Oidc(issuer) => {
                let (uri, iss) = self.discovery(client, issuer, gate).await?;
                (uri, Some(iss))
            }
        };
        let doc = get_json(client, &jwks_uri)
            .await
            .map_err(|e| format!("JWKS: {e}"))?;
        let keys = parse_jwks(&doc, &self.allowed)?;
        Ok(Snapshot {
            keys,
            issuer,
            fetched_at: Instant::now(),
        })
    }

    /// The JWKS URI and issuer from discovery, cached like the keys.
    async fn discovery(
        &self,
        client: &HttpClient,
        issuer: &str,
        gate: &mut Gate,
    ) -> Result<(Uri, String), String> {
        if let Some((uri, iss, at)) = &gate.discovery {
            if at.elapsed() < self.config.cache_ttl {
                return Ok((uri.clone(), iss.clone()));
            }
        }
        let url = discovery_url(issuer)?;
        let doc = get_json(client, &url)
            .await
            .map_err(|e| format!("OIDC discovery: {e}"))?;
        let (uri, iss) = parse_discovery(&doc, issuer)?;
        gate.discovery = Some((uri.clone(), iss.clone(), Instant::now()));
        Ok((uri, iss))
    }
}

fn http_client() -> Result<HttpClient, String> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| format!("TLS client setup failed: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

/// GET a JSON document: 200 only, bounded in time and size.
async fn get_json(client: &HttpClient, uri: &Uri) -> Result<Value, String> {
    let request = Request::get(uri.clone())
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::new())
        .map_err(|_| "invalid request".to_string())?;
    let body = async {
        let response = client
            .request(request)
            .await
            .map_err(|_| "connection failed".to_string())?;
        if response.status() != StatusCode::OK {
            return Err(format!("HTTP status {}", response.status().as_u16()));
        }
        crate::http::body::read_to_limit(response.into_body(), MAX_DOCUMENT)
            .await
            .map_err(|_| "reading the body failed or it exceeds 1 MiB".to_string())
    };
    let bytes = tokio::time::timeout(FETCH_TIMEOUT, body)
        .await
        .map_err(|_| format!("timed out after {}s", FETCH_TIMEOUT.as_secs()))??;
    serde_json::from_slice(&bytes).map_err(|_| "the document is not JSON".to_string())
}

/// `{issuer}/.well-known/openid-configuration`, trailing slash or not.
pub fn discovery_url(issuer: &str) -> Result<Uri, String> {
    let url = format!("{}{DISCOVERY_PATH}", issuer.trim_end_matches('/'));
    parse_http_url(&url)
}

/// `jwks_uri` and `issuer` of a discovery document. The issuer must be the
/// one discovery was asked about (OIDC Discovery §4.3), or a look-alike
/// document could name any issuer.
fn parse_discovery(doc: &Value, expected_issuer: &str) -> Result<(Uri, String), String> {
    let jwks_uri = doc
        .get("jwks_uri")
        .and_then(Value::as_str)
        .ok_or("OIDC discovery: no jwks_uri")?;
    let uri = parse_http_url(jwks_uri).map_err(|e| format!("OIDC discovery: jwks_uri {e}"))?;
    let issuer = doc
        .get("issuer")
        .and_then(Value::as_str)
        .ok_or("OIDC discovery: no issuer")?;
    if issuer.trim_end_matches('/') != expected_issuer.trim_end_matches('/') {
        return Err("OIDC discovery: the document names another issuer".into());
    }
    Ok((uri, issuer.to_string()))
}

/// An absolute http(s) URL.
pub fn parse_http_url(s: &str) -> Result<Uri, String> {
    let uri: Uri = s.parse().map_err(|_| "is not a valid URL".to_string())?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(uri),
        _ => Err("must be an absolute http:// or https:// URL".into()),
    }
}

/// The usable keys of a JWKS document. Keys that cannot serve (encryption
/// keys, unknown types, algorithms outside the allow-list, symmetric keys)
/// are skipped rather than failing the whole set.
pub fn parse_jwks(doc: &Value, allowed: &[Algorithm]) -> Result<Vec<RemoteKey>, String> {
    let entries = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("JWKS: no \"keys\" array")?;
    Ok(entries
        .iter()
        .filter_map(|entry| remote_key(entry, allowed))
        .collect())
}

fn remote_key(entry: &Value, allowed: &[Algorithm]) -> Option<RemoteKey> {
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    if !for_signatures(&jwk) {
        return None;
    }
    let algorithms: Vec<Algorithm> = key_algorithms(&jwk)?
        .into_iter()
        .filter(|a| allowed.contains(a))
        .collect();
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    // A key too weak or malformed for any of its algorithms is dropped.
    let first = *algorithms.first()?;
    check_public_key(&key, first).ok()?;
    Some(RemoteKey {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key,
    })
}

/// `use` is "sig" or absent; `key_ops`, if present, includes "verify".
fn for_signatures(jwk: &Jwk) -> bool {
    let use_ok = matches!(
        jwk.common.public_key_use,
        None | Some(PublicKeyUse::Signature)
    );
    let ops_ok = jwk
        .common
        .key_operations
        .as_ref()
        .is_none_or(|ops| ops.contains(&KeyOperations::Verify));
    use_ok && ops_ok
}

/// The algorithms a JWK may verify: its `alg` if stated (and consistent with
/// its type), else every algorithm of its type. Symmetric ("oct") keys are
/// never taken from a JWKS: a published HMAC secret is no secret.
fn key_algorithms(jwk: &Jwk) -> Option<Vec<Algorithm>> {
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa.algorithms().to_vec(),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            _ => return None,
        },
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(by_type),
        Some(stated) => {
            let stated = Algorithm::try_from(stated).ok()?;
            by_type.contains(&stated).then(|| vec![stated])
        }
    }
}

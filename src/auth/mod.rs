//! Authentication per the security schemes the gateway publishes, and
//! authorization per skill and method.
//!
//! Alternatives follow A2A/OpenAPI: the caller must satisfy every scheme of
//! at least one alternative, holding its scopes. No credentials, or bad
//! ones, is 401 with a `WWW-Authenticate` challenge naming what would be
//! accepted; valid credentials without the needed scopes is 403.

pub mod apikey;
pub mod authz;
pub mod basic;
pub mod config;
pub mod jwt;
pub mod publish;
pub mod sessions;

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use http::header;
use http::request::Parts;
use serde_json::{Map, Value};

use crate::http::error::GatewayError;
use crate::tls::PeerCert;
use basic::{BasicVerifier, Outcome};
use config::{Auth, SchemeKind};
use jwt::JwtValidator;

/// Who the caller is, as far as the gateway could verify. It travels with
/// the request (extensions) for routing, authorization, limits and logs.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// Key id, user name, token `sub`, or certificate subject.
    pub subject: String,
    /// The scheme(s) that proved it, e.g. "bearer" or "apikey+mtls".
    pub scheme: String,
    pub scopes: Vec<String>,
    /// A token's claims, shared with the verified-token cache; empty for
    /// schemes without claims.
    pub claims: Arc<Map<String, Value>>,
}

/// The claims of an identity that has none, shared so that making one
/// allocates nothing.
pub fn no_claims() -> Arc<Map<String, Value>> {
    static EMPTY: LazyLock<Arc<Map<String, Value>>> = LazyLock::new(Arc::default);
    Arc::clone(&EMPTY)
}

/// How one scheme judged a request.
enum Check {
    Missing,
    Invalid(String),
    Valid(Identity),
}

enum Verifier {
    ApiKey,
    Basic(BasicVerifier),
    Jwt(Box<JwtValidator>),
    Mtls,
}

pub struct Authenticator {
    config: Auth,
    verifiers: Vec<Verifier>,
    challenge: String,
}

impl Authenticator {
    pub fn new(config: &Auth) -> Self {
        let verifiers = config
            .schemes
            .iter()
            .map(|s| match &s.kind {
                SchemeKind::ApiKey { .. } => Verifier::ApiKey,
                SchemeKind::Basic { users } => Verifier::Basic(BasicVerifier::new(users)),
                SchemeKind::Bearer { jwt, .. }
                | SchemeKind::OAuth2 { jwt, .. }
                | SchemeKind::OpenIdConnect { jwt, .. } => {
                    Verifier::Jwt(Box::new(JwtValidator::new(jwt)))
                }
                SchemeKind::MutualTls => Verifier::Mtls,
            })
            .collect();
        Self {
            challenge: challenge(config, None),
            config: config.clone(),
            verifiers,
        }
    }

    pub fn config(&self) -> &Auth {
        &self.config
    }

    /// Verifies the request's credentials against the alternatives; `peer`
    /// is the client certificate its TLS connection gave, if any.
    pub async fn authenticate(
        &self,
        parts: &Parts,
        peer: Option<&PeerCert>,
    ) -> Result<Identity, GatewayError> {
        let mut checks: Vec<Option<Check>> = (0..self.verifiers.len()).map(|_| None).collect();
        let mut short_of_scopes: Option<Vec<String>> = None;
        for alternative in &self.config.alternatives {
            let mut satisfied = true;
            for (idx, scopes) in alternative {
                if checks[*idx].is_none() {
                    checks[*idx] = Some(self.check(*idx, parts, peer).await);
                }
                match &checks[*idx] {
                    Some(Check::Valid(identity)) => {
                        let missing: Vec<String> = scopes
                            .iter()
                            .filter(|s| !identity.scopes.contains(s))
                            .cloned()
                            .collect();
                        if !missing.is_empty() {
                            short_of_scopes.get_or_insert(missing);
                            satisfied = false;
                        }
                    }
                    _ => satisfied = false,
                }
            }
            if satisfied {
                // Nothing is checked after this: the identities are moved
                // out, not copied.
                let proved = alternative
                    .iter()
                    .filter_map(|(idx, _)| match checks[*idx].take() {
                        Some(Check::Valid(identity)) => Some(identity),
                        _ => None,
                    });
                return Ok(merge(proved));
            }
        }
        Err(self.refusal(&checks, short_of_scopes))
    }

    /// Credentials that pass one of the schemes named `names`, whatever
    /// the alternatives say (the console's sign-in): the identity, or why
    /// not.
    pub async fn authenticate_with(
        &self,
        names: &[String],
        parts: &Parts,
    ) -> Result<Identity, String> {
        let mut refused = Vec::new();
        for (idx, scheme) in self.config.schemes.iter().enumerate() {
            if !names.contains(&scheme.name) {
                continue;
            }
            match self.check(idx, parts, None).await {
                Check::Valid(identity) => return Ok(identity),
                Check::Invalid(why) => refused.push(format!("{}: {why}", scheme.name)),
                Check::Missing => {}
            }
        }
        Err(match refused.is_empty() {
            true => "credentials are required".into(),
            false => format!("credentials were refused ({})", refused.join("; ")),
        })
    }

    /// Why no alternative was satisfied: 403 when a valid credential lacked
    /// a scope, else 401 naming each refused credential (or asking for one).
    fn refusal(
        &self,
        checks: &[Option<Check>],
        short_of_scopes: Option<Vec<String>>,
    ) -> GatewayError {
        if let Some(missing) = short_of_scopes {
            return GatewayError::Forbidden {
                reason: format!(
                    "the credentials lack the required scope(s): {}",
                    missing.join(" ")
                ),
                challenge: Some(format!(
                    "Bearer realm=\"a2a-gateway\", error=\"insufficient_scope\", scope=\"{}\"",
                    missing.join(" ")
                )),
            };
        }
        let invalid: Vec<String> = checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c {
                Some(Check::Invalid(why)) => {
                    Some(format!("{}: {why}", self.config.schemes[i].name))
                }
                _ => None,
            })
            .collect();
        let (reason, challenge) = match invalid.is_empty() {
            true => (
                "credentials are required".to_string(),
                self.challenge.clone(),
            ),
            false => (
                format!("credentials were refused ({})", invalid.join("; ")),
                challenge(&self.config, Some("invalid_token")),
            ),
        };
        let scheme = checks
            .iter()
            .position(|c| matches!(c, Some(Check::Invalid(_))))
            .map_or_else(
                || "none".to_string(),
                |i| self.config.schemes[i].name.clone(),
            );
        GatewayError::Unauthenticated {
            reason,
            challenge,
            scheme,
        }
    }

    async fn check(&self, idx: usize, parts: &Parts, peer: Option<&PeerCert>) -> Check {
        let scheme = &self.config.schemes[idx];
        let authorization = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let identity = |subject: String| Identity {
            subject,
            scheme: scheme.name.clone(),
            scopes: Vec::new(),
            claims: no_claims(),
        };
        match (&self.verifiers[idx], &scheme.kind) {
            (
                Verifier::ApiKey,
                SchemeKind::ApiKey {
                    location,
                    param,
                    keys,
                },
            ) => outcome(
                apikey::verify(parts, *location, param, keys),
                identity,
                "unknown API key",
            ),
            (Verifier::Basic(v), _) => outcome(
                v.verify(authorization).await,
                identity,
                "wrong user or password",
            ),
            (Verifier::Jwt(v), _) => {
                let Some(token) = authorization.and_then(|a| basic::strip_scheme(a, "bearer"))
                else {
                    return Check::Missing;
                };
                match v.validate(token).await {
                    Ok(t) => Check::Valid(Identity {
                        subject: t.subject.clone(),
                        scheme: scheme.name.clone(),
                        scopes: t.scopes.clone(),
                        claims: Arc::clone(&t.claims),
                    }),
                    Err(e) => Check::Invalid(e.to_string()),
                }
            }
            (Verifier::Mtls, _) => match peer.map(peer_subject) {
                Some(subject) => Check::Valid(identity(subject)),
                None => Check::Missing,
            },
            (Verifier::ApiKey, _) => Check::Missing,
        }
    }
}

fn outcome(o: Outcome, identity: impl Fn(String) -> Identity, why: &str) -> Check {
    match o {
        Outcome::Missing => Check::Missing,
        Outcome::Invalid => Check::Invalid(why.to_string()),
        Outcome::Valid(subject) => Check::Valid(identity(subject)),
    }
}

/// The identity of a client certificate: its first subjectAltName, else
/// its subject DN.
fn peer_subject(peer: &PeerCert) -> String {
    peer.sans
        .first()
        .cloned()
        .unwrap_or_else(|| peer.subject.clone())
}

/// One identity from the schemes of the satisfied alternative: the first
/// scheme names the caller; scopes and claims are pooled.
fn merge(mut parts: impl Iterator<Item = Identity>) -> Identity {
    let Some(mut first) = parts.next() else {
        return Identity {
            subject: String::new(),
            scheme: String::new(),
            scopes: Vec::new(),
            claims: no_claims(),
        };
    };
    for other in parts {
        first.scheme = format!("{}+{}", first.scheme, other.scheme);
        for s in other.scopes {
            if !first.scopes.contains(&s) {
                first.scopes.push(s);
            }
        }
        if !other.claims.is_empty() {
            let claims = Arc::make_mut(&mut first.claims);
            for (k, v) in other.claims.iter() {
                claims.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    first
}

/// `WWW-Authenticate` listing every acceptable scheme (RFC 9110 §11.6.1).
fn challenge(config: &Auth, error: Option<&str>) -> String {
    let mut out: BTreeSet<String> = BTreeSet::new();
    let realm = "realm=\"a2a-gateway\"";
    for s in &config.schemes {
        let c = match &s.kind {
            SchemeKind::Basic { .. } => format!("Basic {realm}, charset=\"UTF-8\""),
            SchemeKind::Bearer { .. }
            | SchemeKind::OAuth2 { .. }
            | SchemeKind::OpenIdConnect { .. } => match error {
                Some(e) => format!("Bearer {realm}, error=\"{e}\""),
                None => format!("Bearer {realm}"),
            },
            SchemeKind::ApiKey {
                location, param, ..
            } => {
                format!(
                    "ApiKey {realm}, in=\"{}\", name=\"{param}\"",
                    location.label()
                )
            }
            SchemeKind::MutualTls => format!("MutualTLS {realm}"),
        };
        out.insert(c);
    }
    out.into_iter().collect::<Vec<_>>().join(", ")
}

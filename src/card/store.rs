//! The upstreams' own cards: fetched at start and on an interval with
//! `If-None-Match`, kept in a moka cache whose time-to-live is the allowed
//! staleness — a card not refreshed in time simply expires, and with it
//! that upstream's skills leave the published card.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, StatusCode};
use moka::sync::Cache;
use serde_json::Value;

use super::CARD_PATHS;
use crate::config::card_trust::{CardSignature, SignatureMode};
use crate::config::CardRefresh;
use crate::http::error::GatewayError;
use crate::telemetry::metrics::Metrics;
use crate::upstream::Upstream;

/// Cards are small; anything bigger is not a card.
const MAX_CARD_BYTES: usize = 1024 * 1024;

/// One upstream's last good card, as the upstream wrote it.
#[derive(Debug)]
pub struct FetchedCard {
    pub card: Value,
    /// `capabilities.streaming` is `true`: read once here, not on every
    /// streaming call (a JSON pointer walk cost ~2,800 instructions a call).
    pub streaming: bool,
    /// `capabilities.pushNotifications` is `true`: an agent that does not
    /// say so is not sent push-config calls (`crate::call`).
    pub push_notifications: bool,
    /// The dialects (binding, version, URL) the card offers
    /// (`super::interfaces`), read once when it is fetched.
    pub interfaces: Vec<crate::a2a::dialect::Interface>,
    /// The versions of its JSON-RPC interfaces, for the bridge's plan.
    pub rpc_versions: crate::a2a::dialect::Versions,
    pub etag: Option<HeaderValue>,
    /// Which URL served it, so refreshes ask the same one.
    pub uri: http::Uri,
    pub fetched_at: Instant,
}

/// The outcome of the latest attempt, for /readyz and logs.
#[derive(Debug, Clone, Default)]
pub struct Attempt {
    pub error: Option<GatewayError>,
    pub last_success: Option<Instant>,
}

pub struct CardStore {
    cards: Cache<String, Arc<FetchedCard>>,
    attempts: Mutex<HashMap<String, Attempt>>,
    /// Verdicts on the agents' card signatures.
    pub signatures: super::signature::Signatures,
    timeout: Duration,
    metrics: Arc<Metrics>,
}

enum Fetch {
    Fresh(FetchedCard),
    NotModified,
    /// Fetched, but refused by `card_signature = "required"` (logged by
    /// `super::signature` when the verdict is news).
    Refused(GatewayError),
}

impl CardStore {
    pub fn new(cfg: &CardRefresh, metrics: Arc<Metrics>) -> Self {
        Self {
            cards: Cache::builder().time_to_live(cfg.max_staleness).build(),
            attempts: Mutex::new(HashMap::new()),
            signatures: Default::default(),
            timeout: cfg.timeout,
            metrics,
        }
    }

    /// Keeps `body` as the upstream's card, as a fetch would (unit tests).
    #[cfg(test)]
    pub(crate) fn insert(&self, upstream: &Upstream, body: &str) {
        let uri = http::Uri::from_static("http://127.0.0.1/.well-known/agent-card.json");
        let body = Bytes::copy_from_slice(body.as_bytes());
        let card = parse(upstream, uri, &http::HeaderMap::new(), &body).expect("a card");
        self.cards.insert(upstream.name.clone(), Arc::new(card));
    }

    /// The upstream's card if it is fresh enough to use.
    pub fn get(&self, upstream: &str) -> Option<Arc<FetchedCard>> {
        self.cards.get(upstream)
    }

    pub fn attempt(&self, upstream: &str) -> Attempt {
        self.attempts
            .lock()
            .ok()
            .and_then(|a| a.get(upstream).cloned())
            .unwrap_or_default()
    }

    /// Refreshes every upstream's card concurrently; each fetch is bounded
    /// by the refresh timeout, so a dead upstream never blocks the others.
    /// `signatures` are the upstreams' `card_signature`s, in the same order.
    pub async fn refresh_all(&self, upstreams: &[Arc<Upstream>], signatures: &[&CardSignature]) {
        let each = upstreams.iter().zip(signatures);
        futures_util::future::join_all(each.map(|(u, s)| self.refresh(u, s))).await;
    }

    async fn refresh(&self, upstream: &Upstream, signature: &CardSignature) {
        let previous = self.cards.get(&upstream.name);
        // A card verified under other settings (or none) is asked for
        // again, so a reload's trust applies to it.
        let checked_under = self.signatures.get(&upstream.name).map(|s| s.under);
        let previous = previous.filter(|_| {
            signature.mode == SignatureMode::Off || checked_under.as_ref() == Some(signature)
        });
        let outcome = match self.fetch(upstream, previous.as_deref()).await {
            Ok(Fetch::Fresh(card)) => self.checked(upstream, signature, card).await,
            other => other,
        };
        let mut attempt = self.attempt(&upstream.name);
        match outcome {
            Ok(Fetch::Fresh(card)) => {
                self.count(&upstream.name, "ok");
                self.cards.insert(upstream.name.clone(), Arc::new(card));
                attempt = Attempt {
                    error: None,
                    last_success: Some(Instant::now()),
                };
            }
            Ok(Fetch::NotModified) => {
                self.count(&upstream.name, "not_modified");
                // Re-inserting restarts the staleness clock.
                if let Some(card) = previous {
                    self.cards.insert(upstream.name.clone(), card);
                }
                attempt = Attempt {
                    error: None,
                    last_success: Some(Instant::now()),
                };
            }
            Ok(Fetch::Refused(e)) => {
                self.count(&upstream.name, "refused");
                attempt.error = Some(e);
            }
            Err(e) => {
                self.count(&upstream.name, "error");
                tracing::warn!(upstream = %upstream.name, error = %e, "card refresh failed; keeping the last good card until it is stale");
                attempt.error = Some(e);
            }
        }
        if let Ok(mut attempts) = self.attempts.lock() {
            attempts.insert(upstream.name.clone(), attempt);
        }
    }

    /// A fresh card through its upstream's `card_signature`: under
    /// `required`, a card without a valid signature is refused and the one
    /// kept before is dropped (its skills leave the fleet card), and a
    /// valid one is used as far as its signature covers it.
    async fn checked(
        &self,
        upstream: &Upstream,
        signature: &CardSignature,
        card: FetchedCard,
    ) -> Result<Fetch, GatewayError> {
        if signature.mode == SignatureMode::Off {
            self.signatures.forget(&upstream.name);
            return Ok(Fetch::Fresh(card));
        }
        // Bounded like the fetch: a key URL that does not answer delays
        // neither start-up nor the other cards.
        let checking = super::verify::verify(&card.card, signature);
        let verdict = match tokio::time::timeout(self.timeout, checking).await {
            Ok(verdict) => verdict,
            Err(_) => Err(super::verify::Refusal::Invalid(format!(
                "the trusted keys could not be fetched within the card refresh timeout ({}s)",
                self.timeout.as_secs_f64()
            ))),
        };
        let metrics = &self.metrics;
        (self.signatures).record(&upstream.name, signature, &verdict, metrics);
        match (verdict, signature.mode) {
            (Ok(verified), SignatureMode::Required) => {
                Ok(Fetch::Fresh(card.reading(verified.card)))
            }
            (Err(refusal), SignatureMode::Required) => {
                self.cards.invalidate(&upstream.name);
                let why = format!("its card is refused (card_signature = required): {refusal}");
                Ok(Fetch::Refused(bad(upstream, why)))
            }
            _ => Ok(Fetch::Fresh(card)),
        }
    }

    fn count(&self, upstream: &str, result: &str) {
        self.metrics
            .card_refresh
            .with_label_values(&[upstream, result])
            .inc();
    }

    async fn fetch(
        &self,
        upstream: &Upstream,
        previous: Option<&FetchedCard>,
    ) -> Result<Fetch, GatewayError> {
        let candidates: Vec<http::Uri> = match (previous, upstream.card_url()) {
            (Some(p), _) => vec![p.uri.clone()],
            (None, Some(configured)) => vec![configured.clone()],
            (None, None) => CARD_PATHS.iter().map(|p| upstream.origin_uri(p)).collect(),
        };
        let mut last = None;
        for uri in candidates {
            let etag = previous.and_then(|p| p.etag.clone());
            let extra: Vec<(HeaderName, HeaderValue)> = etag
                .into_iter()
                .map(|e| (header::IF_NONE_MATCH, e))
                .collect();
            let request = upstream.get_request(uri.clone(), &extra);
            let (status, headers, body) = upstream
                .exchange(request, MAX_CARD_BYTES, self.timeout)
                .await?;
            match status {
                StatusCode::NOT_MODIFIED if previous.is_some() => return Ok(Fetch::NotModified),
                StatusCode::NOT_FOUND => last = Some(format!("GET {} answered 404", uri.path())),
                s if s.is_success() => {
                    return parse(upstream, uri, &headers, &body).map(Fetch::Fresh)
                }
                s => return Err(bad(upstream, format!("GET {} answered {s}", uri.path()))),
            }
        }
        Err(bad(
            upstream,
            last.unwrap_or_else(|| "no agent card found".into()),
        ))
    }
}

fn parse(
    upstream: &Upstream,
    uri: http::Uri,
    headers: &http::HeaderMap,
    body: &Bytes,
) -> Result<FetchedCard, GatewayError> {
    let card: Value = serde_json::from_slice(body)
        .map_err(|e| bad(upstream, format!("GET {} is not JSON: {e}", uri.path())))?;
    if !card.is_object() {
        return Err(bad(
            upstream,
            format!("GET {} is not a JSON object", uri.path()),
        ));
    }
    Ok(FetchedCard::read(
        card,
        headers.get(header::ETAG).cloned(),
        uri,
    ))
}

impl FetchedCard {
    /// What the gateway reads of `card` once, when it arrives.
    fn read(card: Value, etag: Option<HeaderValue>, uri: http::Uri) -> FetchedCard {
        let streaming = card.pointer("/capabilities/streaming") == Some(&Value::Bool(true));
        let push_notifications =
            card.pointer("/capabilities/pushNotifications") == Some(&Value::Bool(true));
        let interfaces = super::interfaces::of(&card);
        let rpc_versions = (interfaces.iter())
            .filter(|i| i.binding == crate::a2a::dialect::Binding::JsonRpc)
            .map(|i| i.version)
            .collect();
        FetchedCard {
            card,
            streaming,
            push_notifications,
            interfaces,
            rpc_versions,
            etag,
            uri,
            fetched_at: Instant::now(),
        }
    }

    /// The same fetch, read as `card` (the part a signature covers).
    fn reading(self, card: Value) -> FetchedCard {
        FetchedCard::read(card, self.etag, self.uri)
    }
}

fn bad(upstream: &Upstream, detail: String) -> GatewayError {
    GatewayError::UpstreamBadResponse {
        upstream: upstream.name.clone(),
        detail,
    }
}

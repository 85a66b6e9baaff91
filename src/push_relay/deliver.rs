//! Delivering one notification to the client's webhook: the host resolved
//! and checked by the push guard at delivery time, the connection made to
//! the address checked (hyper-util's connector given exactly those
//! addresses, so there is no second look-up), TLS verified against the
//! URL's host, the client's token and credentials sent. Retries with
//! exponential back-off and jitter on 5xx, 429 and connection errors,
//! honouring `Retry-After`, up to `max_attempts`; none on other 4xx.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::Value;

use super::seal::ClientConfig;
use crate::push_guard::{PushGuard, Undeliverable};

/// A boxed look-up, so tests can answer what a rebinding DNS would.
pub type Lookup = Pin<Box<dyn Future<Output = Result<Vec<IpAddr>, String>> + Send>>;

/// Resolves a host name at delivery time.
pub trait Resolve: Send + Sync {
    fn resolve(&self, host: String, port: u16) -> Lookup;
}

/// The system's resolver, bounded in time.
pub struct SystemResolve {
    pub timeout: Duration,
}

impl Resolve for SystemResolve {
    fn resolve(&self, host: String, port: u16) -> Lookup {
        let timeout = self.timeout;
        Box::pin(async move {
            let lookup = tokio::net::lookup_host((host.as_str(), port));
            match tokio::time::timeout(timeout, lookup).await {
                Ok(Ok(found)) => Ok(found.map(|a| a.ip()).collect()),
                Ok(Err(_)) => Err(format!("cannot resolve {host}")),
                Err(_) => Err(format!("cannot resolve {host} (no answer in time)")),
            }
        })
    }
}

/// What became of a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The webhook answered 2xx.
    Ok { status: u16, attempts: u32 },
    /// The guard refused the address at delivery: dropped, not retried.
    Refused(String),
    /// A 4xx other than 429: the client said no; not retried.
    Rejected { status: u16, attempts: u32 },
    /// Every attempt failed with something worth retrying.
    GaveUp { attempts: u32, last: String },
    /// The client deleted the config before it was sent: dropped.
    Deleted,
}

impl Delivered {
    /// The metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Delivered::Ok { .. } => "delivered",
            Delivered::Refused(_) => "refused",
            Delivered::Rejected { .. } => "rejected",
            Delivered::GaveUp { .. } => "gave_up",
            Delivered::Deleted => "deleted",
        }
    }
}

/// One attempt's outcome.
enum Attempt {
    Done(u16),
    Refused(String),
    Rejected(u16),
    Retry {
        after: Option<Duration>,
        why: String,
    },
}

/// Sends notifications; shared by every destination's queue.
pub struct Sender {
    pub guard: PushGuard,
    pub resolve: Arc<dyn Resolve>,
    pub timeout: Duration,
    pub max_attempts: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
}

impl Sender {
    /// `body` to the webhook of `config`, retried as the module says.
    pub async fn deliver(&self, config: &ClientConfig, body: &Bytes) -> Delivered {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let began = std::time::Instant::now();
            let attempt = self.attempt(config, body).await;
            log_attempt(config, attempts, &attempt, began.elapsed());
            let why = match attempt {
                Attempt::Done(status) => return Delivered::Ok { status, attempts },
                Attempt::Refused(why) => return Delivered::Refused(why),
                Attempt::Rejected(status) => return Delivered::Rejected { status, attempts },
                Attempt::Retry { after, why } => {
                    if attempts < self.max_attempts {
                        let wait = after.unwrap_or_else(|| self.backoff(attempts));
                        tokio::time::sleep(wait.min(self.max_backoff)).await;
                        continue;
                    }
                    why
                }
            };
            return Delivered::GaveUp {
                attempts,
                last: why,
            };
        }
    }

    async fn attempt(&self, config: &ClientConfig, body: &Bytes) -> Attempt {
        let resolve = self.resolve.clone();
        let checked = (self.guard)
            .delivery_addresses(&config.url, move |host, port| resolve.resolve(host, port))
            .await;
        let addresses = match checked {
            Ok(addresses) => addresses,
            Err(Undeliverable::Refused(why)) => return Attempt::Refused(why),
            Err(Undeliverable::Unresolved(why)) => return Attempt::Retry { after: None, why },
        };
        let request = match request(config, body) {
            Ok(request) => request,
            Err(why) => return Attempt::Refused(why),
        };
        let client = match pinned_client(addresses, self.timeout) {
            Ok(client) => client,
            Err(why) => return Attempt::Retry { after: None, why },
        };
        let response = match tokio::time::timeout(self.timeout, client.request(request)).await {
            Err(_) => {
                return Attempt::Retry {
                    after: None,
                    why: "no answer in time".into(),
                }
            }
            Ok(Err(e)) => {
                return Attempt::Retry {
                    after: None,
                    why: format!("connection failed: {e}"),
                }
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        let after = retry_after(response.headers());
        // The answer's body is not read: the status says it all.
        drop(response);
        match status {
            s if s.is_success() => Attempt::Done(s.as_u16()),
            StatusCode::TOO_MANY_REQUESTS => Attempt::Retry {
                after,
                why: "429".into(),
            },
            s if s.is_server_error() => Attempt::Retry {
                after,
                why: s.as_u16().to_string(),
            },
            s => Attempt::Rejected(s.as_u16()),
        }
    }

    /// The wait before attempt `attempts + 1`: `backoff × 2^(attempts-1)`,
    /// capped, then a random point in its upper half (jitter spreads the
    /// retries of many notifications that failed together).
    fn backoff(&self, attempts: u32) -> Duration {
        let doubled = self
            .backoff
            .saturating_mul(1 << attempts.saturating_sub(1).min(16));
        let ceiling = doubled.min(self.max_backoff);
        let mut byte = [0u8; 1];
        let fraction = match SystemRandom::new().fill(&mut byte) {
            Ok(()) => f64::from(byte[0]) / 255.0,
            Err(_) => 1.0,
        };
        ceiling.mul_f64(0.5 + 0.5 * fraction)
    }
}

/// Operators filter the relay's lines on this target (`RUST_LOG`).
pub const ACCESS_TARGET: &str = "a2a_gateway::push_relay::delivery";

/// One line per attempt: where (the webhook's origin, never its path or
/// query, which may hold secrets), which task, and how it went.
fn log_attempt(config: &ClientConfig, attempt: u32, outcome: &Attempt, took: Duration) {
    let destination = destination(&config.url);
    let (result, status, why) = match outcome {
        Attempt::Done(status) => ("delivered", Some(*status), ""),
        Attempt::Refused(why) => ("refused", None, why.as_str()),
        Attempt::Rejected(status) => ("rejected", Some(*status), ""),
        Attempt::Retry { why, .. } => ("retry", None, why.as_str()),
    };
    let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    let task = config.task_id.as_str();
    match result {
        "refused" => {
            tracing::warn!(target: ACCESS_TARGET, destination, task, attempt, result, why, ms, "push delivery attempt")
        }
        _ => {
            tracing::info!(target: ACCESS_TARGET, destination, task, attempt, result, status, why, ms, "push delivery attempt")
        }
    }
}

/// The POST: the body as JSON, the client's token, and `Authorization`
/// from its `authentication` (1.0 `scheme`, 0.3 `schemes[0]`, with
/// `credentials`).
fn request(config: &ClientConfig, body: &Bytes) -> Result<Request<Full<Bytes>>, String> {
    let mut builder = Request::post(config.url.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::USER_AGENT, "a2a-gateway push relay");
    if let Some(token) = &config.token {
        builder = builder.header("x-a2a-notification-token", token.as_str());
    }
    if let Some(value) = authorization(config.authentication.as_ref()) {
        builder = builder.header(header::AUTHORIZATION, value);
    }
    (builder.body(Full::new(body.clone()))).map_err(|e| format!("cannot make the request: {e}"))
}

fn authorization(authentication: Option<&Value>) -> Option<HeaderValue> {
    let authentication = authentication?;
    let scheme = (authentication.get("scheme").and_then(Value::as_str))
        .or_else(|| authentication.pointer("/schemes/0").and_then(Value::as_str))?;
    let credentials = authentication.get("credentials").and_then(Value::as_str)?;
    let mut value = HeaderValue::from_str(&format!("{scheme} {credentials}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// `Retry-After` as seconds or an HTTP date.
fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let text = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

type PinnedClient = Client<hyper_rustls::HttpsConnector<HttpConnector<Pinned>>, Full<Bytes>>;

/// A client whose only addresses are `addresses`: the URL's host names
/// the TLS server and the `Host` header, never a look-up.
fn pinned_client(addresses: Vec<SocketAddr>, timeout: Duration) -> Result<PinnedClient, String> {
    let mut tcp = HttpConnector::new_with_resolver(Pinned(Arc::new(addresses)));
    tcp.enforce_http(false);
    tcp.set_connect_timeout(Some(timeout));
    tcp.set_nodelay(true);
    // Mozilla's roots, built once for the process (not per attempt).
    let tls = crate::tls::upstream::default_settings()
        .map_err(|_| "TLS client setup failed".to_string())?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.client_config())
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    Ok(Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(connector))
}

/// The "resolver" of a pinned connection: the addresses checked.
#[derive(Clone)]
pub struct Pinned(Arc<Vec<SocketAddr>>);

impl tower::Service<Name> for Pinned {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Name) -> Self::Future {
        std::future::ready(Ok(self.0.as_ref().clone().into_iter()))
    }
}

/// A webhook's destination: its scheme and authority.
pub fn destination(url: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(uri) => format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map_or("", |a| a.as_str())
        ),
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        let date = httpdate::fmt_http_date(later);
        headers.insert(header::RETRY_AFTER, HeaderValue::from_str(&date).unwrap());
        let read = retry_after(&headers).unwrap();
        assert!(
            read > Duration::from_secs(100) && read <= Duration::from_secs(120),
            "{read:?}"
        );
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn back_off_doubles_within_its_cap_with_jitter() {
        let sender = Sender {
            guard: crate::push_guard::settings(&Default::default()).unwrap(),
            resolve: Arc::new(SystemResolve {
                timeout: Duration::from_secs(1),
            }),
            timeout: Duration::from_secs(1),
            max_attempts: 5,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for (attempts, ceiling) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (30, 1000),
        ] {
            let wait = sender.backoff(attempts);
            let ceiling = Duration::from_millis(ceiling);
            assert!(
                wait >= ceiling / 2 && wait <= ceiling,
                "{attempts}: {wait:?}"
            );
        }
    }

    #[test]
    fn authorization_from_either_version() {
        let v10 = serde_json::json!({"scheme": "Bearer", "credentials": "abc"});
        let v03 = serde_json::json!({"schemes": ["Basic"], "credentials": "dXNlcg=="});
        assert_eq!(authorization(Some(&v10)).unwrap(), "Bearer abc");
        assert_eq!(authorization(Some(&v03)).unwrap(), "Basic dXNlcg==");
        assert!(authorization(Some(&serde_json::json!({"schemes": ["Bearer"]}))).is_none());
        assert!(authorization(None).is_none());
    }
}

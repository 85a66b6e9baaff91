//! An agent's post to `{callback_base}/push/{id}`: the id must open under
//! a key this gateway holds (else 404: it names no config the gateway
//! made), the agent's token must be the one sealed with it (401), the body
//! is bounded (413) and a notification (400), each config has its rate
//! (429), and a config deleted through this replica is gone (410). Then it is written in the client's version and queued, and the
//! agent is answered 202 at once: the client's webhook is the queue's
//! business, never the agent's wait.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::queue::{Job, Queues};
use super::seal::{token_matches, ClientConfig};
use super::settings::PushRelay;
use crate::a2a::dialect::version_from;

/// What the callback answers: a status and why.
pub type Answer = (StatusCode, String);

/// The relay's receiving end.
pub struct Callback {
    pub relay: PushRelay,
    pub queues: Arc<Queues>,
    /// Each config's rate, by its id; idle ones are forgotten.
    rates: moka::sync::Cache<String, Arc<DefaultDirectRateLimiter>>,
}

impl Callback {
    pub fn new(relay: PushRelay, queues: Arc<Queues>) -> Callback {
        let rates = moka::sync::Cache::builder()
            .max_capacity(100_000)
            .time_to_idle(Duration::from_secs(600))
            .build();
        Callback {
            relay,
            queues,
            rates,
        }
    }

    /// Takes one post; `body` is read only once the id and token pass.
    pub async fn receive<B>(&self, id: &str, headers: &HeaderMap, body: B) -> Answer
    where
        B: http_body::Body<Data = Bytes> + Unpin,
    {
        let config = match self.relay.sealer.open(id) {
            Ok(config) => config,
            Err(why) => return (StatusCode::NOT_FOUND, why.to_string()),
        };
        let sent = headers
            .get("x-a2a-notification-token")
            .map(|v| v.as_bytes());
        if !sent.is_some_and(|t| token_matches(t, &config.agent_token)) {
            let why = "X-A2A-Notification-Token is missing or not this config's";
            return (StatusCode::UNAUTHORIZED, why.into());
        }
        if self.queues.shared.deleted.covers(&config) {
            let why = "the client deleted this push config";
            return (StatusCode::GONE, why.into());
        }
        if !self.within_rate(id) {
            let why = format!(
                "more than {} notifications a second for this config",
                self.relay.per_config_per_second
            );
            return (StatusCode::TOO_MANY_REQUESTS, why);
        }
        let max = self.relay.max_body_bytes;
        let bytes = match crate::http::body::read_to_limit(body, max).await {
            Ok(bytes) => bytes,
            Err(crate::http::body::ReadError::TooLarge) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body is over {max} bytes"),
                )
            }
            Err(_) => return (StatusCode::BAD_REQUEST, "the body could not be read".into()),
        };
        let body = match for_client(&config, &bytes) {
            Ok(Some(body)) => body,
            Ok(None) => {
                let why = format!(
                    "not sent: a {} client's webhook reads Tasks only",
                    config.version
                );
                return (StatusCode::ACCEPTED, why);
            }
            Err(why) => return (StatusCode::BAD_REQUEST, why),
        };
        self.queues.push(Job {
            config,
            body,
            queued_at: Instant::now(),
        });
        (StatusCode::ACCEPTED, "queued".into())
    }

    fn within_rate(&self, id: &str) -> bool {
        let per_second =
            NonZeroU32::new(self.relay.per_config_per_second).unwrap_or(NonZeroU32::MIN);
        let limiter = (self.rates).get_with_by_ref(id, || {
            Arc::new(RateLimiter::direct(Quota::per_second(per_second)))
        });
        limiter.check().is_ok()
    }
}

/// The agent's body, a notification in its version, as the client reads
/// it.
fn for_client(config: &ClientConfig, bytes: &[u8]) -> Result<Option<Bytes>, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the body is not JSON: {e}"))?;
    if !value.is_object() {
        return Err("the body is not a JSON object".into());
    }
    let (Some(agent), Some(client)) = (
        version_from(&config.agent_version),
        version_from(&config.version),
    ) else {
        return Err("the config names a version this gateway does not speak".into());
    };
    let translated = crate::bridge::push::translate(agent, client, value, &config.task_id)
        .map_err(|e| format!("the body is not a notification: {e}"))?;
    let Some(translated) = translated else {
        return Ok(None);
    };
    serde_json::to_vec(&translated)
        .map(|bytes| Some(Bytes::from(bytes)))
        .map_err(|e| e.to_string())
}

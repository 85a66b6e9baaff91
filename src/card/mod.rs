//! The Agent Card the gateway serves. Until the Fleet work aggregates cards,
//! it is the card of the upstream that stands for the gateway, fetched on
//! request and rewritten to point at the gateway.

pub mod aggregate;
pub mod rewrite;
pub mod skills;

use http::{header, HeaderValue, Response, StatusCode};
use serde_json::Value;

use crate::body::{self, Body};
use crate::error::GatewayError;
use crate::upstream::Upstream;

/// Well-known card paths: 0.3/1.0 first, then the 0.1/0.2 name.
pub const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// Cards are small; anything bigger is not a card.
const MAX_CARD_BYTES: usize = 1024 * 1024;

/// Fetches `upstream`'s card (trying both well-known paths) and rewrites it
/// for clients that reach the gateway at `endpoint`.
pub async fn fetch_rewritten(upstream: &Upstream, endpoint: &str) -> Result<Value, GatewayError> {
    let mut last = None;
    for path in CARD_PATHS {
        let (status, bytes) = upstream.fetch(path, MAX_CARD_BYTES).await?;
        if status == StatusCode::NOT_FOUND {
            last = Some(status);
            continue;
        }
        if !status.is_success() {
            return Err(bad(upstream, format!("GET {path} answered {status}")));
        }
        let mut card: Value = serde_json::from_slice(&bytes)
            .map_err(|e| bad(upstream, format!("GET {path} is not JSON: {e}")))?;
        if !card.is_object() {
            return Err(bad(upstream, format!("GET {path} is not a JSON object")));
        }
        rewrite::rewrite(&mut card, endpoint);
        return Ok(card);
    }
    let status = last.unwrap_or(StatusCode::NOT_FOUND);
    Err(bad(
        upstream,
        format!("no agent card at either well-known path ({status})"),
    ))
}

fn bad(upstream: &Upstream, detail: String) -> GatewayError {
    GatewayError::UpstreamBadResponse {
        upstream: upstream.name.clone(),
        detail,
    }
}

pub fn card_response(card: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(card).unwrap_or_default();
    let mut response = Response::new(body::full(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

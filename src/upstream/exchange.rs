//! Answers read whole (cards, probes, the extended card): a call and a
//! bounded body, all within a time limit.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::Full;

use super::address::RpcCall;
use super::agent::Upstream;
use super::answer::Leased;
use crate::http::body::{read_to_limit, ReadError};
use crate::http::error::GatewayError;

/// An answer read whole: its status, headers and (bounded) body.
pub type Exchanged = (StatusCode, HeaderMap, Bytes);

impl Upstream {
    /// Sends a request and reads a bounded body (cards), the whole exchange
    /// bounded by the response-header timeout or `limit`.
    pub async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let what = request.uri().path().to_string();
        self.bounded(what, self.send(request), max_bytes, limit)
            .await
    }

    /// As [`Upstream::exchange`], for a JSON-RPC call (probes, the extended
    /// card).
    pub async fn exchange_call(
        &self,
        call: RpcCall,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let what = self.preferred_url().path().to_string();
        self.bounded(what, self.call(call), max_bytes, limit).await
    }

    /// Awaits `sent` and reads at most `max_bytes` of its body, all within
    /// `limit`; `what` names the target in errors.
    async fn bounded(
        &self,
        what: String,
        sent: impl std::future::Future<Output = Result<Response<Leased>, GatewayError>>,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let run = async {
            let response = sent.await?;
            let (parts, body) = response.into_parts();
            let detail = match read_to_limit(body, max_bytes).await {
                Ok(body) => return Ok((parts.status, parts.headers, body)),
                Err(ReadError::TooLarge) => format!("reading {what}: over {max_bytes} bytes"),
                Err(ReadError::Body(e)) => format!("reading {what}: {e}"),
            };
            Err(GatewayError::UpstreamBadResponse {
                upstream: self.name.clone(),
                detail,
            })
        };
        match tokio::time::timeout(limit, run).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::UpstreamTimeout {
                upstream: self.name.clone(),
                detail: format!("{what} took longer than {limit:?}"),
            }),
        }
    }
}

//! An agent's unary answer read whole, for the calls whose answer is encoded
//! anew before it goes on (translated by the bridge, or from an HTTP+JSON
//! agent): bounded in size, and in time by the stream idle timeout.
//! Answers that pass through are streamed and have neither bound.

use bytes::Bytes;
use http::HeaderMap;

use crate::http::body::{self, ReadError};
use crate::http::error::GatewayError;

/// A larger answer is refused as an invalid one.
pub(crate) const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The whole body of `owner`'s answer; a broken one is the agent being
/// unavailable, a slow one its timeout, an oversized one invalid.
pub(crate) async fn read<B>(
    body: B,
    owner: &str,
    within: std::time::Duration,
) -> Result<Bytes, GatewayError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let read = tokio::time::timeout(within, body::read_to_limit(body, MAX_ANSWER)).await;
    outcome(read, owner, within, MAX_ANSWER)
}

/// [`read`] of at most `max` bytes, keeping the trailers (a gRPC answer's
/// status is in them).
pub(crate) async fn read_with_trailers<B>(
    body: B,
    owner: &str,
    within: std::time::Duration,
    max: usize,
) -> Result<(Bytes, Option<HeaderMap>), GatewayError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let read = tokio::time::timeout(within, body::read_with_trailers(body, max)).await;
    outcome(read, owner, within, max)
}

/// A read's outcome: what was read, or the agent's failure it was.
fn outcome<T, E: std::fmt::Display>(
    read: Result<Result<T, ReadError<E>>, tokio::time::error::Elapsed>,
    owner: &str,
    within: std::time::Duration,
    max: usize,
) -> Result<T, GatewayError> {
    let upstream = owner.to_string();
    match read {
        Ok(Ok(read)) => Ok(read),
        Ok(Err(ReadError::TooLarge)) => Err(GatewayError::InvalidAgentResponse {
            upstream,
            detail: format!("the answer is over {max} bytes"),
        }),
        Ok(Err(ReadError::Body(e))) => Err(GatewayError::UpstreamUnavailable {
            upstream,
            detail: format!("the answer broke off: {e}"),
        }),
        Err(_) => Err(GatewayError::UpstreamTimeout {
            upstream,
            detail: format!("the answer did not arrive within {within:?}"),
        }),
    }
}

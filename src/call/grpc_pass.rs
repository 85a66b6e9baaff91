//! What a gRPC front door needs to pass a call through to an agent that
//! speaks its service (`super::grpc_agent::pass`): the client's frames read
//! whole before tonic decodes them (routing reads the decoded message; the
//! agent gets the frames as they came), and the slot where the agent's own
//! answer waits for the front door, which answers with it instead of with
//! what tonic would say.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tonic::Status;

use super::grpc_agent::SaidInGrpc;
use crate::http::body::Body;

/// The call's frames, whole: at most `limit` bytes of message and its
/// frame head, else RESOURCE_EXHAUSTED.
pub(super) async fn frames_of(body: Incoming, limit: usize) -> Result<Bytes, Status> {
    match http_body_util::Limited::new(body, limit.saturating_add(5))
        .collect()
        .await
    {
        Ok(read) => Ok(read.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Status::resource_exhausted(
            format!("the message is over limits.max_body_bytes ({limit} bytes)"),
        )),
        Err(e) => Err(Status::cancelled(format!("the request broke off: {e}"))),
    }
}

/// Where the agent's own answer to a passed-through call is kept.
#[derive(Clone, Default)]
pub(super) struct Passed(Arc<Mutex<Option<Response<Body>>>>);

impl Passed {
    /// The answer, unless it is the agent's own, passed through: that one
    /// is kept here.
    pub(super) fn unless_passed(&self, response: Response<Body>) -> Option<Response<Body>> {
        if response.extensions().get::<SaidInGrpc>().is_none() {
            return Some(response);
        }
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(response);
        }
        None
    }

    /// The agent's own answer if one was kept, else tonic's.
    pub(super) fn or(&self, answered: Response<Body>) -> Response<Body> {
        let kept = self.0.lock().ok().and_then(|mut slot| slot.take());
        kept.unwrap_or(answered)
    }
}

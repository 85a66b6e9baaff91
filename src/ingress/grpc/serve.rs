//! One request through one of tonic's generated servers (the A2A
//! service, health, reflection), its answer as the gateway's body type.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use tonic::Status;

use super::frames::{frames_of, KeptAnswer};
use super::metadata::{bounded, past_deadline, sse_items, Answers};
use crate::http::body::Body;
use crate::state::{AppState, ConnInfo};

/// One call to either A2A service (1.0 or 0.3), as the gRPC front door
/// holds it while tonic's server decodes it and calls the RPC.
pub(crate) struct GrpcCall {
    pub(crate) state: Arc<AppState>,
    pub(crate) conn: ConnInfo,
    /// From `grpc-timeout`: past it the call is abandoned, DEADLINE_EXCEEDED.
    pub(crate) deadline: Option<tokio::time::Instant>,
    /// The call's path and frames as the client sent them.
    pub(crate) path: String,
    pub(crate) frames: Bytes,
    /// The agent's own answer, when the call passed through: the answer
    /// instead of tonic's.
    pub(crate) passed: KeptAnswer,
}

/// What both A2A services do with the gateway's answer to a call; each
/// service says how its calls are encoded and its answers decoded.
impl GrpcCall {
    /// `work`, bounded by the call's deadline: DEADLINE_EXCEEDED past it.
    pub(crate) async fn within<T>(&self, work: impl Future<Output = T>) -> Result<T, Status> {
        match self.deadline {
            Some(deadline) => {
                (tokio::time::timeout_at(deadline, work).await).map_err(|_| past_deadline())
            }
            None => Ok(work.await),
        }
    }

    /// A unary RPC's answer: `response` decoded by `read`, within the
    /// deadline. When the agent's own answer passed through, tonic's is a
    /// placeholder: `serve_call` answers with the agent's.
    pub(crate) async fn unary_answer<A: Default, F>(
        &self,
        response: Response<Body>,
        read: impl FnOnce(Response<Body>) -> F,
    ) -> Result<tonic::Response<A>, Status>
    where
        F: Future<Output = Result<A, Status>>,
    {
        let Some(response) = self.passed.unless_passed(response) else {
            return Ok(tonic::Response::new(A::default()));
        };
        self.within(read(response)).await?.map(tonic::Response::new)
    }

    /// A server stream's answers: each SSE event's data decoded by
    /// `event`, the stream bounded by the deadline. An answer that is not
    /// a stream (a refusal, or an agent that answered at once) is decoded
    /// by `whole`: its error is the call's status.
    pub(crate) async fn stream_answer<A: Send + 'static, F>(
        &self,
        response: Response<Body>,
        whole: impl FnOnce(Response<Body>) -> F,
        event: fn(Value) -> Result<A, Status>,
    ) -> Result<tonic::Response<Answers<A>>, Status>
    where
        F: Future<Output = Result<A, Status>>,
    {
        let Some(response) = self.passed.unless_passed(response) else {
            let none = futures_util::stream::empty();
            return Ok(tonic::Response::new(Box::pin(none)));
        };
        if !crate::relay::is_event_stream(response.headers()) {
            let item = self.within(whole(response)).await??;
            let one = futures_util::stream::iter([Ok(item)]);
            return Ok(tonic::Response::new(Box::pin(one)));
        }
        let events: Answers<A> = Box::pin(sse_items(response.into_body(), event));
        Ok(tonic::Response::new(match self.deadline {
            Some(deadline) => bounded(events, deadline),
            None => events,
        }))
    }
}

/// Reads the client's frames whole (a call to a gRPC agent of its version
/// passes them on as they came), and serves them with the tonic server
/// `server_of` makes for the call and the body limit.
pub(crate) async fn serve_call<S>(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    deadline: Option<tokio::time::Instant>,
    server_of: impl FnOnce(GrpcCall, usize) -> S,
) -> Response<Body>
where
    S: tower::Service<
        Request<Full<Bytes>>,
        Response = Response<tonic::body::Body>,
        Error = std::convert::Infallible,
    >,
{
    let limit = state.config.limits.max_body_bytes;
    let (parts, body) = request.into_parts();
    let frames = match frames_of(body, &parts.headers, limit).await {
        Ok(frames) => frames,
        Err(status) => return into_gateway_body(status.into_http()),
    };
    let passed = KeptAnswer::default();
    let call = GrpcCall {
        state,
        conn: conn.clone(),
        deadline,
        path: parts.uri.path().to_string(),
        frames: frames.clone(),
        passed: passed.clone(),
    };
    let request = Request::from_parts(parts, Full::new(frames));
    passed.or(serve_with(server_of(call, limit), request).await)
}

/// One request through one of tonic's generated servers.
pub(crate) async fn serve_with<S, B>(mut server: S, request: Request<B>) -> Response<Body>
where
    S: tower::Service<
        Request<B>,
        Response = Response<tonic::body::Body>,
        Error = std::convert::Infallible,
    >,
{
    match tower::Service::call(&mut server, request).await {
        Ok(response) => into_gateway_body(response),
        Err(never) => match never {},
    }
}

/// tonic's answer as the gateway's body type. A request tonic could not
/// read does not get here: its frame is checked first
/// (`super::frames::check_frame`), and its message is decoded by the
/// gateway's codec (`crate::a2a::grpc::codec`), which says INVALID_ARGUMENT.
pub(crate) fn into_gateway_body(response: Response<tonic::body::Body>) -> Response<Body> {
    response.map(|body| body.map_err(Into::into).boxed_unsync())
}

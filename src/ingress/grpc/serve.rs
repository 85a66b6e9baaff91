//! One request through one of tonic's generated servers (the A2A
//! service, health, reflection), its answer as the gateway's body type.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use super::frames::{frames_of, KeptAnswer};
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

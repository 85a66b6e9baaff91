//! One request through one of tonic's generated servers (the A2A
//! service, health, reflection), its answer as the gateway's body type.

use http::{Request, Response};
use http_body_util::BodyExt;

use crate::http::body::Body;

/// One request through one of tonic's generated servers.
pub(super) async fn serve_with<S, B>(mut server: S, request: Request<B>) -> Response<Body>
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
/// (`super::grpc_pass::check_frame`), and its message is decoded by the
/// gateway's codec (`crate::a2a::grpc::codec`), which says INVALID_ARGUMENT.
pub(super) fn into_gateway_body(response: Response<tonic::body::Body>) -> Response<Body> {
    response.map(|body| body.map_err(Into::into).boxed_unsync())
}

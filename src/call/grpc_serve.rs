//! One request through one of tonic's generated servers (the A2A
//! service, health, reflection), its answer as the gateway's body type.

use http::{HeaderValue, Request, Response};
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
        Ok(response) => said(response),
        Err(never) => match never {},
    }
}

/// tonic's answer as the gateway's body type, with tonic's own statuses
/// for a request it could not read said as gRPC servers say them: a
/// message it cannot decode is INVALID_ARGUMENT (tonic: INTERNAL, but the
/// client sent it), one over the size limit RESOURCE_EXHAUSTED (tonic:
/// OUT_OF_RANGE). Both answers are trailers-only: the status is in the
/// head.
pub(super) fn said(mut response: Response<tonic::body::Body>) -> Response<Body> {
    let headers = response.headers();
    let message = (headers.get("grpc-message").and_then(|v| v.to_str().ok())).unwrap_or("");
    let said_anew = match headers.get("grpc-status").and_then(|v| v.to_str().ok()) {
        Some("13") if message.starts_with("failed%20to%20decode") => Some("3"),
        Some("11") if message.starts_with("Error,%20decoded%20message%20length%20too%20large") => {
            Some("8")
        }
        _ => None,
    };
    if let Some(code) = said_anew {
        let code = HeaderValue::from_static(code);
        response.headers_mut().insert("grpc-status", code);
    }
    response.map(|body| body.map_err(Into::into).boxed_unsync())
}

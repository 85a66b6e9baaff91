//! The admin listener: probes for orchestrators, on a port of its own so it
//! can stay private while the proxy port is public.

use std::sync::Arc;

use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;

use crate::body::{self, Body};
use crate::state::AppState;

pub async fn handle(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    match request.uri().path() {
        // Liveness: the process answers. Never fails while it runs, so a
        // draining gateway is not killed before its streams finish.
        "/healthz" => json(StatusCode::OK, r#"{"status":"ok"}"#),
        // Readiness: turns false as soon as draining starts so the balancer
        // stops sending new requests.
        "/readyz" if state.is_draining() => {
            json(StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"draining"}"#)
        }
        "/readyz" => json(StatusCode::OK, r#"{"status":"ready"}"#),
        _ => json(
            StatusCode::NOT_FOUND,
            r#"{"error":"not found; try /healthz or /readyz"}"#,
        ),
    }
}

fn json(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(body::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

//! The innermost service: which handler a request goes to, by method and
//! path. Everything unknown is answered here, never dropped.

use std::sync::Arc;

use http::{header, Method, Request, Response};
use hyper::body::Incoming;

use crate::body::Body;
use crate::card;
use crate::error::GatewayError;
use crate::proxy;
use crate::state::AppState;

pub async fn dispatch(state: Arc<AppState>, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path();
    let is_card = card::CARD_PATHS.contains(&path);
    let is_rpc = state.is_rpc_path(path);
    match request.method() {
        &Method::GET | &Method::HEAD if is_card => serve_card(&state, &request).await,
        &Method::POST if is_rpc => proxy::handle(&state, request).await,
        method if is_rpc || is_card => GatewayError::MethodNotAllowed {
            method: method.to_string(),
            path: path.to_string(),
            allow: if is_rpc { "POST" } else { "GET, HEAD" },
        }
        .into_response(None),
        method => GatewayError::NotFound {
            method: method.to_string(),
            path: path.chars().take(128).collect(),
            hint:
                "JSON-RPC is served by POST /, the Agent Card at GET /.well-known/agent-card.json",
        }
        .into_response(None),
    }
}

async fn serve_card(state: &AppState, request: &Request<Incoming>) -> Response<Body> {
    let upstream = &state.upstreams[state.router.card_upstream()];
    let endpoint = public_endpoint(state, request);
    match card::fetch_rewritten(upstream, &endpoint).await {
        Ok(card) => card::card_response(&card),
        Err(e) => e.into_response(None),
    }
}

/// The JSON-RPC URL clients should use: the configured public URL, else the
/// address this client reached the gateway at.
fn public_endpoint(state: &AppState, request: &Request<Incoming>) -> String {
    if let Some(public) = &state.config.server.public_url {
        return public.endpoint();
    }
    let conn = request.extensions().get::<crate::state::ConnInfo>();
    let host = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            let h = request.headers().get(header::HOST)?.to_str().ok()?;
            // Only a well-formed authority goes into a URL we publish.
            h.parse::<http::uri::Authority>()
                .ok()
                .map(|a| a.as_str().to_string())
        })
        .unwrap_or_else(|| match conn {
            Some(c) => c.local.to_string(),
            None => state.config.server.listen.to_string(),
        });
    let proto = conn.map_or("http", |c| c.proto);
    format!("{proto}://{host}/")
}

//! The tower stack in front of the handlers, built in one place: the
//! layers every proxied request goes through, and the span layer too while
//! debug lines are logged. Layers run top to bottom on the way in; each
//! comment says why it stands where it does.
//!
//! A listener's stack is built for each connection it accepts, with that
//! connection's [`ConnInfo`] in its innermost service: the handlers get it
//! as an argument, not as a request extension.

use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use http::{header, HeaderName, Request, Response};
use hyper::body::Incoming;
use hyper_util::service::TowerToHyperService;
use tower::util::BoxCloneService;
use tower::{service_fn, ServiceBuilder, ServiceExt};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::{DefaultOnFailure, DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::http::request_id::{self, HEADER};
use crate::state::{AppState, ConnInfo, Shared};

pub type HttpService = BoxCloneService<Request<Incoming>, Response<Body>, Infallible>;

type HandlerFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>;

/// A connection's service, as hyper calls it.
pub type ConnService = TowerToHyperService<HttpService>;

/// What a listener serves: a connection's service, made when it is accepted.
pub type PerConnection = Arc<dyn Fn(ConnInfo) -> ConnService + Send + Sync>;

/// Credentials a client may send, plus the API-key headers configured for
/// the gateway's own schemes; marked sensitive so no log prints them. And
/// the client's `X-Request-Id`, which is no credential: marked so that
/// HTTP/2 never indexes it (see `request_id::MakeId`).
fn sensitive_headers(state: &AppState) -> Vec<HeaderName> {
    let mut names = vec![
        header::AUTHORIZATION,
        header::PROXY_AUTHORIZATION,
        header::COOKIE,
        HeaderName::from_static("x-api-key"),
        HeaderName::from_static("api-key"),
        HEADER,
    ];
    if let Some(consumed) = &state.consumed {
        names.extend(consumed.headers.iter().cloned());
    }
    names
}

/// The proxy listener's services.
pub fn proxy(shared: Shared) -> PerConnection {
    let sensitive: Arc<[HeaderName]> = sensitive_headers(&shared.load()).into();
    Arc::new(move |conn| proxy_for(shared.clone(), sensitive.clone(), conn))
}

/// One connection's proxy service.
fn proxy_for(shared: Shared, sensitive: Arc<[HeaderName]>, conn: ConnInfo) -> ConnService {
    let handler = service_fn(move |request: Request<Incoming>| {
        // Each call runs under the configuration current when it arrived.
        let state = shared.load_full();
        let conn = conn.clone();
        // The id `request_id::assign` set, for the answer.
        let id = request.headers().get(HEADER).cloned();
        // Boxed here, so that each layer above wraps a pointer: unboxed,
        // every layer's `call` moved the whole handler future (kilobytes:
        // its size is that of its largest state) again, a quarter of a
        // small call's instructions in `memcpy` (callgrind).
        // The box comes first and the future is written into it: made on
        // the stack and then boxed, it was moved once more.
        let slot = Box::new_uninit();
        let handled = Box::write(
            slot,
            crate::server::dispatch::dispatch(state, conn, request),
        );
        let handled: HandlerFuture = Box::into_pin(handled);
        futures_util::FutureExt::map(caught(handled), move |mut response| {
            request_id::echo(response.headers_mut(), id);
            Ok::<_, Infallible>(response)
        })
    });
    let service = if tracing::enabled!(Level::DEBUG) {
        with_spans(sensitive, handler)
    } else {
        ServiceBuilder::new()
            // Outermost: credentials are marked before any layer could
            // log them.
            .layer(SetSensitiveRequestHeadersLayer::from_shared(sensitive))
            // The client's X-Request-Id, or one made here, is set first,
            // so every log line, the access line, the agent and the answer
            // carry the same id (an id the agent answers with is kept).
            .map_request(request_id::assign)
            .service(handler)
            .boxed_clone()
    };
    TowerToHyperService::new(service)
}

/// The stack with one span per request (id, method, path), for a
/// connection accepted while debug lines are logged: lines logged while a
/// request is handled name it. At info the span layer is left out (its
/// clock reads, its future and its body wrapper cost every call), and the
/// lines logged at info name what they are about; the access line carries
/// the id. Failures are the access line's to report, not an error line
/// each.
fn with_spans<S>(sensitive: Arc<[HeaderName]>, handler: S) -> HttpService
where
    S: tower::Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    ServiceBuilder::new()
        .layer(SetSensitiveRequestHeadersLayer::from_shared(sensitive))
        .map_request(request_id::assign)
        // The span layer's answer, in the one body type.
        .map_response(|response: Response<_>| response.map(Body::new))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<Incoming>| {
                    let id = request
                        .headers()
                        .get(HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    tracing::debug_span!("request", id, method = %request.method(), path = %request.uri().path())
                })
                .on_response(DefaultOnResponse::new().level(Level::DEBUG))
                .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
        )
        .service(handler)
        .boxed_clone()
}

/// A panic becomes a 500 JSON-RPC error, never a dropped connection,
/// logged inside the request's span where there is one. Caught here rather
/// than by tower-http's CatchPanic, which boxed every answer's body once
/// more.
fn caught(handled: HandlerFuture) -> impl std::future::Future<Output = Response<Body>> {
    let answered = futures_util::FutureExt::catch_unwind(AssertUnwindSafe(handled));
    futures_util::FutureExt::map(answered, |answered| answered.unwrap_or_else(panicked))
}

/// Logs a handler's panic and answers for it.
fn panicked(payload: Box<dyn Any + Send>) -> Response<Body> {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    tracing::error!(panic = what, "the handler panicked");
    GatewayError::Internal("the gateway failed while handling this request".into())
        .into_response(None)
}

/// The admin listener's services: probes only, no proxy layers.
pub fn admin(shared: Shared) -> PerConnection {
    Arc::new(move |_| {
        let shared = shared.clone();
        let service = service_fn(move |request: Request<Incoming>| {
            let state = shared.load_full();
            async move { Ok::<_, Infallible>(crate::server::admin::handle(state, request).await) }
        });
        TowerToHyperService::new(service.boxed_clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn a_client_request_id_is_marked_never_to_be_indexed() {
        let config =
            crate::config::load_str("[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n")
                .unwrap();
        let names = sensitive_headers(&AppState::new(config));
        assert!(names.contains(&HEADER), "{names:?}");
        assert!(names.contains(&header::AUTHORIZATION), "{names:?}");
    }

    // The lock is held across the handler's await on purpose: the panic's
    // line is logged there (see `log::capture::serial`).
    #[allow(clippy::await_holding_lock)]
    #[tokio::test]
    async fn a_panic_is_answered_with_a_500_json_rpc_error_and_logged() {
        let _serial = crate::telemetry::log::capture::serial();
        let capture = crate::telemetry::log::capture::Capture::default();
        let _logging = capture.install(crate::config::LogFormat::Text);
        let response = caught(Box::pin(async {
            tokio::task::yield_now().await;
            if true {
                panic!("{}", String::from("boom"));
            }
            Response::new(crate::http::body::empty())
        }))
        .await;
        assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["code"], -32603, "{value}");
        let text = capture.text();
        assert!(
            text.contains("ERROR") && text.contains(r#"panic="boom""#),
            "{text}"
        );
    }
}

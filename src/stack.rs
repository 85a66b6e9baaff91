//! The tower stack in front of the handlers, built in one place. Layers run
//! top to bottom on the way in; each comment says why it stands where it does.
//!
//! A listener's stack is built for each connection it accepts, with that
//! connection's [`ConnInfo`] in its innermost service: the handlers get it
//! as an argument, not as a request extension. An extension cost every call
//! a map allocation, a table, a boxed value and their hashing (~900
//! instructions, bench/profile.md); the stack costs one build a connection.

use std::convert::Infallible;
use std::sync::Arc;

use futures_util::future::Either;
use http::{header, HeaderMap, HeaderName, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use tower::util::BoxCloneService;
use tower::{service_fn, ServiceBuilder, ServiceExt};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::body::Body;
use crate::caught::Caught;
use crate::request_id::{Echoed, RequestIdLayer};
use crate::state::{AppState, ConnInfo, Shared};

pub type HttpService = BoxCloneService<Request<Incoming>, Response<Body>, Infallible>;

/// What a listener serves: a connection's service, made when it is accepted.
pub type PerConnection = Arc<dyn Fn(ConnInfo) -> ConnService + Send + Sync>;

/// A connection's service, as hyper calls it: by reference, once a request.
///
/// hyper-util's adapter for a tower service clones the whole stack for
/// every call (a boxed copy: an allocation, its reference counts and the
/// connection's info) and then drives it through `poll_ready`. The proxy
/// without spans is written for hyper directly and clones only what the
/// handler keeps. The traced proxy and the admin listener stay tower
/// stacks: tower-http's `TraceLayer` is one.
pub enum ConnService {
    Proxy(ProxyConn),
    Layered(TowerToHyperService<HttpService>),
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future =
        Either<Echoed<HandlerFuture>, TowerToHyperServiceFuture<HttpService, Request<Incoming>>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        match self {
            ConnService::Proxy(proxy) => Either::Left(proxy.call(request)),
            ConnService::Layered(layered) => Either::Right(layered.call(request)),
        }
    }
}

/// One connection's proxy without spans: the layers of [`outer`], in the
/// same order, written as one call.
pub struct ProxyConn {
    shared: Shared,
    sensitive: Arc<[HeaderName]>,
    conn: ConnInfo,
}

impl ProxyConn {
    fn call(&self, mut request: Request<Incoming>) -> Echoed<HandlerFuture> {
        mark_sensitive(request.headers_mut(), &self.sensitive);
        let id = crate::request_id::assign(&mut request);
        let handled = handle(&self.shared, &self.conn, request, id.clone());
        Echoed::new(handled, id)
    }
}

type HandlerFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// Credentials a client may send, plus the API-key headers configured for
/// the gateway's own schemes; marked sensitive so no log prints them. And
/// the client's `X-Request-Id`, which is no credential: marked so that
/// HTTP/2 never indexes it (see `request_id::never_indexed`).
fn sensitive_headers(state: &AppState) -> Vec<HeaderName> {
    let mut names = vec![
        header::AUTHORIZATION,
        header::PROXY_AUTHORIZATION,
        header::COOKIE,
        HeaderName::from_static("x-api-key"),
        HeaderName::from_static("api-key"),
        crate::request_id::HEADER,
    ];
    if let Some(consumed) = &state.consumed {
        names.extend(consumed.headers.iter().cloned());
    }
    names
}

/// The proxy listener's services.
pub fn proxy(shared: Shared) -> PerConnection {
    let sensitive: Arc<[HeaderName]> = sensitive_headers(&shared.load()).into();
    // One span per request (request id, method, path), so every line logged
    // while it is handled names the request, but only when debug lines are
    // logged (the level is set once, at start). At the shipped level, info,
    // the span and tower-http's layer cost ~9,500 instructions a call, a
    // sixth of the call (bench/profile.md), to name the request in the few
    // lines logged at info or above while it is handled. Those lines name
    // it themselves (a replica retried, a stream's failure, a panic), and
    // the access line carries the id.
    let traced = tracing::span_enabled!(Level::DEBUG);
    Arc::new(move |conn| proxy_for(shared.clone(), sensitive.clone(), traced, conn))
}

/// One connection's proxy service.
fn proxy_for(
    shared: Shared,
    sensitive: Arc<[HeaderName]>,
    traced: bool,
    conn: ConnInfo,
) -> ConnService {
    if !traced {
        return ConnService::Proxy(ProxyConn {
            shared,
            sensitive,
            conn,
        });
    }
    let inner = service_fn(move |request: Request<Incoming>| {
        let id = request.headers().get(crate::request_id::HEADER).cloned();
        handle(&shared, &conn, request, id)
    });
    let traced = ServiceBuilder::new()
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<Incoming>| {
                    let id = request
                        .headers()
                        .get(crate::request_id::HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    tracing::info_span!("request", id, method = %request.method(), path = %request.uri().path())
                })
                .on_response(DefaultOnResponse::new().level(Level::DEBUG)),
        )
        .service(inner)
        .map_response(boxed);
    outer(traced, sensitive)
}

/// A proxied request's handling, under the current configuration, with its
/// panics caught; `id` is its `X-Request-Id`, for the line a panic logs.
///
/// Boxed, so that each layer above wraps a pointer: unboxed, every layer's
/// `call` moved the whole handler future (kilobytes) again, which was most
/// of the gateway's memcpy time on small calls. The box comes first, then
/// the future is written into it: made on the stack and then wrapped and
/// boxed, it was moved twice.
fn handle(
    shared: &Shared,
    conn: &ConnInfo,
    request: Request<Incoming>,
    id: Option<HeaderValue>,
) -> HandlerFuture {
    let state = shared.load_full();
    let slot = Box::new_uninit();
    let handled = Box::write(
        slot,
        Caught::new(crate::dispatch::dispatch(state, conn.clone(), request), id),
    );
    Box::into_pin(handled)
}

/// The layers every proxy request passes first (as [`ProxyConn`] does).
fn outer<S>(service: S, sensitive: Arc<[HeaderName]>) -> ConnService
where
    S: tower::Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    ServiceBuilder::new()
        // Outermost: credentials are marked before any layer could log them.
        .map_request(move |mut request: Request<Incoming>| {
            mark_sensitive(request.headers_mut(), &sensitive);
            request
        })
        // Take the client's X-Request-Id or make one, before the span opens,
        // so every log line and the response carry the same id.
        .layer(RequestIdLayer)
        .service(service)
        .boxed_clone()
        .into()
}

impl From<HttpService> for ConnService {
    fn from(service: HttpService) -> Self {
        ConnService::Layered(TowerToHyperService::new(service))
    }
}

/// Marks the headers named in `names` sensitive. tower-http's
/// `SetSensitiveRequestHeaders` does the same with a hashed lookup of each
/// name, ~150 instructions apiece whether the request has it or not (~900 a
/// call for our six); one pass over the few headers a request carries,
/// comparing names, costs a fraction of that.
fn mark_sensitive(headers: &mut HeaderMap, names: &[HeaderName]) {
    for (name, value) in headers.iter_mut() {
        if names.contains(name) {
            value.set_sensitive(true);
        }
    }
}

/// Every layer's body in the one body type.
fn boxed<B>(response: Response<B>) -> Response<Body>
where
    B: http_body::Body<Data = bytes::Bytes, Error = crate::body::BoxError> + Send + 'static,
{
    response.map(|b| b.boxed_unsync())
}

/// The admin listener's services: probes only, no proxy layers.
pub fn admin(shared: Shared) -> PerConnection {
    Arc::new(move |_| {
        let shared = shared.clone();
        service_fn(move |request: Request<Incoming>| {
            let state = shared.load_full();
            async move { Ok::<_, Infallible>(crate::admin::handle(state, request).await) }
        })
        .boxed_clone()
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_request_id_is_marked_never_to_be_indexed() {
        let config =
            crate::config::load_str("[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n")
                .unwrap();
        let names = sensitive_headers(&AppState::new(config));
        assert!(names.contains(&crate::request_id::HEADER), "{names:?}");
        assert!(names.contains(&header::AUTHORIZATION), "{names:?}");
    }

    #[test]
    fn every_value_of_a_named_header_is_marked_and_no_other() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        headers.append("x-api-key", "one".parse().unwrap());
        headers.append("X-Api-Key", "two".parse().unwrap());
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        headers.insert("x-other", "y".parse().unwrap());
        let names = [header::AUTHORIZATION, HeaderName::from_static("x-api-key")];
        mark_sensitive(&mut headers, &names);
        let marked: Vec<(&str, bool)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.is_sensitive()))
            .collect();
        assert_eq!(
            marked,
            [
                ("authorization", true),
                ("x-api-key", true),
                ("x-api-key", true),
                ("content-type", false),
                ("x-other", false),
            ]
        );
    }
}

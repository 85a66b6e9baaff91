//! "Try it" over gRPC. A page cannot speak gRPC (it needs HTTP/2 and
//! trailers), so it sends the call's params as ProtoJSON and the console
//! encodes them as the service's request message (`crate::a2a::grpc::call`),
//! calls the public listener over h2c, and gives each answer message back
//! as JSON, one SSE event each, then `event: status` with the call's
//! `grpc-status` and `grpc-message`.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use crate::a2a::grpc::call;
use crate::a2a::{Family, Version};
use crate::http::body::{Body, BoxError};

/// Bound on the public listener's answer head ("Try it", any binding).
pub(super) const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Bound on one answer message.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// What the page asks: the service's version, streaming or not, the
/// params, and the call's metadata (already checked by the caller).
pub struct GrpcTried {
    pub version: Version,
    pub stream: bool,
    pub params: Value,
    pub headers: HeaderMap,
}

pub async fn send(target: SocketAddr, tried: GrpcTried) -> Result<Response<Body>, String> {
    let family = if tried.stream {
        Family::Stream
    } else {
        Family::Send
    };
    let version = tried.version;
    let answer = call_public(target, tried, family).await?;
    let (parts, body) = answer.into_parts();
    let events = events(body, grpc_status(&parts.headers), (version, family));
    let mut response = Response::new(StreamBody::new(events.map(Ok::<_, BoxError>)).boxed_unsync());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The call, over h2c to the public listener: its answer's head.
async fn call_public(
    target: SocketAddr,
    tried: GrpcTried,
    family: Family,
) -> Result<Response<hyper::body::Incoming>, String> {
    let (rpc, message) = call::request(tried.version, family, tried.params)
        .map_err(|e| format!("the params are not the service's request: {e}"))?;
    let uri = format!("http://{target}{}", call::path(tried.version, rpc));
    let mut request = Request::post(uri)
        .body(Full::new(call::framed(&message)))
        .map_err(|e| format!("the call could not be made: {e}"))?;
    *request.headers_mut() = tried.headers;
    let headers = request.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    tokio::time::timeout(HEAD_TIMEOUT, client.request(request))
        .await
        .map_err(|_| "the public listener did not answer in time".to_string())?
        .map_err(|e| format!("the public listener could not be reached over h2c: {e}"))
}

/// The answer's messages as SSE events, then its status (from the
/// trailers, else the head).
fn events(
    body: hyper::body::Incoming,
    head_status: Option<(String, String)>,
    (version, family): (Version, Family),
) -> impl futures_util::Stream<Item = Frame<Bytes>> {
    let state = (body, BytesMut::new(), head_status, false);
    futures_util::stream::unfold(
        state,
        move |(mut body, mut buffer, mut status, done)| async move {
            if done {
                return None;
            }
            loop {
                match call::next_message(&mut buffer, MAX_MESSAGE) {
                    Ok(Some(message)) => {
                        let json = call::answer_json(version, family, &message)
                            .map(|j| String::from_utf8_lossy(&j).into_owned())
                            .unwrap_or_else(|e| json!({"error": e}).to_string());
                        return Some((
                            data(format!("data: {json}\n\n")),
                            (body, buffer, status, false),
                        ));
                    }
                    Ok(None) => {}
                    Err(why) => {
                        let ended = status_event(&Some(("13".into(), why)));
                        return Some((data(ended), (body, buffer, status, true)));
                    }
                }
                match body.frame().await {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(bytes) => buffer.extend_from_slice(&bytes),
                        Err(frame) => {
                            if let Some(trailers) = frame.trailers_ref() {
                                status = grpc_status(trailers).or(status);
                            }
                        }
                    },
                    Some(Err(e)) => {
                        let why = Some(("14".to_string(), format!("the answer broke off: {e}")));
                        return Some((data(status_event(&why)), (body, buffer, status, true)));
                    }
                    None => {
                        return Some((data(status_event(&status)), (body, buffer, status, true)))
                    }
                }
            }
        },
    )
}

fn data(text: String) -> Frame<Bytes> {
    Frame::data(Bytes::from(text))
}

/// `grpc-status` and `grpc-message`, where given.
fn grpc_status(headers: &HeaderMap) -> Option<(String, String)> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    Some((
        text("grpc-status")?,
        text("grpc-message").unwrap_or_default(),
    ))
}

fn status_event(status: &Option<(String, String)>) -> String {
    let (code, message) = status
        .clone()
        .unwrap_or_else(|| ("2".into(), "no grpc-status".into()));
    let message = percent_encoding::percent_decode_str(&message)
        .decode_utf8_lossy()
        .into_owned();
    let body = json!({"grpc-status": code, "grpc-message": message});
    format!("event: status\ndata: {body}\n\n")
}

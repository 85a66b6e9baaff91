//! A small HTTP test client: JSON requests over HTTP/1.1 or h2c, SSE streams
//! and raw bytes. Every wait is bounded; a timeout panics with a clear message.

use std::collections::VecDeque;
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderMap, Method, Request, StatusCode, Uri, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::error::Elapsed;

/// Bound for a whole request/response exchange.
pub const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Http1,
    /// HTTP/2 with prior knowledge (h2c).
    Http2,
}

/// A complete response.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub version: Version,
}

impl Reply {
    /// The body as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {}", self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header value as text, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// POST with `content-type: application/json` unless `headers` set one.
pub async fn post_json(url: &str, body: impl Into<Bytes>, headers: &[(&str, &str)]) -> Reply {
    let headers = with_defaults(headers, &[("content-type", "application/json")]);
    request(Method::POST, url, body.into(), &headers, Proto::Http1).await
}

/// Like [`post_json`], but a transport error is returned instead of panicking.
pub async fn try_post_json(
    url: &str,
    body: impl Into<Bytes>,
    headers: &[(&str, &str)],
) -> Result<Reply, String> {
    let headers = with_defaults(headers, &[("content-type", "application/json")]);
    try_request(Method::POST, url, body.into(), &headers, Proto::Http1).await
}

/// [`post_json`] over HTTP/2 prior knowledge (h2c).
pub async fn post_json_h2(url: &str, body: impl Into<Bytes>, headers: &[(&str, &str)]) -> Reply {
    let headers = with_defaults(headers, &[("content-type", "application/json")]);
    request(Method::POST, url, body.into(), &headers, Proto::Http2).await
}

pub async fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    request(Method::GET, url, Bytes::new(), headers, Proto::Http1).await
}

/// Any request; panics on a transport error or timeout.
pub async fn request(
    method: Method,
    url: &str,
    body: Bytes,
    headers: &[(&str, &str)],
    proto: Proto,
) -> Reply {
    let what = format!("{method} {url}");
    try_request(method, url, body, headers, proto)
        .await
        .unwrap_or_else(|e| panic!("test client: {what} failed: {e}"))
}

/// Any request on a fresh client; `Err` is the transport error chain.
/// Panics on timeout.
pub async fn try_request(
    method: Method,
    url: &str,
    body: Bytes,
    headers: &[(&str, &str)],
    proto: Proto,
) -> Result<Reply, String> {
    let what = format!("{method} {url}");
    let request = build_request(method, url, body, headers, proto);
    let client = legacy_client(proto);
    let exchange = async {
        let response = client.request(request).await.map_err(|e| chain(&e))?;
        let (parts, body) = response.into_parts();
        let collected = body.collect().await.map_err(|e| chain(&e))?;
        // Trailers (gRPC's status) are read as headers.
        let mut headers = parts.headers;
        if let Some(trailers) = collected.trailers() {
            headers.extend(trailers.clone());
        }
        Ok(Reply {
            status: parts.status,
            headers,
            body: collected.to_bytes(),
            version: parts.version,
        })
    };
    within(TIMEOUT, &what, exchange).await
}

fn legacy_client(
    proto: Proto,
) -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    let mut builder = Client::builder(TokioExecutor::new());
    builder.http2_only(proto == Proto::Http2);
    builder.build_http()
}

fn build_request(
    method: Method,
    url: &str,
    body: Bytes,
    headers: &[(&str, &str)],
    proto: Proto,
) -> Request<Full<Bytes>> {
    let version = match proto {
        Proto::Http1 => Version::HTTP_11,
        Proto::Http2 => Version::HTTP_2,
    };
    let mut builder = Request::builder().method(method).uri(url).version(version);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(body))
        .unwrap_or_else(|e| panic!("test client: bad request for {url}: {e}"))
}

/// `headers` plus each default whose name `headers` does not already set.
fn with_defaults<'a>(
    headers: &[(&'a str, &'a str)],
    defaults: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let is_set = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let missing = defaults.iter().filter(|(name, _)| !is_set(name));
    missing.chain(headers).copied().collect()
}

fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("test client: {what} timed out after {limit:?}"))
}

// ------------------------------------------------------------------ SSE

/// POST expecting an SSE answer over a dedicated HTTP/1.1 connection.
/// Sends `content-type: application/json` and `accept: text/event-stream`
/// unless `headers` set them. Panics on a transport error or timeout.
pub async fn post_stream(url: &str, body: impl Into<Bytes>, headers: &[(&str, &str)]) -> SseStream {
    try_post_stream(url, body, headers)
        .await
        .unwrap_or_else(|e| panic!("test client: stream POST {url} failed: {e}"))
}

/// Like [`post_stream`], but a transport error is returned.
pub async fn try_post_stream(
    url: &str,
    body: impl Into<Bytes>,
    headers: &[(&str, &str)],
) -> Result<SseStream, String> {
    let uri: Uri = url
        .parse()
        .unwrap_or_else(|e| panic!("test client: bad url {url}: {e}"));
    let defaults = [
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
    ];
    let headers = with_defaults(headers, &defaults);
    let what = format!("stream POST {url}");
    within(
        TIMEOUT,
        &what,
        open_stream(Method::POST, &uri, body.into(), &headers),
    )
    .await
}

/// GET expecting an SSE answer over a dedicated HTTP/1.1 connection.
pub async fn get_stream(url: &str) -> SseStream {
    let uri: Uri = url
        .parse()
        .unwrap_or_else(|e| panic!("test client: bad url {url}: {e}"));
    let headers = [("accept", "text/event-stream")];
    let what = format!("stream GET {url}");
    within(
        TIMEOUT,
        &what,
        open_stream(Method::GET, &uri, Bytes::new(), &headers),
    )
    .await
    .unwrap_or_else(|e| panic!("test client: {what} failed: {e}"))
}

async fn open_stream(
    method: Method,
    uri: &Uri,
    body: Bytes,
    headers: &[(&str, &str)],
) -> Result<SseStream, String> {
    let host = uri.host().expect("test client: url without host");
    let authority = format!("{host}:{}", uri.port_u16().unwrap_or(80));
    let tcp = TcpStream::connect(&authority)
        .await
        .map_err(|e| format!("connect {authority}: {e}"))?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| chain(&e))?;
    let connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, &authority);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(body)).map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| chain(&e))?;
    let (parts, body) = response.into_parts();
    Ok(SseStream {
        status: parts.status,
        headers: parts.headers,
        body,
        parser: SseParser::new(),
        ready: VecDeque::new(),
        finished: false,
        error: None,
        _sender: sender,
        _connection: connection,
    })
}

/// An open SSE response; dropping it closes the TCP connection.
pub struct SseStream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: Incoming,
    parser: SseParser,
    ready: VecDeque<String>,
    finished: bool,
    error: Option<String>,
    _sender: http1::SendRequest<Full<Bytes>>,
    _connection: AbortOnDrop,
}

impl SseStream {
    /// The next event's `data` (multi-line data joined with `\n`), `None` at
    /// the end of the stream (clean or not: see [`SseStream::error`]).
    /// Panics when nothing arrives within `limit`.
    pub async fn next_event(&mut self, limit: Duration) -> Option<String> {
        self.try_next_event(limit)
            .await
            .unwrap_or_else(|_| panic!("test client: no SSE event or end within {limit:?}"))
    }

    /// Like [`SseStream::next_event`], but a timeout is an `Err` (the stream
    /// stays usable), e.g. to prove that nothing arrives.
    pub async fn try_next_event(&mut self, limit: Duration) -> Result<Option<String>, Elapsed> {
        tokio::time::timeout(limit, self.read_event()).await
    }

    /// Every remaining event until the end, each within `limit`.
    pub async fn collect_events(&mut self, limit: Duration) -> Vec<String> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event(limit).await {
            events.push(event);
        }
        events
    }

    /// The body error that ended the stream, if it did not end cleanly.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The whole remaining raw body (for non-SSE answers such as a JSON
    /// error); use instead of, not after, `next_event`.
    pub async fn read_body(self) -> Bytes {
        let collect = self.body.collect();
        let body = within(TIMEOUT, "reading stream body", collect).await;
        body.unwrap_or_else(|e| panic!("test client: stream body failed: {}", chain(&e)))
            .to_bytes()
    }

    /// Cancel-safe: a timeout between frames loses nothing.
    async fn read_event(&mut self) -> Option<String> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.finished {
                return None;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.ready.extend(self.parser.push(&data));
                    }
                }
                Some(Err(e)) => {
                    self.error = Some(chain(&e));
                    self.finished = true;
                }
                None => self.finished = true,
            }
        }
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Incremental SSE parser: feed chunks, get the `data` of each completed event.
/// Lines end with `\n` or `\r\n`; an event ends at a blank line; multi-line
/// data is joined with `\n`; comments and other fields are ignored; an event
/// without data is not dispatched.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                self.line.push(byte);
            } else if let Some(event) = self.end_line() {
                events.push(event);
            }
        }
        events
    }

    fn end_line(&mut self) -> Option<String> {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(&line);
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
        if field == "data" {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
        None
    }

    fn dispatch(&mut self) -> Option<String> {
        if self.data.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.data).join("\n"))
    }
}

/// All complete events in a whole SSE body.
pub fn parse_sse(bytes: &[u8]) -> Vec<String> {
    SseParser::new().push(bytes)
}

// ------------------------------------------------------------------ raw

/// Sends hand-crafted bytes and returns everything read until EOF, a
/// connection error or `limit` (whichever comes first). Panics if it cannot
/// connect.
pub async fn raw_http(addr: SocketAddr, request: &[u8], limit: Duration) -> Vec<u8> {
    let what = format!("raw connect {addr}");
    let mut stream = within(limit, &what, TcpStream::connect(addr))
        .await
        .unwrap_or_else(|e| panic!("test client: raw connect {addr}: {e}"));
    let mut received = Vec::new();
    let exchange = async {
        let _ = stream.write_all(request).await;
        read_to_eof(&mut stream, &mut received).await;
    };
    let _ = tokio::time::timeout(limit, exchange).await;
    received
}

async fn read_to_eof(stream: &mut TcpStream, out: &mut Vec<u8>) {
    let mut chunk = [0u8; 8192];
    while let Ok(n @ 1..) = stream.read(&mut chunk).await {
        out.extend_from_slice(&chunk[..n]);
    }
}

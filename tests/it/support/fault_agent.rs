//! An upstream agent that fails in the ways the mock agent does not: answers
//! that are enormous or endless, that drip out a byte at a time, that stop
//! half-way through a declared body, a response head that drips, and calls
//! it never answers while noticing when the gateway gives up on them. It
//! serves a small card and answers JSON-RPC calls normally in
//! [`Fault::None`], so a test can switch it back and check recovery.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

type Body = BoxBody<Bytes, io::Error>;

/// How POST calls are answered (GETs always get the card).
#[derive(Clone, Debug)]
pub enum Fault {
    /// A JSON-RPC success echoing the request id: `{"ok":true}`.
    None,
    /// Never answers; the call is counted as abandoned once the gateway
    /// drops it (see [`FaultAgent::abandoned`]).
    Hang,
    /// `chunk` repeated as fast as the peer reads: `total` bytes in all
    /// (the last chunk cut to fit) or, with `None`, forever. With `sized`
    /// (and a total) the length is declared in `content-length`.
    Flood {
        content_type: &'static str,
        chunk: Bytes,
        total: Option<u64>,
        sized: bool,
    },
    /// `body`, one byte every `every_ms`.
    Drip {
        content_type: &'static str,
        body: Bytes,
        every_ms: u64,
    },
    /// Declares `content-length: body.len()`, sends the first `sent` bytes,
    /// then (200 ms later) aborts the connection.
    CloseMidBody {
        content_type: &'static str,
        body: Bytes,
        sent: usize,
    },
    /// New connections: read the request, then write a complete, valid
    /// response one byte every `every_ms`, head first.
    SlowHead { every_ms: u64 },
}

pub struct FaultAgent {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

struct State {
    fault: Mutex<Fault>,
    /// POST calls received.
    calls: AtomicUsize,
    /// Hanging calls the peer gave up on.
    abandoned: AtomicUsize,
    /// Body bytes written by Flood and Drip (to the body channel).
    sent: AtomicU64,
    /// A streamed body (Flood, Drip, SlowHead) lost its reader.
    body_dropped: watch::Sender<bool>,
}

impl Fault {
    /// An SSE answer that sends one working status update (id `"s"`), then
    /// `tail` (say, half of a next event), then aborts the connection.
    pub fn stream_dying_after_one_event(tail: &str) -> Fault {
        let first = r#"data: {"jsonrpc":"2.0","id":"s","result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}}"#;
        let sent = format!("{first}\n\n{tail}");
        Fault::CloseMidBody {
            content_type: "text/event-stream",
            body: Bytes::from(format!("{sent}{}", " ".repeat(100))),
            sent: sent.len(),
        }
    }
}

impl FaultAgent {
    pub async fn start(fault: Fault) -> FaultAgent {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fault agent: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fault agent: local addr");
        let state = Arc::new(State {
            fault: Mutex::new(fault),
            calls: AtomicUsize::new(0),
            abandoned: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
            body_dropped: watch::channel(false).0,
        });
        let task = tokio::spawn(accept_loop(listener, state.clone()));
        FaultAgent { addr, state, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_fault(&self, fault: Fault) {
        *self
            .state
            .fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = fault;
    }

    pub fn calls(&self) -> usize {
        self.state.calls.load(Ordering::SeqCst)
    }

    pub fn abandoned(&self) -> usize {
        self.state.abandoned.load(Ordering::SeqCst)
    }

    /// Body bytes handed to the connection so far (Flood, Drip).
    pub fn bytes_sent(&self) -> u64 {
        self.state.sent.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` calls arrived; false on timeout.
    pub async fn wait_calls(&self, n: usize, limit: Duration) -> bool {
        wait_until(limit, || self.calls() >= n).await
    }

    /// Waits until at least `n` hanging calls were given up; false on timeout.
    pub async fn wait_abandoned(&self, n: usize, limit: Duration) -> bool {
        wait_until(limit, || self.abandoned() >= n).await
    }

    /// Waits until a streamed body lost its reader; false on timeout.
    pub async fn wait_body_dropped(&self, limit: Duration) -> bool {
        let mut rx = self.state.body_dropped.subscribe();
        let dropped = tokio::time::timeout(limit, rx.wait_for(|d| *d)).await;
        matches!(dropped, Ok(Ok(_)))
    }
}

impl Drop for FaultAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn wait_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let poll = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(limit, poll).await.is_ok()
}

impl State {
    fn fault(&self) -> Fault {
        self.fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        while connections.try_join_next().is_some() {}
        connections.spawn(handle_connection(stream, state.clone()));
    }
}

async fn handle_connection(stream: TcpStream, state: Arc<State>) {
    if let Fault::SlowHead { every_ms } = state.fault() {
        return slow_head(stream, &state, every_ms).await;
    }
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req| handle(req, state.clone()));
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Reads one request head (and its declared body), then drips a response.
async fn slow_head(mut stream: TcpStream, state: &State, every_ms: u64) {
    let Some((head, _)) = read_request(&mut stream, &mut Vec::new()).await else {
        return;
    };
    let head = head.to_ascii_lowercase();
    if head.starts_with("post") {
        state.calls.fetch_add(1, Ordering::SeqCst);
    }
    let body = br#"{"jsonrpc":"2.0","id":null,"result":{"ok":true}}"#;
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    for byte in response.as_bytes().iter().chain(body) {
        if stream.write_all(&[*byte]).await.is_err() {
            state.body_dropped.send_replace(true);
            return;
        }
        tokio::time::sleep(Duration::from_millis(every_ms)).await;
    }
}

/// Counts a hanging call as abandoned when its future is dropped.
struct Abandon(Arc<State>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.abandoned.fetch_add(1, Ordering::SeqCst);
    }
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if method != Method::POST {
        return Ok(full(StatusCode::OK, "application/json", card().to_string()));
    }
    state.calls.fetch_add(1, Ordering::SeqCst);
    Ok(match state.fault() {
        Fault::None | Fault::SlowHead { .. } => {
            let id = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}});
            full(StatusCode::OK, "application/json", answer.to_string())
        }
        Fault::Hang => {
            let _guard = Abandon(state.clone());
            std::future::pending::<()>().await;
            unreachable!()
        }
        Fault::Flood {
            content_type,
            chunk,
            total,
            sized,
        } => {
            let (tx, rx) = mpsc::channel(1);
            tokio::spawn(flood(tx, chunk, total, state.clone()));
            let mut response = streamed(content_type, rx);
            if let (true, Some(total)) = (sized, total) {
                response
                    .headers_mut()
                    .insert(CONTENT_LENGTH, HeaderValue::from(total));
            }
            response
        }
        Fault::Drip {
            content_type,
            body,
            every_ms,
        } => {
            let (tx, rx) = mpsc::channel(1);
            tokio::spawn(drip(tx, body, every_ms, state.clone()));
            streamed(content_type, rx)
        }
        Fault::CloseMidBody {
            content_type,
            body,
            sent,
        } => {
            let (tx, rx) = mpsc::channel(2);
            let length = body.len();
            let _ = tx.try_send(Ok(body.slice(..sent.min(length))));
            // Long enough for the head and the first bytes to be on their
            // way: this fault is about a body, not a missing answer.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let _ = tx
                    .send(Err(io::Error::other("fault agent: closed mid-body")))
                    .await;
            });
            let mut response = streamed(content_type, rx);
            response
                .headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(length));
            response
        }
    })
}

async fn flood(
    tx: mpsc::Sender<io::Result<Bytes>>,
    chunk: Bytes,
    total: Option<u64>,
    state: Arc<State>,
) {
    let mut left = total.unwrap_or(u64::MAX);
    while left > 0 && !chunk.is_empty() {
        let n = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if tx.send(Ok(chunk.slice(..n))).await.is_err() {
            state.body_dropped.send_replace(true);
            return;
        }
        state.sent.fetch_add(n as u64, Ordering::SeqCst);
        left -= n as u64;
    }
}

async fn drip(tx: mpsc::Sender<io::Result<Bytes>>, body: Bytes, every_ms: u64, state: Arc<State>) {
    for i in 0..body.len() {
        if i > 0 {
            tokio::select! {
                _ = tx.closed() => {
                    state.body_dropped.send_replace(true);
                    return;
                }
                _ = tokio::time::sleep(Duration::from_millis(every_ms)) => {}
            }
        }
        if tx.send(Ok(body.slice(i..i + 1))).await.is_err() {
            state.body_dropped.send_replace(true);
            return;
        }
        state.sent.fetch_add(1, Ordering::SeqCst);
    }
}

fn card() -> Value {
    json!({
        "name": "Fault Agent", "description": "Fails on purpose", "version": "1.0.0",
        "protocolVersion": "0.3.0", "url": "http://127.0.0.1/", "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": true, "pushNotifications": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "faults", "name": "Faults", "description": "Fails", "tags": ["faults"]}]
    })
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(
        Full::new(body.into())
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, v);
    }
    response
}

fn streamed(content_type: &str, rx: mpsc::Receiver<io::Result<Bytes>>) -> Response<Body> {
    let mut response = Response::new(ChannelBody { rx }.boxed());
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, v);
    }
    response
}

/// A body fed by a channel; an `Err` item aborts the connection.
struct ChannelBody {
    rx: mpsc::Receiver<io::Result<Bytes>>,
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}

/// One HTTP/1.1 request read off a raw connection: the head (as text) and
/// its `content-length` body; bytes past it stay in `buf` for the next.
/// `None` when the peer closed first.
pub async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some((head, body))
}

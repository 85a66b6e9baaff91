//! A scriptable mock A2A upstream agent.
//!
//! It speaks JSON-RPC for the 0.1, 0.3 and 1.0 method names over HTTP/1.1 and
//! HTTP/2 (prior knowledge), serves an agent card, records every request and
//! can misbehave on demand (delays, hangs, resets, garbage, closed sockets).
//! The mode is read per connection (Garbage, CloseImmediately) and per request
//! (everything else), so a keep-alive connection opened in a hyper mode keeps
//! speaking HTTP after a switch to Garbage or CloseImmediately.
//!
//! [`MockAgent::start_tls`] serves the same over TLS (`https://`), with the
//! rustls configuration the test gives it (ALPN, client certificates).

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

/// Paths the agent card is served at (0.3/1.0 and 0.1/0.2).
pub const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// Raw bytes written by [`Mode::Garbage`].
pub const GARBAGE: &[u8] = b"SSH-2.0-nonsense\r\n\r\n";

/// Number of SSE events a streaming method sends outside [`Mode::Stream`].
pub const DEFAULT_EVENTS: usize = 3;

type Body = BoxBody<Bytes, io::Error>;
type Chunk = Result<Bytes, io::Error>;

/// How the mock answers; change it at runtime with [`MockAgent::set_mode`].
#[derive(Clone, Debug)]
pub enum Mode {
    /// Correct JSON-RPC answers in the shape of the method's protocol version.
    Normal,
    /// Normal, but streaming methods send `events` events `interval_ms` apart;
    /// with `gate_last` the last one waits for [`MockAgent::release_stream`].
    Stream {
        events: usize,
        interval_ms: u64,
        gate_last: bool,
    },
    /// Every POST answered with exactly these bytes (GET still serves the card).
    Fixed {
        status: u16,
        content_type: String,
        body: Bytes,
    },
    /// Normal, but waits `ms` before sending response headers.
    Delay { ms: u64 },
    /// Records the request and never answers; the connection stays open.
    Hang,
    /// Streaming methods send `events_before` events then abort the connection.
    ResetMidStream { events_before: usize },
    /// New connections: read the request, write [`GARBAGE`], close.
    Garbage,
    /// New connections: accept and drop without reading.
    CloseImmediately,
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub http_version: Version,
}

impl Recorded {
    /// The body parsed as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("recorded body is not JSON ({e}): {:?}", self.body))
    }

    /// A GET of a card path (the gateway fetching the card).
    pub fn is_card_fetch(&self) -> bool {
        self.method == Method::GET && CARD_PATHS.contains(&self.path_and_query.as_str())
    }

    /// A header value as text, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A running mock agent; dropping it (or [`MockAgent::stop`]) stops accepting
/// and closes every connection it had open.
pub struct MockAgent {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
    tls: bool,
}

impl MockAgent {
    /// Binds 127.0.0.1:0 and serves in a background task.
    pub async fn start(mode: Mode) -> MockAgent {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("mock agent: bind 127.0.0.1:0");
        MockAgent::serve(listener, mode)
    }

    /// Binds this exact address (e.g. one a gateway was configured with
    /// while nothing listened there: "down at start, then up", or the
    /// address of an agent that was shut down: "back again"). Retries for
    /// up to 3 s while the port is still in use.
    pub async fn start_on(addr: SocketAddr, mode: Mode) -> MockAgent {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        let listener = loop {
            match TcpListener::bind(addr).await {
                Ok(listener) => break listener,
                Err(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("mock agent: bind {addr}: {e}"),
            }
        };
        MockAgent::serve(listener, mode)
    }

    /// Binds 127.0.0.1:0 and serves over TLS with this configuration
    /// (its certificate, ALPN protocols and client-certificate policy).
    pub async fn start_tls(mode: Mode, config: Arc<rustls::ServerConfig>) -> MockAgent {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("mock agent: bind 127.0.0.1:0");
        MockAgent::serve_with(listener, mode, Some(TlsAcceptor::from(config)))
    }

    fn serve(listener: TcpListener, mode: Mode) -> MockAgent {
        MockAgent::serve_with(listener, mode, None)
    }

    fn serve_with(listener: TcpListener, mode: Mode, tls: Option<TlsAcceptor>) -> MockAgent {
        let addr = listener.local_addr().expect("mock agent: local addr");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let card = default_card(&format!("{scheme}://{addr}"));
        let state = Arc::new(State::new(mode, card));
        let is_tls = tls.is_some();
        let task = tokio::spawn(accept_loop(listener, state.clone(), tls));
        MockAgent {
            addr,
            state,
            task,
            tls: is_tls,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (no trailing slash); `https://` over TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Caps the streams each new h2 connection may carry at once.
    pub fn set_h2_max_streams(&self, n: u32) {
        self.state
            .h2_max_streams
            .store(n as usize, Ordering::SeqCst);
    }

    /// TLS handshakes completed, and how many of them the client made
    /// with a certificate.
    pub fn handshakes(&self) -> (usize, usize) {
        (
            self.state.handshakes.load(Ordering::SeqCst),
            self.state.client_certs.load(Ordering::SeqCst),
        )
    }

    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.state.mode) = mode;
    }

    pub fn mode(&self) -> Mode {
        self.state.mode()
    }

    /// The card served at both well-known paths; `None` makes them 404.
    /// Serves only the HTTP+JSON 1.0 binding, under `prefix` (`/rest`),
    /// and a card that says so; JSON-RPC calls get 404 (as a REST-only
    /// SDK agent answers them). Calls without `A2A-Version: 1.0` are
    /// refused, as the SDK's are.
    pub fn set_rest(&self, prefix: &str) {
        let url = format!("{}{}", self.url().trim_end_matches('/'), prefix);
        let mut card = default_card(&url);
        card["supportedInterfaces"] =
            json!([{"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]);
        if let Some(card) = card.as_object_mut() {
            card.remove("url");
            card.remove("additionalInterfaces");
            card.remove("preferredTransport");
            card.remove("protocolVersion");
        }
        *lock(&self.state.rest) = Some(prefix.to_string());
        self.set_card(Some(card));
    }

    pub fn set_card(&self, card: Option<Value>) {
        *lock(&self.state.card) = card;
    }

    pub fn card(&self) -> Option<Value> {
        self.state.card()
    }

    /// Generated task and context ids become `{prefix}task-N` and
    /// `{prefix}ctx-N` (default: no prefix), so several mocks in one test
    /// never hand out the same id.
    pub fn set_id_prefix(&self, prefix: &str) {
        *lock(&self.state.prefix) = prefix.to_string();
    }

    /// When on, the mock only knows the tasks it created (or a 0.1 client
    /// named in `tasks/send`): a call about any other task id (`tasks/get`,
    /// `GetTask`, cancel, resubscribe, push config, or a message whose
    /// `taskId` names it) is answered with JSON-RPC -32001 TaskNotFound, and
    /// a message continuing one of its own tasks keeps that task's id. Off by
    /// default (every id is answered as if it existed).
    pub fn set_owned_tasks_only(&self, on: bool) {
        self.state.owned_only.store(on, Ordering::SeqCst);
    }

    /// The task ids this mock created (or accepted from a 0.1 client).
    pub fn owned_tasks(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.state.owned).iter().cloned().collect();
        ids.sort();
        ids
    }

    /// Every call (a JSON-RPC POST, or any REST request) received so far,
    /// in arrival order. The gateway's own card fetches are left out:
    /// tests ask what clients' calls reached the agent.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| !r.is_card_fetch())
            .cloned()
            .collect()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.state.requests)
            .iter()
            .filter(|r| !r.is_card_fetch())
            .count()
    }

    /// Every request of any HTTP method, card fetches included.
    pub fn all_requests(&self) -> Vec<Recorded> {
        lock(&self.state.requests).clone()
    }

    /// Card fetches (GET) received so far.
    pub fn card_fetches(&self) -> usize {
        lock(&self.state.requests)
            .iter()
            .filter(|r| r.is_card_fetch())
            .count()
    }

    /// Waits until at least `n` requests were recorded; false on timeout.
    pub async fn wait_requests(&self, n: usize, limit: Duration) -> bool {
        let poll = async {
            while self.request_count() < n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(limit, poll).await.is_ok()
    }

    /// TCP connections accepted so far.
    pub fn connection_count(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// True once an SSE body the mock was sending was dropped by the peer.
    pub fn stream_closed_by_peer(&self) -> bool {
        *self.state.stream_closed.borrow()
    }

    /// Waits for [`MockAgent::stream_closed_by_peer`]; false on timeout.
    pub async fn wait_stream_closed(&self, limit: Duration) -> bool {
        let mut rx = self.state.stream_closed.subscribe();
        let closed = tokio::time::timeout(limit, rx.wait_for(|closed| *closed)).await;
        matches!(closed, Ok(Ok(_)))
    }

    /// Lets one gated stream send its last event (works if called early too).
    pub fn release_stream(&self) {
        self.state.gate.add_permits(1);
    }

    /// Stops accepting and closes open connections (asynchronously).
    pub fn stop(&self) {
        self.task.abort();
    }

    /// Like [`MockAgent::stop`], but returns once the listener is closed.
    pub async fn shutdown(mut self) {
        self.task.abort();
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.task).await;
    }
}

impl Drop for MockAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The default card: 0.3 fields plus 1.0 `supportedInterfaces`, offering
/// JSON-RPC in 1.0, 0.3 and 0.1 (the mock answers all three: calls of
/// every version pass through untranslated). No HTTP+JSON and no gRPC:
/// the gateway would use them, and only `set_rest` serves HTTP+JSON
/// (`super::mock_grpc` is the gRPC agent).
pub fn default_card(url: &str) -> Value {
    json!({
        "name": "Mock Agent",
        "description": "A mock A2A agent for gateway tests",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "url": format!("{url}/"),
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": format!("{url}/"), "transport": "JSONRPC"}
        ],
        "supportedInterfaces": [
            {"url": format!("{url}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{url}/"), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": format!("{url}/"), "protocolBinding": "JSONRPC", "protocolVersion": "0.1"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": "echo", "name": "Echo", "description": "Echoes text back", "tags": ["echo", "test"]}
        ]
    })
}

// ---------------------------------------------------------------- state

struct State {
    mode: Mutex<Mode>,
    card: Mutex<Option<Value>>,
    requests: Mutex<Vec<Recorded>>,
    connections: AtomicUsize,
    counter: AtomicU64,
    stream_closed: watch::Sender<bool>,
    gate: Semaphore,
    /// Prefix of generated task and context ids.
    prefix: Mutex<String>,
    /// Answer -32001 for task ids this mock did not create.
    owned_only: AtomicBool,
    /// Task ids this mock created.
    owned: Mutex<HashSet<String>>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS of new h2 connections (0: hyper's).
    h2_max_streams: AtomicUsize,
    /// TLS handshakes completed, and those with a client certificate.
    handshakes: AtomicUsize,
    client_certs: AtomicUsize,
    /// Serves the HTTP+JSON binding under this path instead of JSON-RPC.
    rest: Mutex<Option<String>>,
}

impl State {
    fn new(mode: Mode, card: Value) -> State {
        State {
            mode: Mutex::new(mode),
            card: Mutex::new(Some(card)),
            requests: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
            counter: AtomicU64::new(0),
            stream_closed: watch::channel(false).0,
            gate: Semaphore::new(0),
            prefix: Mutex::new(String::new()),
            owned_only: AtomicBool::new(false),
            owned: Mutex::new(HashSet::new()),
            h2_max_streams: AtomicUsize::new(0),
            handshakes: AtomicUsize::new(0),
            client_certs: AtomicUsize::new(0),
            rest: Mutex::new(None),
        }
    }

    fn mode(&self) -> Mode {
        lock(&self.mode).clone()
    }

    fn card(&self) -> Option<Value> {
        lock(&self.card).clone()
    }

    fn record(&self, request: Recorded) {
        lock(&self.requests).push(request);
    }

    /// 1, 2, 3… used for generated task and context ids.
    fn next_n(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn mark_stream_closed(&self) {
        self.stream_closed.send_replace(true);
    }

    fn task_id(&self, n: u64) -> String {
        format!("{}task-{n}", lock(&self.prefix))
    }

    fn ctx_id(&self, n: u64) -> String {
        format!("{}ctx-{n}", lock(&self.prefix))
    }

    fn owns(&self, task: &str) -> bool {
        lock(&self.owned).contains(task)
    }

    fn own(&self, task: &str) {
        lock(&self.owned).insert(task.to_string());
    }

    /// The id of the task a send creates: with owned-tasks-only, a message
    /// continuing one of this mock's tasks keeps its id; otherwise a new one.
    fn send_task_id(&self, params: &Value, n: u64) -> String {
        let given = params["message"]["taskId"].as_str();
        let id = match given {
            Some(t) if self.owned_only.load(Ordering::SeqCst) && self.owns(t) => t.to_string(),
            _ => self.task_id(n),
        };
        self.own(&id);
        id
    }

    /// With owned-tasks-only: the task id `call` is about when this mock
    /// does not know it.
    fn foreign_task(&self, call: &RpcCall) -> Option<String> {
        if !self.owned_only.load(Ordering::SeqCst) {
            return None;
        }
        let p = &call.params;
        let id = match call.method.as_str() {
            "tasks/send" | "tasks/sendSubscribe" => return None,
            "message/send" | "message/stream" | "SendMessage" | "SendStreamingMessage" => {
                p["message"]["taskId"].as_str()
            }
            "tasks/pushNotificationConfig/set" => p["taskId"].as_str(),
            m if is_push_config(m) && m.contains('/') => p["id"].as_str(),
            m if is_push_config(m) => p["taskId"].as_str(),
            _ => p["id"].as_str(),
        }?;
        (!self.owns(id)).then(|| id.to_string())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------- connections

/// Connections live in a JoinSet owned by this task, so aborting it closes them.
async fn accept_loop(listener: TcpListener, state: Arc<State>, tls: Option<TlsAcceptor>) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        state.connections.fetch_add(1, Ordering::SeqCst);
        match &tls {
            Some(acceptor) => connections.spawn(serve_tls(stream, acceptor.clone(), state.clone())),
            None => connections.spawn(handle_connection(stream, state.clone())),
        };
    }
}

async fn handle_connection(stream: TcpStream, state: Arc<State>) {
    match state.mode() {
        Mode::CloseImmediately => drop(stream),
        Mode::Garbage => answer_garbage(stream, &state).await,
        _ => {
            let _ = stream.set_nodelay(true);
            serve_http(stream, state).await
        }
    }
}

/// The handshake (bounded), then HTTP/1.1 or h2 as ALPN chose.
async fn serve_tls(stream: TcpStream, acceptor: TlsAcceptor, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let handshake = tokio::time::timeout(Duration::from_secs(5), acceptor.accept(stream));
    let Ok(Ok(stream)) = handshake.await else {
        return;
    };
    state.handshakes.fetch_add(1, Ordering::SeqCst);
    if stream
        .get_ref()
        .1
        .peer_certificates()
        .is_some_and(|c| !c.is_empty())
    {
        state.client_certs.fetch_add(1, Ordering::SeqCst);
    }
    serve_http(stream, state).await
}

async fn serve_http<S>(stream: S, state: Arc<State>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let max_streams = state.h2_max_streams.load(Ordering::SeqCst);
    let service = service_fn(move |req| handle_request(req, state.clone()));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if max_streams > 0 {
        builder.http2().max_concurrent_streams(max_streams as u32);
    }
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn answer_garbage(mut stream: TcpStream, state: &State) {
    let mut raw = Vec::new();
    let read = read_raw_request(&mut stream, &mut raw);
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    if let Some(request) = parse_raw_request(&raw) {
        state.record(request);
    }
    let _ = stream.write_all(GARBAGE).await;
    let _ = stream.shutdown().await;
}

/// Reads until the head and a `content-length` body are in, or EOF.
async fn read_raw_request(stream: &mut TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 4096];
    while !raw_request_complete(buf) {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn raw_request_complete(buf: &[u8]) -> bool {
    parse_raw_request(buf).is_some_and(|r| {
        let length = r
            .header(CONTENT_LENGTH.as_str())
            .and_then(|v| v.parse().ok());
        r.body.len() >= length.unwrap_or(0)
    })
}

/// Best-effort HTTP/1 parse for requests that never reach hyper.
fn parse_raw_request(buf: &[u8]) -> Option<Recorded> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = Method::from_bytes(request_line.next()?.as_bytes()).ok()?;
    let path_and_query = request_line.next()?.to_string();
    let http_version = match request_line.next()? {
        "HTTP/1.0" => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    Some(Recorded {
        method,
        path_and_query,
        headers: lines.filter_map(parse_header_line).collect(),
        body: Bytes::copy_from_slice(&buf[end + 4..]),
        http_version,
    })
}

fn parse_header_line(line: &str) -> Option<(HeaderName, HeaderValue)> {
    let (name, value) = line.split_once(':')?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
    Some((name, HeaderValue::from_str(value.trim()).ok()?))
}

// ------------------------------------------------------------- requests

async fn handle_request(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    state.record(Recorded {
        method: parts.method.clone(),
        path_and_query: parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        headers: parts.headers.clone(),
        body: body.clone(),
        http_version: parts.version,
    });
    let rest = lock(&state.rest).clone();
    if let Some(under) = rest.and_then(|p| {
        parts
            .uri
            .path()
            .strip_prefix(p.as_str())
            .map(str::to_string)
    }) {
        return Ok(rest_response(&parts, &under, &body, &state).await);
    }
    Ok(respond(&parts.method, parts.uri.path(), &body, &state).await)
}

/// What a REST call gets (`MockAgent::set_rest`): the JSON-RPC call it is
/// answered as the mock answers that, in the REST shape.
async fn rest_response(
    parts: &http::request::Parts,
    under: &str,
    body: &[u8],
    state: &Arc<State>,
) -> Response<Body> {
    use super::mock_rest::{call_of, status_of};
    let mode = state.mode();
    wait_as(&mode).await;
    let refuse = |(status, body): (StatusCode, String)| {
        bytes_response(status, "application/json", body.into())
    };
    if parts.headers.get("a2a-version").map(|v| v.as_bytes()) != Some(b"1.0") {
        return refuse(status_of(-32009, "A2A-Version 1.0 is required"));
    }
    let plan = match stream_plan(mode) {
        Ok(plan) => plan,
        Err(fixed) => return *fixed,
    };
    let (method, params) = match call_of(&parts.method, under, parts.uri.query(), body) {
        Ok(call) => call,
        Err((status, message)) => return bytes_response(status, "text/plain", message.into()),
    };
    let call = RpcCall {
        id: "1".into(),
        method,
        params,
    };
    if state.foreign_task(&call).is_some() {
        return refuse(status_of(-32001, "Task not found"));
    }
    if let Some(spec) = stream_spec(&call, state) {
        let frames = (0..plan.events)
            .map(|i| Bytes::from(format!("data: {}\n\n", stream_event(&spec, i, plan.events))))
            .collect();
        return sse_response(frames, plan, state.clone());
    }
    match unary_result(&call, state) {
        Ok(result) => json_response(result.to_string()),
        Err((code, message)) => refuse(status_of(code, message)),
    }
}

async fn wait_as(mode: &Mode) {
    match mode {
        Mode::Hang => std::future::pending().await,
        Mode::Delay { ms } => tokio::time::sleep(Duration::from_millis(*ms)).await,
        _ => {}
    }
}

async fn respond(method: &Method, path: &str, body: &[u8], state: &Arc<State>) -> Response<Body> {
    let mode = state.mode();
    wait_as(&mode).await;
    match *method {
        Method::GET => get_response(path, state),
        Method::POST => post_response(mode, body, state),
        _ => bytes_response(StatusCode::METHOD_NOT_ALLOWED, "", Bytes::new()),
    }
}

fn get_response(path: &str, state: &State) -> Response<Body> {
    match state.card() {
        Some(card) if CARD_PATHS.contains(&path) => json_response(card.to_string()),
        _ => bytes_response(StatusCode::NOT_FOUND, "", Bytes::new()),
    }
}

fn post_response(mode: Mode, body: &[u8], state: &Arc<State>) -> Response<Body> {
    match stream_plan(mode) {
        Ok(plan) => handle_rpc(body, state, plan),
        Err(fixed) => *fixed,
    }
}

/// How the mode streams; `Err`: the fixed answer of `Mode::Fixed`.
fn stream_plan(mode: Mode) -> Result<StreamPlan, Box<Response<Body>>> {
    let plan = match mode {
        Mode::Fixed {
            status,
            content_type,
            body,
        } => {
            let status = StatusCode::from_u16(status).expect("Mode::Fixed: valid status");
            return Err(Box::new(bytes_response(status, &content_type, body)));
        }
        Mode::Stream {
            events,
            interval_ms,
            gate_last,
        } => StreamPlan {
            events,
            interval: Duration::from_millis(interval_ms),
            gate_last,
            reset_after: None,
        },
        Mode::ResetMidStream { events_before } => StreamPlan {
            events: (events_before + 1).max(DEFAULT_EVENTS),
            reset_after: Some(events_before),
            ..StreamPlan::default()
        },
        _ => StreamPlan::default(),
    };
    Ok(plan)
}

fn handle_rpc(body: &[u8], state: &Arc<State>, plan: StreamPlan) -> Response<Body> {
    let call = match parse_call(body) {
        Ok(call) => call,
        Err(error) => return json_response(error),
    };
    if state.foreign_task(&call).is_some() {
        return json_response(rpc_error(&call.id, -32001, "Task not found"));
    }
    if let Some(spec) = stream_spec(&call, state) {
        let frames = (0..plan.events)
            .map(|i| sse_frame(&call.id, &stream_event(&spec, i, plan.events)))
            .collect();
        return sse_response(frames, plan, state.clone());
    }
    json_response(match unary_result(&call, state) {
        Ok(result) => rpc_result(&call.id, &result),
        Err((code, message)) => rpc_error(&call.id, code, message),
    })
}

// ------------------------------------------------------------- JSON-RPC

struct RpcCall {
    /// The request `id` exactly as raw JSON (`null` when absent).
    id: String,
    method: String,
    params: Value,
}

/// Parses a JSON-RPC request; the error is a complete error response.
fn parse_call(body: &[u8]) -> Result<RpcCall, String> {
    if serde_json::from_slice::<Value>(body).is_err() {
        return Err(rpc_error("null", -32700, "Parse error"));
    }
    let Ok(members) = serde_json::from_slice::<HashMap<String, Box<RawValue>>>(body) else {
        return Err(rpc_error("null", -32600, "Invalid Request"));
    };
    let id = members.get("id").map_or("null", |id| id.get()).to_string();
    let method = members
        .get("method")
        .and_then(|m| serde_json::from_str(m.get()).ok());
    let Some(method) = method else {
        return Err(rpc_error(&id, -32600, "Invalid Request"));
    };
    let params = members
        .get("params")
        .and_then(|p| serde_json::from_str(p.get()).ok());
    Ok(RpcCall {
        id,
        method,
        params: params.unwrap_or(Value::Null),
    })
}

fn rpc_result(id: &str, result: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

fn rpc_error(id: &str, code: i64, message: &str) -> String {
    let error = json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

fn unary_result(call: &RpcCall, state: &State) -> Result<Value, (i64, &'static str)> {
    let params = &call.params;
    let result = match call.method.as_str() {
        "tasks/send" => {
            if let Some(id) = params["id"].as_str() {
                state.own(id);
            }
            v01_task(params)
        }
        "message/send" => {
            let n = state.next_n();
            let task = state.send_task_id(params, n);
            v03_send(params, &task, &context_id(params, &state.ctx_id(n)))
        }
        "SendMessage" => {
            let n = state.next_n();
            let context = context_id(params, &state.ctx_id(n));
            v10_send(params, &state.send_task_id(params, n), &context)
        }
        "tasks/get" => v03_task(&params["id"], "completed"),
        "tasks/cancel" => v03_task(&params["id"], "canceled"),
        "GetTask" => v10_task(&params["id"], "TASK_STATE_COMPLETED"),
        "CancelTask" => v10_task(&params["id"], "TASK_STATE_CANCELED"),
        "ListTasks" => json!({"tasks": []}),
        "agent/getAuthenticatedExtendedCard" | "GetExtendedAgentCard" => state
            .card()
            .ok_or((-32007, "Authenticated extended card not configured"))?,
        method if is_push_config(method) => params.clone(),
        _ => return Err((-32601, "Method not found")),
    };
    Ok(result)
}

fn is_push_config(method: &str) -> bool {
    method.starts_with("tasks/pushNotification")
        || method.ends_with("PushNotificationConfig")
        || method.ends_with("PushNotificationConfigs")
}

/// `echo: <first text part of params.message>`.
fn echo(params: &Value) -> String {
    let parts = params["message"]["parts"].as_array().into_iter().flatten();
    let text = parts.filter_map(|p| p["text"].as_str()).next();
    format!("echo: {}", text.unwrap_or_default())
}

/// The message's `contextId`, else `generated`.
fn context_id(params: &Value, generated: &str) -> String {
    let given = params["message"]["contextId"].as_str();
    given.map_or_else(|| generated.to_string(), str::to_string)
}

fn v01_task(params: &Value) -> Value {
    json!({
        "id": params["id"],
        "sessionId": params["sessionId"],
        "status": {"state": "completed"},
        "artifacts": [{"parts": [{"type": "text", "text": echo(params)}]}]
    })
}

fn v03_send(params: &Value, task: &str, context: &str) -> Value {
    json!({
        "kind": "task",
        "id": task,
        "contextId": context,
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": echo(params)}]}]
    })
}

fn v10_send(params: &Value, task: &str, context: &str) -> Value {
    json!({"task": {
        "id": task,
        "contextId": context,
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "parts": [{"text": echo(params)}]}]
    }})
}

fn v03_task(id: &Value, task_state: &str) -> Value {
    json!({"kind": "task", "id": id, "contextId": "ctx-0", "status": {"state": task_state}})
}

fn v10_task(id: &Value, task_state: &str) -> Value {
    json!({"id": id, "contextId": "ctx-0", "status": {"state": task_state}})
}

// ------------------------------------------------------------ streaming

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    V01,
    V03,
    V10,
}

struct StreamSpec {
    shape: Shape,
    task_id: Value,
    context_id: String,
    text: String,
}

/// `Some` for streaming methods: what the events talk about.
fn stream_spec(call: &RpcCall, state: &State) -> Option<StreamSpec> {
    let (shape, new_task) = match call.method.as_str() {
        "tasks/sendSubscribe" => (Shape::V01, false),
        "message/stream" => (Shape::V03, true),
        "tasks/resubscribe" => (Shape::V03, false),
        "SendStreamingMessage" => (Shape::V10, true),
        "SubscribeToTask" => (Shape::V10, false),
        _ => return None,
    };
    let n = state.next_n();
    let params = &call.params;
    if let (Shape::V01, Some(id)) = (shape, params["id"].as_str()) {
        state.own(id);
    }
    Some(StreamSpec {
        shape,
        task_id: if new_task {
            json!(state.send_task_id(params, n))
        } else {
            params["id"].clone()
        },
        context_id: context_id(params, &state.ctx_id(n)),
        text: echo(params),
    })
}

/// Event `i` of `count`: working status, artifact updates, final completed status.
fn stream_event(spec: &StreamSpec, i: usize, count: usize) -> Value {
    if i + 1 == count {
        status_event(spec, true)
    } else if i == 0 {
        status_event(spec, false)
    } else {
        artifact_event(spec, i > 1, i + 2 == count)
    }
}

fn status_event(spec: &StreamSpec, done: bool) -> Value {
    let (task_id, context_id) = (&spec.task_id, &spec.context_id);
    let state = if done { "completed" } else { "working" };
    match spec.shape {
        Shape::V01 => json!({"id": task_id, "status": {"state": state}, "final": done}),
        Shape::V03 => json!({"kind": "status-update", "taskId": task_id,
            "contextId": context_id, "status": {"state": state}, "final": done}),
        Shape::V10 => {
            let state = if done {
                "TASK_STATE_COMPLETED"
            } else {
                "TASK_STATE_WORKING"
            };
            json!({"statusUpdate": {"taskId": task_id, "contextId": context_id,
                "status": {"state": state}}})
        }
    }
}

fn artifact_event(spec: &StreamSpec, append: bool, last_chunk: bool) -> Value {
    let (task_id, context_id, text) = (&spec.task_id, &spec.context_id, &spec.text);
    match spec.shape {
        Shape::V01 => json!({"id": task_id, "artifact": {
            "parts": [{"type": "text", "text": text}], "index": 0,
            "append": append, "lastChunk": last_chunk}}),
        Shape::V03 => json!({"kind": "artifact-update", "taskId": task_id,
            "contextId": context_id,
            "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": text}]},
            "append": append, "lastChunk": last_chunk}),
        Shape::V10 => json!({"artifactUpdate": {"taskId": task_id, "contextId": context_id,
            "artifact": {"artifactId": "a1", "parts": [{"text": text}]},
            "append": append, "lastChunk": last_chunk}}),
    }
}

fn sse_frame(id: &str, result: &Value) -> Bytes {
    Bytes::from(format!("data: {}\n\n", rpc_result(id, result)))
}

struct StreamPlan {
    events: usize,
    interval: Duration,
    gate_last: bool,
    /// Abort the body (with an error) instead of sending this event.
    reset_after: Option<usize>,
}

impl Default for StreamPlan {
    fn default() -> Self {
        StreamPlan {
            events: DEFAULT_EVENTS,
            interval: Duration::ZERO,
            gate_last: false,
            reset_after: None,
        }
    }
}

fn sse_response(frames: Vec<Bytes>, plan: StreamPlan, state: Arc<State>) -> Response<Body> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(produce_events(frames, plan, tx, state));
    let mut response = Response::new(ChannelBody { rx }.boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Feeds the SSE body; notices a peer that went away even while waiting.
async fn produce_events(
    frames: Vec<Bytes>,
    plan: StreamPlan,
    tx: mpsc::Sender<Chunk>,
    state: Arc<State>,
) {
    let last = frames.len().saturating_sub(1);
    for (i, frame) in frames.into_iter().enumerate() {
        if plan.reset_after == Some(i) {
            let _ = tx
                .send(Err(io::Error::other("mock agent: reset mid-stream")))
                .await;
            return;
        }
        let pause = i > 0 && !plan.interval.is_zero();
        if pause && !unless_closed(&tx, tokio::time::sleep(plan.interval)).await {
            return state.mark_stream_closed();
        }
        if plan.gate_last && i == last && !unless_closed(&tx, take_gate(&state)).await {
            return state.mark_stream_closed();
        }
        if tx.send(Ok(frame)).await.is_err() {
            return state.mark_stream_closed();
        }
    }
}

async fn take_gate(state: &State) {
    if let Ok(permit) = state.gate.acquire().await {
        permit.forget();
    }
}

/// Runs `fut` unless the body receiver is dropped first; false if it was.
async fn unless_closed(tx: &mpsc::Sender<Chunk>, fut: impl Future<Output = ()>) -> bool {
    tokio::select! {
        _ = tx.closed() => false,
        _ = fut => true,
    }
}

/// A response body fed by a channel; an `Err` item aborts the connection.
struct ChannelBody {
    rx: mpsc::Receiver<Chunk>,
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

// ------------------------------------------------------------ responses

fn json_response(body: impl Into<Bytes>) -> Response<Body> {
    bytes_response(StatusCode::OK, "application/json", body.into())
}

/// A complete response; an empty `content_type` sends no content-type header.
fn bytes_response(status: StatusCode, content_type: &str, body: Bytes) -> Response<Body> {
    let body = Full::new(body).map_err(|never| match never {}).boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        if !content_type.is_empty() {
            response.headers_mut().insert(CONTENT_TYPE, value);
        }
    }
    response
}

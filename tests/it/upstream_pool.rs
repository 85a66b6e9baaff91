//! The gateway's HTTP/1.1 connections to an agent: reused while they work,
//! replaced when the agent closes them, bounded when idle, and closed soon
//! after the agent closes an idle one (no socket left in CLOSE_WAIT).
//!
//! The agent here is raw TCP, so each test controls exactly what happens to
//! a connection after an answer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::support::client;
use crate::support::fault_agent::read_request;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::default_card;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the agent does with a connection once it has answered.
#[derive(Clone, Copy)]
enum After {
    /// Waits for the next request as long as the gateway likes.
    KeepOpen,
    /// Closes it if no request comes within this many ms.
    CloseWhenIdleFor(u64),
    /// Answers with `connection: close`, then closes.
    ConnectionClose,
    /// After this many ms idle, shuts down its sending side and records how
    /// long the gateway takes to close the connection too.
    HalfCloseIn(u64),
}

struct AgentState {
    after: After,
    /// Each call is answered after this long.
    delay: Duration,
    accepted: AtomicUsize,
    open: AtomicUsize,
    calls: AtomicUsize,
    /// For `HalfCloseIn`: how long each connection stayed open on the
    /// gateway's side after the agent's FIN.
    closed_after: Mutex<Vec<Duration>>,
}

struct RawAgent {
    addr: SocketAddr,
    state: Arc<AgentState>,
    task: JoinHandle<()>,
}

impl RawAgent {
    async fn start(after: After, delay: Duration) -> RawAgent {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(AgentState {
            after,
            delay,
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            closed_after: Mutex::new(Vec::new()),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        RawAgent { addr, state, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::SeqCst)
    }

    fn open(&self) -> usize {
        self.state.open.load(Ordering::SeqCst)
    }

    fn calls(&self) -> usize {
        self.state.calls.load(Ordering::SeqCst)
    }

    fn closed_after(&self) -> Vec<Duration> {
        self.state
            .closed_after
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for RawAgent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Counts a connection as open while it lives.
struct Open(Arc<AgentState>);

impl Open {
    fn new(state: Arc<AgentState>) -> Self {
        state.open.fetch_add(1, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve(mut stream: TcpStream, state: Arc<AgentState>) {
    let _open = Open::new(state.clone());
    let mut buf = Vec::new();
    let mut first = true;
    loop {
        let next = read_request(&mut stream, &mut buf);
        let request = match (state.after, first) {
            (After::CloseWhenIdleFor(ms), false) => {
                match tokio::time::timeout(Duration::from_millis(ms), next).await {
                    Ok(request) => request,
                    Err(_) => return,
                }
            }
            _ => next.await,
        };
        let Some((head, body)) = request else { return };
        first = false;
        let close = matches!(state.after, After::ConnectionClose);
        if is_stream_call(&body) {
            state.calls.fetch_add(1, Ordering::SeqCst);
            if !answer_stream(&mut stream, &body, close).await || close {
                return;
            }
            continue;
        }
        let answer = if head.starts_with("POST") {
            state.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(state.delay).await;
            let id = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            json!({"jsonrpc": "2.0", "id": id, "result": {"id": "t-1", "kind": "task"}})
        } else {
            default_card("http://127.0.0.1/")
        };
        let answer = answer.to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}\r\n",
            answer.len(),
            if close { "connection: close\r\n" } else { "" }
        );
        let written = stream.write_all(head.as_bytes()).await.is_ok()
            && stream.write_all(answer.as_bytes()).await.is_ok();
        if !written || close {
            return;
        }
        if let After::HalfCloseIn(ms) = state.after {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let _ = stream.shutdown().await;
            let fin = Instant::now();
            let mut rest = [0u8; 1024];
            let eof = async { while let Ok(1..) = stream.read(&mut rest).await {} };
            if tokio::time::timeout(Duration::from_secs(10), eof)
                .await
                .is_ok()
            {
                state
                    .closed_after
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(fin.elapsed());
            }
            return;
        }
    }
}

fn is_stream_call(body: &[u8]) -> bool {
    let call = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    call["method"] == "message/stream"
}

/// Answers a `message/stream` call with two events in HTTP/1.1 chunks, a
/// trailer field and the end; `false` if the gateway had gone.
async fn answer_stream(stream: &mut TcpStream, body: &[u8], close: bool) -> bool {
    let call: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let event = |state: &str, last: bool| {
        let result = json!({"kind": "status-update", "taskId": "t-1", "contextId": "c-1",
            "status": {"state": state}, "final": last});
        let data = json!({"jsonrpc": "2.0", "id": call["id"], "result": result});
        let event = format!("data: {data}\n\n");
        format!("{:x}\r\n{event}\r\n", event.len())
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n{}\r\n",
        if close { "connection: close\r\n" } else { "" }
    );
    let answer = [
        head,
        event("working", false),
        event("completed", true),
        "0\r\nx-done: yes\r\n\r\n".to_owned(),
    ];
    for part in answer {
        if stream.write_all(part.as_bytes()).await.is_err() {
            return false;
        }
    }
    true
}

/// A `message/stream` through the gateway, checked to bring both events
/// and end cleanly.
async fn stream_call(gw: &TestGateway, id: &str) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "message/stream",
        "params": {"message": {"role": "user", "messageId": id, "parts": [{"kind": "text", "text": "hi"}]}}});
    let mut sse = client::post_stream(&gw.url(), body.to_string(), &[]).await;
    let events = sse.collect_events(Duration::from_secs(5)).await;
    assert_eq!(events.len(), 2, "{events:?}");
    for (event, state) in events.iter().zip(["working", "completed"]) {
        let data: Value = serde_json::from_str(event).unwrap();
        assert_eq!(data["id"], id, "{event}");
        assert_eq!(data["result"]["status"]["state"], state, "{event}");
    }
    assert_eq!(sse.error(), None, "the stream ended cleanly");
}

/// A `tasks/get` through the gateway, checked to come back whole.
async fn call(gw: &TestGateway, id: &str) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"id": "t-1"}});
    let reply = client::post_json(&gw.url(), body.to_string(), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["id"], id, "{}", reply.text());
    assert_eq!(reply.json()["result"]["id"], "t-1", "{}", reply.text());
}

/// `n` calls one after another, each on a new connection that is closed
/// once its answer is read.
async fn each_call_on_a_connection_of_its_own(agent: &RawAgent, gw: &TestGateway, n: usize) {
    let before = agent.accepted();
    for i in 0..n {
        call(gw, &format!("c-{i}")).await;
    }
    assert_eq!(agent.accepted() - before, n, "one connection per call");
    assert!(
        wait_until(Duration::from_secs(2), || agent.open() == 0).await,
        "{} connections left open",
        agent.open()
    );
}

async fn wait_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

#[tokio::test]
async fn sequential_calls_share_one_connection() {
    let agent = RawAgent::start(After::KeepOpen, Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    call(&gw, "warm").await;
    let before = agent.accepted();
    for i in 0..20 {
        call(&gw, &format!("c-{i}")).await;
    }
    assert_eq!(agent.calls(), 21);
    assert_eq!(
        agent.accepted(),
        before,
        "calls one after another reuse the pooled connection"
    );
}

#[tokio::test]
async fn streams_and_calls_taking_turns_reuse_their_connections() {
    let agent = RawAgent::start(After::KeepOpen, Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    call(&gw, "warm").await;
    let before = agent.accepted();
    for i in 0..5 {
        stream_call(&gw, &format!("s-{i}")).await;
        call(&gw, &format!("c-{i}")).await;
    }
    assert_eq!(agent.calls(), 11);
    assert_eq!(
        agent.accepted() - before,
        1,
        "the first stream dials; after it streams and calls each reuse their own"
    );
}

#[tokio::test]
async fn streams_answered_with_connection_close_are_not_reused() {
    let agent = RawAgent::start(After::ConnectionClose, Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    let before = agent.accepted();
    for i in 0..3 {
        stream_call(&gw, &format!("s-{i}")).await;
    }
    assert_eq!(agent.accepted() - before, 3, "one connection per stream");
    assert!(
        wait_until(Duration::from_secs(2), || agent.open() == 0).await,
        "{} connections left open",
        agent.open()
    );
}

#[tokio::test]
async fn connections_the_agent_closed_while_idle_are_replaced() {
    let agent = RawAgent::start(After::CloseWhenIdleFor(50), Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    for i in 0..4 {
        call(&gw, &format!("c-{i}")).await;
        // Longer than the agent keeps an idle connection.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(agent.calls(), 4, "each call reached the agent once");
    assert!(
        agent.accepted() >= 4,
        "a closed connection is not reused: {} connections for 4 calls",
        agent.accepted()
    );
}

#[tokio::test]
async fn stream_sockets_the_agent_closed_while_idle_are_replaced() {
    let agent = RawAgent::start(After::CloseWhenIdleFor(50), Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    let before = agent.accepted();
    for i in 0..3 {
        stream_call(&gw, &format!("s-{i}")).await;
        // Longer than the agent keeps an idle connection.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(agent.calls(), 3, "each stream reached the agent once");
    assert_eq!(
        agent.accepted() - before,
        3,
        "a closed socket is not reused"
    );
}

#[tokio::test]
async fn answers_with_connection_close_are_not_reused() {
    let agent = RawAgent::start(After::ConnectionClose, Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    each_call_on_a_connection_of_its_own(&agent, &gw, 5).await;
    assert_eq!(agent.calls(), 5);
}

/// `n` calls at once, each checked to come back whole.
async fn burst(gw: &TestGateway, n: usize) {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let url = gw.url();
            tokio::spawn(async move {
                let id = format!("b-{i}");
                let body = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"id": "t-1"}});
                client::post_json(&url, body.to_string(), &[]).await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let reply = call.await.expect("burst call");
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["id"], format!("b-{i}"));
    }
}

#[tokio::test]
async fn a_burst_leaves_at_most_max_idle_connections_open() {
    let agent = RawAgent::start(After::KeepOpen, Duration::from_millis(300)).await;
    let gw = TestGateway::one("raw", &agent.url(), "max_idle_connections = 3", "").await;
    burst(&gw, 10).await;
    assert!(
        agent.accepted() >= 10,
        "the burst ran in parallel: {} connections",
        agent.accepted()
    );
    assert!(
        wait_until(Duration::from_secs(2), || agent.open() == 3).await,
        "{} connections still open after the burst; 3 are kept",
        agent.open()
    );
    // The three kept are the ones reused.
    let before = agent.accepted();
    call(&gw, "after").await;
    assert_eq!(agent.accepted(), before);
    assert_eq!(agent.open(), 3);
}

#[tokio::test]
async fn by_default_every_connection_within_max_in_flight_is_kept_for_reuse() {
    // A pool smaller than the load closes a connection after each call past
    // it and opens a new one for the next: steady load must not churn.
    let agent = RawAgent::start(After::KeepOpen, Duration::from_millis(1000)).await;
    // More calls at once than the old fixed default of 128 idle connections.
    let gw = TestGateway::one("raw", &agent.url(), "max_in_flight = 200", "").await;
    burst(&gw, 160).await;
    let opened = agent.accepted();
    assert!(
        opened > 128,
        "the burst ran in parallel: {opened} connections"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(agent.open(), opened, "every connection stays pooled");
    call(&gw, "after").await;
    assert_eq!(agent.accepted(), opened, "the next call reused one");
}

#[tokio::test]
async fn max_idle_connections_zero_opens_a_connection_per_call() {
    let agent = RawAgent::start(After::KeepOpen, Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "max_idle_connections = 0", "").await;
    each_call_on_a_connection_of_its_own(&agent, &gw, 3).await;
}

#[tokio::test]
async fn an_idle_connection_the_agent_closes_is_closed_by_the_gateway_within_seconds() {
    // The FIN arrives while the connection sits idle in the pool, where no
    // call is reading it: only the pool's reaper can notice it.
    let agent = RawAgent::start(After::HalfCloseIn(200), Duration::ZERO).await;
    let gw = TestGateway::one("raw", &agent.url(), "", "").await;
    // Past the half-close of the card fetch's connection: a call sent on a
    // connection as the agent closes it may have been delivered, and is
    // answered 502 rather than sent twice.
    tokio::time::sleep(Duration::from_millis(400)).await;
    call(&gw, "c-1").await;
    let accepted = agent.accepted();
    assert!(
        wait_until(Duration::from_secs(4), || agent.closed_after().len()
            == accepted)
        .await,
        "{} of {accepted} connections were closed by the gateway after the agent's FIN",
        agent.closed_after().len()
    );
    for waited in agent.closed_after() {
        assert!(waited < Duration::from_secs(3), "closed after {waited:?}");
    }
    // And the next call gets a fresh connection that works.
    call(&gw, "c-2").await;
}

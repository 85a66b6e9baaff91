//! Benchmark tools for a2a-gateway (`cargo run --release --example bench-upstream -- …`).
//!
//! `serve PORT` is a fast mock A2A agent on 127.0.0.1:PORT (HTTP/1.1 and h2c,
//! no sleeps):
//!   GET  /.well-known/agent-card.json (and agent.json): a card with one skill,
//!        `streaming: true`;
//!   POST (any path), JSON-RPC:
//!        `message/send`   → a completed task echoing the first 32 characters
//!                           of the first text part;
//!        `tasks/get`      → that task, completed;
//!        `message/stream` → N SSE events written as fast as possible, where N
//!                           is the `x-bench-events` header, else the `events`
//!                           query parameter, else BENCH_SSE_EVENTS, else 10.
//!                           The value `hold` sends one event and then keeps the
//!                           stream open without end (for idle-stream memory).
//!
//! `serve PORT --rest` is the same agent in A2A 1.0, on two bindings: its
//! card offers JSON-RPC 1.0 at `/` and HTTP+JSON 1.0 at `/rest`, and it
//! answers `SendMessage` and `POST /rest/message:send` alike (bench/rest.sh).
//!
//! `serve PORT --grpc` is the agent in A2A 1.0 with a gRPC interface too:
//! its card offers gRPC 1.0 at `127.0.0.1:PORT` (the same port, h2c) and
//! JSON-RPC 1.0 at `/`, and it answers the gRPC `SendMessage` (the same
//! task, as protobuf) like `SendMessage` (bench/grpc.sh). `grpc-body IN
//! OUT [TENANT]` writes IN's JSON-RPC 1.0 params as a framed gRPC
//! `SendMessageRequest` (with the tenant, when given).
//!
//! `serve PORT --fleet N` serves N agents instead, on PORT … PORT+N-1, each
//! with skills of its own (translate, travel, weather, …; see `THEMES`) and
//! answering `message/send` with `"<skill id>: …"` instead of `"echo: …"`,
//! so a load client can check which agent the gateway routed to.
//!
//! `rate`, `sse`, `idle` and `seq` are the load clients of bench/run.sh and
//! bench/ledger.sh; they
//! live in bench/client.rs and print one JSON line each. `secrets DIR` writes
//! the certificate and token of the TLS + JWT rows (bench/secrets.rs).
//! `sink PORT` is an OTLP/HTTP receiver that keeps nothing (bench/traces.sh).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::Deserialize;
use serde_json::value::RawValue;

#[path = "client.rs"]
mod client;
#[path = "otlp_sink.rs"]
mod otlp_sink;
#[path = "secrets.rs"]
mod secrets;

type Body = UnsyncBoxBody<Bytes, Infallible>;

const USAGE: &str = "usage: bench-upstream serve PORT | rate … | sse … | idle … (see bench/client.rs) | secrets DIR (see bench/secrets.rs) | sink PORT (see bench/otlp_sink.rs) | push-callback KEYFILE KID WEBHOOK";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("serve") => serve_main(&args[1..]),
        Some("rate") | Some("sse") | Some("idle") | Some("seq") => {
            client::main(&args[0], &args[1..])
        }
        Some("secrets") => secrets::main(&args[1..]),
        Some("sink") => otlp_sink::main(&args[1..]),
        Some("grpc-body") => grpc_body(&args[1..]),
        Some("push-callback") => push_callback(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            2
        }
    };
    std::process::exit(code);
}

fn serve_main(args: &[String]) -> i32 {
    let port = args.first().and_then(|p| p.parse::<u16>().ok());
    let rest = args.get(1).is_some_and(|a| a == "--rest");
    let grpc = args.get(1).is_some_and(|a| a == "--grpc");
    let fleet = match args.get(1..) {
        Some([]) | None => Some(None),
        Some([flag]) if flag == "--rest" || flag == "--grpc" => Some(None),
        Some([flag, n]) if flag == "--fleet" => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=THEMES.len()).contains(n))
            .map(Some),
        Some(_) => None,
    };
    let (Some(port), Some(fleet)) = (port, fleet) else {
        eprintln!(
            "usage: bench-upstream serve PORT [--rest | --grpc | --fleet N]   (N: 1 to {})",
            THEMES.len()
        );
        return 2;
    };
    let default_events = std::env::var("BENCH_SSE_EVENTS")
        .ok()
        .and_then(|v| parse_events(&v))
        .unwrap_or(Events::Count(10));
    let threads = std::env::var("BENCH_UPSTREAM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2usize);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // One agent per port: the bench agent alone, or one per theme.
    let agents: Vec<(u16, Option<&Theme>)> = match fleet {
        None => vec![(port, None)],
        Some(n) => THEMES[..n]
            .iter()
            .enumerate()
            .map(|(i, theme)| (port + i as u16, Some(theme)))
            .collect(),
    };
    runtime.block_on(async move {
        let mut served = Vec::new();
        for (port, theme) in agents {
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("bench-upstream: cannot listen on {addr}: {e}");
                    return 1;
                }
            };
            let card = match (theme, rest, grpc) {
                (Some(t), _, _) => themed_card(port, t),
                (None, true, _) => card_1_0(port),
                (None, _, true) => card_grpc(port),
                (None, false, false) => card(port),
            };
            let mock = Arc::new(Mock {
                card: Bytes::from(card),
                answer_prefix: theme.map_or("echo", |t| t.id),
                default_events,
                next_task: AtomicU64::new(1),
            });
            eprintln!("bench-upstream: listening on http://{addr}");
            served.push(tokio::spawn(accept_loop(listener, mock)));
        }
        for agent in served {
            let _ = agent.await;
        }
        0
    })
}

async fn accept_loop(listener: tokio::net::TcpListener, mock: Arc<Mock>) {
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Out of file descriptors and the like: back off briefly.
                eprintln!("bench-upstream: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let mock = mock.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let mock = mock.clone();
                async move { Ok::<_, Infallible>(mock.handle(req).await) }
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            // Enough for every idle stream of bench/run.sh over one
            // connection (the gateway-h2c rows multiplex them all).
            builder.http2().max_concurrent_streams(20_000);
            let _ = builder
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

#[derive(Clone, Copy)]
enum Events {
    Count(usize),
    Hold,
}

fn parse_events(v: &str) -> Option<Events> {
    match v.trim() {
        "hold" => Some(Events::Hold),
        n => n
            .parse()
            .ok()
            .map(|n: usize| Events::Count(n.clamp(1, 100_000))),
    }
}

struct Mock {
    card: Bytes,
    /// `message/send` answers "<prefix>: <first words>".
    answer_prefix: &'static str,
    default_events: Events,
    next_task: AtomicU64,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SendParams<'a> {
    #[serde(borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TaskParams<'a> {
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
}

impl Mock {
    /// A new task's number, and its answer as a JSON string: "<prefix>: "
    /// and the first 32 characters of the message's first text part.
    fn echo(&self, params: &str) -> (u64, String) {
        let echo = serde_json::from_str::<SendParams>(params)
            .ok()
            .and_then(|p| p.message)
            .and_then(|m| m.parts.into_iter().find_map(|p| p.text))
            .map(|t| t.chars().take(32).collect::<String>())
            .unwrap_or_default();
        let n = self.next_task.fetch_add(1, Ordering::Relaxed);
        let echo =
            serde_json::to_string(&format!("{}: {echo}", self.answer_prefix)).unwrap_or_default();
        (n, echo)
    }

    /// A completed 1.0 task echoing `params`' first words, wrapped as a
    /// `SendMessage` result (and the REST body) is.
    fn task_1_0(&self, params: &str) -> String {
        let (n, echo) = self.echo(params);
        format!(
            r#"{{"task":{{"id":"bench-task-{n}","contextId":"bench-ctx-{n}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"}},"artifacts":[{{"artifactId":"answer","parts":[{{"text":{echo}}}]}}]}}}}"#
        )
    }

    /// A gRPC `SendMessage`: the 1.0 task as protobuf, status in trailers.
    async fn grpc(&self, req: Request<Incoming>) -> Response<Body> {
        use a2a_gateway::a2a::grpc::v1;
        use prost::Message as _;
        let body = req.into_body().collect().await.map(|b| b.to_bytes());
        let asked = match body {
            Ok(b) if b.len() >= 5 => v1::SendMessageRequest::decode(&b[5..]).ok(),
            _ => None,
        };
        let Some(asked) = asked else {
            return grpc_answer(Bytes::new(), "3");
        };
        let text = (asked.message.iter().flat_map(|m| m.parts.iter()))
            .find_map(|p| match &p.content {
                Some(v1::part::Content::Text(t)) => Some(t.chars().take(32).collect::<String>()),
                _ => None,
            })
            .unwrap_or_default();
        let n = self.next_task.fetch_add(1, Ordering::Relaxed);
        let task = v1::Task {
            id: format!("bench-task-{n}"),
            context_id: format!("bench-ctx-{n}"),
            status: Some(v1::TaskStatus {
                state: v1::TaskState::Completed as i32,
                ..Default::default()
            }),
            artifacts: vec![v1::Artifact {
                artifact_id: "answer".into(),
                parts: vec![v1::Part {
                    content: Some(v1::part::Content::Text(format!(
                        "{}: {text}",
                        self.answer_prefix
                    ))),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let answer = v1::SendMessageResponse {
            payload: Some(v1::send_message_response::Payload::Task(task)),
        };
        grpc_answer(framed(&answer.encode_to_vec()), "0")
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let grpc = (req.headers().get(header::CONTENT_TYPE))
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        if grpc {
            return self.grpc(req).await;
        }
        let path = req.uri().path();
        // A webhook, for the push relay's rows: taken, nothing said.
        if req.method() == Method::POST && path.ends_with("/hook") {
            return respond(
                StatusCode::OK,
                "application/json",
                Bytes::from_static(b"{}"),
            );
        }
        let rest_send = path.ends_with("/rest/message:send");
        if req.method() == Method::GET {
            return if path.ends_with("/.well-known/agent-card.json")
                || path.ends_with("/.well-known/agent.json")
            {
                respond(StatusCode::OK, "application/json", self.card.clone())
            } else {
                respond(
                    StatusCode::NOT_FOUND,
                    "text/plain",
                    Bytes::from_static(b"not found\n"),
                )
            };
        }
        if req.method() != Method::POST {
            return respond(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                Bytes::from_static(b"method not allowed\n"),
            );
        }
        let events = req
            .headers()
            .get("x-bench-events")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_events)
            .or_else(|| {
                req.uri().query().and_then(|q| {
                    q.split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .find(|(k, _)| *k == "events")
                        .and_then(|(_, v)| parse_events(v))
                })
            })
            .unwrap_or(self.default_events);
        let body = match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                return respond(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    Bytes::from_static(b"bad body\n"),
                )
            }
        };
        if rest_send {
            let task = self.task_1_0(std::str::from_utf8(&body).unwrap_or("{}"));
            return respond(StatusCode::OK, "application/json", Bytes::from(task));
        }
        let Ok(env) = serde_json::from_slice::<Envelope>(&body) else {
            return rpc(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
                    .into(),
            );
        };
        let id = env.id.map_or("null", RawValue::get);
        let params = env.params.map_or("{}", RawValue::get);
        match env.method.as_ref() {
            "SendMessage" => {
                let task = self.task_1_0(params);
                rpc(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{task}}}"#))
            }
            "message/send" => {
                let (n, echo) = self.echo(params);
                rpc(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"task","id":"bench-task-{n}","contextId":"bench-ctx-{n}","status":{{"state":"completed","timestamp":"2026-01-01T00:00:00Z"}},"artifacts":[{{"artifactId":"answer","parts":[{{"kind":"text","text":{echo}}}]}}]}}}}"#
                ))
            }
            "tasks/get" => {
                let task = serde_json::from_str::<TaskParams>(params)
                    .ok()
                    .and_then(|p| p.id)
                    .unwrap_or_else(|| "bench-task-0".into());
                let task = serde_json::to_string(task.as_ref()).unwrap_or_default();
                rpc(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"task","id":{task},"contextId":"bench-ctx-0","status":{{"state":"completed","timestamp":"2026-01-01T00:00:00Z"}},"artifacts":[{{"artifactId":"answer","parts":[{{"kind":"text","text":"done"}}]}}]}}}}"#
                ))
            }
            "message/stream" => {
                let n = self.next_task.fetch_add(1, Ordering::Relaxed);
                sse(id, n, events)
            }
            other => {
                let other = serde_json::to_string(other).unwrap_or_default();
                rpc(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"method not found","data":{other}}}}}"#
                ))
            }
        }
    }
}

/// One gRPC message's framing.
fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// A gRPC answer: `message` (framed, maybe empty), then `grpc-status`.
fn grpc_answer(message: Bytes, status: &'static str) -> Response<Body> {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    let mut frames: Vec<Result<Frame<Bytes>, Infallible>> = Vec::new();
    if !message.is_empty() {
        frames.push(Ok(Frame::data(message)));
    }
    frames.push(Ok(Frame::trailers(trailers)));
    let mut r = Response::new(StreamBody::new(stream::iter(frames)).boxed_unsync());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    r
}

/// `grpc-body IN OUT [TENANT]`: IN's JSON-RPC 1.0 `SendMessage` params as
/// a framed gRPC `SendMessageRequest`.
/// A push relay callback id and agent token for a 1.0 JSON-RPC client's
/// webhook `WEBHOOK` (task "t1"), sealed with the key in KEYFILE (32
/// bytes, base64) as `kid`: what a gateway with that key gives an agent.
/// Prints `ID TOKEN`.
fn push_callback(args: &[String]) -> i32 {
    use a2a_gateway::push_relay::seal::{ClientConfig, SealKey, Sealer};
    use base64::Engine as _;
    let [keyfile, kid, webhook] = args else {
        eprintln!("usage: bench-upstream push-callback KEYFILE KID WEBHOOK");
        return 2;
    };
    let text = std::fs::read_to_string(keyfile).unwrap_or_default();
    let bytes = (base64::engine::general_purpose::STANDARD.decode(text.trim())).unwrap_or_default();
    let sealer = match SealKey::new(kid, &bytes) {
        Ok(key) => Sealer::new(vec![key]),
        Err(why) => {
            eprintln!("push-callback: {keyfile}: {why}");
            return 1;
        }
    };
    let config = ClientConfig {
        url: webhook.clone(),
        token: Some("client-token".into()),
        version: "1.0".into(),
        binding: "jsonrpc".into(),
        agent_version: "1.0".into(),
        task_id: "t1".into(),
        agent_token: "bench-agent-token".into(),
        ..ClientConfig::default()
    };
    match sealer.seal(&config) {
        Ok(id) => {
            println!("{id} {}", config.agent_token);
            0
        }
        Err(why) => {
            eprintln!("push-callback: {why}");
            1
        }
    }
}

fn grpc_body(args: &[String]) -> i32 {
    use a2a_gateway::a2a::grpc::v1;
    use prost::Message as _;
    let [input, out, rest @ ..] = args else {
        eprintln!("usage: bench-upstream grpc-body IN OUT [TENANT]");
        return 2;
    };
    let read = std::fs::read(input).map_err(|e| e.to_string());
    let call = read
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string()));
    let asked = call.and_then(|c| {
        serde_json::from_value::<v1::SendMessageRequest>(c["params"].clone())
            .map_err(|e| e.to_string())
    });
    let mut asked = match asked {
        Ok(asked) => asked,
        Err(e) => {
            eprintln!("grpc-body: {input}: {e}");
            return 1;
        }
    };
    if let Some(tenant) = rest.first() {
        asked.tenant = tenant.clone();
    }
    match std::fs::write(out, framed(&asked.encode_to_vec())) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("grpc-body: {out}: {e}");
            1
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn rpc(body: String) -> Response<Body> {
    respond(StatusCode::OK, "application/json", Bytes::from(body))
}

/// One SSE event: a JSON-RPC response carrying an A2A 0.3 stream result.
fn event(id: &str, task: u64, i: usize, last: bool) -> Bytes {
    let data = if last {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"status-update","taskId":"bench-task-{task}","contextId":"bench-ctx-{task}","status":{{"state":"completed","timestamp":"2026-01-01T00:00:00Z"}},"final":true}}}}"#
        )
    } else if i == 0 {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"status-update","taskId":"bench-task-{task}","contextId":"bench-ctx-{task}","status":{{"state":"working","timestamp":"2026-01-01T00:00:00Z"}},"final":false}}}}"#
        )
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"artifact-update","taskId":"bench-task-{task}","contextId":"bench-ctx-{task}","artifact":{{"artifactId":"answer","parts":[{{"kind":"text","text":"chunk {i} "}}]}},"append":{append},"lastChunk":false}}}}"#,
            append = i > 1
        )
    };
    Bytes::from(format!("data: {data}\n\n"))
}

fn sse(id: &str, task: u64, events: Events) -> Response<Body> {
    let body: Body = match events {
        Events::Count(n) => {
            let frames: Vec<Result<Frame<Bytes>, Infallible>> = (0..n)
                .map(|i| Ok(Frame::data(event(id, task, i, i + 1 == n))))
                .collect();
            StreamBody::new(stream::iter(frames)).boxed_unsync()
        }
        Events::Hold => {
            let first = Ok(Frame::data(event(id, task, 0, false)));
            StreamBody::new(stream::iter([first]).chain(stream::pending())).boxed_unsync()
        }
    };
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn card(port: u16) -> String {
    format!(
        r#"{{"name":"Bench Agent","description":"A fast mock A2A agent for benchmarks: echoes messages, streams N events.","url":"http://127.0.0.1:{port}/","version":"1.0.0","protocolVersion":"0.3.0","preferredTransport":"JSONRPC","capabilities":{{"streaming":true,"pushNotifications":false,"stateTransitionHistory":false}},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{{"id":"echo","name":"Echo","description":"Echoes the first words of a message back as a completed task.","tags":["echo","bench"],"examples":["echo this back"]}}]}}"#
    )
}

/// The bench agent's card in 1.0 (`serve --rest`): JSON-RPC and HTTP+JSON.
fn card_1_0(port: u16) -> String {
    format!(
        r#"{{"name":"Bench Agent","description":"A fast mock A2A agent for benchmarks, on two bindings.","supportedInterfaces":[{{"url":"http://127.0.0.1:{port}/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}},{{"url":"http://127.0.0.1:{port}/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}}],"version":"1.0.0","capabilities":{{"streaming":true}},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{{"id":"echo","name":"Echo","description":"Echoes the first words of a message back as a completed task.","tags":["echo","bench"]}}]}}"#
    )
}

/// The bench agent's card with gRPC (`serve --grpc`): gRPC 1.0 on this
/// port (h2c), and JSON-RPC 1.0.
fn card_grpc(port: u16) -> String {
    format!(
        r#"{{"name":"Bench Agent","description":"A fast mock A2A agent for benchmarks, on gRPC and JSON-RPC.","supportedInterfaces":[{{"url":"127.0.0.1:{port}","protocolBinding":"GRPC","protocolVersion":"1.0"}},{{"url":"http://127.0.0.1:{port}/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}}],"version":"1.0.0","capabilities":{{"streaming":true}},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{{"id":"echo","name":"Echo","description":"Echoes the first words of a message back as a completed task.","tags":["echo","bench"]}}]}}"#
    )
}

/// One agent of `serve --fleet`: a skill of its own, described the way real
/// agents describe theirs, so the gateway's matcher has real text to score.
struct Theme {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    tags: &'static [&'static str],
    example: &'static str,
}

const THEMES: [Theme; 8] = [
    Theme { id: "translate", name: "Translate", description: "Translates documents and messages between languages such as English, French, German and Spanish.", tags: &["translation", "language", "localization"], example: "translate this paragraph into French" },
    Theme { id: "travel", name: "Book travel", description: "Books flights, trains and hotels, and changes or cancels reservations.", tags: &["flight", "hotel", "booking", "travel"], example: "book a flight from Paris to Berlin" },
    Theme { id: "weather", name: "Weather forecast", description: "Forecasts weather, temperature, wind and rain for a city.", tags: &["weather", "forecast", "temperature"], example: "will it rain in Oslo tomorrow" },
    Theme { id: "invoices", name: "Invoices and payments", description: "Reads invoices, checks payments and files expense reports.", tags: &["invoice", "payment", "expense", "finance"], example: "file this receipt as an expense" },
    Theme { id: "code-review", name: "Code review", description: "Reviews pull requests and code changes, and finds bugs.", tags: &["code", "review", "bug"], example: "review this pull request" },
    Theme { id: "calendar", name: "Calendar", description: "Schedules meetings, finds free time and sends invitations.", tags: &["meeting", "schedule", "calendar"], example: "schedule a meeting with Ana on Monday" },
    Theme { id: "support", name: "Customer support", description: "Answers customer questions about orders, refunds and deliveries.", tags: &["support", "refund", "order", "delivery"], example: "where is my order" },
    Theme { id: "research", name: "Research", description: "Searches and summarizes papers, articles and reports.", tags: &["research", "summary", "paper", "article"], example: "summarize this article" },
];

fn themed_card(port: u16, theme: &Theme) -> String {
    let card = serde_json::json!({
        "name": format!("Bench {} Agent", theme.name),
        "description": format!("A fast mock A2A agent for benchmarks: {}", theme.description),
        "url": format!("http://127.0.0.1:{port}/"),
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": theme.id,
            "name": theme.name,
            "description": theme.description,
            "tags": theme.tags,
            "examples": [theme.example],
        }],
    });
    card.to_string()
}

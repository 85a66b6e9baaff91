//! A small but honest A2A agent for the demo: it echoes text, answers in the
//! shapes of 0.1, 0.3 and 1.0 by method name, streams three events, and
//! remembers its tasks so `tasks/get` / `GetTask` work.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::body::{self, Body};

const EVENT_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Default)]
struct Tasks {
    next: u64,
    /// task id → (context id, echoed text)
    known: HashMap<String, (String, String)>,
}

pub struct SampleAgent {
    addr: SocketAddr,
    _stop: watch::Sender<bool>,
}

impl SampleAgent {
    /// Listens on a free loopback port until dropped.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let tasks = Arc::new(Mutex::new(Tasks::default()));
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    Ok(accepted) = listener.accept() => accepted,
                    _ = stopped.changed() => return,
                };
                let tasks = tasks.clone();
                let svc = service_fn(move |r| {
                    let tasks = tasks.clone();
                    async move { Ok::<_, Infallible>(handle(addr, tasks, r).await) }
                });
                tokio::spawn(async move {
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Ok(Self { addr, _stop: stop })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn handle(
    addr: SocketAddr,
    tasks: Arc<Mutex<Tasks>>,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.method() == Method::GET {
        return match request.uri().path() {
            "/.well-known/agent-card.json" | "/.well-known/agent.json" => {
                json_response(&card(addr))
            }
            _ => status_only(StatusCode::NOT_FOUND),
        };
    }
    let Ok(body) = Limited::new(request.into_body(), 1 << 20).collect().await else {
        return status_only(StatusCode::BAD_REQUEST);
    };
    let Ok(call) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return json_response(&error(Value::Null, -32700, "invalid JSON"));
    };
    let id = call.get("id").cloned().unwrap_or(Value::Null);
    let method = call["method"].as_str().unwrap_or_default();
    let params = &call["params"];
    match method {
        "tasks/send" | "message/send" | "SendMessage" => {
            let (task, ctx, text) = remember(&tasks, params);
            json_response(&result(id, task_shape(method, &task, &ctx, &text)))
        }
        "tasks/sendSubscribe" | "message/stream" | "SendStreamingMessage" => {
            let (task, ctx, text) = remember(&tasks, params);
            stream_response(events(method, &id, &task, &ctx, &text))
        }
        "tasks/get" | "GetTask" | "tasks/resubscribe" | "SubscribeToTask" => {
            let task_id = params["id"].as_str().unwrap_or_default();
            let found = tasks
                .lock()
                .ok()
                .and_then(|t| t.known.get(task_id).cloned());
            match found {
                None => json_response(&error(id, -32001, "task not found")),
                Some((ctx, text))
                    if method.ends_with("ubscribe") || method == "SubscribeToTask" =>
                {
                    let last = events(method, &id, task_id, &ctx, &text)
                        .pop()
                        .into_iter()
                        .collect();
                    stream_response(last)
                }
                Some((ctx, text)) => {
                    json_response(&result(id, task_shape(method, task_id, &ctx, &text)))
                }
            }
        }
        "ListTasks" => json_response(&result(id, json!({ "tasks": [] }))),
        "tasks/cancel" | "CancelTask" => {
            json_response(&error(id, -32002, "task is already completed"))
        }
        m if m.contains("ushNotification") => {
            json_response(&error(id, -32003, "push notifications are not supported"))
        }
        "agent/getAuthenticatedExtendedCard" | "GetExtendedAgentCard" => {
            json_response(&error(id, -32007, "no extended card"))
        }
        _ => json_response(&error(id, -32601, "method not found")),
    }
}

fn remember(tasks: &Mutex<Tasks>, params: &Value) -> (String, String, String) {
    let message = &params["message"];
    let text = message["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find_map(|p| p["text"].as_str()))
        .unwrap_or("")
        .to_string();
    let Ok(mut t) = tasks.lock() else {
        return ("task-0".into(), "ctx-0".into(), text);
    };
    t.next += 1;
    let n = t.next;
    let task = params["id"]
        .as_str()
        .map_or_else(|| format!("task-{n}"), str::to_string);
    let ctx = message["contextId"]
        .as_str()
        .or(params["sessionId"].as_str())
        .map_or_else(|| format!("ctx-{n}"), str::to_string);
    t.known.insert(task.clone(), (ctx.clone(), text.clone()));
    (task, ctx, text)
}

fn version_of(method: &str) -> u8 {
    match method {
        "tasks/send" | "tasks/sendSubscribe" => 1,
        m if m.starts_with(|c: char| c.is_ascii_uppercase()) => 10,
        _ => 3,
    }
}

fn task_shape(method: &str, task: &str, ctx: &str, text: &str) -> Value {
    let reply = format!("echo: {text}");
    match version_of(method) {
        1 => json!({"id": task, "sessionId": ctx, "status": {"state": "completed"},
                    "artifacts": [{"parts": [{"type": "text", "text": reply}]}]}),
        3 => json!({"kind": "task", "id": task, "contextId": ctx, "status": {"state": "completed"},
                    "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": reply}]}]}),
        _ => {
            json!({"task": {"id": task, "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED"},
                    "artifacts": [{"artifactId": "a1", "parts": [{"text": reply}]}]}})
        }
    }
}

/// Working → artifact → completed, each a whole JSON-RPC response.
fn events(method: &str, id: &Value, task: &str, ctx: &str, text: &str) -> Vec<Value> {
    let reply = format!("echo: {text}");
    let items = match version_of(method) {
        1 => vec![
            json!({"id": task, "status": {"state": "working"}, "final": false}),
            json!({"id": task, "artifact": {"parts": [{"type": "text", "text": reply}]}}),
            json!({"id": task, "status": {"state": "completed"}, "final": true}),
        ],
        3 => vec![
            json!({"kind": "status-update", "taskId": task, "contextId": ctx, "status": {"state": "working"}, "final": false}),
            json!({"kind": "artifact-update", "taskId": task, "contextId": ctx,
                   "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": reply}]}, "lastChunk": true}),
            json!({"kind": "status-update", "taskId": task, "contextId": ctx, "status": {"state": "completed"}, "final": true}),
        ],
        _ => vec![
            json!({"statusUpdate": {"taskId": task, "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"artifactUpdate": {"taskId": task, "contextId": ctx,
                   "artifact": {"artifactId": "a1", "parts": [{"text": reply}]}, "lastChunk": true}}),
            json!({"statusUpdate": {"taskId": task, "contextId": ctx, "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ],
    };
    items
        .into_iter()
        .map(|item| result(id.clone(), item))
        .collect()
}

fn card(addr: SocketAddr) -> Value {
    let url = format!("http://{addr}/");
    json!({
        "name": "Echo Agent",
        "description": "Repeats what you say; streams it in three events if you ask.",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "url": url,
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": url, "transport": "JSONRPC"}],
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "echo", "name": "Echo", "description": "Echoes the text of your message back.",
            "tags": ["echo", "test"], "examples": ["say hello back to me"]
        }]
    })
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn json_response(value: &Value) -> Response<Body> {
    let mut r = Response::new(body::full(value.to_string()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(body::empty());
    *r.status_mut() = status;
    r
}

fn stream_response(events: Vec<Value>) -> Response<Body> {
    let frames =
        futures_util::stream::unfold((events.into_iter(), true), |(mut rest, first)| async move {
            let event = rest.next()?;
            if !first {
                tokio::time::sleep(EVENT_INTERVAL).await;
            }
            let frame = Frame::data(Bytes::from(format!("data: {event}\n\n")));
            Some((Ok::<_, Infallible>(frame), (rest, false)))
        });
    let mut r = Response::new(
        StreamBody::new(frames)
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

//! Two small but honest A2A agents for the demo. Both answer in the shapes
//! of 0.1, 0.3 and 1.0 by method name and remember their tasks, so
//! `tasks/get` / `GetTask` and follow-ups work:
//!
//! - `weather` streams a forecast in several events;
//! - `travel` books a flight in two turns: the first message gets a task in
//!   `input-required` asking for a date, the follow-up completes it. Its
//!   card says it cannot stream, so the gateway refuses streaming to it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::shapes::{self, State};
use crate::http::body::{self, Body};

const EVENT_INTERVAL: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Weather,
    Travel,
}

#[derive(Default)]
struct Tasks {
    next: u64,
    /// task id → (context id, state, last text)
    known: HashMap<String, (String, State, String)>,
}

struct Agent {
    kind: Kind,
    addr: SocketAddr,
    tasks: Mutex<Tasks>,
}

pub struct SampleAgent {
    addr: SocketAddr,
    _stop: watch::Sender<bool>,
}

impl SampleAgent {
    /// Listens on a free loopback port until dropped.
    pub async fn start(kind: Kind) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let agent = Arc::new(Agent {
            kind,
            addr,
            tasks: Mutex::new(Tasks::default()),
        });
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    Ok(accepted) = listener.accept() => accepted,
                    _ = stopped.changed() => return,
                };
                let agent = agent.clone();
                let svc = service_fn(move |r| {
                    let agent = agent.clone();
                    async move { Ok::<_, Infallible>(agent.handle(r).await) }
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

impl Agent {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if request.method() == Method::GET {
            return match request.uri().path() {
                "/.well-known/agent-card.json" | "/.well-known/agent.json" => {
                    json_response(&self.card())
                }
                _ => status_only(StatusCode::NOT_FOUND),
            };
        }
        let Ok(body) = crate::http::body::read_to_limit(request.into_body(), 1 << 20).await else {
            return status_only(StatusCode::BAD_REQUEST);
        };
        let Ok(call) = serde_json::from_slice::<Value>(&body) else {
            return json_response(&shapes::error(Value::Null, -32700, "invalid JSON"));
        };
        let id = call.get("id").cloned().unwrap_or(Value::Null);
        let method = call["method"].as_str().unwrap_or_default();
        self.answer(method, id, &call["params"])
    }

    fn answer(&self, method: &str, id: Value, params: &Value) -> Response<Body> {
        let v = shapes::version_of(method);
        match method {
            "tasks/send" | "message/send" | "SendMessage" => match self.turn(params) {
                Ok((task, ctx, state, text)) => json_response(&shapes::result(
                    id,
                    shapes::task(v, &task, &ctx, state, &text),
                )),
                Err(e) => json_response(&shapes::error(id, -32001, &e)),
            },
            "tasks/sendSubscribe" | "message/stream" | "SendStreamingMessage" => {
                match self.turn(params) {
                    Ok((task, ctx, _, text)) => {
                        stream_response(shapes::forecast_events(v, &id, &task, &ctx, &text))
                    }
                    Err(e) => json_response(&shapes::error(id, -32001, &e)),
                }
            }
            "tasks/get" | "GetTask" | "tasks/resubscribe" | "SubscribeToTask" => {
                let task_id = params["id"].as_str().unwrap_or_default();
                let found = self
                    .tasks
                    .lock()
                    .ok()
                    .and_then(|t| t.known.get(task_id).cloned());
                match found {
                    None => json_response(&shapes::error(id, -32001, "task not found")),
                    Some((ctx, state, text)) if method.contains("ubscribe") => {
                        let last = shapes::result(
                            id,
                            shapes::status_event(v, task_id, &ctx, state, &text),
                        );
                        stream_response(vec![last])
                    }
                    Some((ctx, state, text)) => json_response(&shapes::result(
                        id,
                        shapes::task(v, task_id, &ctx, state, &text),
                    )),
                }
            }
            "ListTasks" => json_response(&shapes::result(id, json!({ "tasks": [] }))),
            "tasks/cancel" | "CancelTask" => {
                json_response(&shapes::error(id, -32002, "task cannot be canceled"))
            }
            m if m.contains("ushNotification") => json_response(&shapes::error(
                id,
                -32003,
                "push notifications are not supported",
            )),
            "agent/getAuthenticatedExtendedCard" | "GetExtendedAgentCard" => {
                json_response(&shapes::error(id, -32007, "no extended card"))
            }
            _ => json_response(&shapes::error(id, -32601, "method not found")),
        }
    }

    /// Advances the conversation: a new task, or the next turn of a known one.
    fn turn(&self, params: &Value) -> Result<(String, String, State, String), String> {
        let message = &params["message"];
        let text = shapes::first_text(message);
        let mut tasks = self
            .tasks
            .lock()
            .map_err(|_| "agent state unavailable".to_string())?;
        // 0.1 clients name the task in params.id; later versions in message.taskId.
        let named = message["taskId"]
            .as_str()
            .or(params["id"].as_str())
            .map(str::to_owned);
        if let Some((ctx, state, _)) = named.as_ref().and_then(|t| tasks.known.get(t)).cloned() {
            let task = named.unwrap_or_default();
            if state != State::InputRequired {
                return Err(format!("task {task} is already {}", state.word()));
            }
            let reply = format!("Booked: your flight on {text}. Have a good trip!");
            tasks
                .known
                .insert(task.clone(), (ctx.clone(), State::Completed, reply.clone()));
            return Ok((task, ctx, State::Completed, reply));
        }
        tasks.next += 1;
        let n = tasks.next;
        let task = named.unwrap_or_else(|| format!("{}-task-{n}", self.prefix()));
        let ctx = message["contextId"]
            .as_str()
            .or(params["sessionId"].as_str())
            .map_or_else(|| format!("{}-ctx-{n}", self.prefix()), str::to_owned);
        let (state, reply) = match self.kind {
            Kind::Weather => (
                State::Completed,
                format!("Forecast for '{text}': sunny spells, 21°C, light wind."),
            ),
            Kind::Travel => (
                State::InputRequired,
                format!("Flight request noted ('{text}'). Which date would you like to fly?"),
            ),
        };
        tasks
            .known
            .insert(task.clone(), (ctx.clone(), state, reply.clone()));
        Ok((task, ctx, state, reply))
    }

    fn prefix(&self) -> &'static str {
        match self.kind {
            Kind::Weather => "weather",
            Kind::Travel => "travel",
        }
    }

    fn card(&self) -> Value {
        let url = format!("http://{}/", self.addr);
        let (name, description, streaming, skill) = match self.kind {
            Kind::Weather => (
                "Weather Agent",
                "Forecasts for any city, streamed as they are computed.",
                true,
                json!({"id": "forecast", "name": "Weather forecast",
                       "description": "Forecasts temperature, rain and wind for a city.",
                       "tags": ["weather", "forecast", "temperature", "rain", "wind"],
                       "examples": ["What is the weather in Paris tomorrow?", "Will it rain in Lisbon?"]}),
            ),
            Kind::Travel => (
                "Travel Agent",
                "Books flights; asks for what it is missing.",
                false,
                json!({"id": "book-flight", "name": "Flight booking",
                       "description": "Books airline flights between cities; asks for the date when it is missing.",
                       "tags": ["travel", "flight", "booking", "airline", "ticket"],
                       "examples": ["Book a flight to Lisbon", "I need a plane ticket to Berlin"]}),
            ),
        };
        json!({
            "name": name, "description": description, "version": "1.0.0",
            "protocolVersion": "0.3.0", "url": url, "preferredTransport": "JSONRPC",
            "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": streaming, "pushNotifications": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [skill]
        })
    }
}

fn json_response(value: &Value) -> Response<Body> {
    let mut r = Response::new(body::full(value.to_string()));
    crate::http::body::set_json(r.headers_mut());
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

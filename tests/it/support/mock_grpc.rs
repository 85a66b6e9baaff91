//! A gRPC-only A2A 1.0 agent (`lf.a2a.v1.A2AService` on tonic's server,
//! h2c on its own loopback port), with its card served by a [`MockAgent`]
//! whose card names only that gRPC interface, as an SDK's gRPC agent
//! publishes it (a bare `host:port`).
//!
//! It keeps the tasks it made. `SendMessage` completes a task with the
//! text echoed, or leaves it input-required when the text has "more";
//! `SendStreamingMessage` says the task, `working`, then `completed`, and
//! a text with "break" ends the stream after the task with UNAVAILABLE,
//! "slow" waits 400 ms before each message;
//! `GetTask` and `CancelTask` know its tasks (else NOT_FOUND with the
//! TASK_NOT_FOUND ErrorInfo); a completed task is not cancelable. Other
//! RPCs are UNIMPLEMENTED. Every call's metadata is recorded. A
//! `SendMessage` answer carries `x-agent-said: send` in its metadata, a
//! `SendStreamingMessage` one `x-agent-said: stream`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use a2a_gateway::a2a::grpc::v1;
use futures_util::Stream;
use serde_json::json;
use tonic::{Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};
use v1::a2a_service_server::{A2aService, A2aServiceServer};

use super::mock_agent::{MockAgent, Mode};

/// One call the agent took: its RPC, metadata and message.
#[derive(Clone, Debug)]
pub struct Call {
    pub rpc: &'static str,
    pub metadata: HashMap<String, String>,
    pub message: String,
}

#[derive(Default)]
struct Shared {
    tasks: Mutex<HashMap<String, v1::Task>>,
    calls: Mutex<Vec<Call>>,
}

pub struct MockGrpcAgent {
    pub card: MockAgent,
    pub grpc: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MockGrpcAgent {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockGrpcAgent {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let service = A2aServiceServer::new(Agent(shared.clone()));
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Self::with_card(grpc.to_string(), shared, server).await
    }

    /// The same agent over TLS (h2 by ALPN, as `tls` offers); its card
    /// names it `https://localhost:PORT`.
    pub async fn start_tls(tls: Arc<rustls::ServerConfig>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let service = A2aServiceServer::new(Agent(shared.clone()));
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let server = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, service) = (acceptor.clone(), service.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let service = hyper_util::service::TowerToHyperService::new(service);
                    let builder = hyper::server::conn::http2::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    );
                    let _ = builder.serve_connection(io, service).await;
                });
            }
        });
        Self::with_card(format!("https://localhost:{port}"), shared, server).await
    }

    async fn with_card(
        url: String,
        shared: Arc<Shared>,
        server: tokio::task::JoinHandle<()>,
    ) -> Self {
        let grpc = url
            .trim_start_matches("https://")
            .replace("localhost", "127.0.0.1")
            .parse()
            .unwrap();
        let card = MockAgent::start(Mode::Normal).await;
        card.set_card(Some(json!({
            "name": "grpc-only", "description": "a gRPC-only agent", "version": "1",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "GRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "grpc-echo", "name": "echo", "description": "echoes", "tags": ["echo"]}]
        })));
        MockGrpcAgent {
            card,
            grpc,
            shared,
            server,
        }
    }

    /// Its card says it sends push notifications (before a gateway
    /// reads it).
    pub fn send_push(&self) {
        let mut card = self.card.card().expect("the mock's card");
        card["capabilities"]["pushNotifications"] = json!(true);
        self.card.set_card(Some(card));
    }

    /// The upstream URL: where its card is.
    pub fn url(&self) -> String {
        self.card.url()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.calls.lock().unwrap().clone()
    }
}

struct Agent(Arc<Shared>);

fn text_of(message: Option<&v1::Message>) -> String {
    let parts = message.map(|m| m.parts.as_slice()).unwrap_or_default();
    (parts.iter())
        .filter_map(|p| match &p.content {
            Some(v1::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn agent_text(text: String) -> v1::Message {
    v1::Message {
        message_id: format!("a-{}", rand_id()),
        role: v1::Role::Agent as i32,
        parts: vec![v1::Part {
            content: Some(v1::part::Content::Text(text)),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn status(state: v1::TaskState, message: Option<v1::Message>) -> Option<v1::TaskStatus> {
    Some(v1::TaskStatus {
        state: state as i32,
        message,
        ..Default::default()
    })
}

fn not_found(id: &str) -> Status {
    let details = ErrorDetails::with_error_info(
        "TASK_NOT_FOUND",
        "a2a-protocol.org",
        [("taskId".to_string(), id.to_string())],
    );
    Status::with_error_details(tonic::Code::NotFound, format!("no task {id}"), details)
}

impl Agent {
    fn record<M: std::fmt::Debug>(&self, rpc: &'static str, request: &Request<M>) {
        let metadata = (request.metadata().clone().into_headers().iter())
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let message = format!("{:?}", request.get_ref());
        self.0.calls.lock().unwrap().push(Call {
            rpc,
            metadata,
            message,
        });
    }

    fn task(&self, request: &v1::SendMessageRequest) -> v1::Task {
        let message = request.message.clone().unwrap_or_default();
        let text = text_of(Some(&message));
        let mut tasks = self.0.tasks.lock().unwrap();
        let id = match message.task_id.is_empty() {
            true => format!("gtask-{}", rand_id()),
            false => message.task_id.clone(),
        };
        let mut task = tasks.remove(&id).unwrap_or_else(|| v1::Task {
            id: id.clone(),
            context_id: match message.context_id.is_empty() {
                true => format!("gctx-{}", rand_id()),
                false => message.context_id.clone(),
            },
            ..Default::default()
        });
        task.history.push(message);
        if text.contains("more") {
            task.status = status(
                v1::TaskState::InputRequired,
                Some(agent_text("need more input".into())),
            );
        } else {
            let echo = format!("echo: {text}");
            task.artifacts = vec![v1::Artifact {
                artifact_id: "echo".into(),
                parts: agent_text(echo.clone()).parts,
                ..Default::default()
            }];
            task.status = status(v1::TaskState::Completed, Some(agent_text(echo)));
        }
        tasks.insert(id, task.clone());
        task
    }
}

type Answers = Pin<Box<dyn Stream<Item = Result<v1::StreamResponse, Status>> + Send>>;

#[tonic::async_trait]
impl A2aService for Agent {
    async fn send_message(
        &self,
        request: Request<v1::SendMessageRequest>,
    ) -> Result<Response<v1::SendMessageResponse>, Status> {
        self.record("SendMessage", &request);
        let task = self.task(request.get_ref());
        let mut answer = Response::new(v1::SendMessageResponse {
            payload: Some(v1::send_message_response::Payload::Task(task)),
        });
        // What only the agent's own answer carries (a passed-through one).
        answer
            .metadata_mut()
            .insert("x-agent-said", "send".parse().unwrap());
        Ok(answer)
    }

    type SendStreamingMessageStream = Answers;

    async fn send_streaming_message(
        &self,
        request: Request<v1::SendMessageRequest>,
    ) -> Result<Response<Answers>, Status> {
        self.record("SendStreamingMessage", &request);
        let breaks = text_of(request.get_ref().message.as_ref()).contains("break");
        let done = self.task(request.get_ref());
        let mut first = done.clone();
        first.status = status(v1::TaskState::Submitted, None);
        first.artifacts.clear();
        let update = |state, message| v1::StreamResponse {
            payload: Some(v1::stream_response::Payload::StatusUpdate(
                v1::TaskStatusUpdateEvent {
                    task_id: done.id.clone(),
                    context_id: done.context_id.clone(),
                    status: status(state, message),
                    ..Default::default()
                },
            )),
        };
        let mut items = vec![Ok(v1::StreamResponse {
            payload: Some(v1::stream_response::Payload::Task(first)),
        })];
        if breaks {
            items.push(Err(Status::unavailable("the agent broke off")));
        } else {
            items.push(Ok(update(v1::TaskState::Working, None)));
            let last = done.status.clone().unwrap_or_default();
            let state = v1::TaskState::try_from(last.state).unwrap_or_default();
            items.push(Ok(update(state, last.message)));
        }
        let slow = text_of(request.get_ref().message.as_ref()).contains("slow");
        let items = futures_util::StreamExt::then(
            futures_util::stream::iter(items),
            move |item| async move {
                if slow {
                    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
                }
                item
            },
        );
        let mut answer = Response::new(Box::pin(items) as Answers);
        answer
            .metadata_mut()
            .insert("x-agent-said", "stream".parse().unwrap());
        Ok(answer)
    }

    async fn get_task(
        &self,
        request: Request<v1::GetTaskRequest>,
    ) -> Result<Response<v1::Task>, Status> {
        self.record("GetTask", &request);
        let id = &request.get_ref().id;
        let tasks = self.0.tasks.lock().unwrap();
        tasks
            .get(id)
            .cloned()
            .map(Response::new)
            .ok_or_else(|| not_found(id))
    }

    async fn list_tasks(
        &self,
        _: Request<v1::ListTasksRequest>,
    ) -> Result<Response<v1::ListTasksResponse>, Status> {
        Err(Status::unimplemented("ListTasks"))
    }

    async fn cancel_task(
        &self,
        request: Request<v1::CancelTaskRequest>,
    ) -> Result<Response<v1::Task>, Status> {
        self.record("CancelTask", &request);
        let id = request.get_ref().id.clone();
        let mut tasks = self.0.tasks.lock().unwrap();
        let Some(task) = tasks.get_mut(&id) else {
            return Err(not_found(&id));
        };
        let state = task.status.as_ref().map_or(0, |s| s.state);
        if state == v1::TaskState::Completed as i32 {
            let details = ErrorDetails::with_error_info(
                "TASK_NOT_CANCELABLE",
                "a2a-protocol.org",
                HashMap::new(),
            );
            return Err(Status::with_error_details(
                tonic::Code::FailedPrecondition,
                "completed",
                details,
            ));
        }
        task.status = status(v1::TaskState::Canceled, None);
        Ok(Response::new(task.clone()))
    }

    type SubscribeToTaskStream = Answers;

    async fn subscribe_to_task(
        &self,
        _: Request<v1::SubscribeToTaskRequest>,
    ) -> Result<Response<Answers>, Status> {
        Err(Status::unimplemented("SubscribeToTask"))
    }

    /// Recorded, and the config given back as set.
    async fn create_task_push_notification_config(
        &self,
        request: Request<v1::TaskPushNotificationConfig>,
    ) -> Result<Response<v1::TaskPushNotificationConfig>, Status> {
        self.record("CreateTaskPushNotificationConfig", &request);
        Ok(Response::new(request.into_inner()))
    }

    async fn get_task_push_notification_config(
        &self,
        _: Request<v1::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<v1::TaskPushNotificationConfig>, Status> {
        Err(Status::unimplemented("push"))
    }

    async fn list_task_push_notification_configs(
        &self,
        _: Request<v1::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<v1::ListTaskPushNotificationConfigsResponse>, Status> {
        Err(Status::unimplemented("push"))
    }

    async fn get_extended_agent_card(
        &self,
        _: Request<v1::GetExtendedAgentCardRequest>,
    ) -> Result<Response<v1::AgentCard>, Status> {
        Err(Status::unimplemented("card"))
    }

    async fn delete_task_push_notification_config(
        &self,
        _: Request<v1::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        Err(Status::unimplemented("push"))
    }
}

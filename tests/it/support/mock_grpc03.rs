//! A gRPC-only A2A 0.3 agent (`a2a.v1.A2AService` on tonic's server, h2c
//! on its own loopback port), its card (0.3: `url` a bare `host:port`,
//! `preferredTransport: GRPC`) served by a [`MockAgent`]. `SendMessage`
//! completes a task with the text echoed; `SendStreamingMessage` says the
//! task, then a final `completed` status; `GetTask` knows its tasks (else
//! NOT_FOUND with the TASK_NOT_FOUND ErrorInfo). Other RPCs are
//! UNIMPLEMENTED. Every call's RPC and message are recorded. The answers to
//! `SendMessage` and `SendStreamingMessage` carry `x-agent-said` metadata
//! (`send`, `stream`): only the agent's own answer, passed through, has it.

#![allow(dead_code)]

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use a2a_gateway::a2a::grpc::v03;
use futures_util::Stream;
use serde_json::json;
use tonic::{Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};
use v03::a2a_service_server::{A2aService, A2aServiceServer};

use super::mock_agent::{MockAgent, Mode};

#[derive(Default)]
struct Shared {
    tasks: Mutex<HashMap<String, v03::Task>>,
    calls: Mutex<Vec<(&'static str, String)>>,
}

pub struct MockGrpc03Agent {
    pub card: MockAgent,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MockGrpc03Agent {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockGrpc03Agent {
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
        let card = MockAgent::start(Mode::Normal).await;
        card.set_card(Some(json!({
            "name": "grpc-03", "description": "a 0.3 gRPC-only agent", "version": "1",
            "protocolVersion": "0.3.0", "url": grpc.to_string(), "preferredTransport": "GRPC",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "grpc-03", "name": "echo", "description": "echoes", "tags": ["echo"]}]
        })));
        MockGrpc03Agent {
            card,
            shared,
            server,
        }
    }

    pub fn url(&self) -> String {
        self.card.url()
    }

    /// Each call's RPC and its message (`Debug`).
    pub fn calls(&self) -> Vec<(&'static str, String)> {
        self.shared.calls.lock().unwrap().clone()
    }
}

struct Agent(Arc<Shared>);

fn completed(message: &v03::Message) -> v03::Task {
    let text: Vec<String> = (message.content.iter())
        .filter_map(|p| match &p.part {
            Some(v03::part::Part::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let reply = v03::Message {
        message_id: "a-1".into(),
        role: v03::Role::Agent as i32,
        content: vec![v03::Part {
            part: Some(v03::part::Part::Text(format!("echo: {}", text.join(" ")))),
        }],
        ..Default::default()
    };
    v03::Task {
        id: format!("g03-{}", message.message_id),
        context_id: "c03".into(),
        status: Some(v03::TaskStatus {
            state: v03::TaskState::Completed as i32,
            update: Some(reply),
            ..Default::default()
        }),
        ..Default::default()
    }
}

type Answers = Pin<Box<dyn Stream<Item = Result<v03::StreamResponse, Status>> + Send>>;

impl Agent {
    fn record<M: std::fmt::Debug>(&self, rpc: &'static str, message: &M) {
        let said = format!("{message:?}");
        self.0.calls.lock().unwrap().push((rpc, said));
    }

    fn task(&self, request: &v03::SendMessageRequest) -> v03::Task {
        let task = completed(&request.request.clone().unwrap_or_default());
        let mut tasks = self.0.tasks.lock().unwrap();
        tasks.insert(task.id.clone(), task.clone());
        task
    }
}

#[tonic::async_trait]
impl A2aService for Agent {
    async fn send_message(
        &self,
        request: Request<v03::SendMessageRequest>,
    ) -> Result<Response<v03::SendMessageResponse>, Status> {
        self.record("SendMessage", request.get_ref());
        let task = self.task(request.get_ref());
        let mut answer = Response::new(v03::SendMessageResponse {
            payload: Some(v03::send_message_response::Payload::Task(task)),
        });
        answer
            .metadata_mut()
            .insert("x-agent-said", "send".parse().unwrap());
        Ok(answer)
    }

    type SendStreamingMessageStream = Answers;

    async fn send_streaming_message(
        &self,
        request: Request<v03::SendMessageRequest>,
    ) -> Result<Response<Answers>, Status> {
        self.record("SendStreamingMessage", request.get_ref());
        let task = self.task(request.get_ref());
        let update = v03::TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            r#final: true,
            ..Default::default()
        };
        let items = [
            Ok(v03::StreamResponse {
                payload: Some(v03::stream_response::Payload::Task(task)),
            }),
            Ok(v03::StreamResponse {
                payload: Some(v03::stream_response::Payload::StatusUpdate(update)),
            }),
        ];
        let mut answer = Response::new(Box::pin(futures_util::stream::iter(items)) as Answers);
        answer
            .metadata_mut()
            .insert("x-agent-said", "stream".parse().unwrap());
        Ok(answer)
    }

    async fn get_task(
        &self,
        request: Request<v03::GetTaskRequest>,
    ) -> Result<Response<v03::Task>, Status> {
        self.record("GetTask", request.get_ref());
        let name = &request.get_ref().name;
        let id = name.strip_prefix("tasks/").unwrap_or(name);
        let tasks = self.0.tasks.lock().unwrap();
        match tasks.get(id) {
            Some(task) => Ok(Response::new(task.clone())),
            None => {
                let info = [("taskId".to_string(), id.to_string())];
                let details =
                    ErrorDetails::with_error_info("TASK_NOT_FOUND", "a2a-protocol.org", info);
                let message = format!("no task {id}");
                Err(Status::with_error_details(
                    tonic::Code::NotFound,
                    message,
                    details,
                ))
            }
        }
    }

    async fn cancel_task(
        &self,
        _: Request<v03::CancelTaskRequest>,
    ) -> Result<Response<v03::Task>, Status> {
        Err(Status::unimplemented("cancel"))
    }

    type TaskSubscriptionStream = Answers;

    async fn task_subscription(
        &self,
        _: Request<v03::TaskSubscriptionRequest>,
    ) -> Result<Response<Answers>, Status> {
        Err(Status::unimplemented("subscribe"))
    }

    async fn create_task_push_notification_config(
        &self,
        _: Request<v03::CreateTaskPushNotificationConfigRequest>,
    ) -> Result<Response<v03::TaskPushNotificationConfig>, Status> {
        Err(Status::unimplemented("push"))
    }

    async fn get_task_push_notification_config(
        &self,
        _: Request<v03::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<v03::TaskPushNotificationConfig>, Status> {
        Err(Status::unimplemented("push"))
    }

    async fn list_task_push_notification_config(
        &self,
        _: Request<v03::ListTaskPushNotificationConfigRequest>,
    ) -> Result<Response<v03::ListTaskPushNotificationConfigResponse>, Status> {
        Err(Status::unimplemented("push"))
    }

    async fn get_agent_card(
        &self,
        _: Request<v03::GetAgentCardRequest>,
    ) -> Result<Response<v03::AgentCard>, Status> {
        Err(Status::unimplemented("card"))
    }

    async fn delete_task_push_notification_config(
        &self,
        _: Request<v03::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        Err(Status::unimplemented("push"))
    }
}

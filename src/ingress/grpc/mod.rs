//! The gRPC front door (A2A 1.0, `lf.a2a.v1.A2AService`). tonic's
//! generated server reads the request (framing, size limit, decoding,
//! unknown methods) and writes the answer (framing, trailers, a
//! trailers-only status for an error). Between them, each call goes the
//! one call's way (`crate::call`) as the 1.0 call it is: its message's
//! ProtoJSON is the call's params, its metadata the call's headers. The
//! JSON-RPC answer's result is read back into the RPC's answer message; an
//! error becomes the gRPC status the one table names
//! (`crate::http::error::table`), with a `google.rpc.ErrorInfo` detail.
//!
//! The two streaming RPCs are the agent's SSE events, each encoded as a
//! `StreamResponse`. A tenant `agents/{name}` names the agent, as the path
//! `/agents/{name}` does for the other bindings. A `grpc-timeout` bounds
//! the whole call, a stream included: past it, DEADLINE_EXCEEDED. The 0.3
//! service goes its own way (`v03`); health checks and
//! reflection are served beside them (`health`,
//! `reflection`).

mod frames;
mod health;
pub(crate) mod metadata;
mod reflection;
mod serve;
mod v03;

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tonic::Status;

use crate::a2a::grpc::v1;
use crate::http::body::Body;
use crate::http::error::grpc::{status_from_code, status_from_row};
use crate::http::error::table::{for_code, Mapped};
use crate::state::{AppState, ConnInfo};
use metadata::{deadline, not_json, read_whole};
use serve::{into_gateway_body, serve_call, GrpcCall};

/// The JSON-RPC answer to a call is read whole up to this size.
const MAX_ANSWER: usize = metadata::MAX_ANSWER;

/// Serves one gRPC request (`content-type: application/grpc`).
pub async fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.version() != http::Version::HTTP_2 {
        let why = "gRPC needs HTTP/2 (h2c in plaintext, or h2 by ALPN over TLS)";
        return into_gateway_body(Status::invalid_argument(why).into_http());
    }
    let deadline = match deadline(request.headers()) {
        Ok(deadline) => deadline,
        Err(why) => return into_gateway_body(Status::invalid_argument(why).into_http()),
    };
    let path = request.uri().path();
    let service = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match service {
        v1::a2a_service_server::SERVICE_NAME => {}
        crate::a2a::grpc::v03::a2a_service_server::SERVICE_NAME => {
            return v03::handle(state, conn, request, deadline).await;
        }
        tonic_health::pb::health_server::SERVICE_NAME => {
            return health::serve(state, request).await;
        }
        reflection::V1 => return reflection::serve(request, false).await,
        reflection::V1ALPHA => return reflection::serve(request, true).await,
        _ => {
            let service: String = service.chars().take(128).collect();
            let why = format!(
                "service '{service}' is not served here; the A2A services are {} (1.0) and {} (0.3)",
                v1::a2a_service_server::SERVICE_NAME,
                crate::a2a::grpc::v03::a2a_service_server::SERVICE_NAME,
            );
            return into_gateway_body(Status::unimplemented(why).into_http());
        }
    }
    let server = |call, limit| {
        v1::a2a_service_server::A2aServiceServer::new(call)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(MAX_ANSWER)
    };
    serve_call(state, conn, request, deadline, server).await
}

/// The 1.0 service (`lf.a2a.v1.A2AService`): each call goes as the 1.0
/// call it is, its message's ProtoJSON the params.
impl GrpcCall {
    /// The call, as its 1.0 `method`, through the gateway: its JSON-RPC
    /// answer.
    async fn send_call<Q: Serialize + Tenanted>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<Response<Body>, Status> {
        let (metadata, _, mut message) = request.into_parts();
        let mut metadata = metadata.into_headers();
        let by_metadata = metadata::agent_in(&self.state, &mut metadata)?;
        let by_tenant = agent_named(&self.state, message.tenant())?;
        let agent = by_tenant.or(by_metadata);
        let Some(called) = crate::a2a::methods::lookup(method) else {
            return Err(Status::internal(format!(
                "{method} is not an A2A 1.0 method"
            )));
        };
        // Sized for the message's JSON at once (a little longer than its
        // protobuf), not grown by doubling from 128 bytes.
        let mut params = Vec::with_capacity(self.frames.len() * 5 / 4 + 128);
        serde_json::to_writer(&mut params, &message).map_err(|e| {
            Status::internal(format!("the request could not be encoded as JSON: {e}"))
        })?;
        let mut request = Request::new(Bytes::from(params));
        // The frames as they came; the tenant that named the agent written
        // anew as the agent's own (or none): it is the gateway's alone.
        let frames = match by_tenant {
            None => Some(self.frames.clone()),
            Some(_) => {
                let field = crate::a2a::grpc::call::tenant_field(method);
                crate::a2a::grpc::call::with_string_field(&self.frames, field, message.tenant())
            }
        };
        if let Some(frames) = frames {
            let (path, deadline) = (self.path.clone(), self.deadline);
            let sent = crate::egress::grpc::GrpcRequest {
                path,
                frames,
                deadline,
            };
            request.extensions_mut().insert(sent);
        }
        let headers = request.headers_mut();
        *headers = metadata::headers(metadata);
        // A gRPC call to this service is a 1.0 call, whether it says so or not.
        let v1 = http::HeaderValue::from_static("1.0");
        (headers.entry("a2a-version")).or_insert(v1);
        // Boxed: the call's way through the gateway is a large future, and
        // tonic moves the futures around it (perf: memmove of it, per call).
        let served = Box::pin(super::handle_grpc(
            self.state.clone(),
            &self.conn,
            request,
            (agent, called),
        ));
        self.within(served).await
    }

    /// A unary call as its 1.0 `method`, its answer read back as `A`.
    async fn unary_call<Q: Serialize + Tenanted, A: DeserializeOwned + Default>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<tonic::Response<A>, Status> {
        let response = self.send_call(method, request).await?;
        let what = || format!("{method} answer");
        self.unary_answer(response, |response| result_of(response, what))
            .await
    }

    /// A streaming call as its 1.0 `method`: the agent's SSE events, each
    /// encoded as a `StreamResponse`; an error event ends the stream with
    /// its status.
    async fn streamed_call<Q: Serialize + Tenanted>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<tonic::Response<Answers>, Status> {
        let response = self.send_call(method, request).await?;
        let whole = |response| result_of(response, || "StreamResponse".into());
        // Each event's data is a JSON-RPC answer.
        let event = |answer| answer_result(answer, None).and_then(stream_item);
        self.stream_answer(response, whole, event).await
    }
}

/// The agent a call's tenant names, `agents/{name}` (what an agent's own
/// card at `/agents/{name}` gives gRPC clients to echo, gRPC having no
/// path): the call goes to that agent, as a JSON-RPC call to
/// `/agents/{name}` does, with the rest of the tenant (the agent's own)
/// or none. Any other tenant is the agent's, and stays.
fn agent_named(state: &AppState, tenant: &mut String) -> Result<Option<usize>, Status> {
    if let Err(why) = crate::a2a::validate::tenant(tenant) {
        let refused = crate::http::error::GatewayError::InvalidParams(why);
        return Err(status_from_row(refused.mapped(), refused.to_string(), None));
    }
    let Some(named) = tenant.strip_prefix("agents/") else {
        return Ok(None);
    };
    let (name, own) = named.split_once('/').unwrap_or((named, ""));
    let Some(index) = state.router.index(name) else {
        let name: String = name.chars().take(128).collect();
        let why = format!("tenant 'agents/{name}': no agent here has that name");
        return Err(Status::not_found(why));
    };
    // An empty tenant is not written at all (ProtoJSON leaves out defaults).
    *tenant = own.to_string();
    Ok(Some(index))
}

/// The 1.0 request messages: each says its tenant.
trait Tenanted {
    fn tenant(&mut self) -> &mut String;
}

macro_rules! tenanted {
    ($($message:ty),* $(,)?) => {$(
        impl Tenanted for $message {
            fn tenant(&mut self) -> &mut String {
                &mut self.tenant
            }
        }
    )*};
}

tenanted!(
    v1::SendMessageRequest,
    v1::GetTaskRequest,
    v1::ListTasksRequest,
    v1::CancelTaskRequest,
    v1::SubscribeToTaskRequest,
    v1::TaskPushNotificationConfig,
    v1::GetTaskPushNotificationConfigRequest,
    v1::ListTaskPushNotificationConfigsRequest,
    v1::DeleteTaskPushNotificationConfigRequest,
    v1::GetExtendedAgentCardRequest,
);

/// A whole JSON-RPC answer's result read as `A` (`what` it should be),
/// or its error as a gRPC status. The result is read straight from the
/// answer's text into `A`, with no JSON tree between (a bridged call's
/// answer, every call). The gateway's own refusal carries its row of the
/// table; an agent's error is looked up by its code.
async fn result_of<A: DeserializeOwned>(
    response: Response<Body>,
    what: impl FnOnce() -> String,
) -> Result<A, Status> {
    let own = response.extensions().get::<Mapped>().copied();
    let text = read_whole(response.into_body()).await?;
    let answer = match text.iter().find(|b| !b.is_ascii_whitespace()) {
        None => AnswerText::default(),
        Some(b'{') => serde_json::from_slice::<AnswerText<'_>>(&text).map_err(not_json)?,
        Some(_) => {
            let why = "the agent's answer is not a JSON-RPC answer (an object)".into();
            return Err(status_from_code(-32006, why, None));
        }
    };
    let Some(result) = answer.result else {
        return Err(match answer.error {
            Some(error) => error_status(error, own),
            None => {
                let why = "the agent's answer has neither a result nor an error".into();
                status_from_code(-32006, why, None)
            }
        });
    };
    serde_json::from_str::<A>(result.get()).map_err(|e| {
        let what = what();
        let why = format!("the agent's answer is not a valid {what}: {e}");
        status_from_code(-32006, why, None)
    })
}

/// A JSON-RPC answer with its result left as text.
#[derive(Default, serde::Deserialize)]
struct AnswerText<'a> {
    /// There (`null` included) or not.
    #[serde(borrow, default, deserialize_with = "crate::a2a::jsonrpc::present")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
}

/// The result of a JSON-RPC answer, or its error as a gRPC status (`own`:
/// the gateway's row for its own error).
fn answer_result(mut answer: Value, own: Option<Mapped>) -> Result<Value, Status> {
    if let Some(result) = answer.get_mut("result") {
        return Ok(result.take());
    }
    let error = answer.get_mut("error").map(Value::take);
    Err(error_status(error.unwrap_or(Value::Null), own))
}

/// A JSON-RPC error as a gRPC status (`own`: the gateway's row for its own
/// error).
fn error_status(error: Value, own: Option<Mapped>) -> Status {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = (error.get("message").and_then(Value::as_str))
        .unwrap_or("the call failed")
        .to_string();
    let mapped = own.unwrap_or_else(|| for_code(code));
    status_from_row(mapped, message, error.get("data"))
}

/// A server stream's answers.
type Answers = metadata::Answers<v1::StreamResponse>;

/// One stream result as a `StreamResponse`.
fn stream_item(result: Value) -> Result<v1::StreamResponse, Status> {
    serde_json::from_value(result).map_err(|e| {
        let why = format!("the agent's stream event is not a valid StreamResponse: {e}");
        status_from_code(-32006, why, None)
    })
}

/// The 1.0 service's RPCs from their rows: each unary RPC is its 1.0
/// method with its answer message, each streaming RPC its method's
/// `StreamResponse`s, and an RPC that answers `Empty` reads nothing back.
macro_rules! service_v1 {
    (
        unary { $($rpc:ident($q:ty) -> $a:ty = $method:literal;)* }
        stream { $($srpc:ident($sq:ty) as $stream:ident = $smethod:literal;)* }
        empty { $($erpc:ident($eq:ty) = $emethod:literal;)* }
    ) => {
        #[tonic::async_trait]
        impl v1::a2a_service_server::A2aService for GrpcCall {
            $(async fn $rpc(
                &self,
                request: tonic::Request<$q>,
            ) -> Result<tonic::Response<$a>, Status> {
                self.unary_call($method, request).await
            })*

            $(type $stream = Answers;

            async fn $srpc(
                &self,
                request: tonic::Request<$sq>,
            ) -> Result<tonic::Response<Answers>, Status> {
                self.streamed_call($smethod, request).await
            })*

            $(async fn $erpc(
                &self,
                request: tonic::Request<$eq>,
            ) -> Result<tonic::Response<pbjson_types::Empty>, Status> {
                // The JSON-RPC result is null (or an empty object).
                self.unary_call::<_, Value>($emethod, request).await?;
                Ok(tonic::Response::new(pbjson_types::Empty::default()))
            })*
        }
    };
}

service_v1! {
    unary {
        send_message(v1::SendMessageRequest) -> v1::SendMessageResponse = "SendMessage";
        get_task(v1::GetTaskRequest) -> v1::Task = "GetTask";
        list_tasks(v1::ListTasksRequest) -> v1::ListTasksResponse = "ListTasks";
        cancel_task(v1::CancelTaskRequest) -> v1::Task = "CancelTask";
        create_task_push_notification_config(v1::TaskPushNotificationConfig)
            -> v1::TaskPushNotificationConfig = "CreateTaskPushNotificationConfig";
        get_task_push_notification_config(v1::GetTaskPushNotificationConfigRequest)
            -> v1::TaskPushNotificationConfig = "GetTaskPushNotificationConfig";
        list_task_push_notification_configs(v1::ListTaskPushNotificationConfigsRequest)
            -> v1::ListTaskPushNotificationConfigsResponse = "ListTaskPushNotificationConfigs";
        get_extended_agent_card(v1::GetExtendedAgentCardRequest)
            -> v1::AgentCard = "GetExtendedAgentCard";
    }
    stream {
        send_streaming_message(v1::SendMessageRequest)
            as SendStreamingMessageStream = "SendStreamingMessage";
        subscribe_to_task(v1::SubscribeToTaskRequest)
            as SubscribeToTaskStream = "SubscribeToTask";
    }
    empty {
        delete_task_push_notification_config(v1::DeleteTaskPushNotificationConfigRequest)
            = "DeleteTaskPushNotificationConfig";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    async fn read<A: DeserializeOwned>(answer: &str) -> Result<A, Status> {
        let response = Response::new(crate::http::body::full(answer.to_string()));
        result_of(response, || "SendMessage answer".into()).await
    }

    #[tokio::test]
    async fn a_result_is_read_as_the_answer_message() {
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1",
            "status":{"state":"TASK_STATE_COMPLETED"}}}}"#;
        let sent: v1::SendMessageResponse = read(answer).await.unwrap();
        let Some(v1::send_message_response::Payload::Task(task)) = sent.payload else {
            panic!("no task in {sent:?}");
        };
        assert_eq!((task.id.as_str(), task.context_id.as_str()), ("t1", "c1"));
        assert_eq!(task.status.unwrap().state, v1::TaskState::Completed as i32);
        // A null result is a result (DeleteTaskPushNotificationConfig's).
        let null: Value = read(r#"{"jsonrpc":"2.0","id":1,"result":null}"#)
            .await
            .unwrap();
        assert_eq!(null, Value::Null);
    }

    #[tokio::test]
    async fn an_error_is_the_status_its_code_names() {
        let answer = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no task t9"}}"#;
        let status = read::<v1::Task>(answer).await.unwrap_err();
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "no task t9");
    }

    #[tokio::test]
    async fn an_answer_that_is_not_one_is_the_agents_failure() {
        let cases = [
            ("{not json", "is not JSON"),
            ("[1, 2]", "not a JSON-RPC answer"),
            (r#"{"result":{"task":7}}"#, "not a valid SendMessage answer"),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                "neither a result nor an error",
            ),
            ("  ", "neither a result nor an error"),
        ];
        for (answer, why) in cases {
            let status = read::<v1::SendMessageResponse>(answer).await.unwrap_err();
            assert_eq!(status.code(), Code::Unavailable, "{answer}: {status:?}");
            assert!(status.message().contains(why), "{answer}: {status:?}");
        }
    }
}

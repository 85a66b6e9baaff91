//! The gRPC front door (A2A 1.0, `lf.a2a.v1.A2AService`). tonic's
//! generated server reads the request (framing, size limit, decoding,
//! unknown methods) and writes the answer (framing, trailers, a
//! trailers-only status for an error). Between them, each call goes the
//! JSON-RPC call's way as the 1.0 JSON-RPC call it is: its message's
//! ProtoJSON is the call's params, its metadata the call's headers. The
//! JSON-RPC answer's result is read back into the RPC's answer message; an
//! error becomes the gRPC status the one table names
//! (`crate::http::error::table`), with a `google.rpc.ErrorInfo` detail.
//!
//! The two streaming RPCs are the agent's SSE events, each said as a
//! `StreamResponse`. A tenant `agents/{name}` names the agent, as the path
//! `/agents/{name}` does for the other bindings. A `grpc-timeout` bounds
//! the whole call, a stream included: past it, DEADLINE_EXCEEDED. Not yet
//! served: the 0.3 service (answered UNIMPLEMENTED, saying so).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use http::{header, HeaderMap, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::grpc_serve::{said, serve_with};
use crate::a2a::grpc::v1;
use crate::bridge::events::map_event_data;
use crate::http::body::Body;
use crate::http::error::table::{for_code, Mapped};
use crate::state::{AppState, ConnInfo};

/// The JSON-RPC answer to a call is read whole up to this size.
const MAX_ANSWER: usize = super::whole::MAX_ANSWER;

/// The domain of the `google.rpc.ErrorInfo` details (spec §5.4).
const DOMAIN: &str = "a2a-protocol.org";

/// Serves one gRPC request (`content-type: application/grpc`).
pub async fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.version() != http::Version::HTTP_2 {
        let why = "gRPC needs HTTP/2 (h2c in plaintext, or h2 by ALPN over TLS)";
        return said(Status::invalid_argument(why).into_http());
    }
    let path = request.uri().path();
    let service = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match service {
        v1::a2a_service_server::SERVICE_NAME => {}
        tonic_health::pb::health_server::SERVICE_NAME => {
            return serve_with(super::grpc_health::server(state), request).await;
        }
        super::grpc_reflection::V1 => return super::grpc_reflection::serve(request, false).await,
        super::grpc_reflection::V1ALPHA => {
            return super::grpc_reflection::serve(request, true).await
        }
        _ => {
            let service: String = service.chars().take(128).collect();
            let why = format!(
                "service '{service}' is not served here; the A2A 1.0 service is {}",
                v1::a2a_service_server::SERVICE_NAME
            );
            return said(Status::unimplemented(why).into_http());
        }
    }
    let limit = state.config.limits.max_body_bytes;
    let deadline = match deadline(request.headers()) {
        Ok(deadline) => deadline,
        Err(why) => return said(Status::invalid_argument(why).into_http()),
    };
    let front = Front {
        state,
        conn: conn.clone(),
        deadline,
    };
    let server = v1::a2a_service_server::A2aServiceServer::new(front)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(MAX_ANSWER);
    serve_with(server, request).await
}

/// The deadline a call's `grpc-timeout` sets (`None`: none sent): up to
/// 8 digits and a unit, `H`, `M`, `S`, `m` (ms), `u` (µs) or `n` (ns).
fn deadline(headers: &HeaderMap) -> Result<Option<tokio::time::Instant>, String> {
    let Some(value) = headers.get("grpc-timeout") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("");
    let bad = || {
        format!(
            "grpc-timeout '{}' is not 1 to 8 digits and a unit (H, M, S, m, u, n)",
            text.escape_default()
        )
    };
    let split = text
        .len()
        .checked_sub(1)
        .filter(|&n| (1..=8).contains(&n))
        .ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let amount: u64 = (digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .ok_or_else(bad)?;
    let within = match unit {
        "H" => std::time::Duration::from_secs(amount * 3600),
        "M" => std::time::Duration::from_secs(amount * 60),
        "S" => std::time::Duration::from_secs(amount),
        "m" => std::time::Duration::from_millis(amount),
        "u" => std::time::Duration::from_micros(amount),
        "n" => std::time::Duration::from_nanos(amount),
        _ => return Err(bad()),
    };
    Ok(Some(tokio::time::Instant::now() + within))
}

/// The status of a call past its client's deadline.
fn past_deadline() -> Status {
    Status::deadline_exceeded("the call's grpc-timeout passed before its answer was whole")
}

/// One gRPC call's way into the gateway.
struct Front {
    state: Arc<AppState>,
    conn: ConnInfo,
    /// From `grpc-timeout`: past it the call is abandoned, DEADLINE_EXCEEDED.
    deadline: Option<tokio::time::Instant>,
}

impl Front {
    /// The call, said as its JSON-RPC 1.0 `method`, through the gateway:
    /// its JSON-RPC answer.
    async fn call<Q: Serialize>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<Response<Body>, Status> {
        let (metadata, _, message) = request.into_parts();
        let mut params = serde_json::to_value(&message)
            .map_err(|e| Status::internal(format!("the request could not be said as JSON: {e}")))?;
        let agent = agent_named(&self.state, &mut params)?;
        let call =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = Request::new(Bytes::from(call.to_string()));
        *request.headers_mut() = headers(metadata.into_headers());
        let served = super::handle_grpc(self.state.clone(), &self.conn, request, agent);
        match self.deadline {
            Some(deadline) => {
                (tokio::time::timeout_at(deadline, served).await).map_err(|_| past_deadline())
            }
            None => Ok(served.await),
        }
    }

    /// The call as its JSON-RPC 1.0 `method`, its answer read back as `A`.
    async fn unary<Q: Serialize, A: DeserializeOwned>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<tonic::Response<A>, Status> {
        let response = self.call(method, request).await?;
        let result = match self.deadline {
            Some(deadline) => (tokio::time::timeout_at(deadline, result_of(response)).await)
                .map_err(|_| past_deadline())??,
            None => result_of(response).await?,
        };
        let read = serde_json::from_value::<A>(result).map_err(|e| {
            let why = format!("the agent's answer to {method} is not a valid {method} answer: {e}");
            status_for(-32006, why, None)
        })?;
        Ok(tonic::Response::new(read))
    }
}

/// The agent a call's tenant names, `agents/{name}` (what an agent's own
/// card at `/agents/{name}` gives gRPC clients to echo, gRPC having no
/// path): the call goes to that agent, as a JSON-RPC call to
/// `/agents/{name}` does, with the rest of the tenant (the agent's own)
/// or none. Any other tenant is the agent's, and stays.
fn agent_named(state: &AppState, params: &mut Value) -> Result<Option<usize>, Status> {
    let Some(tenant) = params.get("tenant").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some(named) = tenant.strip_prefix("agents/") else {
        return Ok(None);
    };
    let (name, own) = named.split_once('/').unwrap_or((named, ""));
    let Some(index) = state.router.index(name) else {
        let name: String = name.chars().take(128).collect();
        let why = format!("tenant 'agents/{name}': no agent here has that name");
        return Err(Status::not_found(why));
    };
    let own = own.to_string();
    if let Some(params) = params.as_object_mut() {
        match own.is_empty() {
            true => params.remove("tenant"),
            false => params.insert("tenant".into(), Value::String(own)),
        };
    }
    Ok(Some(index))
}

/// The call's headers from its metadata: what is gRPC's own goes, the
/// rest (credentials, `a2a-version`, `a2a-extensions`, `a2a-skill`,
/// `traceparent`, …) is kept as a JSON-RPC call's headers would be.
fn headers(mut headers: HeaderMap) -> HeaderMap {
    let grpc: Vec<_> = (headers.keys())
        .filter(|name| name.as_str().starts_with("grpc-") || *name == header::TE)
        .cloned()
        .collect();
    for name in grpc {
        headers.remove(name);
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    // A gRPC call to this service is a 1.0 call, said or not.
    (headers.entry("a2a-version")).or_insert(HeaderValue::from_static("1.0"));
    headers
}

/// The JSON-RPC answer, read whole (bounded).
async fn read_answer(mut body: Body) -> Result<Value, Status> {
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(status_for(
                -32052,
                "the agent's answer broke off".into(),
                None,
            ));
        };
        if let Some(data) = frame.data_ref() {
            if bytes.len() + data.len() > MAX_ANSWER {
                let why = format!("the agent's answer is over {MAX_ANSWER} bytes");
                return Err(status_for(-32052, why, None));
            }
            bytes.extend_from_slice(data);
        }
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| status_for(-32006, format!("the agent's answer is not JSON: {e}"), None))
}

/// A whole JSON-RPC answer's result, or its error as a gRPC status. The
/// gateway's own refusal carries its row of the table; an agent's error is
/// looked up by its code.
async fn result_of(response: Response<Body>) -> Result<Value, Status> {
    let own = response.extensions().get::<Mapped>().copied();
    let answer = read_answer(response.into_body()).await?;
    answer_result(answer, own)
}

/// The result of a JSON-RPC answer, or its error as a gRPC status (`own`:
/// the gateway's row for its own error).
fn answer_result(mut answer: Value, own: Option<Mapped>) -> Result<Value, Status> {
    if let Some(result) = answer.get_mut("result") {
        return Ok(result.take());
    }
    let error = answer.get("error").cloned().unwrap_or(Value::Null);
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = (error.get("message").and_then(Value::as_str))
        .unwrap_or("the call failed")
        .to_string();
    let mapped = own.unwrap_or_else(|| for_code(code));
    Err(status_of(mapped, message, error.get("data")))
}

/// A JSON-RPC error code as the gRPC status the one table names.
fn status_for(code: i64, message: String, data: Option<&Value>) -> Status {
    status_of(for_code(code), message, data)
}

/// An error as its row says it in gRPC, with its `google.rpc.ErrorInfo`
/// (the error's data, when it is an object, as its metadata).
fn status_of(mapped: Mapped, message: String, data: Option<&Value>) -> Status {
    let metadata: std::collections::HashMap<String, String> = data
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let details = ErrorDetails::with_error_info(mapped.reason, DOMAIN, metadata);
    Status::with_error_details(code_named(mapped.grpc), message, details)
}

/// The gRPC codes by their canonical names (the table's spelling).
const CODES: [(&str, Code); 17] = [
    ("OK", Code::Ok),
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

/// The gRPC code of a canonical code name.
fn code_named(name: &str) -> Code {
    (CODES.iter().find(|(n, _)| *n == name)).map_or(Code::Unknown, |(_, code)| *code)
}

/// The canonical name of a gRPC code.
pub(super) fn code_name(code: Code) -> &'static str {
    (CODES.iter().find(|(_, c)| *c == code)).map_or("UNKNOWN", |(name, _)| name)
}

/// A server stream's answers.
type Answers = std::pin::Pin<Box<dyn Stream<Item = Result<v1::StreamResponse, Status>> + Send>>;

impl Front {
    /// A streaming call as its JSON-RPC 1.0 `method`: the agent's SSE
    /// events, each said as a `StreamResponse`. A refusal before the
    /// stream starts is the call's status; an error event ends the stream
    /// with its status.
    async fn streamed<Q: Serialize>(
        &self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<tonic::Response<Answers>, Status> {
        let response = self.call(method, request).await?;
        if !super::relay::is_event_stream(response.headers()) {
            // A refusal, or an agent that answered the stream at once.
            let item = stream_item(result_of(response).await?);
            return Ok(tonic::Response::new(Box::pin(futures_util::stream::iter(
                [item],
            ))));
        }
        let events: Answers = Box::pin(events(response.into_body()));
        Ok(tonic::Response::new(match self.deadline {
            Some(deadline) => bounded(events, deadline),
            None => events,
        }))
    }
}

/// A stream that ends with DEADLINE_EXCEEDED at `deadline`.
fn bounded(events: Answers, deadline: tokio::time::Instant) -> Answers {
    use futures_util::StreamExt;
    Box::pin(futures_util::stream::unfold(
        Some(events),
        move |events| async move {
            let mut events = events?;
            tokio::select! {
                item = events.next() => item.map(|item| (item, Some(events))),
                _ = tokio::time::sleep_until(deadline) => Some((Err(past_deadline()), None)),
            }
        },
    ))
}

/// A stream's SSE events (the relay hands over whole events), each as a
/// `StreamResponse`; the stream ends after an error.
fn events(body: Body) -> impl Stream<Item = Result<v1::StreamResponse, Status>> + Send {
    let start = Some((body, std::collections::VecDeque::new()));
    futures_util::stream::unfold(start, |state| async move {
        let (mut body, mut pending) = state?;
        loop {
            if let Some(item) = pending.pop_front() {
                let next = match &item {
                    Ok(_) => Some((body, pending)),
                    Err(_) => None,
                };
                return Some((item, next));
            }
            match body.frame().await {
                None => return None,
                Some(Err(_)) => {
                    let broken = status_for(-32053, "the agent's stream broke off".into(), None);
                    return Some((Err(broken), None));
                }
                Some(Ok(frame)) => {
                    if let Some(events) = frame.data_ref() {
                        pending.extend(event_items(events));
                    }
                }
            }
        }
    })
}

/// The answers in whole SSE events: each event's data is a JSON-RPC answer.
fn event_items(events: &[u8]) -> Vec<Result<v1::StreamResponse, Status>> {
    let mut items = Vec::new();
    let _ = map_event_data::<std::convert::Infallible>(events, |data| {
        let item = match serde_json::from_slice::<Value>(data) {
            Ok(answer) => answer_result(answer, None).and_then(stream_item),
            Err(e) => Err(status_for(
                -32006,
                format!("an event is not JSON: {e}"),
                None,
            )),
        };
        items.push(item);
        Ok((None, Vec::new()))
    });
    items
}

/// One stream result as a `StreamResponse`.
fn stream_item(result: Value) -> Result<v1::StreamResponse, Status> {
    serde_json::from_value(result).map_err(|e| {
        let why = format!("the agent's stream event is not a valid StreamResponse: {e}");
        status_for(-32006, why, None)
    })
}

#[tonic::async_trait]
impl v1::a2a_service_server::A2aService for Front {
    async fn send_message(
        &self,
        request: tonic::Request<v1::SendMessageRequest>,
    ) -> Result<tonic::Response<v1::SendMessageResponse>, Status> {
        self.unary("SendMessage", request).await
    }

    type SendStreamingMessageStream = Answers;

    async fn send_streaming_message(
        &self,
        request: tonic::Request<v1::SendMessageRequest>,
    ) -> Result<tonic::Response<Answers>, Status> {
        self.streamed("SendStreamingMessage", request).await
    }

    async fn get_task(
        &self,
        request: tonic::Request<v1::GetTaskRequest>,
    ) -> Result<tonic::Response<v1::Task>, Status> {
        self.unary("GetTask", request).await
    }

    async fn list_tasks(
        &self,
        request: tonic::Request<v1::ListTasksRequest>,
    ) -> Result<tonic::Response<v1::ListTasksResponse>, Status> {
        self.unary("ListTasks", request).await
    }

    async fn cancel_task(
        &self,
        request: tonic::Request<v1::CancelTaskRequest>,
    ) -> Result<tonic::Response<v1::Task>, Status> {
        self.unary("CancelTask", request).await
    }

    type SubscribeToTaskStream = Answers;

    async fn subscribe_to_task(
        &self,
        request: tonic::Request<v1::SubscribeToTaskRequest>,
    ) -> Result<tonic::Response<Answers>, Status> {
        self.streamed("SubscribeToTask", request).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: tonic::Request<v1::TaskPushNotificationConfig>,
    ) -> Result<tonic::Response<v1::TaskPushNotificationConfig>, Status> {
        self.unary("CreateTaskPushNotificationConfig", request)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: tonic::Request<v1::GetTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<v1::TaskPushNotificationConfig>, Status> {
        self.unary("GetTaskPushNotificationConfig", request).await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: tonic::Request<v1::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<tonic::Response<v1::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary("ListTaskPushNotificationConfigs", request).await
    }

    async fn get_extended_agent_card(
        &self,
        request: tonic::Request<v1::GetExtendedAgentCardRequest>,
    ) -> Result<tonic::Response<v1::AgentCard>, Status> {
        self.unary("GetExtendedAgentCard", request).await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: tonic::Request<v1::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<pbjson_types::Empty>, Status> {
        // The JSON-RPC result is null (or an empty object): nothing to read.
        self.unary::<_, Value>("DeleteTaskPushNotificationConfig", request)
            .await?;
        Ok(tonic::Response::new(pbjson_types::Empty::default()))
    }
}

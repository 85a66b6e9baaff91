//! The gRPC front door of A2A 0.3 (`a2a.v1.A2AService`, the package the
//! 0.3 SDKs use). 0.3's HTTP+JSON binding is this service transcoded (its
//! proto's `google.api.http` routes), so each call is encoded as the 0.3
//! REST call its route gives: the message's ProtoJSON is the body, its
//! resource names (`tasks/{id}`, `tasks/{id}/pushNotificationConfigs/{c}`)
//! the path. It then goes the 0.3 REST call's way (`crate::ingress::rest`,
//! `crate::bridge::v03::rest`), and its REST answer is read back into the
//! RPC's answer message; a `google.rpc.Status` becomes the gRPC status,
//! its ErrorInfo kept. Streams are the REST stream's events, one message
//! each. 0.3 has no tenant: a 0.3 gRPC call names an agent only by the
//! `a2a-agent` metadata; else it is routed as a call to the root is.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response};
use hyper::body::Incoming;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tonic::Status;

use super::metadata::{read_json, Answers};
use super::serve::{serve_call, GrpcCall};
use crate::a2a::grpc::v03;
use crate::http::body::Body;
use crate::http::error::grpc::{status_from_code, status_from_rest};
use crate::state::{AppState, ConnInfo};

/// Serves one call to the 0.3 service.
pub(crate) async fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    deadline: Option<tokio::time::Instant>,
) -> Response<Body> {
    let server = |call, limit| {
        v03::a2a_service_server::A2aServiceServer::new(call)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(super::metadata::MAX_ANSWER)
    };
    serve_call(state, conn, request, deadline, server).await
}

/// A 0.3 REST call: its method, path (and query) under `/v1`, and body.
struct Rest {
    method: Method,
    path: String,
    body: Option<Value>,
}

impl Rest {
    fn new(method: Method, path: String) -> Self {
        Rest {
            method,
            path,
            body: None,
        }
    }

    fn with<M: Serialize>(mut self, message: &M) -> Result<Self, Status> {
        let body = serde_json::to_value(message).map_err(|e| {
            Status::internal(format!("the request could not be encoded as JSON: {e}"))
        })?;
        self.body = Some(body);
        Ok(self)
    }
}

/// The id in a resource name `tasks/{id}` (`what` names the field), as a
/// path segment.
fn task_of(name: &str, what: &str) -> Result<String, Status> {
    match name.strip_prefix("tasks/") {
        Some(id) if !id.is_empty() && !id.contains('/') => Ok(segment(id)),
        _ => Err(Status::invalid_argument(format!(
            "{what} '{}' is not tasks/{{id}}",
            name.escape_default()
        ))),
    }
}

/// The task and config ids in `tasks/{id}/pushNotificationConfigs/{c}`.
fn config_of(name: &str) -> Result<(String, String), Status> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["tasks", task, "pushNotificationConfigs", config]
            if !task.is_empty() && !config.is_empty() =>
        {
            Ok((segment(task), segment(config)))
        }
        _ => Err(Status::invalid_argument(format!(
            "name '{}' is not tasks/{{id}}/pushNotificationConfigs/{{configId}}",
            name.escape_default()
        ))),
    }
}

fn segment(id: &str) -> String {
    utf8_percent_encode(id, NON_ALPHANUMERIC).to_string()
}

/// The 0.3 service (`a2a.v1.A2AService`): each call goes as the 0.3 REST
/// call its route gives.
impl GrpcCall {
    /// The call as its REST call, through the gateway: the REST answer.
    async fn send_as_rest<Q>(
        &self,
        request: tonic::Request<Q>,
        rest: Rest,
    ) -> Result<Response<Body>, Status> {
        let (metadata, _, _) = request.into_parts();
        let (path, query) = match rest.path.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest.path.as_str(), None),
        };
        let placed = crate::a2a::rest::place(&rest.method, path, query).map_err(|refused| {
            Status::invalid_argument(format!("{} {path}: {refused:?}", rest.method))
        })?;
        let body = match &rest.body {
            Some(body) => Bytes::from(body.to_string()),
            None => Bytes::new(),
        };
        let mut request = Request::new(body);
        *request.method_mut() = rest.method.clone();
        *request.uri_mut() = rest
            .path
            .parse()
            .map_err(|e| Status::internal(format!("'{}' is not a path: {e}", rest.path)))?;
        let mut metadata = metadata.into_headers();
        let agent = super::metadata::agent_in(&self.state, &mut metadata)?;
        let headers = request.headers_mut();
        *headers = super::metadata::headers(metadata);
        if rest.body.is_none() {
            headers.remove(header::CONTENT_TYPE);
        } else {
            crate::http::body::set_json(headers);
        }
        let sent = crate::egress::grpc::GrpcRequest {
            path: self.path.clone(),
            frames: self.frames.clone(),
            deadline: self.deadline,
        };
        request.extensions_mut().insert(sent);
        let served = crate::ingress::handle_rest_read(
            self.state.clone(),
            &self.conn,
            request,
            agent,
            placed,
        );
        self.within(served).await
    }

    /// A unary call: the REST answer read back as `A`.
    async fn unary_as_rest<Q, A: DeserializeOwned + Default>(
        &self,
        request: tonic::Request<Q>,
        rest: Rest,
    ) -> Result<tonic::Response<A>, Status> {
        let response = self.send_as_rest(request, rest).await?;
        self.unary_answer(response, rest_answer).await
    }

    /// A streaming call: the REST stream's events, each a `StreamResponse`
    /// or the status that ends it.
    async fn streamed_as_rest<Q>(
        &self,
        request: tonic::Request<Q>,
        rest: Rest,
    ) -> Result<tonic::Response<Answers<v03::StreamResponse>>, Status> {
        let response = self.send_as_rest(request, rest).await?;
        let event = |answer| answer_of(answer, true);
        self.stream_answer(response, rest_answer, event).await
    }
}

/// A whole REST answer read as `A`.
async fn rest_answer<A: DeserializeOwned>(response: Response<Body>) -> Result<A, Status> {
    let ok = response.status().is_success();
    let answer = read_json(response.into_body()).await?;
    answer_of(answer, ok)
}

/// A whole REST answer: the message, or its `google.rpc.Status`.
fn answer_of<A: DeserializeOwned>(answer: Value, ok: bool) -> Result<A, Status> {
    if !ok || answer.get("error").is_some_and(Value::is_object) {
        return Err(status_from_rest(&answer).unwrap_or_else(|| {
            status_from_code(
                -32603,
                format!("an answer that is not a status: {answer}"),
                None,
            )
        }));
    }
    serde_json::from_value(answer).map_err(|e| {
        let why = format!("the agent's answer is not a valid 0.3 message: {e}");
        status_from_code(-32006, why, None)
    })
}

type Stream03 = Answers<v03::StreamResponse>;

/// The 0.3 service's RPCs from their rows: each RPC's request `$m` is the
/// REST call its row writes; a unary RPC answers its message, a streaming
/// one the REST stream's events, and one that answers `Empty` reads
/// nothing back.
macro_rules! service_v03 {
    (
        unary { $($rpc:ident($m:ident: $q:ty) -> $a:ty = $rest:expr;)* }
        stream { $($srpc:ident($sm:ident: $sq:ty) as $stream:ident = $srest:expr;)* }
        empty { $($erpc:ident($em:ident: $eq:ty) = $erest:expr;)* }
    ) => {
        #[tonic::async_trait]
        impl v03::a2a_service_server::A2aService for GrpcCall {
            $(async fn $rpc(
                &self,
                request: tonic::Request<$q>,
            ) -> Result<tonic::Response<$a>, Status> {
                let $m = request.get_ref();
                let rest = $rest?;
                self.unary_as_rest(request, rest).await
            })*

            $(type $stream = Stream03;

            async fn $srpc(
                &self,
                request: tonic::Request<$sq>,
            ) -> Result<tonic::Response<Stream03>, Status> {
                let $sm = request.get_ref();
                let rest = $srest?;
                self.streamed_as_rest(request, rest).await
            })*

            $(async fn $erpc(
                &self,
                request: tonic::Request<$eq>,
            ) -> Result<tonic::Response<pbjson_types::Empty>, Status> {
                let $em = request.get_ref();
                let rest = $erest?;
                self.unary_as_rest::<_, Value>(request, rest).await?;
                Ok(tonic::Response::new(pbjson_types::Empty::default()))
            })*
        }
    };
}

service_v03! {
    unary {
        send_message(m: v03::SendMessageRequest) -> v03::SendMessageResponse =
            Rest::new(Method::POST, "/v1/message:send".into()).with(m);
        get_task(m: v03::GetTaskRequest) -> v03::Task = get_task(m);
        cancel_task(m: v03::CancelTaskRequest) -> v03::Task =
            task_of(&m.name, "name").map(|t| Rest::new(Method::POST, format!("/v1/tasks/{t}:cancel")));
        create_task_push_notification_config(m: v03::CreateTaskPushNotificationConfigRequest)
            -> v03::TaskPushNotificationConfig = task_of(&m.parent, "parent")
            .map(|t| Rest::new(Method::POST, format!("/v1/tasks/{t}/pushNotificationConfigs")))
            .and_then(|rest| rest.with(m));
        get_task_push_notification_config(m: v03::GetTaskPushNotificationConfigRequest)
            -> v03::TaskPushNotificationConfig = config_rest(Method::GET, &m.name);
        list_task_push_notification_config(m: v03::ListTaskPushNotificationConfigRequest)
            -> v03::ListTaskPushNotificationConfigResponse = task_of(&m.parent, "parent")
            .map(|t| Rest::new(Method::GET, format!("/v1/tasks/{t}/pushNotificationConfigs")));
        get_agent_card(_m: v03::GetAgentCardRequest) -> v03::AgentCard =
            Ok::<_, Status>(Rest::new(Method::GET, "/v1/card".into()));
    }
    stream {
        send_streaming_message(m: v03::SendMessageRequest) as SendStreamingMessageStream =
            Rest::new(Method::POST, "/v1/message:stream".into()).with(m);
        task_subscription(m: v03::TaskSubscriptionRequest) as TaskSubscriptionStream =
            task_of(&m.name, "name").map(|t| Rest::new(Method::GET, format!("/v1/tasks/{t}:subscribe")));
    }
    empty {
        delete_task_push_notification_config(m: v03::DeleteTaskPushNotificationConfigRequest) =
            config_rest(Method::DELETE, &m.name);
    }
}

/// `GetTask`: the task's path, with the history length when asked.
fn get_task(asked: &v03::GetTaskRequest) -> Result<Rest, Status> {
    let mut path = format!("/v1/tasks/{}", task_of(&asked.name, "name")?);
    if asked.history_length > 0 {
        path.push_str(&format!("?historyLength={}", asked.history_length));
    }
    Ok(Rest::new(Method::GET, path))
}

/// A call on one push config, `tasks/{id}/pushNotificationConfigs/{c}`.
fn config_rest(method: Method, name: &str) -> Result<Rest, Status> {
    let (task, config) = config_of(name)?;
    let path = format!("/v1/tasks/{task}/pushNotificationConfigs/{config}");
    Ok(Rest::new(method, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_become_path_segments() {
        assert_eq!(task_of("tasks/t 1", "name").unwrap(), "t%201");
        assert!(task_of("task/t", "name").is_err());
        assert!(task_of("tasks/", "name").is_err());
        assert!(task_of("tasks/a/b", "name").is_err());
        assert_eq!(
            config_of("tasks/t/pushNotificationConfigs/c").unwrap(),
            ("t".to_string(), "c".to_string())
        );
        assert!(config_of("tasks/t/pushNotificationConfigs").is_err());
    }

    #[test]
    fn a_rest_status_is_the_grpc_status() {
        use tonic_types::StatusExt;
        let status = serde_json::json!({"error": {"code": 404, "status": "NOT_FOUND",
            "message": "no task t", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org", "metadata": {"id": "t"}}]}});
        let encoded = answer_of::<v03::Task>(status, false).unwrap_err();
        assert_eq!(encoded.code(), tonic::Code::NotFound);
        assert_eq!(encoded.message(), "no task t");
        let info = encoded.get_details_error_info().unwrap();
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.metadata.get("id").map(String::as_str), Some("t"));
    }
}

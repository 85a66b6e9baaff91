//! A call to an agent that does not speak the client's A2A version: the
//! plan (`crate::bridge::plan`), the request written in the agent's version,
//! and the answer translated back into the client's, whole or event by event.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{header, Response};
use serde_json::value::RawValue;
use serde_json::Value;

use super::validated::Call;
use crate::a2a::dialect::Versions;
use crate::a2a::{seen, Family, Method, Version};
use crate::bridge::answer::{response, Answering};
use crate::bridge::events::EventTranslator;
use crate::bridge::{self, AgentTask, Plan};
use crate::http::body::{self, Body};
use crate::http::error::GatewayError;
use crate::limits::concurrency::Permits;
use crate::relay::sse::Rewrite;
use crate::routing::request::task_ref;
use crate::state::AppState;

/// How one call is translated, both ways.
pub(super) struct Bridged {
    pub(super) answering: Answering,
}

/// The bridge for this call to an agent that speaks `versions` through the
/// door the call takes, or `None` to pass it through.
pub(super) fn plan(
    state: &AppState,
    call: &Call<'_>,
    versions: Versions,
    owner: &str,
) -> Result<Option<Bridged>, GatewayError> {
    let method = call.method;
    let client_task = || task_ref(method, call.params).map(|t| t.id);
    let client = client_version(state, method, client_task);
    match bridge::plan(client, method.family, owner, versions) {
        Plan::Pass => Ok(None),
        Plan::Refuse(why) => Err(GatewayError::UnsupportedOperation(why)),
        Plan::Translate(agent) => Ok(Some(Bridged {
            answering: Answering {
                family: method.family,
                client,
                agent,
                client_task: (client == Version::V0_1).then(client_task).flatten(),
                id: call.id.map(ToOwned::to_owned),
                context: None,
            },
        })),
    }
}

/// `tasks/get`, `tasks/cancel` and `tasks/resubscribe` are spelled alike
/// in 0.1 and 0.3: a call about a task a 0.1 client named is a 0.1 call.
fn client_version(
    state: &AppState,
    method: &Method,
    task: impl FnOnce() -> Option<String>,
) -> Version {
    let shared = matches!(
        method.family,
        Family::GetTask | Family::CancelTask | Family::Resubscribe
    );
    let named_by_0_1 = || task().is_some_and(|t| state.fleet.affinity.agent_task(&t).is_some());
    if method.version == Version::V0_3 && shared && named_by_0_1() {
        return Version::V0_1;
    }
    method.version
}

impl Bridged {
    pub(super) fn agent(&self) -> Version {
        self.answering.agent
    }

    pub(super) fn client(&self) -> Version {
        self.answering.client
    }

    /// The call's body and headers in the agent's version; an untranslatable
    /// member is the client's error (-32602, naming it).
    pub(super) fn request(
        &mut self,
        state: &AppState,
        parts: &mut Parts,
        params: Option<&RawValue>,
    ) -> Result<Bytes, GatewayError> {
        self.translated(state, parts, |a, agent_task| {
            let id = a.id.as_deref();
            let sent =
                bridge::request::translate(a.family, a.client, a.agent, id, params, agent_task)?;
            Ok((Bytes::from(sent.body), sent.context))
        })
    }

    /// The call's params and headers in the agent's version, for an agent
    /// binding that encodes the params itself (REST, gRPC).
    pub(super) fn params(
        &mut self,
        state: &AppState,
        parts: &mut Parts,
        params: Option<&RawValue>,
    ) -> Result<Value, GatewayError> {
        self.translated(state, parts, |a, agent_task| {
            let (family, client, agent) = (a.family, a.client, a.agent);
            bridge::request::translate_params(family, client, agent, params, agent_task)
        })
    }

    /// What `translate` makes of the call, with the agent's headers; the
    /// conversation it names kept for the answers.
    fn translated<T>(
        &mut self,
        state: &AppState,
        parts: &mut Parts,
        translate: impl FnOnce(&Answering, AgentTask<'_>) -> bridge::Result<(T, Option<String>)>,
    ) -> Result<T, GatewayError> {
        let affinity = &state.fleet.affinity;
        let agent_task = |id: &str| affinity.agent_task(id).map(|t| t.to_string());
        let (translated, context) = translate(&self.answering, &agent_task)
            .map_err(|e| GatewayError::InvalidParams(e.to_string()))?;
        bridge::headers::for_agent(&mut parts.headers, self.answering.agent);
        self.answering.context = context;
        Ok(translated)
    }

    /// Translates the events of a stream; a 0.1 client's task id is mapped
    /// to the agent's when the stream first names it.
    pub(super) fn events(&self, state: &Arc<AppState>) -> Rewrite {
        let learn = self.answering.client_task.clone().map(|client| {
            let state = state.clone();
            Box::new(move |agent: &str| state.fleet.affinity.learn_agent_task(&client, agent))
                as crate::bridge::events::LearnTask
        });
        let mut translator = EventTranslator::new(self.answering.clone(), learn);
        Box::new(move |events: &[u8]| {
            (translator.chunk(events)).map_err(|(encoded, why)| (encoded, why.to_string()))
        })
    }

    /// A unary answer, read whole, learned from and translated.
    pub(super) async fn answer<B>(
        self,
        upstream: Response<B>,
        state: &Arc<AppState>,
        owner: &Arc<str>,
        permits: Permits,
        skill: Option<&str>,
    ) -> Result<Response<Body>, GatewayError>
    where
        B: http_body::Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let (mut parts, body) = upstream.into_parts();
        let within = state.config.limits.sse_idle_timeout;
        let bytes = crate::relay::whole::read(body, owner, within).await?;
        drop(permits);
        state.observe_answer(&seen::from_response(&bytes), owner, skill);
        crate::upstream::headers::strip_hop_by_hop(&mut parts.headers);
        parts.version = http::Version::HTTP_11;
        let answered = match response(&bytes, &self.answering) {
            Ok(answered) => answered,
            // An agent's HTTP error that is not A2A goes as it came.
            Err(_) if !parts.status.is_success() => {
                return Ok(Response::from_parts(parts, body::full(bytes)));
            }
            Err(e) => return Err(self.invalid(owner, e.to_string())),
        };
        if let (Some(client), Some(agent)) = (&self.answering.client_task, &answered.agent_task) {
            state.fleet.affinity.learn_agent_task(client, agent);
        }
        bridge::headers::for_client(&mut parts.headers, self.answering.client);
        parts.headers.remove(header::CONTENT_LENGTH);
        crate::http::body::set_json(&mut parts.headers);
        Ok(Response::from_parts(parts, body::full(answered.body)))
    }

    fn invalid(&self, owner: &str, detail: String) -> GatewayError {
        tracing::warn!(
            upstream = owner,
            agent_version = self.answering.agent.label(),
            "untranslatable answer: {detail}"
        );
        GatewayError::InvalidAgentResponse {
            upstream: owner.to_string(),
            detail,
        }
    }
}

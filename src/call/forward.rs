//! Forwarding a routed call, the last step of the `call` stage: the plan
//! (`Forward`: pass the client's bytes through, or translate them for the
//! agent's binding and version), one request in the agent's binding, and
//! the answer handed to the relay in the form the client's binding reads.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use serde_json::value::RawValue;
use serde_json::Value;

use super::bridged;
use super::client::{ClientBinding, Decoded, RawParams};
use super::validated::{caller, Call};
use crate::a2a::dialect::Versions;
use crate::a2a::{Family, Version};
use crate::bridge::agent_binding::AgentBinding;
use crate::egress;
use crate::egress::grpc::GrpcRequest;
use crate::egress::rest::RestRequest;
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::limits::concurrency::Permits;
use crate::relay::{self, sse, GrpcPassed, RelayContext};
use crate::state::AppState;
use crate::telemetry::access::Record;
use crate::upstream::{Caller, Leased, Origin, RpcCall, Upstream};

/// How a routed call reaches its agent.
enum Forward {
    /// JSON-RPC to a JSON-RPC agent: the body as it came, or as the bridge
    /// translated it into the agent's version.
    JsonRpc,
    /// A REST call to a REST agent of its version: path and body as they
    /// came, under the agent's path.
    PassRest { path: String, request: RestRequest },
    /// A gRPC call to a gRPC agent of its service: frames as they came.
    PassGrpc { url: String, request: GrpcRequest },
    /// Any other call to a REST agent: the 1.0 JSON-RPC call, translated
    /// into the agent's version of the REST binding.
    TranslateRest { path: String },
    /// Any other call to a gRPC agent: the 1.0 JSON-RPC call, translated
    /// into the agent's version's messages.
    TranslateGrpc { url: String },
}

/// A call's plan: how it is forwarded, what the bridge translates, and
/// the versions each side speaks.
struct Plan {
    forward: Forward,
    family: Family,
    bridged: Option<bridged::Bridged>,
    client: Version,
    agent: Version,
}

/// Where a routed call goes, and what it holds until it is answered.
pub(super) struct Routed {
    pub(super) route: crate::routing::Route,
    pub(super) owner: Arc<str>,
    pub(super) permits: Permits,
}

/// Plans the call, sends it to its agent and delivers the answer.
pub(super) async fn forward(
    state: &Arc<AppState>,
    mut call: Call<'_>,
    decoded: &Decoded,
    (routed, origin): (Routed, Origin),
    record: &mut Record,
) -> Result<Response<Body>, GatewayError> {
    let Routed {
        route,
        owner,
        permits,
    } = routed;
    let config = &state.config.upstreams[route.upstream];
    let mut plan = plan(state, &mut call, config, &owner)?;
    record.versions(plan.client, Some((plan.client, plan.agent)));
    record.agent_binding = Some(plan.forward.label());
    let (method, id, client_binding) = (call.method, call.id, call.client_binding);
    let upstream = &state.upstreams[route.upstream];
    let to = (&**upstream, config, &*owner);
    let caller = caller(state, call.identity, record.trace.as_deref());
    let versions = (plan.client, plan.agent);
    let sealed = super::push::seal(state, &call, versions, record.trace.as_deref())?;
    // A JSON-RPC call passed to its agent goes as its body: with sealed
    // webhooks, that body is written again.
    let resent;
    let decoded = match (&sealed, &plan.forward, &plan.bridged, decoded) {
        (Some(params), Forward::JsonRpc, None, Decoded::JsonRpc(_)) => {
            resent = Decoded::JsonRpc(super::push::envelope(call.id, method, params)?);
            &resent
        }
        _ => decoded,
    };
    let raw_params = super::push::params(sealed.as_deref(), call.raw_params);
    let sent = (call.parts, raw_params, decoded);
    let request = plan.request(state, sent, to, origin, &caller)?;
    let request = match &record.trace {
        Some(t) => {
            let mut request = request;
            let agent = (plan.forward.label(), plan.agent.label());
            t.client(method.name, &owner, agent, request.headers_mut());
            request.traced(t.clone())
        }
        None => request,
    };
    let asked = std::time::Instant::now();
    let response = upstream.call(request).await;
    let meters = &state.meters[route.upstream];
    (meters.upstream_duration()).observe(asked.elapsed().as_secs_f64());
    let response = response?;
    let relayed = RelayContext::new(&route, record);
    let delivery = Delivery {
        state,
        owner,
        id,
        client_binding,
        record,
        permits,
        bridged: plan.bridged.take(),
    };
    // The pass-through path, the most common, skips `answer`'s future:
    // made and moved into this one, it cost a copy of its kilobytes.
    if let Forward::JsonRpc = plan.forward {
        return delivery.deliver(response, relayed).await;
    }
    plan.answer(response, delivery, relayed, method.family)
        .await
}

/// The plan for a call to the agent `config` names: the agent's binding
/// for the client's, and what the bridge must translate.
fn plan(
    state: &AppState,
    call: &mut Call<'_>,
    config: &crate::config::Upstream,
    owner: &str,
) -> Result<Plan, GatewayError> {
    let client_binding = call.client_binding;
    let client = client_binding.version(call.method.version);
    let agent_binding =
        (state.fleet.view()).agent_binding(config, client_binding.binding(), client);
    // Calls to a REST or gRPC agent go as the 1.0 call, translated into
    // the agent's version of its binding.
    let versions = match &agent_binding {
        AgentBinding::JsonRpc(versions) => *versions,
        AgentBinding::Rest { .. } | AgentBinding::Grpc { .. } => {
            Versions::default().with(Version::V1_0)
        }
    };
    let mut bridged = bridged::plan(state, call, versions, owner)?;
    // Webhooks the push relay rewrites are in the params: no pass-through.
    let relays = super::push::rewrites(state, call.method, call.params);
    // A gRPC call to a gRPC agent of its service goes as it came (a 0.3
    // one came as its 0.3 REST call: `crate::ingress::grpc::v03`).
    let pass_grpc = match (client_binding, &agent_binding) {
        (ClientBinding::Grpc, AgentBinding::Grpc { version, .. }) => {
            *version == Version::V1_0 && bridged.is_none()
        }
        (ClientBinding::Rest03, AgentBinding::Grpc { version, .. }) => *version == Version::V0_3,
        _ => false,
    };
    let pass_grpc = call.grpc_request.take_if(|_| pass_grpc && !relays);
    if pass_grpc.is_some() {
        bridged = None;
    }
    // A REST call to a REST agent of its version goes as it came.
    let pass_rest = bridged.is_none()
        && matches!(&agent_binding, AgentBinding::Rest { version, .. } if *version == client);
    let pass_rest = call.rest_request.take_if(|_| pass_rest && !relays);
    let (client, agent) = match (&bridged, &agent_binding) {
        (_, AgentBinding::Rest { version, .. } | AgentBinding::Grpc { version, .. }) => {
            (client, *version)
        }
        (Some(b), AgentBinding::JsonRpc(_)) => (client_binding.version(b.client()), b.agent()),
        (None, AgentBinding::JsonRpc(_)) => (client, client),
    };
    Ok(Plan {
        forward: Forward::of(agent_binding, pass_grpc, pass_rest),
        family: call.method.family,
        bridged,
        client,
        agent,
    })
}

impl Forward {
    /// The way to `agent_binding`: passing the client's request through
    /// where one is given, else translating the call.
    fn of(
        agent_binding: AgentBinding,
        pass_grpc: Option<GrpcRequest>,
        pass_rest: Option<RestRequest>,
    ) -> Self {
        match agent_binding {
            AgentBinding::Grpc { url, .. } => match pass_grpc {
                Some(request) => Forward::PassGrpc { url, request },
                None => Forward::TranslateGrpc { url },
            },
            AgentBinding::Rest { path, .. } => match pass_rest {
                Some(request) => Forward::PassRest { path, request },
                None => Forward::TranslateRest { path },
            },
            AgentBinding::JsonRpc(_) => Forward::JsonRpc,
        }
    }

    /// The agent binding's name, for the call's record and trace.
    fn label(&self) -> &'static str {
        match self {
            Forward::JsonRpc => "jsonrpc",
            Forward::PassRest { .. } | Forward::TranslateRest { .. } => "http+json",
            Forward::PassGrpc { .. } | Forward::TranslateGrpc { .. } => "grpc",
        }
    }
}

impl Plan {
    /// The request to the agent, in its binding: the call's JSON-RPC body
    /// (as the bridge translates it) to a JSON-RPC agent, its
    /// params encoded by the agent binding, or what the client sent when
    /// it passes through.
    fn request(
        &mut self,
        state: &AppState,
        (mut parts, raw_params, decoded): (http::request::Parts, RawParams<'_>, &Decoded),
        (upstream, config, owner): (&Upstream, &crate::config::Upstream, &str),
        origin: Origin,
        caller: &Caller<'_>,
    ) -> Result<RpcCall, GatewayError> {
        let (family, agent, streams) = (self.family, self.agent, self.family.streams());
        match &self.forward {
            Forward::JsonRpc => {
                let bytes = match &mut self.bridged {
                    Some(b) => b.request(state, &mut parts, raw_params.get()?)?,
                    None => decoded.envelope(raw_params)?,
                };
                let request = upstream.rpc_call_from(parts, bytes, origin, caller);
                Ok(request.streaming(streams))
            }
            Forward::PassRest { path, request } => {
                let sent = (request.path.as_str(), &request.body);
                egress::rest::pass(upstream, parts, sent, path, origin, caller, streams)
            }
            Forward::TranslateRest { path } => {
                let params = agent_params(&mut self.bridged, state, &mut parts, raw_params)?;
                let to = (path.as_str(), agent);
                egress::rest::call(upstream, parts, params, family, to, origin, caller)
            }
            Forward::PassGrpc { url, request } => {
                let at = (&grpc_origin(url, config, owner)?, agent);
                egress::grpc::pass(upstream, parts, (request, family), at, origin, caller)
            }
            Forward::TranslateGrpc { url } => {
                let params = agent_params(&mut self.bridged, state, &mut parts, raw_params)?;
                let at = (&grpc_origin(url, config, owner)?, agent);
                egress::grpc::call(upstream, parts, params, family, at, origin, caller)
            }
        }
    }

    /// The agent's answer, read in its binding where the client's needs
    /// it otherwise, on its way to the relay.
    async fn answer(
        self,
        response: Response<Leased>,
        delivery: Delivery<'_>,
        mut relayed: RelayContext,
        family: Family,
    ) -> Result<Response<Body>, GatewayError> {
        let (id, within) = (delivery.id, delivery.state.config.limits.sse_idle_timeout);
        let agent = self.agent;
        match self.forward {
            Forward::JsonRpc => delivery.deliver(response, relayed).await,
            Forward::PassRest { .. } => {
                relayed.rest = true;
                relayed.rest_answer = true;
                let mut response = delivery.deliver(response, relayed).await?;
                response.extensions_mut().insert(relay::rest::RestEncoded);
                Ok(response)
            }
            Forward::PassGrpc { request, .. } => {
                let deadline = request.deadline;
                pass_grpc_answer(response, delivery, relayed, (family, agent, deadline)).await
            }
            Forward::TranslateRest { .. } if relay::is_event_stream(response.headers()) => {
                relayed.rewrite = Some((
                    egress::rest::events(id, agent == Version::V0_3),
                    Version::V1_0,
                ));
                delivery.deliver(response, relayed).await
            }
            Forward::TranslateRest { .. } => {
                let v03 = (agent == Version::V0_3).then_some(family);
                let response =
                    egress::rest::answer(response, id, &delivery.owner, within, v03).await?;
                delivery.deliver(response, relayed).await
            }
            Forward::TranslateGrpc { .. }
                if family.streams() && egress::grpc::streams(&response) =>
            {
                let response = egress::grpc::events(response, id, agent);
                delivery.deliver(response, relayed).await
            }
            Forward::TranslateGrpc { .. } => {
                let asked = (family, agent);
                let response =
                    egress::grpc::answer(response, id, &delivery.owner, within, asked).await?;
                delivery.deliver(response, relayed).await
            }
        }
    }
}

/// A gRPC agent's answer to a call passed through as it came: checked to
/// be gRPC, relayed as it is, its error code kept for the call's record.
async fn pass_grpc_answer(
    response: Response<Leased>,
    delivery: Delivery<'_>,
    mut relayed: RelayContext,
    (family, version, deadline): (Family, Version, Option<tokio::time::Instant>),
) -> Result<Response<Body>, GatewayError> {
    egress::grpc::check_passed(&response, &delivery.owner)?;
    let error = egress::grpc::head_error(&response);
    relayed.grpc_answer = Some(GrpcPassed {
        family,
        version,
        deadline,
    });
    let mut response = delivery.deliver(response, relayed).await?;
    response.extensions_mut().insert(egress::grpc::GrpcEncoded);
    if let Some(code) = error {
        (response.extensions_mut()).insert(crate::http::error::ErrorCode(code));
    }
    Ok(response)
}

/// The origin of an agent's gRPC interface (its card's URL, in the scheme
/// The call's params for an agent binding that encodes them itself: as
/// the bridge translates them, or as the client sent them.
fn agent_params(
    bridged: &mut Option<bridged::Bridged>,
    state: &AppState,
    parts: &mut http::request::Parts,
    raw_params: RawParams<'_>,
) -> Result<Option<Value>, GatewayError> {
    let raw_params = raw_params.get()?;
    match bridged {
        Some(b) => b.params(state, parts, raw_params).map(Some),
        None => egress::params::params_value(raw_params),
    }
}

/// of the upstream's own URLs when it has none).
pub(super) fn grpc_origin(
    url: &str,
    config: &crate::config::Upstream,
    owner: &str,
) -> Result<http::Uri, GatewayError> {
    let secure = config
        .urls
        .first()
        .is_some_and(|u| u.scheme_str() == Some("https"));
    crate::a2a::grpc::call::origin_of(url, secure).ok_or_else(|| {
        GatewayError::UpstreamBadResponse {
            upstream: owner.to_string(),
            detail: format!("its card's gRPC interface URL '{url}' is not an address"),
        }
    })
}

/// What the agent's answer is delivered with.
struct Delivery<'a> {
    state: &'a Arc<AppState>,
    owner: Arc<str>,
    id: Option<&'a RawValue>,
    client_binding: ClientBinding,
    record: &'a Record,
    permits: Permits,
    bridged: Option<bridged::Bridged>,
}

impl Delivery<'_> {
    /// The answer on its way to the client: translated whole by the
    /// bridge, or relayed (a stream through whatever rewrites its events:
    /// `relayed.rewrite` has what the agent's binding needed first).
    async fn deliver<B>(
        self,
        response: Response<B>,
        mut relayed: RelayContext,
    ) -> Result<Response<Body>, GatewayError>
    where
        B: http_body::Body<Data = Bytes, Error = crate::http::body::BoxError>
            + Send
            + Unpin
            + 'static,
    {
        let streams = relay::is_event_stream(response.headers());
        match self.bridged {
            Some(b) if !streams => {
                let skill = relayed.skill.as_deref();
                let (state, owner) = (self.state, &self.owner);
                return b.answer(response, state, owner, self.permits, skill).await;
            }
            Some(b) => {
                let events = b.events(self.state);
                relayed.rewrite = Some(match relayed.rewrite.take() {
                    Some((first, _)) => (sse::then(first, events), b.client()),
                    None => (events, b.client()),
                });
            }
            None => {}
        }
        if self.client_binding.is_rest() && streams && !relayed.rest_answer {
            let v03 = self.client_binding == ClientBinding::Rest03;
            relayed.rewrite = Some(relay::rest::events(relayed.rewrite.take(), v03));
            relayed.rest = true;
        }
        let (state, id) = (self.state, self.id);
        Ok(relay::relay(
            response,
            state,
            self.owner,
            id,
            self.record,
            self.permits,
            relayed,
        ))
    }
}

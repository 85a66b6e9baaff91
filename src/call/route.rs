//! Where a validated call goes: the routing rules, and for a task no rule
//! knows, a probe of the agents this caller may use.

use std::sync::Arc;

use super::probe;
use crate::a2a::model::Params;
use crate::a2a::{Family, Method, Version};
use crate::auth::authz::Target;
use crate::auth::Identity;
use crate::http::error::GatewayError;
use crate::routing::{request, Decision, Route, RouteInput, Rule};
use crate::state::AppState;
use crate::upstream::{Caller, Origin};
use http::request::Parts;

/// Applies the routing rules; resolves an unknown task by probing.
pub(super) async fn route(
    state: &AppState,
    input: &RouteInput<'_>,
    parts: &Parts,
    origin: &Origin,
    caller: &Caller<'_>,
    identity: Option<&Identity>,
) -> Result<Route, GatewayError> {
    let view = state.fleet.view();
    match state.router.resolve(input, &view, &state.fleet.affinity)? {
        Decision::Route(route) => Ok(route),
        Decision::Probe { task } => {
            // Only agents this caller may use for this method are asked: a
            // probe must not reach an agent on behalf of someone who may
            // not call it, nor tell them whether a task exists there.
            let family = input.method.family.label();
            let version = input.method.version;
            let candidates: Vec<(usize, probe::Ask)> = (0..state.upstreams.len())
                .filter(|&i| may_use(state, &view, identity, i, family))
                .map(|i| (i, spoken(state, &view, i, version)))
                .collect();
            let limit = state.router.settings().probe_timeout;
            let client = probe::Client {
                parts,
                origin,
                caller,
            };
            match probe::find_owner(&state.upstreams, &candidates, &client, &task, limit).await {
                Some(upstream) => {
                    state.metrics.probes.with_label_values(&["found"]).inc();
                    state
                        .fleet
                        .affinity
                        .learn_task(&task, &state.router.name(upstream));
                    Ok(Route {
                        upstream,
                        rule: Rule::Affinity,
                        skill: None,
                    })
                }
                None => {
                    state.metrics.probes.with_label_values(&["not_found"]).inc();
                    Err(GatewayError::TaskNotFound(task))
                }
            }
        }
    }
}

/// How an upstream is asked: through the door the call would take, in
/// the client's version if it speaks it, else the one the bridge would
/// translate to.
fn spoken(
    state: &AppState,
    view: &crate::routing::fleet::FleetView,
    upstream: usize,
    client: Version,
) -> probe::Ask {
    use crate::bridge::agent_binding::AgentBinding;
    let config = &state.config.upstreams[upstream];
    let binding = crate::a2a::dialect::Binding::JsonRpc;
    let versions = match view.agent_binding(config, binding, client) {
        AgentBinding::Rest { path, version } => return probe::Ask::Rest(path, version),
        AgentBinding::Grpc { url, version } => {
            match super::forward::grpc_origin(&url, config, &config.name) {
                Ok(at) => return probe::Ask::Grpc(at, version),
                Err(_) => return probe::Ask::JsonRpc(client),
            }
        }
        AgentBinding::JsonRpc(versions) => versions,
    };
    match crate::bridge::plan(client, Family::GetTask, &config.name, versions) {
        crate::bridge::Plan::Translate(version) => probe::Ask::JsonRpc(version),
        _ => probe::Ask::JsonRpc(client),
    }
}

fn may_use(
    state: &AppState,
    view: &crate::routing::fleet::FleetView,
    identity: Option<&Identity>,
    upstream: usize,
    family: &str,
) -> bool {
    let Some(who) = identity else {
        return true;
    };
    let name = state.router.name(upstream);
    let target = Target {
        upstream: &name,
        skill: None,
        family,
    };
    state.config.authz.allows(who, &target, |skill| {
        view.skill(skill).is_some_and(|s| *s.upstream == *name)
    })
}

/// 0.1 clients choose their task and session ids; they belong to the
/// upstream the first call went to.
pub(super) fn learn_from_request(
    state: &AppState,
    method: &Method,
    params: &Params<'_>,
    owner: &Arc<str>,
) {
    if method.version != crate::a2a::Version::V0_1 || !state.remembers_owners() {
        return;
    }
    if let Some(task) = request::task_ref(method, params) {
        state.fleet.affinity.learn_task(&task.id, owner);
    }
    if let Some(context) = request::context_ref(method, params) {
        state.fleet.affinity.learn_context(&context, owner);
    }
}

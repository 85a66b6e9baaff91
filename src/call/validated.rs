//! A validated call on its way to an agent: what routing, the plan and
//! the agent's request read of it.

use http::request::Parts;
use serde_json::value::RawValue;

use super::client::{ClientBinding, RawParams};
use crate::a2a::model::Params;
use crate::a2a::Method;
use crate::auth::Identity;
use crate::egress::grpc::GrpcRequest;
use crate::egress::rest::RestRequest;
use crate::routing::RouteInput;
use crate::state::{AppState, ConnInfo};
use crate::upstream::Caller;

/// A validated call on its way to an upstream.
pub(super) struct Call<'a> {
    /// The client's head: the forwarded call takes its headers.
    pub(super) parts: Parts,
    pub(super) conn: &'a ConnInfo,
    pub(super) id: Option<&'a RawValue>,
    pub(super) method: &'static Method,
    pub(super) params: &'a Params<'a>,
    /// The params as the client sent them (what the bridge translates).
    pub(super) raw_params: RawParams<'a>,
    pub(super) identity: Option<&'a Identity>,
    pub(super) path_upstream: Option<usize>,
    pub(super) client_binding: ClientBinding,
    /// A REST call as the client sent it.
    pub(super) rest_request: Option<RestRequest>,
    /// A gRPC unary call as the client sent it.
    pub(super) grpc_request: Option<GrpcRequest>,
}

impl Call<'_> {
    /// What routing may look at.
    pub(super) fn route_input(&self) -> RouteInput<'_> {
        RouteInput {
            method: self.method,
            params: self.params,
            headers: &self.parts.headers,
            path_upstream: self.path_upstream,
        }
    }
}

/// Who the agent learns is calling, with the call's spans.
pub(super) fn caller<'a>(
    state: &'a AppState,
    identity: Option<&'a Identity>,
    trace: Option<&'a crate::telemetry::trace::CallTrace>,
) -> Caller<'a> {
    Caller {
        consumed: state.consumed.as_ref(),
        subject: identity.map(|i| i.subject.as_str()),
        trace,
    }
}

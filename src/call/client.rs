//! The client binding seam: what the call needs of the binding a client
//! called in. Each front door in `crate::ingress` implements
//! [`ClientSide`]; the rest of the call's way reads [`ClientBinding`].

use std::future::Future;

use bytes::Bytes;
use http::request::Parts;
use http::Response;
use hyper::body::Incoming;
use serde_json::value::RawValue;

use crate::a2a::dialect::Binding;
use crate::a2a::jsonrpc;
use crate::a2a::{Family, Method, Version};
use crate::egress::grpc::GrpcEncoded;
use crate::egress::rest::RestRequest;
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::state::AppState;

/// A call's body: still on the wire, or read already (a gRPC message's
/// params, encoded by `crate::ingress::grpc`).
pub(crate) enum RequestBody {
    Wire(Incoming),
    Read(Bytes),
}

impl RequestBody {
    /// The body, bounded by the limits.
    pub(crate) async fn read(self, state: &AppState, parts: &Parts) -> Result<Bytes, GatewayError> {
        match self {
            RequestBody::Wire(body) => {
                super::intake::read_body(&state.config.limits, &parts.headers, body).await
            }
            RequestBody::Read(bytes) => Ok(bytes),
        }
    }
}

/// A call as its client binding decoded it.
pub(crate) enum Decoded {
    /// A JSON-RPC request as it came: its envelope is read by the call.
    JsonRpc(Bytes),
    /// A call another binding decoded: its 1.0 method and the JSON of its
    /// params. A JSON-RPC envelope is written only for a JSON-RPC agent.
    Params {
        method: &'static Method,
        params: Bytes,
    },
}

impl Decoded {
    /// The call's bytes as decoded (the record's request size).
    pub(crate) fn len(&self) -> usize {
        match self {
            Decoded::JsonRpc(bytes) | Decoded::Params { params: bytes, .. } => bytes.len(),
        }
    }

    /// The call as a JSON-RPC request, for a JSON-RPC agent: as it came,
    /// or written from its method and `params` with the gateway's id.
    pub(super) fn envelope(&self, params: RawParams<'_>) -> Result<Bytes, GatewayError> {
        let (method, text) = match self {
            Decoded::JsonRpc(bytes) => return Ok(bytes.clone()),
            Decoded::Params { method, params } => (method, params),
        };
        let params = params.get()?;
        let mut call = Vec::with_capacity(text.len() + method.name.len() + 48);
        jsonrpc::write_request(&mut call, jsonrpc::gateway_id(), method.name, &params)
            .map_err(|e| GatewayError::Internal(format!("the call could not be encoded: {e}")))?;
        Ok(Bytes::from(call))
    }
}

/// The params as the client sent them, for a bridge or an agent binding
/// that encodes them itself. A JSON-RPC request read in one pass has them
/// only in its body; a pass-through never needs them, so they are found
/// again only when asked for.
#[derive(Clone, Copy)]
pub(super) enum RawParams<'a> {
    Read(Option<&'a RawValue>),
    InBody(&'a [u8]),
}

impl<'a> RawParams<'a> {
    pub(super) fn get(self) -> Result<Option<&'a RawValue>, GatewayError> {
        match self {
            RawParams::Read(raw) => Ok(raw),
            RawParams::InBody(body) => match jsonrpc::parse(body) {
                Ok(envelope) => Ok(envelope.params),
                Err(e) => Err(GatewayError::Internal(format!(
                    "the call's params could not be read again: {}",
                    e.message
                ))),
            },
        }
    }
}

/// The client binding seam: each front door in `crate::ingress` says
/// which binding it is and decodes its request's body into the call. The
/// rest of the call's way is the same for every binding.
pub(crate) trait ClientSide: Send {
    /// The binding: the record's label, the plan's client side, and how
    /// answers and refusals are encoded.
    fn binding(&self) -> ClientBinding;

    /// The body (bounded) decoded into the call, and a REST call as it
    /// came, for a pass-through to a REST agent.
    fn read(
        self,
        state: &AppState,
        parts: &mut Parts,
        body: RequestBody,
    ) -> impl Future<Output = Result<(Decoded, Option<RestRequest>), GatewayError>> + Send;
}

/// How the client called: its binding decides how refusals and answers
/// are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientBinding {
    JsonRpc,
    /// gRPC (`crate::ingress::grpc`), which reads the JSON-RPC answer
    /// itself.
    Grpc,
    /// HTTP+JSON (`crate::a2a::rest`).
    Rest,
    /// HTTP+JSON 0.3 (`/v1/...`): the 1.0 call it is read as, answered in
    /// 0.3's ProtoJSON (`crate::bridge::v03::rest`).
    Rest03,
}

impl ClientBinding {
    /// The binding's name in the call's record.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ClientBinding::JsonRpc => "jsonrpc",
            ClientBinding::Grpc => "grpc",
            ClientBinding::Rest | ClientBinding::Rest03 => "http+json",
        }
    }

    /// A forwarded call's answer in this binding: a REST client's is
    /// encoded in REST unless it already is (passed through); a gRPC
    /// client's is read by `grpc`, or went as it came (`GrpcEncoded`).
    pub(crate) async fn answer(self, response: Response<Body>, family: Family) -> Response<Body> {
        let encoded = response.extensions().get::<GrpcEncoded>();
        if encoded.is_some() || !self.is_rest() {
            return response;
        }
        let v03 = (self == ClientBinding::Rest03).then_some(family);
        crate::relay::rest::answer(response, v03).await
    }

    pub(crate) fn binding(self) -> Binding {
        match self {
            ClientBinding::JsonRpc => Binding::JsonRpc,
            ClientBinding::Grpc => Binding::Grpc,
            ClientBinding::Rest | ClientBinding::Rest03 => Binding::HttpJson,
        }
    }

    /// A refusal in the client's binding (JSON-RPC mirrors the id).
    pub(crate) fn refuse(self, error: GatewayError, id: Option<&RawValue>) -> Response<Body> {
        match self {
            ClientBinding::JsonRpc | ClientBinding::Grpc => error.into_response(id),
            ClientBinding::Rest | ClientBinding::Rest03 => error.into_rest_response(),
        }
    }

    pub(crate) fn is_rest(self) -> bool {
        matches!(self, ClientBinding::Rest | ClientBinding::Rest03)
    }

    /// The version the client speaks: a 0.3 REST call is read as the 1.0
    /// call `called` is.
    pub(crate) fn version(self, called: Version) -> Version {
        match self {
            ClientBinding::Rest03 => Version::V0_3,
            _ => called,
        }
    }
}

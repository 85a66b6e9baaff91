//! Stage 1, the client bindings: each front door reads a request in its
//! binding (JSON-RPC here, HTTP+JSON in `rest`, gRPC 1.0 and 0.3 in
//! `grpc`) into the one call (`crate::call`, through its `ClientSide`
//! seam). Answers go back in the client's binding: the relay encodes a
//! REST client's (`crate::relay::rest`), the gRPC front door a gRPC
//! client's.

pub mod grpc;
pub(crate) mod rest;

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use hyper::body::Incoming;

use crate::a2a::rest::RestRoute;
use crate::a2a::Method;
use crate::call::{serve, ClientBinding, ClientSide, Decoded, RequestBody};
use crate::egress::rest::RestRequest;
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::state::{AppState, ConnInfo};

pub use rest::refused as rest_refused;

/// JSON-RPC: the body is the call.
struct Rpc;

impl ClientSide for Rpc {
    fn binding(&self) -> ClientBinding {
        ClientBinding::JsonRpc
    }

    async fn read(
        self,
        state: &AppState,
        parts: &mut Parts,
        body: RequestBody,
    ) -> Result<(Decoded, Option<RestRequest>), GatewayError> {
        let bytes = body.read(state, parts).await?;
        Ok((Decoded::JsonRpc(bytes), None))
    }
}

/// gRPC 1.0: the RPC's method, and its message's ProtoJSON as the params.
struct Grpc(&'static Method);

impl ClientSide for Grpc {
    fn binding(&self) -> ClientBinding {
        ClientBinding::Grpc
    }

    async fn read(
        self,
        state: &AppState,
        parts: &mut Parts,
        body: RequestBody,
    ) -> Result<(Decoded, Option<RestRequest>), GatewayError> {
        let params = body.read(state, parts).await?;
        let method = self.0;
        Ok((Decoded::Params { method, params }, None))
    }
}

/// HTTP+JSON: the placed route and its body make the JSON-RPC call.
struct Rest(RestRoute);

impl ClientSide for Rest {
    fn binding(&self) -> ClientBinding {
        match self.0.v03 {
            true => ClientBinding::Rest03,
            false => ClientBinding::Rest,
        }
    }

    async fn read(
        self,
        state: &AppState,
        parts: &mut Parts,
        body: RequestBody,
    ) -> Result<(Decoded, Option<RestRequest>), GatewayError> {
        let bytes = body.read(state, parts).await?;
        rest::request(parts, bytes, self.0)
    }
}

/// Handles a JSON-RPC POST; `path_upstream` is set for `/agents/{name}`.
pub fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Wire);
    serve(state, conn, request, path_upstream, Rpc)
}

/// Handles a gRPC 1.0 call: `method`, its params' JSON the body (`grpc`);
/// the answer is in JSON-RPC, for `grpc` to write in gRPC.
fn handle_grpc<'a>(
    state: Arc<AppState>,
    conn: &'a ConnInfo,
    request: Request<Bytes>,
    (agent, method): (Option<usize>, &'static Method),
) -> impl Future<Output = Response<Body>> + 'a {
    let request = request.map(RequestBody::Read);
    serve(state, conn, request, agent, Grpc(method))
}

/// Handles an HTTP+JSON call whose body is read already (a 0.3 gRPC call
/// encoded as its 0.3 REST call: `grpc::v03`).
fn handle_rest_read(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Bytes>,
    agent: Option<usize>,
    placed: RestRoute,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Read);
    serve(state, conn, request, agent, Rest(placed))
}

/// Handles an HTTP+JSON call that `crate::a2a::rest::place` placed.
pub fn handle_rest(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
    placed: RestRoute,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Wire);
    serve(state, conn, request, path_upstream, Rest(placed))
}

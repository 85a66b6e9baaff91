//! gRPC server reflection (`grpc.reflection.v1` and `v1alpha`), so that
//! `grpcurl` and other tools list and call the gateway's services without
//! the protos: the A2A services (from the descriptors `src/build.rs`
//! wrote) and the health service. The descriptors are public (the
//! official protos), so no credentials are asked. The service is built
//! for each reflection call: tools make a handful, and tonic-reflection's
//! built service has no nameable type to keep.

use http::{Request, Response};
use hyper::body::Incoming;

use crate::http::body::Body;

/// The A2A protos' descriptors, imports included.
const A2A_DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptors.bin"));

pub(crate) const V1: &str = "grpc.reflection.v1.ServerReflection";
pub(crate) const V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

fn builder() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(A2A_DESCRIPTORS)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// Serves one reflection call of either version (`v1alpha`: the older).
pub(crate) async fn serve(request: Request<Incoming>, v1alpha: bool) -> Response<Body> {
    let failed = match v1alpha {
        false => match builder().build_v1() {
            Ok(service) => return super::serve::serve_with(service, request).await,
            Err(e) => e,
        },
        true => match builder().build_v1alpha() {
            Ok(service) => return super::serve::serve_with(service, request).await,
            Err(e) => e,
        },
    };
    // Descriptors that do not read are the build's fault.
    let status = tonic::Status::internal(format!("reflection: {failed}"));
    super::serve::into_gateway_body(status.into_http())
}

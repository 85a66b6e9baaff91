//! The gRPC health checking protocol (`grpc.health.v1.Health`) on the
//! main listener, for load balancers and Kubernetes' gRPC probes. The
//! status is the gateway's readiness, as `/readyz` has it: SERVING while
//! not draining and the upstream cards satisfy `card_refresh.ready_when`,
//! else NOT_SERVING. The services are the whole server (`""`) and each A2A
//! service it serves; any other name is NOT_FOUND, as the protocol says.
//! No credentials are asked, as `/readyz` asks none.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use crate::a2a::grpc::codec::decode;
use crate::state::AppState;

/// How often a `Watch` looks at readiness again.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The services a health check can name.
const SERVICES: [&str; 3] = ["", "lf.a2a.v1.A2AService", "a2a.v1.A2AService"];

/// Serves one health call. Its request message is read whole, its frame
/// checked and its message decoded here first, so that a bad one is
/// INVALID_ARGUMENT, as on the A2A services (tonic-health's codec would
/// say INTERNAL).
pub(crate) async fn serve(
    state: Arc<AppState>,
    request: http::Request<hyper::body::Incoming>,
) -> http::Response<crate::http::body::Body> {
    let limit = state.config.limits.max_body_bytes;
    let (parts, body) = request.into_parts();
    let read = super::frames::frames_of(body, &parts.headers, limit).await;
    let frames = match read.and_then(|f| decode::<HealthCheckRequest>(&f[5..]).map(|_| f)) {
        Ok(frames) => frames,
        Err(status) => return super::serve::into_gateway_body(status.into_http()),
    };
    let request = http::Request::from_parts(parts, http_body_util::Full::new(frames));
    super::serve::serve_with(HealthServer::new(Checks(state)), request).await
}

pub(crate) struct Checks(Arc<AppState>);

impl Checks {
    fn status(&self) -> ServingStatus {
        let state = &self.0;
        match !state.is_draining() && state.fleet.ready(&state.config) {
            true => ServingStatus::Serving,
            false => ServingStatus::NotServing,
        }
    }

    fn known(service: &str) -> Result<(), Status> {
        match SERVICES.contains(&service) {
            true => Ok(()),
            false => {
                let service: String = service.chars().take(128).collect();
                Err(Status::not_found(format!("no service '{service}' here")))
            }
        }
    }
}

fn health_response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

type Watched = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for Checks {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Self::known(&request.get_ref().service)?;
        Ok(Response::new(health_response(self.status())))
    }

    type WatchStream = Watched;

    /// The status now, then each change. A draining gateway says
    /// NOT_SERVING and ends the stream, so that no watch holds the drain.
    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Watched>, Status> {
        Self::known(&request.get_ref().service)?;
        let checks = Checks(self.0.clone());
        let stream = futures_util::stream::unfold(
            (checks, None::<ServingStatus>),
            |(checks, last)| async move {
                loop {
                    let now = checks.status();
                    if last != Some(now) {
                        return Some((Ok(health_response(now)), (checks, Some(now))));
                    }
                    if checks.0.is_draining() {
                        return None;
                    }
                    tokio::time::sleep(WATCH_EVERY).await;
                }
            },
        );
        Ok(Response::new(Box::pin(stream)))
    }
}

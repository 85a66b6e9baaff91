//! One upstream agent behind the gateway: builds the forwarded request,
//! spreads calls over the agent's replicas, ejects failing replicas with a
//! circuit breaker, fails over when a call never reached a replica, applies
//! the connect and response-header timeouts, and says who failed when a call
//! does not succeed.
//!
//! **Replicas and balancing.** `urls` lists interchangeable replicas.
//! JSON-RPC calls to an `http://` replica over HTTP/1.1 go on the gateway's
//! own connections to it ([`pool`]: cheaper per call than hyper-util's
//! pool), streaming calls on sockets read without hyper ([`h1_stream`]: an
//! idle stream holds no buffer); TLS replicas, HTTP/2 and everything else
//! (cards, probes of other hosts) go through one hyper-util client, which
//! pools per authority.
//! A call is built once, without a replica in mind; [`Upstream::call`] (or
//! [`Upstream::send`], for cards) addresses it to the replica it picks: the
//! one with the fewest calls awaiting response headers (`least_outstanding`,
//! the default) or the next in turn (`round_robin`), ties rotating so load
//! spreads. The in-flight count ends when the response *headers* arrive (or
//! the call fails), not when a streamed body ends: a long SSE stream does not
//! make its replica look busy.
//!
//! **Circuit breaker** (per replica, see [`breaker`]): `breaker.failures`
//! consecutive failures (refused, reset, timed out, not HTTP, or a 5xx other
//! than 501) open it for `breaker.open_for`; the balancer skips it; then one
//! trial call is let through, which closes it or opens it again. While every
//! replica is open, calls fail at once with 503 -32055 and `Retry-After`.
//! A call its caller gave up on (client gone, a card or probe deadline)
//! counts neither way; an abandoned trial lets the next call be the trial.
//!
//! **Failover** is only for calls that never reached a replica: the client
//! could not connect (refused, connect timeout: `Error::is_connect`). Such a
//! call is sent to another replica, each replica at most once per call. A
//! call that may have been delivered (the connection was made, then reset,
//! timed out waiting for headers, or answered garbage) is never retried, for
//! any method: the gateway cannot know whether the agent acted on it, and a
//! second `message/send` could run the task twice. (The client's own retry of
//! a request whose pooled connection closed before it was written is safe,
//! and stays on.) `response_header_timeout` bounds the whole call, failovers
//! included.
//!
//! **TLS.** `https://` URLs (replicas or card) are verified against Mozilla's
//! roots or the upstream's `[upstreams.tls] ca`, optionally with a client
//! certificate (`cert`/`key`) and a fixed `server_name`. HTTP/1.1 is spoken
//! (no ALPN offered) unless `http2 = true`, which offers only h2: HTTP/2 is
//! the operator's choice, never negotiated behind their back. A failed
//! handshake is a connect failure: nothing was delivered, so the next
//! replica is tried.
//!
//! **HTTP/2 connections** (see [`lanes`]): with `http2 = true` calls share
//! connections, at most `http2_streams_per_connection` calls on each; past
//! that another connection opens, so an agent's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` does not make calls wait behind open
//! streams.
//!
//! **Task affinity.** Replicas of one upstream are assumed to share task
//! state (one backend store behind them, as any horizontally scaled agent
//! needs), so follow-ups (`tasks/get`, `tasks/cancel`, a message continuing a
//! task) are balanced freely like any call. Replicas that each keep their own
//! tasks belong in separate `[[upstreams]]` entries, where the gateway's task
//! ownership routing sends each follow-up to the agent that owns it.

mod address;
mod agent;
mod answer;
pub mod breaker;
mod exchange;
mod failure;
mod forwarded;
pub mod framing;
mod h1_stream;
pub mod headers;
mod lanes;
mod lease;
mod pool;
mod replicas;

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response, Uri, Version};
use http_body_util::Full;
use smallvec::SmallVec;

use crate::http::error::GatewayError;
pub use address::RpcCall;
use address::{origin_form, origin_target, readdress, Addressing, Host};
use agent::HttpClient;
pub use agent::{Caller, Upstream};
pub use exchange::Exchanged;
use failure::{is_failure_status, Failure};
/// What reads an agent's HTTP/1.1 answer head, public for the fuzzer.
pub use h1_stream::{take_head, Error as AnswerError};
pub use headers::Origin;
use replicas::Attempt;

use crate::telemetry::trace::CallTrace;
pub use answer::Leased;
pub use breaker::State as BreakerState;
use lease::Lease;
use pool::Pool;
pub use replicas::ReplicaHealth;

impl Upstream {
    /// The absolute URI of a path on the upstream's origin (cards live
    /// there), on the first healthy replica; `send` still balances it.
    pub fn origin_uri(&self, path: &str) -> Uri {
        let url = self.preferred_url();
        origin_target(&url, path).unwrap_or(url)
    }

    /// Each replica's breaker state and calls awaiting headers, for `/readyz`.
    pub fn health(&self) -> Vec<ReplicaHealth> {
        self.replicas.health(Instant::now())
    }

    /// Sends a JSON-RPC call to one of the replicas' endpoints and waits for
    /// the response head, the whole call (failovers included) bounded by the
    /// response-header timeout. The body is left to the caller to stream.
    pub async fn call(&self, call: RpcCall) -> Result<Response<Leased>, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.response_header_timeout;
        let RpcCall {
            mut head,
            body,
            query,
            streams,
            path,
            trace,
        } = call;
        // A gRPC agent's interface elsewhere than its replicas (its card
        // names it) is called there: no balancing over replicas.
        if let Some(path) = path.as_ref().filter(|p| !self.is_ours(p)) {
            head.uri = path.clone();
            let request = Request::from_parts(head, Full::new(body));
            return self.send_direct(request, deadline).await;
        }
        let how = match path {
            Some(path) => {
                head.uri = path;
                Addressing::Origin
            }
            None => Addressing::Endpoint(query),
        };
        let trace = trace.as_deref();
        self.send_balanced(head, body, &how, streams, deadline, trace)
            .await
    }

    /// Sends any other request as [`Upstream::call`] does. One for this
    /// upstream (origin-relative, or addressed to a replica's origin) is
    /// balanced over the replicas; any other absolute URI is sent as is.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Leased>, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.response_header_timeout;
        if !self.is_ours(request.uri()) {
            return self.send_direct(request, deadline).await;
        }
        let (head, body) = request.into_parts();
        // Every attempt gets its own handle on the bytes.
        let body = crate::http::body::full_bytes(body).await;
        self.send_balanced(head, body, &Addressing::Origin, false, deadline, None)
            .await
    }

    /// Tries replicas in balancing order until one answers, one fails after
    /// the call may have reached it, or none is left to try.
    async fn send_balanced(
        &self,
        parts: Parts,
        body: Bytes,
        how: &Addressing,
        streams: bool,
        deadline: tokio::time::Instant,
        trace: Option<&CallTrace>,
    ) -> Result<Response<Leased>, GatewayError> {
        // Inline for up to 16 replicas: no allocation on a call's path.
        let mut tried: SmallVec<[bool; 16]> = smallvec::smallvec![false; self.replicas.len()];
        let mut last = None;
        let mut parts = Some(parts);
        while let Some(attempt) = self.replicas.acquire(&tried, Instant::now()) {
            tried[attempt.index()] = true;
            // The last replica left to try gets the head itself, not a copy.
            let head = match tried.iter().all(|&t| t) {
                true => parts.take(),
                false => parts.clone(),
            };
            let Some(head) = head else { break };
            let host = match self.host_configured {
                true => Host::Configured,
                false => Host::Replica(attempt.host()),
            };
            let request = readdress(head, &body, how, attempt.endpoint(), host);
            let replica = trace.map(|_| attempt.endpoint().to_string());
            let tried_here = self.try_replica(attempt, request, streams, deadline).await;
            if let (Some(trace), Some(replica)) = (trace, replica) {
                trace_attempt(trace, &replica, &tried_here);
            }
            match tried_here {
                Ok(response) => return Ok(response),
                Err(f) if f.maybe_delivered => return Err(f.error),
                Err(f) => {
                    self.warn_not_reached(parts.as_ref(), &f.error, tried.iter().all(|&t| t));
                    last = Some(f.error);
                }
            }
        }
        Err(last.unwrap_or_else(|| self.ejected()))
    }

    /// A call that never reached a replica, logged by its X-Request-Id:
    /// there is no span per request at info (`crate::server::stack`). The
    /// head is gone after the last replica (`last`), and so is any other
    /// to try.
    fn warn_not_reached(&self, parts: Option<&Parts>, error: &GatewayError, last: bool) {
        let id = parts.and_then(|p| p.headers.get(crate::http::request_id::HEADER));
        let request_id = id.and_then(|v| v.to_str().ok()).unwrap_or("-");
        match last {
            false => {
                tracing::warn!(request_id, upstream = %self.name, %error, "call never reached the replica; trying another")
            }
            true => {
                tracing::warn!(request_id, upstream = %self.name, %error, "call never reached the replica")
            }
        }
    }

    /// One attempt on one replica; its outcome feeds that replica's breaker.
    async fn try_replica(
        &self,
        attempt: Attempt<'_>,
        request: Request<Full<Bytes>>,
        streams: bool,
        deadline: tokio::time::Instant,
    ) -> Result<Response<Leased>, Failure> {
        let replica = attempt.endpoint().clone();
        // gRPC (HTTP/2) is never on the HTTP/1.1 connections.
        let pool = match request.version() {
            Version::HTTP_2 => None,
            _ => self.pools.get(attempt.index()).and_then(Option::as_ref),
        };
        let sent = async {
            match pool {
                Some(pool) if streams => self.send_pooled_stream(pool, request, &replica).await,
                Some(pool) => self.send_pooled(pool, request, &replica).await,
                None => self.send_client(request, &replica).await,
            }
        };
        let result = match tokio::time::timeout_at(deadline, sent).await {
            Ok(result) => result,
            Err(_) => Err(Failure {
                error: self.header_timeout(&replica),
                maybe_delivered: true,
            }),
        };
        let ok = matches!(&result, Ok(response) if !is_failure_status(response.status()));
        if let Some(state) = attempt.settle(ok, Instant::now()) {
            self.log_transition(&replica, state);
        }
        result
    }

    /// A call on the gateway's own HTTP/1.1 connections to `replica`.
    async fn send_pooled(
        &self,
        pool: &Pool,
        mut request: Request<Full<Bytes>>,
        replica: &Uri,
    ) -> Result<Response<Leased>, Failure> {
        origin_form(request.uri_mut());
        pool.send(request)
            .await
            .map_err(|e| self.pooled_failure(&e, replica))
    }

    /// A streaming call to `replica` on a bare socket of the pool's. Boxed,
    /// so that its state does not grow every unary call's future (every
    /// move of which is a `memcpy`).
    fn send_pooled_stream<'a>(
        &'a self,
        pool: &'a Pool,
        mut request: Request<Full<Bytes>>,
        replica: &'a Uri,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Leased>, Failure>> + Send + 'a>> {
        origin_form(request.uri_mut());
        Box::pin(async move {
            let sent = pool.send_stream(request).await;
            sent.map_err(|e| self.pooled_failure(&e, replica))
        })
    }

    /// A call through hyper-util's client: TLS replicas, and HTTP/2 on lanes.
    async fn send_client(
        &self,
        request: Request<Full<Bytes>>,
        replica: &Uri,
    ) -> Result<Response<Leased>, Failure> {
        let (lane, lease) = self.lane();
        let client = match (&lane, request.version()) {
            (Some(lane), _) => lane,
            (None, Version::HTTP_2) => &self.grpc,
            (None, _) => &self.client,
        };
        match client.request(request).await {
            // The lane's place is held until the answer's body is dropped.
            Ok(response) => Ok(response.map(|body| Leased::new(body.into(), lease))),
            Err(e) => Err(Failure {
                // A connect error means no byte of the call left.
                maybe_delivered: !e.is_connect(),
                error: self.classify(&e, replica),
            }),
        }
    }

    /// With HTTP/2, the lane for the next call and its place there; a new
    /// lane (a client with connections of its own) when every lane is full.
    fn lane(&self) -> (Option<HttpClient>, Option<Lease>) {
        let Some(lanes) = &self.lanes else {
            return (None, None);
        };
        let (client, lease) = lanes.take(|open| {
            if open > 0 {
                tracing::info!(upstream = %self.name, lanes = open + 1,
                    "every HTTP/2 connection carries http2_streams_per_connection calls: opening another");
            }
            self.builder.build(self.connector.clone())
        });
        (Some(client), Some(lease))
    }

    /// A request for somewhere other than this upstream's replicas (a card
    /// URL on another host): no balancing, no breaker.
    async fn send_direct(
        &self,
        request: Request<Full<Bytes>>,
        deadline: tokio::time::Instant,
    ) -> Result<Response<Leased>, GatewayError> {
        let target = request.uri().clone();
        let client = match (request.version(), self.http2) {
            (Version::HTTP_2, false) => &self.grpc,
            _ => &self.client,
        };
        match tokio::time::timeout_at(deadline, client.request(request)).await {
            Ok(Ok(response)) => Ok(response.map(|body| Leased::new(body.into(), None))),
            Ok(Err(e)) => Err(self.classify(&e, &target)),
            Err(_) => Err(self.header_timeout(&target)),
        }
    }

    pub fn card_url(&self) -> Option<&Uri> {
        self.card_url.as_ref()
    }

    /// Whether a request is for this upstream, and so balanced:
    /// origin-relative, or addressed to one of the replicas' origins
    /// (replicas are interchangeable).
    fn is_ours(&self, uri: &Uri) -> bool {
        match uri.authority() {
            None => true,
            Some(authority) => self.replicas.iter().any(|r| {
                r.endpoint.authority() == Some(authority) && r.endpoint.scheme() == uri.scheme()
            }),
        }
    }

    fn preferred_url(&self) -> Uri {
        match self.replicas.preferred(Instant::now()) {
            Some(replica) => replica.endpoint.clone(),
            None => Uri::default(),
        }
    }

    fn version(&self) -> Version {
        if self.http2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        }
    }
}

/// One attempt at a replica, on the call's span: its status, or the
/// class of its failure.
fn trace_attempt(trace: &CallTrace, replica: &str, tried: &Result<Response<Leased>, Failure>) {
    let outcome = match tried {
        Ok(response) => Ok(response.status().as_u16()),
        Err(f) => Err(crate::telemetry::metrics::error_class(Some(f.error.code()))),
    };
    trace.attempt(replica, outcome);
}

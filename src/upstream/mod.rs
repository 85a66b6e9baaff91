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
pub mod breaker;
pub mod framing;
mod h1_stream;
pub mod headers;
mod lanes;
mod lease;
mod pool;
mod replicas;

use std::error::Error as StdError;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::request::Parts;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use smallvec::SmallVec;

use crate::config;
use crate::error::GatewayError;
pub use address::RpcCall;
use address::{origin_form, origin_target, readdress, Addressing, Host};
/// What reads an agent's HTTP/1.1 answer head, public for the fuzzer.
pub use h1_stream::{take_head, Error as AnswerError};
use replicas::{Attempt, Replicas};

pub use breaker::State as BreakerState;
use lanes::Lanes;
use lease::Lease;
pub use lease::Leased;
use pool::Pool;
pub use replicas::ReplicaHealth;

/// Headers the gateway may add to a forwarded call: `X-Forwarded-For`,
/// `-Proto` and `-Host`, `Host`, and the verified identity.
const FORWARDING_HEADERS: usize = 5;
/// Client headers a forwarded call does not keep. The gateway already read
/// the body, so the upstream must not wait for a 100-continue that nobody
/// will act on; `Host` is set for the replica the call goes to.
/// `Content-Length` is hyper's to write (but see
/// [`headers::keep_content_length`]).
const REPLACED: [HeaderName; 3] = [header::HOST, header::CONTENT_LENGTH, header::EXPECT];

fn is_replaced(name: &HeaderName) -> bool {
    REPLACED.contains(name)
}

/// How long an idle pooled connection is kept; under typical upstream
/// keep-alive timeouts so the gateway closes first.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// Who is calling, for credential hygiene and the identity header.
#[derive(Default)]
pub struct Caller<'a> {
    /// The credentials the gateway consumed (`None` without gateway auth).
    pub consumed: Option<&'a headers::Credentials>,
    /// The verified caller.
    pub subject: Option<&'a str>,
}

/// Where the client request came from, for `X-Forwarded-*`.
#[derive(Clone)]
pub struct Origin {
    /// The TCP peer: the hop appended to `X-Forwarded-For`.
    pub peer: SocketAddr,
    /// `peer`'s address as header text (`headers::hop`).
    pub peer_hop: HeaderValue,
    pub proto: &'static str,
    pub host: Option<HeaderValue>,
    /// The peer is a trusted proxy: its `X-Forwarded-Proto/Host` stand.
    pub trusted_peer: bool,
}

/// A failed call, and whether it may have reached the agent (then it must
/// not be sent again).
struct Failure {
    error: GatewayError,
    maybe_delivered: bool,
}

pub struct Upstream {
    pub name: String,
    replicas: Replicas,
    http2: bool,
    response_header_timeout: Duration,
    connect_timeout: Duration,
    extra_headers: Vec<(HeaderName, HeaderValue)>,
    /// `extra_headers` sets `Host`: calls keep it (see `address::Host`).
    host_configured: bool,
    card_url: Option<Uri>,
    forward_credentials: bool,
    identity_header: Option<HeaderName>,
    /// HTTP/1.1 calls (a pooled connection each), and everything that is
    /// not a JSON-RPC call (cards, probes).
    client: HttpClient,
    /// HTTP/2 calls: spread over as many connections as their streams need.
    lanes: Option<Lanes<HttpClient>>,
    /// JSON-RPC calls to each `http://` replica over HTTP/1.1 (by replica
    /// index; `None` for TLS replicas, empty with `http2`): the gateway's own
    /// connection list, cheaper than the legacy client's pool.
    pools: Vec<Option<Pool>>,
    builder: hyper_util::client::legacy::Builder,
    connector: HttpsConnector<HttpConnector>,
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An answer read whole: its status, headers and (bounded) body.
pub type Exchanged = (StatusCode, HeaderMap, Bytes);

impl Upstream {
    pub fn new(cfg: &config::Upstream) -> Self {
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(POOL_IDLE)
            // A burst opens a connection per call in flight; past this many
            // idle per replica, each is closed as its answer ends.
            .pool_max_idle_per_host(cfg.max_idle_connections)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .http2_only(cfg.http2);
        let connector = connector(cfg);
        let client = builder.build(connector.clone());
        let replicas = Replicas::new(cfg);
        let lanes = cfg
            .http2
            .then(|| Lanes::new(cfg.http2_streams_per_connection));
        let pools = match cfg.http2 {
            true => Vec::new(),
            false => (replicas.iter())
                .map(|r| {
                    let (idle, timeout) = (cfg.max_idle_connections, POOL_IDLE);
                    Pool::for_url(&r.endpoint, cfg.connect_timeout, idle, timeout)
                })
                .collect(),
        };
        Self {
            name: cfg.name.clone(),
            replicas,
            http2: cfg.http2,
            response_header_timeout: cfg.response_header_timeout,
            connect_timeout: cfg.connect_timeout,
            extra_headers: cfg.headers.clone(),
            host_configured: cfg.headers.iter().any(|(name, _)| name == header::HOST),
            card_url: cfg.card_url.clone(),
            forward_credentials: cfg.forward_credentials,
            identity_header: cfg.identity_header.clone(),
            client,
            lanes,
            pools,
            builder,
            connector,
        }
    }

    /// The call as the upstream will see it: the client's body byte for
    /// byte, its end-to-end headers less the credentials the gateway
    /// consumed (unless this upstream is to receive them), the gateway's
    /// forwarding headers, and the verified identity where configured.
    /// The client's head is copied: for probes and the extended card, which
    /// may call several upstreams or still answer from it.
    pub fn rpc_call_as(
        &self,
        client: &Parts,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        // Copied into a map with room for the headers the gateway adds: a
        // clone is sized to the client's headers, and grew (a reallocation
        // and a rehash) at the first forwarding header of every call.
        let room = client.headers.len() + FORWARDING_HEADERS + self.extra_headers.len();
        let mut headers = HeaderMap::with_capacity(room);
        for (name, value) in &client.headers {
            if !is_replaced(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        let query = client.uri.query().map(str::to_owned);
        self.finish_call(headers, query, body, origin, caller)
    }

    /// As [`Upstream::rpc_call_as`], taking the client's head: its headers
    /// are edited in place rather than copied into a new map.
    pub fn rpc_call_from(
        &self,
        mut client: Parts,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        let mut headers = std::mem::take(&mut client.headers);
        // The client's `Host` stays until `readdress` overwrites it (or a
        // configured one does, in `finish_call`).
        headers.remove(header::EXPECT);
        headers::keep_content_length(&mut headers, body.len());
        headers.reserve(FORWARDING_HEADERS + self.extra_headers.len());
        let query = client.uri.query().map(str::to_owned);
        self.finish_call(headers, query, body, origin, caller)
    }

    /// The rest of a call, once the client's headers are in `headers` less
    /// the [`REPLACED`] ones.
    fn finish_call(
        &self,
        mut headers: HeaderMap,
        mut query: Option<String>,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        headers::strip_hop_by_hop(&mut headers);
        if let (Some(consumed), false) = (caller.consumed, self.forward_credentials) {
            consumed.strip_headers(&mut headers);
            query = consumed.strip_query(query.as_deref());
        }
        if let Some(name) = &self.identity_header {
            // Never trust a client's own claim to be someone.
            headers.remove(name);
            if let Some(v) = caller.subject.and_then(|s| HeaderValue::from_str(s).ok()) {
                headers.insert(name.clone(), v);
            }
        }
        headers::add_forwarded(&mut headers, origin);
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        // No URI yet: `call` addresses each attempt to its replica.
        let (mut head, ()) = Request::new(()).into_parts();
        head.method = Method::POST;
        head.version = self.version();
        head.headers = headers;
        RpcCall {
            head,
            body,
            query,
            streams: false,
        }
    }

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

    /// A plain GET with the upstream's configured headers.
    pub fn get_request(
        &self,
        uri: Uri,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = uri;
        *request.version_mut() = self.version();
        let headers = request.headers_mut();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in self.extra_headers.iter().chain(extra) {
            headers.insert(name.clone(), value.clone());
        }
        request
    }

    /// Sends a JSON-RPC call to one of the replicas' endpoints and waits for
    /// the response head, the whole call (failovers included) bounded by the
    /// response-header timeout. The body is left to the caller to stream.
    pub async fn call(&self, call: RpcCall) -> Result<Response<Leased>, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.response_header_timeout;
        let RpcCall {
            head,
            body,
            query,
            streams,
        } = call;
        let how = Addressing::Endpoint(query);
        self.send_balanced(head, body, &how, streams, deadline)
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
        let body = crate::body::full_bytes(body).await;
        self.send_balanced(head, body, &Addressing::Origin, false, deadline)
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
            match self.try_replica(attempt, request, streams, deadline).await {
                Ok(response) => return Ok(response),
                Err(f) if f.maybe_delivered => return Err(f.error),
                Err(f) => {
                    // Named by its X-Request-Id: there is no span per
                    // request at info (`crate::stack`). The head is gone
                    // after the last replica, and so is any other to try.
                    let id = parts
                        .as_ref()
                        .and_then(|p| p.headers.get(crate::request_id::HEADER));
                    let request_id = id.and_then(|v| v.to_str().ok()).unwrap_or("-");
                    tracing::warn!(request_id, upstream = %self.name, error = %f.error, "call never reached the replica; trying another");
                    last = Some(f.error);
                }
            }
        }
        Err(last.unwrap_or_else(|| self.ejected()))
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
        let pool = self.pools.get(attempt.index()).and_then(Option::as_ref);
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

    fn pooled_failure(&self, e: &pool::Error, replica: &Uri) -> Failure {
        Failure {
            maybe_delivered: e.maybe_delivered(),
            error: self.classify_pooled(e, replica),
        }
    }

    /// A call through hyper-util's client: TLS replicas, and HTTP/2 on lanes.
    async fn send_client(
        &self,
        request: Request<Full<Bytes>>,
        replica: &Uri,
    ) -> Result<Response<Leased>, Failure> {
        let (lane, lease) = self.lane();
        let client = lane.as_ref().unwrap_or(&self.client);
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
        match tokio::time::timeout_at(deadline, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response.map(|body| Leased::new(body.into(), None))),
            Ok(Err(e)) => Err(self.classify(&e, &target)),
            Err(_) => Err(self.header_timeout(&target)),
        }
    }

    /// Sends a request and reads a bounded body (cards), the whole exchange
    /// bounded by the response-header timeout or `limit`.
    pub async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let what = request.uri().path().to_string();
        self.bounded(what, self.send(request), max_bytes, limit)
            .await
    }

    /// As [`Upstream::exchange`], for a JSON-RPC call (probes, the extended
    /// card).
    pub async fn exchange_call(
        &self,
        call: RpcCall,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let what = self.preferred_url().path().to_string();
        self.bounded(what, self.call(call), max_bytes, limit).await
    }

    /// Awaits `sent` and reads at most `max_bytes` of its body, all within
    /// `limit`; `what` names the target in errors.
    async fn bounded(
        &self,
        what: String,
        sent: impl std::future::Future<Output = Result<Response<Leased>, GatewayError>>,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<Exchanged, GatewayError> {
        let run = async {
            let response = sent.await?;
            let (parts, body) = response.into_parts();
            match Limited::new(body, max_bytes).collect().await {
                Ok(body) => Ok((parts.status, parts.headers, body.to_bytes())),
                Err(e) => Err(GatewayError::UpstreamBadResponse {
                    upstream: self.name.clone(),
                    detail: format!("reading {what}: {e}"),
                }),
            }
        };
        match tokio::time::timeout(limit, run).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::UpstreamTimeout {
                upstream: self.name.clone(),
                detail: format!("{what} took longer than {limit:?}"),
            }),
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

    /// Every replica's breaker is open: fail fast, saying when to come back.
    fn ejected(&self) -> GatewayError {
        let retry_after = self.replicas.wait(Instant::now());
        GatewayError::UpstreamEjected {
            upstream: self.name.clone(),
            detail: format!(
                "every replica ({}) failed repeatedly and is ejected; the next is tried again in {:.1}s",
                self.replicas.len(),
                retry_after.as_secs_f64()
            ),
            retry_after,
        }
    }

    fn header_timeout(&self, replica: &Uri) -> GatewayError {
        GatewayError::UpstreamTimeout {
            upstream: self.name.clone(),
            detail: self.at(
                replica,
                format!(
                    "no response headers within {:?}",
                    self.response_header_timeout
                ),
            ),
        }
    }

    /// With several replicas, says which one failed.
    fn at(&self, replica: &Uri, detail: String) -> String {
        match (self.replicas.len(), replica.authority()) {
            (2.., Some(authority)) => format!("replica {authority}: {detail}"),
            _ => detail,
        }
    }

    fn log_transition(&self, replica: &Uri, state: BreakerState) {
        match state {
            BreakerState::Open => {
                tracing::warn!(upstream = %self.name, %replica, "circuit breaker open: replica ejected")
            }
            BreakerState::Closed => {
                tracing::info!(upstream = %self.name, %replica, "circuit breaker closed: replica back")
            }
            BreakerState::HalfOpen => {}
        }
    }

    fn version(&self) -> Version {
        if self.http2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        }
    }

    /// Maps a client failure to the party at fault: the request never got an
    /// answer from the upstream, so it is 502/504, never a client error.
    fn classify(&self, e: &hyper_util::client::legacy::Error, replica: &Uri) -> GatewayError {
        let upstream = self.name.clone();
        let detail = self.at(replica, chain(e));
        if e.is_connect() {
            if has_io_kind(e, std::io::ErrorKind::TimedOut) {
                return self.connect_timed_out(replica);
            }
            return GatewayError::UpstreamUnavailable { upstream, detail };
        }
        from_hyper(find_hyper_error(e), upstream, detail)
    }

    /// As [`Upstream::classify`], for a failure on the gateway's own pool.
    fn classify_pooled(&self, e: &pool::Error, replica: &Uri) -> GatewayError {
        let upstream = self.name.clone();
        match e {
            pool::Error::ConnectTimeout => self.connect_timed_out(replica),
            pool::Error::Resolve(_) | pool::Error::Connect(_) => {
                GatewayError::UpstreamUnavailable {
                    upstream,
                    detail: self.at(replica, e.to_string()),
                }
            }
            pool::Error::Call { error, .. } => {
                from_hyper(Some(error), upstream, self.at(replica, e.to_string()))
            }
            pool::Error::Stream(stream) => {
                let detail = self.at(replica, e.to_string());
                match stream {
                    h1_stream::Error::Malformed(_) | h1_stream::Error::HeadTooLarge => {
                        GatewayError::UpstreamBadResponse { upstream, detail }
                    }
                    h1_stream::Error::Io(_) | h1_stream::Error::Closed => {
                        GatewayError::UpstreamUnavailable { upstream, detail }
                    }
                }
            }
        }
    }

    /// The same answer from either client when a connect outlasts its limit.
    fn connect_timed_out(&self, replica: &Uri) -> GatewayError {
        let why = format!("connect timed out after {:?}", self.connect_timeout);
        GatewayError::UpstreamTimeout {
            upstream: self.name.clone(),
            detail: self.at(replica, why),
        }
    }
}

/// An answer that was garbage is a bad response; one that never came in
/// time, a timeout; anything else, the upstream unavailable.
fn from_hyper(h: Option<&hyper::Error>, upstream: String, detail: String) -> GatewayError {
    match h {
        Some(h) if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() => {
            GatewayError::UpstreamBadResponse { upstream, detail }
        }
        Some(h) if h.is_timeout() => GatewayError::UpstreamTimeout { upstream, detail },
        _ => GatewayError::UpstreamUnavailable { upstream, detail },
    }
}

/// TCP with the connect timeout and no Nagle delay, and TLS for `https://`
/// URLs as the upstream's `tls` says.
fn connector(cfg: &config::Upstream) -> HttpsConnector<HttpConnector> {
    let mut tcp = HttpConnector::new();
    tcp.set_connect_timeout(Some(cfg.connect_timeout));
    tcp.set_nodelay(true);
    // The TLS layer above takes https; plain TCP must not refuse it.
    tcp.enforce_http(false);
    // HTTP/1.1 sends no ALPN (hyper-rustls sets it, and only for h2).
    let builder = HttpsConnectorBuilder::new()
        .with_tls_config(cfg.tls.client_config())
        .https_or_http();
    let builder = match &cfg.tls.server_name {
        Some(name) => builder.with_server_name_resolver(FixedServerNameResolver::new(name.clone())),
        None => builder,
    };
    match cfg.http2 {
        true => builder.enable_http2().wrap_connector(tcp),
        false => builder.enable_http1().wrap_connector(tcp),
    }
}

/// A 5xx counts against the replica's breaker, except 501 Not Implemented:
/// that is an answer about the call, not a sign of a sick replica.
fn is_failure_status(status: StatusCode) -> bool {
    status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED
}

fn sources<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| e.source())
}

fn chain(e: &hyper_util::client::legacy::Error) -> String {
    sources(e)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn has_io_kind(e: &hyper_util::client::legacy::Error, kind: std::io::ErrorKind) -> bool {
    sources(e).any(|s| {
        s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

fn find_hyper_error(e: &hyper_util::client::legacy::Error) -> Option<&hyper::Error> {
    sources(e).find_map(|s| s.downcast_ref::<hyper::Error>())
}

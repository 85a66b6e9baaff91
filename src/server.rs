//! The accept loop: HTTP/1.1 with keep-alive and HTTP/2 (h2c prior
//! knowledge, or ALPN "h2" over TLS) on one port, per-connection facts
//! attached to each request, and a graceful drain bounded by a grace period.

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::{Limits, Server};
use crate::stack::HttpService;
use crate::state::ConnInfo;
use crate::tls::TlsState;

/// Protocol settings for one listener.
#[derive(Debug, Clone)]
pub struct Settings {
    pub header_read_timeout: Duration,
    pub max_header_bytes: usize,
    pub http2_max_concurrent_streams: u32,
    pub grace: Duration,
}

impl Settings {
    pub fn new(server: &Server, limits: &Limits) -> Self {
        Self {
            header_read_timeout: limits.header_read_timeout,
            max_header_bytes: limits.max_header_bytes,
            http2_max_concurrent_streams: server.http2_max_concurrent_streams,
            grace: server.shutdown_grace,
        }
    }
}

fn builder(settings: &Settings) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        // A client that trickles its headers (slowloris) is cut off.
        .header_read_timeout(settings.header_read_timeout)
        .max_buf_size(settings.max_header_bytes);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(settings.http2_max_concurrent_streams)
        .max_header_list_size(u32::try_from(settings.max_header_bytes).unwrap_or(u32::MAX))
        // Rapid-reset floods (CVE-2023-44487): a client that opens and
        // resets streams faster than they are served is disconnected.
        .max_pending_accept_reset_streams(Some(HTTP2_MAX_PENDING_RESETS))
        .max_local_error_reset_streams(Some(HTTP2_MAX_LOCAL_ERROR_RESETS))
        // Dead peers behind idle connections are found and dropped.
        .keep_alive_interval(Some(HTTP2_KEEP_ALIVE_INTERVAL))
        .keep_alive_timeout(HTTP2_KEEP_ALIVE_TIMEOUT);
    builder
}

const HTTP2_MAX_PENDING_RESETS: usize = 20;
const HTTP2_MAX_LOCAL_ERROR_RESETS: usize = 1024;
const HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const HTTP2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection builders a TLS connection picks from by ALPN.
struct Protocols {
    /// No ALPN: sniff the HTTP/2 preface, as on plain connections.
    auto: auto::Builder<TokioExecutor>,
    http1: auto::Builder<TokioExecutor>,
    http2: auto::Builder<TokioExecutor>,
}

/// Serves until `shutdown` turns true, then stops accepting, lets open
/// connections finish for up to the grace period and closes the rest.
/// With `tls`, every connection is a TLS one (the handshake runs in the
/// connection's task, bounded by the header-read timeout).
pub async fn serve(
    listener: TcpListener,
    service: HttpService,
    settings: Settings,
    tls: Option<Arc<TlsState>>,
    mut shutdown: watch::Receiver<bool>,
    closing: CancellationToken,
) {
    let builder = builder(&settings);
    let protocols = Arc::new(Protocols {
        auto: builder.clone(),
        http1: builder.clone().http1_only(),
        http2: builder.clone().http2_only(),
    });
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let bound = listener
        .local_addr()
        .unwrap_or_else(|_| ([0, 0, 0, 0], 0).into());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, remote) = match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Out of file descriptors and the like: back off
                        // instead of spinning, keep serving open connections.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(bound);
                let info = ConnInfo { remote, local, proto: "http", peer: None };
                if let Some(tls) = &tls {
                    connections.spawn(serve_tls(
                        stream,
                        tls.acceptor(),
                        settings.header_read_timeout,
                        protocols.clone(),
                        service.clone(),
                        info,
                        graceful.watcher(),
                    ));
                    while connections.try_join_next().is_some() {}
                    continue;
                }
                let svc = service.clone().map_request(move |mut r: Request<Incoming>| {
                    r.extensions_mut().insert(info.clone());
                    r
                });
                let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
                let conn = graceful.watch(conn.into_owned());
                connections.spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, %remote, "connection ended with an error");
                    }
                });
                while connections.try_join_next().is_some() {}
            }
            // A send or a dropped sender both mean stop.
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        _ = &mut drained => {
            tracing::debug!("all connections drained");
            connections.shutdown().await;
            return;
        }
        _ = tokio::time::sleep(settings.grace) => {}
    }
    // The grace is over: open streams end cleanly with a final event, then
    // their connections finish; whatever is still open after that is closed.
    tracing::info!(
        open = connections.len(),
        "shutdown grace expired; ending open streams"
    );
    closing.cancel();
    tokio::select! {
        _ = &mut drained => tracing::debug!("connections finished after the streams ended"),
        _ = tokio::time::sleep(STREAMS_END_WAIT) => {
            tracing::warn!(open = connections.len(), "closing remaining connections");
        }
    }
    connections.shutdown().await;
}

/// How long ended streams get to flush their last event before their
/// connections are closed.
const STREAMS_END_WAIT: Duration = Duration::from_secs(2);

/// One TLS connection: the handshake (bounded by `handshake_timeout`),
/// then HTTP/2 when ALPN chose "h2", HTTP/1.1 when it chose "http/1.1",
/// and either (by sniffing) when the client sent no ALPN.
async fn serve_tls(
    stream: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    handshake_timeout: Duration,
    protocols: Arc<Protocols>,
    service: HttpService,
    mut info: ConnInfo,
    watcher: Watcher,
) {
    let remote = info.remote;
    let stream = match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, %remote, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%remote, "TLS handshake timed out");
            return;
        }
    };
    let (_, tls) = stream.get_ref();
    info.proto = "https";
    info.peer = crate::tls::peer_cert(tls).map(Arc::new);
    let builder = match tls.alpn_protocol() {
        Some(b"h2") => &protocols.http2,
        Some(_) => &protocols.http1,
        None => &protocols.auto,
    };
    let svc = service.map_request(move |mut r: Request<Incoming>| {
        r.extensions_mut().insert(info.clone());
        r
    });
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    if let Err(e) = watcher.watch(conn.into_owned()).await {
        tracing::debug!(error = %e, %remote, "connection ended with an error");
    }
}

//! The accept loop: HTTP/1.1 with keep-alive and HTTP/2 (h2c prior
//! knowledge, or ALPN "h2" over TLS) on one port, per-connection facts
//! attached to each request, and a graceful drain bounded by a grace period.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

mod protocol;

use protocol::{Protocol, Protocols};

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
    let protocols = Arc::new(Protocols::new(&settings));
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
                connections.spawn(serve_plain(
                    stream,
                    settings.header_read_timeout,
                    protocols.clone(),
                    service.clone(),
                    info,
                    graceful.watcher(),
                ));
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

/// One plain connection: HTTP/2 when it opens with the HTTP/2 preface
/// (prior knowledge), else HTTP/1.1. A client that sends nothing within
/// `first_bytes_timeout` is disconnected.
async fn serve_plain(
    stream: TcpStream,
    first_bytes_timeout: Duration,
    protocols: Arc<Protocols>,
    service: HttpService,
    info: ConnInfo,
    watcher: Watcher,
) {
    let remote = info.remote;
    let Some(protocol) = protocol::sniff(&stream, first_bytes_timeout).await else {
        tracing::debug!(%remote, "connection closed or silent before its first bytes");
        return;
    };
    if let Err(e) = protocols
        .serve(stream, protocol, service, info, watcher)
        .await
    {
        tracing::debug!(error = %e, %remote, "connection ended with an error");
    }
}

/// One TLS connection: the handshake (bounded by `handshake_timeout`),
/// then HTTP/2 when ALPN chose "h2", else HTTP/1.1. HTTP/2 over TLS needs
/// ALPN (RFC 9113, 3.2), so a client that offers none speaks HTTP/1.1.
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
    let protocol = match tls.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    if let Err(e) = protocols
        .serve(stream, protocol, service, info, watcher)
        .await
    {
        tracing::debug!(error = %e, %remote, "connection ended with an error");
    }
}

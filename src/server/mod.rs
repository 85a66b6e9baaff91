//! The accept loop: HTTP/1.1 with keep-alive and HTTP/2 (h2c prior
//! knowledge, or ALPN "h2" over TLS) on one port, per-connection facts
//! attached to each request, and a graceful drain bounded by a grace period.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use prometheus::{IntCounter, IntGauge};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub mod admin;
pub mod dispatch;

mod protocol;
mod proxy_protocol;
mod push_callback;
pub mod stack;

use protocol::{Protocol, Protocols};

use crate::config::{Limits, Server};
use crate::server::stack::PerConnection;
use crate::state::ConnInfo;
use crate::tls::TlsState;

/// Protocol settings for one listener.
#[derive(Debug, Clone)]
pub struct Settings {
    pub header_read_timeout: Duration,
    pub max_header_bytes: usize,
    pub http2_max_concurrent_streams: u32,
    pub grace: Duration,
    /// Every connection begins with a PROXY protocol header.
    pub proxy_protocol: bool,
    /// Counts the listener's connections (`None`: not counted).
    pub counted: Option<Counted>,
}

/// The metrics a listener's connections are counted in.
#[derive(Debug, Clone)]
pub struct Counted {
    pub open: IntGauge,
    pub accepted: IntCounter,
}

/// Holds a connection's place in the counts while it lives.
struct Open {
    _active: crate::memory_release::Active,
    gauge: Option<IntGauge>,
}

impl Open {
    fn new(counted: Option<&Counted>) -> Self {
        if let Some(c) = counted {
            c.open.inc();
            c.accepted.inc();
        }
        Self {
            _active: crate::memory_release::Active::new(),
            gauge: counted.map(|c| c.open.clone()),
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(gauge) = &self.gauge {
            gauge.dec();
        }
    }
}

impl Settings {
    pub fn new(server: &Server, limits: &Limits) -> Self {
        Self {
            header_read_timeout: limits.header_read_timeout,
            max_header_bytes: limits.max_header_bytes,
            http2_max_concurrent_streams: server.http2_max_concurrent_streams,
            grace: server.shutdown_grace,
            proxy_protocol: server.proxy_protocol,
            counted: None,
        }
    }
}

/// Serves until `shutdown` turns true, then stops accepting, lets open
/// connections finish for up to the grace period and closes the rest.
/// With `tls`, every connection is a TLS one (the handshake runs in the
/// connection's task, bounded by the header-read timeout).
pub async fn serve(
    listener: TcpListener,
    service: PerConnection,
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
            incoming = listener.accept() => {
                let (stream, remote) = match incoming {
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
                let info = ConnInfo::new(remote, local);
                let accepted = Box::new(Accepted {
                    info,
                    service: service.clone(),
                    protocols: protocols.clone(),
                    watcher: graceful.watcher(),
                    stop: shutdown.clone(),
                    first_bytes_timeout: settings.header_read_timeout,
                    proxy_protocol: settings.proxy_protocol,
                    _open: Open::new(settings.counted.as_ref()),
                });
                match &tls {
                    Some(tls) => connections.spawn(serve_tls(stream, tls.acceptor(), accepted)),
                    None => connections.spawn(serve_plain(stream, accepted)),
                };
                while connections.try_join_next().is_some() {}
            }
            // A send or a dropped sender both mean stop.
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    drain(graceful, connections, settings.grace, closing).await;
}

/// Once the listener is closed: open connections get `grace` to finish;
/// then open streams end cleanly with a final event, their connections get
/// [`STREAMS_END_WAIT`] to write it, and whatever is still open is closed.
async fn drain<T: 'static>(
    graceful: GracefulShutdown,
    mut connections: JoinSet<T>,
    grace: Duration,
    closing: CancellationToken,
) {
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        _ = &mut drained => {
            tracing::debug!("all connections drained");
            connections.shutdown().await;
            return;
        }
        _ = tokio::time::sleep(grace) => {}
    }
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

/// What an accepted connection's task gets from its listener. Boxed: an
/// async fn keeps its arguments for its whole life, and a connection's task
/// lives as long as the connection.
struct Accepted {
    info: ConnInfo,
    /// Makes the connection's service, once its info is complete.
    service: PerConnection,
    protocols: Arc<Protocols>,
    watcher: Watcher,
    /// Changes (or closes) when the listener stops. A connection that has
    /// not begun a request by then has nothing to drain and is closed.
    stop: watch::Receiver<bool>,
    /// How long the first bytes, or the TLS handshake, may take.
    first_bytes_timeout: Duration,
    /// A PROXY protocol header comes first, and names the client.
    proxy_protocol: bool,
    /// Counts the connection while it lives.
    _open: Open,
}

impl Accepted {
    /// Takes a PROXY protocol header off the stream when one is expected
    /// (bounded by the first-bytes timeout), and makes its source the peer.
    /// `false`: the connection is to be closed.
    async fn take_proxy_header(&mut self, stream: &mut TcpStream) -> bool {
        if !self.proxy_protocol {
            return true;
        }
        let remote = self.info.remote();
        let wait = self.first_bytes_timeout;
        let read = async { Some(tokio::time::timeout(wait, proxy_protocol::read(stream)).await) };
        match Box::pin(self.unless_stopped(read)).await {
            Some(Ok(Ok(source))) => {
                if let Some(source) = source {
                    self.info.set_remote(source);
                }
                true
            }
            Some(Ok(Err(e))) => {
                tracing::debug!(error = %e, %remote, "connection refused");
                false
            }
            Some(Err(_)) => {
                tracing::debug!(%remote, "PROXY protocol header timed out");
                false
            }
            None => false,
        }
    }

    /// `work`'s output, or `None` once the listener stops.
    async fn unless_stopped<T>(&mut self, work: impl Future<Output = Option<T>>) -> Option<T> {
        tokio::select! {
            out = work => out,
            _ = self.stop.changed() => None,
        }
    }

    /// Serves the connection to its end. A plain fn returning a small
    /// future: only the boxed connection and the peer's address are kept.
    /// It takes the box itself, so the box is freed here; a caller that
    /// moved out of it would hold the emptied allocation until it returned,
    /// that is for the connection's whole life.
    #[allow(clippy::boxed_local)] // the box is the point: see above
    fn serve<I>(self: Box<Self>, io: I, protocol: Protocol) -> impl Future<Output = ()>
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Accepted {
            info,
            service,
            protocols,
            watcher,
            _open: open,
            ..
        } = *self;
        let remote = info.remote();
        let conn = protocols.serve(io, protocol, service(info), watcher);
        async move {
            let _open = open;
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %remote, "connection ended with an error");
            }
        }
    }
}

/// One plain connection: HTTP/2 when it opens with the HTTP/2 preface
/// (prior knowledge), else HTTP/1.1. A client that sends nothing within
/// the first-bytes timeout is disconnected.
async fn serve_plain(mut stream: TcpStream, mut accepted: Box<Accepted>) {
    if !accepted.take_proxy_header(&mut stream).await {
        return;
    }
    let remote = accepted.info.remote();
    let wait = accepted.first_bytes_timeout;
    // Boxed, like the handshake below: the wait for the first bytes (two
    // timers, a select) is over once the connection is served, and would
    // otherwise stay in every connection's task for as long as it lives.
    let sniffed = Box::pin(accepted.unless_stopped(protocol::sniff(&stream, wait))).await;
    let Some(protocol) = sniffed else {
        tracing::debug!(%remote, "connection closed, silent or stopped before its first bytes");
        return;
    };
    accepted.serve(stream, protocol).await;
}

/// One TLS connection: the handshake (bounded by the first-bytes timeout),
/// then HTTP/2 when ALPN chose "h2", else HTTP/1.1. HTTP/2 over TLS needs
/// ALPN (RFC 9113, 3.2), so a client that offers none speaks HTTP/1.1.
async fn serve_tls(
    mut stream: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    mut accepted: Box<Accepted>,
) {
    if !accepted.take_proxy_header(&mut stream).await {
        return;
    }
    let remote = accepted.info.remote();
    let wait = accepted.first_bytes_timeout;
    let handshake = async move {
        match tokio::time::timeout(wait, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, %remote, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(%remote, "TLS handshake timed out");
                None
            }
        }
    };
    let Some(stream) = Box::pin(accepted.unless_stopped(handshake)).await else {
        return;
    };
    let (_, tls) = stream.get_ref();
    accepted.info.proto = "https";
    accepted.info.peer = crate::tls::peer_cert(tls).map(Arc::new);
    let protocol = match tls.alpn_protocol() {
        Some(b"h2") => Protocol::Http2,
        _ => Protocol::Http1,
    };
    accepted.serve(stream, protocol).await;
}

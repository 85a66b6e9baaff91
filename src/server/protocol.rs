//! Which HTTP version a connection speaks, and hyper's connection for it.
//!
//! A plain connection is classified by peeking at its first bytes, before
//! hyper reads anything. hyper-util's `auto` builder can do this too, but it
//! reads the 24-byte preface into its own buffer and replays it as a first
//! read of 24 bytes. hyper's HTTP/1.1 reader then asks for a full 8 KiB more
//! than it has, and its read buffer doubles to 16 KiB on every connection. It
//! also waits for those bytes without a timeout, so a client that never
//! speaks would hold its connection forever. A peek consumes nothing: hyper's
//! first read gets the whole request into one 8 KiB buffer, and the wait is
//! bounded by the header-read timeout.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::Watcher;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Settings;
use crate::server::stack::ConnService;

/// What a client opens an HTTP/2 connection with (RFC 9113, 3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How a connection will be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    Http2,
}

/// The protocol a connection's first bytes announce; `None` while they are
/// a start of the HTTP/2 preface but not all of it.
pub fn classify(first: &[u8]) -> Option<Protocol> {
    let seen = first.len().min(H2_PREFACE.len());
    if first[..seen] != H2_PREFACE[..seen] {
        Some(Protocol::Http1)
    } else if seen == H2_PREFACE.len() {
        Some(Protocol::Http2)
    } else {
        None
    }
}

/// How long to wait before looking again at a connection whose first bytes
/// could still be either protocol: a peek returns at once while any bytes
/// are there, so the rest of a split preface is waited for by time. Only a
/// client that splits its first 24 bytes across writes ever waits. The wait
/// doubles up to a cap, so that a client that stops half-way costs a few
/// dozen timer wake-ups until the timeout, not one every few milliseconds.
const FIRST_RECHECK: Duration = Duration::from_millis(2);
const MAX_RECHECK: Duration = Duration::from_millis(250);

/// Waits up to `wait` for enough of a plain connection's first bytes to
/// classify them. `None` when the client closed, failed or did not say
/// enough in time: the connection is then dropped, as a slow request head
/// would be.
pub async fn sniff(stream: &TcpStream, wait: Duration) -> Option<Protocol> {
    let deadline = Instant::now() + wait;
    let mut first = [0u8; H2_PREFACE.len()];
    let mut recheck = FIRST_RECHECK;
    loop {
        let n = tokio::time::timeout_at(deadline, stream.peek(&mut first))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        if let Some(protocol) = classify(&first[..n]) {
            return Some(protocol);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        tokio::time::sleep(recheck.min(left)).await;
        recheck = (recheck * 2).min(MAX_RECHECK);
    }
}

/// The connection builders, one per protocol, configured from one
/// listener's settings.
pub struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

type ConnectionError = Box<dyn StdError + Send + Sync>;
type ConnectionFuture = Pin<Box<dyn Future<Output = Result<(), ConnectionError>> + Send>>;

impl Protocols {
    pub fn new(settings: &Settings) -> Self {
        // Heads past limits.max_header_bytes are answered 431 with a JSON-RPC
        // error by `dispatch`; the HTTP layers only refuse (with a bare 431,
        // or by refusing the h2 stream) what is more than twice that, so such
        // a head is never buffered whole.
        let hard_limit = settings.max_header_bytes.saturating_mul(2);
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .keep_alive(true)
            // A client that trickles its headers (slowloris) is cut off.
            .header_read_timeout(settings.header_read_timeout)
            .max_header_size(hard_limit)
            .max_buf_size(hard_limit);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .max_concurrent_streams(settings.http2_max_concurrent_streams)
            .max_header_list_size(u32::try_from(hard_limit).unwrap_or(u32::MAX))
            // Rapid-reset floods (CVE-2023-44487): a client that opens and
            // resets streams faster than they are served is disconnected.
            .max_pending_accept_reset_streams(Some(HTTP2_MAX_PENDING_RESETS))
            .max_local_error_reset_streams(Some(HTTP2_MAX_LOCAL_ERROR_RESETS))
            // Dead peers behind idle connections are found and dropped.
            .keep_alive_interval(Some(HTTP2_KEEP_ALIVE_INTERVAL))
            .keep_alive_timeout(HTTP2_KEEP_ALIVE_TIMEOUT);
        Self { http1, http2 }
    }

    /// Serves one connection in `protocol` until it ends or, once `watcher`
    /// says so, drains.
    pub fn serve<I>(
        &self,
        io: I,
        protocol: Protocol,
        svc: ConnService,
        watcher: Watcher,
    ) -> ConnectionFuture
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io = TokioIo::new(io);
        // Boxed per protocol, so that an HTTP/1.1 connection's task is the
        // size of an HTTP/1.1 connection, not of an HTTP/2 one.
        match protocol {
            Protocol::Http1 => {
                let conn = watcher.watch(self.http1.serve_connection(io, svc));
                Box::pin(async move { conn.await.map_err(Into::into) })
            }
            Protocol::Http2 => {
                let conn = watcher.watch(self.http2.serve_connection(io, svc));
                Box::pin(async move { conn.await.map_err(Into::into) })
            }
        }
    }
}

const HTTP2_MAX_PENDING_RESETS: usize = 20;
const HTTP2_MAX_LOCAL_ERROR_RESETS: usize = 1024;
const HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const HTTP2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_preface_is_http2() {
        assert_eq!(classify(H2_PREFACE), Some(Protocol::Http2));
        let mut more = H2_PREFACE.to_vec();
        more.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(classify(&more), Some(Protocol::Http2));
    }

    #[test]
    fn anything_that_leaves_the_preface_is_http1() {
        for first in [
            &b"POST / HTTP/1.1\r\n"[..],
            b"GET /",
            b"X",
            b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n",
        ] {
            assert_eq!(classify(first), Some(Protocol::Http1), "{first:?}");
        }
    }

    #[test]
    fn a_start_of_the_preface_is_undecided() {
        for n in 1..H2_PREFACE.len() {
            assert_eq!(classify(&H2_PREFACE[..n]), None, "{n}");
        }
    }
}

//! Plain-HTTP/1.1 connections to one replica, kept for reuse in a LIFO list.
//!
//! hyper-util's legacy client costs ~8,600 instructions a call over hyper's
//! own connections (bench/profile.md): a checkout future that races a
//! connect, the pool key (scheme and authority) hashed at checkout and at
//! return, `HttpInfo` put in every answer. For `http://` replicas spoken to
//! over HTTP/1.1 (sidecars, in-cluster agents) the gateway keeps this list
//! instead; TLS and HTTP/2 replicas stay on the legacy client.
//!
//! What it keeps from the legacy client:
//! - the connect timeout, and a connect failure told apart from a failure
//!   after the request may have been written ([`Error::maybe_delivered`]);
//! - a request that a pooled connection gave back unwritten (it was
//!   closing) is sent on another connection;
//! - at most `max_idle` idle connections, each closed after `idle_timeout`
//!   by a reaper; one the agent closes is closed at once (its task ends).
//!
//! A connection goes back to the list when its answer's body is dropped (a
//! [`Lease`] travels with the body). An answer not read to its end makes
//! hyper close the connection; a checkout waits until a listed connection is
//! ready and skips one that closed.
//!
//! Streaming calls ([`Pool::send_stream`]) go on bare sockets read by
//! [`super::h1_stream`], not on hyper's connections (whose buffers an idle
//! stream would keep for hours). Their sockets come back to the same list
//! ([`Home`]) when a stream ends cleanly; a unary call may take one there
//! (hyper's handshake then makes it a connection of hyper's), and a stream
//! takes the most recent bare socket listed, or dials.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::answer::{AgentBody, Leased};
use super::h1_stream;
use super::lease::Lease;

type Sender = SendRequest<Full<Bytes>>;

/// One replica's idle connections.
pub struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    /// Host (an IP literal without brackets, or a name) and port to dial.
    host: String,
    port: u16,
    connect_timeout: Duration,
    max_idle: usize,
    idle_timeout: Duration,
    /// Most recently returned last: the warmest connection is reused first,
    /// and the coldest ones age out.
    idle: Mutex<Vec<Idle>>,
    reaper_started: AtomicBool,
}

struct Idle {
    conn: Kept,
    since: Instant,
}

/// An idle connection: hyper's, or a bare socket a stream gave back.
enum Kept {
    Hyper(Sender),
    Bare(TcpStream),
}

impl Kept {
    fn is_closed(&self) -> bool {
        match self {
            Kept::Hyper(sender) => sender.is_closed(),
            Kept::Bare(stream) => bare_is_closed(stream),
        }
    }
}

/// Whether an idle socket's agent closed it (or sent bytes nobody asked
/// for: the connection can no longer carry a call either way).
fn bare_is_closed(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    !matches!(stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Why a call on a pooled connection failed.
#[derive(Debug)]
pub enum Error {
    /// The host name did not resolve: nothing was sent.
    Resolve(std::io::Error),
    /// No connection could be made: nothing was sent.
    Connect(std::io::Error),
    /// The connection was not made within the connect timeout.
    ConnectTimeout,
    /// The call failed on a connection; `sent` if it may have been written.
    Call { error: hyper::Error, sent: bool },
    /// A streaming call failed after its connection was made: it may have
    /// been delivered.
    Stream(h1_stream::Error),
}

impl Error {
    /// Whether the agent may have received the request (then it must not
    /// be sent again).
    pub fn maybe_delivered(&self) -> bool {
        matches!(self, Error::Call { sent: true, .. } | Error::Stream(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Resolve(e) => write!(f, "dns error: {e}"),
            Error::Connect(e) => write!(f, "tcp connect error: {e}"),
            Error::ConnectTimeout => f.write_str("tcp connect timed out"),
            Error::Stream(e) => write!(f, "{e}"),
            Error::Call { error, .. } => {
                write!(f, "{error}")?;
                let mut source = std::error::Error::source(error);
                while let Some(e) = source {
                    write!(f, ": {e}")?;
                    source = e.source();
                }
                Ok(())
            }
        }
    }
}

impl Pool {
    /// A pool for `url`'s host and port; `None` unless it is `http://` (TLS
    /// replicas stay on the legacy client).
    pub fn for_url(
        url: &Uri,
        connect_timeout: Duration,
        max_idle: usize,
        idle_timeout: Duration,
    ) -> Option<Pool> {
        if url.scheme_str() != Some("http") {
            return None;
        }
        let host = url.host()?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(Pool {
            inner: Arc::new(Inner {
                host: host.to_owned(),
                port: url.port_u16().unwrap_or(80),
                connect_timeout,
                max_idle,
                idle_timeout,
                idle: Mutex::new(Vec::new()),
                reaper_started: AtomicBool::new(false),
            }),
        })
    }

    /// Sends `request` (origin-form URI, `Host` set) on an idle connection
    /// or a new one. The answer's body holds the connection (a [`Lease`]).
    pub async fn send(&self, mut request: Request<Full<Bytes>>) -> Result<Response<Leased>, Error> {
        loop {
            let (mut sender, reused) = self.checkout().await?;
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let back = Returning {
                        sender: Some(sender),
                        pool: Arc::clone(&self.inner),
                    };
                    let lease = Some(Lease::new(back));
                    return Ok(response.map(|body| Leased::new(AgentBody::from(body), lease)));
                }
                Err(mut e) => match e.take_message() {
                    // A pooled connection that was closing gave it back
                    // unwritten: safe to send on another.
                    Some(unsent) if reused => request = unsent,
                    unsent => {
                        return Err(Error::Call {
                            sent: unsent.is_none(),
                            error: e.into_error(),
                        })
                    }
                },
            }
        }
    }

    /// Sends a streaming call (`request`: origin-form URI, `Host` set) on
    /// a bare socket; its answer's body reads the socket itself.
    pub async fn send_stream(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Leased>, Error> {
        let (head, body) = request.into_parts();
        let body = crate::http::body::full_bytes(body).await;
        let stream = match self.inner.pop_bare() {
            Some(stream) => stream,
            None => self.inner.dial_nodelay().await?,
        };
        let inner = Arc::clone(&self.inner);
        let home: h1_stream::Home = Box::new(move |stream| inner.put(Kept::Bare(stream)));
        match h1_stream::call(stream, &head, &body, home).await {
            Ok(response) => {
                Ok(response.map(|body| Leased::new(AgentBody::Stream(Box::new(body)), None)))
            }
            Err(e) => Err(Error::Stream(e)),
        }
    }

    /// The warmest idle connection that is still usable, or a new one; and
    /// whether it was reused.
    async fn checkout(&self) -> Result<(Sender, bool), Error> {
        while let Some(idle) = self.inner.pop() {
            if idle.since.elapsed() >= self.inner.idle_timeout || idle.conn.is_closed() {
                continue;
            }
            let mut sender = match idle.conn {
                Kept::Hyper(sender) => sender,
                Kept::Bare(stream) => match Inner::handshake(stream).await {
                    Ok(sender) => sender,
                    Err(_) => continue,
                },
            };
            if sender.ready().await.is_ok() {
                return Ok((sender, true));
            }
        }
        Ok((self.inner.connect().await?, false))
    }

    /// Idle connections now (tests).
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.inner.lock().len()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Vec<Idle>> {
        // Every critical section leaves the list consistent.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently listed connection of hyper's, or else the most
    /// recent bare socket: unary calls leave the sockets streams can use
    /// to streams, so mixed traffic does not dial a socket per stream.
    fn pop(&self) -> Option<Idle> {
        let mut idle = self.lock();
        match idle.iter().rposition(|i| matches!(i.conn, Kept::Hyper(_))) {
            Some(at) => Some(idle.remove(at)),
            None => idle.pop(),
        }
    }

    /// The most recently listed bare socket still open (streams take these;
    /// the hyper connections around it stay listed).
    fn pop_bare(&self) -> Option<TcpStream> {
        let mut idle = self.lock();
        while let Some(at) = idle.iter().rposition(|i| matches!(i.conn, Kept::Bare(_))) {
            let taken = idle.remove(at);
            let fresh = taken.since.elapsed() < self.idle_timeout;
            match taken.conn {
                Kept::Bare(stream) if fresh && !bare_is_closed(&stream) => return Some(stream),
                _ => continue,
            }
        }
        None
    }

    async fn connect(&self) -> Result<Sender, Error> {
        Self::handshake(self.dial_nodelay().await?).await
    }

    /// hyper's HTTP/1.1 connection on `stream`, driven by a task of its own.
    async fn handshake(stream: TcpStream) -> Result<Sender, Error> {
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| Error::Call { error, sent: false })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "upstream connection ended");
            }
        });
        Ok(sender)
    }

    async fn dial_nodelay(&self) -> Result<TcpStream, Error> {
        let stream = self.dial().await?;
        stream.set_nodelay(true).map_err(Error::Connect)?;
        Ok(stream)
    }

    /// A TCP connection to the first of the host's addresses that answers.
    /// As hyper-util's connector does, each address gets an equal share of
    /// the connect timeout, so one that drops packets cannot use it all.
    async fn dial(&self) -> Result<TcpStream, Error> {
        let lookup = tokio::net::lookup_host((self.host.as_str(), self.port));
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(self.connect_timeout, lookup).await
        {
            Err(_) => return Err(Error::ConnectTimeout),
            Ok(Err(e)) => return Err(Error::Resolve(e)),
            Ok(Ok(addrs)) => addrs.collect(),
        };
        let each = self.connect_timeout / u32::try_from(addrs.len()).unwrap_or(u32::MAX).max(1);
        let mut last = None;
        for addr in addrs {
            match tokio::time::timeout(each, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => return Ok(stream),
                Ok(Err(e)) => last = Some(Error::Connect(e)),
                Err(_) => last = Some(Error::ConnectTimeout),
            }
        }
        Err(last.unwrap_or_else(|| {
            let why = format!("{} resolved to no address", self.host);
            Error::Resolve(std::io::Error::new(std::io::ErrorKind::NotFound, why))
        }))
    }

    /// Lists a connection whose answer is done with, if there is room.
    fn put(self: &Arc<Self>, conn: Kept) {
        if conn.is_closed() {
            return;
        }
        let mut idle = self.lock();
        if idle.len() >= self.max_idle {
            // Room taken by connections that closed since is room still.
            idle.retain(|i| !i.conn.is_closed());
            if idle.len() >= self.max_idle {
                return;
            }
        }
        idle.push(Idle {
            conn,
            since: Instant::now(),
        });
        drop(idle);
        self.start_reaper();
    }

    /// Once, on the first connection listed (a runtime is there then).
    fn start_reaper(self: &Arc<Self>) {
        if self.reaper_started.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(reap(Arc::downgrade(self)));
        }
    }

    /// Takes out the connections idle too long or closed.
    fn expired(&self, now: Instant) -> Vec<Idle> {
        let mut idle = self.lock();
        let (gone, kept) = idle
            .drain(..)
            .partition(|i| i.conn.is_closed() || now.duration_since(i.since) >= self.idle_timeout);
        *idle = kept;
        gone
    }
}

/// Closes idle connections past the idle timeout, every quarter of it,
/// until the pool is dropped.
async fn reap(pool: Weak<Inner>) {
    let Some(every) = pool.upgrade().map(|p| p.idle_timeout / 4) else {
        return;
    };
    let every = every.max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        let Some(pool) = pool.upgrade() else { return };
        // Dropped outside the lock: closing is hyper's work, not the list's.
        let expired = pool.expired(Instant::now());
        drop(expired);
    }
}

/// A connection on loan to an answer; back to the pool when dropped.
pub(super) struct Returning {
    sender: Option<Sender>,
    pool: Arc<Inner>,
}

impl Drop for Returning {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take() {
            self.pool.put(Kept::Hyper(sender));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    /// An agent answering every request on a connection with [`ANSWER`];
    /// counts connections accepted and those it saw closed.
    async fn agent() -> (Uri, Arc<[std::sync::atomic::AtomicUsize; 2]>) {
        let (listener, url) = listen().await;
        let counts: Arc<[std::sync::atomic::AtomicUsize; 2]> = Arc::default();
        let seen = counts.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                seen[0].fetch_add(1, Ordering::SeqCst);
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    // Every test request fits in one read.
                    while let Ok(1..) = stream.read(&mut buf).await {
                        if stream.write_all(ANSWER).await.is_err() {
                            break;
                        }
                    }
                    seen[1].fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (url, counts)
    }

    fn url_of(addr: SocketAddr) -> Uri {
        format!("http://{addr}/rpc").parse().unwrap()
    }

    /// A listener on a free loopback port, and its URL.
    async fn listen() -> (TcpListener, Uri) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = url_of(listener.local_addr().unwrap());
        (listener, url)
    }

    fn request() -> Request<Full<Bytes>> {
        Request::builder()
            .method("POST")
            .uri("/rpc")
            .header(header::HOST, "agent")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    }

    async fn read(response: Response<Leased>) -> Bytes {
        use http_body_util::BodyExt;
        response.into_body().collect().await.unwrap().to_bytes()
    }

    fn pool(url: &Uri, max_idle: usize, idle_timeout: Duration) -> Pool {
        Pool::for_url(url, Duration::from_secs(1), max_idle, idle_timeout).unwrap()
    }

    #[tokio::test]
    async fn a_connection_is_reused_once_its_answer_is_dropped() {
        let (url, counts) = agent().await;
        let pool = pool(&url, 4, Duration::from_secs(60));
        for _ in 0..5 {
            let answer = pool.send(request()).await.unwrap();
            assert_eq!(read(answer).await, "ok");
        }
        assert_eq!(counts[0].load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle(), 1);
        // An answer still held keeps its connection out of the list.
        let held = pool.send(request()).await.unwrap();
        let other = pool.send(request()).await.unwrap();
        assert_eq!(counts[0].load(Ordering::SeqCst), 2);
        assert_eq!(pool.idle(), 0);
        read(held).await;
        read(other).await;
        assert_eq!(pool.idle(), 2);
    }

    #[tokio::test]
    async fn a_streams_socket_comes_back_for_streams_and_calls_alike() {
        let (url, counts) = agent().await;
        let pool = pool(&url, 4, Duration::from_secs(60));
        let answer = pool.send_stream(request()).await.unwrap();
        // Not back while its answer is being read.
        assert_eq!(pool.idle(), 0);
        assert_eq!(read(answer).await, "ok");
        assert_eq!(pool.idle(), 1);
        let answer = pool.send_stream(request()).await.unwrap();
        assert_eq!(read(answer).await, "ok");
        // A unary call takes the bare socket into a connection of hyper's.
        let answer = pool.send(request()).await.unwrap();
        assert_eq!(read(answer).await, "ok");
        assert_eq!(
            counts[0].load(Ordering::SeqCst),
            1,
            "one connection for all three"
        );
        // A stream finds no bare socket under hyper's and dials.
        let answer = pool.send_stream(request()).await.unwrap();
        assert_eq!(read(answer).await, "ok");
        assert_eq!(counts[0].load(Ordering::SeqCst), 2);
        assert_eq!(pool.idle(), 2);
    }

    #[tokio::test]
    async fn a_stream_answer_read_to_its_length_gives_its_socket_back_at_once() {
        use http_body::Body as _;
        use http_body_util::BodyExt;
        let (url, _) = agent().await;
        let pool = pool(&url, 4, Duration::from_secs(60));
        let mut body = pool.send_stream(request()).await.unwrap().into_body();
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "ok");
        // hyper's server stops polling a body whose length has been written.
        assert!(body.is_end_stream());
        assert_eq!(pool.idle(), 1, "back before its end was polled for");
    }

    #[tokio::test]
    async fn a_stream_dropped_before_its_end_closes_its_socket() {
        let (url, counts) = agent().await;
        let pool = pool(&url, 4, Duration::from_secs(60));
        drop(pool.send_stream(request()).await.unwrap());
        assert_eq!(pool.idle(), 0);
        for _ in 0..100 {
            if counts[1].load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            counts[1].load(Ordering::SeqCst),
            1,
            "the agent saw it close"
        );
    }

    #[tokio::test]
    async fn past_max_idle_a_returned_connection_is_closed() {
        let (url, counts) = agent().await;
        let pool = pool(&url, 1, Duration::from_secs(60));
        let a = pool.send(request()).await.unwrap();
        let b = pool.send(request()).await.unwrap();
        drop((read(a).await, read(b).await));
        assert_eq!(pool.idle(), 1);
        let closed = || counts[1].load(Ordering::SeqCst);
        for _ in 0..100 {
            if closed() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(closed(), 1, "the surplus connection was closed");
    }

    #[tokio::test]
    async fn idle_connections_are_closed_after_the_idle_timeout() {
        let (url, counts) = agent().await;
        let pool = pool(&url, 4, Duration::from_millis(100));
        let answer = pool.send(request()).await.unwrap();
        read(answer).await;
        assert_eq!(pool.idle(), 1);
        for _ in 0..100 {
            if counts[1].load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(pool.idle(), 0);
        assert_eq!(
            counts[1].load(Ordering::SeqCst),
            1,
            "the agent saw it close"
        );
    }

    #[tokio::test]
    async fn a_refused_connect_is_a_connect_error_and_nothing_was_delivered() {
        let (listener, url) = listen().await;
        drop(listener);
        let e = pool(&url, 4, Duration::from_secs(60))
            .send(request())
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Connect(_)), "{e}");
        assert!(!e.maybe_delivered());
        assert!(e.to_string().starts_with("tcp connect error: "), "{e}");
    }

    #[tokio::test]
    async fn a_connect_that_hangs_times_out_and_nothing_was_delivered() {
        // An agent that never accepts: once its accept queue is full, the
        // kernel drops further handshakes and a connect hangs.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = socket.local_addr().unwrap();
        let _listener = socket.listen(0).unwrap();
        let mut queued = Vec::new();
        for _ in 0..4 {
            let dial = TcpStream::connect(addr);
            if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_millis(100), dial).await {
                queued.push(stream);
            }
        }
        let pool = Pool::for_url(
            &url_of(addr),
            Duration::from_millis(200),
            4,
            Duration::from_secs(60),
        );
        let started = Instant::now();
        let e = pool.unwrap().send(request()).await.unwrap_err();
        assert!(matches!(e, Error::ConnectTimeout), "{e}");
        assert!(!e.maybe_delivered());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_host_name_is_resolved_and_each_address_tried() {
        // `localhost` may resolve to ::1 first; the agent listens on
        // 127.0.0.1 only.
        let (url, counts) = agent().await;
        let port = url.port_u16().unwrap();
        let named: Uri = format!("http://localhost:{port}/rpc").parse().unwrap();
        let answer = pool(&named, 4, Duration::from_secs(60))
            .send(request())
            .await
            .unwrap();
        assert_eq!(read(answer).await, "ok");
        assert_eq!(counts[0].load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_answer_cut_short_may_have_been_delivered() {
        let (listener, url) = listen().await;
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            // Read the request, then hang up without an answer.
        });
        let e = pool(&url, 4, Duration::from_secs(60))
            .send(request())
            .await
            .unwrap_err();
        assert!(e.maybe_delivered(), "{e}");
    }

    #[test]
    fn only_plain_http_replicas_are_pooled_here() {
        let t = Duration::from_secs(1);
        let tls: Uri = "https://agent:8443/rpc".parse().unwrap();
        assert!(Pool::for_url(&tls, t, 1, t).is_none());
        let v6: Uri = "http://[::1]:9000/rpc".parse().unwrap();
        let p = Pool::for_url(&v6, t, 1, t).unwrap();
        assert_eq!((p.inner.host.as_str(), p.inner.port), ("::1", 9000));
        let bare: Uri = "http://agent/rpc".parse().unwrap();
        assert_eq!(Pool::for_url(&bare, t, 1, t).unwrap().inner.port, 80);
    }
}

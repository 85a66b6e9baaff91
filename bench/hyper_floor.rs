//! The floor a hyper-based proxy stands on: a reverse proxy with nothing but
//! hyper-util's server and legacy client, forwarding every request unchanged.
//! `bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR [own]`. Used to tell which
//! part of the gateway's cost is ours and which is the HTTP stack's
//! (bench/profile.md). With `own`, the upstream side is hyper's HTTP/1.1
//! connections in a pool of our own (`own_pool.rs`) instead of the legacy
//! client; with `own` and `FLOOR_PER_CORE=N` as well, it serves on N
//! single-threaded runtimes instead of one multi-threaded one. With `h2`,
//! the upstream side is the legacy client in HTTP/2 only (h2c), and each
//! request keeps its version: HTTP/2 on both legs, as gRPC must be
//! (bench/grpc.sh measures what that costs against HTTP/1.1).
mod own_pool;

use http::uri::{Authority, Scheme, Uri};
use http_body_util::{Either, Empty};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::future::Future;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(port), Some(upstream)) = (args.next(), args.next()) else {
        eprintln!("usage: bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR [own|h2]");
        std::process::exit(2);
    };
    let mode = args.next();
    let own = mode.as_deref() == Some("own");
    let h2 = mode.as_deref() == Some("h2");
    let Ok(authority) = upstream.parse::<Authority>() else {
        eprintln!("bad upstream address {upstream}");
        std::process::exit(2);
    };
    let per_core = std::env::var("FLOOR_PER_CORE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    if let (true, Some(n)) = (own, per_core) {
        // Each thread binds the port itself: port 0 would give each its own.
        let Some(port) = port.parse::<u16>().ok().filter(|p| *p != 0) else {
            eprintln!("FLOOR_PER_CORE needs a fixed LISTEN_PORT, got {port}");
            std::process::exit(2);
        };
        return serve_per_core(n, port, upstream);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse().unwrap_or(0)))
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        // Exits on SIGINT or SIGTERM, so that a profiler around it
        // (callgrind) writes its data.
        tokio::spawn(async {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = tokio::signal::ctrl_c() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            std::process::exit(0);
        });
        if own {
            return serve_own(listener, upstream).await;
        }
        let client: Client<HttpConnector, Incoming> = Client::builder(TokioExecutor::new())
            .http2_only(h2)
            .build(HttpConnector::new());
        serve(listener, move |mut req: Request<Incoming>| {
            let client = client.clone();
            let authority = authority.clone();
            async move {
                let mut parts = req.uri().clone().into_parts();
                parts.scheme = Some(Scheme::HTTP);
                parts.authority = Some(authority);
                if let Ok(uri) = Uri::from_parts(parts) {
                    *req.uri_mut() = uri;
                }
                // The upstream is spoken to in HTTP/1.1 whatever the
                // client used, as the gateway does by default; in HTTP/2
                // with `h2`.
                *req.version_mut() = match h2 {
                    true => http::Version::HTTP_2,
                    false => http::Version::HTTP_11,
                };
                answer(client.request(req).await)
            }
        })
        .await
    });
}

/// nginx's shape: `n` threads, each with a single-threaded runtime, its own
/// `SO_REUSEPORT` listener on `port` and its own pool, so a call never
/// leaves the thread that accepted it (no work stealing, no wake-ups across
/// threads). Ends with the process (SIGTERM's default action).
fn serve_per_core(n: usize, port: u16, upstream: String) {
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("runtime: {e}"));
                rt.block_on(async move {
                    let listener = reuseport_listener(port).unwrap_or_else(|e| panic!("bind: {e}"));
                    serve_own(listener, upstream).await
                })
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

fn reuseport_listener(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseport(true)?;
    socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
    socket.listen(1024)
}

/// Serves with the upstream side on a pool of our own (`own_pool.rs`).
async fn serve_own(listener: tokio::net::TcpListener, upstream: String) {
    let pool = own_pool::Pool::new(upstream);
    serve(listener, move |mut req: Request<Incoming>| {
        let pool = pool.clone();
        *req.version_mut() = http::Version::HTTP_11;
        async move { answer(pool.send(req).await) }
    })
    .await
}

/// Accepts connections for ever, each served by hyper-util's auto server.
async fn serve<H, F, B>(listener: tokio::net::TcpListener, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let answered = handler(req);
                async move { Ok::<_, Infallible>(answered.await) }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// The upstream's answer, or a bare 502.
fn answer<B, E>(result: Result<Response<B>, E>) -> Response<Either<B, Empty<bytes::Bytes>>> {
    match result {
        Ok(r) => r.map(Either::Left),
        Err(_) => {
            let mut r = Response::new(Either::Right(Empty::new()));
            *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
            r
        }
    }
}

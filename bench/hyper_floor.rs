//! The floor a hyper-based proxy stands on: a reverse proxy with nothing but
//! hyper-util's server and legacy client, forwarding every request unchanged.
//! `bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR [own]`. Used to tell which
//! part of the gateway's cost is ours and which is the HTTP stack's
//! (bench/profile.md). With `own`, the upstream side is hyper's HTTP/1.1
//! connections in a pool of our own (`own_pool.rs`) instead of the legacy
//! client.
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
        eprintln!("usage: bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR [own]");
        std::process::exit(2);
    };
    let own = args.next().is_some_and(|mode| mode == "own");
    let Ok(authority) = upstream.parse::<Authority>() else {
        eprintln!("bad upstream address {upstream}");
        std::process::exit(2);
    };
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
            let pool = own_pool::Pool::new(upstream);
            return serve(listener, move |mut req: Request<Incoming>| {
                let pool = pool.clone();
                *req.version_mut() = http::Version::HTTP_11;
                async move { answer(pool.send(req).await) }
            })
            .await;
        }
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
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
                // client used, as the gateway does by default.
                *req.version_mut() = http::Version::HTTP_11;
                answer(client.request(req).await)
            }
        })
        .await
    });
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

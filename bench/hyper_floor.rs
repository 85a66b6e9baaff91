//! The floor a hyper-based proxy stands on: a reverse proxy with nothing but
//! hyper-util's server and legacy client, forwarding every request unchanged.
//! `bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR`. Used to tell which part of
//! the gateway's cost is ours and which is the HTTP stack's (bench/profile.md).
use http::uri::{Authority, Scheme, Uri};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(port), Some(upstream)) = (args.next(), args.next()) else {
        eprintln!("usage: bench-hyper-floor LISTEN_PORT UPSTREAM_ADDR");
        std::process::exit(2);
    };
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
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
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
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let client = client.clone();
            let authority = authority.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |mut req: Request<Incoming>| {
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
                        let resp = match client.request(req).await {
                            Ok(r) => r.map(http_body_util::Either::Left),
                            Err(_) => {
                                let mut r = Response::new(http_body_util::Either::Right(
                                    http_body_util::Empty::new(),
                                ));
                                *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
                                r
                            }
                        };
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
}

//! `sink PORT`: an OTLP/HTTP trace receiver that takes every export and
//! keeps nothing (bench/traces.sh): `POST /v1/traces` is read whole and
//! answered 200 with an empty `ExportTraceServiceResponse` (zero bytes is
//! its protobuf encoding). It stands for a collector that keeps up, so
//! the gateway's own cost of tracing is what the bench sees.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;

pub fn main(args: &[String]) -> i32 {
    let Some(port) = args.first().and_then(|p| p.parse::<u16>().ok()) else {
        eprintln!("usage: bench-upstream sink PORT");
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench-upstream sink: {e}");
            return 1;
        }
    };
    runtime.block_on(async move {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("bench-upstream sink: cannot listen on {addr}: {e}");
                return 1;
            }
        };
        eprintln!("bench-upstream sink: listening on http://{addr}");
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = service_fn(
                    |request: hyper::Request<hyper::body::Incoming>| async move {
                        let ok = request.uri().path() == "/v1/traces";
                        let _ = request.into_body().collect().await;
                        let mut response = hyper::Response::new(Full::new(Bytes::new()));
                        if !ok {
                            *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        }
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/x-protobuf"),
                        );
                        Ok::<_, Infallible>(response)
                    },
                );
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    })
}

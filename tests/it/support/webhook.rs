//! A webhook receiver on loopback for the push relay's tests: it records
//! each POST's headers and body and answers as scripted.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// What the receiver got: headers and body.
#[derive(Debug, Clone)]
pub struct Received {
    pub host: String,
    pub token: Option<String>,
    pub authorization: Option<String>,
    pub body: Bytes,
}

/// The receiver's answers still to give: `(status, Retry-After)`.
pub type Script = Arc<Mutex<VecDeque<(u16, Option<&'static str>)>>>;

/// A webhook on loopback answering each POST with the next scripted
/// `(status, Retry-After)`, then 200.
pub struct Receiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start(script: Vec<(u16, Option<&'static str>)>) -> Receiver {
        Receiver::start_slow(script, Duration::ZERO).await
    }

    /// Each answer after `delay`.
    pub async fn start_slow(script: Vec<(u16, Option<&'static str>)>, delay: Duration) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let log = received.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, script) = (log.clone(), script.clone());
                tokio::spawn(async move {
                    let service =
                        service_fn(move |req| answer(req, log.clone(), script.clone(), delay));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver { addr, received }
    }

    pub fn got(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn answer(
    req: Request<Incoming>,
    log: Arc<Mutex<Vec<Received>>>,
    script: Script,
    delay: Duration,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let host = header("host").unwrap_or_default();
    let (token, authorization) = (header("x-a2a-notification-token"), header("authorization"));
    let body = req.into_body().collect().await.unwrap().to_bytes();
    log.lock().unwrap().push(Received {
        host,
        token,
        authorization,
        body,
    });
    // Recorded as it arrives; answered after the delay.
    tokio::time::sleep(delay).await;
    let (status, retry_after) = script.lock().unwrap().pop_front().unwrap_or((200, None));
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    if let Some(after) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", after.parse().unwrap());
    }
    Ok(response)
}

impl Receiver {
    /// Waits (bounded) until `n` posts have arrived; what arrived.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let until = tokio::time::Instant::now() + limit;
        while self.got().len() < n && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.got()
    }

    /// The webhook URL at `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }
}

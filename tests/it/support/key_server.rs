//! A JWKS / OIDC discovery server on loopback whose JWKS can change at
//! runtime: `/jwks` (counted, a little slow so concurrent fetches overlap)
//! and `/.well-known/openid-configuration`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// A JWKS / OIDC discovery server whose JWKS can change at runtime.
pub struct KeyServer {
    pub addr: SocketAddr,
    jwks: Arc<Mutex<Value>>,
    jwks_hits: Arc<AtomicUsize>,
    pub discovery_hits: Arc<AtomicUsize>,
    /// Status of the JWKS response (200 unless a test breaks it).
    pub status: Arc<AtomicU16>,
}

impl KeyServer {
    pub async fn start(keys: Vec<Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = KeyServer {
            addr: listener.local_addr().unwrap(),
            jwks: Arc::new(Mutex::new(json!({ "keys": keys }))),
            jwks_hits: Arc::new(AtomicUsize::new(0)),
            discovery_hits: Arc::new(AtomicUsize::new(0)),
            status: Arc::new(AtomicU16::new(200)),
        };
        let state = server.state();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| respond(state.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        server
    }

    fn state(&self) -> ServerState {
        ServerState {
            base: self.base(),
            jwks: self.jwks.clone(),
            jwks_hits: self.jwks_hits.clone(),
            discovery_hits: self.discovery_hits.clone(),
            status: self.status.clone(),
        }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_keys(&self, keys: Vec<Value>) {
        *self.jwks.lock().unwrap() = json!({ "keys": keys });
    }

    pub fn hits(&self) -> usize {
        self.jwks_hits.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct ServerState {
    base: String,
    jwks: Arc<Mutex<Value>>,
    jwks_hits: Arc<AtomicUsize>,
    discovery_hits: Arc<AtomicUsize>,
    status: Arc<AtomicU16>,
}

async fn respond(
    state: ServerState,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match req.uri().path() {
        "/jwks" => {
            state.jwks_hits.fetch_add(1, Ordering::SeqCst);
            // Slow enough that concurrent requests overlap the fetch.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let status = StatusCode::from_u16(state.status.load(Ordering::SeqCst)).unwrap();
            let body = state.jwks.lock().unwrap().to_string();
            (status, body)
        }
        "/.well-known/openid-configuration" => {
            state.discovery_hits.fetch_add(1, Ordering::SeqCst);
            let doc = json!({ "issuer": state.base, "jwks_uri": format!("{}/jwks", state.base) });
            (StatusCode::OK, doc.to_string())
        }
        _ => (StatusCode::NOT_FOUND, String::new()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    Ok(response)
}

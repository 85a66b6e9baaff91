//! The floor's `own` mode: upstream HTTP/1.1 connections from hyper's
//! `client::conn`, kept in a plain LIFO list instead of hyper-util's legacy
//! client. It measures what the legacy client costs over hyper itself (pool
//! keys hashed at checkout and return, a checkout future racing a connect,
//! `HttpInfo` on every answer), to size a pool of the gateway's own
//! (bench/profile.md). A bench tool only: no connect timeout, no idle limit.
use std::error::Error;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

pub type BoxError = Box<dyn Error + Send + Sync>;

pub struct Pool {
    addr: String,
    idle: Mutex<Vec<SendRequest<Incoming>>>,
}

impl Pool {
    pub fn new(addr: String) -> Arc<Self> {
        Arc::new(Self {
            addr,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Sends on an idle connection, or a new one; the connection goes back
    /// to the list when the answer's body is dropped.
    pub async fn send(
        self: &Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Response<Returning>, BoxError> {
        let mut sender = self.checkout().await?;
        let response = sender.send_request(request).await?;
        let back = Some((sender, Arc::clone(self)));
        Ok(response.map(|body| Returning { body, back }))
    }

    async fn checkout(&self) -> Result<SendRequest<Incoming>, BoxError> {
        loop {
            // The guard is dropped before any await.
            let idle = self.idle.lock().map(|mut list| list.pop()).unwrap_or(None);
            let Some(mut sender) = idle else { break };
            if sender.ready().await.is_ok() {
                return Ok(sender);
            }
        }
        let stream = tokio::net::TcpStream::connect(&self.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// An answer's body that returns its connection to the pool when dropped.
pub struct Returning {
    body: Incoming,
    back: Option<(SendRequest<Incoming>, Arc<Pool>)>,
}

impl Body for Returning {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        if let Some((sender, pool)) = self.back.take() {
            if !sender.is_closed() {
                if let Ok(mut list) = pool.idle.lock() {
                    list.push(sender);
                }
            }
        }
    }
}

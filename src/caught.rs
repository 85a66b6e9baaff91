//! A handler's future with its panics caught: a panic becomes a 500
//! JSON-RPC error instead of a dropped connection, logged with the
//! request's id.
//!
//! This is tower-http's `CatchPanic` without its body wrapper (that layer
//! boxes every response body twice more, two allocations a call for bodies
//! that are already one type), and futures' `catch_unwind().map(..)` as one
//! type: the stack boxes the handler's future and this guard together, in
//! one allocation, where the combinators needed a box of their own.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderValue, Response};
use pin_project_lite::pin_project;

use crate::body::Body;
use crate::error::GatewayError;

pin_project! {
    /// `inner`'s answer, or a 500 if polling it panicked.
    pub struct Caught<F> {
        #[pin]
        inner: F,
        // The request's `X-Request-Id`, for the line a panic logs.
        id: Option<HeaderValue>,
    }
}

impl<F> Caught<F> {
    pub fn new(inner: F, id: Option<HeaderValue>) -> Self {
        Self { inner, id }
    }
}

impl<F: Future<Output = Response<Body>>> Future for Caught<F> {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let inner = this.inner;
        // A future that panicked is not polled again: hyper polls a
        // service's future only until it is ready, and this one then is.
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(response)) => Poll::Ready(Ok(response)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Ok(panicked(payload.as_ref(), this.id.as_ref()))),
        }
    }
}

/// Logs the panic and answers for it.
fn panicked(payload: &(dyn Any + Send), id: Option<&HeaderValue>) -> Response<Body> {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let request_id = id.and_then(|v| v.to_str().ok()).unwrap_or("-");
    tracing::error!(request_id, panic = what, "the handler panicked");
    GatewayError::Internal("the gateway failed while handling this request".into())
        .into_response(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    // The lock is held across the handler's await on purpose: the panic's
    // line is logged there (see `log::capture::serial`).
    #[allow(clippy::await_holding_lock)]
    #[tokio::test]
    async fn a_panicking_handler_answers_500_with_a_json_rpc_error() {
        let _serial = crate::log::capture::serial();
        let answer = Caught::new(async { panic!("boom") }, None).await;
        let Ok(response) = answer;
        assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["jsonrpc"], "2.0");
        assert_eq!(value["error"]["code"], -32603, "{value}");
        assert!(value["id"].is_null(), "{value}");
    }

    #[allow(clippy::await_holding_lock)] // see the test above
    #[tokio::test]
    async fn a_panic_is_logged_with_the_request_id() {
        let _serial = crate::log::capture::serial();
        let capture = crate::log::capture::Capture::default();
        let _logging = capture.install(crate::config::LogFormat::Text);
        let id = HeaderValue::from_static("call-7");
        let Ok(response) = Caught::new(async { panic!("boom") }, Some(id)).await;
        assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        let text = capture.text();
        assert!(
            text.contains("ERROR") && text.contains(r#"request_id="call-7" panic="boom""#),
            "{text}"
        );
    }

    #[allow(clippy::await_holding_lock)] // see the test above
    #[tokio::test]
    async fn a_panic_after_a_pending_poll_is_caught_too() {
        let _serial = crate::log::capture::serial();
        let handler = async {
            tokio::task::yield_now().await;
            panic!("{}", String::from("late"))
        };
        let Ok(response) = Caught::new(handler, None).await;
        assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn a_handler_that_answers_is_passed_through() {
        let answer = Caught::new(async { Response::new(crate::body::full("ok")) }, None).await;
        let Ok(response) = answer;
        assert_eq!(response.status(), http::StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"ok");
    }
}

//! `POST /push/{id}`: where agents post notifications for the push relay
//! (`crate::push_relay::callback` checks and queues them). No client
//! credentials are asked for: agents hold none; the sealed id and the
//! token sealed with it are the credentials.

use http::request::Parts;
use http::{header, HeaderValue, Method, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::json;

use crate::http::body::{self, Body};
use crate::push_relay::callback::Callback;
use crate::state::AppState;

/// Answers one post to the callback; `id` is the path after `/push/`.
pub async fn serve(
    state: &AppState,
    callback: &Callback,
    parts: &Parts,
    id: &str,
    request_body: Incoming,
) -> Response<Body> {
    if parts.method != Method::POST {
        let why = "the push relay's callback takes POST".to_string();
        let mut response = answer(state, StatusCode::METHOD_NOT_ALLOWED, why);
        (response.headers_mut()).insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let (status, why) = callback.receive(id, &parts.headers, request_body).await;
    if status != StatusCode::ACCEPTED {
        tracing::info!(target: crate::push_relay::deliver::ACCESS_TARGET, status = status.as_u16(), why, "push callback refused");
    }
    answer(state, status, why)
}

fn answer(state: &AppState, status: StatusCode, why: String) -> Response<Body> {
    (state.metrics.push_callbacks)
        .with_label_values(&[status.as_str()])
        .inc();
    let text = match status {
        StatusCode::ACCEPTED => json!({"status": "queued"}),
        _ => json!({"error": why}),
    };
    let mut response = Response::new(body::full(text.to_string()));
    *response.status_mut() = status;
    (response.headers_mut()).insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

//! What every gRPC call brings in its metadata: the headers it is sent
//! with on its way through the gateway, and its deadline (`grpc-timeout`),
//! which bounds the whole call, a stream included.

use bytes::Bytes;
use futures_util::Stream;
use http::{header, HeaderMap};
use http_body_util::BodyExt;
use serde_json::Value;
use tonic::Status;

use crate::bridge::events::map_event_data;
use crate::http::body::Body;
use crate::http::error::grpc::status_from_code;
use crate::state::AppState;

/// The metadata that names the agent a call is for, as the path
/// `/agents/{name}` does for the other bindings: for clients that can set
/// metadata, and the only way a 0.3 gRPC call (no tenant) can name one.
pub(crate) const AGENT: &str = "a2a-agent";

/// The agent the call's `a2a-agent` metadata names, taken out of it
/// (`None`: none named). A name no agent has is NOT_FOUND.
pub(crate) fn agent_in(state: &AppState, headers: &mut HeaderMap) -> Result<Option<usize>, Status> {
    let Some(value) = headers.remove(AGENT) else {
        return Ok(None);
    };
    let name = value.to_str().unwrap_or("");
    match state.router.index(name) {
        Some(index) => Ok(Some(index)),
        None => {
            let name: String = name.chars().take(128).collect();
            let why = format!(
                "{AGENT} '{}': no agent here has that name",
                name.escape_default()
            );
            Err(Status::not_found(why))
        }
    }
}

/// An answer on its way back is read whole up to this size.
pub(crate) const MAX_ANSWER: usize = crate::relay::whole::MAX_ANSWER;

/// The deadline a call's `grpc-timeout` sets (`None`: none sent): up to
/// 8 digits and a unit, `H`, `M`, `S`, `m` (ms), `u` (µs) or `n` (ns).
pub(crate) fn deadline(headers: &HeaderMap) -> Result<Option<tokio::time::Instant>, String> {
    let Some(value) = headers.get("grpc-timeout") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("");
    let bad = || {
        format!(
            "grpc-timeout '{}' is not 1 to 8 digits and a unit (H, M, S, m, u, n)",
            text.escape_default()
        )
    };
    let split = text
        .len()
        .checked_sub(1)
        .filter(|&n| (1..=8).contains(&n))
        .ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let amount: u64 = (digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .ok_or_else(bad)?;
    let within = match unit {
        "H" => std::time::Duration::from_secs(amount * 3600),
        "M" => std::time::Duration::from_secs(amount * 60),
        "S" => std::time::Duration::from_secs(amount),
        "m" => std::time::Duration::from_millis(amount),
        "u" => std::time::Duration::from_micros(amount),
        "n" => std::time::Duration::from_nanos(amount),
        _ => return Err(bad()),
    };
    Ok(Some(tokio::time::Instant::now() + within))
}

pub(crate) use crate::relay::grpc::past_deadline;

/// The call's headers from its metadata: what is gRPC's own goes, the
/// rest (credentials, `a2a-version`, `a2a-extensions`, `a2a-skill`,
/// `traceparent`, …) is kept as a JSON-RPC call's headers would be.
pub(crate) fn headers(mut headers: HeaderMap) -> HeaderMap {
    headers.remove(header::TE);
    crate::http::hop_by_hop::clear_grpc_metadata(&mut headers, "application/json");
    headers
}

/// A stream that ends with DEADLINE_EXCEEDED at `deadline`.
pub(crate) fn bounded<T: Send + 'static>(
    events: Answers<T>,
    deadline: tokio::time::Instant,
) -> Answers<T> {
    use futures_util::StreamExt;
    Box::pin(futures_util::stream::unfold(
        Some(events),
        move |events| async move {
            let mut events = events?;
            tokio::select! {
                item = events.next() => item.map(|item| (item, Some(events))),
                _ = tokio::time::sleep_until(deadline) => Some((Err(past_deadline()), None)),
            }
        },
    ))
}

/// A server stream's answers.
pub(crate) type Answers<T> = std::pin::Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// An answer's JSON, read whole (bounded); empty is `{}` (an Empty).
pub(crate) async fn read_json(body: Body) -> Result<Value, Status> {
    let bytes = read_whole(body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(&bytes).map_err(not_json)
}

/// An answer's bytes, read whole (bounded).
pub(crate) async fn read_whole(body: Body) -> Result<Bytes, Status> {
    use crate::http::body::{read_to_limit, ReadError};
    let why = match read_to_limit(body, MAX_ANSWER).await {
        Ok(bytes) => return Ok(bytes),
        Err(ReadError::TooLarge) => format!("the agent's answer is over {MAX_ANSWER} bytes"),
        Err(ReadError::Body(_)) => "the agent's answer broke off".into(),
    };
    Err(status_from_code(-32052, why, None))
}

/// The status for an answer that is not JSON.
pub(crate) fn not_json(e: serde_json::Error) -> Status {
    status_from_code(-32006, format!("the agent's answer is not JSON: {e}"), None)
}

/// A stream's whole SSE events (the relay hands over whole events), each
/// event's data read by `read` from its JSON; the stream ends after an
/// error, and a body that breaks off ends it with UNAVAILABLE.
pub(crate) fn sse_items<T: Send + 'static>(
    body: Body,
    read: fn(Value) -> Result<T, Status>,
) -> impl Stream<Item = Result<T, Status>> + Send {
    let start = Some((body, std::collections::VecDeque::new()));
    futures_util::stream::unfold(start, move |state| async move {
        let (mut body, mut pending) = state?;
        loop {
            if let Some(item) = pending.pop_front() {
                let next = match &item {
                    Ok(_) => Some((body, pending)),
                    Err(_) => None,
                };
                return Some((item, next));
            }
            match body.frame().await {
                None => return None,
                Some(Err(_)) => {
                    let broken =
                        status_from_code(-32053, "the agent's stream broke off".into(), None);
                    return Some((Err(broken), None));
                }
                Some(Ok(frame)) => {
                    if let Some(events) = frame.data_ref() {
                        let _ = map_event_data::<std::convert::Infallible>(events, |data| {
                            pending.push_back(match serde_json::from_slice::<Value>(data) {
                                Ok(answer) => read(answer),
                                Err(e) => {
                                    let why = format!("an event is not JSON: {e}");
                                    Err(status_from_code(-32006, why, None))
                                }
                            });
                            Ok((None, Vec::new()))
                        });
                    }
                }
            }
        }
    })
}

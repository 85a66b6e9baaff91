//! Finding a task's owner when no one here remembers it (the task was
//! created through another replica, or before a restart): ask the
//! upstreams, in parallel and briefly, and take the first that knows it.

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::request::Parts;
use serde_json::{json, Value};

use crate::a2a::Version;
use crate::upstream::{Caller, Origin, Upstream};

/// The client whose call needs the owner: its headers (credentials
/// filtered as for the call itself) go with the probes.
pub struct Client<'a> {
    pub parts: &'a Parts,
    pub origin: &'a Origin,
    pub caller: &'a Caller<'a>,
}

/// At most this many upstreams are asked at once.
const CONCURRENCY: usize = 16;
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The body of a `tasks/get` (or `GetTask`) for `task` in `version`.
fn ask(task: &str, version: Version) -> Bytes {
    let method = if version == Version::V1_0 {
        "GetTask"
    } else {
        "tasks/get"
    };
    let body = json!({
        "jsonrpc": "2.0",
        "id": "a2a-gateway-probe",
        "method": method,
        "params": {"id": task, "historyLength": 0},
    });
    Bytes::from(body.to_string())
}

/// The index of the first candidate whose `tasks/get` (or `GetTask`) for
/// `task` succeeds, carrying the client's own headers (the upstream may
/// require its credentials to read the task). Each candidate is asked in
/// its own version (`candidates` pairs an upstream with it).
pub async fn find_owner(
    upstreams: &[std::sync::Arc<Upstream>],
    candidates: &[(usize, Version)],
    client: &Client<'_>,
    task: &str,
    limit: Duration,
) -> Option<usize> {
    // Collected first: an iterator adapter holding this closure would have
    // to live across the awaits below, which the compiler cannot prove Send.
    let asks: Vec<_> = candidates.iter().copied().filter_map(|(i, version)| {
        let upstream = upstreams.get(i)?;
        let mut parts = client.parts.clone();
        if version == Version::V1_0 {
            parts.headers.insert("a2a-version", http::HeaderValue::from_static("1.0"));
        } else {
            parts.headers.remove("a2a-version");
        }
        let call = upstream.rpc_call_as(&parts, ask(task, version), client.origin.clone(), client.caller);
        Some(async move {
            let answer = upstream.exchange_call(call, MAX_ANSWER_BYTES, limit).await;
            let owns = matches!(&answer, Ok((status, _, bytes)) if status.is_success() && has_result(bytes));
            tracing::debug!(upstream = %upstream.name, task, owns, "task owner probe");
            owns.then_some(i)
        })
    }).collect();
    let mut answers = stream::iter(asks).buffer_unordered(CONCURRENCY);
    while let Some(answer) = answers.next().await {
        if answer.is_some() {
            return answer;
        }
    }
    None
}

fn has_result(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("result").map(|r| !r.is_null()))
        .unwrap_or(false)
}

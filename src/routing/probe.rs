//! Finding a task's owner when no one here remembers it (the task was
//! created through another replica, or before a restart): ask the
//! upstreams, in parallel and briefly, and take the first that knows it.

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::request::Parts;
use serde_json::{json, Value};

use crate::a2a::grpc::call as grpc;
use crate::a2a::rest_call::rest_call;
use crate::a2a::{Family, Version};
use crate::upstream::{Caller, Origin, Upstream};

/// The client whose call needs the owner: its headers (credentials
/// filtered as for the call itself) go with the probes.
pub struct Client<'a> {
    pub parts: &'a Parts,
    pub origin: &'a Origin,
    pub caller: &'a Caller<'a>,
}

/// How a candidate is asked: over JSON-RPC in its version, over its
/// HTTP+JSON 1.0 interface at this path, or over its gRPC interface at
/// this origin, in this version (`crate::bridge::door`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    JsonRpc(Version),
    Rest(String),
    Grpc(http::Uri, Version),
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
/// its own dialect (`candidates` pairs an upstream with it).
pub async fn find_owner(
    upstreams: &[std::sync::Arc<Upstream>],
    candidates: &[(usize, Ask)],
    client: &Client<'_>,
    task: &str,
    limit: Duration,
) -> Option<usize> {
    let span = client.caller.trace.map(|t| t.probe(task));
    // Collected first: an iterator adapter holding this closure would have
    // to live across the awaits below, which the compiler cannot prove Send.
    let asks: Vec<_> = candidates
        .iter()
        .filter_map(|(i, how)| {
            let (i, upstream) = (*i, upstreams.get(*i)?);
            let mut parts = client.parts.clone();
            if *how == Ask::JsonRpc(Version::V1_0)
                || matches!(how, Ask::Rest(_) | Ask::Grpc(_, Version::V1_0))
            {
                parts
                    .headers
                    .insert("a2a-version", http::HeaderValue::from_static("1.0"));
            } else {
                parts.headers.remove("a2a-version");
            }
            let origin = client.origin.clone();
            let call = match how {
                Ask::JsonRpc(version) => {
                    upstream.rpc_call_as(&parts, ask(task, *version), origin, client.caller)
                }
                Ask::Rest(path) => {
                    parts.headers.remove(http::header::CONTENT_TYPE);
                    let get = rest_call(
                        Family::GetTask,
                        Some(&json!({"id": task, "historyLength": 0})),
                        path,
                    )
                    .ok()?;
                    let call = upstream.rpc_call_as(&parts, Bytes::new(), origin, client.caller);
                    call.at_path(get.method, &get.path_and_query).ok()?
                }
                Ask::Grpc(at, version) => {
                    let get = match version {
                        Version::V1_0 => json!({"id": task, "historyLength": 0}),
                        _ => json!({"name": format!("tasks/{task}")}),
                    };
                    let (rpc, message) = grpc::request(*version, Family::GetTask, get).ok()?;
                    let target = format!(
                        "{}{}",
                        at.to_string().trim_end_matches('/'),
                        grpc::path(*version, rpc)
                    );
                    parts.headers.insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/grpc"),
                    );
                    let call =
                        upstream.rpc_call_as(&parts, grpc::framed(&message), origin, client.caller);
                    call.grpc(target.parse().ok()?)
                }
            };
            let mut call = call;
            if let Some(span) = &span {
                span.inject(call.headers_mut());
            }
            let rest = matches!(how, Ask::Rest(_));
            let grpc = matches!(how, Ask::Grpc(..));
            Some(async move {
                let answer = upstream.exchange_call(call, MAX_ANSWER_BYTES, limit).await;
                let owns = match &answer {
                    // A task came back: a message, not a trailers-only status.
                    Ok((status, headers, bytes)) if grpc => {
                        status.is_success()
                            && headers.get("grpc-status").is_none()
                            && bytes.len() > 5
                    }
                    Ok((status, _, bytes)) => status.is_success() && has_result(bytes, rest),
                    Err(_) => false,
                };
                tracing::debug!(upstream = %upstream.name, task, owns, "task owner probe");
                owns.then_some(i)
            })
        })
        .collect();
    let asked = asks.len();
    let mut answers = stream::iter(asks).buffer_unordered(CONCURRENCY);
    let mut owner = None;
    while let Some(answer) = answers.next().await {
        if answer.is_some() {
            owner = answer;
            break;
        }
    }
    if let Some(span) = span {
        let name = owner
            .and_then(|i| upstreams.get(i))
            .map(|u| u.name.as_str());
        span.end(asked, name);
    }
    owner
}

/// A JSON-RPC answer with a result, or (from an HTTP+JSON interface) the
/// task itself.
fn has_result(body: &[u8], rest: bool) -> bool {
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    match rest {
        true => answer.get("id").is_some_and(Value::is_string),
        false => answer.get("result").is_some_and(|r| !r.is_null()),
    }
}

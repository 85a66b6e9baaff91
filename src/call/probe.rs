//! Finding a task's owner when no one here remembers it (the task was
//! created through another replica, or before a restart): ask the
//! upstreams, in parallel and briefly, and take the first that knows it.
//! Each is asked with a `GetTask` in the binding and version the call
//! itself would take, built by that agent binding (`crate::egress`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::request::Parts;
use http::Uri;
use serde_json::Value;

use crate::a2a::{jsonrpc, Family, Version};
use crate::egress;
use crate::telemetry::trace::Probe;
use crate::upstream::{Caller, Exchanged, Origin, RpcCall, Upstream};

/// The client whose call needs the owner: its headers (credentials
/// filtered as for the call itself) go with the probes.
pub(super) struct Client<'a> {
    pub(super) parts: &'a Parts,
    pub(super) origin: &'a Origin,
    pub(super) caller: &'a Caller<'a>,
}

/// The agent binding a candidate is asked over, as the call's plan would
/// pick it: JSON-RPC in a version, or the agent's HTTP+JSON interface at a
/// path, or its gRPC interface at an origin, each in a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ask {
    JsonRpc(Version),
    Rest(String, Version),
    Grpc(Uri, Version),
}

/// At most this many upstreams are asked at once.
const CONCURRENCY: usize = 16;
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// `GetTask`'s params for `task` (the same in every version): what the
/// REST and gRPC agent bindings encode.
fn get_task_params(task: &str) -> Value {
    serde_json::json!({"id": task, "historyLength": 0})
}

/// `GetTask` for `task` as a JSON-RPC call in `version`.
fn get_task(task: &str, version: Version) -> Bytes {
    let method = match version {
        Version::V1_0 => "GetTask",
        _ => "tasks/get",
    };
    let params = get_task_params(task);
    let call = jsonrpc::request_body(Some("a2a-gateway-probe"), method, &params);
    Bytes::from(call.unwrap_or_default())
}

/// The probe of one candidate, in its agent binding.
fn request(upstream: &Upstream, how: &Ask, client: &Client<'_>, task: &str) -> Option<RpcCall> {
    let (mut parts, origin) = (client.parts.clone(), client.origin.clone());
    let caller = client.caller;
    let call = match how {
        Ask::JsonRpc(version) => {
            crate::bridge::headers::for_agent(&mut parts.headers, *version);
            crate::http::body::set_json(&mut parts.headers);
            upstream.rpc_call_from(parts, get_task(task, *version), origin, caller)
        }
        Ask::Rest(path, version) => {
            let to = (path.as_str(), *version);
            let get = Some(get_task_params(task));
            egress::rest::call(upstream, parts, get, Family::GetTask, to, origin, caller).ok()?
        }
        Ask::Grpc(at, version) => {
            let at = (at, *version);
            let get = Some(get_task_params(task));
            egress::grpc::call(upstream, parts, get, Family::GetTask, at, origin, caller).ok()?
        }
    };
    Some(call)
}

/// Whether the candidate's answer is the task: a JSON-RPC result, the
/// task itself from an HTTP+JSON interface, or a gRPC message (not a
/// trailers-only status).
fn owns(how: &Ask, (status, headers, bytes): &Exchanged) -> bool {
    if !status.is_success() {
        return false;
    }
    if matches!(how, Ask::Grpc(..)) {
        return headers.get("grpc-status").is_none() && bytes.len() > 5;
    }
    let Ok(answer) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    match how {
        Ask::Rest(..) => answer.get("id").is_some_and(Value::is_string),
        _ => answer.get("result").is_some_and(|r| !r.is_null()),
    }
}

/// The index of the first candidate whose `GetTask` for `task` succeeds,
/// carrying the client's own headers (the upstream may require its
/// credentials to read the task).
pub(super) async fn find_owner(
    upstreams: &[Arc<Upstream>],
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
            let upstream = upstreams.get(*i)?;
            let mut call = request(upstream, how, client, task)?;
            if let Some(span) = &span {
                span.inject(call.headers_mut());
            }
            Some(async move {
                let answer = upstream.exchange_call(call, MAX_ANSWER_BYTES, limit).await;
                let owns = answer.as_ref().is_ok_and(|answer| owns(how, answer));
                tracing::debug!(upstream = %upstream.name, task, owns, "task owner probe");
                owns.then_some(*i)
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
    end(span, asked, owner.and_then(|i| upstreams.get(i)));
    owner
}

fn end(span: Option<Probe>, asked: usize, owner: Option<&Arc<Upstream>>) {
    if let Some(span) = span {
        span.end(asked, owner.map(|u| u.name.as_str()));
    }
}

//! The HTTP+JSON front door on anything: an HTTP method, a path, a query
//! and a body, placed (`a2a::rest::place`) and joined (`with_body`).
//! Invariants: never a panic; a placed call's params are a JSON object,
//! and its path ids are non-empty, without a slash, and not dot segments.
//!
//! Input: byte 0 = the HTTP method (mod 5); then the path, the query and
//! the body, separated by 0xFF bytes.
#![no_main]

use a2a_gateway::a2a::rest::{place, with_body};
use http::Method;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::DELETE,
    Method::PUT,
    Method::PATCH,
];

fuzz_target!(|data: &[u8]| routes(data));

fn routes(data: &[u8]) {
    let Some((&m, rest)) = data.split_first() else {
        return;
    };
    let method = &METHODS[usize::from(m) % METHODS.len()];
    let mut parts = rest.split(|&b| b == 0xFF);
    let (Some(path), query, body) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let (Ok(path), Some(query)) = (
        std::str::from_utf8(path),
        query.map(std::str::from_utf8).and_then(Result::ok),
    ) else {
        return;
    };
    let Ok(mut placed) = place(method, path, Some(query).filter(|q| !q.is_empty())) else {
        return;
    };
    let Value::Object(params) = &placed.params else {
        panic!("params are not an object: {}", placed.params);
    };
    for key in ["id", "taskId"] {
        if let Some(id) = params.get(key).and_then(Value::as_str) {
            assert!(
                !id.is_empty() && !id.contains('/') && id != "." && id != "..",
                "a path id that names no task: {id:?}"
            );
        }
    }
    if let Some(Ok(body)) = body.map(serde_json::from_slice::<Value>) {
        if with_body(&mut placed, body).is_ok() {
            assert!(placed.params.is_object());
        }
    }
}

//! The HTTP+JSON front door on anything: an HTTP method, a path, a query
//! and a body, placed (`a2a::rest::place`, 1.0, 0.3 and tenant routes),
//! the body read as 0.3's where the route is (`bridge::v03::rest`) and
//! joined (`with_body`); and the back door's way out (`rest_call`).
//! Invariants: never a panic; a placed call's params are a JSON object,
//! and its path ids are non-empty, without a slash, and not dot segments;
//! a call placed without a tenant, said again as a REST request by
//! `rest_call`, is placed as the same call (a tenant may be read back as
//! a route: the spec's routes are ambiguous there, a route wins).
//!
//! Input: byte 0 = the HTTP method (mod 5); then the path, the query and
//! the body, separated by 0xFF bytes.
#![no_main]

use a2a_gateway::a2a::rest::{place, with_body};
use a2a_gateway::a2a::rest_call::rest_call;
use a2a_gateway::bridge::v03;
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
    let family = placed.method.family;
    if !params.contains_key("tenant") && !placed.v03 {
        let call = rest_call(family, Some(&placed.params), "")
            .unwrap_or_else(|e| panic!("a placed call is no REST call: {e}: {}", placed.params));
        let (path, query) = match call.path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (call.path_and_query.as_str(), None),
        };
        let again = place(&call.method, path, query)
            .unwrap_or_else(|e| panic!("{} {path} is not placed again: {e:?}", call.method));
        assert_eq!(again.method.family, family);
        assert_eq!(again.params, placed.params);
    }
    if let Some(Ok(body)) = body.map(serde_json::from_slice::<Value>) {
        let _ = v03::rest::OUT.answer(family, body.clone());
        let body = match placed.v03 {
            true => match v03::rest::body_in(family, body) {
                Ok(body) => body,
                Err(_) => return,
            },
            false => body,
        };
        if with_body(&mut placed, body).is_ok() {
            assert!(placed.params.is_object());
        }
    }
}

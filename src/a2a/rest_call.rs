//! The other way round from `super::rest`: a 1.0 call's params as the
//! HTTP+JSON request that an agent serving that binding takes (the
//! `google.api.http` routes of `lf.a2a.v1.A2AService`). Path ids come out
//! of the params, the members a route reads from the query go to the
//! query, and what is left is the body of a POST route.
//!
//! A route without a body (GET, DELETE) cannot carry other members: its
//! request message has none but `metadata` (0.3's `tasks/get` had it),
//! which is dropped, and anything else is refused, naming it. A `tenant`
//! member becomes the route's `/{tenant}` prefix.

use http::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};

use super::methods::Family;

/// What a path id keeps as it is: RFC 3986's unreserved characters.
const PATH_ID: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// An HTTP+JSON request: method, the path under the interface's own path
/// (with its query), and the body of a POST route.
#[derive(Debug, PartialEq)]
pub struct RestCall {
    pub method: Method,
    pub path_and_query: String,
    pub body: Option<Vec<u8>>,
}

/// The request for a call of `family` with the 1.0 `params`, under the
/// interface's path `prefix` (`/rest`, or `` for the origin's root).
pub fn rest_call(family: Family, params: Option<&Value>, prefix: &str) -> Result<RestCall, String> {
    let mut params = match params {
        Some(Value::Object(params)) => params.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err("params must be a JSON object".into()),
    };
    let mut path = String::with_capacity(64);
    path.push_str(prefix.trim_end_matches('/'));
    if let Some(tenant) = take_text(&mut params, "tenant")?.filter(|t| !t.is_empty()) {
        push_id(&mut path, &tenant, "tenant")?;
    }
    let (method, query) = route_of(family, &mut path, &mut params)?;
    push_query(&mut path, &mut params, query)?;
    let body = body_of(&method, params, &path)?;
    if path.is_empty() {
        path.push('/');
    }
    Ok(RestCall {
        method,
        path_and_query: path,
        body,
    })
}

/// The HTTP method, path (appended to `path`) and query members of
/// `family`'s route; path ids are taken out of `params`.
fn route_of(
    family: Family,
    path: &mut String,
    params: &mut Map<String, Value>,
) -> Result<(Method, &'static [&'static str]), String> {
    use Family::*;
    let found: (Method, &'static [&'static str]) = match family {
        Send => (Method::POST, route(path, "/message:send")),
        Stream => (Method::POST, route(path, "/message:stream")),
        GetTask => {
            task_path(path, params, "id", "")?;
            (Method::GET, &["historyLength"])
        }
        ListTasks => {
            path.push_str("/tasks");
            let query: &[&str] = &[
                "contextId",
                "status",
                "pageSize",
                "pageToken",
                "historyLength",
                "statusTimestampAfter",
                "includeArtifacts",
            ];
            (Method::GET, query)
        }
        CancelTask => {
            task_path(path, params, "id", ":cancel")?;
            (Method::POST, &[])
        }
        Resubscribe => {
            task_path(path, params, "id", ":subscribe")?;
            (Method::GET, &[])
        }
        PushSet => {
            task_path(path, params, "taskId", "/pushNotificationConfigs")?;
            (Method::POST, &[])
        }
        PushList => {
            task_path(path, params, "taskId", "/pushNotificationConfigs")?;
            (Method::GET, &["pageSize", "pageToken"])
        }
        PushGet | PushDelete => {
            task_path(path, params, "taskId", "/pushNotificationConfigs")?;
            let id = take_text(params, "id")?.ok_or("'id' (the config's) is required")?;
            push_id(path, &id, "id")?;
            let method = if family == PushGet {
                Method::GET
            } else {
                Method::DELETE
            };
            (method, &[])
        }
        ExtendedCard => (Method::GET, route(path, "/extendedAgentCard")),
    };
    Ok(found)
}

/// A POST's body: what is left of the params. Other methods carry none, so
/// a member left over cannot be carried (metadata aside).
fn body_of(
    method: &Method,
    mut params: Map<String, Value>,
    path: &str,
) -> Result<Option<Vec<u8>>, String> {
    match *method {
        Method::POST => serde_json::to_vec(&Value::Object(params))
            .map(Some)
            .map_err(|e| e.to_string()),
        _ => {
            params.remove("metadata");
            if let Some(name) = params.keys().next() {
                return Err(format!("'{name}' cannot be carried by {method} {path}"));
            }
            Ok(None)
        }
    }
}

fn route(path: &mut String, suffix: &str) -> &'static [&'static str] {
    path.push_str(suffix);
    &[]
}

/// `/tasks/{id}` and what follows it, taking the id out of the params
/// (under its JSON name or its proto name).
fn task_path(
    path: &mut String,
    params: &mut Map<String, Value>,
    member: &str,
    suffix: &str,
) -> Result<(), String> {
    let id = take_text(params, member)?.ok_or_else(|| format!("'{member}' is required"))?;
    path.push_str("/tasks");
    push_id(path, &id, member)?;
    path.push_str(suffix);
    Ok(())
}

/// `/` and the id, percent-encoded; an id that would be a dot segment or
/// nothing names no resource in a path.
fn push_id(path: &mut String, id: &str, member: &str) -> Result<(), String> {
    if id.is_empty() || id == "." || id == ".." {
        return Err(format!("'{member}' ({id:?}) cannot be a path segment"));
    }
    path.push('/');
    path.extend(utf8_percent_encode(id, PATH_ID));
    Ok(())
}

/// A text member, under its JSON name or its proto name (`taskId`,
/// `task_id`), taken out of the params.
fn take_text(params: &mut Map<String, Value>, member: &str) -> Result<Option<String>, String> {
    match take(params, member) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("'{member}' must be a string, not {other}")),
    }
}

fn take(params: &mut Map<String, Value>, member: &str) -> Option<Value> {
    params
        .remove(member)
        .or_else(|| params.remove(&to_snake(member)))
}

fn to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The members `names` as the query (numbers, booleans and text as their
/// text); a member that is an object or a list cannot be one.
fn push_query(
    path: &mut String,
    params: &mut Map<String, Value>,
    names: &[&str],
) -> Result<(), String> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for name in names {
        let text = match take(params, name) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s,
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            Some(other) => return Err(format!("'{name}' cannot be a query parameter: {other}")),
        };
        query.append_pair(name, &text);
        any = true;
    }
    if any {
        path.push('?');
        path.push_str(&query.finish());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(family: Family, params: Value) -> RestCall {
        rest_call(family, Some(&params), "/rest").unwrap()
    }

    fn body(call: &RestCall) -> Value {
        serde_json::from_slice(call.body.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn every_operation_has_its_route() {
        let send = call(Family::Send, json!({"message": {"messageId": "m"}}));
        assert_eq!(
            (send.method.clone(), send.path_and_query.as_str()),
            (Method::POST, "/rest/message:send")
        );
        assert_eq!(body(&send), json!({"message": {"messageId": "m"}}));
        let get = call(Family::GetTask, json!({"id": "t 1", "historyLength": 2}));
        assert_eq!(get.path_and_query, "/rest/tasks/t%201?historyLength=2");
        assert_eq!((get.method, get.body), (Method::GET, None));
        let cancel = call(Family::CancelTask, json!({"id": "t", "metadata": {"a": 1}}));
        assert_eq!(cancel.path_and_query, "/rest/tasks/t:cancel");
        assert_eq!(body(&cancel), json!({"metadata": {"a": 1}}));
        let sub = call(Family::Resubscribe, json!({"id": "t"}));
        assert_eq!(
            (sub.method, sub.path_and_query.as_str()),
            (Method::GET, "/rest/tasks/t:subscribe")
        );
        let list = call(
            Family::ListTasks,
            json!({"contextId": "c", "pageSize": 5, "includeArtifacts": true}),
        );
        assert_eq!(
            list.path_and_query,
            "/rest/tasks?contextId=c&pageSize=5&includeArtifacts=true"
        );
        let set = call(Family::PushSet, json!({"taskId": "t", "url": "https://h/"}));
        assert_eq!(set.path_and_query, "/rest/tasks/t/pushNotificationConfigs");
        assert_eq!(body(&set), json!({"url": "https://h/"}));
        let del = call(Family::PushDelete, json!({"task_id": "t", "id": "p/1"}));
        assert_eq!(
            (del.method, del.path_and_query.as_str()),
            (
                Method::DELETE,
                "/rest/tasks/t/pushNotificationConfigs/p%2F1"
            )
        );
    }

    #[test]
    fn a_tenant_is_the_routes_prefix_and_the_root_has_none() {
        let get = rest_call(
            Family::GetTask,
            Some(&json!({"id": "t", "tenant": "acme"})),
            "",
        )
        .unwrap();
        assert_eq!(get.path_and_query, "/acme/tasks/t");
        let list = rest_call(Family::ListTasks, None, "/").unwrap();
        assert_eq!(list.path_and_query, "/tasks");
    }

    #[test]
    fn what_a_route_cannot_carry_is_refused() {
        let why = |family, params: Value| rest_call(family, Some(&params), "").unwrap_err();
        assert!(why(Family::GetTask, json!({})).contains("'id' is required"));
        assert!(why(Family::GetTask, json!({"id": ".."})).contains("path segment"));
        assert!(why(Family::GetTask, json!({"id": "t", "color": 1})).contains("'color'"));
        assert!(why(Family::ListTasks, json!({"status": ["a"]})).contains("query"));
        assert!(why(Family::Send, json!([1])).contains("object"));
        let get = rest_call(
            Family::GetTask,
            Some(&json!({"id": "t", "metadata": {}})),
            "",
        );
        assert_eq!(
            get.unwrap().path_and_query,
            "/tasks/t",
            "0.3's metadata is dropped"
        );
    }

    #[test]
    fn what_is_placed_is_what_was_called() {
        // Round trip through the front door's reader.
        for (family, params) in [
            (Family::GetTask, json!({"id": "a:b c", "historyLength": 4})),
            (
                Family::ListTasks,
                json!({"contextId": "c", "pageToken": "x&y"}),
            ),
            (Family::PushGet, json!({"taskId": "t", "id": "p"})),
        ] {
            let c = rest_call(family, Some(&params), "").unwrap();
            let (path, query) = match c.path_and_query.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (c.path_and_query.as_str(), None),
            };
            let placed = super::super::rest::place(&c.method, path, query).unwrap();
            assert_eq!((placed.method.family, placed.params), (family, params));
        }
    }
}

//! The HTTP+JSON binding of A2A 1.0: which operation an HTTP method and path
//! are (the `google.api.http` routes of `lf.a2a.v1.A2AService`), and the
//! operation's params in the 1.0 model, which are the JSON-RPC params the
//! same call would carry: path ids, query parameters and the body, merged.

use http::Method;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

use super::methods::{self, Family};

/// A REST request, placed: the method it is and its params.
#[derive(Debug)]
pub struct RestRoute {
    pub method: &'static methods::Method,
    pub params: Value,
    /// Whether the operation takes a body (POST routes).
    pub takes_body: bool,
    /// The route's path as the client wrote it (under any prefix), for a
    /// call that passes through to an agent's HTTP+JSON interface as is.
    pub path: String,
    /// A 0.3 route (`/v1/...`): its body and answers are 0.3's ProtoJSON
    /// (`crate::bridge::v03::rest`).
    pub v03: bool,
}

/// Why a method and path are not an operation, or its parts are not right.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    NotFound,
    /// The path is an operation's, the method is not; the allowed ones.
    MethodNotAllowed(&'static str),
    /// A path id or query parameter that is not right: what and why.
    Invalid(String),
}

/// The route a method and path (after any `/agents/{name}` or public-URL
/// prefix) name, without the params.
fn family_of(method: &Method, path: &str) -> Result<(Family, Vec<String>), Refused> {
    use Family::*;
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (family, allow, ids): (Family, &'static str, Vec<&str>) = match segments.as_slice() {
        ["message:send"] => (Send, "POST", vec![]),
        ["message:stream"] => (Stream, "POST", vec![]),
        ["tasks"] => (ListTasks, "GET", vec![]),
        ["tasks", rest] => match rest.rsplit_once(':') {
            Some((id, "cancel")) => (CancelTask, "POST", vec![id]),
            // The spec says POST and the proto GET: both are accepted.
            Some((id, "subscribe")) => (Resubscribe, "GET, POST", vec![id]),
            _ => (GetTask, "GET", vec![*rest]),
        },
        ["tasks", id, "pushNotificationConfigs"] => match *method {
            Method::GET => (PushList, "GET, POST", vec![*id]),
            _ => (PushSet, "GET, POST", vec![*id]),
        },
        ["tasks", id, "pushNotificationConfigs", config] => match *method {
            Method::DELETE => (PushDelete, "GET, DELETE", vec![*id, *config]),
            _ => (PushGet, "GET, DELETE", vec![*id, *config]),
        },
        _ => return Err(Refused::NotFound),
    };
    let allowed = allow.split(", ").any(|m| m == method.as_str());
    if !allowed {
        return Err(Refused::MethodNotAllowed(allow));
    }
    let ids = ids.into_iter().map(path_id).collect::<Result<_, _>>()?;
    Ok((family, ids))
}

/// A path id, percent-decoded. An id that decodes to a slash, a dot
/// segment or nothing names no task; one with a control character (NUL,
/// CR, LF, ...) is refused, named escaped.
fn path_id(raw: &str) -> Result<String, Refused> {
    let id = segment(raw)?;
    if id.chars().any(char::is_control) {
        let shown: String = id.chars().take(128).collect();
        let why = format!(
            "path id '{}' holds a control character",
            shown.escape_default()
        );
        return Err(Refused::Invalid(why));
    }
    Ok(id)
}

/// A path segment, percent-decoded: UTF-8, and neither empty, a dot
/// segment, nor holding a slash.
fn segment(raw: &str) -> Result<String, Refused> {
    let id = percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| Refused::Invalid(format!("path id '{raw}' is not UTF-8 once decoded")))?;
    if id.is_empty() || id == "." || id == ".." || id.contains('/') {
        return Err(Refused::Invalid(format!("path id '{raw}' names no task")));
    }
    Ok(id.into_owned())
}

/// The query parameters each operation reads, and whether each is a number
/// (`true`) or text; anything else in the query is refused.
fn query_members(family: Family) -> &'static [(&'static str, Kind)] {
    use Family::*;
    use Kind::*;
    match family {
        GetTask => &[("historyLength", Number)],
        ListTasks => &[
            ("contextId", Text),
            ("status", Text),
            ("pageSize", Number),
            ("pageToken", Text),
            ("historyLength", Number),
            ("statusTimestampAfter", Text),
            ("includeArtifacts", Bool),
        ],
        PushList => &[("pageSize", Number), ("pageToken", Text)],
        _ => &[],
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
    Bool,
}

/// The query's members as params: `history_length` and `historyLength`
/// alike (ProtoJSON), numbers and booleans as JSON ones.
fn query_params(family: Family, query: Option<&str>) -> Result<Map<String, Value>, Refused> {
    let known = query_members(family);
    let mut params = Map::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        // A service parameter, not the operation's (checked on intake).
        if name.eq_ignore_ascii_case("a2a-version") {
            continue;
        }
        let camel = to_camel(&name);
        let Some((member, kind)) = known.iter().find(|(m, _)| *m == camel) else {
            return Err(Refused::Invalid(format!(
                "query parameter '{name}' is not one of this operation's"
            )));
        };
        let bad = |what: &str| Refused::Invalid(format!("query parameter '{name}' must be {what}"));
        let value = match kind {
            Kind::Text => Value::String(value.into_owned()),
            Kind::Number => value
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| bad("a whole number"))?,
            Kind::Bool => value
                .parse::<bool>()
                .map(Value::Bool)
                .map_err(|_| bad("true or false"))?,
        };
        if params.insert((*member).to_string(), value).is_some() {
            return Err(Refused::Invalid(format!(
                "query parameter '{name}' appears twice"
            )));
        }
    }
    Ok(params)
}

fn to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        match (c, upper) {
            ('_', _) => upper = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// Places a REST request: its method (the 1.0 JSON-RPC one that does the
/// same) and its params (path ids and query members; the body's members
/// join them in [`with_body`]). A path that is no route is tried as
/// `/{tenant}/` and a 1.0 route (the proto's `additional_bindings`): the
/// tenant joins the params, as a JSON-RPC 1.0 call carries it. A route
/// wins over a tenant: `/tasks/t` is GetTask `t`, never ListTasks of
/// tenant `tasks`.
pub fn place(method: &Method, path: &str, query: Option<&str>) -> Result<RestRoute, Refused> {
    match place_route(method, path, query) {
        Err(Refused::NotFound) => {}
        placed => return placed,
    }
    let Some((tenant, route)) = path.trim_start_matches('/').split_once('/') else {
        return Err(Refused::NotFound);
    };
    // `/v1/` is 0.3's, which has no tenants.
    if tenant == "v1" || tenant.is_empty() || route.starts_with("v1/") {
        return Err(Refused::NotFound);
    }
    let tenant = segment(tenant)?;
    super::validate::tenant(&tenant).map_err(Refused::Invalid)?;
    let mut placed = place_route(method, &format!("/{route}"), query)?;
    if let Value::Object(params) = &mut placed.params {
        params.insert("tenant".into(), Value::String(tenant));
    }
    placed.path = path.to_string();
    Ok(placed)
}

/// [`place`] without tenants.
fn place_route(method: &Method, path: &str, query: Option<&str>) -> Result<RestRoute, Refused> {
    use Family::*;
    // 0.3's routes are 1.0's under `/v1`, less ListTasks (0.3 had none).
    let (route, v03) = match path.strip_prefix("/v1/") {
        Some(route) => (route, true),
        None => (path, false),
    };
    let (family, ids) = family_of(method, route)?;
    if v03 && family == ListTasks {
        return Err(Refused::NotFound);
    }
    let mut params = query_params(family, query)?;
    let id = |i: usize| Value::String(ids[i].clone());
    match family {
        GetTask | CancelTask | Resubscribe => {
            params.insert("id".into(), id(0));
        }
        PushSet | PushList => {
            params.insert("taskId".into(), id(0));
        }
        PushGet | PushDelete => {
            params.insert("taskId".into(), id(0));
            params.insert("id".into(), id(1));
        }
        _ => {}
    }
    let rpc = methods::METHODS
        .iter()
        .find(|m| m.family == family && m.version == methods::Version::V1_0)
        .ok_or(Refused::NotFound)?;
    Ok(RestRoute {
        method: rpc,
        params: Value::Object(params),
        takes_body: matches!(family, Send | Stream | CancelTask | PushSet)
            || (family == Resubscribe && method == Method::POST),
        path: path.to_string(),
        v03,
    })
}

/// The params once the body (a JSON object) has joined the path's: a
/// member given in both must agree.
pub fn with_body(placed: &mut RestRoute, body: Value) -> Result<(), Refused> {
    let Value::Object(body) = body else {
        return Err(Refused::Invalid("the body must be a JSON object".into()));
    };
    let Value::Object(params) = &mut placed.params else {
        return Ok(());
    };
    for (name, value) in body {
        let camel = to_camel(&name);
        match params.get(&camel) {
            Some(from_path) if *from_path != value => {
                return Err(Refused::Invalid(format!(
                    "'{name}' in the body ({value}) differs from the path's ({from_path})"
                )));
            }
            Some(_) => {}
            None => {
                params.insert(name, value);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn placed(method: Method, path: &str, query: Option<&str>) -> (&'static str, Value) {
        let p = place(&method, path, query).unwrap();
        (p.method.name, p.params)
    }

    #[test]
    fn every_1_0_route_is_placed() {
        assert_eq!(placed(Method::POST, "/message:send", None).0, "SendMessage");
        assert_eq!(
            placed(Method::POST, "/message:stream", None).0,
            "SendStreamingMessage"
        );
        assert_eq!(
            placed(Method::GET, "/tasks/t-1", Some("historyLength=3")),
            ("GetTask", json!({"id": "t-1", "historyLength": 3}))
        );
        assert_eq!(
            placed(
                Method::GET,
                "/tasks",
                Some("context_id=c&pageSize=5&includeArtifacts=true")
            ),
            (
                "ListTasks",
                json!({"contextId": "c", "pageSize": 5, "includeArtifacts": true})
            )
        );
        assert_eq!(
            placed(Method::POST, "/tasks/t-1:cancel", None),
            ("CancelTask", json!({"id": "t-1"}))
        );
        for m in [Method::GET, Method::POST] {
            assert_eq!(
                placed(m, "/tasks/t-1:subscribe", None),
                ("SubscribeToTask", json!({"id": "t-1"}))
            );
        }
        assert_eq!(
            placed(Method::POST, "/tasks/t-1/pushNotificationConfigs", None),
            ("CreateTaskPushNotificationConfig", json!({"taskId": "t-1"}))
        );
        assert_eq!(
            placed(Method::GET, "/tasks/t-1/pushNotificationConfigs", None),
            ("ListTaskPushNotificationConfigs", json!({"taskId": "t-1"}))
        );
        assert_eq!(
            placed(Method::GET, "/tasks/t-1/pushNotificationConfigs/p", None),
            (
                "GetTaskPushNotificationConfig",
                json!({"taskId": "t-1", "id": "p"})
            )
        );
        assert_eq!(
            placed(Method::DELETE, "/tasks/t-1/pushNotificationConfigs/p", None).0,
            "DeleteTaskPushNotificationConfig"
        );
    }

    #[test]
    fn wrong_methods_unknown_paths_and_bad_parts_are_refused() {
        let refused = |m: Method, path: &str, q: Option<&str>| place(&m, path, q).unwrap_err();
        assert_eq!(
            refused(Method::GET, "/message:send", None),
            Refused::MethodNotAllowed("POST")
        );
        assert_eq!(
            refused(Method::PUT, "/tasks/t", None),
            Refused::MethodNotAllowed("GET")
        );
        assert_eq!(refused(Method::GET, "/nothing", None), Refused::NotFound);
        assert_eq!(
            refused(Method::GET, "/tasks/a/b/c/d", None),
            Refused::NotFound
        );
        for bad in ["/tasks/a%2Fb", "/tasks/..", "/tasks/%2E%2E", "/tasks/"] {
            assert!(
                matches!(refused(Method::GET, bad, None), Refused::Invalid(_)),
                "{bad}"
            );
        }
        let why = |q: &str| match refused(Method::GET, "/tasks/t", Some(q)) {
            Refused::Invalid(why) => why,
            other => panic!("{other:?}"),
        };
        assert!(why("historyLength=ten").contains("whole number"));
        assert!(why("color=red").contains("not one of"));
        assert!(why("historyLength=1&history_length=2").contains("twice"));
    }

    #[test]
    fn the_0_3_routes_are_1_0_s_under_v1() {
        let p = place(&Method::GET, "/v1/tasks/t-1", Some("historyLength=2")).unwrap();
        assert_eq!((p.method.name, p.v03), ("GetTask", true));
        assert_eq!(p.params, json!({"id": "t-1", "historyLength": 2}));
        let p = place(&Method::POST, "/v1/message:stream", None).unwrap();
        assert_eq!((p.method.name, p.v03), ("SendStreamingMessage", true));
        assert!(!place(&Method::POST, "/message:send", None).unwrap().v03);
        assert_eq!(
            place(&Method::GET, "/v1/tasks", None).unwrap_err(),
            Refused::NotFound,
            "0.3 had no ListTasks"
        );
    }

    #[test]
    fn a_tenant_prefixes_any_1_0_route() {
        assert_eq!(
            placed(Method::GET, "/acme/tasks/t-1", None),
            ("GetTask", json!({"id": "t-1", "tenant": "acme"}))
        );
        assert_eq!(
            placed(Method::GET, "/acme/tasks", None),
            ("ListTasks", json!({"tenant": "acme"}))
        );
        assert_eq!(
            placed(Method::GET, "/tasks/t-1", None),
            ("GetTask", json!({"id": "t-1"})),
            "a route before a tenant"
        );
        let p = place(&Method::POST, "/a.b~c_d-1/message:send", None).unwrap();
        assert_eq!(
            (p.params, p.path.as_str()),
            (json!({"tenant": "a.b~c_d-1"}), "/a.b~c_d-1/message:send")
        );
        // A tenant holds only what a path segment may, unescaped.
        for (path, named) in [
            ("/a%20b/message:send", "'a b'"),
            ("/ac%0D%0Ame/message:send", "'ac\\r\\nme'"),
            ("/a%00/tasks/t", "'a\\u{0}'"),
            ("/a%2Fb/tasks/t", "names no task"),
        ] {
            match place(&Method::POST, path, None) {
                Err(Refused::Invalid(why)) => assert!(why.contains(named), "{path}: {why}"),
                other => panic!("{path}: {other:?}"),
            }
        }
        // And a task id holds no control character.
        match place(&Method::GET, "/tasks/t%0A1", None) {
            Err(Refused::Invalid(why)) => assert!(why.contains("'t\\n1'"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            place(&Method::GET, "/acme/v1/tasks/t", None).unwrap_err(),
            Refused::NotFound
        );
        assert_eq!(
            place(&Method::GET, "/acme/nothing", None).unwrap_err(),
            Refused::NotFound
        );
        assert_eq!(
            place(&Method::PUT, "/acme/tasks/t", None).unwrap_err(),
            Refused::MethodNotAllowed("GET")
        );
    }

    #[test]
    fn path_ids_are_decoded() {
        assert_eq!(
            placed(Method::GET, "/tasks/task%20one", None).1,
            json!({"id": "task one"})
        );
    }

    #[test]
    fn the_body_joins_the_path() {
        let mut p = place(&Method::POST, "/tasks/t-1/pushNotificationConfigs", None).unwrap();
        with_body(&mut p, json!({"url": "https://h/", "task_id": "t-1"})).unwrap();
        assert_eq!(p.params, json!({"taskId": "t-1", "url": "https://h/"}));
        let mut p = place(&Method::POST, "/tasks/t-1:cancel", None).unwrap();
        let err = with_body(&mut p, json!({"id": "other"})).unwrap_err();
        assert!(matches!(err, Refused::Invalid(w) if w.contains("differs")));
        let mut p = place(&Method::POST, "/message:send", None).unwrap();
        assert!(with_body(&mut p, json!([1])).is_err());
    }
}

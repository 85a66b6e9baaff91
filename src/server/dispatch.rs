//! The innermost service: which handler a request goes to, by method and
//! path. Everything unknown is answered here, never dropped.
//!
//! ```text
//! GET  /.well-known/agent-card.json | agent.json       published (aggregated) card
//! GET  /agent/authenticatedExtendedCard | /extendedAgentCard   extended card
//! GET  /.well-known/jwks.json                          the card signing keys
//! POST /push/{id}                                      the push relay's callback (agents post)
//! POST /                                               JSON-RPC, routed by skill
//! GET  /agents/{name}/.well-known/agent-card.json      that agent's own card
//! POST /agents/{name}                                  JSON-RPC straight to that agent
//! the A2A 1.0 HTTP+JSON routes (/message:send, /tasks/{id}, ...), at the
//! root and under /agents/{name}                        `crate::call::handle_rest`
//! ```

use std::sync::Arc;

use http::request::Parts;
use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::a2a::rest::{self, Refused};
use crate::call;
use crate::call::{endpoint, extended_card};
use crate::card::{jwks, published, rewrite, CARD_PATHS, EXTENDED_CARD_PATHS};
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::push_relay::rewrite::CALLBACK_PATH;
use crate::state::{AppState, ConnInfo};

use super::push_callback;

/// Answers one request that arrived on the connection `conn` describes.
///
/// Each handler's future is boxed where it is made: this future is moved
/// whole by every layer of the stack around it, several times a call, so
/// it holds pointers, not the handlers' kilobytes of state (callgrind put
/// a quarter of a call's instructions in `memcpy` of it unboxed; the test
/// `the_dispatch_future_stays_small` holds it there).
pub async fn dispatch(
    state: Arc<AppState>,
    conn: ConnInfo,
    request: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let limit = state.config.limits.max_header_bytes;
    if head_size(&parts) > limit {
        return GatewayError::HeadTooLarge { limit }.into_response(None);
    }
    if is_grpc(&parts.headers) {
        let request = Request::from_parts(parts, body);
        return Box::pin(crate::ingress::grpc::handle(state, &conn, request)).await;
    }
    let path = state.local_path(parts.uri.path());
    if let (Some(id), Some(callback)) = (path.strip_prefix(CALLBACK_PATH), &state.push_relay) {
        let callback = callback.clone();
        let id = id.to_string();
        return Box::pin(push_callback::serve(&state, &callback, &parts, &id, body)).await;
    }
    let (scope, rest) = match scoped(&state, path) {
        Ok(scoped) => scoped,
        Err((name, rest)) => {
            // Credentials first: which agent names exist is not told to
            // unauthenticated callers.
            if let Err(e) = Box::pin(state.authenticate(&parts, &conn)).await {
                return e.into_response(None);
            }
            return unknown_agent(&parts, &name, &rest);
        }
    };
    let is_card = CARD_PATHS.contains(&rest);
    let is_extended = EXTENDED_CARD_PATHS.contains(&rest);
    let is_rpc = rest == "/";
    let is_jwks = scope.is_none() && rest == jwks::JWKS_PATH;
    match parts.method {
        Method::GET | Method::HEAD if is_jwks => jwks(&state, &parts),
        Method::GET | Method::HEAD if is_card => {
            if let Err(e) = Box::pin(card_access(&state, &parts, &conn)).await {
                return e.into_response(None);
            }
            card(&state, &parts, &conn, scope)
        }
        Method::GET | Method::HEAD if is_extended => {
            let origin = call::origin(&state, &parts, &conn);
            Box::pin(extended_card::serve(&state, &parts, &conn, &origin, scope)).await
        }
        Method::POST if is_rpc => {
            let request = Request::from_parts(parts, body);
            Box::pin(crate::ingress::handle(state, &conn, request, scope)).await
        }
        ref method if is_rpc || is_card || is_extended || is_jwks => {
            not_allowed(method, &parts, is_rpc)
        }
        ref method => match rest::place(method, rest, parts.uri.query()) {
            Ok(placed) => {
                let request = Request::from_parts(parts, body);
                Box::pin(crate::ingress::handle_rest(
                    state, &conn, request, scope, placed,
                ))
                .await
            }
            Err(Refused::NotFound) => no_route(method, &parts),
            Err(refused) => crate::ingress::rest_refused(refused, &parts).into_rest_response(),
        },
    }
}

/// The fleet's card, or one agent's (`/agents/{name}`).
fn card(state: &AppState, parts: &Parts, conn: &ConnInfo, scope: Option<usize>) -> Response<Body> {
    match scope {
        Some(i) => agent_card(state, parts, conn, i),
        None => {
            let endpoint = endpoint::endpoint(state, parts, conn);
            let rendered = state.fleet.published(&state.config, &endpoint);
            published::respond(&rendered, &parts.headers, state.config.card.cache_max_age)
        }
    }
}

/// The keys the cards are signed with; 404 when cards are not signed.
fn jwks(state: &AppState, parts: &Parts) -> Response<Body> {
    match &state.jwks {
        Some(rendered) => {
            published::respond(rendered, &parts.headers, state.config.card.cache_max_age)
        }
        None => GatewayError::NotFound {
            method: parts.method.to_string(),
            path: jwks::JWKS_PATH.into(),
            hint: "cards are not signed here ([card.signing] is not configured)",
        }
        .into_rest_response(),
    }
}

/// A known path with a method it does not take.
fn not_allowed(method: &Method, parts: &Parts, is_rpc: bool) -> Response<Body> {
    GatewayError::MethodNotAllowed {
        method: method.to_string(),
        path: parts.uri.path().chars().take(128).collect(),
        allow: if is_rpc { "POST" } else { "GET, HEAD" },
    }
    .into_response(None)
}

/// No route: only HTTP+JSON has routes, so its google.rpc.Status answers.
fn no_route(method: &Method, parts: &Parts) -> Response<Body> {
    GatewayError::NotFound {
        method: method.to_string(),
        path: parts.uri.path().chars().take(128).collect(),
        hint: "JSON-RPC is served by POST / (or POST /agents/{name}), HTTP+JSON by the A2A routes (1.0: POST /message:send, GET /tasks/{id}, ...; 0.3: the same under /v1), the Agent Card at GET /.well-known/agent-card.json",
    }
    .into_rest_response()
}

/// `/agents/{name}/rest`: that agent's index and the path within it, or
/// `Err((name, rest))` when no agent has the name. Any other path is the
/// gateway's. Borrowed from the path: each call's copies were two
/// allocations.
fn scoped<'p>(
    state: &AppState,
    path: &'p str,
) -> Result<(Option<usize>, &'p str), (String, String)> {
    let Some(tail) = path.strip_prefix("/agents/") else {
        return Ok((None, path));
    };
    let (name, rest) = match tail.find('/') {
        // From the last of the slashes that lead the rest: `//x` is `/x`.
        Some(at) => {
            let after = &tail[at..];
            let slashless = after.trim_start_matches('/').len();
            (&tail[..at], &after[after.len() - slashless - 1..])
        }
        None => (tail, "/"),
    };
    match state.router.index(name) {
        Some(i) => Ok((Some(i), rest)),
        None => Err((name.to_string(), rest.to_string())),
    }
}

/// The request head's size as HTTP/1.1 would carry it: the request line and
/// each `name: value` line. The HTTP layers refuse heads past twice
/// `limits.max_header_bytes` on their own (`server::protocol`); this gives
/// the ones in between a JSON-RPC answer, over HTTP/1.1 and h2 alike.
fn head_size(parts: &Parts) -> usize {
    let uri = &parts.uri;
    let target = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    let line = parts.method.as_str().len() + target + 12;
    parts.headers.iter().fold(line, |size, (name, value)| {
        size + name.as_str().len() + value.len() + 4
    })
}

/// The public cards are public unless `auth.public_card = false`.
async fn card_access(state: &AppState, parts: &Parts, conn: &ConnInfo) -> Result<(), GatewayError> {
    match &state.auth {
        Some(auth) if !auth.config().public_card => {
            state.authenticate(parts, conn).await.map(|_| ())
        }
        _ => Ok(()),
    }
}

/// One upstream's own card, its URLs pointed at `/agents/{name}`.
fn agent_card(state: &AppState, parts: &Parts, conn: &ConnInfo, index: usize) -> Response<Body> {
    let name = &state.upstreams[index].name;
    let view = state.fleet.view();
    let Some(fetched) = view.card_of(name) else {
        // The reason the last fetch failed says who is at fault (502/504).
        let error = state.fleet.store.attempt(name).error.unwrap_or_else(|| {
            GatewayError::UpstreamUnavailable {
                upstream: name.clone(),
                detail: "no agent card fetched yet".into(),
            }
        });
        return error.into_response(None);
    };
    let at = endpoint::agent_endpoint(state, parts, conn, name);
    let rendered = state.fleet.agent_card(&view, name, &at, || {
        let mut card = fetched.card.clone();
        rewrite::rewrite(&mut card, &at);
        // At this URL the gateway's own schemes are what is enforced.
        if let Some(auth) = &state.config.auth {
            crate::auth::publish::apply(&mut card, auth);
        }
        if !state.config.card.extended_card {
            rewrite::withdraw_extended_card(&mut card);
        }
        if let Some(signing) = &state.config.card.signing {
            let root = endpoint::endpoint(state, parts, conn);
            crate::card::sign::sign(&mut card, signing, &crate::card::sign::jku(signing, &root));
        }
        card
    });
    published::respond(&rendered, &parts.headers, state.config.card.cache_max_age)
}

/// No agent has the name: 404; a name that could be none, holding a
/// control character once decoded, is refused as invalid (named escaped).
/// JSON-RPC's and the cards' paths answer in JSON-RPC, the others in
/// HTTP+JSON.
fn unknown_agent(parts: &Parts, name: &str, rest: &str) -> Response<Body> {
    let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let error = if decoded.chars().any(char::is_control) {
        let shown: String = decoded.chars().take(128).collect();
        GatewayError::InvalidParams(format!(
            "agent name '{}' holds a control character",
            shown.escape_default()
        ))
    } else {
        GatewayError::NotFound {
            method: parts.method.to_string(),
            path: parts.uri.path().chars().take(128).collect(),
            hint: if name.is_empty() {
                "name an agent: /agents/{name}"
            } else {
                "no upstream has that name"
            },
        }
    };
    let rpc = rest == "/" || CARD_PATHS.contains(&rest);
    match rpc {
        true => error.into_response(None),
        false => error.into_rest_response(),
    }
}

/// A gRPC request: `application/grpc`, `application/grpc+proto`, …
/// Not gRPC-Web (`application/grpc-web…`), which is not served: it goes
/// the other bindings' way, and is answered as a content type they do not
/// take.
fn is_grpc(headers: &http::HeaderMap) -> bool {
    (headers.get(http::header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim_start();
            let grpc = v
                .get(..16)
                .is_some_and(|head| head.eq_ignore_ascii_case("application/grpc"));
            grpc && matches!(v.as_bytes().get(16), None | Some(b'+' | b';' | b' '))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an async fn with `dispatch`'s signature
    /// makes, without making one.
    fn future_size<F, Fut>(_: F) -> usize
    where
        F: FnOnce(Arc<AppState>, ConnInfo, Request<Incoming>) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// Unboxed, the handlers made it 12,032 bytes (a debug build); with
    /// them boxed it is 992: the request's head and body, the connection,
    /// and a pointer to whichever handler runs. A handler awaited here
    /// without a box makes it kilobytes again.
    #[test]
    fn the_dispatch_future_stays_small() {
        let size = future_size(dispatch);
        assert!(
            size <= 1024,
            "dispatch's future is {size} bytes: box the handler future it awaits"
        );
    }

    #[test]
    fn grpc_is_known_by_its_media_type_but_not_grpc_web() {
        let with = |value: &'static str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(value),
            );
            is_grpc(&headers)
        };
        assert!(with("application/grpc"));
        assert!(with("Application/GRPC+proto"));
        assert!(with("application/grpc; charset=x"));
        assert!(!with("application/grpc-web"));
        assert!(!with("application/grpc-web-text+proto"));
        assert!(!with("application/json"));
        assert!(!is_grpc(&http::HeaderMap::new()));
    }

    fn two_agents() -> AppState {
        let config = crate::config::load_str(
            "[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n\n\
             [[upstreams]]\nname = \"b\"\nurl = \"http://127.0.0.1:10\"\n",
        )
        .unwrap();
        AppState::new(config)
    }

    fn scope(state: &AppState, path: &str) -> Result<(Option<usize>, String), (String, String)> {
        scoped(state, path).map(|(i, rest)| (i, rest.to_string()))
    }

    #[test]
    fn an_agents_path_names_the_agent_and_the_path_within_it() {
        let state = two_agents();
        assert_eq!(scope(&state, "/agents/b"), Ok((Some(1), "/".into())));
        assert_eq!(scope(&state, "/agents/b/"), Ok((Some(1), "/".into())));
        assert_eq!(
            scope(&state, "/agents/a/.well-known/agent-card.json"),
            Ok((Some(0), "/.well-known/agent-card.json".into()))
        );
        assert_eq!(scope(&state, "/agents/b//x"), Ok((Some(1), "/x".into())));
    }

    #[test]
    fn other_paths_are_the_gateways_and_an_unknown_name_is_given_back() {
        let state = two_agents();
        assert_eq!(scope(&state, "/"), Ok((None, "/".into())));
        assert_eq!(scope(&state, "/agents"), Ok((None, "/agents".into())));
        assert_eq!(scope(&state, "/agentsx/a"), Ok((None, "/agentsx/a".into())));
        assert_eq!(scope(&state, "/agents/c/x"), Err(("c".into(), "/x".into())));
        assert_eq!(scope(&state, "/agents/"), Err((String::new(), "/".into())));
    }
}

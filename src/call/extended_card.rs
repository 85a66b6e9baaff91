//! The authenticated extended card: the aggregate of what each upstream's
//! extended card shows this caller (its public card where it has none),
//! URLs pointed at the gateway. Off unless configured: it may show more
//! than the public card, so only callers who pass `[auth]` get it.

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response};
use serde_json::{json, Value};

use super::endpoint;
use super::validated::Call;
use crate::a2a::jsonrpc;
use crate::auth::authz::Target;
use crate::auth::Identity;
use crate::card::aggregate::{self, UpstreamCard};
use crate::card::{inherit, rewrite};
use crate::http::body::{self, Body};
use crate::http::error::GatewayError;
use crate::state::{AppState, ConnInfo};
use crate::upstream::{Caller, Origin, Upstream};

const MAX_CARD_BYTES: usize = 1024 * 1024;

/// Answers `agent/getAuthenticatedExtendedCard` / `GetExtendedAgentCard`.
pub(super) async fn answer(state: &AppState, call: &Call<'_>, origin: &Origin) -> Response<Body> {
    let (parts, conn, id) = (&call.parts, call.conn, call.id);
    match build(
        state,
        parts,
        conn,
        origin,
        call.path_upstream,
        call.identity,
    )
    .await
    {
        Ok(card) => json_response(jsonrpc::result_body(id, &card)),
        Err(e) => e.into_response(id),
    }
}

/// Serves `GET /agent/authenticatedExtendedCard` and `GET /extendedAgentCard`.
/// A REST client reads the status, so "not configured" is a 404 here (the
/// body still carries the JSON-RPC error); the card is per caller, so no
/// shared cache may keep it.
pub async fn serve(
    state: &AppState,
    parts: &Parts,
    conn: &ConnInfo,
    origin: &Origin,
    scope: Option<usize>,
) -> Response<Body> {
    // `GET /extendedAgentCard` (1.0) and `GET /v1/card` (0.3) are HTTP+JSON
    // routes: their errors are a google.rpc.Status. The 0.2.5 path's are
    // JSON-RPC errors, as they always were.
    let path = parts.uri.path();
    let rest = path.ends_with("/extendedAgentCard") || path.ends_with("/v1/card");
    let refuse = |e: GatewayError| match rest {
        true => e.into_rest_response(),
        false => e.into_response(None),
    };
    // The extended card is for authenticated callers, whatever the public
    // card's setting.
    let identity = match state.authenticate(parts, conn).await {
        Ok(identity) => identity,
        Err(e) => return refuse(e),
    };
    if let Err(e) = super::intake::check_version(parts) {
        return refuse(e);
    }
    // Per caller: no shared cache may keep it, but the caller may ask
    // whether it changed.
    let private = HeaderValue::from_static("private, no-store");
    let mut response = match build(state, parts, conn, origin, scope, identity.as_ref()).await {
        Ok(mut card) => {
            if let Some(signing) = &state.config.card.signing {
                let root = super::endpoint::endpoint(state, parts, conn);
                let jku = crate::card::sign::jku(signing, &root);
                crate::card::sign::sign(&mut card, signing, &jku);
            }
            let rendered = crate::card::published::render(&card);
            crate::card::published::respond_with(&rendered, &parts.headers, private.clone())
        }
        Err(e @ GatewayError::ExtendedCardNotConfigured) if !rest => {
            let mut r = e.into_response(None);
            *r.status_mut() = http::StatusCode::NOT_FOUND;
            r
        }
        Err(e) => refuse(e),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, private);
    response
}

/// Builds the card this caller may see.
async fn build(
    state: &AppState,
    parts: &Parts,
    conn: &ConnInfo,
    origin: &Origin,
    scope: Option<usize>,
    identity: Option<&Identity>,
) -> Result<Value, GatewayError> {
    if !state.config.card.extended_card {
        return Err(GatewayError::ExtendedCardNotConfigured);
    }
    let view = state.fleet.view();
    let indices: Vec<usize> = match scope {
        Some(i) => vec![i],
        None => (0..state.upstreams.len()).collect(),
    };
    let fetches: Vec<_> = indices
        .iter()
        .copied()
        .filter_map(|i| {
            let upstream = &state.upstreams[i];
            let public = view.card_of(&upstream.name)?.card.clone();
            Some(async move {
                let extended =
                    fetch_extended(state, upstream, parts, origin, &public, identity).await;
                (i, extended.unwrap_or(public))
            })
        })
        .collect();
    let cards: Vec<(usize, Value)> = futures_util::future::join_all(fetches).await;
    match scope {
        Some(i) => agent_card(state, parts, conn, identity, i, cards),
        None => Ok(fleet_card(state, parts, conn, identity, &cards)),
    }
}

/// `/agents/{name}`'s extended card: that agent's, pointed at its path, with
/// the gateway's own schemes and only the skills this caller may use.
fn agent_card(
    state: &AppState,
    parts: &Parts,
    conn: &ConnInfo,
    identity: Option<&Identity>,
    index: usize,
    cards: Vec<(usize, Value)>,
) -> Result<Value, GatewayError> {
    let name = &state.upstreams[index].name;
    let Some((_, mut card)) = cards.into_iter().next() else {
        return Err(GatewayError::UpstreamUnavailable {
            upstream: name.clone(),
            detail: "no fresh card".into(),
        });
    };
    rewrite::rewrite(
        &mut card,
        &endpoint::agent_endpoint(state, parts, conn, name),
    );
    if let Some(auth) = &state.config.auth {
        crate::auth::publish::apply(&mut card, auth);
    }
    let view = state.fleet.view();
    keep_allowed_skills(state, identity, &mut card, |id| {
        let published = view
            .skills
            .iter()
            .find(|s| &s.upstream == name && s.original_id == id);
        Some((
            name.clone(),
            published.map_or_else(|| id.to_string(), |s| s.id.clone()),
        ))
    });
    Ok(card)
}

/// The gateway's extended card: the agents' extended cards aggregated as
/// the public one is, with only the skills this caller may use.
fn fleet_card(
    state: &AppState,
    parts: &Parts,
    conn: &ConnInfo,
    identity: Option<&Identity>,
    cards: &[(usize, Value)],
) -> Value {
    let inputs: Vec<UpstreamCard<'_>> = cards
        .iter()
        .map(|(i, card)| UpstreamCard {
            upstream: &state.upstreams[*i].name,
            card,
            policy: &state.config.upstreams[*i].skills,
        })
        .collect();
    let built = aggregate::aggregate(
        &state.config.card,
        &inputs,
        &endpoint::endpoint(state, parts, conn),
    );
    let mut card = built.card;
    let agents: Vec<&Value> = cards.iter().map(|(_, c)| c).collect();
    inherit::apply(&mut card, &agents, &state.config);
    keep_allowed_skills(state, identity, &mut card, |id| {
        let skill = built.skills.iter().find(|s| s.id == id)?;
        Some((skill.upstream.clone(), skill.id.clone()))
    });
    card
}

/// Leaves in `card.skills` only what this caller may use (calling it with
/// `message/send`): each caller sees its own fleet. `locate` gives a
/// listed skill's (upstream, published id).
fn keep_allowed_skills(
    state: &AppState,
    identity: Option<&Identity>,
    card: &mut Value,
    locate: impl Fn(&str) -> Option<(String, String)>,
) {
    let (Some(who), false) = (identity, state.config.authz.is_open()) else {
        return;
    };
    let Some(Value::Array(skills)) = card.get_mut("skills") else {
        return;
    };
    skills.retain(|skill| {
        let Some((upstream, id)) = skill.get("id").and_then(Value::as_str).and_then(&locate) else {
            return false;
        };
        let target = Target {
            upstream: &upstream,
            skill: Some(&id),
            family: "send",
        };
        state.config.authz.allows(who, &target, |_| false)
    });
}

/// The upstream's extended card when its public card offers one, asked
/// with the caller's own headers; `None` when it has none or the call fails.
async fn fetch_extended(
    state: &AppState,
    upstream: &Upstream,
    parts: &Parts,
    origin: &Origin,
    public: &Value,
    identity: Option<&Identity>,
) -> Option<Value> {
    let v1 = public.pointer("/capabilities/extendedAgentCard") == Some(&Value::Bool(true));
    let v03 = public.get("supportsAuthenticatedExtendedCard") == Some(&Value::Bool(true));
    let method = match (v1, v03) {
        (true, _) => "GetExtendedAgentCard",
        (false, true) => "agent/getAuthenticatedExtendedCard",
        _ => return None,
    };
    let call = jsonrpc::request_body(Some("a2a-gateway-extended-card"), method, &json!({}));
    let caller = Caller {
        consumed: state.consumed.as_ref(),
        subject: identity.map(|i| i.subject.as_str()),
        trace: None,
    };
    let mut call = upstream.rpc_call_as(parts, Bytes::from(call.ok()?), origin.clone(), &caller);
    let h = call.headers_mut();
    crate::http::body::set_json(h);
    if v1 {
        h.insert("a2a-version", HeaderValue::from_static("1.0"));
    }
    let limit = state.config.card_refresh.timeout;
    let (status, _, body) = upstream
        .exchange_call(call, MAX_CARD_BYTES, limit)
        .await
        .ok()?;
    let answer: Value = serde_json::from_slice(&body)
        .ok()
        .filter(|_| status.is_success())?;
    let card = answer.get("result")?;
    card.is_object().then(|| card.clone())
}

fn json_response(body: Bytes) -> Response<Body> {
    let mut response = Response::new(body::full(body));
    crate::http::body::set_json(response.headers_mut());
    response
}

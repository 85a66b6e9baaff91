//! Signing in to the console when `[console] auth` names schemes: the
//! credentials are sent once (`POST /admin/session`), checked against
//! those schemes, and exchanged for an opaque session id in an `HttpOnly`,
//! `SameSite=Strict` cookie. The page never keeps a credential; the
//! gateway keeps the sessions in memory, bounded.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{json, Value};

use super::json_response;
use crate::http::body::Body;
use crate::state::AppState;

const COOKIE: &str = "a2a_console";
use crate::auth::sessions::LIFETIME;
/// Bound on a sign-in body: a few headers.
const MAX_BODY: usize = 16 * 1024;

/// `None` when the console asks no credentials, or the request carries a
/// live session; else the 401 telling the page to sign in.
pub fn check(state: &AppState, headers: &HeaderMap) -> Option<Response<Body>> {
    if state.config.console.auth.is_empty() {
        return None;
    }
    match session_id(headers) {
        Some(id) if state.console_sessions.contains(&id) => None,
        _ => Some(refused(
            state,
            "sign in to the console (POST /admin/session)",
        )),
    }
}

/// 401, with the schemes the console signs in with (the page's form).
fn refused(state: &AppState, why: &str) -> Response<Body> {
    let names = &state.config.console.auth;
    let auth = super::try_it::schemes(state, |name| names.iter().any(|n| n == name));
    json_response(
        StatusCode::UNAUTHORIZED,
        &json!({"error": why, "sign_in": true, "auth": auth}),
    )
}

/// The session cookie's value, if the request has one.
fn session_id(headers: &HeaderMap) -> Option<String> {
    let cookies = headers.get_all(header::COOKIE);
    cookies
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

/// `POST /admin/session` signs in, `DELETE` signs out.
pub async fn serve(state: &AppState, request: Request<Incoming>) -> Response<Body> {
    let secure = state.config.tls.is_some();
    match *request.method() {
        Method::DELETE => {
            if let Some(id) = session_id(request.headers()) {
                state.console_sessions.end(&id);
            }
            set_cookie(
                json_response(StatusCode::OK, &json!({"signed_in": false})),
                "",
                0,
                secure,
            )
        }
        Method::POST => sign_in(state, request, secure).await,
        _ => json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": "POST signs in, DELETE signs out"}),
        ),
    }
}

async fn sign_in(state: &AppState, request: Request<Incoming>, secure: bool) -> Response<Body> {
    let names = &state.config.console.auth;
    let Some(auth) = state.auth.as_ref().filter(|_| !names.is_empty()) else {
        return json_response(StatusCode::OK, &json!({"signed_in": true, "needed": false}));
    };
    if !super::try_it::is_json(request.headers()) {
        let why = "send the credentials as application/json";
        return json_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &json!({"error": why}));
    }
    let (parts, body) = request.into_parts();
    let bytes = match crate::http::body::read_to_limit(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "the body could not be read, or is over 16 KiB"}),
            )
        }
    };
    let Some(headers) = credential_headers(&bytes) else {
        let why = "the body is {\"headers\": {name: value}}";
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": why}));
    };
    let mut checked = http::Request::new(());
    *checked.headers_mut() = headers;
    *checked.uri_mut() = parts.uri.clone();
    let (checked, ()) = checked.into_parts();
    match auth.authenticate_with(names, &checked).await {
        Ok(identity) => {
            let Some(id) = new_id() else {
                return json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"error": "no randomness"}),
                );
            };
            (state.console_sessions).begin(id.clone(), identity.subject.clone());
            let answer = json!({"signed_in": true, "subject": identity.subject});
            set_cookie(
                json_response(StatusCode::OK, &answer),
                &id,
                LIFETIME.as_secs(),
                secure,
            )
        }
        Err(why) => refused(state, &why),
    }
}

/// The headers named in `{"headers": {...}}`.
fn credential_headers(bytes: &[u8]) -> Option<HeaderMap> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let mut headers = HeaderMap::new();
    for (name, text) in value.get("headers")?.as_object()? {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        let value = HeaderValue::from_str(text.as_str()?).ok()?;
        headers.insert(name, value);
    }
    Some(headers)
}

fn new_id() -> Option<String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes).ok()?;
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

fn set_cookie(
    mut response: Response<Body>,
    id: &str,
    max_age: u64,
    secure: bool,
) -> Response<Body> {
    let secure = if secure { "; Secure" } else { "" };
    let cookie =
        format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

//! Authentication and authorization through a real gateway in front of mock
//! agents on loopback: API keys (header, query, cookie; sha256/env/file),
//! HTTP Basic (argon2, bcrypt), bearer JWTs (HS256, RS256), OAuth2 scopes,
//! alternatives, credential hygiene towards the agents, the identity header,
//! per-skill/per-method rules, the published and extended cards, config
//! errors, and the absence of secrets in the binary's logs.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::calls::{message, send};
use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::keys::{RSA_PRIVATE, RSA_PUBLIC};
use crate::support::mock_agent::{default_card, MockAgent, Mode, Recorded};
use base64::Engine;
use http::StatusCode;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");

const UNAUTHENTICATED: i64 = -32030;
const FORBIDDEN: i64 = -32031;

const HS_SECRET: &str = "an HMAC secret of at least 32 bytes, for auth tests";
const ISS: &str = "https://issuer.example";

// Test-only RSA key (the one tests/jwt.rs uses), generated with openssl.

// ---------------------------------------------------------------- helpers

/// A unique suffix for env var and file names (tests run in parallel).
fn unique(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{tag}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

pub(crate) fn basic(user: &str, password: &str) -> String {
    let raw = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// An argon2id PHC string with small parameters (the verifier takes them
/// from the string), so the debug build checks it quickly.
pub(crate) fn argon2_hash(password: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let params = argon2::Params::new(1024, 1, 1, None).unwrap();
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let salt = SaltString::encode_b64(b"auth-test-salt!!").unwrap();
    argon
        .hash_password(password.as_bytes(), &salt)
        .unwrap()
        .to_string()
}

fn bcrypt_hash(password: &str) -> String {
    bcrypt::hash(password, 4).unwrap()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(sub: &str) -> Value {
    json!({"sub": sub, "iss": ISS, "aud": "gateway", "exp": now() + 300, "iat": now()})
}

/// `base` with `changes` merged in.
fn with(mut base: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

fn hs256(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("hs".into());
    encode(
        &header,
        claims,
        &EncodingKey::from_secret(HS_SECRET.as_bytes()),
    )
    .unwrap()
}

fn rs256(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa".into());
    let key = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    encode(&header, claims, &key).unwrap()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `[auth.schemes.NAME.jwt]` with the static HS256 and RS256 keys.
fn jwt_table(scheme: &str) -> String {
    format!(
        r#"
[auth.schemes.{scheme}.jwt]
algorithms = ["HS256", "RS256"]
issuer = "{ISS}"
audience = ["gateway"]
[[auth.schemes.{scheme}.jwt.keys]]
kid = "hs"
algorithm = "HS256"
secret = "{HS_SECRET}"
[[auth.schemes.{scheme}.jwt.keys]]
kid = "rsa"
algorithm = "RS256"
pem = '''{RSA_PUBLIC}'''
"#
    )
}

fn bearer_scheme(name: &str) -> String {
    format!(
        "\n[auth.schemes.{name}]\ntype = \"http\"\nscheme = \"bearer\"\n{}",
        jwt_table(name)
    )
}

/// An API-key scheme; `keys` is the TOML array of key entries.
fn key_scheme(name: &str, location: &str, param: &str, keys: &str) -> String {
    format!(
        "\n[auth.schemes.{name}]\ntype = \"apiKey\"\nin = \"{location}\"\nname = \"{param}\"\nkeys = {keys}\n"
    )
}

pub(crate) fn basic_scheme(name: &str, users: &[(&str, &str)]) -> String {
    let users: Vec<String> = users
        .iter()
        .map(|(user, hash)| format!("{{ name = \"{user}\", password_hash = '{hash}' }}"))
        .collect();
    format!(
        "\n[auth.schemes.{name}]\ntype = \"http\"\nscheme = \"basic\"\nusers = [{}]\n",
        users.join(", ")
    )
}

/// Starts a gateway from `sections` (auth, authz, card…) plus one
/// `[[upstreams]]` per `(name, mock, extra upstream keys)`.
async fn start(sections: &str, upstreams: &[(&str, &MockAgent, &str)]) -> TestGateway {
    let mut text = String::from("[card_refresh]\ntimeout = \"2s\"\n");
    text.push_str(sections);
    for (name, mock, extra) in upstreams {
        text.push_str(&format!(
            "\n[[upstreams]]\nname = \"{name}\"\nurl = \"{}\"\n{extra}\n",
            mock.url()
        ));
    }
    TestGateway::from_toml(&text).await
}

fn get_task(id: &str, task: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"id": task}}).to_string()
}

fn cancel_task(id: &str, task: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tasks/cancel", "params": {"id": task}})
        .to_string()
}

/// A successful JSON-RPC answer with this id.
fn assert_ok(reply: &Reply, id: &str) {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["id"], id, "{body}");
    assert!(body.get("result").is_some(), "{body}");
}

/// A refusal: status, JSON-RPC code, mirrored id; returns the challenge.
fn assert_refused(reply: &Reply, status: StatusCode, code: i64, id: &str) -> String {
    assert_eq!(reply.status, status, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["id"], id, "the request id is mirrored: {body}");
    reply.header("www-authenticate").unwrap_or("").to_string()
}

fn assert_401(reply: &Reply, id: &str) -> String {
    let challenge = assert_refused(reply, StatusCode::UNAUTHORIZED, UNAUTHENTICATED, id);
    assert!(
        !challenge.is_empty(),
        "401 carries WWW-Authenticate: {reply:?}"
    );
    challenge
}

/// `known` (a task that exists where the caller may not go) is answered
/// exactly as `unknown` (a task nobody has): -32001, the same status, and
/// a message that differs only by the task id.
fn assert_same_as_unknown_task(known: &Reply, unknown: &Reply, task: &str, id: &str) {
    assert_eq!(known.status, StatusCode::OK, "{}", known.text());
    assert_eq!(known.status, unknown.status);
    let (k, u) = (known.json(), unknown.json());
    assert_eq!(k["id"], id, "{k}");
    assert_eq!(k["error"]["code"], -32001, "{k}");
    assert_eq!(u["error"]["code"], -32001, "{u}");
    let message = k["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message.replace(task, "no-such-task"),
        u["error"]["message"].as_str().unwrap_or_default(),
        "{k} / {u}"
    );
}

fn assert_403(reply: &Reply, id: &str) -> String {
    assert_refused(reply, StatusCode::FORBIDDEN, FORBIDDEN, id)
}

fn last(mock: &MockAgent) -> Recorded {
    mock.requests().pop().expect("the agent received the call")
}

fn header_values(r: &Recorded, name: &str) -> Vec<String> {
    r.headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect()
}

/// A mock whose card offers exactly one skill.
async fn agent(name: &str, skill: &str, prefix: &str) -> MockAgent {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&mock.url());
    card["name"] = json!(name);
    card["skills"] = json!([{
        "id": skill, "name": skill, "description": format!("The {skill} skill"),
        "tags": [skill]
    }]);
    mock.set_card(Some(card));
    mock.set_id_prefix(prefix);
    mock
}

// ---------------------------------------------------------------- API keys

#[tokio::test]
async fn api_key_in_a_header_is_checked_and_not_forwarded() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"ci\", sha256 = \"{}\" }}]",
        sha256_hex("hdr-s3cret")
    );
    let auth = key_scheme("key", "header", "X-API-Key", &keys);
    let gw = start(&auth, &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;

    let wrong = client::post_json(&gw.url(), send("w1"), &[("x-api-key", "nope")]).await;
    let challenge = assert_401(&wrong, "w1");
    assert!(challenge.contains("ApiKey"), "{challenge}");
    assert!(challenge.contains("X-API-Key"), "{challenge}");
    let missing = client::post_json(&gw.url(), send("w2"), &[]).await;
    let challenge = assert_401(&missing, "w2");
    assert!(challenge.contains("ApiKey"), "{challenge}");
    let empty = client::post_json(&gw.url(), send("w3"), &[("x-api-key", "")]).await;
    assert_401(&empty, "w3");
    assert_eq!(
        mock.request_count(),
        0,
        "refused calls never reach the agent"
    );

    let ok = client::post_json(
        &gw.url(),
        send("ok"),
        &[("x-api-key", "hdr-s3cret"), ("x-other", "kept")],
    )
    .await;
    assert_ok(&ok, "ok");
    let got = last(&mock);
    assert!(got.header("x-api-key").is_none(), "{:?}", got.headers);
    assert_eq!(got.header("x-other"), Some("kept"));
    assert_eq!(got.header("x-caller"), Some("ci"));
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn api_key_in_the_query_is_checked_and_removed_from_the_forwarded_path() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"q\", sha256 = \"{}\" }}]",
        sha256_hex("qry-s3cret")
    );
    let auth = key_scheme("q", "query", "api_key", &keys);
    let gw = start(&auth, &[("echo", &mock, "")]).await;
    let base = gw.url();

    let wrong = client::post_json(&format!("{base}?api_key=nope&tenant=t"), send("w1"), &[]).await;
    let challenge = assert_401(&wrong, "w1");
    assert!(
        challenge.contains("ApiKey") && challenge.contains("query"),
        "{challenge}"
    );
    let missing = client::post_json(&format!("{base}?tenant=t"), send("w2"), &[]).await;
    assert_401(&missing, "w2");
    assert_eq!(mock.request_count(), 0);

    let ok = client::post_json(
        &format!("{base}?tenant=t&api_key=qry-s3cret&x=1"),
        send("ok"),
        &[],
    )
    .await;
    assert_ok(&ok, "ok");
    let path = last(&mock).path_and_query;
    assert!(!path.contains("api_key"), "{path}");
    assert!(!path.contains("qry-s3cret"), "{path}");
    assert!(path.contains("tenant=t") && path.contains("x=1"), "{path}");

    let alone = client::post_json(&format!("{base}?api_key=qry-s3cret"), send("alone"), &[]).await;
    assert_ok(&alone, "alone");
    let path = last(&mock).path_and_query;
    assert!(!path.contains("api_key") && !path.contains('?'), "{path}");
}

#[tokio::test]
async fn a_query_key_the_gateway_accepted_never_reaches_the_agent_however_encoded() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"q\", sha256 = \"{}\" }}]",
        sha256_hex("qry-s3cret")
    );
    let auth = key_scheme("q", "query", "api_key", &keys);
    let gw = start(&auth, &[("echo", &mock, "")]).await;
    let base = gw.url();

    // A percent-encoded value is decoded for the check and still removed.
    let reply =
        client::post_json(&format!("{base}?api_key=qry%2Ds3cret&t=1"), send("v"), &[]).await;
    assert_ok(&reply, "v");
    let path = last(&mock).path_and_query;
    assert!(!path.contains("api_key") && path.contains("t=1"), "{path}");

    // A percent-encoded parameter name: the gateway decodes names when it
    // looks for the key, so whatever it accepts it must also remove.
    for (id, query) in [
        ("n1", "api%5Fkey=qry-s3cret&t=1"),
        ("n2", "%61pi_key=qry-s3cret"),
    ] {
        let reply = client::post_json(&format!("{base}?{query}"), send(id), &[]).await;
        match reply.status {
            StatusCode::OK => {
                let path = last(&mock).path_and_query;
                assert!(
                    !path.contains("qry-s3cret"),
                    "{id}: the accepted key was forwarded to the agent: {path}"
                );
            }
            _ => {
                assert_401(&reply, id);
            }
        }
    }
}

#[tokio::test]
async fn api_key_in_a_cookie_is_checked_and_only_that_cookie_removed() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"c\", sha256 = \"{}\" }}]",
        sha256_hex("ck-s3cret")
    );
    let auth = key_scheme("cookie", "cookie", "session", &keys);
    let gw = start(&auth, &[("echo", &mock, "")]).await;

    let wrong = client::post_json(
        &gw.url(),
        send("w1"),
        &[("cookie", "theme=dark; session=nope")],
    )
    .await;
    let challenge = assert_401(&wrong, "w1");
    assert!(
        challenge.contains("ApiKey") && challenge.contains("cookie"),
        "{challenge}"
    );
    let missing = client::post_json(&gw.url(), send("w2"), &[("cookie", "theme=dark")]).await;
    assert_401(&missing, "w2");
    assert_eq!(mock.request_count(), 0);

    let ok = client::post_json(
        &gw.url(),
        send("ok"),
        &[("cookie", "theme=dark; session=ck-s3cret; lang=en")],
    )
    .await;
    assert_ok(&ok, "ok");
    let cookies = header_values(&last(&mock), "cookie").join("; ");
    assert!(!cookies.contains("ck-s3cret"), "{cookies}");
    assert!(!cookies.contains("session"), "{cookies}");
    assert!(
        cookies.contains("theme=dark") && cookies.contains("lang=en"),
        "{cookies}"
    );

    let only = client::post_json(&gw.url(), send("only"), &[("cookie", "session=ck-s3cret")]).await;
    assert_ok(&only, "only");
    assert!(last(&mock).header("cookie").is_none());
}

#[tokio::test]
async fn api_keys_from_sha256_env_and_file() {
    let mock = MockAgent::start(Mode::Normal).await;
    let var = unique("A2A_GW_AUTH_TEST_KEY");
    std::env::set_var(&var, "env-s3cret");
    let file = std::env::temp_dir().join(unique("a2a-gw-auth-key"));
    std::fs::write(&file, "file-s3cret\n").unwrap();
    let keys = format!(
        "[{{ id = \"hashed\", sha256 = \"{}\" }}, {{ id = \"from-env\", env = \"{var}\" }}, {{ id = \"from-file\", file = '{}' }}]",
        sha256_hex("hash-s3cret"),
        file.display()
    );
    let auth = key_scheme("key", "header", "X-API-Key", &keys);
    let gw = start(&auth, &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;
    let _ = std::fs::remove_file(&file);

    for (key, id) in [
        ("hash-s3cret", "hashed"),
        ("env-s3cret", "from-env"),
        ("file-s3cret", "from-file"),
    ] {
        let reply = client::post_json(&gw.url(), send(id), &[("x-api-key", key)]).await;
        assert_ok(&reply, id);
        assert_eq!(last(&mock).header("x-caller"), Some(id));
    }
    // The digest is not the key, nor is the variable's name or a prefix.
    let digest = sha256_hex("hash-s3cret");
    for (i, key) in [digest.as_str(), var.as_str(), "file-s3cre", "env-s3cre"]
        .iter()
        .enumerate()
    {
        let id = format!("bad{i}");
        let reply = client::post_json(&gw.url(), send(&id), &[("x-api-key", key)]).await;
        assert_401(&reply, &id);
    }
}

// ---------------------------------------------------------------- Basic

#[tokio::test]
async fn basic_with_argon2_and_bcrypt_hashes() {
    let mock = MockAgent::start(Mode::Normal).await;
    let argon = argon2_hash("wonderland");
    let bcrypt = bcrypt_hash("builder");
    let auth = basic_scheme("basic", &[("alice", &argon), ("bob", &bcrypt)]);
    let gw = start(&auth, &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;

    let alice = client::post_json(
        &gw.url(),
        send("a"),
        &[("authorization", &basic("alice", "wonderland"))],
    )
    .await;
    assert_ok(&alice, "a");
    let got = last(&mock);
    assert_eq!(got.header("x-caller"), Some("alice"));
    assert!(
        got.header("authorization").is_none(),
        "the password does not reach the agent"
    );
    let bob = client::post_json(
        &gw.url(),
        send("b"),
        &[("authorization", &basic("bob", "builder"))],
    )
    .await;
    assert_ok(&bob, "b");
    assert_eq!(last(&mock).header("x-caller"), Some("bob"));
    let before = mock.request_count();

    let refused: [(&str, String); 6] = [
        ("wrong-pass", basic("alice", "builder")),
        ("wrong-pass-bcrypt", basic("bob", "wonderland")),
        ("unknown-user", basic("mallory", "wonderland")),
        ("not-base64", "Basic !!!not-base64!!!".to_string()),
        (
            "no-colon",
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("alicewonderland")
            ),
        ),
        ("no-credentials", "Basic".to_string()),
    ];
    for (id, value) in &refused {
        let reply = client::post_json(&gw.url(), send(id), &[("authorization", value)]).await;
        let challenge = assert_401(&reply, id);
        assert!(challenge.contains("Basic"), "{id}: {challenge}");
    }
    let none = client::post_json(&gw.url(), send("none"), &[]).await;
    assert!(assert_401(&none, "none").contains("Basic"));
    assert_eq!(mock.request_count(), before, "refused calls never reach it");
}

// ---------------------------------------------------------------- Bearer

#[tokio::test]
async fn bearer_jwt_with_static_hs256_and_rs256_keys() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start(
        &bearer_scheme("bearer"),
        &[("echo", &mock, "identity_header = \"X-Caller\"")],
    )
    .await;
    let call = |id: &'static str, token: String| {
        let url = gw.url();
        async move { client::post_json(&url, send(id), &[("authorization", &bearer(&token))]).await }
    };

    assert_ok(&call("hs", hs256(&claims("alice"))).await, "hs");
    let got = last(&mock);
    assert_eq!(got.header("x-caller"), Some("alice"), "the token's sub");
    assert!(got.header("authorization").is_none());
    assert_ok(&call("rs", rs256(&claims("robert"))).await, "rs");
    assert_eq!(last(&mock).header("x-caller"), Some("robert"));
    let before = mock.request_count();

    let expired = with(claims("alice"), json!({"exp": now() - 3600}));
    for (id, token) in [("exp-hs", hs256(&expired)), ("exp-rs", rs256(&expired))] {
        let challenge = assert_401(&call(id, token).await, id);
        assert!(challenge.contains("Bearer"), "{challenge}");
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    let wrong_aud = with(claims("alice"), json!({"aud": "someone-else"}));
    for (id, token) in [("aud-hs", hs256(&wrong_aud)), ("aud-rs", rs256(&wrong_aud))] {
        let challenge = assert_401(&call(id, token).await, id);
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &claims("alice"),
        &EncodingKey::from_secret(b"not the gateway's secret, but 32+ bytes long"),
    )
    .unwrap();
    assert_401(&call("forged", forged).await, "forged");
    assert_401(&call("garbage", "not.a.jwt".into()).await, "garbage");

    let none = client::post_json(&gw.url(), send("none"), &[]).await;
    let challenge = assert_401(&none, "none");
    assert!(challenge.contains("Bearer"), "{challenge}");
    assert!(
        !challenge.contains("error="),
        "no token, no error: {challenge}"
    );
    assert_eq!(mock.request_count(), before);
}

#[tokio::test]
async fn oauth2_scheme_requires_the_listed_scope() {
    let mock = MockAgent::start(Mode::Normal).await;
    let auth = format!(
        r#"
[auth]
security = [ {{ oauth = ["agents:use"] }} ]
[auth.schemes.oauth]
type = "oauth2"
[auth.schemes.oauth.flows.clientCredentials]
tokenUrl = "https://auth.example/token"
scopes = {{ "agents:use" = "Use the agents" }}
{}"#,
        jwt_table("oauth")
    );
    let gw = start(&auth, &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;
    let call = |id: &'static str, claims: Value| {
        let url = gw.url();
        async move {
            let token = hs256(&claims);
            client::post_json(&url, send(id), &[("authorization", &bearer(&token))]).await
        }
    };

    let ok = call(
        "ok",
        with(claims("svc"), json!({"scope": "agents:read agents:use"})),
    )
    .await;
    assert_ok(&ok, "ok");
    assert_eq!(last(&mock).header("x-caller"), Some("svc"));
    let scp = call("scp", with(claims("svc"), json!({"scope": "agents:use"}))).await;
    assert_ok(&scp, "scp");
    let before = mock.request_count();

    for (id, claims) in [
        (
            "other",
            with(claims("svc"), json!({"scope": "agents:read"})),
        ),
        ("none", claims("svc")),
    ] {
        let reply = call(id, claims).await;
        let challenge = assert_403(&reply, id);
        assert!(challenge.contains("insufficient_scope"), "{challenge}");
        assert!(challenge.contains("agents:use"), "{challenge}");
    }
    // No token at all is not "insufficient scope": it is 401.
    let none = client::post_json(&gw.url(), send("anon"), &[]).await;
    assert_401(&none, "anon");
    assert_eq!(mock.request_count(), before);
}

// ---------------------------------------------------------------- alternatives

#[tokio::test]
async fn alternatives_either_scheme_or_both_together() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"ci\", sha256 = \"{}\" }}]",
        sha256_hex("alt-key")
    );
    let schemes = format!(
        "{}{}",
        key_scheme("key", "header", "X-API-Key", &keys),
        basic_scheme("basic", &[("alice", &bcrypt_hash("pw"))])
    );
    let either = start(
        &format!("[auth]\nsecurity = [ {{ key = [] }}, {{ basic = [] }} ]\n{schemes}"),
        &[("echo", &mock, "")],
    )
    .await;
    let both = start(
        &format!("[auth]\nsecurity = [ {{ key = [], basic = [] }} ]\n{schemes}"),
        &[("echo", &mock, "")],
    )
    .await;
    let auth = basic("alice", "pw");
    let key_only: &[(&str, &str)] = &[("x-api-key", "alt-key")];
    let basic_only: &[(&str, &str)] = &[("authorization", &auth)];
    let both_creds: &[(&str, &str)] = &[("x-api-key", "alt-key"), ("authorization", &auth)];
    let wrong_key: &[(&str, &str)] = &[("x-api-key", "nope"), ("authorization", &auth)];

    assert_ok(
        &client::post_json(&either.url(), send("k"), key_only).await,
        "k",
    );
    assert_ok(
        &client::post_json(&either.url(), send("b"), basic_only).await,
        "b",
    );
    assert_ok(
        &client::post_json(&either.url(), send("kb"), both_creds).await,
        "kb",
    );
    assert_401(&client::post_json(&either.url(), send("n"), &[]).await, "n");

    let before = mock.request_count();
    assert_401(
        &client::post_json(&both.url(), send("k"), key_only).await,
        "k",
    );
    assert_401(
        &client::post_json(&both.url(), send("b"), basic_only).await,
        "b",
    );
    assert_401(
        &client::post_json(&both.url(), send("wk"), wrong_key).await,
        "wk",
    );
    assert_401(&client::post_json(&both.url(), send("n"), &[]).await, "n");
    assert_eq!(mock.request_count(), before);
    assert_ok(
        &client::post_json(&both.url(), send("kb"), both_creds).await,
        "kb",
    );
    let got = last(&mock);
    assert!(got.header("x-api-key").is_none() && got.header("authorization").is_none());
}

// ---------------------------------------------------------------- hygiene

#[tokio::test]
async fn forward_credentials_lets_one_upstream_see_them() {
    let open = MockAgent::start(Mode::Normal).await;
    let closed = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"ci\", sha256 = \"{}\" }}]",
        sha256_hex("fwd-key")
    );
    let auth = format!(
        "{}{}{}",
        key_scheme("key", "header", "X-API-Key", &keys),
        key_scheme("q", "query", "api_key", &keys),
        bearer_scheme("bearer")
    );
    let gw = start(
        &auth,
        &[
            ("open", &open, "forward_credentials = true"),
            ("closed", &closed, ""),
        ],
    )
    .await;
    let token = hs256(&claims("alice"));
    let authz = bearer(&token);
    let base = gw.url();

    for (name, mock, forwarded) in [("open", &open, true), ("closed", &closed, false)] {
        let url = format!("{base}agents/{name}");
        let reply = client::post_json(&url, send("k"), &[("x-api-key", "fwd-key")]).await;
        assert_ok(&reply, "k");
        assert_eq!(
            last(mock).header("x-api-key").is_some(),
            forwarded,
            "{name}: X-API-Key"
        );
        let reply = client::post_json(&url, send("t"), &[("authorization", &authz)]).await;
        assert_ok(&reply, "t");
        let got = last(mock);
        assert_eq!(
            got.header("authorization"),
            forwarded.then_some(authz.as_str()),
            "{name}: Authorization"
        );
        let reply = client::post_json(&format!("{url}?api_key=fwd-key"), send("q"), &[]).await;
        assert_ok(&reply, "q");
        let path = last(mock).path_and_query;
        assert_eq!(
            path.contains("api_key=fwd-key"),
            forwarded,
            "{name}: {path}"
        );
    }
}

#[tokio::test]
async fn identity_header_is_the_verified_subject_never_the_clients() {
    let mock = MockAgent::start(Mode::Normal).await;
    let keys = format!(
        "[{{ id = \"ci-bot\", sha256 = \"{}\" }}]",
        sha256_hex("id-key")
    );
    let auth = key_scheme("key", "header", "X-API-Key", &keys);
    let gw = start(&auth, &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;
    let reply = client::post_json(
        &gw.url(),
        send("1"),
        &[
            ("x-api-key", "id-key"),
            ("x-caller", "admin"),
            ("X-Caller", "root"),
        ],
    )
    .await;
    assert_ok(&reply, "1");
    assert_eq!(header_values(&last(&mock), "x-caller"), ["ci-bot"]);
}

#[tokio::test]
async fn identity_header_is_stripped_without_authentication() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start("", &[("echo", &mock, "identity_header = \"X-Caller\"")]).await;
    let reply = client::post_json(&gw.url(), send("1"), &[("x-caller", "admin")]).await;
    assert_ok(&reply, "1");
    let got = last(&mock);
    assert!(got.header("x-caller").is_none(), "{:?}", got.headers);
    // Without gateway authentication, client credentials pass through.
    let reply = client::post_json(&gw.url(), send("2"), &[("authorization", "Bearer abc")]).await;
    assert_ok(&reply, "2");
    assert_eq!(last(&mock).header("authorization"), Some("Bearer abc"));
}

// ---------------------------------------------------------------- authorization

/// weather (skill forecast, ids "weather-…") and travel (book-flight).
async fn fleet() -> (MockAgent, MockAgent) {
    (
        agent("Weather", "forecast", "weather-").await,
        agent("Travel", "book-flight", "travel-").await,
    )
}

fn people_keys() -> String {
    let keys = format!(
        "[{{ id = \"alice\", sha256 = \"{}\" }}, {{ id = \"bob\", sha256 = \"{}\" }}]",
        sha256_hex("alice-key"),
        sha256_hex("bob-key")
    );
    key_scheme("key", "header", "X-API-Key", &keys)
}

const ALICE_FORECAST_RULE: &str = r#"
[[authz.rules]]
subjects = ["alice"]
skills = ["forecast"]
methods = ["send", "get_task"]
"#;

#[tokio::test]
async fn rules_allow_the_named_caller_skill_and_methods_only() {
    let (weather, travel) = fleet().await;
    let config = format!("{}{ALICE_FORECAST_RULE}", people_keys());
    let gw = start(
        &config,
        &[("weather", &weather, ""), ("travel", &travel, "")],
    )
    .await;
    let url = gw.url();
    let alice = |skill: &'static str| [("x-api-key", "alice-key"), ("a2a-skill", skill)];

    let ok = client::post_json(&url, send("fc"), &alice("forecast")).await;
    assert_ok(&ok, "fc");
    let task = ok.json()["result"]["id"].as_str().unwrap().to_string();
    assert!(task.starts_with("weather-"), "{task}");
    assert_eq!(weather.request_count(), 1);

    let flight = client::post_json(&url, send("bf"), &alice("book-flight")).await;
    let challenge = assert_403(&flight, "bf");
    assert!(
        challenge.is_empty(),
        "a rule refusal is no credential challenge: {challenge}"
    );
    assert_eq!(travel.request_count(), 0);

    let stream = client::post_json(&url, message("st", "message/stream"), &alice("forecast")).await;
    assert_403(&stream, "st");
    assert_eq!(weather.request_count(), 1);

    // A follow-up routed by the task's owner (no skill) is allowed by the
    // rule naming that upstream's skill.
    let alice_only = [("x-api-key", "alice-key")];
    let follow = client::post_json(&url, get_task("gt", &task), &alice_only).await;
    assert_ok(&follow, "gt");
    assert_eq!(last(&weather).json()["method"], "tasks/get");
    // A task call the caller may not make where the task lives is answered
    // as an unknown task is (-32001), so a refusal does not tell that the
    // task exists there.
    let cancel = client::post_json(&url, cancel_task("cx", &task), &alice_only).await;
    let unknown = client::post_json(&url, cancel_task("cx", "no-such-task"), &alice_only).await;
    assert_same_as_unknown_task(&cancel, &unknown, &task, "cx");

    // bob is authenticated, but no rule names him.
    let bob = [("x-api-key", "bob-key"), ("a2a-skill", "forecast")];
    assert_403(&client::post_json(&url, send("bob"), &bob).await, "bob");
    let bob_follow = [("x-api-key", "bob-key")];
    let reply = client::post_json(&url, get_task("bob-gt", &task), &bob_follow).await;
    let unknown = client::post_json(&url, get_task("bob-gt", "no-such-task"), &bob_follow).await;
    assert_same_as_unknown_task(&reply, &unknown, &task, "bob-gt");
    assert_eq!(weather.request_count(), 2);
    assert_eq!(travel.request_count(), 0);

    // Addressed by path (no skill): allowed where the upstream has a skill
    // the rule names, refused elsewhere.
    let reply = client::post_json(&format!("{url}agents/weather"), send("pw"), &alice_only).await;
    assert_ok(&reply, "pw");
    let reply = client::post_json(&format!("{url}agents/travel"), send("pt"), &alice_only).await;
    assert_403(&reply, "pt");
    assert_eq!(weather.request_count(), 3);
    assert_eq!(travel.request_count(), 0);

    // Without credentials it is still 401, not 403.
    let anon = client::post_json(&url, send("anon"), &[("a2a-skill", "forecast")]).await;
    assert_401(&anon, "anon");
}

#[tokio::test]
async fn rules_by_scope_and_by_jwt_claims() {
    let (weather, travel) = fleet().await;
    let config = format!(
        r#"{}
[[authz.rules]]
scopes = ["weather:read"]
upstreams = ["weather"]
methods = ["*"]

[[authz.rules]]
claims = {{ team = "ops", tier = "gold" }}
skills = ["book-flight"]
methods = ["send"]
"#,
        bearer_scheme("bearer")
    );
    let gw = start(
        &config,
        &[("weather", &weather, ""), ("travel", &travel, "")],
    )
    .await;
    let url = gw.url();
    let call = |id: &'static str, skill: &'static str, claims: Value| {
        let url = url.clone();
        async move {
            let authz = bearer(&hs256(&claims));
            let headers = [("authorization", authz.as_str()), ("a2a-skill", skill)];
            client::post_json(&url, send(id), &headers).await
        }
    };

    let reader = with(claims("reader"), json!({"scope": "weather:read"}));
    assert_ok(&call("r1", "forecast", reader.clone()).await, "r1");
    assert_403(&call("r2", "book-flight", reader).await, "r2");
    let other_scope = with(claims("reader"), json!({"scope": "weather:write"}));
    assert_403(&call("r3", "forecast", other_scope).await, "r3");

    let ops = with(claims("carol"), json!({"team": "ops", "tier": "gold"}));
    assert_ok(&call("c1", "book-flight", ops.clone()).await, "c1");
    assert_403(&call("c2", "forecast", ops).await, "c2");
    let listed = with(
        claims("erin"),
        json!({"team": ["dev", "ops"], "tier": "gold"}),
    );
    assert_ok(&call("c3", "book-flight", listed).await, "c3");
    let half = with(claims("dan"), json!({"team": "ops"}));
    assert_403(&call("c4", "book-flight", half).await, "c4");
    let dev = with(claims("dev"), json!({"team": "dev", "tier": "gold"}));
    assert_403(&call("c5", "book-flight", dev).await, "c5");

    assert_eq!(weather.request_count(), 1);
    assert_eq!(travel.request_count(), 2);
}

// ---------------------------------------------------------------- cards

/// key, basic, bearer and oauth2, in three alternatives.
fn card_auth(public_card: bool) -> String {
    let keys = format!(
        "[{{ id = \"ci\", sha256 = \"{}\" }}]",
        sha256_hex("card-key")
    );
    format!(
        r#"
[auth]
public_card = {public_card}
security = [ {{ key = [] }}, {{ basic = [], bearer = [] }}, {{ oauth = ["agents:use"] }} ]
{}
description = "Team keys"
{}{}
[auth.schemes.oauth]
type = "oauth2"
[auth.schemes.oauth.flows.clientCredentials]
tokenUrl = "https://auth.example/token"
scopes = {{ "agents:use" = "Use the agents" }}
{}"#,
        key_scheme("key", "header", "X-API-Key", &keys).trim_end(),
        basic_scheme("basic", &[("alice", &bcrypt_hash("pw"))]),
        bearer_scheme("bearer"),
        jwt_table("oauth"),
    )
}

/// An agent card declaring the agent's own scheme, which the gateway
/// (authenticating itself) must not publish.
async fn agent_with_own_security() -> MockAgent {
    let mock = agent("Weather", "forecast", "weather-").await;
    let mut card = mock.card().unwrap();
    card["securitySchemes"] =
        json!({"agentOwn": {"type": "apiKey", "in": "header", "name": "X-Agent-Key"}});
    card["security"] = json!([{"agentOwn": []}]);
    card["securityRequirements"] = json!([{"schemes": {"agentOwn": {"list": []}}}]);
    mock.set_card(Some(card));
    mock
}

/// The card declares exactly the gateway's schemes and alternatives.
fn assert_gateway_security(card: &Value) {
    let schemes = card["securitySchemes"]
        .as_object()
        .unwrap_or_else(|| panic!("no securitySchemes: {card}"));
    let names: Vec<&str> = schemes.keys().map(String::as_str).collect();
    assert_eq!(names, ["basic", "bearer", "key", "oauth"], "{card}");
    assert_eq!(
        schemes["key"],
        json!({"type": "apiKey", "in": "header", "name": "X-API-Key",
               "description": "Team keys",
               "apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}})
    );
    assert_eq!(schemes["basic"]["type"], "http");
    assert_eq!(schemes["basic"]["scheme"], "basic");
    assert_eq!(schemes["bearer"]["type"], "http");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["bearer"]["bearerFormat"], "JWT");
    assert_eq!(schemes["oauth"]["type"], "oauth2");
    let flows = json!({"clientCredentials": {"tokenUrl": "https://auth.example/token",
        "scopes": {"agents:use": "Use the agents"}}});
    assert_eq!(schemes["oauth"]["flows"], flows);
    assert_eq!(schemes["oauth"]["oauth2SecurityScheme"]["flows"], flows);
    assert_eq!(
        card["security"],
        json!([{"key": []}, {"basic": [], "bearer": []}, {"oauth": ["agents:use"]}])
    );
    assert_eq!(
        card["securityRequirements"],
        json!([
            {"schemes": {"key": {"list": []}}},
            {"schemes": {"basic": {"list": []}, "bearer": {"list": []}}},
            {"schemes": {"oauth": {"list": ["agents:use"]}}}
        ])
    );
    // Nothing about the gateway's secrets is published.
    let text = card.to_string();
    assert!(
        !text.contains("sha256") && !text.contains(HS_SECRET),
        "{text}"
    );
}

#[tokio::test]
async fn published_card_describes_exactly_the_configured_schemes() {
    let mock = agent_with_own_security().await;
    let gw = start(&card_auth(true), &[("weather", &mock, "")]).await;
    let reply = client::get(&format!("{}.well-known/agent-card.json", gw.url()), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "public by default");
    assert_gateway_security(&reply.json());
    let old = client::get(&format!("{}.well-known/agent.json", gw.url()), &[]).await;
    assert_eq!(old.status, StatusCode::OK);
    assert_gateway_security(&old.json());
}

#[tokio::test]
async fn per_agent_card_publishes_the_gateway_schemes_not_the_agents() {
    // /agents/weather is served by the gateway, behind the gateway's own
    // authentication: its card must say so (the agent's own scheme would
    // send clients with credentials the gateway does not accept).
    let mock = agent_with_own_security().await;
    let gw = start(&card_auth(true), &[("weather", &mock, "")]).await;
    let url = format!("{}agents/weather/.well-known/agent-card.json", gw.url());
    let reply = client::get(&url, &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_gateway_security(&reply.json());
}

#[tokio::test]
async fn cards_need_credentials_when_public_card_is_false() {
    let mock = agent("Weather", "forecast", "weather-").await;
    let gw = start(&card_auth(false), &[("weather", &mock, "")]).await;
    let base = gw.url();
    for path in [
        ".well-known/agent-card.json",
        ".well-known/agent.json",
        "agents/weather/.well-known/agent-card.json",
    ] {
        let url = format!("{base}{path}");
        let anon = client::get(&url, &[]).await;
        assert_eq!(
            anon.status,
            StatusCode::UNAUTHORIZED,
            "{path}: {}",
            anon.text()
        );
        assert_eq!(anon.json()["error"]["code"], UNAUTHENTICATED, "{path}");
        let challenge = anon.header("www-authenticate").unwrap_or("");
        assert!(challenge.contains("ApiKey"), "{path}: {challenge}");
        assert!(!anon.text().contains("forecast"), "{path}: {}", anon.text());
        let wrong = client::get(&url, &[("x-api-key", "nope")]).await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{path}");
        let ok = client::get(&url, &[("x-api-key", "card-key")]).await;
        assert_eq!(ok.status, StatusCode::OK, "{path}: {}", ok.text());
        assert_eq!(ok.json()["skills"][0]["id"], "forecast", "{path}");
        let basic_ok = client::get(&url, &[("authorization", &basic("alice", "pw"))]).await;
        assert_eq!(
            basic_ok.status,
            StatusCode::UNAUTHORIZED,
            "{path}: basic alone is not an alternative"
        );
    }
}

const EXTENDED: &str = "\n[card]\nextended_card = true\n";

#[tokio::test]
async fn extended_card_needs_credentials_and_shows_the_callers_skills() {
    let (weather, travel) = fleet().await;
    let config = format!("{EXTENDED}{}{ALICE_FORECAST_RULE}", people_keys());
    let gw = start(
        &config,
        &[("weather", &weather, ""), ("travel", &travel, "")],
    )
    .await;
    let url = gw.url();
    let ids = |card: &Value| -> Vec<String> {
        card["skills"]
            .as_array()
            .unwrap_or_else(|| panic!("no skills: {card}"))
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let call =
        json!({"jsonrpc": "2.0", "id": "xc", "method": "agent/getAuthenticatedExtendedCard"})
            .to_string();

    let anon = client::post_json(&url, call.clone(), &[]).await;
    assert!(assert_401(&anon, "xc").contains("ApiKey"));
    let wrong = client::post_json(&url, call.clone(), &[("x-api-key", "nope")]).await;
    assert_401(&wrong, "xc");

    let alice = client::post_json(&url, call.clone(), &[("x-api-key", "alice-key")]).await;
    assert_ok(&alice, "xc");
    assert_eq!(ids(&alice.json()["result"]), ["forecast"]);
    let bob = client::post_json(&url, call.clone(), &[("x-api-key", "bob-key")]).await;
    assert_ok(&bob, "xc");
    assert!(ids(&bob.json()["result"]).is_empty(), "{}", bob.text());

    let v1 = json!({"jsonrpc": "2.0", "id": 9, "method": "GetExtendedAgentCard"}).to_string();
    let headers = [("x-api-key", "alice-key"), ("a2a-version", "1.0")];
    let reply = client::post_json(&url, v1, &headers).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(ids(&reply.json()["result"]), ["forecast"]);

    for path in ["extendedAgentCard", "agent/authenticatedExtendedCard"] {
        let anon = client::get(&format!("{url}{path}"), &[]).await;
        assert_eq!(
            anon.status,
            StatusCode::UNAUTHORIZED,
            "{path}: {}",
            anon.text()
        );
        assert!(anon.header("www-authenticate").is_some(), "{path}");
        let ok = client::get(&format!("{url}{path}"), &[("x-api-key", "alice-key")]).await;
        assert_eq!(ok.status, StatusCode::OK, "{path}: {}", ok.text());
        assert_eq!(ids(&ok.json()), ["forecast"], "{path}");
        let cache = ok.header("cache-control").unwrap_or("");
        assert!(
            cache.contains("private") || cache.contains("no-store"),
            "{cache}"
        );
    }

    // The public card still lists the whole fleet.
    let public = client::get(&format!("{url}.well-known/agent-card.json"), &[]).await;
    assert_eq!(ids(&public.json()), ["book-flight", "forecast"]);
}

#[tokio::test]
async fn per_agent_extended_card_shows_the_callers_skills_and_the_gateway_schemes() {
    let weather = agent_with_own_security().await;
    let travel = agent("Travel", "book-flight", "travel-").await;
    let config = format!(
        "{EXTENDED}{}\n[[authz.rules]]\nsubjects = [\"ci\"]\nskills = [\"forecast\"]\nmethods = [\"send\"]\n",
        card_auth(true)
    );
    let gw = start(
        &config,
        &[("weather", &weather, ""), ("travel", &travel, "")],
    )
    .await;
    let url = gw.url();
    let key = [("x-api-key", "card-key")];

    let anon = client::get(&format!("{url}agents/weather/extendedAgentCard"), &[]).await;
    assert_eq!(anon.status, StatusCode::UNAUTHORIZED, "{}", anon.text());
    let travel_card = client::get(&format!("{url}agents/travel/extendedAgentCard"), &key).await;
    assert_eq!(travel_card.status, StatusCode::OK, "{}", travel_card.text());
    assert_eq!(travel_card.json()["skills"], json!([]));
    let reply = client::get(&format!("{url}agents/weather/extendedAgentCard"), &key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let card = reply.json();
    assert_eq!(card["skills"][0]["id"], "forecast", "{card}");
    assert_eq!(card["skills"].as_array().map(Vec::len), Some(1));
    // Served at /agents/weather behind the gateway's authentication.
    assert_gateway_security(&card);
}

#[tokio::test]
async fn unknown_agent_names_are_not_revealed_to_unauthenticated_callers() {
    // The proxy authenticates before it says anything about a request; an
    // agent name that does not exist must not answer differently (404)
    // from one that does (401) when no credentials are given.
    let mock = agent("Weather", "forecast", "weather-").await;
    let gw = start(&card_auth(false), &[("weather", &mock, "")]).await;
    let base = gw.url();
    for name in ["weather", "no-such-agent"] {
        let reply = client::post_json(&format!("{base}agents/{name}"), send("p"), &[]).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "POST /agents/{name}: {}",
            reply.text()
        );
        let card = format!("{base}agents/{name}/.well-known/agent-card.json");
        let reply = client::get(&card, &[]).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "GET card of {name}: {}",
            reply.text()
        );
    }
    // With credentials the unknown name is a plain 404.
    let reply = client::post_json(
        &format!("{base}agents/no-such-agent"),
        send("p"),
        &[("x-api-key", "card-key")],
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
}

// ---------------------------------------------------------------- config errors

/// The paths of every problem `load_str` reports for `text` (plus one
/// upstream named "echo").
fn problems(text: &str) -> Vec<(String, String)> {
    let full = format!("{text}\n[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:1\"\n");
    match a2a_gateway::config::load_str(&full) {
        Ok(_) => panic!("config accepted:\n{full}"),
        Err(errors) => errors.0.into_iter().map(|e| (e.path, e.message)).collect(),
    }
}

fn assert_problem(text: &str, path: &str) -> String {
    let found = problems(text);
    found
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, m)| m.clone())
        .unwrap_or_else(|| panic!("no problem at {path}; got {found:?}\n---\n{text}"))
}

#[test]
fn config_errors_name_their_paths() {
    let key = |extra: &str| {
        format!(
            "\n[auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\nkeys = [{{ id = \"ci\", sha256 = \"{}\"{extra} }}]\n",
            sha256_hex("k")
        )
    };
    let ok_key = key("");

    assert_problem(
        &format!("[auth]\nsecurity = [ {{ key = [] }}, {{ nope = [] }} ]\n{ok_key}"),
        "auth.security[1].nope",
    );
    assert_problem(
        &format!("[auth]\nsecurity = [ {{ nope = [] }} ]\n{ok_key}"),
        "auth.security[0].nope",
    );
    assert_problem(
        &format!("[auth]\nsecurity = [ {{}} ]\n{ok_key}"),
        "auth.security[0]",
    );
    assert_problem(
        &format!("[auth]\nsecurity = [ {{ key = [] }}, {{}} ]\n{ok_key}"),
        "auth.security[1]",
    );
    let message = assert_problem(
        "[auth.schemes.basic]\ntype = \"http\"\nscheme = \"basic\"\nusers = [{ name = \"alice\", password_hash = \"hunter2-plain\" }]\n",
        "auth.schemes.basic.users[0].password_hash",
    );
    assert!(
        !message.contains("hunter2-plain"),
        "the error does not echo the password: {message}"
    );
    assert_problem(
        &key(", env = \"A2A_GW_SOME_VAR\""),
        "auth.schemes.key.keys[0]",
    );
    assert_problem(
        "[auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\nkeys = [{ id = \"ci\" }]\n",
        "auth.schemes.key.keys[0]",
    );

    let rule = |body: &str| format!("{ok_key}\n[[authz.rules]]\n{body}\n");
    assert_problem(
        &rule("skills = [\"echo\"]\nmethods = [\"send\"]"),
        "authz.rules[0].subjects",
    );
    assert_problem(
        &rule("subjects = [\"alice\"]\nmethods = [\"send\"]"),
        "authz.rules[0].skills",
    );
    let message = assert_problem(
        &rule("subjects = [\"alice\"]\nskills = [\"*\"]\nmethods = [\"post\"]"),
        "authz.rules[0].methods",
    );
    assert!(message.contains("post"), "{message}");
    assert_problem(
        &rule("subjects = [\"alice\"]\nskills = [\"*\"]\nmethods = []"),
        "authz.rules[0].methods",
    );
    let message = assert_problem(
        &rule("subjects = [\"alice\"]\nupstreams = [\"nope\"]\nmethods = [\"send\"]"),
        "authz.rules[0].upstreams",
    );
    assert!(message.contains("nope"), "{message}");
    assert_problem(
        "[[authz.rules]]\nsubjects = [\"alice\"]\nskills = [\"*\"]\nmethods = [\"*\"]\n",
        "authz",
    );

    // A good config with all of it loads.
    let good = format!(
        "{ok_key}\n[[authz.rules]]\nsubjects = [\"ci\"]\nupstreams = [\"echo\"]\nmethods = [\"*\"]\n\n[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:1\"\n"
    );
    assert!(a2a_gateway::config::load_str(&good).is_ok());
}

// ---------------------------------------------------------------- logs

/// The binary, killed (and reaped) if the test fails before it is stopped.
struct Proc {
    child: Child,
    stderr_lines: mpsc::Receiver<String>,
    outputs: Vec<std::thread::JoinHandle<String>>,
}

impl Proc {
    fn spawn(config: &Path) -> Proc {
        let mut child = Command::new(BIN)
            .args(["run", "--config", config.to_str().unwrap()])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        let (tx, stderr_lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        let mut stdout = child.stdout.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = stdout.read_to_end(&mut all);
            String::from_utf8_lossy(&all).into_owned()
        });
        Proc {
            child,
            stderr_lines,
            outputs: vec![err, out],
        }
    }

    /// The proxy address from the "a2a-gateway listening" line (text or JSON).
    fn listening_addr(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stderr_lines
                .recv_timeout(left)
                .expect("a listening line within 20 s");
            if !line.contains("a2a-gateway listening") {
                continue;
            }
            if let Ok(json) = serde_json::from_str::<Value>(&line) {
                let addr = json["fields"]["addr"].as_str().or(json["addr"].as_str());
                return addr.expect("addr field").to_string();
            }
            let start = line.find("addr=").expect("addr field") + "addr=".len();
            return line[start..].split_whitespace().next().unwrap().to_string();
        }
    }

    /// Stops the process (SIGTERM, then SIGKILL after a bound) and returns
    /// everything it wrote to stderr and stdout.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The pipes are closed once the process is gone: the readers end.
        let mut all = String::new();
        for handle in std::mem::take(&mut self.outputs) {
            all.push_str(&handle.join().unwrap_or_default());
        }
        all
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn no_secret_in_logs(format: &str) {
    let mock = MockAgent::start(Mode::Normal).await;
    // Accepted and refused credentials of every kind.
    let key_ok = "hdr-key-SECRET-4f9a1c";
    let key_bad = "hdr-key-WRONG-77e0b2";
    let query_ok = "qry-key-SECRET-1b2c3d";
    let query_bad = "qry-key-WRONG-9a8b7c";
    let cookie_ok = "ck-key-SECRET-6d5e4f";
    let cookie_bad = "ck-key-WRONG-3c2b1a";
    let pass_ok = "basic-pass-SECRET-5e6f";
    let pass_bad = "basic-pass-WRONG-0a1b";
    let token_ok = hs256(&claims("alice"));
    let token_bad = hs256(&with(claims("alice"), json!({"exp": now() - 3600})));
    let token_forged = encode(
        &Header::new(Algorithm::HS256),
        &claims("mallory"),
        &EncodingKey::from_secret(b"a forged-token secret of 32+ bytes length"),
    )
    .unwrap();
    let basic_ok = basic("alice", pass_ok);
    let basic_bad = basic("alice", pass_bad);

    let keys = |k: &str| format!("[{{ id = \"ci\", sha256 = \"{}\" }}]", sha256_hex(k));
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"1s\"\n\
         [log]\nlevel = \"debug\"\nformat = \"{format}\"\n[card_refresh]\ntimeout = \"2s\"\n\
         {}{}{}{}{}\n[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n",
        key_scheme("key", "header", "X-API-Key", &keys(key_ok)),
        key_scheme("q", "query", "api_key", &keys(query_ok)),
        key_scheme("c", "cookie", "session", &keys(cookie_ok)),
        basic_scheme("basic", &[("alice", &bcrypt_hash(pass_ok))]),
        bearer_scheme("bearer"),
        mock.url()
    );
    let path = std::env::temp_dir().join(format!("{}.toml", unique("a2a-gw-auth-logs")));
    std::fs::write(&path, config).unwrap();
    let proc = Proc::spawn(&path);
    let addr = proc.listening_addr();
    let _ = std::fs::remove_file(&path);
    let url = format!("http://{addr}/");

    let bearer_ok = bearer(&token_ok);
    let bearer_bad = bearer(&token_bad);
    let bearer_forged = bearer(&token_forged);
    let cookie_ok_header = format!("theme=dark; session={cookie_ok}");
    let cookie_bad_header = format!("session={cookie_bad}");
    let accepted: [(&str, &str); 4] = [
        ("x-api-key", key_ok),
        ("authorization", &basic_ok),
        ("authorization", &bearer_ok),
        ("cookie", &cookie_ok_header),
    ];
    for (i, header) in accepted.iter().enumerate() {
        let id = format!("ok{i}");
        let reply = client::post_json(&url, send(&id), &[*header]).await;
        assert_ok(&reply, &id);
    }
    let refused: [(&str, &str); 5] = [
        ("x-api-key", key_bad),
        ("authorization", &basic_bad),
        ("authorization", &bearer_bad),
        ("authorization", &bearer_forged),
        ("cookie", &cookie_bad_header),
    ];
    for (i, header) in refused.iter().enumerate() {
        let id = format!("bad{i}");
        let reply = client::post_json(&url, send(&id), &[*header]).await;
        assert_401(&reply, &id);
    }
    let reply = client::post_json(&format!("{url}?api_key={query_ok}&t=1"), send("q"), &[]).await;
    assert_ok(&reply, "q");
    let reply = client::post_json(&format!("{url}?api_key={query_bad}"), send("qb"), &[]).await;
    assert_401(&reply, "qb");
    let card = client::get(
        &format!("{url}.well-known/agent-card.json?api_key={query_ok}"),
        &[],
    )
    .await;
    assert_eq!(card.status, StatusCode::OK);
    // A malformed request with credentials still must not log them.
    let reply = client::post_json(&url, "{not json", &[("x-api-key", key_ok)]).await;
    assert_eq!(reply.json()["error"]["code"], -32700, "{}", reply.text());
    assert_eq!(mock.request_count(), 5);

    let logs = proc.stop();
    assert!(
        logs.contains("a2a-gateway listening") && logs.contains("routed"),
        "debug logs were written: {logs}"
    );
    // At debug each request has its span, and lines logged while it is
    // handled name it.
    assert!(
        logs.contains("request{id=") || logs.contains("\"name\":\"request\""),
        "debug lines name the request's span: {logs}"
    );
    let basic_b64_ok = basic_ok.trim_start_matches("Basic ").to_string();
    let basic_b64_bad = basic_bad.trim_start_matches("Basic ").to_string();
    let signature = |t: &str| t.rsplit('.').next().unwrap().to_string();
    let secrets = [
        key_ok.to_string(),
        key_bad.to_string(),
        query_ok.to_string(),
        query_bad.to_string(),
        cookie_ok.to_string(),
        cookie_bad.to_string(),
        pass_ok.to_string(),
        pass_bad.to_string(),
        basic_b64_ok,
        basic_b64_bad,
        token_ok.clone(),
        token_bad.clone(),
        token_forged.clone(),
        signature(&token_ok),
        signature(&token_bad),
        signature(&token_forged),
        HS_SECRET.to_string(),
    ];
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "{format} logs contain the secret {secret:?}:\n{logs}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_in_debug_logs_json() {
    no_secret_in_logs("json").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_in_debug_logs_text() {
    no_secret_in_logs("text").await;
}

// ---------------------------------------------------------------- gRPC

/// A gRPC 1.0 `SendMessage` with `metadata` (name, value) pairs.
fn grpc_send(
    metadata: &[(&'static str, String)],
) -> tonic::Request<a2a_gateway::a2a::grpc::v1::SendMessageRequest> {
    let mut request = tonic::Request::new(crate::support::calls::grpc_send("hello"));
    for (name, value) in metadata {
        request.metadata_mut().insert(*name, value.parse().unwrap());
    }
    request
}

#[tokio::test]
async fn grpc_calls_are_authenticated_by_bearer_metadata_and_authorized_per_skill_and_method() {
    use a2a_gateway::a2a::grpc::v1::a2a_service_client::A2aServiceClient;
    let (weather, travel) = fleet().await;
    let config = format!(
        "{}\n[[authz.rules]]\nsubjects = [\"alice\"]\nskills = [\"forecast\"]\nmethods = [\"send\"]\n",
        bearer_scheme("bearer")
    );
    let gw = start(
        &config,
        &[("weather", &weather, ""), ("travel", &travel, "")],
    )
    .await;
    let mut grpc = A2aServiceClient::connect(format!("http://{}", gw.addr()))
        .await
        .unwrap();
    let alice = bearer(&hs256(&claims("alice")));

    let anonymous = grpc.send_message(grpc_send(&[])).await.unwrap_err();
    assert_eq!(
        anonymous.code(),
        tonic::Code::Unauthenticated,
        "{anonymous:?}"
    );
    let forged = bearer(&hs256(&with(claims("alice"), json!({"aud": "elsewhere"}))));
    let forged = grpc
        .send_message(grpc_send(&[("authorization", forged)]))
        .await
        .unwrap_err();
    assert_eq!(forged.code(), tonic::Code::Unauthenticated, "{forged:?}");

    let allowed = [
        ("authorization", alice.clone()),
        ("a2a-skill", "forecast".to_string()),
    ];
    grpc.send_message(grpc_send(&allowed))
        .await
        .expect("alice may send to the forecast skill");
    let other_skill = [
        ("authorization", alice.clone()),
        ("a2a-skill", "book-flight".to_string()),
    ];
    let denied = grpc
        .send_message(grpc_send(&other_skill))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");
    // The rule allows `send` only: ListTasks is another method.
    let mut list = tonic::Request::new(a2a_gateway::a2a::grpc::v1::ListTasksRequest::default());
    list.metadata_mut()
        .insert("authorization", alice.parse().unwrap());
    list.metadata_mut()
        .insert("a2a-skill", "forecast".parse().unwrap());
    let denied = grpc.list_tasks(list).await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");

    assert_eq!(weather.request_count(), 1);
    assert_eq!(travel.request_count(), 0);
    let sent = weather
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert!(
        sent.header("authorization").is_none(),
        "the gateway's credential stays here"
    );
}

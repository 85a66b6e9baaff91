//! Agents' own card signatures, verified per upstream (`card_signature`,
//! `[upstreams.card_trust]`) through a real gateway on loopback, with mock
//! agents that serve signed cards: required, verify and off; keys inline,
//! from a JWKS URL and from an allowed `jku`; an agent's key rotated; and
//! each bad signature refused with its reason.

use std::time::Duration;

use crate::support::calls::send;
use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::key_server::KeyServer;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use a2a_gateway::card::{canonical, project};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{json, Value};

/// An agent's ES256 signing key.
struct Signer {
    kid: String,
    key: EncodingKey,
    jwk: Value,
    public_pem: String,
}

/// What a test signature covers.
#[derive(Clone, Copy)]
enum Covers {
    /// The card as served, in RFC 8785 form.
    Jcs,
    /// The 1.0 reading (as a2a-sdk 1.x signs).
    V10,
}

impl Signer {
    fn new(kid: &str) -> Signer {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = pair.serialize_pem();
        let key = EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
        jwk.common.key_id = Some(kid.into());
        Signer {
            kid: kid.into(),
            key,
            jwk: serde_json::to_value(jwk).unwrap(),
            public_pem: pair.public_key_pem(),
        }
    }

    /// `card` with one signature by this key; `header` adds to (or
    /// overrides) the protected header.
    fn sign(&self, card: &Value, covers: Covers, header: Value) -> Value {
        let mut protected = json!({"alg": "ES256", "kid": self.kid, "typ": "JOSE"});
        for (k, v) in header.as_object().unwrap() {
            protected[k] = v.clone();
        }
        let protected = URL_SAFE_NO_PAD.encode(protected.to_string());
        let input = format!(
            "{protected}.{}",
            URL_SAFE_NO_PAD.encode(payload(card, covers))
        );
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &self.key, Algorithm::ES256).unwrap();
        with_signatures(
            card,
            json!([{"protected": protected, "signature": signature}]),
        )
    }

    /// The inline `keys` line trusting this key.
    fn trusted(&self) -> String {
        format!("keys = [{}]\n", toml_inline(&self.jwk))
    }

    /// The same, the key given as its PEM public key.
    fn trusted_pem(&self) -> String {
        let pem = self.public_pem.trim().replace('\n', "\\n");
        format!(
            "keys = [{{ kid = \"{}\", alg = \"ES256\", pem = \"{pem}\" }}]\n",
            self.kid
        )
    }
}

fn payload(card: &Value, covers: Covers) -> Vec<u8> {
    let mut unsigned = card.clone();
    unsigned.as_object_mut().unwrap().remove("signatures");
    match covers {
        Covers::Jcs => canonical::jcs(&unsigned).unwrap(),
        Covers::V10 => canonical::jcs(&project::v10(&unsigned)).unwrap(),
    }
}

fn with_signatures(card: &Value, signatures: Value) -> Value {
    let mut signed = card.clone();
    signed["signatures"] = signatures;
    signed
}

/// A JSON object of strings as a TOML inline table.
fn toml_inline(object: &Value) -> String {
    let members: Vec<String> = (object.as_object().unwrap().iter())
        .filter(|(_, v)| v.is_string())
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!("{{ {} }}", members.join(", "))
}

/// A mock agent whose card publishes `skill` and is made by `card`.
async fn agent(skill: &str, card: impl FnOnce(Value) -> Value) -> MockAgent {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut plain = default_card(&mock.url());
    plain["skills"][0]["id"] = json!(skill);
    mock.set_card(Some(card(plain)));
    mock
}

/// One `[[upstreams]]` table.
fn upstream(name: &str, mock: &MockAgent, mode: &str, trust: &str) -> String {
    let trust = match trust {
        "" => String::new(),
        t => format!("[upstreams.card_trust]\n{t}"),
    };
    format!(
        "[[upstreams]]\nname = \"{name}\"\nurl = \"{}\"\ncard_signature = \"{mode}\"\n{trust}",
        mock.url()
    )
}

async fn readyz(gw: &TestGateway) -> Value {
    client::get(&format!("{}/readyz", gw.admin_url()), &[])
        .await
        .json()
}

/// The `card_signature` entry of `name` in `/readyz`.
async fn signature_state(gw: &TestGateway, name: &str) -> Value {
    readyz(gw).await["upstreams"][name]["card_signature"].clone()
}

async fn fleet_skills(gw: &TestGateway) -> Vec<String> {
    let card: Value = client::get(
        &format!("http://{}/.well-known/agent-card.json", gw.addr()),
        &[],
    )
    .await
    .json();
    (card["skills"].as_array().into_iter().flatten())
        .map(|s| s["id"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn call(gw: &TestGateway, name: &str) -> client::Reply {
    client::post_json(&format!("{}agents/{name}/", gw.url()), send("1"), &[]).await
}

#[tokio::test]
async fn required_admits_trusted_signers_and_excludes_the_rest() {
    let (trusted, stranger) = (Signer::new("t1"), Signer::new("u1"));
    let good = agent("good", |c| trusted.sign(&c, Covers::Jcs, json!({}))).await;
    let bad = agent("bad", |c| stranger.sign(&c, Covers::Jcs, json!({}))).await;
    let unsigned = agent("unsigned", |c| c).await;
    let off = agent("off", |c| stranger.sign(&c, Covers::Jcs, json!({}))).await;
    // No kid: tried with every trusted key of its alg.
    let nokid = agent("nokid", |c| {
        trusted.sign(&c, Covers::Jcs, json!({"kid": null}))
    })
    .await;
    let text = [
        upstream("good", &good, "required", &trusted.trusted()),
        upstream("nokid", &nokid, "required", &trusted.trusted()),
        upstream("bad", &bad, "required", &trusted.trusted()),
        upstream("unsigned", &unsigned, "verify", &trusted.trusted()),
        upstream("off", &off, "off", ""),
    ]
    .concat();
    let gw = TestGateway::from_toml(&text).await;

    let good_state = signature_state(&gw, "good").await;
    assert_eq!(good_state["state"], "valid", "{good_state}");
    assert_eq!(good_state["kid"], "t1");
    assert_eq!(good_state["covers"], "jcs");
    let bad_state = signature_state(&gw, "bad").await;
    assert_eq!(bad_state["state"], "invalid", "{bad_state}");
    let reason = bad_state["reason"].as_str().unwrap();
    assert!(
        reason.contains("kid \"u1\" is not a trusted key"),
        "{reason}"
    );
    assert_eq!(signature_state(&gw, "unsigned").await["state"], "unsigned");
    assert!(signature_state(&gw, "off").await.is_null());

    // The refused agent's skill is withdrawn; verify and off still publish.
    let mut skills = fleet_skills(&gw).await;
    skills.sort();
    assert_eq!(skills, ["good", "nokid", "off", "unsigned"]);
    let ready = readyz(&gw).await;
    assert_eq!(ready["upstreams"]["bad"]["card"], "missing", "{ready}");

    assert_eq!(call(&gw, "good").await.status, 200);
    let refused = call(&gw, "bad").await;
    assert_eq!(refused.status, 503, "{}", refused.text());
    let body = refused.json();
    assert_eq!(body["error"]["code"], -32057, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("'bad' is not ready"), "{message}");
    assert!(message.contains("not a trusted key"), "{message}");
    assert_eq!(bad.request_count(), 0, "nothing reaches a refused agent");
    assert_eq!(call(&gw, "unsigned").await.status, 200);

    let metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    for line in [
        "a2a_gateway_card_signature_valid{upstream=\"good\"} 1",
        "a2a_gateway_card_signature_valid{upstream=\"bad\"} 0",
        "a2a_gateway_card_signature_checks_total{result=\"unsigned\",upstream=\"unsigned\"} 1",
        "a2a_gateway_card_refresh_total{result=\"refused\",upstream=\"bad\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }

    // A valid card arrives: the agent is back, with its skill.
    bad.set_card(Some(trusted.sign(
        &bad.card().unwrap(),
        Covers::Jcs,
        json!({}),
    )));
    gw.running.refresh_cards().await;
    assert_eq!(signature_state(&gw, "bad").await["state"], "valid");
    assert!(fleet_skills(&gw).await.contains(&"bad".to_string()));
    assert_eq!(call(&gw, "bad").await.status, 200);
}

/// How a test agent's card is made from the plain one.
type MakeCard<'a> = Box<dyn FnOnce(Value) -> Value + 'a>;

/// Each bad signature, on its own agent under `required`: refused, with
/// the reason in `/readyz`, and the agent's skill withdrawn.
#[tokio::test]
async fn bad_signatures_are_refused_each_with_its_reason() {
    let trusted = Signer::new("t1");
    let keys = KeyServer::start(vec![]).await;
    let elsewhere = Signer::new("j1");
    keys.set_keys(vec![elsewhere.jwk.clone()]);
    let jku = format!("{}/jwks", keys.base());
    let public_key_secret = URL_SAFE_NO_PAD.encode(trusted.jwk.to_string());
    let cases: Vec<(&str, MakeCard, &str)> = vec![
        (
            "malformed",
            Box::new(|c| with_signatures(&c, json!([{"protected": "!!", "signature": "x"}]))),
            "malformed: the protected header is not base64url",
        ),
        (
            "unknownkid",
            Box::new(|c| trusted.sign(&c, Covers::Jcs, json!({"kid": "nobody"}))),
            "kid \"nobody\" is not a trusted key",
        ),
        (
            "algnone",
            Box::new(|c| {
                let protected = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"t1"}"#);
                with_signatures(&c, json!([{"protected": protected, "signature": ""}]))
            }),
            "alg \"none\" is never accepted",
        ),
        (
            "hs256",
            Box::new(move |c| {
                let protected = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","kid":"t1"}"#);
                let input = format!(
                    "{protected}.{}",
                    URL_SAFE_NO_PAD.encode(payload(&c, Covers::Jcs))
                );
                let secret = EncodingKey::from_secret(public_key_secret.as_bytes());
                let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &secret, Algorithm::HS256)
                    .unwrap();
                with_signatures(&c, json!([{"protected": protected, "signature": sig}]))
            }),
            "alg \"HS256\" is never accepted",
        ),
        (
            "jkuoff",
            Box::new(|c| elsewhere.sign(&c, Covers::Jcs, json!({"jku": jku}))),
            "is not on this agent's jku_allow, so it was not followed",
        ),
        (
            "tampered",
            Box::new(|c| {
                let mut signed = trusted.sign(&c, Covers::Jcs, json!({}));
                signed["skills"][0]["description"] = json!("does something else");
                signed
            }),
            "does not verify with the trusted key: the card was changed after it was signed",
        ),
    ];
    let mut text = String::new();
    let mut agents = Vec::new();
    let mut expected = Vec::new();
    for (name, card, reason) in cases {
        let mock = agent(name, card).await;
        text.push_str(&upstream(name, &mock, "required", &trusted.trusted()));
        agents.push(mock);
        expected.push((name, reason));
    }
    let gw = TestGateway::from_toml(&text).await;
    for (name, reason) in &expected {
        let state = signature_state(&gw, name).await;
        assert_eq!(state["state"], "invalid", "{name}: {state}");
        let said = state["reason"].as_str().unwrap_or("");
        assert!(said.contains(reason), "{name}: {said}");
        let refused = call(&gw, name).await;
        assert_eq!(refused.status, 503, "{name}: {}", refused.text());
    }
    assert!(fleet_skills(&gw).await.is_empty());
    assert_eq!(keys.hits(), 0, "a jku off the allow-list is never fetched");
    assert!(agents.iter().all(|a| a.request_count() == 0));
}

#[tokio::test]
async fn keys_from_a_jwks_url_follow_an_agents_key_rotation() {
    let (first, second, rogue) = (Signer::new("k1"), Signer::new("k2"), Signer::new("k3"));
    let keys = KeyServer::start(vec![first.jwk.clone()]).await;
    let mock = agent("rotating", |c| first.sign(&c, Covers::V10, json!({}))).await;
    let trust = format!(
        "jwks_url = \"{}/jwks\"\nalgorithms = [\"ES256\"]\n",
        keys.base()
    );
    let gw = TestGateway::from_toml(&upstream("rotating", &mock, "required", &trust)).await;
    let state = signature_state(&gw, "rotating").await;
    assert_eq!(state["state"], "valid", "{state}");
    assert_eq!(
        (&state["kid"], &state["covers"]),
        (&json!("k1"), &json!("a2a-1.0"))
    );

    // The agent publishes its next key, then signs with it: the unknown
    // kid makes the gateway fetch the JWKS again.
    keys.set_keys(vec![first.jwk.clone(), second.jwk.clone()]);
    let unsigned = mock.card().unwrap();
    mock.set_card(Some(second.sign(&unsigned, Covers::V10, json!({}))));
    gw.running.refresh_cards().await;
    let state = signature_state(&gw, "rotating").await;
    assert_eq!(
        (&state["state"], &state["kid"]),
        (&json!("valid"), &json!("k2")),
        "{state}"
    );
    assert_eq!(call(&gw, "rotating").await.status, 200);

    // A key the JWKS does not hold: refused, and the agent leaves the fleet.
    mock.set_card(Some(rogue.sign(&unsigned, Covers::V10, json!({}))));
    tokio::time::sleep(Duration::from_millis(50)).await;
    gw.running.refresh_cards().await;
    let state = signature_state(&gw, "rotating").await;
    assert_eq!(state["state"], "invalid", "{state}");
    assert!(fleet_skills(&gw).await.is_empty());
    assert_eq!(call(&gw, "rotating").await.status, 503);
}

#[tokio::test]
async fn an_allowed_jku_is_followed_and_verify_uses_a_bad_card_anyway() {
    let signer = Signer::new("j1");
    let keys = KeyServer::start(vec![signer.jwk.clone()]).await;
    let jku = format!("{}/jwks", keys.base());
    let followed = agent("followed", |c| {
        signer.sign(&c, Covers::Jcs, json!({"jku": jku}))
    })
    .await;
    let tampered = agent("tampered", |c| {
        let mut signed = signer.sign(&c, Covers::Jcs, json!({"jku": jku}));
        signed["name"] = json!("Someone Else");
        signed
    })
    .await;
    let trust = format!("jku_allow = [\"{jku}\"]\n");
    let text = [
        upstream("followed", &followed, "required", &trust),
        upstream("tampered", &tampered, "verify", &trust),
    ]
    .concat();
    let gw = TestGateway::from_toml(&text).await;
    assert_eq!(signature_state(&gw, "followed").await["state"], "valid");
    assert!(keys.hits() >= 1, "the allowed jku was fetched");
    let state = signature_state(&gw, "tampered").await;
    assert_eq!(
        (&state["state"], &state["mode"]),
        (&json!("invalid"), &json!("verify"))
    );
    let mut skills = fleet_skills(&gw).await;
    skills.sort();
    assert_eq!(
        skills,
        ["followed", "tampered"],
        "verify uses the card either way"
    );
    assert_eq!(call(&gw, "tampered").await.status, 200);
}

/// A signature over the 1.0 reading vouches only for what that reading
/// keeps: members it drops are not published.
#[tokio::test]
async fn a_projection_signature_is_used_only_as_far_as_it_covers() {
    let signer = Signer::new("t1");
    let mock = agent("covered", |c| {
        let mut signed = signer.sign(&c, Covers::V10, json!({}));
        signed["x-injected"] = json!("not signed");
        signed["skills"][0]["x-extra"] = json!("not signed either");
        signed
    })
    .await;
    let gw =
        TestGateway::from_toml(&upstream("covered", &mock, "required", &signer.trusted())).await;
    let state = signature_state(&gw, "covered").await;
    assert_eq!(
        (&state["state"], &state["covers"]),
        (&json!("valid"), &json!("a2a-1.0")),
        "{state}"
    );
    let card: Value = client::get(
        &format!(
            "http://{}/agents/covered/.well-known/agent-card.json",
            gw.addr()
        ),
        &[],
    )
    .await
    .json();
    assert_eq!(card["skills"][0]["id"], "covered", "{card}");
    assert!(card.get("x-injected").is_none(), "{card}");
    assert!(card["skills"][0].get("x-extra").is_none(), "{card}");
}

#[test]
fn trust_settings_are_checked_at_load() {
    let base = "[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n";
    for (extra, field, says) in [
        ("card_signature = \"maybe\"\n", "upstreams[0].card_signature", "\"off\", \"verify\" or \"required\""),
        ("card_signature = \"required\"\n", "upstreams[0].card_signature", "needs [upstreams.card_trust]"),
        ("card_signature = \"required\"\n[upstreams.card_trust]\nalgorithms = [\"ES256\"]\n", "upstreams[0].card_trust", "names no trusted key"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\njku_allow = [\"http://127.0.0.1:9/k\"]\nalgorithms = [\"none\"]\n", "upstreams[0].card_trust.algorithms[0]", "never allowed"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\njku_allow = [\"http://127.0.0.1:9/k\"]\nalgorithms = [\"HS256\"]\n", "upstreams[0].card_trust.algorithms[0]", "HMAC"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\njwks_url = \"ftp://x/k\"\n", "upstreams[0].card_trust.jwks_url", "http"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\njwks_file = \"/nonexistent/k.json\"\n", "upstreams[0].card_trust.jwks_file", "cannot read"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\nkeys = [{ kty = \"EC\", crv = \"P-256\", x = \"a\", y = \"b\", d = \"c\" }]\n", "upstreams[0].card_trust.keys[0]", "private"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\nkeys = [{ kty = \"oct\", k = \"c2VjcmV0\" }]\n", "upstreams[0].card_trust.keys[0]", "secret"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\nkeys = [{ kid = \"k\", alg = \"ES256\", pem = \"not a key\" }]\n", "upstreams[0].card_trust.keys[0]", "not a PEM public key for ES256"),
        ("card_signature = \"verify\"\n[upstreams.card_trust]\nkeys = [{ alg = \"ES256\", pem = \"x\" }]\n", "upstreams[0].card_trust.keys[0]", "needs its kid"),
    ] {
        let text = format!("{base}{extra}");
        let errors = a2a_gateway::config::load_str(&text).unwrap_err().to_string();
        assert!(errors.contains(field) && errors.contains(says), "{extra}: {errors}");
    }
}

/// A card nested deeper than a card can be read (128 levels) is refused
/// with the reason, and the agent is not ready.
#[tokio::test]
async fn a_card_nested_too_deep_is_refused() {
    let signer = Signer::new("t1");
    let mock = agent("deep", |mut c| {
        let mut deep = json!("bottom");
        for _ in 0..200 {
            deep = json!([deep]);
        }
        c["capabilities"]["extensions"] = json!([{"uri": "urn:x", "params": {"deep": deep}}]);
        c
    })
    .await;
    let gw = TestGateway::from_toml(&upstream("deep", &mock, "required", &signer.trusted())).await;
    let ready = readyz(&gw).await;
    let entry = &ready["upstreams"]["deep"];
    assert_eq!(entry["card"], "missing", "{ready}");
    let error = entry["last_error"].as_str().unwrap_or("");
    assert!(
        error.contains("is not JSON: recursion limit exceeded"),
        "{error}"
    );
    assert_eq!(call(&gw, "deep").await.status, 503);
}

/// A reload that changes an agent's trust applies at the next refresh: the
/// card is checked again under the new keys.
#[tokio::test]
async fn a_reload_with_other_trust_checks_the_card_again() {
    let (first, second) = (Signer::new("a1"), Signer::new("b1"));
    let mock = agent("reloaded", |c| first.sign(&c, Covers::Jcs, json!({}))).await;
    let gw =
        // Trusted by its PEM public key, this time.
        TestGateway::from_toml(&upstream("reloaded", &mock, "required", &first.trusted_pem())).await;
    assert_eq!(signature_state(&gw, "reloaded").await["state"], "valid");
    let text = upstream("reloaded", &mock, "required", &second.trusted());
    let overrides = a2a_gateway::config::Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    gw.running
        .reload(a2a_gateway::config::load_with(Some(&text), &overrides))
        .expect("reload");
    gw.running.refresh_cards().await;
    let state = signature_state(&gw, "reloaded").await;
    assert_eq!(state["state"], "invalid", "{state}");
    assert!(fleet_skills(&gw).await.is_empty());
}

/// Keys that cannot be fetched: a refused connection is a clear reason,
/// and a URL that never answers is bounded by the card refresh timeout.
#[tokio::test]
async fn keys_that_cannot_be_fetched_refuse_the_card_in_bounded_time() {
    let signer = Signer::new("k1");
    let closed = crate::support::closed_port::ClosedPort::new();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = agent("refused", |c| signer.sign(&c, Covers::Jcs, json!({}))).await;
    let hanging = agent("hanging", |c| signer.sign(&c, Covers::Jcs, json!({}))).await;
    let text = format!(
        "[card_refresh]\ntimeout = \"1s\"\n{}{}",
        upstream(
            "refused",
            &refused,
            "required",
            &format!("jwks_url = \"http://{}/jwks\"\n", closed.addr())
        ),
        upstream(
            "hanging",
            &hanging,
            "required",
            &format!(
                "jwks_url = \"http://{}/jwks\"\n",
                silent.local_addr().unwrap()
            )
        ),
    );
    let started = std::time::Instant::now();
    let gw = TestGateway::from_toml(&text).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let state = signature_state(&gw, "refused").await;
    let reason = state["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("cannot be fetched: signing keys are unavailable"),
        "{state}"
    );
    let state = signature_state(&gw, "hanging").await;
    let reason = state["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("within the card refresh timeout"),
        "{state}"
    );
    assert!(fleet_skills(&gw).await.is_empty());
    drop(silent);
}

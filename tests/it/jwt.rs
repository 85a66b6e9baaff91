//! Bearer JWT validation: the attack table, static keys of every family,
//! JWKS caching / refetch / rotation against a local key server, and OIDC
//! discovery.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_gateway::auth::jwt::{settings, JwtError, JwtSection, JwtValidator};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::net::TcpListener;

// Test-only keys, generated once with `openssl genpkey` (RSA1 is shared:
// tests/support/keys.rs).
use crate::support::keys::{RSA_PRIVATE as RSA1_PRIVATE, RSA_PUBLIC as RSA1_PUBLIC};
const RSA2_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCw/KaJuiBg7ZYK
f3X1A7+0hgGSJb6u3v2dKUu8WJX/AJANzoBaHkvKAf5oRcOtTeoZFhgR2O6dZ994
jS1+tF0uAKprQhD+yunXLj8/YR1Q1KRVve7/msR4jHrzPO83TzK/iJ1OzP7yj2CR
BlgUaV5Xf80dScTbKpH8tveWeHG4lWJek9U2LiiAVaOa2wuWYXYtNf8co7OiB0/Z
SYa4ojRRSF6ySW3OFQbd9ESkSkM4dzorDmOc8d/iykBTZd21f4IB5OfxdzBTHwo/
cpEZIaAThgNxM69CMm9RaroT8rDYtzis9U0wLHaTTUNuqcLueL3tLQoi31mT0pCN
ScZYVbUrAgMBAAECggEABIT3FbZAhGkctzjpALAvUYNIf/xhwaJlFIHM8srKTcAs
bYXT5jk20zo4zl3VsNO4Ahr701zYPwG7hZ8JRd6CMJ4IvANsXq08ymdeaxZmQr2j
UqMueq1vjep8a0CnlSB7GcP5zFzUt8nse9ePITpNk+tqB/Dty3DrWGotqVR7Bu0S
sTTS4lPoqJ6LsQ+UM7Ou+fEYZoFI7OfjT2xtZoBlFzeoRcWtzfMTsrYgnQgq+brt
JaZYxNGl7Ji3/WDHKUhAL3tCToif8O8fbkbISKzJQuLgPsz0dn3x3QVE9ZkaaWfX
rXm19m6iZnnwbfhfFNu54FKNhIUg7cF+eoTp9CGtJQKBgQDquZukfE1FOPIiKy24
oO9C1Kb3gNOpwoABj8otyTy7B8B1mtl3ztu0VraWwcXZnGCahGGWi9a+xk7jRBMI
jU7dpHhIcwKGQs1JWkvLlg4a6yomqsaUipLAlzxtj1E5DqV+p6znuvKt7Zj/Obln
x+ir5R3mXxR8HRfTf4xZMyBydQKBgQDBB1Qc+CuKZbj4R6Id6SY46QfTbfgNNZqz
RyqgnSDZ8ukMvrh1U8JwnqwnA9KBB7hCGLeZG3HAUYqlyJvymFUhiaRWZ5jFDfBB
BneILSvaQrnEgHyq02cHOjLkImmhoETOi/4Pnki5aNh1eleuaMDBowgNCYaSENyC
dorzEOtVHwKBgBxGxdg33TsklA7HstdWE9yyL3cLfvQpaTBG+S0w2+8QDQBd6irD
sbX06EQbDdGcRAr5PaRcLj+HNkOslLpoA4Mx6AeaS0iPTZmzlgPtjL9zav2Dfy6v
zuQClBYCuN8tw4QRgQPdgpSvVcoRUyOMcpwamtKAy7/z5UXmTKsGPLdtAoGBAImp
g1hhuROrtj4DQGAajfLaZoVoERbCmwCuiX0gcnRdY81+Gyk5whr1Xos4k6EH82XY
IOAljXt96+aN6oIaF+SiODyTB4XJigWl6guJQ5QWMEwu4jomKH0kCXVgAXuORGQV
vOxAk1b/qhgmV3AALzAp6Cz8FSgItGqqxi/RajQ7AoGAcekRL7qXF29jwF5HTbjR
3i+Gm5cov+0eGXq7qq5uviG/0+nI5onQcJtENaVD0VKpoeh0AZFTaJZ2BkbdqlQe
oF5OTPwQ6tvTNl6c5RLuHhF7yCNefuZl57bpbsX79Wmpjq/HFGPHi+WhV1E7E2YY
+A2CWvd8U/PbwZcS4tva460=
-----END PRIVATE KEY-----
";
const EC_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgH3i+g6jWGO0Fc4zx
+ATSmZaPZvMBp2dkfm8Mth/TWV+hRANCAAQXf/Zn0scYQRZj0s/ZiLnUMZ93jVCP
uuaeluGGUOfUvhgEZifHzQcyPjLI8fgPTkMCxhrIgHA1PGoCctfHqqul
-----END PRIVATE KEY-----
";
const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEF3/2Z9LHGEEWY9LP2Yi51DGfd41Q
j7rmnpbhhlDn1L4YBGYnx80HMj4yyPH4D05DAsYayIBwNTxqAnLXx6qrpQ==
-----END PUBLIC KEY-----
";
const ED_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIAZMmFETxQEhfcQyR592N2BKPP/5MCpZtXrTarej7gin
-----END PRIVATE KEY-----
";
const ED_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAH47GqImvqdtBK3s/O/nPwB7BdcynudMZA8bHRQM5PTs=
-----END PUBLIC KEY-----
";
const HS_SECRET: &str = "an HMAC secret of at least 32 bytes, for tests";
const ISS: &str = "https://issuer.example";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims() -> Value {
    json!({ "sub": "alice", "iss": ISS, "aud": "gateway", "exp": now() + 300, "iat": now() })
}

fn with(mut base: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base
}

fn rsa1() -> EncodingKey {
    EncodingKey::from_rsa_pem(RSA1_PRIVATE.as_bytes()).unwrap()
}
fn rsa2() -> EncodingKey {
    EncodingKey::from_rsa_pem(RSA2_PRIVATE.as_bytes()).unwrap()
}

fn sign(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, key).unwrap()
}

fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn validator(toml_text: &str) -> JwtValidator {
    let section: JwtSection = toml::from_str(toml_text).unwrap();
    JwtValidator::new(&settings(&section).unwrap())
}

/// RS256 and HS256 allowed, a key for each, issuer and audience required.
fn attack_validator() -> JwtValidator {
    validator(&format!(
        r#"
        algorithms = ["RS256", "HS256"]
        issuer = "{ISS}"
        audience = ["gateway", "other"]
        leeway = "30s"
        keys = [
          {{ kid = "rsa", algorithm = "RS256", pem = '''{RSA1_PUBLIC}''' }},
          {{ kid = "hs", algorithm = "HS256", secret = "{HS_SECRET}" }},
        ]
        "#
    ))
}

fn rs256(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa"), &rsa1(), claims)
}

// ---------------------------------------------------------------- attacks

#[tokio::test]
async fn valid_rs256_token_is_accepted() {
    let token = attack_validator()
        .validate(&rs256(&claims()))
        .await
        .unwrap();
    assert_eq!(token.subject, "alice");
    assert_eq!(token.claims["iss"], ISS);
}

#[tokio::test]
async fn alg_none_is_refused() {
    let header = b64url(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = b64url(claims().to_string().as_bytes());
    let unsigned = format!("{header}.{payload}.");
    let v = attack_validator();
    assert_eq!(
        v.validate(&unsigned).await,
        Err(JwtError::AlgorithmNotAllowed("none".into()))
    );
    let header = b64url(br#"{"alg":"None","kid":"rsa"}"#);
    assert_eq!(
        v.validate(&format!("{header}.{payload}.")).await,
        Err(JwtError::AlgorithmNotAllowed("None".into()))
    );
}

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    let forged_key = EncodingKey::from_secret(RSA1_PUBLIC.as_bytes());
    let v = attack_validator();
    // Naming the RSA key: that key verifies RS256 only.
    let forged = sign(Algorithm::HS256, Some("rsa"), &forged_key, &claims());
    assert_eq!(v.validate(&forged).await, Err(JwtError::UnknownKey));
    // No kid: only the HS256 key is tried, and it does not verify.
    let forged = sign(Algorithm::HS256, None, &forged_key, &claims());
    assert_eq!(v.validate(&forged).await, Err(JwtError::BadSignature));
    // An RS256-only allow-list refuses it before any key is looked at.
    let rs_only = validator(&format!(
        r#"
        algorithms = ["RS256"]
        keys = [{{ kid = "rsa", algorithm = "RS256", pem = '''{RSA1_PUBLIC}''' }}]
        "#
    ));
    assert_eq!(
        rs_only.validate(&forged).await,
        Err(JwtError::AlgorithmNotAllowed("HS256".into()))
    );
}

#[tokio::test]
async fn expired_token_is_refused() {
    let token = rs256(&with(claims(), json!({ "exp": now() - 120 })));
    assert_eq!(
        attack_validator().validate(&token).await,
        Err(JwtError::Expired)
    );
}

#[tokio::test]
async fn token_without_exp_is_refused() {
    let token = rs256(&with(claims(), json!({ "exp": null })));
    assert_eq!(
        attack_validator().validate(&token).await,
        Err(JwtError::Malformed)
    );
}

#[tokio::test]
async fn not_yet_valid_token_is_refused() {
    let token = rs256(&with(claims(), json!({ "nbf": now() + 120 })));
    assert_eq!(
        attack_validator().validate(&token).await,
        Err(JwtError::NotYetValid)
    );
}

#[tokio::test]
async fn leeway_is_honoured() {
    let v = attack_validator();
    let token = rs256(&with(claims(), json!({ "exp": now() - 10 })));
    assert!(v.validate(&token).await.is_ok());
    let token = rs256(&with(claims(), json!({ "nbf": now() + 10 })));
    assert!(v.validate(&token).await.is_ok());
}

#[tokio::test]
async fn wrong_or_missing_issuer_is_refused() {
    let v = attack_validator();
    let token = rs256(&with(claims(), json!({ "iss": "https://evil.example" })));
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongIssuer));
    let token = rs256(&with(claims(), json!({ "iss": null })));
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongIssuer));
    let token = rs256(&with(
        claims(),
        json!({ "iss": [ISS, "https://evil.example"] }),
    ));
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongIssuer));
}

#[tokio::test]
async fn wrong_or_missing_audience_is_refused() {
    let v = attack_validator();
    let token = rs256(&with(claims(), json!({ "aud": "somebody-else" })));
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongAudience));
    let token = rs256(&with(claims(), json!({ "aud": null })));
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongAudience));
    // Any one listed value is enough.
    let token = rs256(&with(claims(), json!({ "aud": ["x", "other"] })));
    assert!(v.validate(&token).await.is_ok());
}

#[tokio::test]
async fn tampered_payload_is_refused() {
    let token = rs256(&claims());
    let parts: Vec<&str> = token.split('.').collect();
    let evil = with(claims(), json!({ "sub": "mallory" }));
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64url(evil.to_string().as_bytes()),
        parts[2]
    );
    assert_eq!(
        attack_validator().validate(&tampered).await,
        Err(JwtError::BadSignature)
    );
}

#[tokio::test]
async fn tampered_signature_is_refused() {
    let token = rs256(&claims());
    let (message, signature) = token.rsplit_once('.').unwrap();
    let mut sig: Vec<u8> = signature.bytes().collect();
    sig[10] = if sig[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{message}.{}", String::from_utf8(sig).unwrap());
    assert_eq!(
        attack_validator().validate(&tampered).await,
        Err(JwtError::BadSignature)
    );
}

#[tokio::test]
async fn missing_subject_is_refused() {
    let v = attack_validator();
    let token = rs256(&with(claims(), json!({ "sub": null })));
    assert_eq!(v.validate(&token).await, Err(JwtError::NoSubject));
    let token = rs256(&with(claims(), json!({ "sub": "" })));
    assert_eq!(v.validate(&token).await, Err(JwtError::NoSubject));
}

#[tokio::test]
async fn malformed_tokens_are_refused() {
    let v = attack_validator();
    for token in ["", "abc", "a.b", "a.b.c.d", "!!!.e30.x", "e30.e30.x"] {
        assert_eq!(v.validate(token).await, Err(JwtError::Malformed), "{token}");
    }
}

#[tokio::test]
async fn unknown_static_kid_is_refused() {
    let token = sign(Algorithm::RS256, Some("nope"), &rsa1(), &claims());
    assert_eq!(
        attack_validator().validate(&token).await,
        Err(JwtError::UnknownKey)
    );
}

// ------------------------------------------------------------ static keys

#[tokio::test]
async fn static_keys_of_every_family_are_accepted() {
    let v = validator(&format!(
        r#"
        algorithms = ["HS256", "RS256", "ES256", "EdDSA"]
        keys = [
          {{ kid = "h", algorithm = "HS256", secret = "{HS_SECRET}" }},
          {{ kid = "r", algorithm = "RS256", pem = '''{RSA1_PUBLIC}''' }},
          {{ kid = "e", algorithm = "ES256", pem = '''{EC_PUBLIC}''' }},
          {{ algorithm = "EdDSA", pem = '''{ED_PUBLIC}''' }},
        ]
        "#
    ));
    let c = claims();
    let hs = EncodingKey::from_secret(HS_SECRET.as_bytes());
    let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let ed = EncodingKey::from_ed_pem(ED_PRIVATE.as_bytes()).unwrap();
    let tokens = [
        sign(Algorithm::HS256, Some("h"), &hs, &c),
        sign(Algorithm::HS256, None, &hs, &c),
        sign(Algorithm::RS256, Some("r"), &rsa1(), &c),
        sign(Algorithm::ES256, Some("e"), &ec, &c),
        // The kid-less EdDSA key matches any EdDSA token.
        sign(Algorithm::EdDSA, None, &ed, &c),
        sign(Algorithm::EdDSA, Some("whatever"), &ed, &c),
    ];
    for token in tokens {
        assert_eq!(v.validate(&token).await.unwrap().subject, "alice");
    }
    // A signature by another RSA key under the right kid does not verify.
    let token = sign(Algorithm::RS256, Some("r"), &rsa2(), &c);
    assert_eq!(v.validate(&token).await, Err(JwtError::BadSignature));
}

#[tokio::test]
async fn scopes_from_a_string_or_an_array() {
    let hs = EncodingKey::from_secret(HS_SECRET.as_bytes());
    let config = |claim: &str| {
        validator(&format!(
            r#"
            algorithms = ["HS256"]
            scope_claim = "{claim}"
            keys = [{{ algorithm = "HS256", secret = "{HS_SECRET}" }}]
            "#
        ))
    };
    let token = sign(
        Algorithm::HS256,
        None,
        &hs,
        &with(claims(), json!({ "scope": "read  write\tadmin" })),
    );
    let valid = config("scope").validate(&token).await.unwrap();
    assert_eq!(valid.scopes, ["read", "write", "admin"]);

    let token = sign(
        Algorithm::HS256,
        None,
        &hs,
        &with(claims(), json!({ "scp": ["tasks.read", "tasks.write"] })),
    );
    let valid = config("scp").validate(&token).await.unwrap();
    assert_eq!(valid.scopes, ["tasks.read", "tasks.write"]);
    // Absent claim: no scopes.
    assert!(config("scope")
        .validate(&token)
        .await
        .unwrap()
        .scopes
        .is_empty());
    // An array under "scope" is understood too.
    let token = sign(
        Algorithm::HS256,
        None,
        &hs,
        &with(claims(), json!({ "scope": ["a", "b"] })),
    );
    assert_eq!(
        config("scope").validate(&token).await.unwrap().scopes,
        ["a", "b"]
    );
}

// ------------------------------------------------------ the key server

use crate::support::key_server::KeyServer;

/// The public JWK of a private key, with kid and alg.
fn jwk(key: &EncodingKey, alg: Algorithm, kid: &str) -> Value {
    let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
    jwk.common.key_id = Some(kid.into());
    let mut value = serde_json::to_value(jwk).unwrap();
    value["use"] = json!("sig");
    value
}

fn jwks_validator(server: &KeyServer, ttl: &str, min_refetch: &str) -> JwtValidator {
    validator(&format!(
        r#"
        algorithms = ["RS256", "ES256"]
        jwks_url = "{}/jwks"
        jwks_cache_ttl = "{ttl}"
        jwks_min_refetch_interval = "{min_refetch}"
        "#,
        server.base()
    ))
}

// ------------------------------------------------- verified-token cache

#[tokio::test]
async fn a_token_sent_again_is_not_verified_again() {
    let v = attack_validator();
    let token = rs256(&claims());
    let first = v.validate(&token).await.expect("valid");
    let again = v.validate(&token).await.expect("still valid");
    assert_eq!(first, again);
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "the cache answers with the token it keeps, not a copy"
    );
    assert_eq!(
        v.signature_checks(),
        1,
        "the second call was served from the cache"
    );
    let other = rs256(&with(claims(), json!({ "sub": "bob" })));
    assert_eq!(v.validate(&other).await.expect("valid").subject, "bob");
    assert_eq!(v.signature_checks(), 2, "another token is checked");
}

#[tokio::test]
async fn a_remembered_token_still_expires() {
    let v = validator(&format!(
        r#"
        algorithms = ["RS256"]
        issuer = "{ISS}"
        leeway = "0s"
        keys = [ {{ kid = "rsa", algorithm = "RS256", pem = '''{RSA1_PUBLIC}''' }} ]
        "#
    ));
    let token = rs256(&with(claims(), json!({ "exp": now() + 1 })));
    assert!(v.validate(&token).await.is_ok());
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(v.validate(&token).await, Err(JwtError::Expired));
    assert_eq!(v.signature_checks(), 1, "refused by the cached expiry");
}

#[tokio::test]
async fn a_failed_token_is_checked_every_time() {
    let v = attack_validator();
    let token = rs256(&with(claims(), json!({ "aud": "someone-else" })));
    for _ in 0..2 {
        assert_eq!(v.validate(&token).await, Err(JwtError::WrongAudience));
    }
    assert_eq!(v.signature_checks(), 2);
}

// ------------------------------------------------------------------ JWKS

#[tokio::test]
async fn unknown_kid_refetches_once_even_under_concurrency() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    let v = Arc::new(jwks_validator(&server, "1h", "60s"));
    let known = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    assert!(v.validate(&known).await.is_ok());
    assert_eq!(
        server.hits(),
        1,
        "the first fetch (background or lazy) is shared"
    );
    // Cached: no further fetch.
    assert!(v.validate(&known).await.is_ok());
    assert_eq!(server.hits(), 1);

    let unknown = sign(Algorithm::RS256, Some("x"), &rsa2(), &claims());
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (v, token) = (v.clone(), unknown.clone());
            tokio::spawn(async move { v.validate(&token).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), Err(JwtError::UnknownKey));
    }
    assert_eq!(server.hits(), 2, "ten requests, one refetch");

    // Another unknown kid within the minimum refetch interval: no fetch.
    let other = sign(Algorithm::RS256, Some("y"), &rsa2(), &claims());
    assert_eq!(v.validate(&other).await, Err(JwtError::UnknownKey));
    assert_eq!(server.hits(), 2);
    // Known keys still work meanwhile.
    assert!(v.validate(&known).await.is_ok());
}

#[tokio::test]
async fn rotation_new_key_accepted_after_refetch_old_refused() {
    let a = jwk(&rsa1(), Algorithm::RS256, "a");
    let b = jwk(&rsa2(), Algorithm::RS256, "b");
    let server = KeyServer::start(vec![a.clone()]).await;
    let v = jwks_validator(&server, "1h", "0s");
    let token_a = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    let token_b = sign(Algorithm::RS256, Some("b"), &rsa2(), &claims());
    assert!(v.validate(&token_a).await.is_ok());
    let before = server.hits();

    // The IdP adds key b: a token with kid b triggers a refetch and passes.
    server.set_keys(vec![a, b.clone()]);
    assert_eq!(v.validate(&token_b).await.unwrap().subject, "alice");
    assert_eq!(server.hits(), before + 1);

    // The IdP drops key a; the next refetch (here: for an unknown kid)
    // forgets it.
    server.set_keys(vec![b]);
    let token_c = sign(Algorithm::RS256, Some("c"), &rsa2(), &claims());
    assert_eq!(v.validate(&token_c).await, Err(JwtError::UnknownKey));
    assert_eq!(v.validate(&token_a).await, Err(JwtError::UnknownKey));
    assert!(v.validate(&token_b).await.is_ok());
}

// Paused time: the key cache's clock is tokio's.
#[tokio::test(start_paused = true)]
async fn removed_key_is_refused_once_the_cache_expires() {
    let server = KeyServer::start(vec![
        jwk(&rsa1(), Algorithm::RS256, "a"),
        jwk(&rsa2(), Algorithm::RS256, "b"),
    ])
    .await;
    let v = jwks_validator(&server, "1s", "1h");
    let token_a = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    assert!(v.validate(&token_a).await.is_ok());
    let before = server.hits();
    server.set_keys(vec![jwk(&rsa2(), Algorithm::RS256, "b")]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(v.validate(&token_a).await, Err(JwtError::UnknownKey));
    assert_eq!(
        server.hits(),
        before + 1,
        "one fetch on expiry, no extra refetch"
    );
}

#[tokio::test]
async fn a_remembered_token_fetches_nothing_while_the_keys_are_fresh() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    let v = jwks_validator(&server, "1h", "0s");
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    assert_eq!(v.validate(&token).await.expect("valid").subject, "alice");
    let fetched = server.hits();
    for _ in 0..5 {
        assert_eq!(v.validate(&token).await.expect("valid").subject, "alice");
    }
    assert_eq!(server.hits(), fetched, "no fetch for a remembered token");
    assert_eq!(v.signature_checks(), 1);
    // A token with a kid the snapshot lacks still asks for the keys again.
    let other = sign(Algorithm::RS256, Some("z"), &rsa1(), &claims());
    assert_eq!(v.validate(&other).await, Err(JwtError::UnknownKey));
    assert_eq!(server.hits(), fetched + 1);
}

// Paused time: the key cache's clock is tokio's.
#[tokio::test(start_paused = true)]
async fn a_refreshed_jwks_has_remembered_tokens_verified_again() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    let v = jwks_validator(&server, "1s", "1h");
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    assert!(v.validate(&token).await.is_ok());
    assert!(v.validate(&token).await.is_ok());
    assert_eq!(v.signature_checks(), 1);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(v.validate(&token).await.is_ok());
    assert_eq!(
        v.signature_checks(),
        2,
        "checked against the keys published now"
    );
}

#[tokio::test]
async fn jwks_keys_honour_alg_and_use() {
    let mut enc = jwk(&rsa1(), Algorithm::RS256, "enc");
    enc["use"] = json!("enc");
    let rs384 = jwk(&rsa1(), Algorithm::RS384, "rs384");
    let mut no_alg = jwk(&rsa2(), Algorithm::RS256, "no-alg");
    no_alg.as_object_mut().unwrap().remove("alg");
    let oct = json!({ "kty": "oct", "kid": "oct", "alg": "HS256",
                      "k": b64url(HS_SECRET.as_bytes()) });
    let server = KeyServer::start(vec![enc, rs384, no_alg, oct]).await;
    let v = validator(&format!(
        r#"
        algorithms = ["RS256", "RS384", "HS256"]
        jwks_url = "{}/jwks"
        jwks_min_refetch_interval = "1h"
        "#,
        server.base()
    ));
    let c = claims();
    // An encryption key never verifies.
    let token = sign(Algorithm::RS256, Some("enc"), &rsa1(), &c);
    assert_eq!(v.validate(&token).await, Err(JwtError::UnknownKey));
    // A key published for RS384 does not verify RS256.
    let token = sign(Algorithm::RS256, Some("rs384"), &rsa1(), &c);
    assert_eq!(v.validate(&token).await, Err(JwtError::UnknownKey));
    let token = sign(Algorithm::RS384, Some("rs384"), &rsa1(), &c);
    assert!(v.validate(&token).await.is_ok());
    // Without alg, any RSA algorithm of the allow-list.
    let token = sign(Algorithm::RS384, Some("no-alg"), &rsa2(), &c);
    assert!(v.validate(&token).await.is_ok());
    // A symmetric key published in a JWKS is ignored.
    let hs = EncodingKey::from_secret(HS_SECRET.as_bytes());
    let token = sign(Algorithm::HS256, Some("oct"), &hs, &c);
    assert_eq!(v.validate(&token).await, Err(JwtError::UnknownKey));
}

// Paused time: the key cache's clock is tokio's.
#[tokio::test(start_paused = true)]
async fn unreachable_jwks_means_keys_unavailable() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    server.status.store(503, Ordering::SeqCst);
    let v = jwks_validator(&server, "1h", "1s");
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    match v.validate(&token).await {
        Err(JwtError::KeysUnavailable(why)) => {
            assert!(!why.contains("127.0.0.1"), "no URL in the message: {why}");
        }
        other => panic!("expected KeysUnavailable, got {other:?}"),
    }
    // The endpoint recovers: after the failure back-off, keys are fetched.
    server.status.store(200, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(v.validate(&token).await.is_ok());

    // Nothing listening at all.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let v = validator(&format!(
        r#"
        algorithms = ["RS256"]
        jwks_url = "http://127.0.0.1:{port}/jwks"
        "#
    ));
    assert!(matches!(
        v.validate(&token).await,
        Err(JwtError::KeysUnavailable(_))
    ));
}

// ------------------------------------------------------------------ OIDC

#[tokio::test]
async fn oidc_discovery_finds_keys_and_requires_the_issuer() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    let v = validator(&format!(
        r#"
        algorithms = ["RS256"]
        oidc_issuer = "{}/"
        audience = ["gateway"]
        "#,
        server.base()
    ));
    let good = with(claims(), json!({ "iss": server.base() }));
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &good);
    assert_eq!(v.validate(&token).await.unwrap().subject, "alice");
    assert_eq!(server.discovery_hits.load(Ordering::SeqCst), 1);
    assert_eq!(server.hits(), 1);

    // The discovered issuer is required.
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongIssuer));
    let no_iss = with(claims(), json!({ "iss": null }));
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &no_iss);
    assert_eq!(v.validate(&token).await, Err(JwtError::WrongIssuer));
}

#[tokio::test]
async fn oidc_discovery_naming_another_issuer_is_refused() {
    let server = KeyServer::start(vec![jwk(&rsa1(), Algorithm::RS256, "a")]).await;
    // Configured as localhost; the document says 127.0.0.1.
    let v = validator(&format!(
        r#"
        algorithms = ["RS256"]
        oidc_issuer = "http://localhost:{}"
        "#,
        server.addr.port()
    ));
    let token = sign(Algorithm::RS256, Some("a"), &rsa1(), &claims());
    match v.validate(&token).await {
        Err(JwtError::KeysUnavailable(why)) => assert!(why.contains("another issuer"), "{why}"),
        other => panic!("expected KeysUnavailable, got {other:?}"),
    }
    assert_eq!(
        server.hits(),
        0,
        "no JWKS fetched from an unverified document"
    );
}

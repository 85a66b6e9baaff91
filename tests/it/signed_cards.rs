//! Signed Agent Cards, through a real gateway on loopback: the keys of
//! `[card.signing]` published as a JWKS on the public listener (cache
//! headers, 304, a reload that swaps the keys), a 404 when cards are not
//! signed, and keys that cannot sign refused by `check` and `run`.

use std::time::Duration;

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::keys::RSA_PRIVATE;
use crate::support::mock_agent::{MockAgent, Mode};
use a2a_gateway::config::{self, Overrides};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");

/// A file in the temp folder, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("a2a-gw-it-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn ec_pem() -> String {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .unwrap()
        .serialize_pem()
}

/// `[card.signing]` with one ES256 key (`kid`) from `file`, and the RSA
/// test key as `rsa-old`.
fn signing(kid: &str, file: &str, rsa: &str) -> String {
    format!(
        "[card.signing]\nactive = \"{kid}\"\n[[card.signing.keys]]\nkid = \"{kid}\"\nalg = \"ES256\"\nfile = \"{file}\"\n[[card.signing.keys]]\nkid = \"rsa-old\"\nalg = \"RS256\"\nfile = \"{rsa}\"\n"
    )
}

async fn jwks(gw: &TestGateway) -> client::Reply {
    client::get(&format!("http://{}/.well-known/jwks.json", gw.addr()), &[]).await
}

fn kids(reply: &client::Reply) -> Vec<String> {
    let doc: Value = reply.json();
    doc["keys"]
        .as_array()
        .unwrap_or_else(|| panic!("a JWKS: {doc}"))
        .iter()
        .map(|k| {
            assert!(
                k.get("d").is_none() && k.get("p").is_none(),
                "public only: {k}"
            );
            k["kid"].as_str().unwrap().to_string()
        })
        .collect()
}

#[tokio::test]
async fn the_jwks_is_served_with_cache_headers_and_swapped_by_a_reload() {
    let mock = MockAgent::start(Mode::Normal).await;
    let (first, rsa) = (
        TempFile::new("first.pem", &ec_pem()),
        TempFile::new("rsa.pem", RSA_PRIVATE),
    );
    let upstream = format!("[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n", mock.url());
    let text = format!("{}{upstream}", signing("gw-1", first.path(), rsa.path()));
    let gw = TestGateway::from_toml(&text).await;
    let reply = jwks(&gw).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(kids(&reply), ["gw-1", "rsa-old"]);
    assert!(reply
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
    assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    let etag = reply.header("etag").expect("an ETag").to_string();
    let again = client::get(
        &format!("http://{}/.well-known/jwks.json", gw.addr()),
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(again.status, 304);

    // A reload with a new active key: the JWKS has it, and a new tag.
    let second = TempFile::new("second.pem", &ec_pem());
    let text = format!("{}{upstream}", signing("gw-2", second.path(), rsa.path()));
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    gw.running
        .reload(config::load_with(Some(&text), &overrides))
        .expect("reload");
    let reply = jwks(&gw).await;
    assert_eq!(kids(&reply), ["gw-2", "rsa-old"]);
    assert_ne!(reply.header("etag"), Some(etag.as_str()));
    // Only GET and HEAD.
    let post = client::post_json(
        &format!("http://{}/.well-known/jwks.json", gw.addr()),
        "{}",
        &[],
    )
    .await;
    assert_eq!(post.status, 405);
}

#[tokio::test]
async fn without_signing_the_jwks_path_is_a_clear_404() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &mock.url())], "").await;
    let reply = jwks(&gw).await;
    assert_eq!(reply.status, 404);
    assert!(
        reply.text().contains("[card.signing] is not configured"),
        "{}",
        reply.text()
    );
}

#[tokio::test]
async fn a_key_that_cannot_sign_is_refused_by_check_and_run() {
    let ec = TempFile::new("mismatch.pem", &ec_pem());
    // An EC key said to be RSA.
    let text = format!(
        "[card.signing]\nactive = \"k\"\n[[card.signing.keys]]\nkid = \"k\"\nalg = \"RS256\"\nfile = \"{}\"\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n",
        ec.path()
    );
    let errors = config::load_str(&text).unwrap_err().to_string();
    assert!(errors.contains("card.signing.keys[0].file"), "{errors}");
    assert!(errors.contains("alg RS256"), "{errors}");
    let file = TempFile::new("mismatch.toml", &text);
    for command in [
        vec!["check", "--config", file.path()],
        vec!["run", "--config", file.path()],
    ] {
        let out = tokio::time::timeout(
            Duration::from_secs(20),
            tokio::process::Command::new(BIN).args(&command).output(),
        )
        .await
        .expect("exits at once")
        .unwrap();
        assert!(!out.status.success(), "{command:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("card.signing.keys[0].file"),
            "{command:?}: {said}"
        );
    }
}

/// Verifies `card`'s first signature (`a2a-1.0`) as a 1.0 client does: the
/// protected header, the card's 1.0 projection in RFC 8785 form, and the
/// key named by `kid` from the gateway's JWKS.
fn verify_v10(card: &Value, jwks: &Value) -> Result<(), String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let signature = &card["signatures"][0];
    let protected = signature["protected"]
        .as_str()
        .ok_or("no protected header")?;
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).unwrap()).unwrap();
    let kid = header["kid"].as_str().ok_or("no kid")?;
    let jwk = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .ok_or("kid not in the JWKS")?;
    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(jwk.clone()).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
    let payload =
        a2a_gateway::card::canonical::jcs(&a2a_gateway::card::project::v10(card)).unwrap();
    let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
    let alg: jsonwebtoken::Algorithm = serde_json::from_value(header["alg"].clone()).unwrap();
    let sig = signature["signature"].as_str().ok_or("no signature")?;
    match jsonwebtoken::crypto::verify(sig, input.as_bytes(), &key, alg) {
        Ok(true) => Ok(()),
        other => Err(format!("does not verify: {other:?}")),
    }
}

#[tokio::test]
async fn every_published_card_is_signed_once_and_verifies_and_a_tampered_copy_does_not() {
    let mock = MockAgent::start(Mode::Normal).await;
    let (key, rsa) = (
        TempFile::new("signing.pem", &ec_pem()),
        TempFile::new("rsa2.pem", RSA_PRIVATE),
    );
    let text = format!(
        "[card]\nextended_card = true\n{}[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n",
        signing("gw-1", key.path(), rsa.path()),
        mock.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    let jwks_doc: Value = jwks(&gw).await.json();
    let base = format!("http://{}", gw.addr());
    for path in [
        "/.well-known/agent-card.json",
        "/agents/echo/.well-known/agent-card.json",
        "/extendedAgentCard",
    ] {
        let first = client::get(&format!("{base}{path}"), &[]).await;
        assert_eq!(first.status, 200, "{path}: {}", first.text());
        let card: Value = first.json();
        let signatures = card["signatures"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: {card}"));
        let covers: Vec<&Value> = signatures.iter().map(|s| &s["header"]["covers"]).collect();
        assert_eq!(covers, ["a2a-1.0", "a2a-0.3"], "{path}");
        let header = &signatures[0]["protected"];
        let decoded = {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(header.as_str().unwrap())
                .unwrap()
        };
        let header: Value = serde_json::from_slice(&decoded).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "gw-1");
        assert_eq!(header["typ"], "JOSE");
        assert_eq!(header["jku"], format!("{base}/.well-known/jwks.json"));
        verify_v10(&card, &jwks_doc).unwrap_or_else(|e| panic!("{path}: {e}"));
        // ECDSA signatures differ each time they are made: the same one
        // again means the card was signed once, not per request.
        let again: Value = client::get(&format!("{base}{path}"), &[]).await.json();
        assert_eq!(again["signatures"], card["signatures"], "{path}");
        // A field the 1.0 reader keeps, changed: the signature fails.
        let mut tampered = card.clone();
        tampered["name"] =
            Value::String(format!("{} (changed)", card["name"].as_str().unwrap_or("")));
        assert!(verify_v10(&tampered, &jwks_doc).is_err(), "{path}");
    }
}

/// Rotating the gateway's key: the new key is added and made active by a
/// reload, the old one stays published by its public key alone. Cards are
/// then signed by the new key, and a card the old key signed still
/// verifies against the JWKS, as a client holding it would check.
#[tokio::test]
async fn rotating_the_gateway_key_keeps_cards_of_the_old_key_verifiable() {
    let mock = MockAgent::start(Mode::Normal).await;
    let old = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let (old_private, old_public) = (
        TempFile::new("rot-old.pem", &old.serialize_pem()),
        TempFile::new("rot-old.pub.pem", &old.public_key_pem()),
    );
    let new = TempFile::new("rot-new.pem", &ec_pem());
    let upstream = format!("[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n", mock.url());
    let key = |kid: &str, field: &str, path: &str| {
        format!("[[card.signing.keys]]\nkid = \"{kid}\"\nalg = \"ES256\"\n{field} = \"{path}\"\n")
    };
    let text = format!(
        "[card.signing]\nactive = \"old\"\n{}{upstream}",
        key("old", "file", old_private.path())
    );
    let gw = TestGateway::from_toml(&text).await;
    let card_url = format!("http://{}/.well-known/agent-card.json", gw.addr());
    let signed_by_old: Value = client::get(&card_url, &[]).await.json();
    verify_v10(&signed_by_old, &jwks(&gw).await.json()).unwrap();

    let rotated = format!(
        "[card.signing]\nactive = \"new\"\n{}{}{upstream}",
        key("new", "file", new.path()),
        key("old", "public_file", old_public.path())
    );
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    gw.running
        .reload(config::load_with(Some(&rotated), &overrides))
        .expect("reload");
    let reply = jwks(&gw).await;
    assert_eq!(kids(&reply), ["new", "old"]);
    let jwks_doc: Value = reply.json();
    let signed_by_new: Value = client::get(&card_url, &[]).await.json();
    let header = signed_by_new["signatures"][0]["protected"]
        .as_str()
        .unwrap();
    let header: Value = {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    assert_eq!(header["kid"], "new");
    verify_v10(&signed_by_new, &jwks_doc).unwrap();
    verify_v10(&signed_by_old, &jwks_doc).expect("the old key is still published");
}

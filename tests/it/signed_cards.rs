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

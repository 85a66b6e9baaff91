//! `[card.signing]`: the keys the gateway signs its published cards with.
//!
//! Each key is read and tried when the config is loaded: a key that cannot
//! be read, is not a private key of its `alg`'s kind, or does not sign and
//! verify a probe with that `alg` is a config problem, so `check` and `run`
//! both refuse it. One key (`active`) signs; every key is published in the
//! JWKS, so that a retired key's signatures still verify while clients
//! still hold cards it signed.

use std::fmt;
use std::sync::Arc;

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use serde::Deserialize;

/// `[card.signing]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigningSection {
    /// The `kid` of the key that signs.
    pub active: String,
    /// Where clients fetch the keys (the protected header's `jku`); by
    /// default the public URL's `/.well-known/jwks.json`.
    #[serde(default)]
    pub jku: Option<String>,
    pub keys: Vec<KeySection>,
}

/// `[[card.signing.keys]]` as written: a private key from a PEM file or an
/// environment variable, or, for a retired key, only its public key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySection {
    pub kid: String,
    pub alg: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default)]
    pub public_file: Option<String>,
}

/// One key: its public JWK (published) and, when it can sign, its private
/// key.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    pub private: Option<Arc<EncodingKey>>,
    pub jwk: Jwk,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("private", &self.private.is_some())
            .finish()
    }
}

/// Validated `[card.signing]`.
#[derive(Debug, Clone)]
pub struct Signing {
    /// Every key, the active one first.
    pub keys: Vec<SigningKey>,
    pub jku: Option<String>,
}

impl Signing {
    /// The key that signs.
    pub fn active(&self) -> &SigningKey {
        &self.keys[0]
    }
}

/// The algorithms a card may be signed with: the asymmetric ones a client
/// can verify with a published public key.
const ALGORITHMS: [(&str, Algorithm); 3] = [
    ("ES256", Algorithm::ES256),
    ("RS256", Algorithm::RS256),
    ("EdDSA", Algorithm::EdDSA),
];

/// Validates `[card.signing]`: `(field, message)` for each problem, the
/// field under `card.signing`.
pub fn signing(section: &SigningSection) -> Result<Signing, Vec<(String, String)>> {
    let mut problems = Vec::new();
    let mut keys = Vec::new();
    for (i, k) in section.keys.iter().enumerate() {
        let at = format!("keys[{i}]");
        match key(k, &at) {
            Ok(key) => keys.push(key),
            Err(p) => problems.push(p),
        }
    }
    let mut kids: Vec<&str> = section.keys.iter().map(|k| k.kid.as_str()).collect();
    kids.sort_unstable();
    if kids.windows(2).any(|w| w[0] == w[1]) {
        problems.push(("keys".into(), "each kid must be different".into()));
    }
    if section.keys.is_empty() {
        problems.push(("keys".into(), "name at least one key".into()));
    }
    let active = keys.iter().position(|k| k.kid == section.active);
    match (
        active,
        section.keys.iter().find(|k| k.kid == section.active),
    ) {
        (_, None) => problems.push((
            "active".into(),
            format!("names no key (kids: {})", kids.join(", ")),
        )),
        (Some(i), _) if keys[i].private.is_none() => problems.push((
            "active".into(),
            "the active key needs its private key (file or env), not only public_file".into(),
        )),
        _ => {}
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if let Some(i) = active {
        keys.swap(0, i);
    }
    Ok(Signing {
        keys,
        jku: section.jku.clone(),
    })
}

/// One key, read and tried.
fn key(k: &KeySection, at: &str) -> Result<SigningKey, (String, String)> {
    let problem = |field: &str, why: String| (format!("{at}.{field}"), why);
    let alg = ALGORITHMS
        .iter()
        .find(|(name, _)| *name == k.alg)
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            problem(
                "alg",
                format!("expected ES256, RS256 or EdDSA, not \"{}\"", k.alg),
            )
        })?;
    if k.kid.trim().is_empty() {
        return Err(problem("kid", "must not be empty".into()));
    }
    let (pem, field) = match (&k.file, &k.env, &k.public_file) {
        (Some(path), None, None) => (read(path).map_err(|e| problem("file", e))?, "file"),
        (None, Some(var), None) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => (v.into_bytes(), "env"),
            _ => {
                return Err(problem(
                    "env",
                    format!("environment variable {var} is not set"),
                ))
            }
        },
        (None, None, Some(path)) => (
            read(path).map_err(|e| problem("public_file", e))?,
            "public_file",
        ),
        _ => {
            let why =
                "give exactly one of file, env (a private key) or public_file (a retired key)";
            return Err((at.to_string(), why.into()));
        }
    };
    let built = match field {
        "public_file" => public_only(&pem, alg),
        _ => private(&pem, alg),
    };
    let (private, mut jwk) =
        built.map_err(|why| problem(field, format!("{why} (alg {})", k.alg)))?;
    jwk.common.key_id = Some(k.kid.clone());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    Ok(SigningKey {
        kid: k.kid.clone(),
        alg,
        private: private.map(Arc::new),
        jwk,
    })
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))
}

/// A private key of `alg`'s kind, proved by signing a probe and verifying
/// it with the public key derived from it.
fn private(pem: &[u8], alg: Algorithm) -> Result<(Option<EncodingKey>, Jwk), String> {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pem),
        _ => EncodingKey::from_ed_pem(pem),
    }
    .map_err(|e| format!("not a PEM private key of this kind: {e}"))?;
    let jwk = Jwk::from_encoding_key(&key, alg).map_err(|e| match alg {
        // jsonwebtoken reads the public key out of PKCS#8 v1 only.
        Algorithm::EdDSA => format!(
            "no public key: {e}; write the key as `openssl genpkey -algorithm ed25519` does"
        ),
        _ => format!("no public key: {e}"),
    })?;
    let public = DecodingKey::from_jwk(&jwk).map_err(|e| format!("no public key: {e}"))?;
    let probe = b"a2a-gateway card signing key probe";
    let signed =
        jsonwebtoken::crypto::sign(probe, &key, alg).map_err(|e| format!("does not sign: {e}"))?;
    match jsonwebtoken::crypto::verify(&signed, probe, &public, alg) {
        Ok(true) => Ok((Some(key), jwk)),
        _ => Err("its signature does not verify with its own public key".into()),
    }
}

/// A retired key: its public key alone.
fn public_only(pem: &[u8], alg: Algorithm) -> Result<(Option<EncodingKey>, Jwk), String> {
    let key = match alg {
        Algorithm::ES256 => DecodingKey::from_ec_pem(pem),
        Algorithm::RS256 => DecodingKey::from_rsa_pem(pem),
        _ => DecodingKey::from_ed_pem(pem),
    }
    .map_err(|e| format!("not a PEM public key of this kind: {e}"))?;
    let jwk = Jwk::from_decoding_key(&key, Some(alg)).map_err(|e| format!("not usable: {e}"))?;
    Ok((None, jwk))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PEM file in the temp folder, removed on drop.
    struct Pem(std::path::PathBuf);

    impl Pem {
        fn new(name: &str, text: &str) -> Pem {
            let path =
                std::env::temp_dir().join(format!("a2a-gw-{}-{name}.pem", std::process::id()));
            std::fs::write(&path, text).unwrap();
            Pem(path)
        }

        fn path(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }

    impl Drop for Pem {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn ec() -> rcgen::KeyPair {
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap()
    }

    /// An Ed25519 key as `openssl genpkey -algorithm ed25519` writes it
    /// (PKCS#8 v1; test only).
    const ED25519: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEILVSvoxWldb8jLcCEslM/ncJCeVIGZPlA6VPvwMT2AbZ
-----END PRIVATE KEY-----
";

    fn section(text: &str) -> SigningSection {
        toml::from_str(text).unwrap()
    }

    fn fields(problems: &[(String, String)]) -> Vec<&str> {
        problems.iter().map(|(f, _)| f.as_str()).collect()
    }

    #[test]
    fn keys_from_file_env_and_a_retired_public_key() {
        let (active, retired) = (ec(), ec());
        let file = Pem::new("active", &active.serialize_pem());
        let public = Pem::new("retired", &retired.public_key_pem());
        std::env::set_var("A2A_GW_TEST_ED_KEY", ED25519);
        let s = signing(&section(&format!(
            r#"
active = "gw-2"
[[keys]]
kid = "gw-1"
alg = "ES256"
public_file = "{}"
[[keys]]
kid = "gw-2"
alg = "ES256"
file = "{}"
[[keys]]
kid = "ed"
alg = "EdDSA"
env = "A2A_GW_TEST_ED_KEY"
"#,
            public.path(),
            file.path()
        )))
        .unwrap();
        assert_eq!(s.active().kid, "gw-2");
        assert!(s.active().private.is_some());
        let kids: Vec<&str> = s.keys.iter().map(|k| k.kid.as_str()).collect();
        assert_eq!(kids, ["gw-2", "gw-1", "ed"]);
        assert!(s.keys[1].private.is_none());
        // The published JWKs hold public parameters only, each with its kid.
        let jwks: Vec<&Jwk> = s.keys.iter().map(|k| &k.jwk).collect();
        let doc = serde_json::json!({ "keys": jwks });
        let keys = doc["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 3);
        for (key, kid) in keys.iter().zip(kids) {
            assert_eq!(key["kid"], kid, "{key}");
            assert_eq!(key["use"], "sig", "{key}");
            assert!(key.get("d").is_none(), "no private part: {key}");
        }
        assert_eq!(keys[0]["kty"], "EC");
        assert_eq!(keys[0]["crv"], "P-256");
        assert_eq!(keys[0]["alg"], "ES256");
        assert_eq!(keys[2]["kty"], "OKP");
        assert_eq!(keys[2]["crv"], "Ed25519");
        // A key's public JWK verifies what its private key signed.
        let signed =
            jsonwebtoken::crypto::sign(b"x", s.keys[0].private.as_ref().unwrap(), s.keys[0].alg)
                .unwrap();
        let public = DecodingKey::from_jwk(&s.keys[0].jwk).unwrap();
        assert!(jsonwebtoken::crypto::verify(&signed, b"x", &public, Algorithm::ES256).unwrap());
    }

    #[test]
    fn a_key_that_does_not_match_its_alg_is_named() {
        let ec_file = Pem::new("ec-as-rsa", &ec().serialize_pem());
        let ed_file = Pem::new("ed-as-ec", ED25519);
        let problems = signing(&section(&format!(
            r#"
active = "a"
[[keys]]
kid = "a"
alg = "RS256"
file = "{}"
[[keys]]
kid = "b"
alg = "ES256"
file = "{}"
[[keys]]
kid = "c"
alg = "HS256"
file = "{}"
[[keys]]
kid = "d"
alg = "ES256"
file = "/nonexistent/key.pem"
[[keys]]
kid = "e"
alg = "ES256"
"#,
            ec_file.path(),
            ed_file.path(),
            ec_file.path()
        )))
        .unwrap_err();
        assert_eq!(
            fields(&problems),
            [
                "keys[0].file",
                "keys[1].file",
                "keys[2].alg",
                "keys[3].file",
                "keys[4]"
            ],
            "{problems:?}"
        );
        assert!(problems[0].1.contains("alg RS256"), "{problems:?}");
        assert!(
            problems[2].1.contains("ES256, RS256 or EdDSA"),
            "{problems:?}"
        );
        assert!(
            problems[3].1.contains("cannot read /nonexistent/key.pem"),
            "{problems:?}"
        );
    }

    #[test]
    fn the_active_key_must_exist_and_be_able_to_sign() {
        let key = ec();
        let public = Pem::new("public-only", &key.public_key_pem());
        let text = |active: &str| {
            format!(
                "active = \"{active}\"\n[[keys]]\nkid = \"old\"\nalg = \"ES256\"\npublic_file = \"{}\"\n",
                public.path()
            )
        };
        let p = signing(&section(&text("new"))).unwrap_err();
        assert_eq!(fields(&p), ["active"]);
        assert!(p[0].1.contains("names no key (kids: old)"), "{p:?}");
        let p = signing(&section(&text("old"))).unwrap_err();
        assert_eq!(fields(&p), ["active"]);
        assert!(p[0].1.contains("private key"), "{p:?}");
        let p = signing(&section("active = \"x\"\nkeys = []\n")).unwrap_err();
        assert_eq!(fields(&p), ["keys", "active"]);
    }
}

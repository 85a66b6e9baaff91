//! A `jwt` table, as written and as checked: the allow-list, the claims to
//! require, and the keys (static secrets and PEMs read from where the
//! config says, a JWKS URL, or an OIDC issuer's discovery). Every problem is
//! reported with its field, and a key is refused when it does not fit its
//! algorithm's family or is too weak.

use std::str::FromStr;
use std::time::Duration;

use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;

use super::jwks::{self, JwksConfig, JwksLocation};
use super::keys::{check_public_key, family_name};
use crate::cidr::{problem, Problems};

/// `jwt = { … }` of a bearer / oauth2 / openIdConnect scheme, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSection {
    /// Required `iss`.
    #[serde(default)]
    pub issuer: Option<String>,
    /// Accepted `aud` values (any one must be present in the token).
    #[serde(default)]
    pub audience: Vec<String>,
    /// Explicit allow-list, e.g. ["RS256", "ES256"]. Never "none".
    pub algorithms: Vec<String>,
    #[serde(default = "default_leeway")]
    pub leeway: String,
    /// Static keys.
    #[serde(default)]
    pub keys: Vec<JwtKeySection>,
    /// A JWKS document URL.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// OIDC discovery: `{oidc_issuer}/.well-known/openid-configuration`
    /// gives `jwks_uri` (and the issuer, if `issuer` is unset).
    #[serde(default)]
    pub oidc_issuer: Option<String>,
    /// How long fetched keys are used before they are fetched again.
    #[serde(default = "default_jwks_ttl")]
    pub jwks_cache_ttl: String,
    /// An unknown `kid` triggers a refetch at most this often.
    #[serde(default = "default_refetch")]
    pub jwks_min_refetch_interval: String,
    /// The claim holding scopes ("scope": space-separated string, or "scp":
    /// array, both understood).
    #[serde(default = "default_scope_claim")]
    pub scope_claim: String,
}

fn default_leeway() -> String {
    "30s".into()
}
fn default_jwks_ttl() -> String {
    "1h".into()
}
fn default_refetch() -> String {
    "30s".into()
}
fn default_scope_claim() -> String {
    "scope".into()
}

/// One static key: exactly one of the secret / PEM sources.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtKeySection {
    #[serde(default)]
    pub kid: Option<String>,
    /// The algorithm this key is for, e.g. "HS256", "RS256", "ES256", "EdDSA".
    pub algorithm: String,
    /// HMAC secret (HS*): literal, from an environment variable, or a file.
    #[serde(default)]
    pub secret: Option<String>,
    #[serde(default)]
    pub secret_env: Option<String>,
    #[serde(default)]
    pub secret_file: Option<String>,
    /// Public key PEM (RS*/PS*/ES*/EdDSA): inline or a file.
    #[serde(default)]
    pub pem: Option<String>,
    #[serde(default)]
    pub pem_file: Option<String>,
}

/// A validated `jwt` section.
#[derive(Debug, Clone)]
pub struct JwtSettings {
    pub leeway: Duration,
    /// The allow-list.
    pub algorithms: Vec<Algorithm>,
    pub issuer: Option<String>,
    pub audience: Vec<String>,
    pub keys: Vec<StaticKey>,
    pub jwks: Option<JwksConfig>,
    pub scope_claim: String,
}

/// A configured key (its material redacted from `Debug`).
#[derive(Debug, Clone)]
pub struct StaticKey {
    pub kid: Option<String>,
    pub algorithm: Algorithm,
    pub key: DecodingKey,
}

/// Validates a section: `(field, message)` for every problem (paths
/// relative to the `jwt` table). Secrets and PEM files are read here.
pub fn settings(section: &JwtSection) -> Result<JwtSettings, Problems> {
    let mut problems = Problems::new();
    let algorithms = allow_list(&section.algorithms, &mut problems);
    let leeway = duration("leeway", &section.leeway, &mut problems);
    check_claims(section, &mut problems);
    let keys = static_keys(&section.keys, &algorithms, &mut problems);
    let jwks = remote_keys(section, &mut problems);
    if section.keys.is_empty() && section.jwks_url.is_none() && section.oidc_issuer.is_none() {
        problems.push(problem(
            "",
            "needs a key source: keys, jwks_url or oidc_issuer",
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(JwtSettings {
        leeway: leeway.unwrap_or_default(),
        algorithms,
        issuer: section.issuer.clone(),
        audience: section.audience.clone(),
        keys,
        jwks,
        scope_claim: section.scope_claim.clone(),
    })
}

fn allow_list(names: &[String], problems: &mut Problems) -> Vec<Algorithm> {
    if names.is_empty() {
        problems.push(problem(
            "algorithms",
            "must list at least one algorithm, e.g. [\"RS256\"]",
        ));
    }
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match algorithm(name) {
            Ok(alg) if !out.contains(&alg) => out.push(alg),
            Ok(_) => {}
            Err(why) => problems.push((format!("algorithms[{i}]"), why)),
        }
    }
    out
}

/// A known signing algorithm; "none" is refused by name so the message says
/// why.
fn algorithm(name: &str) -> Result<Algorithm, String> {
    if name.eq_ignore_ascii_case("none") {
        return Err("\"none\" (unsigned tokens) is never accepted".into());
    }
    Algorithm::from_str(name).map_err(|_| {
        format!(
            "unknown algorithm {name:?}; known: HS256, HS384, HS512, RS256, RS384, RS512, \
             PS256, PS384, PS512, ES256, ES384, EdDSA"
        )
    })
}

fn duration(field: &str, text: &str, problems: &mut Problems) -> Option<Duration> {
    match humantime::parse_duration(text) {
        Ok(d) => Some(d),
        Err(e) => {
            problems.push(problem(field, format!("{text:?} is not a duration: {e}")));
            None
        }
    }
}

fn check_claims(section: &JwtSection, problems: &mut Problems) {
    if section.issuer.as_deref().is_some_and(str::is_empty) {
        problems.push(problem("issuer", "must not be empty"));
    }
    for (i, aud) in section.audience.iter().enumerate() {
        if aud.is_empty() {
            problems.push(problem(format!("audience[{i}]"), "must not be empty"));
        }
    }
    if section.scope_claim.is_empty() {
        problems.push(problem("scope_claim", "must not be empty"));
    }
}

fn static_keys(
    sections: &[JwtKeySection],
    allowed: &[Algorithm],
    problems: &mut Problems,
) -> Vec<StaticKey> {
    let keys: Vec<StaticKey> = sections
        .iter()
        .enumerate()
        .filter_map(|(i, k)| static_key(k, &format!("keys[{i}]"), allowed, problems))
        .collect();
    for (i, k) in sections.iter().enumerate() {
        let dup = k.kid.is_some() && sections[..i].iter().any(|o| o.kid == k.kid);
        if dup {
            problems.push(problem(format!("keys[{i}].kid"), "is used by another key"));
        }
    }
    keys
}

fn static_key(
    section: &JwtKeySection,
    at: &str,
    allowed: &[Algorithm],
    problems: &mut Problems,
) -> Option<StaticKey> {
    let field = |f: &str| format!("{at}.{f}");
    if section.kid.as_deref().is_some_and(str::is_empty) {
        problems.push(problem(field("kid"), "must not be empty"));
    }
    let alg = match algorithm(&section.algorithm) {
        Ok(alg) if allowed.contains(&alg) => alg,
        Ok(_) => {
            let why = format!("{} is not in algorithms", section.algorithm);
            problems.push((field("algorithm"), why));
            return None;
        }
        Err(why) => {
            problems.push((field("algorithm"), why));
            return None;
        }
    };
    let key = match alg.family() {
        AlgorithmFamily::Hmac => hmac_key(section, alg, at),
        _ => public_key(section, alg, at),
    };
    match key {
        Ok(key) => Some(StaticKey {
            kid: section.kid.clone(),
            algorithm: alg,
            key,
        }),
        Err(problem) => {
            problems.push(problem);
            None
        }
    }
}

/// HS*: exactly one of secret / secret_env / secret_file, long enough.
fn hmac_key(
    section: &JwtKeySection,
    alg: Algorithm,
    at: &str,
) -> Result<DecodingKey, (String, String)> {
    if section.pem.is_some() || section.pem_file.is_some() {
        let why = format!("an {alg:?} key takes secret, secret_env or secret_file, not a PEM");
        return Err((at.into(), why));
    }
    let secret = match (&section.secret, &section.secret_env, &section.secret_file) {
        (Some(s), None, None) => s.clone().into_bytes(),
        (None, Some(var), None) => secret_from_env(var, at)?,
        (None, None, Some(path)) => secret_from_file(path, at)?,
        _ => {
            let why = "needs exactly one of secret, secret_env or secret_file";
            return Err((at.into(), why.into()));
        }
    };
    // RFC 7518 §3.2: at least as long as the hash output.
    let min = match alg {
        Algorithm::HS384 => 48,
        Algorithm::HS512 => 64,
        _ => 32,
    };
    if secret.len() < min {
        let why = format!("an {alg:?} secret must be at least {min} bytes long");
        return Err((at.into(), why));
    }
    Ok(DecodingKey::from_secret(&secret))
}

fn secret_from_env(var: &str, at: &str) -> Result<Vec<u8>, (String, String)> {
    match std::env::var(var) {
        Ok(v) => Ok(v.into_bytes()),
        Err(_) => Err((
            format!("{at}.secret_env"),
            format!("environment variable {var} is not set (or not UTF-8)"),
        )),
    }
}

fn secret_from_file(path: &str, at: &str) -> Result<Vec<u8>, (String, String)> {
    let mut bytes = std::fs::read(path).map_err(|e| {
        (
            format!("{at}.secret_file"),
            format!("cannot read {path}: {e}"),
        )
    })?;
    // Editors end files with a newline that is not part of the secret.
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    Ok(bytes)
}

/// RS*/PS*/ES*/EdDSA: exactly one of pem / pem_file, a public key of the
/// algorithm's family, parsed and checked now so `check` reports it.
fn public_key(
    section: &JwtKeySection,
    alg: Algorithm,
    at: &str,
) -> Result<DecodingKey, (String, String)> {
    if section.secret.is_some() || section.secret_env.is_some() || section.secret_file.is_some() {
        let why = format!("an {alg:?} key takes pem or pem_file (a public key), not a secret");
        return Err((at.into(), why));
    }
    let (field, pem) = match (&section.pem, &section.pem_file) {
        (Some(pem), None) => (format!("{at}.pem"), pem.clone()),
        (None, Some(path)) => {
            let field = format!("{at}.pem_file");
            let pem = std::fs::read_to_string(path)
                .map_err(|e| (field.clone(), format!("cannot read {path}: {e}")))?;
            (field, pem)
        }
        _ => return Err((at.into(), "needs exactly one of pem or pem_file".into())),
    };
    let parsed = match alg.family() {
        AlgorithmFamily::Rsa => DecodingKey::from_rsa_pem(pem.as_bytes()),
        AlgorithmFamily::Ec => DecodingKey::from_ec_pem(pem.as_bytes()),
        _ => DecodingKey::from_ed_pem(pem.as_bytes()),
    };
    let family = family_name(alg);
    let key = parsed.map_err(|_| (field.clone(), format!("is not a {family} public key PEM")))?;
    check_public_key(&key, alg).map_err(|why| (field, why))?;
    Ok(key)
}

/// `jwks_url` or `oidc_issuer` (not both), with the cache durations.
fn remote_keys(section: &JwtSection, problems: &mut Problems) -> Option<JwksConfig> {
    let cache_ttl = duration("jwks_cache_ttl", &section.jwks_cache_ttl, problems);
    let min_refetch = duration(
        "jwks_min_refetch_interval",
        &section.jwks_min_refetch_interval,
        problems,
    );
    if cache_ttl.is_some_and(|d| d.is_zero()) {
        problems.push(problem("jwks_cache_ttl", "must be more than 0s"));
    }
    let location = match (&section.jwks_url, &section.oidc_issuer) {
        (None, None) => return None,
        (Some(_), Some(_)) => {
            let why = "set jwks_url or oidc_issuer, not both";
            problems.push(problem("oidc_issuer", why));
            return None;
        }
        (Some(url), None) => match jwks::parse_http_url(url) {
            Ok(uri) => JwksLocation::Url(uri),
            Err(why) => {
                problems.push(problem("jwks_url", why));
                return None;
            }
        },
        (None, Some(issuer)) => match oidc_issuer(issuer) {
            Ok(()) => JwksLocation::Oidc(issuer.clone()),
            Err(why) => {
                problems.push(problem("oidc_issuer", why));
                return None;
            }
        },
    };
    Some(JwksConfig {
        location,
        cache_ttl: cache_ttl?,
        min_refetch: min_refetch?,
    })
}

fn oidc_issuer(issuer: &str) -> Result<(), String> {
    let uri = jwks::parse_http_url(issuer)?;
    if uri.query().is_some() || issuer.contains('#') {
        return Err("an issuer URL has no query or fragment".into());
    }
    jwks::discovery_url(issuer).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAmOyUJawEmKdWNNKj/Syf
oovTiAXSBpS26eBDVMteZmZ3ajvRITvWFVqbX85Y+rvGZJLdqRoAhmTa93RN1apq
IjlvRzeoQ6cKUOHojpXcO5suxG5CLNZvzn1oafEiWOmhXHgyIf6SQRu6ttb2PQxL
gxwuqnAJNIeh8YkvY5/QD5sQX/X02KFj9KwmIozxN5NOP4UtfmvbREIcCHxVuWgM
Ta+FRKO3ggiSpvDqcQW2YdKZ9egWxpEXkpAHZzwnlF0+udwdoQ7lzzfBAaxbehgu
A32KV6XGsBG57xwVC5UoznL7r9lEAkuSegLQKOW2vtzHPLtQHt5/iUpTbGt0PeZw
UQIDAQAB
-----END PUBLIC KEY-----
";
    const RSA_1024_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCmHlO+ZQcB9P8iEJ9JDXuApjwv
JICocHp1aBEiQA3Jv5haEANDt2APKvtTFGXQUuUJTHphMUT1gYMsgKUjzp8gpD39
lsOn5di7DLvazuPxT9NMbCn/7Fqg3gFOYw8JycVUaSdrkKP5Sjn9SC2PCX5kVYO6
a8b3mA2KUX0Bael56QIDAQAB
-----END PUBLIC KEY-----
";
    const EC_P256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEF3/2Z9LHGEEWY9LP2Yi51DGfd41Q
j7rmnpbhhlDn1L4YBGYnx80HMj4yyPH4D05DAsYayIBwNTxqAnLXx6qrpQ==
-----END PUBLIC KEY-----
";
    const EC_P384_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAESmWGnHCHCgdgF1wG0DcyXmzo/A66K/qo
74He+q2cdSfOTJn5Zr6tR7TtOS7wbL32cdaSxdfc8a78soiEz9SlySngBPobcGkf
7D5MjPq7YhbRuKW+r4myXxn5R8ODtQ1u
-----END PUBLIC KEY-----
";
    const ED_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAH47GqImvqdtBK3s/O/nPwB7BdcynudMZA8bHRQM5PTs=
-----END PUBLIC KEY-----
";
    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn parse(text: &str) -> Result<JwtSettings, Problems> {
        let section: JwtSection = toml::from_str(text).unwrap();
        settings(&section)
    }

    fn problems(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap_err()
    }

    /// The problem at `field`, which must exist.
    fn at(problems: &[(String, String)], field: &str) -> String {
        problems
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("no problem at {field:?} in {problems:?}"))
    }

    fn hs_key() -> String {
        format!(r#"keys = [{{ algorithm = "HS256", secret = "{SECRET}" }}]"#)
    }

    #[test]
    fn a_complete_section_is_accepted() {
        let s = parse(&format!(
            r#"
            algorithms = ["RS256", "ES256", "EdDSA", "HS256", "RS256"]
            issuer = "https://idp.example"
            audience = ["gw"]
            leeway = "10s"
            scope_claim = "scp"
            jwks_url = "https://idp.example/jwks"
            jwks_cache_ttl = "10m"
            jwks_min_refetch_interval = "5s"
            keys = [
              {{ kid = "r", algorithm = "RS256", pem = '''{RSA_PUBLIC}''' }},
              {{ kid = "e", algorithm = "ES256", pem = '''{EC_P256_PUBLIC}''' }},
              {{ kid = "d", algorithm = "EdDSA", pem = '''{ED_PUBLIC}''' }},
              {{ algorithm = "HS256", secret = "{SECRET}" }},
            ]
            "#
        ))
        .unwrap();
        assert_eq!(s.leeway, Duration::from_secs(10));
        assert_eq!(
            s.algorithms,
            [
                Algorithm::RS256,
                Algorithm::ES256,
                Algorithm::EdDSA,
                Algorithm::HS256
            ]
        );
        assert_eq!(s.keys.len(), 4);
        assert_eq!(s.scope_claim, "scp");
        let jwks = s.jwks.unwrap();
        assert_eq!(jwks.cache_ttl, Duration::from_secs(600));
        assert_eq!(jwks.min_refetch, Duration::from_secs(5));
        assert!(matches!(jwks.location, JwksLocation::Url(_)));
        // Key material stays out of Debug output.
        assert!(!format!("{:?}", s.keys).contains("0123456789abcdef"));
    }

    #[test]
    fn algorithms_must_be_a_non_empty_list_of_known_names_never_none() {
        let p = problems(&format!("algorithms = []\n{}", hs_key()));
        assert!(at(&p, "algorithms").contains("at least one"));
        let p = problems(&format!(
            r#"algorithms = ["HS256", "none"]{}{}"#,
            "\n",
            hs_key()
        ));
        assert!(at(&p, "algorithms[1]").contains("never accepted"));
        let p = problems(&format!(r#"algorithms = ["NONE"]{}{}"#, "\n", hs_key()));
        assert!(at(&p, "algorithms[0]").contains("\"none\""));
        let p = problems(&format!(
            r#"algorithms = ["HS256", "XS999"]{}{}"#,
            "\n",
            hs_key()
        ));
        assert!(at(&p, "algorithms[1]").contains("unknown algorithm"));
    }

    #[test]
    fn a_key_source_is_required() {
        let p = problems(r#"algorithms = ["RS256"]"#);
        assert!(at(&p, "").contains("key source"));
    }

    #[test]
    fn key_algorithm_must_be_known_and_allowed() {
        let p = problems(&format!(
            r#"
            algorithms = ["RS256"]
            keys = [{{ algorithm = "HS256", secret = "{SECRET}" }},
                    {{ algorithm = "none", secret = "{SECRET}" }}]
            "#
        ));
        assert!(at(&p, "keys[0].algorithm").contains("not in algorithms"));
        assert!(at(&p, "keys[1].algorithm").contains("never accepted"));
    }

    #[test]
    fn key_material_must_match_the_algorithm_family() {
        let p = problems(&format!(
            r#"
            algorithms = ["HS256", "RS256"]
            keys = [
              {{ algorithm = "HS256", pem = '''{RSA_PUBLIC}''' }},
              {{ algorithm = "RS256", secret = "{SECRET}" }},
              {{ algorithm = "HS256" }},
              {{ algorithm = "HS256", secret = "{SECRET}", secret_env = "X" }},
              {{ algorithm = "RS256" }},
              {{ algorithm = "RS256", pem = "x", pem_file = "y" }},
            ]
            "#
        ));
        assert!(at(&p, "keys[0]").contains("not a PEM"));
        assert!(at(&p, "keys[1]").contains("not a secret"));
        assert!(at(&p, "keys[2]").contains("exactly one"));
        assert!(at(&p, "keys[3]").contains("exactly one"));
        assert!(at(&p, "keys[4]").contains("exactly one of pem"));
        assert!(at(&p, "keys[5]").contains("exactly one of pem"));
    }

    #[test]
    fn pems_are_parsed_for_their_family() {
        let p = problems(&format!(
            r#"
            algorithms = ["RS256", "ES256", "ES384", "EdDSA"]
            keys = [
              {{ algorithm = "RS256", pem = "not a pem" }},
              {{ algorithm = "RS256", pem = '''{EC_P256_PUBLIC}''' }},
              {{ algorithm = "ES256", pem = '''{RSA_PUBLIC}''' }},
              {{ algorithm = "ES384", pem = '''{EC_P256_PUBLIC}''' }},
              {{ algorithm = "ES256", pem = '''{EC_P384_PUBLIC}''' }},
              {{ algorithm = "EdDSA", pem = '''{EC_P256_PUBLIC}''' }},
              {{ algorithm = "RS256", pem = '''{RSA_1024_PUBLIC}''' }},
            ]
            "#
        ));
        assert!(at(&p, "keys[0].pem").contains("RSA public key"));
        assert!(at(&p, "keys[1].pem").contains("RSA"));
        assert!(at(&p, "keys[2].pem").contains("EC public key"));
        assert!(at(&p, "keys[3].pem").contains("curve"));
        assert!(at(&p, "keys[4].pem").contains("curve"));
        assert!(at(&p, "keys[5].pem").contains("Ed25519"));
        assert!(at(&p, "keys[6].pem").contains("1024 bits"));
    }

    #[test]
    fn hmac_secrets_must_be_long_enough() {
        let p = problems(
            r#"
            algorithms = ["HS256", "HS512"]
            keys = [{ algorithm = "HS256", secret = "short" },
                    { algorithm = "HS512", secret = "0123456789abcdef0123456789abcdef" }]
            "#,
        );
        assert!(at(&p, "keys[0]").contains("at least 32 bytes"));
        assert!(at(&p, "keys[1]").contains("at least 64 bytes"));
    }

    #[test]
    fn secrets_and_pems_are_read_from_env_and_files() {
        let dir = std::env::temp_dir().join(format!("jwt-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret_file = dir.join("secret");
        std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
        let pem_file = dir.join("key.pem");
        std::fs::write(&pem_file, EC_P256_PUBLIC).unwrap();
        std::env::set_var("JWT_UNIT_TEST_SECRET", SECRET);
        let s = parse(&format!(
            r#"
            algorithms = ["HS256", "ES256"]
            keys = [
              {{ kid = "env", algorithm = "HS256", secret_env = "JWT_UNIT_TEST_SECRET" }},
              {{ kid = "file", algorithm = "HS256", secret_file = "{}" }},
              {{ kid = "pem", algorithm = "ES256", pem_file = "{}" }},
            ]
            "#,
            secret_file.display(),
            pem_file.display()
        ))
        .unwrap();
        assert_eq!(s.keys.len(), 3);

        let p = problems(&format!(
            r#"
            algorithms = ["HS256", "ES256"]
            keys = [
              {{ algorithm = "HS256", secret_env = "JWT_UNIT_TEST_UNSET_VARIABLE" }},
              {{ algorithm = "HS256", secret_file = "{0}/missing" }},
              {{ algorithm = "ES256", pem_file = "{0}/missing.pem" }},
            ]
            "#,
            dir.display()
        ));
        assert!(at(&p, "keys[0].secret_env").contains("JWT_UNIT_TEST_UNSET_VARIABLE"));
        assert!(at(&p, "keys[1].secret_file").contains("cannot read"));
        assert!(at(&p, "keys[2].pem_file").contains("cannot read"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn kids_are_unique_and_non_empty() {
        let p = problems(&format!(
            r#"
            algorithms = ["HS256"]
            keys = [{{ kid = "a", algorithm = "HS256", secret = "{SECRET}" }},
                    {{ kid = "a", algorithm = "HS256", secret = "{SECRET}" }},
                    {{ kid = "", algorithm = "HS256", secret = "{SECRET}" }}]
            "#
        ));
        assert!(at(&p, "keys[1].kid").contains("another key"));
        assert!(at(&p, "keys[2].kid").contains("empty"));
    }

    #[test]
    fn urls_must_be_absolute_http() {
        for url in ["/jwks", "ftp://idp.example/jwks", "not a url", "https://"] {
            let p = problems(&format!("algorithms = [\"RS256\"]\njwks_url = \"{url}\""));
            assert!(at(&p, "jwks_url").contains("URL"), "{url}");
        }
        let p = problems("algorithms = [\"RS256\"]\noidc_issuer = \"idp.example\"");
        assert!(at(&p, "oidc_issuer").contains("URL"));
        let p = problems("algorithms = [\"RS256\"]\noidc_issuer = \"https://idp.example?x=1\"");
        assert!(at(&p, "oidc_issuer").contains("query"));
        let p = problems(
            r#"
            algorithms = ["RS256"]
            jwks_url = "https://idp.example/jwks"
            oidc_issuer = "https://idp.example"
            "#,
        );
        assert!(at(&p, "oidc_issuer").contains("not both"));
        let s =
            parse("algorithms = [\"RS256\"]\noidc_issuer = \"http://127.0.0.1:8080/realms/a/\"")
                .unwrap();
        assert!(matches!(s.jwks.unwrap().location, JwksLocation::Oidc(_)));
    }

    #[test]
    fn durations_and_claims_are_checked() {
        let p = problems(&format!(
            r#"
            algorithms = ["HS256"]
            leeway = "soon"
            jwks_cache_ttl = "0s"
            jwks_min_refetch_interval = "often"
            issuer = ""
            audience = ["ok", ""]
            scope_claim = ""
            {}
            "#,
            hs_key()
        ));
        assert!(at(&p, "leeway").contains("not a duration"));
        assert!(at(&p, "jwks_cache_ttl").contains("more than 0s"));
        assert!(at(&p, "jwks_min_refetch_interval").contains("not a duration"));
        assert!(at(&p, "issuer").contains("empty"));
        assert!(at(&p, "audience[1]").contains("empty"));
        assert!(at(&p, "scope_claim").contains("empty"));
    }
}

//! `[push_relay]` as written, and checked: the callback base the agents
//! reach, the sealing keys (every replica holds the same), and the bounds
//! on delivery.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;

use super::seal::{SealKey, Sealer};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushRelaySection {
    #[serde(default)]
    pub enabled: bool,
    /// Where agents reach this gateway's `/push/{id}`: an internal address.
    #[serde(default)]
    pub callback_base: Option<String>,
    /// The kid that seals.
    #[serde(default)]
    pub active: Option<String>,
    #[serde(default)]
    pub keys: Vec<SealKeySection>,
    #[serde(default = "defaults::timeout")]
    pub timeout: String,
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "defaults::backoff")]
    pub backoff: String,
    #[serde(default = "defaults::max_backoff")]
    pub max_backoff: String,
    #[serde(default = "defaults::queue_per_destination")]
    pub queue_per_destination: u32,
    #[serde(default = "defaults::max_queued")]
    pub max_queued: u32,
    /// Bound on the bodies queued, all destinations together.
    #[serde(default = "defaults::max_queued_bytes")]
    pub max_queued_bytes: u64,
    #[serde(default = "defaults::max_body_bytes")]
    pub max_body_bytes: u64,
    #[serde(default = "defaults::per_config_per_second")]
    pub per_config_per_second: u32,
}

mod defaults {
    pub fn timeout() -> String {
        "10s".into()
    }
    pub fn max_attempts() -> u32 {
        5
    }
    pub fn backoff() -> String {
        "500ms".into()
    }
    pub fn max_backoff() -> String {
        "30s".into()
    }
    pub fn queue_per_destination() -> u32 {
        1000
    }
    pub fn max_queued() -> u32 {
        10_000
    }
    pub fn max_queued_bytes() -> u64 {
        64 * 1024 * 1024
    }
    pub fn max_body_bytes() -> u64 {
        1024 * 1024
    }
    pub fn per_config_per_second() -> u32 {
        10
    }
}

/// `[[push_relay.keys]]`: 32 random bytes, base64, from a file or an
/// environment variable (never inline: it is a secret every replica
/// shares).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealKeySection {
    pub kid: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub env: Option<String>,
}

/// The checked relay.
#[derive(Debug, Clone)]
pub struct PushRelay {
    /// `callback_base` without a trailing `/`.
    pub callback_base: String,
    pub sealer: Arc<Sealer>,
    pub timeout: Duration,
    pub max_attempts: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub queue_per_destination: usize,
    pub max_queued: usize,
    pub max_queued_bytes: usize,
    pub max_body_bytes: usize,
    pub per_config_per_second: u32,
}

type Problems = Vec<(String, String)>;

/// Checks `[push_relay]`: `None` when it is off; `(field, message)` for
/// each problem, the field under `push_relay`.
pub fn push_relay(section: &PushRelaySection) -> Result<Option<PushRelay>, Problems> {
    if !section.enabled {
        return Ok(None);
    }
    let mut problems = Problems::new();
    let callback_base = callback_base(section.callback_base.as_deref(), &mut problems);
    let sealer = sealer(section, &mut problems);
    let mut duration = |field: &str, text: &str| {
        crate::duration::positive(text)
            .map_err(|why| problems.push((field.into(), why)))
            .ok()
    };
    let (timeout, backoff, max_backoff) = (
        duration("timeout", &section.timeout),
        duration("backoff", &section.backoff),
        duration("max_backoff", &section.max_backoff),
    );
    let counts = [
        ("max_attempts", section.max_attempts),
        ("queue_per_destination", section.queue_per_destination),
        ("max_queued", section.max_queued),
        ("per_config_per_second", section.per_config_per_second),
    ];
    for (field, value) in counts {
        if value == 0 {
            problems.push((field.into(), "must be at least 1".into()));
        }
    }
    if section.max_body_bytes < 1024 {
        problems.push(("max_body_bytes".into(), "must be at least 1024".into()));
    }
    if section.max_queued_bytes < section.max_body_bytes {
        let why = "must be at least max_body_bytes (one notification must fit)";
        problems.push(("max_queued_bytes".into(), why.into()));
    }
    match (callback_base, sealer, timeout, backoff, max_backoff) {
        (Some(callback_base), Some(sealer), Some(timeout), Some(backoff), Some(max_backoff))
            if problems.is_empty() =>
        {
            Ok(Some(PushRelay {
                callback_base,
                sealer: Arc::new(sealer),
                timeout,
                max_attempts: section.max_attempts,
                backoff,
                max_backoff,
                queue_per_destination: section.queue_per_destination as usize,
                max_queued: section.max_queued as usize,
                max_queued_bytes: usize::try_from(section.max_queued_bytes).unwrap_or(usize::MAX),
                max_body_bytes: usize::try_from(section.max_body_bytes).unwrap_or(usize::MAX),
                per_config_per_second: section.per_config_per_second,
            }))
        }
        _ => Err(problems),
    }
}

/// An absolute http(s) URL without a query: `{callback_base}/push/{id}`.
fn callback_base(base: Option<&str>, problems: &mut Problems) -> Option<String> {
    let field = "callback_base".to_string();
    let Some(base) = base else {
        problems.push((field, "is required with enabled = true: an address the agents reach this gateway at (e.g. http://a2a-gateway.agents.svc:8080)".into()));
        return None;
    };
    let uri: http::Uri = match base.parse() {
        Ok(uri) => uri,
        Err(_) => {
            problems.push((field, "is not a valid URL".into()));
            return None;
        }
    };
    let absolute = matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some();
    if !absolute || uri.query().is_some() {
        problems.push((
            field,
            "must be an absolute http:// or https:// URL without a query".into(),
        ));
        return None;
    }
    Some(base.trim_end_matches('/').to_string())
}

/// The keys, the active one first.
fn sealer(section: &PushRelaySection, problems: &mut Problems) -> Option<Sealer> {
    if section.keys.is_empty() {
        let why = "name at least one key: 32 random bytes, base64 (openssl rand -base64 32)";
        problems.push(("keys".into(), why.into()));
        return None;
    }
    let mut keys = Vec::new();
    for (i, k) in section.keys.iter().enumerate() {
        match seal_key(k) {
            Ok(key) => keys.push(key),
            Err((field, why)) => problems.push((format!("keys[{i}].{field}"), why)),
        }
    }
    let active = section
        .active
        .as_deref()
        .or(section.keys.first().map(|k| k.kid.as_str()));
    let Some(position) = keys.iter().position(|k| Some(k.kid.as_str()) == active) else {
        if keys.len() == section.keys.len() {
            problems.push(("active".into(), "names no key".into()));
        }
        return None;
    };
    if keys.len() != section.keys.len() {
        return None;
    }
    let mut kids: Vec<&str> = keys.iter().map(|k| k.kid.as_str()).collect();
    kids.sort_unstable();
    if kids.windows(2).any(|w| w[0] == w[1]) {
        problems.push(("keys".into(), "each kid must be different".into()));
        return None;
    }
    keys.swap(0, position);
    Some(Sealer::new(keys))
}

fn seal_key(k: &SealKeySection) -> Result<SealKey, (String, String)> {
    let (text, field) = match (&k.file, &k.env) {
        (Some(path), None) => (
            std::fs::read_to_string(path)
                .map_err(|e| ("file".to_string(), format!("cannot read {path}: {e}")))?,
            "file",
        ),
        (None, Some(var)) => (
            std::env::var(var).map_err(|_| {
                (
                    "env".to_string(),
                    format!("environment variable {var} is not set"),
                )
            })?,
            "env",
        ),
        _ => return Err(("file".into(), "give exactly one of file or env".into())),
    };
    let text = text.trim();
    let bytes = (base64::engine::general_purpose::STANDARD.decode(text))
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
        .map_err(|_| {
            (
                field.to_string(),
                "is not base64 (openssl rand -base64 32 writes one)".to_string(),
            )
        })?;
    SealKey::new(&k.kid, &bytes).map_err(|why| (field.to_string(), why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> PushRelaySection {
        toml::from_str(text).unwrap()
    }

    fn key_file(name: &str, text: &str) -> String {
        let path = std::env::temp_dir().join(format!("a2a-gw-relay-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn off_by_default() {
        assert!(push_relay(&section("")).unwrap().is_none());
    }

    #[test]
    fn a_relay_with_two_keys_seals_with_the_active_one() {
        let (a, b) = (
            key_file(
                "a",
                &base64::engine::general_purpose::STANDARD.encode([1u8; 32]),
            ),
            key_file(
                "b",
                &base64::engine::general_purpose::STANDARD.encode([2u8; 32]),
            ),
        );
        let text = format!("enabled = true\ncallback_base = \"http://gw.internal:8080/\"\nactive = \"b\"\n[[keys]]\nkid = \"a\"\nfile = \"{a}\"\n[[keys]]\nkid = \"b\"\nfile = \"{b}\"\n");
        let relay = push_relay(&section(&text)).unwrap().unwrap();
        assert_eq!(relay.callback_base, "http://gw.internal:8080");
        assert_eq!(relay.max_attempts, 5);
        assert_eq!(relay.timeout, Duration::from_secs(10));
        let config = crate::push_relay::seal::ClientConfig {
            url: "https://c.example/h".into(),
            token: None,
            authentication: None,
            version: "1.0".into(),
            binding: "GRPC".into(),
            agent_version: "1.0".into(),
            task_id: "t".into(),
            config_id: None,
            agent_token: "g".into(),
            ..Default::default()
        };
        assert!(relay.sealer.seal(&config).unwrap().starts_with("b."));
    }

    #[test]
    fn problems_are_named() {
        let short = key_file("short", "c2hvcnQ=");
        let cases = [
            ("enabled = true\n[[keys]]\nkid = \"a\"\nenv = \"A2A_GW_TEST_UNSET_RELAY_KEY\"\n", "callback_base"),
            ("enabled = true\ncallback_base = \"gw:8080\"\n", "callback_base"),
            ("enabled = true\ncallback_base = \"http://gw\"\n", "keys"),
            ("enabled = true\ncallback_base = \"http://gw\"\n[[keys]]\nkid = \"a\"\nenv = \"A2A_GW_TEST_UNSET_RELAY_KEY\"\n", "keys[0].env"),
            (&format!("enabled = true\ncallback_base = \"http://gw\"\n[[keys]]\nkid = \"a\"\nfile = \"{short}\"\n"), "keys[0].file"),
            (&format!("enabled = true\ncallback_base = \"http://gw\"\nactive = \"z\"\n[[keys]]\nkid = \"a\"\nfile = \"{short}\"\n"), "keys[0].file"),
            ("enabled = true\ncallback_base = \"http://gw\"\nmax_attempts = 0\n[[keys]]\nkid = \"a\"\nenv = \"A2A_GW_TEST_UNSET_RELAY_KEY\"\n", "max_attempts"),
        ];
        for (text, field) in cases {
            let problems = push_relay(&section(text)).unwrap_err();
            assert!(
                problems.iter().any(|(f, _)| f == field),
                "{text}: {problems:?}"
            );
        }
    }
}

//! `[rate_limits.store]`: the shared store as written, and its checks.
//!
//! The password is never written inline (nor in the URL): it comes from an
//! environment variable or a file, is read when the config is loaded, and
//! is left out of every `Debug` and log line.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::Deserialize;

use crate::cidr::{problem, Problems};

/// Default key prefix (the hash tag that keeps every key in one slot).
pub const DEFAULT_KEY_PREFIX: &str = "a2a-gateway";
/// Default time to connect (and authenticate) to the store.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Default time one decision may take: a few round trips on a LAN. A call
/// never waits longer than this for the store.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5);

/// `[rate_limits.store]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    /// One Redis (or Valkey): `redis://host:port` or `rediss://` for TLS.
    pub url: Option<String>,
    /// A Redis Cluster: its seed nodes.
    pub urls: Option<Vec<String>>,
    pub key_prefix: Option<String>,
    pub connect_timeout: Option<String>,
    pub timeout: Option<String>,
    /// An ACL user (with the password below).
    pub username: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<String>,
    /// PEM roots to trust for `rediss://` (else the system's).
    pub ca_file: Option<String>,
    pub on_store_error: Option<OnStoreError>,
    /// Replicas sharing the limits: while the store cannot answer, each
    /// keeps `1/expected_replicas` of every limit locally.
    pub expected_replicas: Option<u32>,
}

/// What a call meets while the store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnStoreError {
    /// The in-memory limits, each limit divided among the replicas.
    #[default]
    Local,
    /// No limit at all.
    Allow,
    /// 503 (-32071) with Retry-After.
    Deny,
}

impl OnStoreError {
    pub fn label(self) -> &'static str {
        match self {
            OnStoreError::Local => "local",
            OnStoreError::Allow => "allow",
            OnStoreError::Deny => "deny",
        }
    }
}

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nodes {
    Single(String),
    Cluster(Vec<String>),
}

/// A password, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(pub String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Validated `[rate_limits.store]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub nodes: Nodes,
    pub key_prefix: String,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub username: Option<String>,
    pub password: Option<Password>,
    /// The PEM text of `ca_file`.
    pub ca: Option<Vec<u8>>,
    pub on_store_error: OnStoreError,
    pub expected_replicas: NonZeroU32,
}

impl StoreSettings {
    /// The store's address for logs and `/readyz`: scheme, host and port
    /// of each node, never a credential.
    pub fn describe(&self) -> String {
        match &self.nodes {
            Nodes::Single(url) => redact(url),
            Nodes::Cluster(urls) => {
                let nodes: Vec<String> = urls.iter().map(|u| redact(u)).collect();
                format!("cluster {}", nodes.join(","))
            }
        }
    }
}

/// `scheme://host:port` of a store URL (a user name and path dropped).
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}")
}

/// Validates `[rate_limits.store]`, pushing each problem under
/// `store.<field>`.
pub fn settings(section: &StoreSection, problems: &mut Problems) -> Option<StoreSettings> {
    let before = problems.len();
    let nodes = nodes(section, problems);
    let prefix = section
        .key_prefix
        .clone()
        .unwrap_or_else(|| DEFAULT_KEY_PREFIX.into());
    if prefix.is_empty() || prefix.contains(['{', '}']) {
        problems.push(problem(
            "store.key_prefix",
            "must be non-empty and hold no '{' or '}' (it is the keys' hash tag)",
        ));
    }
    let duration = |field: &str, text: &Option<String>, default, problems: &mut Problems| match text
    {
        None => default,
        Some(t) => crate::duration::positive(t).unwrap_or_else(|why| {
            problems.push(problem(format!("store.{field}"), why));
            default
        }),
    };
    let connect_timeout = duration(
        "connect_timeout",
        &section.connect_timeout,
        DEFAULT_CONNECT_TIMEOUT,
        problems,
    );
    let timeout = duration("timeout", &section.timeout, DEFAULT_TIMEOUT, problems);
    let password = password(section, problems);
    let ca = section.ca_file.as_ref().and_then(|path| {
        std::fs::read(path)
            .map_err(|e| {
                problems.push(problem("store.ca_file", format!("cannot read {path}: {e}")))
            })
            .ok()
    });
    let expected_replicas = match section.expected_replicas {
        None => NonZeroU32::MIN,
        Some(n) => NonZeroU32::new(n).unwrap_or_else(|| {
            problems.push(problem("store.expected_replicas", "must be greater than 0"));
            NonZeroU32::MIN
        }),
    };
    if problems.len() > before {
        return None;
    }
    let settings = StoreSettings {
        nodes: nodes?,
        key_prefix: prefix,
        connect_timeout,
        timeout,
        username: section.username.clone(),
        password,
        ca,
        on_store_error: section.on_store_error.unwrap_or_default(),
        expected_replicas,
    };
    // The client is made here too (no connection): roots that are not
    // PEM certificates are a config problem, not a start-up surprise.
    if let Err(e) = super::client(&settings) {
        problems.push(problem("store", e.to_string()));
        return None;
    }
    Some(settings)
}

/// `url` or `urls`, exactly one, each a `redis://` or `rediss://` URL
/// without a password.
fn nodes(section: &StoreSection, problems: &mut Problems) -> Option<Nodes> {
    match (&section.url, &section.urls) {
        (Some(url), None) => {
            store_url("store.url", url, problems).then(|| Nodes::Single(url.clone()))
        }
        (None, Some(urls)) if !urls.is_empty() => {
            let ok = urls.iter().enumerate().fold(true, |ok, (i, u)| {
                store_url(&format!("store.urls[{i}]"), u, problems) && ok
            });
            ok.then(|| Nodes::Cluster(urls.clone()))
        }
        (None, Some(_)) => {
            problems.push(problem("store.urls", "must name at least one node"));
            None
        }
        (Some(_), Some(_)) => {
            problems.push(problem(
                "store",
                "set url (one Redis) or urls (a cluster), not both",
            ));
            None
        }
        (None, None) => {
            problems.push(problem("store", "set url (one Redis) or urls (a cluster)"));
            None
        }
    }
}

/// Whether `url` is a store URL the client can use (a problem if not).
fn store_url(field: &str, url: &str, problems: &mut Problems) -> bool {
    let Some(parsed) = redis::parse_redis_url(url) else {
        problems.push(problem(
            field,
            format!(
                "expected redis://host:port or rediss://host:port, not \"{}\"",
                redact(url)
            ),
        ));
        return false;
    };
    if !matches!(parsed.scheme(), "redis" | "rediss") || parsed.host_str().is_none() {
        problems.push(problem(
            field,
            format!(
                "expected redis://host:port or rediss://host:port, not \"{}\"",
                redact(url)
            ),
        ));
        return false;
    }
    if parsed.password().is_some() {
        problems.push(problem(
            field,
            "holds a password: give it in password_env or password_file instead",
        ));
        return false;
    }
    true
}

/// The password from `password_env` or `password_file` (at most one).
fn password(section: &StoreSection, problems: &mut Problems) -> Option<Password> {
    match (&section.password_env, &section.password_file) {
        (Some(var), None) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(Password(v)),
            _ => {
                let why = format!("environment variable {var} is not set");
                problems.push(problem("store.password_env", why));
                None
            }
        },
        (None, Some(path)) => match std::fs::read_to_string(path) {
            Ok(v) if !v.trim_end_matches(['\r', '\n']).is_empty() => {
                Some(Password(v.trim_end_matches(['\r', '\n']).to_string()))
            }
            _ => {
                let why = format!("cannot read a password from {path}");
                problems.push(problem("store.password_file", why));
                None
            }
        },
        (Some(_), Some(_)) => {
            let why = "give password_env or password_file, not both";
            problems.push(problem("store", why));
            None
        }
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<StoreSettings, Problems> {
        let section: StoreSection = toml::from_str(text).unwrap();
        let mut problems = Vec::new();
        match settings(&section, &mut problems) {
            Some(s) if problems.is_empty() => Ok(s),
            _ => Err(problems),
        }
    }

    fn fields(problems: &Problems) -> Vec<&str> {
        problems.iter().map(|(f, _)| f.as_str()).collect()
    }

    #[test]
    fn defaults() {
        let s = check("url = \"redis://127.0.0.1:6379\"").unwrap();
        assert_eq!(s.nodes, Nodes::Single("redis://127.0.0.1:6379".into()));
        assert_eq!(s.key_prefix, DEFAULT_KEY_PREFIX);
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        assert_eq!(s.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(s.on_store_error, OnStoreError::Local);
        assert_eq!(s.expected_replicas.get(), 1);
        assert_eq!(s.describe(), "redis://127.0.0.1:6379");
    }

    #[test]
    fn every_field() {
        std::env::set_var("A2A_GW_TEST_REDIS_PASSWORD", "pw-from-env");
        let s = check(
            r#"
urls = ["rediss://a:7000", "rediss://b:7001"]
key_prefix = "gw-eu"
connect_timeout = "250ms"
timeout = "3ms"
username = "gateway"
password_env = "A2A_GW_TEST_REDIS_PASSWORD"
on_store_error = "deny"
expected_replicas = 3
"#,
        )
        .unwrap();
        assert_eq!(
            s.nodes,
            Nodes::Cluster(vec!["rediss://a:7000".into(), "rediss://b:7001".into()])
        );
        assert_eq!(s.timeout, Duration::from_millis(3));
        assert_eq!(s.password, Some(Password("pw-from-env".into())));
        assert_eq!(s.on_store_error, OnStoreError::Deny);
        assert_eq!(s.expected_replicas.get(), 3);
        assert_eq!(s.describe(), "cluster rediss://a:7000,rediss://b:7001");
        // Never printed.
        assert!(!format!("{s:?}").contains("pw-from-env"));
    }

    #[test]
    fn problems_are_named() {
        let p = check("url = \"redis://:secret@h:6379\"").unwrap_err();
        assert_eq!(fields(&p), ["store.url"]);
        assert!(p[0].1.contains("password_env"), "{p:?}");
        assert!(!p[0].1.contains("secret"), "{p:?}");
        let p = check("url = \"http://h:6379\"").unwrap_err();
        assert_eq!(fields(&p), ["store.url"]);
        let p = check("").unwrap_err();
        assert_eq!(fields(&p), ["store"]);
        let p = check("url = \"redis://h\"\nurls = [\"redis://h\"]").unwrap_err();
        assert_eq!(fields(&p), ["store"]);
        let p = check(
            r#"
url = "redis://h:1"
key_prefix = "{x}"
timeout = "0ms"
connect_timeout = "soon"
expected_replicas = 0
password_env = "A2A_GW_TEST_UNSET_VARIABLE"
ca_file = "/nonexistent/ca.pem"
"#,
        )
        .unwrap_err();
        assert_eq!(
            fields(&p),
            [
                "store.key_prefix",
                "store.connect_timeout",
                "store.timeout",
                "store.password_env",
                "store.ca_file",
                "store.expected_replicas"
            ]
        );
        assert!(toml::from_str::<StoreSection>("password = \"x\"").is_err());
        assert!(toml::from_str::<StoreSection>("on_store_error = \"maybe\"").is_err());
    }
}

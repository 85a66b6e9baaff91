//! TLS to the agents: `https://` upstream URLs, verified against Mozilla's
//! roots or the upstream's own CA bundle, with an optional client
//! certificate (mutual TLS to the agent) and server-name override.
//!
//! Everything is read and built when the config is loaded, so `check`
//! reports a bad file against its field, and a reload that finds a file
//! changed rebuilds that upstream's connection pool (the settings compare
//! by the files' contents, not their paths).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use hyper_rustls::ConfigBuilderExt;
use rustls::{ClientConfig, ConfigBuilder, RootCertStore, WantsVerifier};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{provider, read_certs, read_key, read_roots};
use crate::cidr::{problem, Problems};

/// `[upstreams.tls]` as written in the TOML file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTlsSection {
    /// PEM bundle of the CAs that may sign the agent's certificate, instead
    /// of Mozilla's roots.
    #[serde(default)]
    pub ca: Option<String>,
    /// PEM certificate chain the gateway presents to the agent (mutual TLS).
    #[serde(default)]
    pub cert: Option<String>,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    #[serde(default)]
    pub key: Option<String>,
    /// The name the agent's certificate must carry, and the SNI sent,
    /// instead of each URL's host (an agent reached by IP, or through a
    /// tunnel).
    #[serde(default)]
    pub server_name: Option<String>,
}

impl UpstreamTlsSection {
    /// Nothing set: the defaults (an empty or all-commented section).
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none() && self.server_name.is_none()
    }
}

/// The client side of TLS for one upstream, ready to connect with.
#[derive(Clone)]
pub struct UpstreamTls {
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub server_name: Option<ServerName<'static>>,
    config: Arc<ClientConfig>,
    /// SHA-256 over the files' contents and the server name: two settings
    /// are the same when this is.
    fingerprint: [u8; 32],
}

impl PartialEq for UpstreamTls {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
    }
}

impl std::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTls")
            .field("ca", &self.ca)
            .field("cert", &self.cert)
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl UpstreamTls {
    /// The rustls configuration, without ALPN (the connector sets it).
    pub fn client_config(&self) -> ClientConfig {
        (*self.config).clone()
    }

    /// True when anything differs from the default (Mozilla's roots, no
    /// client certificate, each URL's own host name).
    pub fn is_configured(&self) -> bool {
        self.fingerprint != [0; 32]
    }
}

/// TLS 1.3 and 1.2 with the ring provider, as the listener uses.
fn client_builder() -> Result<ConfigBuilder<ClientConfig, WantsVerifier>, Problems> {
    ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| vec![problem("", format!("TLS set-up failed: {e}"))])
}

/// What an `https://` URL gets without a `[upstreams.tls]` section: Mozilla's
/// roots, no client certificate. Built once and shared.
pub fn default_settings() -> Result<UpstreamTls, Problems> {
    static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let config = match DEFAULT.get() {
        Some(config) => config.clone(),
        None => {
            let built = client_builder()?.with_webpki_roots().with_no_client_auth();
            DEFAULT.get_or_init(|| Arc::new(built)).clone()
        }
    };
    Ok(UpstreamTls {
        ca: None,
        cert: None,
        server_name: None,
        config,
        fingerprint: [0; 32],
    })
}

/// Validates a `[upstreams.tls]` section and builds its client
/// configuration: `(field, message)` for every problem, relative to the
/// section.
pub fn settings(section: &UpstreamTlsSection) -> Result<UpstreamTls, Problems> {
    if section.is_empty() {
        return default_settings();
    }
    let mut problems = Problems::new();
    let mut digest = Sha256::new();
    let server_name = match section.server_name.as_deref() {
        None => None,
        Some(name) => server_name(name, &mut digest, &mut problems),
    };
    let ca = section.ca.as_deref().map(PathBuf::from);
    let roots = roots(ca.as_deref(), &mut digest, &mut problems);
    let cert = section.cert.as_deref().map(PathBuf::from);
    let key = section.key.as_deref().map(PathBuf::from);
    let identity = identity(cert.as_deref(), key.as_deref(), &mut digest, &mut problems);
    let (Some(roots), Some(identity), true) = (roots, identity, problems.is_empty()) else {
        return Err(problems);
    };
    let builder = match roots {
        Some(roots) => client_builder()?.with_root_certificates(roots),
        None => client_builder()?.with_webpki_roots(),
    };
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((certs, key)) => builder.with_client_auth_cert(certs, key).map_err(|e| {
            vec![problem(
                "key",
                format!("the client certificate and key cannot be used together: {e}"),
            )]
        })?,
    };
    Ok(UpstreamTls {
        ca,
        cert,
        server_name,
        config: Arc::new(config),
        fingerprint: digest.finalize().into(),
    })
}

/// Adds one part of the settings to their fingerprint, its length first so
/// that two parts cannot run together into a third.
fn fingerprint(digest: &mut Sha256, what: &[u8]) {
    digest.update((what.len() as u64).to_be_bytes());
    digest.update(what);
}

/// `server_name`: a DNS name or an IP address (brackets allowed).
fn server_name(
    name: &str,
    digest: &mut Sha256,
    problems: &mut Problems,
) -> Option<ServerName<'static>> {
    match ServerName::try_from(name.trim_matches(['[', ']']).to_string()) {
        Ok(n) => {
            fingerprint(digest, name.as_bytes());
            Some(n)
        }
        Err(_) => {
            problems.push(problem(
                "server_name",
                format!("\"{name}\" is not a DNS name or IP address"),
            ));
            None
        }
    }
}

/// `ca`: `Some(None)` for Mozilla's roots, `None` when the bundle is bad.
fn roots(
    ca: Option<&Path>,
    digest: &mut Sha256,
    problems: &mut Problems,
) -> Option<Option<RootCertStore>> {
    let Some(path) = ca else {
        return Some(None);
    };
    match read_roots(path) {
        Ok(roots) => {
            for anchor in roots.roots.iter() {
                fingerprint(digest, anchor.subject.as_ref());
                fingerprint(digest, anchor.subject_public_key_info.as_ref());
            }
            Some(Some(roots))
        }
        Err(m) => {
            problems.push(problem("ca", m));
            None
        }
    }
}

/// A client certificate and its key.
type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// `cert` and `key`, which come together: `Some(None)` for neither, `None`
/// when either is missing or unreadable.
fn identity(
    cert: Option<&Path>,
    key: Option<&Path>,
    digest: &mut Sha256,
    problems: &mut Problems,
) -> Option<Option<Identity>> {
    match (cert, key) {
        (None, None) => Some(None),
        (Some(_), None) => {
            problems.push(problem(
                "key",
                "cert is set but key is not: the client certificate needs its private key",
            ));
            None
        }
        (None, Some(_)) => {
            problems.push(problem(
                "cert",
                "key is set but cert is not: the private key needs its certificate",
            ));
            None
        }
        (Some(cert_path), Some(key_path)) => {
            let certs = read_certs(cert_path)
                .map_err(|m| problems.push(problem("cert", m)))
                .ok();
            let key = read_key(key_path, &provider())
                .map_err(|m| problems.push(problem("key", m)))
                .ok();
            let (certs, (key, _)) = (certs?, key?);
            for c in &certs {
                fingerprint(digest, c.as_ref());
            }
            fingerprint(digest, key.secret_der());
            Some(Some((certs, key)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> UpstreamTlsSection {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn empty_section_is_the_default() {
        let tls = settings(&section("")).unwrap();
        assert!(!tls.is_configured());
        assert_eq!(tls, default_settings().unwrap());
    }

    #[test]
    fn server_name_alone_is_configured_and_compared() {
        let a = settings(&section("server_name = \"agent.internal\"")).unwrap();
        let b = settings(&section("server_name = \"agent.internal\"")).unwrap();
        let c = settings(&section("server_name = \"other.internal\"")).unwrap();
        assert!(a.is_configured());
        assert_eq!(a, b);
        assert_ne!(a, c);
        let ip = settings(&section("server_name = \"10.0.0.7\"")).unwrap();
        assert!(matches!(ip.server_name, Some(ServerName::IpAddress(_))));
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        let got = settings(&section(
            "server_name = \"not a name!\"\nca = \"/nonexistent/ca.pem\"\ncert = \"/nonexistent/c.pem\"\n",
        ))
        .unwrap_err();
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["server_name", "ca", "key"], "{got:?}");
        assert!(
            got[1].1.contains("cannot read /nonexistent/ca.pem"),
            "{got:?}"
        );
        let got = settings(&section("key = \"/k.pem\"")).unwrap_err();
        assert_eq!(got[0].0, "cert");
    }
}

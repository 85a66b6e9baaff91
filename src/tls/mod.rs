//! TLS termination with rustls. (Being written: see the signatures.)
//!
//! `[tls]` in the config; certificates reloaded when the files change or on
//! SIGHUP without dropping open connections.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

/// `[tls]` as written in the TOML file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain (leaf first).
    pub cert: String,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: String,
    /// PEM CA bundle used to verify client certificates.
    #[serde(default)]
    pub client_ca: Option<String>,
    /// "none" | "optional" | "required" (default: "required" when
    /// client_ca is set, else "none").
    #[serde(default)]
    pub client_auth: Option<String>,
    /// How often the files are checked for changes.
    #[serde(default = "default_reload_interval")]
    pub reload_interval: String,
}

fn default_reload_interval() -> String {
    "10s".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    /// A certificate is asked for and, when given, must verify; callers
    /// without one are left to the auth schemes.
    Optional,
    Required,
}

#[derive(Debug, Clone)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
    pub reload_interval: Duration,
}

/// Validates a `[tls]` section: `(field, message)` for every problem
/// (paths relative to `tls.`). Files are read and parsed here so `check`
/// reports unreadable or invalid PEM.
pub fn settings(section: &TlsSection) -> Result<TlsSettings, Vec<(String, String)>> {
    let _ = section;
    Err(vec![(String::new(), "TLS is not implemented yet".into())])
}

/// The verified client certificate of a connection, for mutualTLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCert {
    /// The subject DN, e.g. "CN=alice,O=Example".
    pub subject: String,
    /// DNS names, URIs, emails and IPs from the subjectAltName.
    pub sans: Vec<String>,
}

/// The live TLS configuration; reloads swap it for new connections only.
pub struct TlsState {
    _settings: TlsSettings,
}

impl TlsState {
    pub fn load(settings: &TlsSettings) -> Result<Arc<Self>, String> {
        let _ = settings;
        Err("TLS is not implemented yet".into())
    }

    /// The acceptor for the next connection.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        unimplemented!()
    }

    /// Re-reads the files; the old configuration stays on any error.
    pub fn reload(&self) -> Result<(), String> {
        Err("TLS is not implemented yet".into())
    }

    /// Watches the files (every reload_interval) and SIGHUP until dropped.
    pub fn watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async {})
    }
}

/// The verified peer certificate of an established connection.
pub fn peer_cert(conn: &rustls::ServerConnection) -> Option<PeerCert> {
    let _ = conn;
    None
}

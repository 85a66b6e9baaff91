//! TLS termination with rustls.
//!
//! `[tls]` in the config; certificates reloaded when the files change or on
//! SIGHUP without dropping open connections.
//!
//! The files are read and parsed twice over: once by [`settings`] so that
//! `a2a-gateway check` reports every problem with the field it belongs to,
//! and again by [`TlsState::load`] / [`TlsState::reload`], which build the
//! rustls configuration the listener serves. A reload builds a complete new
//! configuration before swapping it in, so a half-written or broken file
//! never replaces a working certificate.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;
use rustls::{InconsistentKeys, ServerConfig};
use rustls_pki_types::CertificateDer;
use serde::Deserialize;

use crate::cidr::{problem, Problems};

mod files;
mod peer;
pub mod upstream;

use files::{file_stamps, read_certs, read_key, read_roots, Stamp};
pub use peer::{describe, peer_cert, PeerCert};

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

impl ClientAuth {
    fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "required",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
    pub reload_interval: Duration,
}

impl TlsSettings {
    /// The files a reload watches: certificate, key, and client CA.
    fn files(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.cert, &self.key]
            .into_iter()
            .chain(self.client_ca.as_ref())
    }
}

/// Validates a `[tls]` section: `(field, message)` for every problem
/// (paths relative to `tls.`). Files are read and parsed here so `check`
/// reports unreadable or invalid PEM.
pub fn settings(section: &TlsSection) -> Result<TlsSettings, Problems> {
    let mut problems = Problems::new();
    let reload_interval = reload_interval(&section.reload_interval, &mut problems);
    let client_ca = section.client_ca.as_deref().map(PathBuf::from);
    let client_auth = client_auth(
        section.client_auth.as_deref(),
        client_ca.is_some(),
        &mut problems,
    );
    let settings = TlsSettings {
        cert: PathBuf::from(&section.cert),
        key: PathBuf::from(&section.key),
        client_ca,
        client_auth,
        reload_interval,
    };
    if let Err(mut found) = build(&settings) {
        problems.append(&mut found);
    }
    if problems.is_empty() {
        Ok(settings)
    } else {
        Err(problems)
    }
}

fn reload_interval(text: &str, problems: &mut Problems) -> Duration {
    crate::duration::positive(text).unwrap_or_else(|why| {
        problems.push(problem("reload_interval", why));
        Duration::ZERO
    })
}

/// `client_auth`: `required` when only `client_ca` is given; any asking
/// for client certificates needs `client_ca`.
fn client_auth(asked: Option<&str>, has_ca: bool, problems: &mut Problems) -> ClientAuth {
    let client_auth = match asked {
        None if has_ca => ClientAuth::Required,
        None | Some("none") => ClientAuth::None,
        Some("optional") => ClientAuth::Optional,
        Some("required") => ClientAuth::Required,
        Some(other) => {
            problems.push(problem(
                "client_auth",
                format!("expected \"none\", \"optional\" or \"required\", not \"{other}\""),
            ));
            ClientAuth::None
        }
    };
    if client_auth != ClientAuth::None && !has_ca {
        problems.push(problem(
            "client_auth",
            format!(
                "\"{}\" needs client_ca: the PEM bundle of the CAs whose client certificates are accepted",
                client_auth.as_str()
            ),
        ));
        // Checked; the files are still read.
        return ClientAuth::None;
    }
    client_auth
}

pub struct TlsState {
    settings: TlsSettings,
    config: ArcSwap<ServerConfig>,
    /// What the files looked like when they were last read; also
    /// serialises reloads.
    stamps: Mutex<Vec<Option<Stamp>>>,
    /// Never sent on: dropping the state closes it, which ends `watch`.
    closed: tokio::sync::watch::Sender<()>,
}

impl std::fmt::Debug for TlsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsState")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl TlsState {
    pub fn load(settings: &TlsSettings) -> Result<Arc<Self>, String> {
        let stamps = file_stamps(settings.files());
        let built = build(settings).map_err(|p| explain(&p))?;
        built.log("TLS certificate loaded");
        let (closed, _) = tokio::sync::watch::channel(());
        Ok(Arc::new(Self {
            settings: settings.clone(),
            config: ArcSwap::from_pointee(built.config),
            stamps: Mutex::new(stamps),
            closed,
        }))
    }

    /// The acceptor for the next connection.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.load_full())
    }

    /// The configuration new connections get (tests and diagnostics).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.config.load_full()
    }

    /// Re-reads the files; the old configuration stays on any error.
    pub fn reload(&self) -> Result<(), String> {
        let mut stamps = self.stamps.lock().unwrap_or_else(PoisonError::into_inner);
        // Stamped before reading: a write that lands while we read shows
        // up as a change on the next check.
        *stamps = file_stamps(self.settings.files());
        match build(&self.settings) {
            Ok(built) => {
                built.log("TLS certificate reloaded; new connections use it");
                self.config.store(Arc::new(built.config));
                Ok(())
            }
            Err(problems) => {
                let message = explain(&problems);
                tracing::warn!(error = %message, "TLS reload failed; the previous certificate stays in use");
                Err(message)
            }
        }
    }

    /// Reloads when a file's modification time, size or identity changed
    /// since it was last read; `None` when nothing changed.
    fn reload_if_changed(&self) -> Option<Result<(), String>> {
        let now = file_stamps(self.settings.files());
        let changed = *self.stamps.lock().unwrap_or_else(PoisonError::into_inner) != now;
        if !changed {
            return None;
        }
        tracing::info!("TLS files changed on disk; reloading");
        Some(self.reload())
    }

    /// Watches the files (every reload_interval) and SIGHUP until dropped.
    pub fn watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let mut closed = self.closed.subscribe();
        // A zero period would make tokio's interval panic.
        let period = self.settings.reload_interval.max(Duration::from_millis(10));
        tokio::spawn(async move {
            let mut hangup = Hangup::new();
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let forced = tokio::select! {
                    _ = tick.tick() => false,
                    () = hangup.recv() => true,
                    // Only ever an error: the state was dropped.
                    _ = closed.changed() => return,
                };
                let Some(state) = weak.upgrade() else { return };
                if forced {
                    tracing::info!("SIGHUP: reloading the TLS certificate");
                }
                // File reads stay off the runtime's worker threads.
                let _ = tokio::task::spawn_blocking(move || {
                    if forced {
                        let _ = state.reload();
                    } else {
                        let _ = state.reload_if_changed();
                    }
                })
                .await;
            }
        })
    }
}

/// SIGHUP as a stream of wake-ups; never fires where there are no signals.
struct Hangup {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Hangup {
    #[cfg(unix)]
    fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(s) => Self { signal: Some(s) },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; the TLS files are still checked every reload_interval");
                Self { signal: None }
            }
        }
    }

    #[cfg(not(unix))]
    fn new() -> Self {
        Self {}
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = &mut self.signal {
            if signal.recv().await.is_some() {
                return;
            }
            self.signal = None;
        }
        std::future::pending::<()>().await
    }
}

/// Problems as one line for an error message: `tls.key: …; tls.cert: …`.
fn explain(problems: &[(String, String)]) -> String {
    problems
        .iter()
        .map(|(field, message)| {
            if field.is_empty() {
                format!("tls: {message}")
            } else {
                format!("tls.{field}: {message}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The ring provider, always named explicitly: the process default is
/// never consulted.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The ALPN protocols offered, in preference order.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A server configuration and what its leaf certificate says, for the log.
struct Built {
    config: ServerConfig,
    subject: String,
    not_after: String,
    currently_valid: bool,
}

impl Built {
    fn log(&self, what: &str) {
        if self.currently_valid {
            tracing::info!(subject = %self.subject, not_after = %self.not_after, "{what}");
        } else {
            tracing::warn!(subject = %self.subject, not_after = %self.not_after,
                "{what}, but it is expired or not yet valid: clients will refuse it");
        }
    }
}

/// Reads every file and builds the rustls configuration.
fn build(settings: &TlsSettings) -> Result<Built, Problems> {
    let provider = provider();
    let mut problems = Problems::new();
    let certs = read_certs(&settings.cert)
        .map_err(|m| problems.push(problem("cert", m)))
        .ok();
    let key = read_key(&settings.key, &provider)
        .map_err(|m| problems.push(problem("key", m)))
        .ok();
    let roots = match &settings.client_ca {
        None => Some(None),
        Some(path) => read_roots(path)
            .map_err(|m| problems.push(problem("client_ca", m)))
            .ok()
            .map(Some),
    };
    let (Some(certs), Some((key, signing_key)), Some(roots)) = (certs, key, roots) else {
        return Err(problems);
    };
    key_matches(settings, &certs, signing_key)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| vec![problem("", format!("TLS set-up failed: {e}"))])?;
    let builder = match client_verifier(settings.client_auth, roots, &provider)? {
        None => builder.with_no_client_auth(),
        Some(verifier) => builder.with_client_cert_verifier(verifier),
    };
    let (subject, not_after, currently_valid) = leaf_summary(&certs[0]);
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        vec![problem(
            "cert",
            format!(
                "the certificate in {} with the key in {} cannot be used: {e}",
                settings.cert.display(),
                settings.key.display()
            ),
        )]
    })?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(Built {
        config,
        subject,
        not_after,
        currently_valid,
    })
}

/// The key must be the certificate's (the first of the chain). A key
/// rustls cannot compare is let through.
fn key_matches(
    settings: &TlsSettings,
    certs: &[CertificateDer<'static>],
    signing_key: Arc<dyn rustls::sign::SigningKey>,
) -> Result<(), Problems> {
    match CertifiedKey::new(certs.to_vec(), signing_key).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(()),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(vec![problem(
            "key",
            format!(
                "the private key in {} does not belong to the certificate in {} (the first certificate of the chain must be the key's)",
                settings.key.display(),
                settings.cert.display()
            ),
        )]),
        Err(e) => Err(vec![problem(
            "cert",
            format!(
                "the certificate in {} cannot be used: {e}",
                settings.cert.display()
            ),
        )]),
    }
}

/// The verifier of client certificates that `auth` asks for (`None`: no
/// client authentication).
fn client_verifier(
    auth: ClientAuth,
    roots: Option<rustls::RootCertStore>,
    provider: &Arc<CryptoProvider>,
) -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, Problems> {
    let roots = match (auth, roots) {
        (ClientAuth::None, _) => return Ok(None),
        (auth, None) => {
            return Err(vec![problem(
                "client_auth",
                format!("\"{}\" needs client_ca", auth.as_str()),
            )]);
        }
        (_, Some(roots)) => roots,
    };
    let mut verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    if auth == ClientAuth::Optional {
        verifier = verifier.allow_unauthenticated();
    }
    let verifier = verifier.build().map_err(|e| {
        vec![problem(
            "client_ca",
            format!("cannot verify client certificates with it: {e}"),
        )]
    })?;
    Ok(Some(verifier))
}

fn leaf_summary(der: &CertificateDer<'_>) -> (String, String, bool) {
    match x509_parser::parse_x509_certificate(der.as_ref()) {
        Ok((_, cert)) => (
            cert.subject().to_string(),
            cert.validity().not_after.to_string(),
            cert.validity().is_valid(),
        ),
        // read_certs parsed it already.
        Err(_) => (String::new(), String::new(), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        SanType,
    };
    use rustls::RootCertStore;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::PrivateKeyDer;

    /// A directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "a2a-gateway-tls-unit-{tag}-{}-{}",
                std::process::id(),
                uuid::Uuid::new_v4()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn write(&self, name: &str, contents: &str) -> String {
            let path = self.0.join(name);
            std::fs::write(&path, contents).unwrap();
            path.to_string_lossy().into_owned()
        }

        fn path(&self, name: &str) -> String {
            self.0.join(name).to_string_lossy().into_owned()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    struct Ca {
        cert: rcgen::Certificate,
        key: KeyPair,
    }

    fn new_ca(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A leaf signed by `ca`: (cert PEM, key PEM, cert DER).
    fn leaf(ca: &Ca, cn: &str, sans: Vec<SanType>) -> (String, String, CertificateDer<'static>) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Example");
        params.subject_alt_names = sans;
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().clone())
    }

    fn localhost(ca: &Ca) -> (String, String) {
        let (cert, key, _) = leaf(
            ca,
            "localhost",
            vec![SanType::DnsName("localhost".try_into().unwrap())],
        );
        (cert, key)
    }

    fn section(cert: &str, key: &str) -> TlsSection {
        TlsSection {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
            client_auth: None,
            reload_interval: default_reload_interval(),
        }
    }

    fn fields(result: Result<TlsSettings, Problems>) -> Problems {
        match result {
            Ok(s) => panic!("expected problems, got {s:?}"),
            Err(p) => p,
        }
    }

    fn has(problems: &Problems, field: &str, needle: &str) -> bool {
        problems
            .iter()
            .any(|(f, m)| f == field && m.contains(needle))
    }

    #[test]
    fn valid_files_give_settings_with_defaults() {
        let dir = TempDir::new("valid");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let cert = dir.write("cert.pem", &cert);
        let key = dir.write("key.pem", &key);
        let s = settings(&section(&cert, &key)).unwrap();
        assert_eq!(s.client_auth, ClientAuth::None);
        assert_eq!(s.reload_interval, Duration::from_secs(10));
        assert_eq!(s.client_ca, None);

        let ca_path = dir.write("ca.pem", &ca.cert.pem());
        let mut with_ca = section(&cert, &key);
        with_ca.client_ca = Some(ca_path.clone());
        let s = settings(&with_ca).unwrap();
        assert_eq!(
            s.client_auth,
            ClientAuth::Required,
            "client_ca implies required"
        );
        assert_eq!(s.client_ca, Some(PathBuf::from(ca_path)));

        with_ca.client_auth = Some("optional".into());
        with_ca.reload_interval = "250ms".into();
        let s = settings(&with_ca).unwrap();
        assert_eq!(s.client_auth, ClientAuth::Optional);
        assert_eq!(s.reload_interval, Duration::from_millis(250));
    }

    #[test]
    fn missing_files_are_reported_per_field() {
        let dir = TempDir::new("missing");
        let mut s = section(&dir.path("nope-cert.pem"), &dir.path("nope-key.pem"));
        s.client_ca = Some(dir.path("nope-ca.pem"));
        let problems = fields(settings(&s));
        assert!(has(&problems, "cert", "cannot read"), "{problems:?}");
        assert!(has(&problems, "cert", "nope-cert.pem"), "{problems:?}");
        assert!(has(&problems, "key", "cannot read"), "{problems:?}");
        assert!(has(&problems, "client_ca", "cannot read"), "{problems:?}");
    }

    #[test]
    fn empty_paths_are_reported() {
        let problems = fields(settings(&section("", "")));
        assert!(has(&problems, "cert", "empty"), "{problems:?}");
        assert!(has(&problems, "key", "empty"), "{problems:?}");
    }

    #[test]
    fn garbage_pem_is_reported() {
        let dir = TempDir::new("garbage");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let garbage = dir.write("garbage.pem", "this is not PEM at all\n");
        let good_cert = dir.write("cert.pem", &cert);
        let good_key = dir.write("key.pem", &key);

        // A file with no certificate.
        let problems = fields(settings(&section(&garbage, &good_key)));
        assert!(
            has(&problems, "cert", "holds no certificate"),
            "{problems:?}"
        );

        // A key that is not a key: garbage, and a certificate by mistake.
        let problems = fields(settings(&section(&good_cert, &garbage)));
        assert!(
            has(&problems, "key", "holds no private key"),
            "{problems:?}"
        );
        let problems = fields(settings(&section(&good_cert, &good_cert)));
        assert!(has(&problems, "key", "swapped"), "{problems:?}");

        // A PEM block whose contents are not base64 / not a certificate.
        let broken = dir.write(
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
        );
        let problems = fields(settings(&section(&broken, &good_key)));
        assert!(has(&problems, "cert", "not valid PEM"), "{problems:?}");
        let not_x509 = dir.write(
            "notx509.pem",
            "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
        );
        let problems = fields(settings(&section(&not_x509, &good_key)));
        assert!(has(&problems, "cert", "not a valid X.509"), "{problems:?}");
        let bad_key = dir.write(
            "badkey.pem",
            "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END PRIVATE KEY-----\n",
        );
        let problems = fields(settings(&section(&good_cert, &bad_key)));
        assert!(has(&problems, "key", "cannot be used"), "{problems:?}");

        // A CA bundle with no certificates.
        let mut s = section(&good_cert, &good_key);
        s.client_ca = Some(garbage.clone());
        let problems = fields(settings(&s));
        assert!(
            has(&problems, "client_ca", "holds no certificate"),
            "{problems:?}"
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn key_not_matching_the_cert_is_refused() {
        let dir = TempDir::new("mismatch");
        let ca = new_ca("Test CA");
        let (cert, _) = localhost(&ca);
        let (_, other_key) = localhost(&ca);
        let cert = dir.write("cert.pem", &cert);
        let key = dir.write("key.pem", &other_key);
        let problems = fields(settings(&section(&cert, &key)));
        assert!(has(&problems, "key", "does not belong"), "{problems:?}");
        let err = TlsState::load(&TlsSettings {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
            client_auth: ClientAuth::None,
            reload_interval: Duration::from_secs(1),
        })
        .unwrap_err();
        assert!(err.contains("tls.key: the private key"), "{err}");
    }

    #[test]
    fn client_auth_is_checked() {
        let dir = TempDir::new("client-auth");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let cert = dir.write("cert.pem", &cert);
        let key = dir.write("key.pem", &key);
        for mode in ["optional", "required"] {
            let mut s = section(&cert, &key);
            s.client_auth = Some(mode.into());
            let problems = fields(settings(&s));
            assert!(
                has(&problems, "client_auth", "needs client_ca"),
                "{problems:?}"
            );
        }
        let mut s = section(&cert, &key);
        s.client_auth = Some("sometimes".into());
        let problems = fields(settings(&s));
        assert!(
            has(&problems, "client_auth", "\"sometimes\""),
            "{problems:?}"
        );
        // "none" with a CA is allowed (the CA is still checked).
        let mut s = section(&cert, &key);
        s.client_auth = Some("none".into());
        s.client_ca = Some(dir.write("ca.pem", &ca.cert.pem()));
        assert_eq!(settings(&s).unwrap().client_auth, ClientAuth::None);
    }

    #[test]
    fn reload_interval_is_checked() {
        let dir = TempDir::new("interval");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let cert = dir.write("cert.pem", &cert);
        let key = dir.write("key.pem", &key);
        let mut s = section(&cert, &key);
        s.reload_interval = "often".into();
        assert!(has(&fields(settings(&s)), "reload_interval", "\"often\""));
        s.reload_interval = "0s".into();
        assert!(has(
            &fields(settings(&s)),
            "reload_interval",
            "greater than zero"
        ));
    }

    /// Runs a handshake in memory; the server side's error if it fails.
    fn handshake(
        server: Arc<ServerConfig>,
        client: rustls::ClientConfig,
    ) -> Result<rustls::ServerConnection, rustls::Error> {
        fn pump(
            from: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl Sized>>,
            to: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl Sized>>,
        ) -> Result<(), rustls::Error> {
            let mut buf = Vec::new();
            while from.wants_write() {
                from.write_tls(&mut buf).unwrap();
            }
            let mut rest = &buf[..];
            while !rest.is_empty() {
                to.read_tls(&mut rest).unwrap();
                to.process_new_packets()?;
            }
            Ok(())
        }
        let mut s = rustls::ServerConnection::new(server)?;
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let mut c = rustls::ClientConnection::new(Arc::new(client), name)?;
        for _ in 0..10 {
            if !c.is_handshaking() && !s.is_handshaking() {
                return Ok(s);
            }
            pump(&mut c, &mut s)?;
            pump(&mut s, &mut c).map_err(|e| rustls::Error::General(format!("client: {e}")))?;
        }
        panic!("the handshake did not finish")
    }

    fn client(
        ca: &Ca,
        versions: &[&'static rustls::SupportedProtocolVersion],
        identity: Option<(&str, &str)>,
    ) -> rustls::ClientConfig {
        let mut roots = RootCertStore::empty();
        roots.add(ca.cert.der().clone()).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        let mut config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    CertificateDer::pem_slice_iter(cert.as_bytes())
                        .collect::<Result<_, _>>()
                        .unwrap(),
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        config
    }

    const BOTH: &[&rustls::SupportedProtocolVersion] =
        &[&rustls::version::TLS13, &rustls::version::TLS12];

    #[test]
    fn server_config_speaks_tls12_and_tls13_with_h2_alpn() {
        let dir = TempDir::new("config");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let s = section(&dir.write("cert.pem", &cert), &dir.write("key.pem", &key));
        let state = TlsState::load(&settings(&s).unwrap()).unwrap();
        let config = state.server_config();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
            let conn = handshake(config.clone(), client(&ca, &[version], None)).unwrap();
            assert_eq!(conn.protocol_version(), Some(version.version));
            assert_eq!(conn.alpn_protocol(), Some(&b"h2"[..]));
            assert_eq!(peer_cert(&conn), None);
        }
    }

    #[test]
    fn client_certificates_are_verified_per_client_auth() {
        let dir = TempDir::new("mtls");
        let ca = new_ca("Test CA");
        let rogue = new_ca("Rogue CA");
        let (cert, key) = localhost(&ca);
        let (alice, alice_key, _) = leaf(
            &ca,
            "alice",
            vec![SanType::Rfc822Name("alice@example.com".try_into().unwrap())],
        );
        let (mallory, mallory_key, _) = leaf(&rogue, "mallory", vec![]);
        let mut s = section(&dir.write("cert.pem", &cert), &dir.write("key.pem", &key));
        s.client_ca = Some(dir.write("ca.pem", &ca.cert.pem()));

        let required = TlsState::load(&settings(&s).unwrap())
            .unwrap()
            .server_config();
        assert!(handshake(required.clone(), client(&ca, BOTH, None)).is_err());
        assert!(handshake(
            required.clone(),
            client(&ca, BOTH, Some((&mallory, &mallory_key)))
        )
        .is_err());
        let conn = handshake(required, client(&ca, BOTH, Some((&alice, &alice_key)))).unwrap();
        let peer = peer_cert(&conn).unwrap();
        assert!(peer.subject.contains("CN=alice"), "{peer:?}");
        assert_eq!(peer.sans, vec!["alice@example.com"]);

        s.client_auth = Some("optional".into());
        let optional = TlsState::load(&settings(&s).unwrap())
            .unwrap()
            .server_config();
        let conn = handshake(optional.clone(), client(&ca, BOTH, None)).unwrap();
        assert_eq!(peer_cert(&conn), None);
        assert!(handshake(
            optional.clone(),
            client(&ca, BOTH, Some((&mallory, &mallory_key)))
        )
        .is_err());
        let conn = handshake(optional, client(&ca, BOTH, Some((&alice, &alice_key)))).unwrap();
        assert!(peer_cert(&conn).is_some());
    }

    #[test]
    fn failed_reload_keeps_the_old_config() {
        let dir = TempDir::new("reload");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let cert_path = dir.write("cert.pem", &cert);
        let key_path = dir.write("key.pem", &key);
        let state = TlsState::load(&settings(&section(&cert_path, &key_path)).unwrap()).unwrap();
        let before = state.server_config();

        dir.write("key.pem", "garbage");
        let err = state.reload().unwrap_err();
        assert!(err.contains("tls.key"), "{err}");
        assert!(Arc::ptr_eq(&before, &state.server_config()));

        let (cert2, key2) = localhost(&ca);
        dir.write("cert.pem", &cert2);
        dir.write("key.pem", &key2);
        assert_eq!(state.reload_if_changed(), Some(Ok(())));
        assert!(!Arc::ptr_eq(&before, &state.server_config()));
        assert_eq!(state.reload_if_changed(), None, "nothing changed since");
    }

    #[tokio::test]
    async fn the_watcher_ends_when_the_state_is_dropped() {
        let dir = TempDir::new("watch-drop");
        let ca = new_ca("Test CA");
        let (cert, key) = localhost(&ca);
        let mut s = section(&dir.write("cert.pem", &cert), &dir.write("key.pem", &key));
        s.reload_interval = "1h".into();
        let state = TlsState::load(&settings(&s).unwrap()).unwrap();
        let watcher = state.watch();
        tokio::task::yield_now().await;
        assert!(!watcher.is_finished());
        drop(state);
        tokio::time::timeout(Duration::from_secs(5), watcher)
            .await
            .expect("the watcher stops once the state is gone")
            .unwrap();
    }

    #[test]
    fn describe_reads_subject_and_sans() {
        let ca = new_ca("Test CA");
        let (_, _, der) = leaf(
            &ca,
            "alice",
            vec![
                SanType::DnsName("alice.example.com".try_into().unwrap()),
                SanType::URI("spiffe://example.com/alice".try_into().unwrap()),
                SanType::Rfc822Name("alice@example.com".try_into().unwrap()),
                SanType::IpAddress("127.0.0.1".parse().unwrap()),
                SanType::IpAddress("::1".parse().unwrap()),
            ],
        );
        let peer = describe(&der).unwrap();
        assert!(peer.subject.contains("CN=alice"), "{}", peer.subject);
        assert!(peer.subject.contains("O=Example"), "{}", peer.subject);
        assert_eq!(
            peer.sans,
            vec![
                "alice.example.com",
                "spiffe://example.com/alice",
                "alice@example.com",
                "127.0.0.1",
                "::1",
            ]
        );
        assert_eq!(describe(&CertificateDer::from(vec![1, 2, 3])), None);
    }
}

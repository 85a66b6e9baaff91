//! Certificates, keys and CA bundles read from PEM files, with a message
//! naming the file for every way one can be wrong, and the files' stamps
//! (modification time and size) that tell a reload whether they changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::sign::SigningKey;
use rustls::RootCertStore;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

pub(super) fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    if path.as_os_str().is_empty() {
        return Err("no file given (the path is empty)".into());
    }
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A PEM file's certificates, in order; at least one, each valid X.509.
pub(super) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_file(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<CertificateDer<'static>>, _>>()
        .map_err(|e| format!("{} is not valid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{} holds no certificate (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks)",
            path.display()
        ));
    }
    for (i, cert) in certs.iter().enumerate() {
        if let Err(e) = x509_parser::parse_x509_certificate(cert.as_ref()) {
            return Err(format!(
                "certificate {} in {} is not a valid X.509 certificate: {e}",
                i + 1,
                path.display()
            ));
        }
    }
    Ok(certs)
}

pub(super) fn read_key(
    path: &Path,
    provider: &CryptoProvider,
) -> Result<(PrivateKeyDer<'static>, Arc<dyn SigningKey>), String> {
    let pem = read_file(path)?;
    let key = match PrivateKeyDer::from_pem_slice(&pem) {
        Ok(key) => key,
        Err(pem::Error::NoItemsFound) => {
            let hint = if CertificateDer::pem_slice_iter(&pem).any(|c| c.is_ok()) {
                " (it holds a certificate: are cert and key swapped?)"
            } else {
                ""
            };
            return Err(format!(
                "{} holds no private key (expected PEM \"PRIVATE KEY\", \"RSA PRIVATE KEY\" or \"EC PRIVATE KEY\"){hint}",
                path.display()
            ));
        }
        Err(e) => return Err(format!("{} is not valid PEM: {e}", path.display())),
    };
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| format!("the private key in {} cannot be used: {e}", path.display()))?;
    Ok((key, signing_key))
}

pub(super) fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for (i, cert) in read_certs(path)?.into_iter().enumerate() {
        roots.add(cert).map_err(|e| {
            format!(
                "certificate {} in {} cannot be used as a CA: {e}",
                i + 1,
                path.display()
            )
        })?;
    }
    Ok(roots)
}

/// What a file looked like: enough to notice an edit, a rewrite or an
/// atomic replacement (a Kubernetes secret's symlink swap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: (u64, u64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        #[cfg(unix)]
        inode: {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        },
    })
}

/// Each file's stamp (`None` for one that cannot be read): the
/// certificate, the key, and the client CA when there is one.
pub(super) fn file_stamps<'a>(files: impl IntoIterator<Item = &'a PathBuf>) -> Vec<Option<Stamp>> {
    files.into_iter().map(|p| stamp(p)).collect()
}

//! Test-time PKI: a CA and its leaves made with rcgen, and a temp
//! directory for the PEM files a gateway is configured with.

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType,
    SerialNumber,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "a2a-gateway-tls-test-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes in place (truncate + write), as an editor would.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Ca {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// A leaf for the gateway: "localhost" and 127.0.0.1.
    pub fn server(&self, cn: &str, serial: u64) -> Leaf {
        self.leaf(
            cn,
            serial,
            vec![
                SanType::DnsName("localhost".try_into().unwrap()),
                SanType::IpAddress([127, 0, 0, 1].into()),
            ],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A leaf for a client.
    pub fn client(&self, cn: &str) -> Leaf {
        self.leaf(
            cn,
            1000,
            vec![SanType::Rfc822Name(
                format!("{cn}@example.com").as_str().try_into().unwrap(),
            )],
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }

    pub fn leaf(
        &self,
        cn: &str,
        serial: u64,
        sans: Vec<SanType>,
        eku: ExtendedKeyUsagePurpose,
    ) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.subject_alt_names = sans;
        params.extended_key_usages = vec![eku];
        params.serial_number = Some(SerialNumber::from(serial));
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }
}

pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: CertificateDer<'static>,
    pub key_der: Vec<u8>,
}

impl Leaf {
    pub fn identity(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        (
            vec![self.der.clone()],
            PrivateKeyDer::Pkcs8(self.key_der.clone().into()),
        )
    }
}

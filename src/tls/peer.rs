//! Who the client's certificate says it is: subject and subjectAltNames,
//! read for mutualTLS identities.

use std::net::{Ipv4Addr, Ipv6Addr};

use rustls_pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;

/// The verified client certificate of a connection, for mutualTLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCert {
    /// The subject DN, e.g. "CN=alice,O=Example".
    pub subject: String,
    /// DNS names, URIs, emails and IPs from the subjectAltName.
    pub sans: Vec<String>,
}

/// The verified peer certificate of an established connection.
pub fn peer_cert(conn: &rustls::ServerConnection) -> Option<PeerCert> {
    describe(conn.peer_certificates()?.first()?)
}

/// Subject and subjectAltNames of a DER certificate; `None` when it does
/// not parse.
pub fn describe(der: &CertificateDer<'_>) -> Option<PeerCert> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let subject = cert.subject().to_string();
    let sans = match cert.subject_alternative_name() {
        Ok(Some(ext)) => ext
            .value
            .general_names
            .iter()
            .filter_map(general_name)
            .collect(),
        _ => Vec::new(),
    };
    Some(PeerCert { subject, sans })
}

fn general_name(name: &GeneralName<'_>) -> Option<String> {
    match name {
        GeneralName::DNSName(s) | GeneralName::URI(s) | GeneralName::RFC822Name(s) => {
            Some((*s).to_string())
        }
        GeneralName::IPAddress(bytes) => match bytes.len() {
            4 => {
                let octets: [u8; 4] = (*bytes).try_into().ok()?;
                Some(Ipv4Addr::from(octets).to_string())
            }
            16 => {
                let octets: [u8; 16] = (*bytes).try_into().ok()?;
                Some(Ipv6Addr::from(octets).to_string())
            }
            _ => None,
        },
        _ => None,
    }
}

//! The PROXY protocol (HAProxy's, versions 1 and 2): a layer-4 load
//! balancer writes the client's address in front of the connection's first
//! bytes. With `server.proxy_protocol = true` every connection to the proxy
//! listener must begin with such a header, and its source address becomes
//! the connection's peer: the address `X-Forwarded-For` gets, the key of
//! per-caller limits and the access log's `client`. A connection without a
//! valid header is closed unanswered, as the protocol asks: its first bytes
//! cannot be told apart from a broken header.

use std::net::SocketAddr;
use std::time::Duration;

use ppp::{v1, v2, HeaderResult, PartialResult};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// v1 is at most 107 bytes, v2 is 16 plus its addresses and TLVs (the
/// clouds' balancers add a few dozen bytes). A longer header is refused.
const MAX_HEADER: usize = 1024;

/// A header split across segments is looked at again after this long
/// (peeking again at once would only see the same bytes).
const PARTIAL_WAIT: Duration = Duration::from_millis(1);

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("no valid PROXY protocol header: {0}")]
    Invalid(String),
    #[error("the connection closed before its PROXY protocol header ended")]
    Closed,
    #[error("reading the PROXY protocol header: {0}")]
    Io(#[from] std::io::Error),
}

/// Takes the header off `stream`, leaving the client's own bytes, and
/// returns the client's address: `None` when the header names none (a v2
/// LOCAL health check, v1 UNKNOWN, a UNIX socket), so the socket's peer
/// stands.
pub async fn read(stream: &mut TcpStream) -> Result<Option<SocketAddr>, HeaderError> {
    let mut buf = vec![0u8; MAX_HEADER];
    loop {
        let n = stream.peek(&mut buf).await?;
        if n == 0 {
            return Err(HeaderError::Closed);
        }
        let (length, source) = match header(&buf[..n])? {
            Some(found) => found,
            None if n == MAX_HEADER => {
                return Err(HeaderError::Invalid(format!(
                    "longer than {MAX_HEADER} bytes"
                )))
            }
            None => {
                tokio::time::sleep(PARTIAL_WAIT).await;
                continue;
            }
        };
        stream.read_exact(&mut buf[..length]).await?;
        return Ok(source);
    }
}

/// The header's length and source address, or `None` while it is incomplete.
fn header(bytes: &[u8]) -> Result<Option<(usize, Option<SocketAddr>)>, HeaderError> {
    let parsed = HeaderResult::parse(bytes);
    if parsed.is_incomplete() {
        return Ok(None);
    }
    let found = match parsed {
        HeaderResult::V1(Ok(h)) => (h.header.len(), v1_source(&h.addresses)),
        HeaderResult::V2(Ok(h)) => (h.len(), v2_source(&h)),
        HeaderResult::V1(Err(e)) => return Err(HeaderError::Invalid(e.to_string())),
        HeaderResult::V2(Err(e)) => return Err(HeaderError::Invalid(e.to_string())),
    };
    Ok(Some(found))
}

fn v1_source(addresses: &v1::Addresses) -> Option<SocketAddr> {
    match addresses {
        v1::Addresses::Tcp4(a) => Some((a.source_address, a.source_port).into()),
        v1::Addresses::Tcp6(a) => Some((a.source_address, a.source_port).into()),
        v1::Addresses::Unknown => None,
    }
}

fn v2_source(header: &v2::Header<'_>) -> Option<SocketAddr> {
    if header.command == v2::Command::Local {
        return None;
    }
    match &header.addresses {
        v2::Addresses::IPv4(a) => Some((a.source_address, a.source_port).into()),
        v2::Addresses::IPv6(a) => Some((a.source_address, a.source_port).into()),
        v2::Addresses::Unspecified | v2::Addresses::Unix(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_bytes(command: v2::Command, source: SocketAddr) -> Vec<u8> {
        let destination: SocketAddr = "10.0.0.1:8080".parse().unwrap();
        v2::Builder::with_addresses(
            v2::Version::Two | command,
            v2::Protocol::Stream,
            (source, destination),
        )
        .build()
        .unwrap()
    }

    #[test]
    fn v1_gives_the_source_and_its_own_length() {
        let line = b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 8080\r\n";
        let mut bytes = line.to_vec();
        bytes.extend_from_slice(b"POST / HTTP/1.1\r\n");
        let (length, source) = header(&bytes).unwrap().unwrap();
        assert_eq!(length, line.len(), "the client's bytes are left alone");
        assert_eq!(source, Some("203.0.113.7:40000".parse().unwrap()));
        let v6 = b"PROXY TCP6 2001:db8::7 2001:db8::1 40000 8080\r\n";
        assert_eq!(
            header(v6).unwrap().unwrap().1,
            Some("[2001:db8::7]:40000".parse().unwrap())
        );
        assert_eq!(header(b"PROXY UNKNOWN\r\n").unwrap().unwrap().1, None);
    }

    #[test]
    fn v2_gives_the_source_unless_it_is_a_local_check() {
        let source: SocketAddr = "198.51.100.4:50000".parse().unwrap();
        let bytes = v2_bytes(v2::Command::Proxy, source);
        assert_eq!(
            header(&bytes).unwrap().unwrap(),
            (bytes.len(), Some(source))
        );
        let local = v2_bytes(v2::Command::Local, source);
        assert_eq!(header(&local).unwrap().unwrap().1, None);
    }

    #[test]
    fn an_incomplete_header_waits_and_anything_else_is_refused() {
        assert!(header(b"PROXY TCP4 203.0.1").unwrap().is_none());
        let bytes = v2_bytes(v2::Command::Proxy, "198.51.100.4:1".parse().unwrap());
        assert!(header(&bytes[..20]).unwrap().is_none());
        for bad in [
            &b"POST / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            b"PROXY TCP4 not-an-address 10.0.0.1 1 2\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        ] {
            assert!(header(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}

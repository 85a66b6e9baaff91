//! A webhook URL taken apart strictly: scheme, host and port, and what kind
//! of host it names (a DNS name, an IP literal, or something a resolver
//! could read as one).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a webhook URL points at.
pub(super) struct Target<'a> {
    /// Lower case.
    pub(super) scheme: String,
    /// As written, IPv6 in brackets.
    pub(super) host: &'a str,
    pub(super) port: u16,
}

pub(super) fn parse_target(url: &str) -> Result<Target<'_>, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| "not a valid absolute URL".to_string())?;
    let (Some(scheme), Some(_)) = (uri.scheme_str(), uri.authority()) else {
        return Err("not an absolute URL".into());
    };
    let scheme = scheme.to_ascii_lowercase();
    // The authority is re-read from the text itself: `http::Uri` keeps
    // user info and quietly drops a port it cannot read, and both must be
    // refused rather than guessed at.
    let authority = authority_text(url);
    let (host, port) = split_authority(authority)?;
    let port = match port {
        Some(port) => port,
        None if scheme == "http" => 80,
        None => 443,
    };
    Ok(Target { scheme, host, port })
}

/// The text between `scheme://` and the path, query or fragment.
fn authority_text(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

fn split_authority(authority: &str) -> Result<(&str, Option<u16>), String> {
    if authority.contains('@') {
        return Err("user information (user@host) is not allowed".into());
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => authority.split_at(end + 1),
            None => return Err("not a valid IPv6 address".into()),
        }
    } else {
        match authority.rfind(':') {
            Some(colon) => authority.split_at(colon),
            None => (authority, ""),
        }
    };
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    Ok((host, parse_port(port)?))
}

/// `""` and `":"` mean the scheme's port (as browsers read them).
fn parse_port(text: &str) -> Result<Option<u16>, String> {
    let digits = text.strip_prefix(':').unwrap_or(text);
    if digits.is_empty() {
        return Ok(None);
    }
    match digits.parse::<u16>() {
        Ok(port) if port != 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(port)),
        _ => Err(format!("\"{digits}\" is not a valid port")),
    }
}

pub(super) enum Host<'a> {
    Ip(IpAddr),
    /// A DNS name, as written (trailing dot kept).
    Name(&'a str),
}

/// Only standard address forms and plain DNS names pass. Anything else
/// (`2130706433`, `0x7f.1`, `%31…`, zone ids) could mean different addresses
/// to different parsers, so it is refused rather than interpreted.
pub(super) fn classify_host(host: &str) -> Result<Host<'_>, &'static str> {
    if let Some(inner) = host.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .and_then(|inner| inner.parse::<Ipv6Addr>().ok())
            .map(|ip| Host::Ip(IpAddr::V6(ip)))
            .ok_or("not a valid IPv6 address");
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    if ends_in_number(host) {
        return Err("not a standard IPv4 address (numeric forms like 2130706433 are refused)");
    }
    if is_dns_name(host) {
        Ok(Host::Name(host))
    } else {
        Err("not a valid host name")
    }
}

fn is_dns_name(host: &str) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host);
    !name.is_empty() && name.len() <= 253 && name.split('.').all(is_dns_label)
}

/// Letters, digits, `-` and `_` (service names use it), no edge hyphens.
fn is_dns_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The WHATWG URL rule: a host whose last label is a decimal or `0x` hex
/// number is an IPv4 address to browsers and to `inet_aton`, never a name.
fn ends_in_number(host: &str) -> bool {
    let name = host.strip_suffix('.').unwrap_or(host);
    let last = name.rsplit('.').next().unwrap_or(name);
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let hex = last.strip_prefix("0x").or_else(|| last.strip_prefix("0X"));
    hex.is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// How allow-list entries and URL hosts are compared.
pub(super) fn normalize_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_classified_strictly() {
        for good in [
            "example.com",
            "EXAMPLE.com.",
            "a-b.c_d.example",
            "localhost",
            "x.0x7f.io",
        ] {
            assert!(matches!(classify_host(good), Ok(Host::Name(_))), "{good}");
        }
        for numeric in [
            "2130706433",
            "0x7f.1",
            "0x7f000001",
            "017700000001",
            "127.1",
            "1.2.3.4.5",
            "0X7F.0.0.1.",
        ] {
            assert!(classify_host(numeric).is_err(), "{numeric}");
        }
        for bad in [
            "",
            ".",
            "a..b",
            "-a.com",
            "a-.com",
            "a%2e.com",
            "[fe80::1%25eth0]",
            "[::1",
            "::1",
            "ex ample.com",
        ] {
            assert!(classify_host(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(classify_host("[::1]"), Ok(Host::Ip(_))));
        assert!(matches!(classify_host("8.8.8.8"), Ok(Host::Ip(_))));
    }

    #[test]
    fn authorities_are_split_without_guessing() {
        assert_eq!(
            split_authority("a.example:8443").unwrap(),
            ("a.example", Some(8443))
        );
        assert_eq!(split_authority("[::1]:9").unwrap(), ("[::1]", Some(9)));
        assert_eq!(split_authority("a.example:").unwrap(), ("a.example", None));
        assert!(split_authority("a.example:99999").is_err());
        assert!(split_authority("a.example:0").is_err());
        assert!(split_authority("a.example:+1").is_err());
        assert!(split_authority("u@a.example").is_err());
        assert!(split_authority(":443").is_err());
        assert_eq!(authority_text("https://h:1/p?q#f"), "h:1");
        assert_eq!(authority_text("https://h#@evil"), "h");
    }
}

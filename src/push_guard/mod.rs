//! The SSRF guard for push-notification webhooks.
//!
//! A client that registers a webhook makes the upstream agent send HTTP
//! requests to an address of the client's choosing, from inside our network.
//! Before a request that carries a webhook URL is forwarded, every such URL
//! must be `https` (plain `http` only when allowed), name a proper host, and
//! that host must not be (or resolve to) a loopback, private, link-local,
//! metadata or otherwise non-public address, unless the operator allowed the
//! host or the address range explicitly.
//!
//! Limits, stated plainly: the upstream resolves the name again when it
//! delivers, so a name whose answers change between our check and its
//! delivery (DNS rebinding) is not caught here; and redirects the webhook
//! answers with are the upstream's to refuse.

use std::net::IpAddr;
use std::time::Duration;

use ipnet::IpNet;
use serde::Deserialize;

use crate::a2a::model::Params;
use crate::cidr::{self, problem, Problems};

mod addresses;
mod delivery;
mod target;
mod webhooks;

pub use addresses::forbidden;
pub use delivery::Undeliverable;
use target::{classify_host, normalize_host, parse_target, Host, Target};
pub use webhooks::webhook_urls;

/// `[push_guard]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushGuardSection {
    pub enabled: bool,
    /// Allow plain `http://` webhooks.
    pub allow_http: bool,
    /// Host names allowed whatever they resolve to (exact, case-insensitive).
    pub allow_hosts: Vec<String>,
    /// Address ranges allowed although private/loopback/… (CIDR).
    pub allow_cidrs: Vec<String>,
    /// Bound on resolving a webhook host name.
    pub resolve_timeout: String,
}

impl Default for PushGuardSection {
    fn default() -> Self {
        Self {
            enabled: true,
            allow_http: false,
            allow_hosts: Vec::new(),
            allow_cidrs: Vec::new(),
            resolve_timeout: "2s".into(),
        }
    }
}

/// The validated guard. Build it with [`settings`].
#[derive(Debug, Clone)]
pub struct PushGuard {
    pub enabled: bool,
    pub allow_http: bool,
    /// Normalized: lower case, no brackets, no trailing dot.
    pub allow_hosts: Vec<String>,
    pub allow_cidrs: Vec<IpNet>,
    pub resolve_timeout: Duration,
}

/// Validates a section: `(field, message)` for every problem.
pub fn settings(section: &PushGuardSection) -> Result<PushGuard, Problems> {
    let mut problems = Vec::new();
    let resolve_timeout = parse_timeout(&section.resolve_timeout, &mut problems);
    let allow_cidrs = cidr::parse("allow_cidrs", &section.allow_cidrs, &mut problems);
    let allow_hosts = parse_hosts(&section.allow_hosts, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(PushGuard {
        enabled: section.enabled,
        allow_http: section.allow_http,
        allow_hosts,
        allow_cidrs,
        resolve_timeout: resolve_timeout.unwrap_or(Duration::from_secs(2)),
    })
}

fn parse_timeout(text: &str, problems: &mut Problems) -> Option<Duration> {
    let refused = |why| problems.push(problem("resolve_timeout", why));
    crate::duration::positive(text).map_err(refused).ok()
}

fn parse_hosts(entries: &[String], problems: &mut Problems) -> Vec<String> {
    let mut hosts = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if classify_host(entry).is_ok() {
            hosts.push(normalize_host(entry));
        } else {
            problems.push((
                format!("allow_hosts[{i}]"),
                format!("expected a host name like hooks.example.com, not \"{entry}\""),
            ));
        }
    }
    hosts
}

impl PushGuard {
    /// Checks every webhook URL in the request; `Err` says which and why.
    /// The message is meant for the client (JSON-RPC -32602).
    pub async fn check_request(&self, params: &Params<'_>) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        for (path, url) in webhook_urls(params) {
            if let Some(reason) = self.url_problem(url).await {
                return Err(format!("{path}: {} is refused: {reason}", shown(url)));
            }
        }
        Ok(())
    }

    /// Why one webhook URL is refused (`None`: it may be used).
    pub async fn url_problem(&self, url: &str) -> Option<String> {
        let target = match parse_target(url) {
            Ok(target) => target,
            Err(reason) => return Some(reason),
        };
        let http_refused = match target.scheme.as_str() {
            "https" => false,
            "http" => !self.allow_http,
            other => return Some(format!("scheme \"{other}\" is not allowed")),
        };
        match (self.host_problem(&target).await, http_refused) {
            (Some(reason), true) => Some(format!("{reason} (plain http is not allowed either)")),
            (Some(reason), false) => Some(reason),
            (None, true) => Some("plain http is not allowed".into()),
            (None, false) => None,
        }
    }

    async fn host_problem(&self, target: &Target<'_>) -> Option<String> {
        if self.allow_hosts.contains(&normalize_host(target.host)) {
            return None;
        }
        match classify_host(target.host) {
            Err(reason) => Some(reason.into()),
            Ok(Host::Ip(ip)) => self.address_problem(ip).map(String::from),
            Ok(Host::Name(name)) => self.name_problem(name, target.port).await,
        }
    }

    /// Every address a name resolves to must pass: the upstream may use any.
    async fn name_problem(&self, name: &str, port: u16) -> Option<String> {
        let addresses = match self.resolve(name, port).await {
            Ok(addresses) => addresses,
            Err(reason) => return Some(reason),
        };
        addresses.into_iter().find_map(|ip| {
            self.address_problem(ip)
                .map(|reason| format!("{name} resolves to {ip} ({reason})"))
        })
    }

    async fn resolve(&self, name: &str, port: u16) -> Result<Vec<IpAddr>, String> {
        let lookup = tokio::net::lookup_host((name, port));
        match tokio::time::timeout(self.resolve_timeout, lookup).await {
            Err(_) => Err(format!(
                "cannot resolve {name} (no answer within {})",
                humantime::format_duration(self.resolve_timeout)
            )),
            Ok(Err(_)) => Err(format!("cannot resolve {name}")),
            Ok(Ok(addresses)) => {
                let ips: Vec<IpAddr> = addresses.map(|a| a.ip()).collect();
                if ips.is_empty() {
                    Err(format!("cannot resolve {name} (no addresses)"))
                } else {
                    Ok(ips)
                }
            }
        }
    }

    /// An allowed range wins over every rule of [`forbidden`]. A v4 range
    /// also covers the IPv4-mapped IPv6 spelling of its addresses.
    fn address_problem(&self, ip: IpAddr) -> Option<&'static str> {
        if cidr::contains(&self.allow_cidrs, ip) {
            None
        } else {
            forbidden(ip)
        }
    }
}

/// A URL as a refusal shows it: without its userinfo (`user:pass@` is a
/// credential, and refusals are logged and may be relayed), and cut when
/// long (the client knows what it sent).
fn shown(url: &str) -> String {
    const MAX: usize = 120;
    let start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let url = match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}***@{}", &url[..start], &url[start + at + 1..]),
        None => url.to_string(),
    };
    match url.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &url[..end]),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_lose_their_userinfo() {
        assert_eq!(
            shown("https://user:secret@10.0.0.1:8443/hook?x=1"),
            "https://***@10.0.0.1:8443/hook?x=1"
        );
        assert_eq!(shown("http://a@b@127.0.0.1/"), "http://***@127.0.0.1/");
        assert_eq!(shown("https://h.example/p@q"), "https://h.example/p@q");
        assert_eq!(shown("ftp://x"), "ftp://x");
        assert!(shown(&format!("https://h/{}", "a".repeat(300))).ends_with('…'));
    }

    #[test]
    fn settings_report_every_problem() {
        let section = PushGuardSection {
            allow_cidrs: vec!["10.0.0.0/8".into(), "ten".into(), "fd00::/8".into()],
            allow_hosts: vec!["Hooks.Example.com.".into(), "https://x/".into()],
            resolve_timeout: "soon".into(),
            ..PushGuardSection::default()
        };
        let problems = settings(&section).unwrap_err();
        assert_eq!(
            problems,
            vec![
                (
                    "resolve_timeout".to_string(),
                    "expected a duration like \"500ms\", \"30s\" or \"5m\", not \"soon\""
                        .to_string()
                ),
                (
                    "allow_cidrs[1]".to_string(),
                    "not a CIDR range like 10.0.0.0/8 or an address: \"ten\"".to_string()
                ),
                (
                    "allow_hosts[1]".to_string(),
                    "expected a host name like hooks.example.com, not \"https://x/\"".to_string()
                ),
            ]
        );
        let zero = PushGuardSection {
            resolve_timeout: "0s".into(),
            ..PushGuardSection::default()
        };
        assert_eq!(
            settings(&zero).unwrap_err(),
            vec![(
                "resolve_timeout".to_string(),
                "must be greater than zero".to_string()
            )]
        );
    }

    #[test]
    fn settings_normalize() {
        let section = PushGuardSection {
            enabled: false,
            allow_http: true,
            allow_cidrs: vec!["10.1.2.3/8".into(), "127.0.0.1".into()],
            allow_hosts: vec!["Hooks.Example.com.".into(), "[::1]".into()],
            resolve_timeout: "750ms".into(),
        };
        let guard = settings(&section).unwrap();
        assert!(!guard.enabled);
        assert!(guard.allow_http);
        assert_eq!(guard.allow_hosts, ["hooks.example.com", "::1"]);
        let cidrs: Vec<String> = guard.allow_cidrs.iter().map(|n| n.to_string()).collect();
        assert_eq!(cidrs, ["10.0.0.0/8", "127.0.0.1/32"]);
        assert_eq!(guard.resolve_timeout, Duration::from_millis(750));
        let default = settings(&PushGuardSection::default()).unwrap();
        assert!(default.enabled && !default.allow_http);
        assert_eq!(default.resolve_timeout, Duration::from_secs(2));
    }

    #[test]
    fn long_urls_are_cut_in_messages() {
        let long = format!("https://{}.example/", "a".repeat(300));
        assert_eq!(shown(&long).chars().count(), 121);
        assert_eq!(shown("https://a/"), "https://a/");
    }
}

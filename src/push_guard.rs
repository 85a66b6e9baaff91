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

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use ipnet::IpNet;
use serde::Deserialize;

use crate::a2a::{Family, Method, Version};
use crate::cidr;
use crate::sketch::Sketch;

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

impl Default for PushGuard {
    /// The defaults of an empty `[push_guard]`: on, https only, no exceptions.
    fn default() -> Self {
        Self {
            enabled: true,
            allow_http: false,
            allow_hosts: Vec::new(),
            allow_cidrs: Vec::new(),
            resolve_timeout: Duration::from_secs(2),
        }
    }
}

/// Validates a section: `(field, message)` for every problem.
pub fn settings(section: &PushGuardSection) -> Result<PushGuard, Vec<(String, String)>> {
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

fn parse_timeout(text: &str, problems: &mut Vec<(String, String)>) -> Option<Duration> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            problems.push(("resolve_timeout".into(), "must be greater than zero".into()));
            None
        }
        Err(_) => {
            problems.push((
                "resolve_timeout".into(),
                format!("expected a duration like \"500ms\" or \"2s\", not \"{text}\""),
            ));
            None
        }
    }
}

fn parse_hosts(entries: &[String], problems: &mut Vec<(String, String)>) -> Vec<String> {
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
    pub async fn check_request(
        &self,
        method: &Method,
        params: Option<&Sketch<'_>>,
    ) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        for (path, value) in webhook_values(method, params) {
            let Some(url) = value.as_str() else {
                return Err(format!("{path}: must be a URL string"));
            };
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

/// Long URLs are cut in messages: the client knows what it sent.
fn shown(url: &str) -> String {
    const MAX: usize = 120;
    match url.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &url[..end]),
        None => url.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Where webhook URLs live in params
// ---------------------------------------------------------------------------

/// A path through params: at each step, the keys that may spell it.
type Shape = &'static [&'static [&'static str]];

const URL: &[&str] = &["url"];
const CONFIGURATION: &[&str] = &["configuration"];
/// The nested config object of 0.1/0.3 and of the 1.0 drafts.
const NESTED: &[&str] = &["pushNotificationConfig", "push_notification_config"];
/// The push config inside a send's `configuration`: 0.3 JSON, 0.3 proto
/// (`pushNotification`), 1.0 (`taskPushNotificationConfig`) and its drafts.
const SEND_CONFIG: &[&str] = &[
    "pushNotificationConfig",
    "push_notification_config",
    "taskPushNotificationConfig",
    "task_push_notification_config",
    "pushNotification",
    "push_notification",
];
/// The config object of a set/create: 0.1/0.3 and the 1.0 request forms.
const SET_CONFIG: &[&str] = &[
    "pushNotificationConfig",
    "push_notification_config",
    "config",
];

/// 0.1 `tasks/send`/`tasks/sendSubscribe`: `params.pushNotification`.
const V0_1_SEND: &[Shape] = &[&[&["pushNotification", "push_notification"], URL]];
/// 0.3 `message/send`, 1.0 `SendMessage` and their streaming forms. 1.0's
/// `taskPushNotificationConfig` holds the url flat or under a nested config.
const SEND: &[Shape] = &[
    &[CONFIGURATION, SEND_CONFIG, URL],
    &[CONFIGURATION, SEND_CONFIG, NESTED, URL],
];
/// 0.1/0.3 `…/set` (`{id|taskId, pushNotificationConfig{url}}`) and 1.0
/// `CreateTaskPushNotificationConfig` (flat `{taskId, id, url}`, or the url
/// under `config` / `config.pushNotificationConfig`).
const SET: &[Shape] = &[&[URL], &[SET_CONFIG, URL], &[SET_CONFIG, NESTED, URL]];

/// Where a method's webhook URLs may be. Each version's shape comes with the
/// other spellings an upstream may accept for it: SDKs serve several
/// versions on one endpoint and take snake_case names too (protobuf JSON,
/// pydantic), and every shape skipped here would be a way around the guard.
fn shapes(method: &Method) -> &'static [Shape] {
    match (method.version, method.family) {
        (Version::V0_1, Family::Send | Family::Stream) => V0_1_SEND,
        (_, Family::Send | Family::Stream) => SEND,
        (_, Family::PushSet) => SET,
        _ => &[],
    }
}

/// Every webhook URL in a request's params, for every version's shape, with
/// the JSON path it was found at and the value as found (`check_request`
/// refuses a `url` that is not a string).
pub fn webhook_values<'s, 'a>(
    method: &Method,
    params: Option<&'s Sketch<'a>>,
) -> Vec<(String, &'s Sketch<'a>)> {
    let mut found = Vec::new();
    if let Some(params) = params {
        let mut trail = Vec::new();
        for shape in shapes(method) {
            collect(params, shape, &mut trail, &mut found);
        }
    }
    found
}

/// Follows `shape` from `node`, every spelling at every step. `null` counts
/// as absent: clients that write unset optional fields as `null` carry no
/// webhook, and refusing them would break them for nothing. The path is
/// written out only for what is found (most calls carry no webhook).
fn collect<'s, 'a>(
    node: &'s Sketch<'a>,
    shape: Shape,
    trail: &mut Vec<&'static str>,
    found: &mut Vec<(String, &'s Sketch<'a>)>,
) {
    let Some((keys, rest)) = shape.split_first() else {
        found.push((format!("params.{}", trail.join(".")), node));
        return;
    };
    if !node.is_object() {
        return;
    }
    for key in *keys {
        match node.get(key) {
            None | Some(Sketch::Null) => {}
            Some(child) => {
                trail.push(key);
                collect(child, rest, trail, found);
                trail.pop();
            }
        }
    }
}

// ---------------------------------------------------------------------------
// URL and host parsing
// ---------------------------------------------------------------------------

/// What a webhook URL points at.
struct Target<'a> {
    /// Lower case.
    scheme: String,
    /// As written, IPv6 in brackets.
    host: &'a str,
    port: u16,
}

fn parse_target(url: &str) -> Result<Target<'_>, String> {
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

enum Host<'a> {
    Ip(IpAddr),
    /// A DNS name, as written (trailing dot kept).
    Name(&'a str),
}

/// Only standard address forms and plain DNS names pass. Anything else
/// (`2130706433`, `0x7f.1`, `%31…`, zone ids) could mean different addresses
/// to different parsers, so it is refused rather than interpreted.
fn classify_host(host: &str) -> Result<Host<'_>, &'static str> {
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
fn normalize_host(host: &str) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

// ---------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------

const METADATA: &str = "cloud metadata address";
const RESERVED: &str = "reserved address";
const DOCUMENTATION: &str = "documentation address";
const PRIVATE: &str = "private address";

/// IPv4 ranges, most specific first (the first match names the reason).
const V4_RANGES: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(169, 254, 169, 254), 32, METADATA), // AWS, GCP, Azure, OCI…
    (Ipv4Addr::new(168, 63, 129, 16), 32, METADATA),   // Azure WireServer
    (Ipv4Addr::new(100, 100, 100, 200), 32, METADATA), // Alibaba Cloud
    (Ipv4Addr::new(0, 0, 0, 0), 32, "unspecified address"),
    (Ipv4Addr::new(255, 255, 255, 255), 32, "broadcast address"),
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this-network address"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback address"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, PRIVATE),
    (Ipv4Addr::new(172, 16, 0, 0), 12, PRIVATE),
    (Ipv4Addr::new(192, 168, 0, 0), 16, PRIVATE),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local address"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared (CGNAT) address"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking address"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(198, 51, 100, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(203, 0, 113, 0), 24, DOCUMENTATION),
    (Ipv4Addr::new(192, 0, 0, 0), 24, RESERVED), // IETF protocol assignments
    (Ipv4Addr::new(192, 88, 99, 0), 24, RESERVED), // old 6to4 relay anycast
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast address"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, RESERVED),
];

/// IPv6 ranges with no IPv4 inside, most specific first.
const V6_RANGES: &[(Ipv6Addr, u8, &str)] = &[
    (
        Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
        128,
        METADATA,
    ), // AWS
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        128,
        "unspecified address",
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1),
        128,
        "loopback address",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "link-local address",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local address",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique-local address",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast address",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        DOCUMENTATION,
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        DOCUMENTATION,
    ),
    (
        Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0),
        48,
        "benchmarking address",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only address",
    ),
];

/// Why an address must not receive webhooks (`None`: a public address).
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|(base, prefix, _)| same_prefix(bits.into(), u32::from(*base).into(), *prefix, 32))
        .map(|(_, _, reason)| *reason)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if let Some((_, _, reason)) = V6_RANGES
        .iter()
        .find(|(base, prefix, _)| same_prefix(bits, u128::from(*base), *prefix, 128))
    {
        return Some(reason);
    }
    if let Some(v4) = embedded_v4(bits) {
        return forbidden_v4(v4);
    }
    // Whatever is left outside 2000::/3 is not public unicast.
    if !same_prefix(bits, 0x2000_u128 << 112, 3, 128) {
        return Some(RESERVED);
    }
    None
}

/// The IPv4 address an IPv6 form carries, for the forms that reach it:
/// mapped `::ffff:a.b.c.d`, translated `::ffff:0:a.b.c.d`, compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`,
/// and Teredo `2001::/32` (its client address, stored inverted).
fn embedded_v4(bits: u128) -> Option<Ipv4Addr> {
    let low = bits as u32; // the last 32 bits, on purpose
    let forms: [(u128, u8); 5] = [
        (0xffff_u128 << 32, 96),
        (0xffff_u128 << 48, 96),
        (0, 96),
        (0x0064_ff9b_u128 << 96, 96),
        (0x0064_ff9b_0001_u128 << 80, 48),
    ];
    if forms
        .iter()
        .any(|(base, prefix)| same_prefix(bits, *base, *prefix, 128))
    {
        return Some(Ipv4Addr::from(low));
    }
    if same_prefix(bits, 0x2002_u128 << 112, 16, 128) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    if same_prefix(bits, 0x2001_0000_u128 << 96, 32, 128) {
        return Some(Ipv4Addr::from(!low));
    }
    None
}

/// Whether `a` and `b` (`width`-bit numbers) agree on their first `prefix` bits.
fn same_prefix(a: u128, b: u128, prefix: u8, width: u32) -> bool {
    let shift = width.saturating_sub(u32::from(prefix));
    a.checked_shr(shift).unwrap_or(0) == b.checked_shr(shift).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;
    use serde_json::{json, Value};

    fn ip(text: &str) -> IpAddr {
        let text = text.trim_start_matches('[').trim_end_matches(']');
        text.parse().unwrap()
    }

    #[test]
    fn forbidden_addresses_name_their_reason() {
        let table = [
            ("127.0.0.1", "loopback address"),
            ("127.255.0.9", "loopback address"),
            ("10.1.2.3", "private address"),
            ("172.16.0.1", "private address"),
            ("172.31.255.255", "private address"),
            ("192.168.1.1", "private address"),
            ("169.254.169.254", "cloud metadata address"),
            ("169.254.1.1", "link-local address"),
            ("100.64.0.1", "shared (CGNAT) address"),
            ("100.100.100.200", "cloud metadata address"),
            ("168.63.129.16", "cloud metadata address"),
            ("0.0.0.0", "unspecified address"),
            ("0.1.2.3", "this-network address"),
            ("255.255.255.255", "broadcast address"),
            ("224.0.0.1", "multicast address"),
            ("239.255.255.250", "multicast address"),
            ("240.0.0.1", "reserved address"),
            ("198.18.0.1", "benchmarking address"),
            ("198.19.255.255", "benchmarking address"),
            ("192.0.2.1", "documentation address"),
            ("198.51.100.7", "documentation address"),
            ("203.0.113.9", "documentation address"),
            ("192.0.0.8", "reserved address"),
            ("[::1]", "loopback address"),
            ("::", "unspecified address"),
            ("::ffff:127.0.0.1", "loopback address"),
            ("::ffff:7f00:1", "loopback address"),
            ("::ffff:169.254.169.254", "cloud metadata address"),
            ("::ffff:10.0.0.1", "private address"),
            ("::ffff:0:10.0.0.1", "private address"),
            ("::127.0.0.1", "loopback address"),
            ("::a00:1", "private address"),
            ("64:ff9b::127.0.0.1", "loopback address"),
            ("64:ff9b::a9fe:a9fe", "cloud metadata address"),
            ("64:ff9b:1::192.168.0.1", "private address"),
            ("2002:7f00:1::", "loopback address"),
            ("2002:a9fe:a9fe::1", "cloud metadata address"),
            ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private address"), // Teredo client 10.0.0.1
            ("fd00:ec2::254", "cloud metadata address"),
            ("fd12:3456::1", "unique-local address"),
            ("fc00::1", "unique-local address"),
            ("fe80::1", "link-local address"),
            ("febf::1", "link-local address"),
            ("fec0::1", "site-local address"),
            ("ff02::1", "multicast address"),
            ("2001:db8::1", "documentation address"),
            ("3fff::1", "documentation address"),
            ("2001:2::1", "benchmarking address"),
            ("100::1", "discard-only address"),
            ("4000::1", "reserved address"),
            ("::2:0:0:1", "reserved address"),
        ];
        for (text, reason) in table {
            assert_eq!(forbidden(ip(text)), Some(reason), "{text}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for text in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo client 8.8.8.8
        ] {
            assert_eq!(forbidden(ip(text)), None, "{text}");
        }
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
                    "expected a duration like \"500ms\" or \"2s\", not \"soon\"".to_string()
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

    fn urls(method: &str, params: Value) -> Vec<(String, String)> {
        let method = lookup(method).unwrap();
        let text = params.to_string();
        let arena = bumpalo::Bump::new();
        let read = crate::a2a::params::read(&text, &arena).unwrap();
        webhook_values(method, Some(&read))
            .into_iter()
            .map(|(path, value)| (path, shown_value(value)))
            .collect()
    }

    /// A URL as found, or a non-string as its JSON text.
    fn shown_value(value: &Sketch<'_>) -> String {
        match value {
            Sketch::Str(url) => url.to_string(),
            other => json_text(other),
        }
    }

    fn json_text(value: &Sketch<'_>) -> String {
        match value {
            Sketch::Str(s) => Value::from(*s).to_string(),
            Sketch::Num(n) => n.to_string(),
            Sketch::Bool(b) => b.to_string(),
            Sketch::Null => "null".into(),
            Sketch::Deep => "…".into(),
            Sketch::Arr(items) => {
                let items: Vec<String> = items.iter().map(json_text).collect();
                format!("[{}]", items.join(","))
            }
            Sketch::Obj(members) => {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{}:{}", Value::from(*k), json_text(v)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
        }
    }

    fn one(path: &str, url: &str) -> Vec<(String, String)> {
        vec![(path.to_string(), url.to_string())]
    }

    #[test]
    fn webhook_urls_v0_1() {
        let config = json!({"url": "https://a.example/h", "token": "t"});
        for method in ["tasks/send", "tasks/sendSubscribe"] {
            assert_eq!(
                urls(
                    method,
                    json!({"id": "t", "message": {}, "pushNotification": config})
                ),
                one("params.pushNotification.url", "https://a.example/h")
            );
        }
        assert_eq!(
            urls(
                "tasks/pushNotification/set",
                json!({"id": "t", "pushNotificationConfig": config})
            ),
            one("params.pushNotificationConfig.url", "https://a.example/h")
        );
    }

    #[test]
    fn webhook_urls_v0_3() {
        let config = json!({"url": "https://a.example/h", "authentication": {"schemes": []}});
        for method in ["message/send", "message/stream"] {
            assert_eq!(
                urls(
                    method,
                    json!({"message": {}, "configuration": {"blocking": true, "pushNotificationConfig": config}})
                ),
                one(
                    "params.configuration.pushNotificationConfig.url",
                    "https://a.example/h"
                )
            );
        }
        assert_eq!(
            urls(
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": config})
            ),
            one("params.pushNotificationConfig.url", "https://a.example/h")
        );
        // snake_case, as pydantic-based servers also accept it
        assert_eq!(
            urls(
                "message/send",
                json!({"configuration": {"push_notification_config": config}})
            ),
            one(
                "params.configuration.push_notification_config.url",
                "https://a.example/h"
            )
        );
    }

    #[test]
    fn webhook_urls_v1_0() {
        for method in ["SendMessage", "SendStreamingMessage"] {
            assert_eq!(
                urls(
                    method,
                    json!({"message": {}, "configuration": {"taskPushNotificationConfig": {"url": "https://flat.example/"}}})
                ),
                one(
                    "params.configuration.taskPushNotificationConfig.url",
                    "https://flat.example/"
                )
            );
            assert_eq!(
                urls(
                    method,
                    json!({"configuration": {"taskPushNotificationConfig": {"pushNotificationConfig": {"url": "https://nested.example/"}}}})
                ),
                one(
                    "params.configuration.taskPushNotificationConfig.pushNotificationConfig.url",
                    "https://nested.example/"
                )
            );
        }
        let create = "CreateTaskPushNotificationConfig";
        assert_eq!(
            urls(
                create,
                json!({"taskId": "t", "id": "c", "url": "https://flat.example/"})
            ),
            one("params.url", "https://flat.example/")
        );
        assert_eq!(
            urls(
                create,
                json!({"taskId": "t", "config": {"url": "https://c.example/"}})
            ),
            one("params.config.url", "https://c.example/")
        );
        assert_eq!(
            urls(
                create,
                json!({"taskId": "t", "pushNotificationConfig": {"url": "https://p.example/"}})
            ),
            one("params.pushNotificationConfig.url", "https://p.example/")
        );
        assert_eq!(
            urls(
                create,
                json!({"config": {"pushNotificationConfig": {"url": "https://n.example/"}}})
            ),
            one(
                "params.config.pushNotificationConfig.url",
                "https://n.example/"
            )
        );
    }

    #[test]
    fn webhook_urls_finds_every_url_and_non_strings() {
        let found = urls(
            "CreateTaskPushNotificationConfig",
            json!({"url": "https://a.example/", "config": {"url": 42}, "pushNotificationConfig": {"url": {"x": 1}}}),
        );
        assert_eq!(
            found,
            vec![
                ("params.url".to_string(), "https://a.example/".to_string()),
                (
                    "params.pushNotificationConfig.url".to_string(),
                    "{\"x\":1}".to_string()
                ),
                ("params.config.url".to_string(), "42".to_string()),
            ]
        );
    }

    #[test]
    fn webhook_urls_ignores_absent_null_and_other_methods() {
        assert!(urls(
            "message/send",
            json!({"configuration": {"pushNotificationConfig": null}})
        )
        .is_empty());
        assert!(urls(
            "message/send",
            json!({"configuration": {"pushNotificationConfig": {"url": null}}})
        )
        .is_empty());
        assert!(urls("message/send", json!({"message": {}})).is_empty());
        assert!(urls("message/send", json!(["positional"])).is_empty());
        assert!(urls("tasks/get", json!({"id": "t", "url": "http://127.0.0.1/"})).is_empty());
        assert!(urls(
            "tasks/pushNotificationConfig/get",
            json!({"id": "t", "pushNotificationConfig": {"url": "http://127.0.0.1/"}})
        )
        .is_empty());
        let method = lookup("message/send").unwrap();
        assert!(webhook_values(method, None).is_empty());
    }

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

    #[test]
    fn long_urls_are_cut_in_messages() {
        let long = format!("https://{}.example/", "a".repeat(300));
        assert_eq!(shown(&long).chars().count(), 121);
        assert_eq!(shown("https://a/"), "https://a/");
    }
}

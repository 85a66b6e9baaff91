//! TOML text → validated `Config`, collecting every problem with its path.
//!
//! Each section is deserialized on its own so one bad section does not hide
//! problems in the others; then values are checked one by one.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use toml::{Table, Value};

use super::file::{
    CardRefreshSection, CardSection, HeaderSource, LimitsSection, LogSection, RoutingSection,
    ServerSection, SkillsSection, UpstreamSection,
};
use super::*;

const SECTIONS: [&str; 13] = [
    "rate_limits",
    "concurrency",
    "auth",
    "authz",
    "tls",
    "push_guard",
    "server",
    "limits",
    "routing",
    "card",
    "card_refresh",
    "upstreams",
    "log",
];

pub fn load_str(text: &str) -> Result<Config, ConfigErrors> {
    load_with(Some(text), &Overrides::default())
}

pub fn load_file(path: &Path, overrides: &Overrides) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            path: String::new(),
            message: format!("cannot read {}: {e}", path.display()),
        }])
    })?;
    load_with(Some(&text), overrides)
}

/// Loads from TOML text (or nothing: flags only) with overrides applied.
pub fn load_with(text: Option<&str>, overrides: &Overrides) -> Result<Config, ConfigErrors> {
    let mut table = match text {
        Some(t) => t.parse::<Table>().map_err(|e| {
            ConfigErrors(vec![ConfigError {
                path: String::new(),
                message: e.to_string().trim_end().to_string(),
            }])
        })?,
        None => Table::new(),
    };
    overrides.apply(&mut table);
    let mut v = Checker::default();
    let config = v.config(&table);
    match (config, v.errors.is_empty()) {
        (Some(config), true) => Ok(config),
        _ => Err(ConfigErrors(v.errors)),
    }
}

#[derive(Default)]
struct Checker {
    errors: Vec<ConfigError>,
}

impl Checker {
    fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ConfigError {
            path: path.into(),
            message: message.into(),
        });
    }

    fn config(&mut self, table: &Table) -> Option<Config> {
        for key in table.keys().filter(|k| !SECTIONS.contains(&k.as_str())) {
            self.err(
                key.clone(),
                format!("unknown section; expected one of {}", SECTIONS.join(", ")),
            );
        }
        let server = self.section::<ServerSection>(table.get("server"), "server");
        let limits = self.section::<LimitsSection>(table.get("limits"), "limits");
        let routing = self.section::<RoutingSection>(table.get("routing"), "routing");
        let log = self.section::<LogSection>(table.get("log"), "log");
        let card = self.section::<CardSection>(table.get("card"), "card");
        let tls = match table.get("tls") {
            None => Some(None),
            Some(v) => self
                .deserialize::<crate::tls::TlsSection>(v, "tls")
                .and_then(|t| self.sub_settings("tls", crate::tls::settings(&t)))
                .map(Some),
        };
        let push_guard = self
            .section::<crate::push_guard::PushGuardSection>(table.get("push_guard"), "push_guard")
            .and_then(|p| self.sub_settings("push_guard", crate::push_guard::settings(&p)));
        let card_refresh =
            self.section::<CardRefreshSection>(table.get("card_refresh"), "card_refresh");
        let upstreams = self.upstream_sections(table.get("upstreams"));

        let server = server.and_then(|s| self.server(s));
        let limits = limits.and_then(|l| self.limits(l));
        let log = log.and_then(|l| self.log(l));
        let upstreams: Vec<_> = upstreams
            .into_iter()
            .filter_map(|(i, u)| self.upstream(i, u))
            .collect();
        let routing = routing.and_then(|r| self.routing(r, table.get("upstreams")));
        let identity_configured = table
            .get("card")
            .and_then(Value::as_table)
            .is_some_and(|t| {
                [
                    "name",
                    "description",
                    "version",
                    "provider",
                    "documentation_url",
                    "icon_url",
                ]
                .iter()
                .any(|k| t.contains_key(*k))
            });
        let card = card.and_then(|c| self.card(c, identity_configured));
        let card_refresh = card_refresh.and_then(|c| self.card_refresh(c));
        let auth = match table.get("auth") {
            None => Some(None),
            Some(v) => self
                .deserialize::<crate::auth::config::AuthSection>(v, "auth")
                .and_then(|a| self.sub_settings("auth", crate::auth::config::auth(&a)))
                .map(Some),
        };
        let names: Vec<String> = upstreams.iter().map(|u| u.name.clone()).collect();
        let rate_limits = self
            .section::<crate::limits::rate::RateLimitsSection>(
                table.get("rate_limits"),
                "rate_limits",
            )
            .and_then(|r| {
                self.sub_settings("rate_limits", crate::limits::rate::settings(&r, &names))
            });
        let concurrency = self
            .section::<super::file::ConcurrencySection>(table.get("concurrency"), "concurrency")
            .and_then(|c| self.concurrency(c));
        let authz = self
            .section::<crate::auth::config::AuthzSection>(table.get("authz"), "authz")
            .and_then(|a| self.sub_settings("authz", crate::auth::config::authz(&a, &names)));
        if let (Some(None), Some(rules)) = (&auth, &authz) {
            if !rules.is_open() {
                self.err(
                    "authz",
                    "authorization rules need authenticated callers: configure [auth]",
                );
            }
        }
        if let (Some(server), Some(None)) = (&server, &tls) {
            self.plaintext_allowed(server);
        }
        Some(Config {
            server: server?,
            tls: tls?,
            push_guard: push_guard?,
            auth: auth?,
            authz: authz?,
            rate_limits: rate_limits?,
            concurrency: concurrency?,
            limits: limits?,
            routing: routing?,
            card: card?,
            card_refresh: card_refresh?,
            upstreams,
            log: log?,
        })
    }

    fn section<T: DeserializeOwned + Default>(
        &mut self,
        value: Option<&Value>,
        path: &str,
    ) -> Option<T> {
        let Some(value) = value else {
            return Some(T::default());
        };
        self.deserialize(value, path)
    }

    /// Deserializes one table, reporting every bad key in it: after each
    /// error the offending key is removed and the rest is tried again, so a
    /// typo does not hide the wrong type two lines below it.
    fn deserialize<T: DeserializeOwned>(&mut self, value: &Value, path: &str) -> Option<T> {
        let mut value = value.clone();
        let mut reported: Vec<String> = Vec::new();
        // Bounded: each round removes a key, and tables are small.
        for _ in 0..64 {
            let e = match serde_path_to_error::deserialize::<_, T>(value.clone()) {
                // With keys removed the rest still gets its value checks;
                // the errors already recorded make the load fail anyway.
                Ok(v) => return Some(v),
                Err(e) => e,
            };
            let segments: Vec<Segment> = e.path().iter().cloned().collect();
            let inner = e.path().to_string();
            let full = match inner.as_str() {
                "." | "" | "?" => path.to_string(),
                p => format!("{path}.{p}"),
            };
            let message = describe(&e.into_inner().to_string());
            // A key removed for a bad value is then "missing": said already.
            let follow_on = reported
                .iter()
                .any(|k| message == format!("missing field `{k}`"));
            if !follow_on {
                self.err(full, message);
            }
            match segments.last() {
                Some(Segment::Map { key }) if remove(&mut value, &segments) => {
                    reported.push(key.clone())
                }
                _ => return None,
            }
        }
        None
    }

    fn upstream_sections(&mut self, value: Option<&Value>) -> Vec<(usize, UpstreamSection)> {
        let list = match value {
            None => {
                self.err(
                    "upstreams",
                    "at least one upstream is required: add an [[upstreams]] table or pass --upstream NAME=URL",
                );
                return Vec::new();
            }
            Some(Value::Array(list)) => list,
            Some(_) => {
                self.err("upstreams", "must be an array of tables ([[upstreams]])");
                return Vec::new();
            }
        };
        if list.is_empty() {
            self.err("upstreams", "at least one upstream is required");
        }
        let sections: Vec<_> = list
            .iter()
            .enumerate()
            .filter_map(|(i, u)| {
                self.deserialize::<UpstreamSection>(u, &format!("upstreams[{i}]"))
                    .map(|s| (i, s))
            })
            .collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, s) in &sections {
            if let Some(first) = seen.insert(s.name.as_str(), *i) {
                self.err(
                    format!("upstreams[{i}].name"),
                    format!(
                        "duplicate upstream name '{}' (also upstreams[{first}])",
                        s.name
                    ),
                );
            }
        }
        sections
    }

    fn server(&mut self, s: ServerSection) -> Option<Server> {
        // Every field is checked before any `?`, so all problems are reported.
        let listen = self.addr("server.listen", &s.listen);
        let admin_listen = self.addr("server.admin_listen", &s.admin_listen);
        let public_url = s.public_url.as_deref().map(|u| self.public_url(u));
        let shutdown_grace = self.duration("server.shutdown_grace", &s.shutdown_grace);
        if s.http2_max_concurrent_streams == 0 {
            self.err("server.http2_max_concurrent_streams", "must be at least 1");
        }
        let release_memory_interval =
            self.duration_or_off("server.release_memory_interval", &s.release_memory_interval);
        let mut problems = Vec::new();
        let trusted_proxies =
            crate::cidr::parse("server.trusted_proxies", &s.trusted_proxies, &mut problems);
        for (path, message) in problems {
            self.err(path, message);
        }
        Some(Server {
            listen: listen?,
            admin_listen: admin_listen?,
            public_url: public_url.map_or(Some(None), |p| p.map(Some))?,
            shutdown_grace: shutdown_grace?,
            http2_max_concurrent_streams: s.http2_max_concurrent_streams.max(1),
            plaintext: s.plaintext,
            trusted_proxies,
            proxy_protocol: s.proxy_protocol,
            release_memory_interval: release_memory_interval?,
        })
    }

    /// Records the problems a module's own validation found, under `path`.
    fn sub_settings<T>(
        &mut self,
        path: &str,
        result: Result<T, Vec<(String, String)>>,
    ) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(problems) => {
                for (field, message) in problems {
                    let full = if field.is_empty() {
                        path.to_string()
                    } else {
                        format!("{path}.{field}")
                    };
                    self.err(full, message);
                }
                None
            }
        }
    }

    /// Plain HTTP is implied on loopback (the sidecar and local use);
    /// anywhere else it must be asked for.
    fn plaintext_allowed(&mut self, server: &Server) {
        if !server.plaintext && !server.listen.ip().is_loopback() {
            self.err(
                "server.plaintext",
                format!(
                    "refusing to serve plain HTTP on {}: configure [tls], or set server.plaintext = true (or --plaintext) when TLS ends before the gateway",
                    server.listen
                ),
            );
        }
    }

    fn public_url(&mut self, text: &str) -> Option<PublicUrl> {
        let path = "server.public_url";
        let uri = match text.parse::<Uri>() {
            Ok(u) => u,
            Err(e) => {
                self.err(path, format!("not a URL: {e}"));
                return None;
            }
        };
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            self.err(
                path,
                "must be an absolute URL like https://agents.example.com",
            );
            return None;
        };
        if scheme != "http" && scheme != "https" {
            self.err(path, "scheme must be http or https");
            return None;
        }
        if uri.query().is_some() {
            self.err(path, "must not have a query string");
            return None;
        }
        let trimmed = uri.path().trim_end_matches('/');
        Some(PublicUrl {
            origin: format!("{scheme}://{authority}"),
            path: if trimmed.is_empty() {
                "/".into()
            } else {
                trimmed.into()
            },
        })
    }

    fn limits(&mut self, l: LimitsSection) -> Option<Limits> {
        let body = self.size("limits.max_body_bytes", l.max_body_bytes, 1);
        // hyper refuses read buffers under 8 KiB.
        let header = self.size("limits.max_header_bytes", l.max_header_bytes, 8192);
        let event = self.size("limits.max_sse_event_bytes", l.max_sse_event_bytes, 1024);
        let header_read = self.duration("limits.header_read_timeout", &l.header_read_timeout);
        let body_read = self.duration("limits.body_read_timeout", &l.body_read_timeout);
        let sse_idle = self.duration("limits.sse_idle_timeout", &l.sse_idle_timeout);
        Some(Limits {
            max_body_bytes: body?,
            max_header_bytes: header?,
            header_read_timeout: header_read?,
            body_read_timeout: body_read?,
            sse_idle_timeout: sse_idle?,
            max_sse_event_bytes: event?,
        })
    }

    fn routing(&mut self, r: RoutingSection, upstreams: Option<&Value>) -> Option<Routing> {
        if let Some(name) = &r.default_upstream {
            let known = upstreams
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|u| u.get("name").and_then(Value::as_str) == Some(name));
            if !known {
                self.err(
                    "routing.default_upstream",
                    format!("names no configured upstream: '{name}'"),
                );
            }
        }
        let skill_header = match HeaderName::from_bytes(r.skill_header.as_bytes()) {
            Ok(h) => Some(h),
            Err(_) => {
                self.err("routing.skill_header", "not a valid HTTP header name");
                None
            }
        };
        if r.metadata_keys.iter().any(String::is_empty) {
            self.err("routing.metadata_keys", "keys must not be empty");
        }
        let affinity_ttl = self.duration("routing.affinity_ttl", &r.affinity_ttl);
        let probe_timeout = self.duration("routing.probe_timeout", &r.probe_timeout);
        if r.affinity_capacity == 0 {
            self.err("routing.affinity_capacity", "must be at least 1");
        }
        let m = &r.matcher;
        if !(m.min_score.is_finite() && m.min_score >= 0.0) {
            self.err("routing.match.min_score", "must be a number >= 0");
        }
        if !(m.margin.is_finite() && m.margin >= 0.0) {
            self.err("routing.match.margin", "must be a number >= 0");
        }
        Some(Routing {
            default_upstream: r.default_upstream,
            skill_header: skill_header?,
            metadata_keys: r.metadata_keys,
            affinity_ttl: affinity_ttl?,
            affinity_capacity: r.affinity_capacity.max(1),
            probe_timeout: probe_timeout?,
            matcher: MatchSettings {
                enabled: m.enabled,
                min_score: m.min_score,
                margin: m.margin,
            },
        })
    }

    fn concurrency(&mut self, c: super::file::ConcurrencySection) -> Option<Concurrency> {
        if c.max_streams == 0 {
            self.err("concurrency.max_streams", "must be at least 1");
        }
        if c.max_streams_per_caller == 0 {
            self.err("concurrency.max_streams_per_caller", "must be at least 1");
        }
        Some(Concurrency {
            max_streams: c.max_streams.max(1) as usize,
            max_streams_per_caller: c.max_streams_per_caller.max(1) as usize,
        })
    }

    fn card(&mut self, c: CardSection, identity_configured: bool) -> Option<Card> {
        for (path, value) in [("card.name", &c.name), ("card.version", &c.version)] {
            if value.trim().is_empty() {
                self.err(path, "must not be empty");
            }
        }
        for (path, url) in [
            ("card.documentation_url", &c.documentation_url),
            ("card.icon_url", &c.icon_url),
        ] {
            if let Some(u) = url {
                self.absolute_url(path, u);
            }
        }
        if let Some(p) = &c.provider {
            self.absolute_url("card.provider.url", &p.url);
        }
        let cache_max_age = self.duration("card.cache_max_age", &c.cache_max_age);
        Some(Card {
            name: c.name,
            description: c.description,
            version: c.version,
            provider: c.provider.map(|p| Provider {
                organization: p.organization,
                url: p.url,
            }),
            documentation_url: c.documentation_url,
            icon_url: c.icon_url,
            cache_max_age: cache_max_age?,
            extended_card: c.extended_card,
            identity_configured,
        })
    }

    fn card_refresh(&mut self, c: CardRefreshSection) -> Option<CardRefresh> {
        let interval = self.duration("card_refresh.interval", &c.interval);
        let max_staleness = self.duration("card_refresh.max_staleness", &c.max_staleness);
        let timeout = self.duration("card_refresh.timeout", &c.timeout);
        let ready_when = match c.ready_when.as_str() {
            "any" => Some(ReadyWhen::Any),
            "all" => Some(ReadyWhen::All),
            other => {
                self.err(
                    "card_refresh.ready_when",
                    format!("must be \"any\" or \"all\", not \"{other}\""),
                );
                None
            }
        };
        Some(CardRefresh {
            interval: interval?,
            max_staleness: max_staleness?,
            timeout: timeout?,
            ready_when: ready_when?,
        })
    }

    fn absolute_url(&mut self, path: &str, text: &str) -> Option<Uri> {
        match text.parse::<Uri>() {
            Ok(u) if u.scheme().is_some() && u.authority().is_some() => Some(u),
            _ => {
                self.err(path, format!("must be an absolute URL, not \"{text}\""));
                None
            }
        }
    }

    fn skills(&mut self, at: &str, s: SkillsSection) -> SkillPolicy {
        let mut published: HashMap<&str, &str> = HashMap::new();
        for (from, to) in &s.rename {
            if to.is_empty() {
                self.err(
                    format!("{at}.rename.{from}"),
                    "the new id must not be empty",
                );
            }
            if let Some(other) = published.insert(to.as_str(), from.as_str()) {
                self.err(
                    format!("{at}.rename.{from}"),
                    format!("'{to}' is also the new id of '{other}'"),
                );
            }
        }
        SkillPolicy {
            include: s.include,
            exclude: s.exclude,
            rename: s.rename,
        }
    }

    fn log(&mut self, l: LogSection) -> Option<Log> {
        let format = match l.format.as_str() {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            other => {
                self.err(
                    "log.format",
                    format!("must be \"text\" or \"json\", not \"{other}\""),
                );
                None
            }
        };
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&l.level) {
            self.err("log.level", format!("not a valid level or filter: {e}"));
            return None;
        }
        Some(Log {
            format: format?,
            level: l.level,
        })
    }

    fn upstream(&mut self, i: usize, u: UpstreamSection) -> Option<Upstream> {
        let at = |field: &str| format!("upstreams[{i}].{field}");
        if u.name.is_empty()
            || !u
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            self.err(
                at("name"),
                "must be non-empty and use only letters, digits, '-' and '_' (it appears in URLs)",
            );
        }
        let urls = self.replica_urls(i, &u);
        let balance = match u.balance.as_str() {
            "least_outstanding" => Some(Balance::LeastOutstanding),
            "round_robin" => Some(Balance::RoundRobin),
            other => {
                self.err(
                    at("balance"),
                    format!("must be \"least_outstanding\" or \"round_robin\", not \"{other}\""),
                );
                None
            }
        };
        let open_for = self.duration(&at("breaker.open_for"), &u.breaker.open_for);
        if u.breaker.failures == 0 {
            self.err(at("breaker.failures"), "must be at least 1");
        }
        if u.max_in_flight == 0 {
            self.err(at("max_in_flight"), "must be at least 1");
        }
        let queue_timeout = self.duration(&at("queue_timeout"), &u.queue_timeout);
        let connect_timeout = self.duration(&at("connect_timeout"), &u.connect_timeout);
        let response_header_timeout =
            self.duration(&at("response_header_timeout"), &u.response_header_timeout);
        let card_url = u
            .card_url
            .as_deref()
            .map(|c| self.upstream_url(&at("card_url"), c));
        let identity_header = match u
            .identity_header
            .as_deref()
            .map(|h| HeaderName::from_bytes(h.as_bytes()))
        {
            None => Some(None),
            Some(Ok(h)) => Some(Some(h)),
            Some(Err(_)) => {
                self.err(at("identity_header"), "not a valid HTTP header name");
                None
            }
        };
        let skills = self.skills(&at("skills"), u.skills);
        let tls = self.upstream_tls(
            &at("tls"),
            u.tls.as_ref(),
            urls.as_deref(),
            card_url.as_ref(),
        );
        let headers: Vec<_> = u
            .headers
            .iter()
            .filter_map(|(name, source)| self.header(&at(&format!("headers.{name}")), name, source))
            .collect();
        let urls = urls?;
        Some(Upstream {
            name: u.name,
            url: urls.first()?.clone(),
            urls,
            balance: balance?,
            breaker: Breaker {
                failures: u.breaker.failures.max(1),
                open_for: open_for?,
            },
            max_in_flight: u.max_in_flight.max(1) as usize,
            queue: u.queue as usize,
            queue_timeout: queue_timeout?,
            connect_timeout: connect_timeout?,
            response_header_timeout: response_header_timeout?,
            http2: u.http2,
            http2_streams_per_connection: u.http2_streams_per_connection as usize,
            // A pool smaller than the calls in flight closes a connection
            // after each call past it and opens a new one for the next:
            // connect churn and TIME_WAIT sockets under steady load.
            max_idle_connections: u.max_idle_connections.unwrap_or(u.max_in_flight) as usize,
            headers,
            card_url: card_url.map_or(Some(None), |c| c.map(Some))?,
            skills,
            forward_credentials: u.forward_credentials,
            identity_header: identity_header?,
            tls: tls?,
        })
    }

    /// `[upstreams.tls]`: built when given, the shared default otherwise; a
    /// section for an upstream with no `https://` URL is a mistake.
    fn upstream_tls(
        &mut self,
        path: &str,
        section: Option<&crate::tls::upstream::UpstreamTlsSection>,
        urls: Option<&[Uri]>,
        card_url: Option<&Option<Uri>>,
    ) -> Option<crate::tls::upstream::UpstreamTls> {
        use crate::tls::upstream;
        let Some(section) = section.filter(|s| !s.is_empty()) else {
            return self.sub_settings(path, upstream::default_settings());
        };
        let https = |u: &Uri| u.scheme_str() == Some("https");
        let any_https = urls.is_some_and(|urls| urls.iter().any(https))
            || matches!(card_url, Some(Some(u)) if https(u));
        // Only said when every URL parsed: a bad URL has its own error.
        let all_parsed = urls.is_some() && !matches!(card_url, Some(None));
        if all_parsed && !any_https {
            self.err(
                path,
                "is set, but none of this upstream's URLs is https:// (TLS settings would never be used)",
            );
        }
        self.sub_settings(path, upstream::settings(section))
    }

    /// `url` (one replica) or `urls` (several), not both, not neither.
    fn replica_urls(&mut self, i: usize, u: &UpstreamSection) -> Option<Vec<Uri>> {
        let texts: Vec<(String, &str)> = match (&u.url, u.urls.is_empty()) {
            (Some(url), true) => vec![(format!("upstreams[{i}].url"), url.as_str())],
            (None, false) => u
                .urls
                .iter()
                .enumerate()
                .map(|(j, t)| (format!("upstreams[{i}].urls[{j}]"), t.as_str()))
                .collect(),
            (Some(_), false) => {
                self.err(
                    format!("upstreams[{i}].urls"),
                    "give url (one replica) or urls (several), not both",
                );
                return None;
            }
            (None, true) => {
                self.err(
                    format!("upstreams[{i}].url"),
                    "is required (or urls, for several replicas)",
                );
                return None;
            }
        };
        let parsed: Vec<Option<Uri>> = texts
            .iter()
            .map(|(path, t)| self.upstream_url(path, t))
            .collect();
        parsed.into_iter().collect()
    }

    fn upstream_url(&mut self, path: &str, text: &str) -> Option<Uri> {
        let uri = match text.parse::<Uri>() {
            Ok(u) => u,
            Err(e) => {
                self.err(path, format!("not a URL: {e}"));
                return None;
            }
        };
        match (uri.scheme_str(), uri.authority()) {
            (Some("http" | "https"), Some(_)) => Some(uri),
            _ => {
                self.err(
                    path,
                    "must be an absolute http or https URL like http://127.0.0.1:9001 or https://agent.example.com",
                );
                None
            }
        }
    }

    fn header(
        &mut self,
        path: &str,
        name: &str,
        source: &HeaderSource,
    ) -> Option<(HeaderName, HeaderValue)> {
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            self.err(path, "not a valid HTTP header name");
            return None;
        };
        if crate::upstream::headers::is_hop_by_hop(&header) || header == http::header::HOST {
            self.err(
                path,
                "hop-by-hop and Host headers are managed by the gateway and cannot be set",
            );
            return None;
        }
        let text = match source {
            HeaderSource::Value(v) => v.clone(),
            HeaderSource::Env(e) => match std::env::var(&e.env) {
                Ok(v) => v,
                Err(_) => {
                    self.err(path, format!("environment variable {} is not set", e.env));
                    return None;
                }
            },
            HeaderSource::File(f) => match std::fs::read_to_string(&f.file) {
                Ok(v) => v.trim_end_matches(['\r', '\n']).to_string(),
                Err(e) => {
                    self.err(path, format!("cannot read {}: {e}", f.file));
                    return None;
                }
            },
        };
        match HeaderValue::from_str(&text) {
            Ok(mut value) => {
                value.set_sensitive(true);
                Some((header, value))
            }
            Err(_) => {
                self.err(path, "value is not a valid HTTP header value");
                None
            }
        }
    }

    fn addr(&mut self, path: &str, text: &str) -> Option<SocketAddr> {
        match text.parse() {
            Ok(a) => Some(a),
            Err(_) => {
                self.err(
                    path,
                    format!("expected IP:port like 127.0.0.1:8080 or [::]:8080, not \"{text}\""),
                );
                None
            }
        }
    }

    fn duration(&mut self, path: &str, text: &str) -> Option<Duration> {
        match humantime::parse_duration(text) {
            Ok(d) if !d.is_zero() => Some(d),
            Ok(_) => {
                self.err(path, "must be greater than zero");
                None
            }
            Err(_) => {
                self.err(
                    path,
                    format!(
                        "expected a duration like \"500ms\", \"30s\" or \"5m\", not \"{text}\""
                    ),
                );
                None
            }
        }
    }

    /// A duration where "0s" turns the feature off: `Some(None)`.
    fn duration_or_off(&mut self, path: &str, text: &str) -> Option<Option<Duration>> {
        match humantime::parse_duration(text) {
            Ok(d) if d.is_zero() => Some(None),
            _ => self.duration(path, text).map(Some),
        }
    }

    fn size(&mut self, path: &str, value: u64, min: u64) -> Option<usize> {
        match usize::try_from(value) {
            Ok(v) if value >= min => Some(v),
            _ => {
                self.err(path, format!("must be at least {min}"));
                None
            }
        }
    }
}

fn describe(message: &str) -> String {
    if message.contains("untagged enum HeaderSource") {
        "expected a string, { env = \"VAR\" } or { file = \"/path\" }".to_string()
    } else {
        message.trim_end().to_string()
    }
}

/// Removes the value at `path` inside `value`; false when it is not there.
fn remove(value: &mut Value, path: &[Segment]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = value;
    for segment in parents {
        let next = match (segment, at) {
            (Segment::Map { key }, Value::Table(t)) => t.get_mut(key),
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return false,
        }
    }
    match (last, at) {
        (Segment::Map { key }, Value::Table(t)) => t.remove(key).is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<(String, String)> {
        load_str(text)
            .unwrap_err()
            .0
            .into_iter()
            .map(|e| (e.path, e.message))
            .collect()
    }

    #[test]
    fn the_idle_pool_follows_max_in_flight_unless_set() {
        let up = |extra: &str| {
            let c = load_str(&format!(
                "[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\n{extra}\n"
            ))
            .unwrap();
            c.upstreams[0].max_idle_connections
        };
        assert_eq!(up("max_in_flight = 8"), 8);
        assert_eq!(up("max_in_flight = 8\nmax_idle_connections = 3"), 3);
        assert_eq!(up("max_idle_connections = 0"), 0);
    }

    #[test]
    fn minimal_config_gets_defaults() {
        let c =
            load_str("[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\n").unwrap();
        assert_eq!(c.server.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.limits.max_body_bytes, 10 * 1024 * 1024);
        assert_eq!(c.upstreams[0].connect_timeout, Duration::from_secs(5));
        assert_eq!(
            c.upstreams[0].max_idle_connections, 1024,
            "the idle pool holds as many connections as calls may be in flight"
        );
        assert!(c.server.public_url.is_none());
        assert!(
            c.server.trusted_proxies.is_empty(),
            "no proxy is trusted by default"
        );
        assert_eq!(
            c.server.release_memory_interval,
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn zero_turns_the_memory_release_off() {
        let upstream = "[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\n";
        let off = load_str(&format!(
            "[server]\nrelease_memory_interval = \"0s\"\n{upstream}"
        ))
        .unwrap();
        assert_eq!(off.server.release_memory_interval, None);
        let got = errors(&format!(
            "[server]\nrelease_memory_interval = \"often\"\n{upstream}"
        ));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "server.release_memory_interval");
        assert!(got[0].1.contains("\"often\""), "{got:?}");
    }

    #[test]
    fn reports_every_problem_with_its_path() {
        let text = r#"
            surprise = 1
            [server]
            listen = "nowhere"
            public_url = "ftp://x"
            trusted_proxies = ["10.0.0.0/8", "the ingress"]
            [limits]
            body_read_timeout = "soon"
            max_header_bytes = 100
            [routing]
            default_upstream = "ghost"
            [log]
            format = "xml"
            [[upstreams]]
            name = "a"
            url = "http://127.0.0.1:1"
            typo = true
            [[upstreams]]
            name = "a b"
            url = "not a url"
            connect_timeout = "0s"
            headers = { "X-Key" = { env = "A2A_GATEWAY_TEST_SURELY_UNSET" }, "Connection" = "x" }
        "#;
        let got = errors(text);
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        for want in [
            "surprise",
            "server.listen",
            "server.public_url",
            "server.trusted_proxies[1]",
            "limits.max_header_bytes",
            "limits.body_read_timeout",
            "routing.default_upstream",
            "log.format",
            "upstreams[0].typo",
            "upstreams[1].name",
            "upstreams[1].url",
            "upstreams[1].connect_timeout",
            "upstreams[1].headers.X-Key",
            "upstreams[1].headers.Connection",
        ] {
            assert!(paths.contains(&want), "missing {want} in {got:#?}");
        }
        assert!(got
            .iter()
            .any(|(p, m)| p == "upstreams[0].typo" && m.contains("unknown field")));
    }

    #[test]
    fn https_upstreams_and_their_tls_settings() {
        let c = load_str("[[upstreams]]\nname = \"a\"\nurl = \"https://agent.example.com/a2a\"\n")
            .unwrap();
        assert_eq!(c.upstreams[0].url.scheme_str(), Some("https"));
        assert!(!c.upstreams[0].tls.is_configured());

        // TLS settings for an upstream that never speaks TLS are a mistake...
        let got = errors("[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\n[upstreams.tls]\nserver_name = \"h\"\n");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "upstreams[0].tls");
        assert!(
            got[0].1.contains("none of this upstream's URLs is https"),
            "{got:?}"
        );
        // (an empty section is no settings)...
        load_str("[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\n[upstreams.tls]\n").unwrap();
        // ...unless the card is fetched over https.
        let c = load_str("[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\ncard_url = \"https://cards.example.com/a.json\"\n[upstreams.tls]\nserver_name = \"cards.internal\"\n")
            .unwrap();
        assert!(c.upstreams[0].tls.is_configured());

        // Problems inside the section name their field.
        let got = errors("[[upstreams]]\nname = \"a\"\nurl = \"https://h:1\"\n[upstreams.tls]\nca = \"/nonexistent/ca.pem\"\ncert = \"/nonexistent/c.pem\"\ntypo = 1\n");
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "upstreams[0].tls.typo",
                "upstreams[0].tls.ca",
                "upstreams[0].tls.key"
            ],
            "{got:?}"
        );

        let got = errors("[[upstreams]]\nname = \"a\"\nurl = \"ftp://h:1\"\n");
        assert!(got[0].1.contains("http or https"), "{got:?}");
    }

    #[test]
    fn wrong_types_name_the_nested_field() {
        let got = errors("[server]\nlisten = 5\n[[upstreams]]\nname = \"a\"\nurl = \"http://h\"\nheaders = { X = 3 }\n");
        assert_eq!(got[0].0, "server.listen");
        assert_eq!(got[1].0, "upstreams[0].headers.X");
    }

    #[test]
    fn every_bad_key_in_one_table_is_reported() {
        let got = errors(
            "[[upstreams]]\nname = 5\nurl = \"http://h:1\"\ntypo = 1\nhttp2 = \"yes\"\nother = 2\n",
        );
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        for want in [
            "upstreams[0].name",
            "upstreams[0].typo",
            "upstreams[0].http2",
            "upstreams[0].other",
        ] {
            assert!(paths.contains(&want), "missing {want} in {got:#?}");
        }
        assert!(
            !got.iter().any(|(_, m)| m.contains("missing field")),
            "{got:#?}"
        );
    }

    #[test]
    fn duplicate_names_and_missing_upstreams() {
        let dup = "[[upstreams]]\nname=\"a\"\nurl=\"http://h:1\"\n[[upstreams]]\nname=\"a\"\nurl=\"http://h:2\"\n";
        assert_eq!(errors(dup)[0].0, "upstreams[1].name");
        assert_eq!(errors("")[0].0, "upstreams");
    }

    #[test]
    fn syntax_error_is_reported_with_position() {
        let got = errors("[server\n");
        assert!(got[0].1.contains("line 1"), "{got:?}");
    }

    #[test]
    fn header_values_come_from_env_and_file() {
        std::env::set_var("A2A_GATEWAY_TEST_HEADER", "s3cret");
        let dir = std::env::temp_dir().join(format!("a2a-gw-test-{}", std::process::id()));
        std::fs::write(&dir, "from-file\n").unwrap();
        let text = format!(
            "[[upstreams]]\nname=\"a\"\nurl=\"http://h:1\"\nheaders = {{ X-A = \"plain\", X-B = {{ env = \"A2A_GATEWAY_TEST_HEADER\" }}, X-C = {{ file = \"{}\" }} }}\n",
            dir.display()
        );
        let c = load_str(&text).unwrap();
        let h = &c.upstreams[0].headers;
        assert_eq!(h[0].1, "plain");
        assert_eq!(h[1].1, "s3cret");
        assert!(h[1].1.is_sensitive());
        assert_eq!(h[2].1, "from-file");
        let _ = std::fs::remove_file(dir);
    }

    #[test]
    fn overrides_replace_and_add() {
        let o = Overrides {
            listen: Some("127.0.0.1:0".into()),
            admin_listen: None,
            public_url: Some("https://gw.example.com/a2a/".into()),
            upstreams: vec![
                ("a".into(), "http://h:9".into()),
                ("b".into(), "http://h:10".into()),
            ],
            plaintext: false,
        };
        let c = load_with(Some("[[upstreams]]\nname=\"a\"\nurl=\"http://h:1\"\n"), &o).unwrap();
        assert_eq!(c.server.listen.port(), 0);
        assert_eq!(c.upstreams.len(), 2);
        assert_eq!(c.upstreams[0].url, "http://h:9/");
        let public = c.server.public_url.unwrap();
        assert_eq!(public.path, "/a2a");
        assert_eq!(public.endpoint(), "https://gw.example.com/a2a");
        // Flags alone, no file: the zero-config sidecar.
        let c = load_with(
            None,
            &Overrides {
                upstreams: vec![("x".into(), "http://127.0.0.1:1".into())],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.upstreams[0].name, "x");
    }
}

//! `[[upstreams]]`: each agent's replicas, timeouts, TLS, headers and
//! limits, checked entry by entry so one bad agent does not hide another's
//! problems.

use super::*;

impl Checker {
    pub(super) fn upstream_sections(
        &mut self,
        value: Option<&Value>,
    ) -> Vec<(usize, UpstreamSection)> {
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

    pub(super) fn upstream(&mut self, i: usize, u: UpstreamSection) -> Option<Upstream> {
        let at = |field: &str| format!("upstreams[{i}].{field}");
        self.upstream_name(&at("name"), &u.name);
        let urls = self.replica_urls(i, &u);
        let balance = self.balance(&at("balance"), &u.balance);
        let open_for = self.duration(&at("breaker.open_for"), &u.breaker.open_for);
        let failures = self.at_least_one(at("breaker.failures"), u.breaker.failures);
        let max_in_flight = self.at_least_one(at("max_in_flight"), u.max_in_flight);
        let queue_timeout = self.duration(&at("queue_timeout"), &u.queue_timeout);
        let connect_timeout = self.duration(&at("connect_timeout"), &u.connect_timeout);
        let response_header_timeout =
            self.duration(&at("response_header_timeout"), &u.response_header_timeout);
        let card_url = u
            .card_url
            .as_deref()
            .map(|c| self.upstream_url(&at("card_url"), c));
        let identity_header =
            self.identity_header(&at("identity_header"), u.identity_header.as_deref());
        let card_signature = self.card_signature(i, &u);
        let skills = self.skills(&at("skills"), u.skills);
        let tls = self.upstream_tls(&at("tls"), u.tls.as_ref());
        let headers = self.upstream_headers(&at("headers"), &u.headers);
        let protocol_versions =
            self.protocol_versions(&at("protocol_versions"), u.protocol_versions.as_deref());
        let urls = urls?;
        Some(Upstream {
            name: u.name,
            url: urls.first()?.clone(),
            urls,
            balance: balance?,
            breaker: Breaker {
                failures,
                open_for: open_for?,
            },
            max_in_flight: max_in_flight as usize,
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
            protocol_versions: protocol_versions?,
            card_signature: card_signature?,
        })
    }

    /// `card_signature` and `[upstreams.card_trust]`.
    fn card_signature(
        &mut self,
        i: usize,
        u: &UpstreamSection,
    ) -> Option<crate::config::card_trust::CardSignature> {
        let checked = crate::config::card_trust::card_signature(
            u.card_signature.as_deref(),
            u.card_trust.as_ref(),
        );
        checked
            .map_err(|problems| {
                for (field, why) in problems {
                    self.err(format!("upstreams[{i}].{field}"), why);
                }
            })
            .ok()
    }

    /// `protocol_versions`: at least one, each a version the gateway speaks.
    fn protocol_versions(
        &mut self,
        path: &str,
        versions: Option<&[String]>,
    ) -> Option<Option<Vec<crate::a2a::Version>>> {
        let Some(versions) = versions else {
            return Some(None);
        };
        if versions.is_empty() {
            self.err(
                path,
                "must name at least one version (\"0.1\", \"0.3\" or \"1.0\"), or be left out",
            );
            return None;
        }
        let mut read = Vec::new();
        for (i, text) in versions.iter().enumerate() {
            match crate::a2a::dialect::version_from(text) {
                Some(v) if !read.contains(&v) => read.push(v),
                Some(_) => {}
                None => {
                    let shown: String = text.chars().take(32).collect();
                    self.err(
                        format!("{path}[{i}]"),
                        format!("\"{shown}\" is not an A2A version the gateway speaks: \"0.1\", \"0.3\" (also 0.2) or \"1.0\""),
                    );
                }
            }
        }
        Some(Some(read))
    }

    /// `[upstreams.headers]`: each header to set on calls, checked.
    fn upstream_headers(
        &mut self,
        path: &str,
        headers: &std::collections::BTreeMap<String, HeaderSource>,
    ) -> Vec<(HeaderName, HeaderValue)> {
        headers
            .iter()
            .filter_map(|(name, source)| self.header(&format!("{path}.{name}"), name, source))
            .collect()
    }

    /// An upstream's name appears in URLs (`/agents/{name}`).
    fn upstream_name(&mut self, path: &str, name: &str) {
        let url_safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if name.is_empty() || !name.chars().all(url_safe) {
            self.err(
                path,
                "must be non-empty and use only letters, digits, '-' and '_' (it appears in URLs)",
            );
        }
    }

    fn balance(&mut self, path: &str, balance: &str) -> Option<Balance> {
        self.choice(
            path,
            balance,
            &[
                ("least_outstanding", Balance::LeastOutstanding),
                ("round_robin", Balance::RoundRobin),
            ],
        )
    }

    /// `identity_header`: `Some(None)` when not set, `None` when invalid.
    fn identity_header(&mut self, path: &str, name: Option<&str>) -> Option<Option<HeaderName>> {
        match name.map(|h| HeaderName::from_bytes(h.as_bytes())) {
            None => Some(None),
            Some(Ok(h)) => Some(Some(h)),
            Some(Err(_)) => {
                self.err(path, "not a valid HTTP header name");
                None
            }
        }
    }

    /// `[upstreams.tls]`: built when given, the shared default otherwise.
    /// Set for an upstream whose URLs are all `http://`, it still applies:
    /// to the gRPC interface its card may name over TLS (`https://` or
    /// `grpcs://`, `crate::egress::grpc`).
    pub(super) fn upstream_tls(
        &mut self,
        path: &str,
        section: Option<&crate::tls::upstream::UpstreamTlsSection>,
    ) -> Option<crate::tls::upstream::UpstreamTls> {
        use crate::tls::upstream;
        let Some(section) = section.filter(|s| !s.is_empty()) else {
            return self.sub_settings(path, upstream::default_settings());
        };
        self.sub_settings(path, upstream::settings(section))
    }

    /// `url` (one replica) or `urls` (several), not both, not neither.
    pub(super) fn replica_urls(&mut self, i: usize, u: &UpstreamSection) -> Option<Vec<Uri>> {
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

    pub(super) fn upstream_url(&mut self, path: &str, text: &str) -> Option<Uri> {
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

    pub(super) fn header(
        &mut self,
        path: &str,
        name: &str,
        source: &HeaderSource,
    ) -> Option<(HeaderName, HeaderValue)> {
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            self.err(path, "not a valid HTTP header name");
            return None;
        };
        if crate::http::hop_by_hop::is_hop_by_hop(&header) || header == http::header::HOST {
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
}

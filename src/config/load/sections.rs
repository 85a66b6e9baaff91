//! The gateway-wide sections: `[server]`, `[limits]`, `[routing]`,
//! `[concurrency]`, `[card]`, `[card_refresh]` and `[log]`.

use super::*;

impl Checker {
    pub(super) fn server(&mut self, s: ServerSection) -> Option<Server> {
        // Every field is checked before any `?`, so all problems are reported.
        let listen = self.addr("server.listen", &s.listen);
        let admin_listen = self.addr("server.admin_listen", &s.admin_listen);
        let public_url = s.public_url.as_deref().map(|u| self.public_url(u));
        let shutdown_grace = self.duration("server.shutdown_grace", &s.shutdown_grace);
        let http2_max_concurrent_streams = self.at_least_one(
            "server.http2_max_concurrent_streams",
            s.http2_max_concurrent_streams,
        );
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
            http2_max_concurrent_streams,
            plaintext: s.plaintext,
            trusted_proxies,
            proxy_protocol: s.proxy_protocol,
            release_memory_interval: release_memory_interval?,
        })
    }

    /// Records the problems a module's own validation found, under `path`.
    pub(super) fn sub_settings<T>(
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
    pub(super) fn plaintext_allowed(&mut self, server: &Server) {
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

    pub(super) fn limits(&mut self, l: LimitsSection) -> Option<Limits> {
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

    pub(super) fn routing(
        &mut self,
        r: RoutingSection,
        upstreams: Option<&Value>,
    ) -> Option<Routing> {
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
        let affinity_capacity = self.at_least_one("routing.affinity_capacity", r.affinity_capacity);
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
            affinity_capacity,
            probe_timeout: probe_timeout?,
            matcher: MatchSettings {
                enabled: m.enabled,
                min_score: m.min_score,
                margin: m.margin,
            },
        })
    }

    pub(super) fn concurrency(
        &mut self,
        c: crate::config::file::ConcurrencySection,
    ) -> Option<Concurrency> {
        let max_streams = self.at_least_one("concurrency.max_streams", c.max_streams);
        let max_streams_per_caller = self.at_least_one(
            "concurrency.max_streams_per_caller",
            c.max_streams_per_caller,
        );
        Some(Concurrency {
            max_streams: max_streams as usize,
            max_streams_per_caller: max_streams_per_caller as usize,
        })
    }

    pub(super) fn card(&mut self, c: CardSection, identity_configured: bool) -> Option<Card> {
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
        let signing = match &c.signing {
            None => Some(None),
            Some(section) => self
                .sub_settings("card.signing", crate::config::signing::signing(section))
                .map(Some),
        };
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
            signing: signing?,
        })
    }

    pub(super) fn card_refresh(&mut self, c: CardRefreshSection) -> Option<CardRefresh> {
        let interval = self.duration("card_refresh.interval", &c.interval);
        let max_staleness = self.duration("card_refresh.max_staleness", &c.max_staleness);
        let timeout = self.duration("card_refresh.timeout", &c.timeout);
        let ready_when = self.choice(
            "card_refresh.ready_when",
            &c.ready_when,
            &[("any", ReadyWhen::Any), ("all", ReadyWhen::All)],
        );
        Some(CardRefresh {
            interval: interval?,
            max_staleness: max_staleness?,
            timeout: timeout?,
            ready_when: ready_when?,
        })
    }

    pub(super) fn skills(&mut self, at: &str, s: SkillsSection) -> SkillPolicy {
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

    pub(super) fn log(&mut self, l: LogSection) -> Option<Log> {
        let format = self.choice(
            "log.format",
            &l.format,
            &[("text", LogFormat::Text), ("json", LogFormat::Json)],
        );
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&l.level) {
            self.err("log.level", format!("not a valid level or filter: {e}"));
            return None;
        }
        Some(Log {
            format: format?,
            level: l.level,
        })
    }

    pub(super) fn telemetry(&mut self, t: TelemetrySection) -> Option<Telemetry> {
        let mut ok = true;
        if let Some(endpoint) = &t.otlp_endpoint {
            match endpoint.parse::<Uri>() {
                Ok(uri) if matches!(uri.scheme_str(), Some("http" | "https")) => {}
                _ => {
                    let why = format!("'{endpoint}' is not an http:// or https:// URL");
                    self.err("telemetry.otlp_endpoint", why);
                    ok = false;
                }
            }
        }
        let protocol = match t.otlp_protocol.as_deref().map(OtlpProtocol::parse) {
            Some(Err(why)) => {
                self.err("telemetry.otlp_protocol", why);
                ok = false;
                None
            }
            Some(Ok(p)) => Some(p),
            None => None,
        };
        let sampler = match t.sampler {
            Some(name) if !SAMPLERS.contains(&name.as_str()) => {
                let why = format!("'{name}' is not one of {}", SAMPLERS.join(", "));
                self.err("telemetry.sampler", why);
                ok = false;
                None
            }
            Some(name) => Some((name, t.sampler_arg)),
            None => None,
        };
        if let Some(arg) = t.sampler_arg.filter(|a| !(0.0..=1.0).contains(a)) {
            self.err(
                "telemetry.sampler_arg",
                format!("must be within 0..=1, not {arg}"),
            );
            ok = false;
        }
        ok.then_some(Telemetry {
            otlp_endpoint: t.otlp_endpoint,
            otlp_protocol: protocol,
            service_name: t.service_name,
            sampler,
            max_stream_events: t.max_stream_events,
        })
    }
}

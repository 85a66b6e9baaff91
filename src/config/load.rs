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
    ServerSection, SkillsSection, TelemetrySection, UpstreamSection,
};
use super::overrides::Overrides;
use super::settings::*;

mod sections;
mod upstreams;
mod values;

const SECTIONS: [&str; 16] = [
    "rate_limits",
    "concurrency",
    "auth",
    "authz",
    "tls",
    "push_guard",
    "push_relay",
    "server",
    "limits",
    "routing",
    "card",
    "card_refresh",
    "upstreams",
    "log",
    "telemetry",
    "console",
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
        self.unknown_sections(table);
        let server = self.section::<ServerSection>(table, "server");
        let limits = self.section::<LimitsSection>(table, "limits");
        let routing = self.section::<RoutingSection>(table, "routing");
        let log = self.section::<LogSection>(table, "log");
        let card = self.section::<CardSection>(table, "card");
        let tls = self.optional(table, "tls", crate::tls::settings);
        let push_guard = self
            .section::<crate::push_guard::PushGuardSection>(table, "push_guard")
            .and_then(|p| self.sub_settings("push_guard", crate::push_guard::settings(&p)));
        let push_relay =
            self.optional(table, "push_relay", crate::push_relay::settings::push_relay);
        let card_refresh = self.section::<CardRefreshSection>(table, "card_refresh");
        let upstreams = self.upstream_sections(table.get("upstreams"));

        let server = server.and_then(|s| self.server(s));
        let limits = limits.and_then(|l| self.limits(l));
        let log = log.and_then(|l| self.log(l));
        let telemetry = self
            .section::<TelemetrySection>(table, "telemetry")
            .and_then(|t| self.telemetry(t));
        let upstreams: Vec<_> = upstreams
            .into_iter()
            .filter_map(|(i, u)| self.upstream(i, u))
            .collect();
        let routing = routing.and_then(|r| self.routing(r, table.get("upstreams")));
        let card = card.and_then(|c| self.card(c, card_identity_configured(table)));
        let card_refresh = card_refresh.and_then(|c| self.card_refresh(c));
        let auth = self.optional(table, "auth", crate::auth::config::auth);
        let names: Vec<String> = upstreams.iter().map(|u| u.name.clone()).collect();
        let rate_limits = self.rate_limits(table, &names);
        let concurrency = self
            .section::<super::file::ConcurrencySection>(table, "concurrency")
            .and_then(|c| self.concurrency(c));
        let authz = self
            .section::<crate::auth::config::AuthzSection>(table, "authz")
            .and_then(|a| self.sub_settings("authz", crate::auth::config::authz(&a, &names)));
        let scheme_names = auth.as_ref().and_then(|a| a.as_ref()).map(|a| {
            (a.schemes.iter())
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        });
        let console = self
            .section::<crate::config::console::ConsoleSection>(table, "console")
            .and_then(|c| {
                let checked = crate::config::console::console(&c, scheme_names.as_deref());
                self.sub_settings("console", checked)
            });
        self.across_sections((&auth, &authz), (&server, &tls));
        Some(Config {
            server: server?,
            tls: tls?,
            push_guard: push_guard?,
            push_relay: push_relay?.flatten(),
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
            telemetry: telemetry?,
            console: console?,
        })
    }

    /// What one section says of another: authorization rules need
    /// authenticated callers, and a plaintext listener must be allowed.
    fn across_sections(
        &mut self,
        (auth, authz): (
            &Option<Option<crate::auth::config::Auth>>,
            &Option<crate::auth::config::Authz>,
        ),
        (server, tls): (&Option<Server>, &Option<Option<crate::tls::TlsSettings>>),
    ) {
        if let (Some(None), Some(rules)) = (auth, authz) {
            self.rules_need_callers(rules);
        }
        if let (Some(server), Some(None)) = (server, tls) {
            self.plaintext_allowed(server);
        }
    }

    fn unknown_sections(&mut self, table: &Table) {
        for key in table.keys().filter(|k| !SECTIONS.contains(&k.as_str())) {
            self.err(
                key.clone(),
                format!("unknown section; expected one of {}", SECTIONS.join(", ")),
            );
        }
    }

    /// `[rate_limits]`, whose per-upstream entries must name upstreams.
    fn rate_limits(
        &mut self,
        table: &Table,
        names: &[String],
    ) -> Option<crate::limits::rate::RateLimitSettings> {
        let section =
            self.section::<crate::limits::rate::RateLimitsSection>(table, "rate_limits")?;
        self.sub_settings(
            "rate_limits",
            crate::limits::rate::settings(&section, names),
        )
    }

    /// Rules that tell callers apart, with nobody authenticated.
    fn rules_need_callers(&mut self, rules: &crate::auth::config::Authz) {
        if !rules.is_open() {
            self.err(
                "authz",
                "authorization rules need authenticated callers: configure [auth]",
            );
        }
    }

    /// A section that is off unless present (`[tls]`, `[auth]`): `Some(None)`
    /// when absent, `None` when present and wrong.
    fn optional<S: DeserializeOwned, T>(
        &mut self,
        table: &Table,
        key: &str,
        settings: impl FnOnce(&S) -> Result<T, Vec<(String, String)>>,
    ) -> Option<Option<T>> {
        let Some(value) = table.get(key) else {
            return Some(None);
        };
        self.deserialize::<S>(value, key)
            .and_then(|section| self.sub_settings(key, settings(&section)))
            .map(Some)
    }

    /// The section `key` of `table`, or its defaults when it is absent.
    fn section<T: DeserializeOwned + Default>(&mut self, table: &Table, key: &str) -> Option<T> {
        let Some(value) = table.get(key) else {
            return Some(T::default());
        };
        self.deserialize(value, key)
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
            // A key removed for a bad value is then "missing": reported already.
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
}

/// Whether `[card]` sets the published identity; when it does not and there
/// is one upstream, the published card keeps that agent's.
fn card_identity_configured(table: &Table) -> bool {
    const IDENTITY: [&str; 6] = [
        "name",
        "description",
        "version",
        "provider",
        "documentation_url",
        "icon_url",
    ];
    let card = table.get("card").and_then(Value::as_table);
    card.is_some_and(|t| IDENTITY.iter().any(|k| t.contains_key(*k)))
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
    fn protocol_versions_are_read_deduplicated_and_checked() {
        use crate::a2a::Version;
        let up = |extra: &str| {
            load_str(&format!(
                "[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\n{extra}\n"
            ))
        };
        assert_eq!(up("").unwrap().upstreams[0].protocol_versions, None);
        assert_eq!(
            up("protocol_versions = [\"1.0\", \"0.3.0\", \"0.2\"]")
                .unwrap()
                .upstreams[0]
                .protocol_versions,
            Some(vec![Version::V1_0, Version::V0_3])
        );
        let bad = errors(
            "[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\nprotocol_versions = [\"1.0\", \"7\"]\n",
        );
        assert!(
            bad.iter().any(
                |(path, message)| path == "upstreams[0].protocol_versions[1]"
                    && message.contains("\"7\" is not an A2A version")
            ),
            "{bad:?}"
        );
        let empty = errors(
            "[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9001\"\nprotocol_versions = []\n",
        );
        assert!(
            empty
                .iter()
                .any(|(path, _)| path == "upstreams[0].protocol_versions"),
            "{empty:?}"
        );
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
    fn telemetry_settings_are_checked_and_kept() {
        let up = "[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\n";
        let c = load_str(&format!("{up}[telemetry]\notlp_endpoint = \"http://otel:4317\"\notlp_protocol = \"grpc\"\nsampler = \"parentbased_traceidratio\"\nsampler_arg = 0.25\n")).unwrap();
        assert_eq!(
            c.telemetry.otlp_endpoint.as_deref(),
            Some("http://otel:4317")
        );
        assert_eq!(c.telemetry.otlp_protocol, Some(OtlpProtocol::Grpc));
        assert_eq!(
            c.telemetry.sampler,
            Some(("parentbased_traceidratio".into(), Some(0.25)))
        );
        assert_eq!(load_str(up).unwrap().telemetry.max_stream_events, 32);
        let got = errors(&format!("{up}[telemetry]\notlp_endpoint = \"otel:4317\"\notlp_protocol = \"http/json\"\nsampler = \"sometimes\"\nsampler_arg = 2.0\n"));
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        for want in [
            "telemetry.otlp_endpoint",
            "telemetry.otlp_protocol",
            "telemetry.sampler",
            "telemetry.sampler_arg",
        ] {
            assert!(paths.contains(&want), "missing {want} in {got:#?}");
        }
    }

    #[test]
    fn https_upstreams_and_their_tls_settings() {
        let c = load_str("[[upstreams]]\nname = \"a\"\nurl = \"https://agent.example.com/a2a\"\n")
            .unwrap();
        assert_eq!(c.upstreams[0].url.scheme_str(), Some("https"));
        assert!(!c.upstreams[0].tls.is_configured());

        // TLS settings for an upstream whose URLs are http:// stand: its
        // card may name a gRPC interface over TLS.
        let c = load_str("[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\n[upstreams.tls]\nserver_name = \"h\"\n")
            .unwrap();
        assert!(c.upstreams[0].tls.is_configured());
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
    fn words_and_counts_are_refused_with_what_is_expected() {
        let got = errors(
            "[card_refresh]\nready_when = \"some\"\n[log]\nformat = \"xml\"\n[concurrency]\nmax_streams = 0\n[[upstreams]]\nname = \"a\"\nurl = \"http://h:1\"\nbalance = \"random\"\nmax_in_flight = 0\n",
        );
        for want in [
            (
                "card_refresh.ready_when",
                "must be \"any\" or \"all\", not \"some\"",
            ),
            ("log.format", "must be \"text\" or \"json\", not \"xml\""),
            ("concurrency.max_streams", "must be at least 1"),
            (
                "upstreams[0].balance",
                "must be \"least_outstanding\" or \"round_robin\", not \"random\"",
            ),
            ("upstreams[0].max_in_flight", "must be at least 1"),
        ] {
            assert!(
                got.iter().any(|(p, m)| (p.as_str(), m.as_str()) == want),
                "missing {want:?} in {got:#?}"
            );
        }
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

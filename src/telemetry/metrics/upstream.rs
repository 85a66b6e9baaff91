//! One upstream's request metrics, kept as handles. `with_label_values`
//! hashes its labels and takes a read lock on every call (about 185
//! instructions, four times a call); a kept handle costs one atomic load.
//! Each handle is resolved on first use, so a series still appears only
//! once it has something to say.

use std::sync::{Arc, OnceLock};

use prometheus::{Histogram, IntCounter};

use super::Metrics;
use crate::a2a::methods::{Family, Method, Version};

pub struct UpstreamMeters {
    name: Arc<str>,
    metrics: Arc<Metrics>,
    request_bytes: OnceLock<IntCounter>,
    response_bytes: OnceLock<IntCounter>,
    upstream_duration: OnceLock<Histogram>,
    request_duration: [OnceLock<Histogram>; Family::COUNT],
    /// `requests_total` for the calls most are: answered 200, no gateway
    /// error, no skill routed (a sidecar's, or a fleet's default route);
    /// by binding (`BINDINGS`), version and family.
    answered: [[[OnceLock<IntCounter>; Family::COUNT]; Version::COUNT]; BINDINGS.len()],
}

/// The `binding` label's values: how clients call.
pub const BINDINGS: [&str; 2] = ["jsonrpc", "http+json"];

impl UpstreamMeters {
    pub fn new(name: Arc<str>, metrics: Arc<Metrics>) -> Self {
        Self {
            name,
            metrics,
            request_bytes: OnceLock::new(),
            response_bytes: OnceLock::new(),
            upstream_duration: OnceLock::new(),
            request_duration: std::array::from_fn(|_| OnceLock::new()),
            answered: std::array::from_fn(|_| {
                std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new()))
            }),
        }
    }

    /// The upstream's configured name, its `upstream` label.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// `request_bytes_total{upstream}`.
    pub fn request_bytes(&self) -> &IntCounter {
        self.request_bytes
            .get_or_init(|| self.metrics.request_bytes.with_label_values(&[&self.name]))
    }

    /// `response_bytes_total{upstream}`.
    pub fn response_bytes(&self) -> &IntCounter {
        self.response_bytes
            .get_or_init(|| self.metrics.response_bytes.with_label_values(&[&self.name]))
    }

    /// `upstream_duration_seconds{upstream}`.
    pub fn upstream_duration(&self) -> &Histogram {
        self.upstream_duration.get_or_init(|| {
            self.metrics
                .upstream_duration
                .with_label_values(&[&self.name])
        })
    }

    /// `requests_total{version, family, skill="none", upstream,
    /// status="200", error="none", binding}`; `binding` is one of
    /// [`BINDINGS`].
    pub fn answered(&self, method: &Method, binding: &'static str) -> &IntCounter {
        let b = BINDINGS.iter().position(|&b| b == binding).unwrap_or(0);
        self.answered[b][method.version.index()][method.family.index()].get_or_init(|| {
            self.metrics.requests.with_label_values(&[
                method.version.label(),
                method.family.label(),
                "none",
                &self.name,
                "200",
                "none",
                BINDINGS[b],
            ])
        })
    }

    /// `request_duration_seconds{family, upstream}`.
    pub fn request_duration(&self, family: Family) -> &Histogram {
        self.request_duration[family.index()].get_or_init(|| {
            self.metrics
                .request_duration
                .with_label_values(&[family.label(), &self.name])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_the_labelled_series_and_appear_when_used() {
        let metrics = Arc::new(Metrics::new());
        let meters = UpstreamMeters::new("a".into(), metrics.clone());
        assert!(!metrics.render().contains(r#"upstream="a""#));
        meters.request_bytes().inc_by(3);
        meters.response_bytes().inc_by(5);
        meters.request_duration(Family::Send).observe(0.5);
        meters.request_duration(Family::ExtendedCard).observe(0.25);
        meters.upstream_duration().observe(0.1);
        assert_eq!(metrics.request_bytes.with_label_values(&["a"]).get(), 3);
        assert_eq!(metrics.response_bytes.with_label_values(&["a"]).get(), 5);
        let count = |family: &str| {
            metrics
                .request_duration
                .with_label_values(&[family, "a"])
                .get_sample_count()
        };
        assert_eq!((count("send"), count("extended_card")), (1, 1));
        let text = metrics.render();
        assert!(!text.contains(r#"family="stream""#), "{text}");
        assert!(
            text.contains(r#"a2a_gateway_upstream_duration_seconds_count{upstream="a"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn the_answered_handle_is_the_labelled_series() {
        let metrics = Arc::new(Metrics::new());
        let meters = UpstreamMeters::new("a".into(), metrics.clone());
        let send = crate::a2a::methods::lookup("message/send").unwrap();
        let get = crate::a2a::methods::lookup("GetTask").unwrap();
        meters.answered(send, "jsonrpc").inc();
        meters.answered(send, "jsonrpc").inc();
        meters.answered(get, "http+json").inc();
        let count = |version: &str, family: &str, binding: &str| {
            metrics
                .requests
                .with_label_values(&[version, family, "none", "a", "200", "none", binding])
                .get()
        };
        assert_eq!(
            (
                count("0.3", "send", "jsonrpc"),
                count("1.0", "get_task", "http+json")
            ),
            (2, 1)
        );
    }
}

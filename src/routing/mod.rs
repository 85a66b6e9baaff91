//! Which upstream takes a request. One function, `Router::resolve`, makes
//! the decision; the Fleet work grows it (affinity, hint, path, skill match)
//! without touching its callers.

pub mod matcher;

use http::HeaderMap;
use serde_json::Value;

use crate::a2a::Method;
use crate::config;
use crate::error::GatewayError;

/// The rule that picked the upstream (a bounded label for logs and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The gateway has exactly one upstream.
    Only,
    /// The configured default upstream.
    Default,
}

impl Rule {
    pub fn label(self) -> &'static str {
        match self {
            Rule::Only => "only",
            Rule::Default => "default",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Index into the gateway's upstream list.
    pub upstream: usize,
    pub rule: Rule,
}

/// What routing may look at. Params are already parsed and validated.
pub struct RouteInput<'a> {
    pub method: &'a Method,
    pub params: Option<&'a Value>,
    pub headers: &'a HeaderMap,
}

#[derive(Debug, Clone)]
pub struct Router {
    names: Vec<String>,
    default: Option<usize>,
}

impl Router {
    pub fn new(upstreams: &[config::Upstream], routing: &config::Routing) -> Self {
        let names: Vec<String> = upstreams.iter().map(|u| u.name.clone()).collect();
        let default = routing
            .default_upstream
            .as_ref()
            .and_then(|d| names.iter().position(|n| n == d));
        Self { names, default }
    }

    pub fn resolve(&self, _input: &RouteInput<'_>) -> Result<Route, GatewayError> {
        if self.names.len() == 1 {
            return Ok(Route {
                upstream: 0,
                rule: Rule::Only,
            });
        }
        match self.default {
            Some(upstream) => Ok(Route { upstream, rule: Rule::Default }),
            None => Err(GatewayError::NoRoute {
                reason: "several upstreams are configured and none is the default (set routing.default_upstream)".into(),
                upstreams: self.names.clone(),
            }),
        }
    }

    /// The upstream whose card stands for the gateway until cards are
    /// aggregated: the only one, else the default, else the first.
    pub fn card_upstream(&self) -> usize {
        self.default.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;

    fn router(names: &[&str], default: Option<&str>) -> Router {
        let text: String = names
            .iter()
            .map(|n| format!("[[upstreams]]\nname = \"{n}\"\nurl = \"http://127.0.0.1:1\"\n"))
            .collect();
        let c = config::load_str(&text).unwrap();
        let routing = config::Routing {
            default_upstream: default.map(Into::into),
            ..c.routing.clone()
        };
        Router::new(&c.upstreams, &routing)
    }

    fn resolve(r: &Router) -> Result<Route, GatewayError> {
        let headers = HeaderMap::new();
        r.resolve(&RouteInput {
            method: lookup("message/send").unwrap(),
            params: None,
            headers: &headers,
        })
    }

    #[test]
    fn single_upstream_takes_everything() {
        assert_eq!(
            resolve(&router(&["a"], None)).unwrap(),
            Route {
                upstream: 0,
                rule: Rule::Only
            }
        );
    }

    #[test]
    fn default_upstream_among_several() {
        let r = router(&["a", "b"], Some("b"));
        assert_eq!(
            resolve(&r).unwrap(),
            Route {
                upstream: 1,
                rule: Rule::Default
            }
        );
        assert_eq!(r.card_upstream(), 1);
    }

    #[test]
    fn several_without_default_is_a_clear_error() {
        match resolve(&router(&["a", "b"], None)) {
            Err(GatewayError::NoRoute { upstreams, .. }) => assert_eq!(upstreams, ["a", "b"]),
            other => panic!("{other:?}"),
        }
    }
}

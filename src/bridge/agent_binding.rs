//! Which of an agent's interfaces a call goes to. The client's own binding
//! and version when the agent offers them (so the call can pass through
//! untouched); otherwise the first interface on the agent's card that the
//! gateway can speak, in the card's order, which is the agent's preference.
//!
//! The gateway speaks JSON-RPC in every version to agents, HTTP+JSON in
//! 1.0 and 0.3 (`crate::a2a::rest_call`, `super::v03::rest_agent`), and
//! gRPC in 1.0 and 0.3 (`crate::egress::grpc`,
//! `super::v03::grpc_agent`).

use crate::a2a::dialect::{Binding, Interface, Versions};
use crate::a2a::Version;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentBinding {
    /// The agent's JSON-RPC interface, which speaks these versions (none
    /// known: the call passes as it is, as before any card).
    JsonRpc(Versions),
    /// The agent's HTTP+JSON interface in this version (1.0 or 0.3), at
    /// this path on the agent's origin (its URL's path: `/rest`, or empty
    /// for the root).
    Rest { path: String, version: Version },
    /// The agent's gRPC interface in this version (1.0 or 0.3), at this
    /// URL as its card gives it (often a bare `host:port`).
    Grpc { url: String, version: Version },
}

/// The door for a call made over `binding` in `version` to an agent with
/// these card `interfaces`, whose JSON-RPC versions are `rpc` (read once
/// with the card: `FetchedCard::rpc_versions`).
pub fn choose(
    binding: Binding,
    version: Version,
    interfaces: &[Interface],
    rpc: Versions,
) -> AgentBinding {
    let spoken = |i: &&Interface| match i.binding {
        Binding::JsonRpc => true,
        Binding::HttpJson | Binding::Grpc => matches!(i.version, Version::V1_0 | Version::V0_3),
    };
    let own = interfaces
        .iter()
        .find(|i| i.binding == binding && i.version == version);
    let chosen = own
        .filter(spoken)
        .or_else(|| interfaces.iter().find(spoken));
    match chosen {
        Some(i) if i.binding == Binding::HttpJson => AgentBinding::Rest {
            path: url_path(&i.url),
            version: i.version,
        },
        Some(i) if i.binding == Binding::Grpc => AgentBinding::Grpc {
            url: i.url.clone(),
            version: i.version,
        },
        _ => AgentBinding::JsonRpc(rpc),
    }
}

/// The path of an interface URL, without a trailing slash: calls go to
/// this path on whichever replica of the agent is chosen, as JSON-RPC
/// calls go to each replica's configured endpoint.
fn url_path(url: &str) -> String {
    let path = match url.parse::<http::Uri>() {
        Ok(uri) => uri.path().to_string(),
        Err(_) => String::new(),
    };
    path.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(binding: Binding, version: Version, interfaces: &[Interface]) -> AgentBinding {
        let rpc = (interfaces.iter())
            .filter(|i| i.binding == Binding::JsonRpc)
            .map(|i| i.version)
            .collect();
        super::choose(binding, version, interfaces, rpc)
    }

    fn at(binding: Binding, version: Version, url: &str) -> Interface {
        Interface {
            binding,
            version,
            url: url.into(),
            tenant: None,
        }
    }

    #[test]
    fn the_clients_own_dialect_first_then_the_agents_order() {
        use Binding::*;
        use Version::*;
        let rest_only = [at(HttpJson, V1_0, "http://a:1/rest/")];
        let rest = AgentBinding::Rest {
            path: "/rest".into(),
            version: V1_0,
        };
        assert_eq!(choose(JsonRpc, V0_3, &rest_only), rest);
        assert_eq!(choose(HttpJson, V1_0, &rest_only), rest);
        let both = [
            at(JsonRpc, V1_0, "http://a:1/"),
            at(HttpJson, V1_0, "http://a:1/"),
        ];
        assert_eq!(
            choose(HttpJson, V1_0, &both),
            AgentBinding::Rest {
                path: "".into(),
                version: V1_0
            },
            "a REST client meets the agent's REST"
        );
        assert_eq!(
            choose(JsonRpc, V0_3, &both),
            AgentBinding::JsonRpc([V1_0].into_iter().collect()),
            "the agent prefers JSON-RPC"
        );
        let prefers_rest = [
            at(HttpJson, V1_0, "http://a:1/r"),
            at(JsonRpc, V1_0, "http://a:1/"),
        ];
        assert_eq!(
            choose(JsonRpc, V1_0, &prefers_rest),
            AgentBinding::JsonRpc([V1_0].into_iter().collect()),
            "the client's own dialect before the agent's preference"
        );
        assert_eq!(
            choose(JsonRpc, V0_3, &prefers_rest),
            AgentBinding::Rest {
                path: "/r".into(),
                version: V1_0
            }
        );
        let old_rest = [
            at(HttpJson, V0_3, "http://a:1/"),
            at(HttpJson, V1_0, "http://a:1/n"),
        ];
        assert_eq!(
            choose(HttpJson, V1_0, &old_rest),
            AgentBinding::Rest {
                path: "/n".into(),
                version: V1_0
            }
        );
        assert_eq!(
            choose(JsonRpc, V1_0, &old_rest),
            AgentBinding::Rest {
                path: "".into(),
                version: V0_3
            },
            "the agent's first"
        );
        let grpc_only = [at(Grpc, V1_0, "a:50051")];
        let grpc = AgentBinding::Grpc {
            url: "a:50051".into(),
            version: V1_0,
        };
        assert_eq!(choose(JsonRpc, V0_3, &grpc_only), grpc);
        assert_eq!(choose(HttpJson, V1_0, &grpc_only), grpc);
        let old_grpc = [at(Grpc, V0_3, "a:50051")];
        assert_eq!(
            choose(JsonRpc, V1_0, &old_grpc),
            AgentBinding::Grpc {
                url: "a:50051".into(),
                version: V0_3
            }
        );
        assert_eq!(
            choose(JsonRpc, V1_0, &[]),
            AgentBinding::JsonRpc(Versions::default())
        );
    }
}

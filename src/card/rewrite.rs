//! Points every endpoint URL in an Agent Card at the gateway, so no client is
//! sent around it, and drops what the gateway cannot honestly advertise.

use serde_json::{json, Map, Value};

/// The binding the gateway proxies. Interfaces of other bindings (HTTP+JSON,
/// GRPC) are left out rather than advertised at an address that won't serve
/// them.
const JSONRPC: &str = "JSONRPC";
const HTTP_JSON: &str = "HTTP+JSON";
const GRPC: &str = "GRPC";

/// Rewrites `card` in place for clients of the gateway at `endpoint`.
/// Handles 0.2/0.3 fields (`url`, `preferredTransport`,
/// `additionalInterfaces`) and 1.0 `supportedInterfaces`; leaves every other
/// field, known or not, as the agent wrote it.
pub fn rewrite(card: &mut Value, endpoint: &str) {
    let Some(card) = card.as_object_mut() else {
        return;
    };
    if card.contains_key("url") {
        card.insert("url".into(), Value::String(endpoint.into()));
    }
    if card.contains_key("preferredTransport") {
        card.insert("preferredTransport".into(), Value::String(JSONRPC.into()));
    }
    retarget(card, "additionalInterfaces", "transport", endpoint);
    retarget(card, "supportedInterfaces", "protocolBinding", endpoint);
    // The bridge serves every agent in 1.0 and in 0.3, whatever it speaks.
    let tenant = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find_map(|i| i.get("tenant")))
        .cloned();
    offer_every_version(card, endpoint, tenant);
    // A signature covers the agent's own bytes; after rewriting it would not
    // verify, and a card that fails verification is worse than an unsigned one.
    card.remove("signatures");
}

/// The 0.3 and the 1.0 interface fields at `endpoint`: what the gateway
/// serves for every agent (`crate::bridge`): JSON-RPC 1.0 and 0.3,
/// HTTP+JSON 1.0 and 0.3 (`crate::a2a::rest`; 0.3's routes are under
/// `/v1`, so one URL serves both), and gRPC 1.0 and 0.3
/// (`crate::ingress::grpc`; 0.3 only on the fleet's card, see below).
/// A 1.0 interface keeps the tenant its agent gave it, for clients to
/// echo. gRPC has no path: its URL is the gateway's `host:port`, and an
/// agent's own card (`/agents/{name}`) names the agent in the tenant,
/// `agents/{name}` (then `/` and the agent's own tenant, if it has one).
/// 0.3 has no tenant, so an agent's own card offers no 0.3 gRPC: a 0.3
/// gRPC call is routed as a call to the root is.
pub fn offer_every_version(card: &mut Map<String, Value>, endpoint: &str, tenant: Option<Value>) {
    card.insert("protocolVersion".into(), "0.3.0".into());
    card.insert("url".into(), endpoint.into());
    card.insert("preferredTransport".into(), JSONRPC.into());
    let grpc = grpc_interface(endpoint, tenant.as_ref().and_then(Value::as_str));
    let mut additional = vec![
        json!({"url": endpoint, "transport": JSONRPC}),
        json!({"url": endpoint, "transport": HTTP_JSON}),
    ];
    // 0.3 gRPC has no tenant to name an agent with: offered at the root.
    let grpc_03 = grpc.as_ref().filter(|g| g.get("tenant").is_none());
    if let Some(grpc) = grpc_03 {
        additional.push(json!({"url": grpc["url"], "transport": GRPC}));
    }
    card.insert("additionalInterfaces".into(), Value::Array(additional));
    let mut current =
        json!({"url": endpoint, "protocolBinding": JSONRPC, "protocolVersion": "1.0"});
    // HTTP+JSON 1.0 last: clients that speak both keep JSON-RPC. Its tenant
    // is the agent's too (the `/{tenant}/` routes carry it to the agent).
    let mut rest = json!({"url": endpoint, "protocolBinding": HTTP_JSON, "protocolVersion": "1.0"});
    let grpc_03 = grpc_03
        .map(|g| json!({"url": g["url"], "protocolBinding": GRPC, "protocolVersion": "0.3"}));
    if let Some(tenant) = tenant {
        rest["tenant"] = tenant.clone();
        current["tenant"] = tenant;
    }
    let old = json!({"url": endpoint, "protocolBinding": JSONRPC, "protocolVersion": "0.3"});
    let mut interfaces = vec![current, old, rest];
    interfaces.extend(grpc);
    interfaces.extend(grpc_03);
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
}

/// The gRPC 1.0 interface of the gateway at `endpoint` (see
/// [`offer_every_version`]). `None`: the endpoint has no authority.
fn grpc_interface(endpoint: &str, tenant: Option<&str>) -> Option<Value> {
    let uri = endpoint.parse::<http::Uri>().ok()?;
    let authority = uri.authority()?;
    let path = uri.path().trim_matches('/');
    let agent = (path.find("agents/"))
        .map(|at| &path[at..])
        .filter(|p| p.len() > "agents/".len());
    let tenant = match (agent, tenant) {
        (Some(agent), Some(own)) => Some(format!("{agent}/{own}")),
        (Some(agent), None) => Some(agent.to_string()),
        (None, own) => own.map(str::to_string),
    };
    // gRPC clients take a port-less target to mean 443: write it always.
    let url = match (authority.port_u16(), uri.scheme_str()) {
        (Some(_), _) => authority.as_str().to_string(),
        (None, Some("http")) => format!("{}:80", authority.as_str()),
        (None, _) => format!("{}:443", authority.as_str()),
    };
    let mut grpc = json!({"url": url, "protocolBinding": GRPC, "protocolVersion": "1.0"});
    if let Some(tenant) = tenant {
        grpc["tenant"] = Value::String(tenant);
    }
    Some(grpc)
}

/// Withdraws the card's offer of an extended card (0.3 and 1.0 flags, where
/// present) when the gateway will not serve one at the card's URL.
pub fn withdraw_extended_card(card: &mut Value) {
    if let Some(flag) = card.get_mut("supportsAuthenticatedExtendedCard") {
        *flag = Value::Bool(false);
    }
    if let Some(flag) = card.pointer_mut("/capabilities/extendedAgentCard") {
        *flag = Value::Bool(false);
    }
}

/// Keeps the JSON-RPC interfaces of a list, each pointed at `endpoint`, and
/// drops exact duplicates that retargeting creates.
fn retarget(card: &mut Map<String, Value>, key: &str, binding_key: &str, endpoint: &str) {
    let Some(Value::Array(list)) = card.get_mut(key) else {
        return;
    };
    list.retain(|i| {
        i.get(binding_key)
            .and_then(Value::as_str)
            .is_some_and(|b| b.eq_ignore_ascii_case(JSONRPC))
    });
    for item in list.iter_mut() {
        if let Some(obj) = item.as_object_mut() {
            obj.insert("url".into(), Value::String(endpoint.into()));
        }
    }
    let mut seen: Vec<Value> = Vec::with_capacity(list.len());
    list.retain(|i| {
        let fresh = !seen.contains(i);
        if fresh {
            seen.push(i.clone());
        }
        fresh
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rewrites_0_3_card() {
        let mut card = json!({
            "name": "A", "url": "http://10.0.0.5:9001/", "preferredTransport": "JSONRPC",
            "additionalInterfaces": [
                {"url": "http://10.0.0.5:9001/", "transport": "JSONRPC"},
                {"url": "http://10.0.0.5:9001/rest", "transport": "HTTP+JSON"},
                {"url": "10.0.0.5:50051", "transport": "GRPC"}
            ],
            "provider": {"organization": "X", "url": "https://x.example"},
            "signatures": [{"protected": "e30", "signature": "abc"}],
            "x-custom": 1
        });
        rewrite(&mut card, "https://gw.example/");
        assert_eq!(card["url"], "https://gw.example/");
        assert_eq!(
            card["additionalInterfaces"],
            json!([
                {"url": "https://gw.example/", "transport": "JSONRPC"},
                {"url": "https://gw.example/", "transport": "HTTP+JSON"},
                {"url": "gw.example:443", "transport": "GRPC"}
            ])
        );
        assert_eq!(card["provider"]["url"], "https://x.example");
        assert_eq!(card["x-custom"], 1);
        assert!(card.get("signatures").is_none());
    }

    #[test]
    fn rewrites_1_0_interfaces_keeping_versions_and_tenant() {
        let mut card = json!({
            "name": "B",
            "supportedInterfaces": [
                {"url": "http://b/a2a/v1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "http://b/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"},
                {"url": "http://b/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
            ]
        });
        rewrite(&mut card, "http://gw/");
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url": "http://gw/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"},
                {"url": "http://gw/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://gw/", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "t1"},
                {"url": "gw:80", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "t1"}
            ])
        );
        let mut own = card.clone();
        rewrite(&mut own, "https://gw.example:8443/agents/b");
        assert_eq!(
            own["supportedInterfaces"][3],
            json!({"url": "gw.example:8443", "protocolBinding": "GRPC", "protocolVersion": "1.0",
                "tenant": "agents/b/t1"}),
            "gRPC has no path: the tenant names the agent"
        );
        assert_eq!(
            (
                &card["url"],
                &card["protocolVersion"],
                &card["preferredTransport"]
            ),
            (&json!("http://gw/"), &json!("0.3.0"), &json!("JSONRPC")),
            "a 1.0-only card is offered to 0.3 clients too: the bridge serves them"
        );
    }

    #[test]
    fn non_jsonrpc_preferred_transport_becomes_jsonrpc() {
        let mut card = json!({"url": "http://a/rest", "preferredTransport": "HTTP+JSON"});
        rewrite(&mut card, "http://gw/");
        assert_eq!(card["url"], "http://gw/");
        assert_eq!(card["preferredTransport"], "JSONRPC");
    }

    #[test]
    fn tolerates_odd_shapes() {
        for mut v in [
            json!(null),
            json!([1]),
            json!({"additionalInterfaces": "x"}),
            json!({"supportedInterfaces": [1, "x"]}),
        ] {
            rewrite(&mut v, "http://gw/");
        }
    }
}

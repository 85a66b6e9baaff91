//! Agent Cards as the card store fetches them (arbitrary JSON, 0.2/0.3/1.0
//! shapes or nonsense) from one to three upstreams, through aggregation,
//! inheritance, rewriting and rendering, as `Fleet::published` and the
//! per-agent card do. Never a panic; published skill ids are unique, the
//! result does not depend on upstream order, and every rewritten URL points
//! at the gateway.
//!
//! Input: one control byte (skill policy), then up to three card texts
//! separated by 0xFF (a byte no JSON text contains).
#![no_main]

use std::collections::BTreeSet;
use std::sync::OnceLock;

use a2a_gateway::card::aggregate::{aggregate, Aggregate, UpstreamCard};
use a2a_gateway::card::{inherit, published, rewrite};
use a2a_gateway::config::{self, Config, MatchSettings, SkillPolicy};
use a2a_gateway::routing::matcher::Matcher;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const NAMES: [&str; 3] = ["alpha", "beta", "a-1_x"];
const ENDPOINT: &str = "https://gw.example.com/";
const AGENT_ENDPOINT: &str = "https://gw.example.com/agents/alpha";

fuzz_target!(|data: &[u8]| cards(data));

fn cards(data: &[u8]) {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let texts: Vec<&[u8]> = rest.split(|&b| b == 0xFF).take(NAMES.len()).collect();
    // The store keeps only JSON objects; aggregation must also tolerate
    // anything else, so non-objects are passed on too.
    let parsed: Vec<Value> = texts
        .iter()
        .filter_map(|t| serde_json::from_slice(t).ok())
        .collect();
    if parsed.is_empty() {
        return;
    }
    let policies: Vec<SkillPolicy> = parsed
        .iter()
        .enumerate()
        .map(|(i, card)| policy(control.rotate_right(2 * i as u32), card))
        .collect();
    let inputs: Vec<UpstreamCard<'_>> = parsed
        .iter()
        .zip(&policies)
        .zip(NAMES)
        .map(|((card, policy), upstream)| UpstreamCard {
            upstream,
            card,
            policy,
        })
        .collect();
    let config = config_for(inputs.len());
    let result = aggregate(&config.card, &inputs, ENDPOINT);
    check_aggregate(&result, &inputs);

    // Independent of the order the upstreams come in.
    let mut reversed = inputs.clone();
    reversed.reverse();
    assert_eq!(aggregate(&config.card, &reversed, ENDPOINT), result);
    if inputs.len() == 3 {
        let rotated = [inputs[1], inputs[2], inputs[0]];
        assert_eq!(aggregate(&config.card, &rotated, ENDPOINT), result);
    }

    // The published card, as `Fleet::published` finishes it.
    let mut card = result.card.clone();
    let agents: Vec<&Value> = parsed.iter().collect();
    inherit::apply(&mut card, &agents, config);
    let rendered = published::render(&card);
    let reparsed: Value = serde_json::from_slice(&rendered.body).expect("rendered card is JSON");
    assert_eq!(reparsed, card);
    assert_eq!(published::render(&card).etag, rendered.etag, "stable ETag");

    // Each agent's own card at /agents/{name}.
    for agent in &parsed {
        let mut own = agent.clone();
        rewrite::rewrite(&mut own, AGENT_ENDPOINT);
        check_rewritten(&own, AGENT_ENDPOINT);
        let once = own.clone();
        rewrite::rewrite(&mut own, AGENT_ENDPOINT);
        assert_eq!(own, once, "rewriting is idempotent");
        rewrite::withdraw_extended_card(&mut own);
        if let Some(flag) = own.get("supportsAuthenticatedExtendedCard") {
            assert_eq!(flag, &Value::Bool(false));
        }
        let _ = published::render(&own);
    }

    // The matcher built from the published skills picks only among them.
    let matcher = Matcher::new(&result.skills);
    let settings = MatchSettings {
        enabled: true,
        min_score: 0.0,
        margin: 0.0,
    };
    for skill in result.skills.iter().take(4) {
        let text = format!("{} {}", skill.name, skill.description);
        for (id, score) in matcher.scores(&text) {
            assert!(score.is_finite(), "score of {id} is {score}");
        }
        if let Some(pick) = matcher.pick(&text, &settings) {
            assert!(
                result
                    .skills
                    .iter()
                    .any(|s| s.id == pick.skill_id && s.upstream == pick.upstream),
                "picked a skill that is not published: {pick:?}"
            );
        }
    }
}

fn check_aggregate(result: &Aggregate, inputs: &[UpstreamCard<'_>]) {
    let mut ids = BTreeSet::new();
    for skill in &result.skills {
        assert!(!skill.id.is_empty(), "empty published id");
        assert!(ids.insert(skill.id.clone()), "duplicate id {:?}", skill.id);
        assert!(
            inputs.iter().any(|u| u.upstream == skill.upstream),
            "skill of an unknown upstream"
        );
    }
    let listed = result.card["skills"]
        .as_array()
        .expect("the card lists skills");
    assert_eq!(listed.len(), result.skills.len());
    for (json, skill) in listed.iter().zip(&result.skills) {
        assert_eq!(json["id"], Value::String(skill.id.clone()));
        assert!(json["name"].as_str().is_some_and(|n| !n.is_empty()));
        assert!(json["description"].is_string());
        assert!(json["tags"].is_array());
    }
    check_rewritten(&result.card, ENDPOINT);
    for key in ["name", "description", "version", "protocolVersion"] {
        assert!(result.card[key].is_string(), "{key}");
    }
}

/// Every interface in a rewritten card is one the gateway serves (JSON-RPC,
/// HTTP+JSON or gRPC) at the gateway: its URL, or for gRPC its host:port.
fn check_rewritten(card: &Value, endpoint: &str) {
    let Some(obj) = card.as_object() else {
        return;
    };
    assert!(!obj.contains_key("signatures"));
    if obj.contains_key("url") {
        assert_eq!(obj["url"], endpoint);
    }
    for (key, binding) in [
        ("additionalInterfaces", "transport"),
        ("supportedInterfaces", "protocolBinding"),
    ] {
        let Some(list) = obj.get(key).and_then(Value::as_array) else {
            continue;
        };
        for item in list {
            let b = item[binding].as_str().unwrap_or_default();
            let served = b == "JSONRPC" || b == "HTTP+JSON" || b == "GRPC";
            assert!(served, "{key} kept {b:?}");
            let at = match b {
                "GRPC" => grpc_target(endpoint),
                _ => endpoint.to_string(),
            };
            assert_eq!(item["url"], at.as_str(), "{key} not retargeted");
        }
    }
}

/// The gateway's gRPC target at `endpoint`: its host and port, always
/// with the port.
fn grpc_target(endpoint: &str) -> String {
    let uri: http::Uri = endpoint.parse().expect("the fuzz target's endpoint");
    let authority = uri.authority().expect("an authority").as_str();
    match (uri.port_u16(), uri.scheme_str()) {
        (Some(_), _) => authority.to_string(),
        (None, Some("http")) => format!("{authority}:80"),
        (None, _) => format!("{authority}:443"),
    }
}

/// A skill policy from two control bits each, naming ids the card really
/// has (as an operator would), including renames onto other ids.
fn policy(control: u8, card: &Value) -> SkillPolicy {
    let ids: Vec<String> = card
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("id")?.as_str().map(str::to_owned))
        .filter(|id| !id.is_empty())
        .collect();
    let mut policy = SkillPolicy::default();
    let Some(first) = ids.first() else {
        return policy;
    };
    if control & 1 != 0 {
        policy.include = Some(ids.iter().take(2).cloned().collect());
    }
    if control & 2 != 0 {
        policy.exclude.push(ids.last().cloned().unwrap_or_default());
    }
    match (control >> 2) & 3 {
        // Onto a prefixed-looking id, as a collision would publish it.
        1 => {
            policy
                .rename
                .insert(first.clone(), format!("{}/{first}", NAMES[0]));
        }
        // Onto another of its own ids (config refuses only two renames
        // onto one id, not a rename onto an unrenamed id).
        2 if ids.len() > 1 => {
            policy.rename.insert(first.clone(), ids[1].clone());
        }
        3 => {
            policy.rename.insert(first.clone(), "shared".into());
        }
        _ => {}
    }
    policy
}

/// A valid configuration with `n` upstreams named as in [`NAMES`].
fn config_for(n: usize) -> &'static Config {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    let all = CONFIGS.get_or_init(|| {
        (1..=NAMES.len())
            .map(|n| {
                let mut text = String::new();
                for (i, name) in NAMES.iter().take(n).enumerate() {
                    text.push_str(&format!(
                        "[[upstreams]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:{}\"\n",
                        9001 + i
                    ));
                }
                config::load_str(&text).expect("fuzz config is valid")
            })
            .collect()
    });
    &all[n - 1]
}

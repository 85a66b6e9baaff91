//! Builds the one card the gateway publishes from its own settings
//! (`[card]` in the config) and the cards of its upstreams. Pure: no I/O, no
//! clock, and the same inputs in any order give the same card.
//!
//! Rules:
//!
//! - **Order.** Upstreams are sorted by name first; each upstream's skills
//!   keep the order of its card. The result does not depend on the order the
//!   upstreams are given in.
//! - **Skills.** Read from `card["skills"]`. Entries that are not objects or
//!   lack a non-empty string `id` are skipped; a repeated `id` in one card
//!   keeps its first entry. `name` defaults to the id, `description` to `""`;
//!   `tags` and `examples` keep their string items only. A skill streams iff
//!   its upstream's card says `capabilities.streaming: true`. The published
//!   skill object is the agent's own (unknown fields kept) with `id` set to
//!   the published id, and `name`, `description`, `tags` filled in when
//!   missing or of the wrong type (they are required fields, and one sloppy
//!   upstream must not make the whole published card invalid).
//! - **Policy.** Per upstream, by the upstream's own ids: `include` (if set)
//!   keeps only those, `exclude` drops, then `rename` maps to a new id.
//! - **Collisions.** An id published by two or more upstreams is published by
//!   every one of them as `"{upstream}/{id}"`: no upstream silently wins.
//!   Ids are then made unique: ids no collision rule changed are claimed
//!   first (in order), then prefixed ones; a skill whose id is already taken
//!   gets the first free `"{id}#2"`, `"{id}#3"`, … This only happens when a
//!   prefixed id meets a literal one (`a/x`) or a rename maps two of one
//!   upstream's skills to the same id.
//! - **Card.** `name`, `description`, `version`, `provider`,
//!   `documentationUrl`, `iconUrl` come from the config (the last three only
//!   when set). Interfaces all point at the gateway's endpoint, as 0.3 fields
//!   (`protocolVersion` "0.3.0", `url`, `preferredTransport` "JSONRPC",
//!   `additionalInterfaces`) and as the 1.0 `supportedInterfaces` (JSONRPC
//!   1.0, JSONRPC 0.3, HTTP+JSON 1.0). `capabilities.streaming`, `pushNotifications` and
//!   `stateTransitionHistory` are true iff some upstream says so;
//!   `capabilities.extensions` is the union by `uri` (first upstream by name
//!   wins; omitted when empty). `capabilities.extendedAgentCard` (1.0) and
//!   `supportsAuthenticatedExtendedCard` (0.3) follow the config.
//!   `defaultInputModes` / `defaultOutputModes` are the union in first-seen
//!   order, `["text/plain"]` when no upstream names any. No security fields
//!   yet.
//! - Odd input shapes (a card that is not an object, skills that are not an
//!   array, …) are ignored, never a panic.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::skills::PublishedSkill;
use crate::config::{Card, SkillPolicy};

/// The mode a card with no modes implies.
const DEFAULT_MODE: &str = "text/plain";

/// One upstream's card as fetched, with its name and skill policy.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamCard<'a> {
    /// The upstream's name (unique in the fleet).
    pub upstream: &'a str,
    /// Its card: 0.2, 0.3 or 1.0 shape, unknown fields possible.
    pub card: &'a Value,
    pub policy: &'a SkillPolicy,
}

/// The published card and the skills it lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub card: Value,
    /// Exactly the skills of `card["skills"]`, in the same order.
    pub skills: Vec<PublishedSkill>,
}

/// Builds the card clients of the gateway at `endpoint` (its JSON-RPC URL,
/// e.g. `https://gw.example.com/`) see.
pub fn aggregate(meta: &Card, upstreams: &[UpstreamCard<'_>], endpoint: &str) -> Aggregate {
    let sorted = sorted(upstreams);
    let skills = publish(&sorted);
    let cards: Vec<&Value> = sorted.iter().map(|u| u.card).collect();
    let card = build_card(meta, &cards, endpoint, &skills);
    Aggregate { card, skills }
}

/// One upstream's skills after its policy, before collision handling.
pub fn upstream_skills(upstream: &str, card: &Value, policy: &SkillPolicy) -> Vec<PublishedSkill> {
    let Some(list) = card.get("skills").and_then(Value::as_array) else {
        return Vec::new();
    };
    let streaming = capability(card, "streaming");
    let mut seen = BTreeSet::new();
    list.iter()
        .filter_map(Value::as_object)
        .filter_map(|skill| Some((non_empty(skill.get("id"))?, skill)))
        .filter(|(id, _)| seen.insert(*id))
        .filter(|(id, _)| allows(policy, id))
        .map(|(id, skill)| published(upstream, id, skill, policy, streaming))
        .collect()
}

/// Sorted by name; the card text breaks ties so even a fleet with duplicate
/// names (which config validation refuses) comes out the same in any order.
fn sorted<'u, 'a>(upstreams: &'u [UpstreamCard<'a>]) -> Vec<&'u UpstreamCard<'a>> {
    let mut sorted: Vec<_> = upstreams.iter().collect();
    sorted.sort_by(|a, b| {
        a.upstream
            .cmp(b.upstream)
            .then_with(|| a.card.to_string().cmp(&b.card.to_string()))
    });
    sorted
}

fn allows(policy: &SkillPolicy, id: &str) -> bool {
    let included = policy
        .include
        .as_ref()
        .is_none_or(|ids| ids.iter().any(|i| i == id));
    included && !policy.exclude.iter().any(|e| e == id)
}

fn published(
    upstream: &str,
    original: &str,
    skill: &Map<String, Value>,
    policy: &SkillPolicy,
    streaming: bool,
) -> PublishedSkill {
    let id = policy.rename.get(original).map_or(original, String::as_str);
    let name = non_empty(skill.get("name")).unwrap_or(original);
    let description = skill.get("description").and_then(Value::as_str);
    let mut json = skill.clone();
    json.insert("id".into(), id.into());
    if non_empty(json.get("name")).is_none() {
        json.insert("name".into(), name.into());
    }
    if description.is_none() {
        json.insert("description".into(), "".into());
    }
    if !json.get("tags").is_some_and(Value::is_array) {
        json.insert("tags".into(), json!([]));
    }
    PublishedSkill {
        id: id.to_owned(),
        original_id: original.to_owned(),
        upstream: upstream.to_owned(),
        streaming,
        name: name.to_owned(),
        description: description.unwrap_or_default().to_owned(),
        tags: strings(skill.get("tags")),
        examples: strings(skill.get("examples")),
        json: Value::Object(json),
    }
}

/// Every upstream's skills, collisions resolved, ids unique.
fn publish(sorted: &[&UpstreamCard<'_>]) -> Vec<PublishedSkill> {
    let mut skills: Vec<PublishedSkill> = sorted
        .iter()
        .flat_map(|u| upstream_skills(u.upstream, u.card, u.policy))
        .collect();
    let prefixed = prefix_shared(&mut skills);
    make_unique(&mut skills, &prefixed);
    for skill in &mut skills {
        if let Some(json) = skill.json.as_object_mut() {
            json.insert("id".into(), skill.id.clone().into());
        }
    }
    skills
}

/// Prefixes every id that more than one upstream publishes with its
/// upstream's name; returns which skills were prefixed.
fn prefix_shared(skills: &mut [PublishedSkill]) -> Vec<bool> {
    let mut owners: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for skill in skills.iter() {
        let entry = owners.entry(skill.id.clone()).or_default();
        entry.insert(skill.upstream.clone());
    }
    skills
        .iter_mut()
        .map(|skill| {
            let shared = owners.get(&skill.id).is_some_and(|o| o.len() > 1);
            if shared {
                skill.id = format!("{}/{}", skill.upstream, skill.id);
            }
            shared
        })
        .collect()
}

/// The final guarantee that ids are unique. Unprefixed ids claim first, so a
/// skill is never pushed off its own id by another upstream's prefixed one.
fn make_unique(skills: &mut [PublishedSkill], prefixed: &[bool]) {
    let wanted: BTreeSet<String> = skills.iter().map(|s| s.id.clone()).collect();
    let mut taken = BTreeSet::new();
    let first = (0..skills.len()).filter(|&i| !prefixed.get(i).copied().unwrap_or(false));
    let then = (0..skills.len()).filter(|&i| prefixed.get(i).copied().unwrap_or(false));
    for i in first.chain(then) {
        let skill = &mut skills[i];
        if taken.insert(skill.id.clone()) {
            continue;
        }
        // Skip ids another skill wants too, so no later skill is displaced.
        let mut n = 2usize;
        let free = loop {
            let candidate = format!("{}#{n}", skill.id);
            if !wanted.contains(&candidate) && !taken.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        taken.insert(free.clone());
        skill.id = free;
    }
}

fn build_card(meta: &Card, cards: &[&Value], endpoint: &str, skills: &[PublishedSkill]) -> Value {
    let skills: Vec<&Value> = skills.iter().map(|s| &s.json).collect();
    let mut card = json!({
        "name": meta.name,
        "description": meta.description,
        "version": meta.version,
        "supportsAuthenticatedExtendedCard": meta.extended_card,
        "capabilities": capabilities(meta, cards),
        "defaultInputModes": modes(cards, "defaultInputModes"),
        "defaultOutputModes": modes(cards, "defaultOutputModes"),
        "skills": skills,
    });
    if let Some(p) = &meta.provider {
        card["provider"] = json!({"organization": p.organization, "url": p.url});
    }
    if let Some(url) = &meta.documentation_url {
        card["documentationUrl"] = json!(url);
    }
    if let Some(url) = &meta.icon_url {
        card["iconUrl"] = json!(url);
    }
    if let Value::Object(card) = &mut card {
        super::rewrite::offer_every_version(card, endpoint, None);
    }
    card
}

fn capabilities(meta: &Card, cards: &[&Value]) -> Value {
    let any = |key: &str| cards.iter().any(|c| capability(c, key));
    let mut caps = json!({
        "streaming": any("streaming"),
        "pushNotifications": any("pushNotifications"),
        "stateTransitionHistory": any("stateTransitionHistory"),
        "extendedAgentCard": meta.extended_card,
    });
    let extensions = extensions(cards);
    if !extensions.is_empty() {
        caps["extensions"] = Value::Array(extensions);
    }
    caps
}

/// The card says `capabilities.<key>: true` (anything else is false).
fn capability(card: &Value, key: &str) -> bool {
    card.get("capabilities").and_then(|c| c.get(key)) == Some(&Value::Bool(true))
}

/// Extension objects by `uri`, the first declaration of each.
fn extensions(cards: &[&Value]) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    cards
        .iter()
        .filter_map(|c| c.get("capabilities")?.get("extensions")?.as_array())
        .flatten()
        .filter(|e| {
            let uri = e.get("uri").and_then(Value::as_str);
            uri.is_some_and(|u| seen.insert(u.to_owned()))
        })
        .cloned()
        .collect()
}

fn modes(cards: &[&Value], key: &str) -> Value {
    let mut all: Vec<String> = Vec::new();
    for mode in cards.iter().flat_map(|c| strings(c.get(key))) {
        if !all.contains(&mode) {
            all.push(mode);
        }
    }
    if all.is_empty() {
        all.push(DEFAULT_MODE.into());
    }
    all.into()
}

/// The string items of an array; nothing for anything else.
fn strings(value: Option<&Value>) -> Vec<String> {
    let items = value.and_then(Value::as_array).map(Vec::as_slice);
    let items = items.unwrap_or_default().iter();
    items.filter_map(Value::as_str).map(str::to_owned).collect()
}

fn non_empty(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Provider;
    use std::time::Duration;

    const GW: &str = "https://gw.example.com/";

    fn meta() -> Card {
        Card {
            name: "Fleet".into(),
            description: "All our agents".into(),
            version: "2.1.0".into(),
            provider: Some(Provider {
                organization: "Example".into(),
                url: "https://example.com".into(),
            }),
            documentation_url: Some("https://example.com/docs".into()),
            icon_url: Some("https://example.com/icon.png".into()),
            cache_max_age: Duration::from_secs(60),
            extended_card: false,
            identity_configured: true,
            signing: None,
        }
    }

    fn up<'a>(upstream: &'a str, card: &'a Value, policy: &'a SkillPolicy) -> UpstreamCard<'a> {
        UpstreamCard {
            upstream,
            card,
            policy,
        }
    }

    /// A card with skills of these ids (name = id) and the given streaming.
    fn card_with(ids: &[&str], streaming: bool) -> Value {
        let skills: Vec<Value> = ids.iter().map(|id| json!({"id": id, "name": id})).collect();
        json!({"capabilities": {"streaming": streaming}, "skills": skills})
    }

    fn ids(agg: &Aggregate) -> Vec<&str> {
        agg.skills.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn aggregates_a_0_3_and_a_1_0_card() {
        let v03 = json!({
            "protocolVersion": "0.3.0", "name": "Alpha", "url": "http://10.0.0.1:9001/",
            "preferredTransport": "JSONRPC",
            "capabilities": {"streaming": true, "pushNotifications": false,
                "extensions": [{"uri": "urn:x:trace", "required": false}]},
            "defaultInputModes": ["text/plain", "application/json"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "summarize", "name": "Summarize", "description": "Sums up",
                "tags": ["text"], "examples": ["Summarize this"], "x-extra": 1}]
        });
        let v10 = json!({
            "name": "Beta",
            "supportedInterfaces": [{"url": "http://10.0.0.2/", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0"}],
            "capabilities": {"streaming": false, "pushNotifications": true,
                "extendedAgentCard": true},
            "defaultInputModes": ["image/png", "text/plain"],
            "defaultOutputModes": ["application/json"],
            "skills": [{"id": "classify", "name": "Classify", "description": "Labels images",
                "tags": ["vision"], "inputModes": ["image/png"]}]
        });
        let policy = SkillPolicy::default();
        let mut meta = meta();
        meta.extended_card = true;
        let agg = aggregate(
            &meta,
            &[up("beta", &v10, &policy), up("alpha", &v03, &policy)],
            GW,
        );
        let expected = json!({
            "name": "Fleet", "description": "All our agents", "version": "2.1.0",
            "provider": {"organization": "Example", "url": "https://example.com"},
            "documentationUrl": "https://example.com/docs",
            "iconUrl": "https://example.com/icon.png",
            "protocolVersion": "0.3.0", "url": GW, "preferredTransport": "JSONRPC",
            "additionalInterfaces": [
                {"url": GW, "transport": "JSONRPC"},
                {"url": GW, "transport": "HTTP+JSON"},
                {"url": "gw.example.com:443", "transport": "GRPC"}
            ],
            "supportedInterfaces": [
                {"url": GW, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": GW, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": GW, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "gw.example.com:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "gw.example.com:443", "protocolBinding": "GRPC", "protocolVersion": "0.3"}
            ],
            "supportsAuthenticatedExtendedCard": true,
            "capabilities": {"streaming": true, "pushNotifications": true,
                "stateTransitionHistory": false, "extendedAgentCard": true,
                "extensions": [{"uri": "urn:x:trace", "required": false}]},
            "defaultInputModes": ["text/plain", "application/json", "image/png"],
            "defaultOutputModes": ["text/plain", "application/json"],
            "skills": [
                {"id": "summarize", "name": "Summarize", "description": "Sums up",
                    "tags": ["text"], "examples": ["Summarize this"], "x-extra": 1},
                {"id": "classify", "name": "Classify", "description": "Labels images",
                    "tags": ["vision"], "inputModes": ["image/png"]}
            ]
        });
        assert_eq!(agg.card, expected);
        let alpha = &agg.skills[0];
        assert_eq!(
            (alpha.upstream.as_str(), alpha.original_id.as_str()),
            ("alpha", "summarize")
        );
        assert!(alpha.streaming);
        assert_eq!(alpha.name, "Summarize");
        assert_eq!(alpha.description, "Sums up");
        assert_eq!(alpha.tags, ["text"]);
        assert_eq!(alpha.examples, ["Summarize this"]);
        let beta = &agg.skills[1];
        assert_eq!(
            (beta.upstream.as_str(), beta.id.as_str()),
            ("beta", "classify")
        );
        assert!(!beta.streaming);
        assert!(beta.examples.is_empty());
    }

    #[test]
    fn optional_meta_fields_are_left_out() {
        let mut meta = meta();
        meta.provider = None;
        meta.documentation_url = None;
        meta.icon_url = None;
        let agg = aggregate(&meta, &[], GW);
        let card = agg
            .card
            .as_object()
            .map(|c| c.keys().cloned().collect::<Vec<_>>());
        let keys = card.unwrap_or_default();
        for key in [
            "provider",
            "documentationUrl",
            "iconUrl",
            "security",
            "securitySchemes",
        ] {
            assert!(!keys.iter().any(|k| k == key), "{key} present");
        }
        assert_eq!(agg.card["skills"], json!([]));
        assert_eq!(agg.card["capabilities"]["extendedAgentCard"], false);
        assert_eq!(agg.card["supportsAuthenticatedExtendedCard"], false);
    }

    #[test]
    fn include_exclude_and_rename() {
        let card = card_with(&["a", "b", "c", "d"], false);
        let policy = SkillPolicy {
            include: Some(vec!["a".into(), "b".into(), "c".into()]),
            exclude: vec!["b".into()],
            rename: [("a".to_string(), "alpha".to_string())].into(),
        };
        let skills = upstream_skills("u", &card, &policy);
        let got: Vec<_> = skills
            .iter()
            .map(|s| (s.id.as_str(), s.original_id.as_str()))
            .collect();
        assert_eq!(got, [("alpha", "a"), ("c", "c")]);
        assert_eq!(skills[0].json["id"], "alpha");
        assert_eq!(skills[0].name, "a");

        let exclude_only = SkillPolicy {
            exclude: vec!["d".into()],
            ..SkillPolicy::default()
        };
        let agg = aggregate(&meta(), &[up("u", &card, &exclude_only)], GW);
        assert_eq!(ids(&agg), ["a", "b", "c"]);
    }

    #[test]
    fn a_shared_id_is_prefixed_for_every_owner() {
        let x = card_with(&["search", "mine"], false);
        let y = card_with(&["search"], true);
        let policy = SkillPolicy::default();
        let agg = aggregate(&meta(), &[up("y", &y, &policy), up("x", &x, &policy)], GW);
        assert_eq!(ids(&agg), ["x/search", "mine", "y/search"]);
        let json_ids: Vec<_> = agg.card["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let json_ids: Vec<_> = json_ids.iter().map(|s| s["id"].clone()).collect();
        assert_eq!(
            json_ids,
            [json!("x/search"), json!("mine"), json!("y/search")]
        );
        assert_eq!(agg.skills[2].original_id, "search");
        assert!(agg.skills[2].streaming && !agg.skills[0].streaming);
    }

    #[test]
    fn a_rename_resolves_a_collision() {
        let x = card_with(&["search"], false);
        let y = card_with(&["search"], false);
        let plain = SkillPolicy::default();
        let renamed = SkillPolicy {
            rename: [("search".to_string(), "web-search".to_string())].into(),
            ..SkillPolicy::default()
        };
        let agg = aggregate(&meta(), &[up("x", &x, &plain), up("y", &y, &renamed)], GW);
        assert_eq!(ids(&agg), ["search", "web-search"]);
        // ... and one that creates a collision is handled like any other.
        let clash = SkillPolicy {
            rename: [("search".to_string(), "find".to_string())].into(),
            ..SkillPolicy::default()
        };
        let z = card_with(&["find"], false);
        let agg = aggregate(&meta(), &[up("y", &y, &clash), up("z", &z, &plain)], GW);
        assert_eq!(ids(&agg), ["y/find", "z/find"]);
        assert_eq!(agg.skills[0].original_id, "search");
    }

    #[test]
    fn ids_stay_unique_when_a_prefix_meets_a_literal_id() {
        let a = card_with(&["x"], false);
        let b = card_with(&["x"], false);
        let c = card_with(&["a/x"], false);
        let p = SkillPolicy::default();
        let agg = aggregate(
            &meta(),
            &[up("a", &a, &p), up("b", &b, &p), up("c", &c, &p)],
            GW,
        );
        // c's own id wins over a's prefixed one.
        assert_eq!(ids(&agg), ["a/x#2", "b/x", "a/x"]);
        // Two of one upstream's skills renamed onto one id.
        let d = card_with(&["p", "q", "q#2"], false);
        let merge = SkillPolicy {
            rename: [("p".to_string(), "q".to_string())].into(),
            ..SkillPolicy::default()
        };
        let agg = aggregate(&meta(), &[up("d", &d, &merge)], GW);
        assert_eq!(ids(&agg), ["q", "q#3", "q#2"]);
    }

    #[test]
    fn junk_skills_and_odd_cards_are_skipped() {
        let card = json!({"skills": [
            1, "s", null, [], {}, {"id": ""}, {"id": 5}, {"name": "no id"},
            {"id": "ok", "name": 7, "tags": ["t", 3, null], "examples": "nope", "x": {"y": 1}},
            {"id": "ok", "name": "duplicate"}
        ]});
        let skills = upstream_skills("u", &card, &SkillPolicy::default());
        assert_eq!(skills.len(), 1);
        let ok = &skills[0];
        assert_eq!((ok.name.as_str(), ok.description.as_str()), ("ok", ""));
        assert_eq!(ok.tags, ["t"]);
        assert!(ok.examples.is_empty());
        let expected = json!({"id": "ok", "name": "ok", "description": "", "tags": ["t", 3, null],
            "examples": "nope", "x": {"y": 1}});
        assert_eq!(ok.json, expected);

        let odd = [
            json!([1, 2]),
            json!("card"),
            json!(null),
            json!({"skills": {"id": "a"}, "capabilities": [true],
                "defaultInputModes": "text/plain", "defaultOutputModes": [1]}),
            json!({"capabilities": {"streaming": "true", "extensions": {"uri": "u"}}}),
            json!({"capabilities": {"extensions": [1, {"uri": 2}, {"no": "uri"}]}}),
        ];
        let p = SkillPolicy::default();
        let names = ["a", "b", "c", "d", "e", "f"];
        let ups: Vec<_> = names.iter().zip(&odd).map(|(n, c)| up(n, c, &p)).collect();
        let agg = aggregate(&meta(), &ups, GW);
        assert!(agg.skills.is_empty());
        assert_eq!(agg.card["defaultInputModes"], json!(["text/plain"]));
        assert_eq!(agg.card["defaultOutputModes"], json!(["text/plain"]));
        assert_eq!(agg.card["capabilities"]["streaming"], false);
        assert!(agg.card["capabilities"].get("extensions").is_none());
    }

    #[test]
    fn modes_are_a_first_seen_union() {
        let a = json!({"defaultInputModes": ["text/plain", "image/png"],
            "defaultOutputModes": ["application/json"]});
        let b = json!({"defaultInputModes": ["audio/wav", "text/plain", 3]});
        let c = json!({"skills": []});
        let p = SkillPolicy::default();
        let agg = aggregate(
            &meta(),
            &[up("c", &c, &p), up("b", &b, &p), up("a", &a, &p)],
            GW,
        );
        let inputs = json!(["text/plain", "image/png", "audio/wav"]);
        assert_eq!(agg.card["defaultInputModes"], inputs);
        assert_eq!(agg.card["defaultOutputModes"], json!(["application/json"]));
    }

    #[test]
    fn capabilities_are_honest() {
        let a = json!({"capabilities": {"streaming": false}, "skills": [{"id": "s"}]});
        let b = json!({"skills": [{"id": "t"}]});
        let p = SkillPolicy::default();
        let agg = aggregate(&meta(), &[up("a", &a, &p), up("b", &b, &p)], GW);
        let caps = &agg.card["capabilities"];
        assert_eq!(caps["streaming"], false);
        assert_eq!(caps["pushNotifications"], false);
        assert_eq!(caps["stateTransitionHistory"], false);
        assert!(agg.skills.iter().all(|s| !s.streaming));

        let c = json!({"capabilities": {"stateTransitionHistory": true}});
        let agg = aggregate(&meta(), &[up("a", &a, &p), up("c", &c, &p)], GW);
        assert_eq!(agg.card["capabilities"]["stateTransitionHistory"], true);
        assert_eq!(agg.card["capabilities"]["streaming"], false);
    }

    #[test]
    fn extensions_are_a_union_by_uri() {
        let a = json!({"capabilities": {"extensions": [
            {"uri": "urn:one", "required": true}, {"uri": "urn:two"}]}});
        let b = json!({"capabilities": {"extensions": [
            {"uri": "urn:one", "required": false}, {"uri": "urn:three", "params": {"k": 1}},
            {"description": "no uri"}]}});
        let p = SkillPolicy::default();
        let agg = aggregate(&meta(), &[up("b", &b, &p), up("a", &a, &p)], GW);
        let expected = json!([{"uri": "urn:one", "required": true}, {"uri": "urn:two"},
            {"uri": "urn:three", "params": {"k": 1}}]);
        assert_eq!(agg.card["capabilities"]["extensions"], expected);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Small alphabet so collisions are common; `a/x` and `b/y` look
        /// like prefixed ids, `x#2` like a de-duplicated one.
        const IDS: [&str; 6] = ["x", "y", "z", "a/x", "b/y", "x#2"];
        const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

        #[derive(Debug, Clone)]
        struct Spec {
            name: &'static str,
            card: Value,
            policy: SkillPolicy,
        }

        fn id() -> impl Strategy<Value = String> {
            prop::sample::select(IDS.to_vec()).prop_map(String::from)
        }

        fn entry() -> impl Strategy<Value = Value> {
            prop_oneof![
                8 => id().prop_map(|id| json!({"id": id, "name": format!("skill {id}")})),
                1 => Just(json!({"id": ""})),
                1 => Just(json!(7)),
            ]
        }

        fn policy() -> impl Strategy<Value = SkillPolicy> {
            let include = prop::option::weighted(0.3, prop::collection::vec(id(), 0..4));
            let exclude = prop::collection::vec(id(), 0..3);
            let rename = prop::collection::btree_map(id(), id(), 0..3);
            (include, exclude, rename).prop_map(|(include, exclude, rename)| SkillPolicy {
                include,
                exclude,
                rename,
            })
        }

        fn spec(name: &'static str) -> impl Strategy<Value = Spec> {
            let entries = prop::collection::vec(entry(), 0..6);
            (entries, any::<bool>(), policy()).prop_map(move |(skills, streaming, policy)| Spec {
                name,
                card: json!({"capabilities": {"streaming": streaming}, "skills": skills}),
                policy,
            })
        }

        fn fleet() -> impl Strategy<Value = Vec<Spec>> {
            prop::sample::subsequence(NAMES.to_vec(), 1..=5)
                .prop_flat_map(|names| names.into_iter().map(spec).collect::<Vec<_>>())
        }

        fn run(specs: &[Spec]) -> Aggregate {
            let ups: Vec<_> = specs
                .iter()
                .map(|s| up(s.name, &s.card, &s.policy))
                .collect();
            aggregate(&meta(), &ups, GW)
        }

        /// (upstream, original id) of every skill a card declares and its
        /// policy allows, computed without the module's helpers.
        fn allowed(specs: &[Spec]) -> BTreeSet<(String, String)> {
            let mut all = BTreeSet::new();
            for s in specs {
                for skill in s.card["skills"].as_array().into_iter().flatten() {
                    let Some(id) = skill.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    let included = s
                        .policy
                        .include
                        .as_ref()
                        .is_none_or(|i| i.iter().any(|x| x == id));
                    if !id.is_empty() && included && !s.policy.exclude.iter().any(|x| x == id) {
                        all.insert((s.name.to_string(), id.to_string()));
                    }
                }
            }
            all
        }

        fn pairs(agg: &Aggregate) -> Vec<(String, String)> {
            agg.skills
                .iter()
                .map(|s| (s.upstream.clone(), s.original_id.clone()))
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]

            #[test]
            fn published_ids_are_unique(specs in fleet()) {
                let agg = run(&specs);
                let unique: BTreeSet<_> = agg.skills.iter().map(|s| &s.id).collect();
                prop_assert_eq!(unique.len(), agg.skills.len());
                let json: Vec<Value> = agg.skills.iter().map(|s| s.json.clone()).collect();
                prop_assert_eq!(&agg.card["skills"], &Value::Array(json));
                for s in &agg.skills {
                    prop_assert_eq!(&s.json["id"], &Value::String(s.id.clone()));
                }
            }

            #[test]
            fn every_published_skill_is_declared_and_allowed(specs in fleet()) {
                let allowed = allowed(&specs);
                for pair in pairs(&run(&specs)) {
                    prop_assert!(allowed.contains(&pair), "{:?} not allowed", pair);
                }
            }

            #[test]
            fn every_allowed_skill_is_published_once(specs in fleet()) {
                let published = pairs(&run(&specs));
                for pair in allowed(&specs) {
                    let n = published.iter().filter(|p| **p == pair).count();
                    prop_assert_eq!(n, 1, "{:?}", pair);
                }
            }

            #[test]
            fn input_order_does_not_matter(
                (specs, shuffled) in fleet().prop_flat_map(|f| (Just(f.clone()), Just(f).prop_shuffle()))
            ) {
                let agg = run(&specs);
                prop_assert_eq!(&run(&shuffled), &agg);
                let reversed: Vec<_> = specs.iter().rev().cloned().collect();
                prop_assert_eq!(&run(&reversed), &agg);
            }

            #[test]
            fn an_id_only_one_skill_has_is_kept(specs in fleet()) {
                let agg = run(&specs);
                let renamed = |s: &PublishedSkill| {
                    let spec = specs.iter().find(|p| p.name == s.upstream);
                    let rename = spec.and_then(|p| p.policy.rename.get(&s.original_id));
                    rename.cloned().unwrap_or_else(|| s.original_id.clone())
                };
                let all: Vec<String> = agg.skills.iter().map(renamed).collect();
                for (skill, id) in agg.skills.iter().zip(&all) {
                    if all.iter().filter(|i| *i == id).count() == 1 {
                        prop_assert_eq!(&skill.id, id);
                    }
                }
            }
        }
    }
}

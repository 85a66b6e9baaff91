//! Each routing rule, and their order, on a small fleet.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use serde_json::{json, Value};

use super::*;
use crate::a2a::methods::lookup;
use crate::a2a::model::read::params_of;
use crate::card::skills::PublishedSkill;
use crate::routing::matcher::Matcher;

fn skill(id: &str, upstream: &str, name: &str, description: &str, tags: &[&str]) -> PublishedSkill {
    PublishedSkill {
        id: id.into(),
        original_id: id.into(),
        upstream: upstream.into(),
        streaming: true,
        name: name.into(),
        description: description.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        examples: vec![],
        json: json!({"id": id}),
    }
}

fn view() -> FleetView {
    let skills = vec![
        skill(
            "forecast",
            "weather",
            "Weather forecast",
            "Forecasts temperature, rain and wind for a city",
            &["weather", "forecast", "rain"],
        ),
        skill(
            "flights",
            "travel",
            "Flight booking",
            "Searches and books airline flights between airports",
            &["flight", "airline", "booking"],
        ),
    ];
    FleetView::new(1, vec![], skills.clone(), Matcher::new(&skills))
}

fn router(default: Option<&str>) -> Router {
    let text = "[[upstreams]]\nname = \"weather\"\nurl = \"http://127.0.0.1:1\"\n[[upstreams]]\nname = \"travel\"\nurl = \"http://127.0.0.1:2\"\n";
    let c = config::load_str(text).unwrap();
    let routing = config::Routing {
        default_upstream: default.map(Into::into),
        ..c.routing.clone()
    };
    Router::new(&c.upstreams, &routing)
}

fn affinity() -> Affinity {
    Affinity::new(100, Duration::from_secs(60))
}

fn resolve(
    r: &Router,
    a: &Affinity,
    method: &str,
    params: Value,
    headers: &HeaderMap,
    path: Option<usize>,
) -> Result<Decision, GatewayError> {
    let input = RouteInput {
        method: lookup(method).unwrap(),
        params: params_of(method, &params),
        headers,
        path_upstream: path,
    };
    r.resolve(&input, &view(), a)
}

fn message(text: &str) -> Value {
    json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": text}]}})
}

fn routed(d: Result<Decision, GatewayError>) -> (usize, Rule) {
    match d {
        Ok(Decision::Route(r)) => (r.upstream, r.rule),
        other => panic!("expected a route, got {other:?}"),
    }
}

#[test]
fn path_wins_over_everything() {
    let a = affinity();
    a.learn_task("t1", &Arc::from("weather"));
    let mut h = HeaderMap::new();
    h.insert("a2a-skill", "forecast".parse().unwrap());
    let params = json!({"message": {"messageId": "m", "role": "user", "taskId": "t1", "parts": [{"text": "x"}]}});
    assert_eq!(
        routed(resolve(
            &router(None),
            &a,
            "message/send",
            params,
            &h,
            Some(1)
        )),
        (1, Rule::Path)
    );
}

#[test]
fn affinity_by_task_then_context() {
    let a = affinity();
    a.learn_task("t1", &Arc::from("travel"));
    a.learn_context("c1", &Arc::from("weather"));
    let r = router(None);
    let h = HeaderMap::new();
    assert_eq!(
        routed(resolve(&r, &a, "tasks/get", json!({"id": "t1"}), &h, None)),
        (1, Rule::Affinity)
    );
    assert_eq!(
        routed(resolve(&r, &a, "CancelTask", json!({"id": "t1"}), &h, None)),
        (1, Rule::Affinity)
    );
    let cont = json!({"message": {"messageId": "m", "role": "user", "contextId": "c1", "parts": [{"text": "book a flight"}]}});
    assert_eq!(
        routed(resolve(&r, &a, "message/send", cont, &h, None)),
        (0, Rule::Affinity)
    );
}

#[test]
fn unknown_task_asks_for_a_probe_but_a_new_0_1_task_does_not() {
    let (r, a, h) = (router(Some("weather")), affinity(), HeaderMap::new());
    assert_eq!(
        resolve(&r, &a, "GetTask", json!({"id": "t9"}), &h, None).unwrap(),
        Decision::Probe { task: "t9".into() }
    );
    let with_task = json!({"message": {"messageId": "m", "role": "user", "taskId": "t9", "parts": [{"text": "x"}]}});
    assert_eq!(
        resolve(&r, &a, "message/send", with_task, &h, None).unwrap(),
        Decision::Probe { task: "t9".into() }
    );
    let new01 = json!({"id": "fresh", "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]}});
    assert_eq!(
        routed(resolve(&r, &a, "tasks/send", new01, &h, None)),
        (0, Rule::Default)
    );
}

#[test]
fn hint_by_header_or_metadata_and_unknown_hint_is_an_error() {
    let (r, a) = (router(Some("weather")), affinity());
    let mut h = HeaderMap::new();
    h.insert("a2a-skill", "flights".parse().unwrap());
    assert_eq!(
        routed(resolve(
            &r,
            &a,
            "message/send",
            message("weather please"),
            &h,
            None
        )),
        (1, Rule::Hint)
    );
    let meta = json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}], "metadata": {"skillId": "flights"}}});
    assert_eq!(
        routed(resolve(
            &r,
            &a,
            "SendMessage",
            meta,
            &HeaderMap::new(),
            None
        )),
        (1, Rule::Hint)
    );
    let mut bad = HeaderMap::new();
    bad.insert("a2a-skill", "teleport".parse().unwrap());
    match resolve(&r, &a, "message/send", message("x"), &bad, None) {
        Err(GatewayError::UnknownSkill { skill, skills }) => {
            assert_eq!(skill, "teleport");
            assert_eq!(skills, ["forecast", "flights"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn text_match_for_generic_clients() {
    let (r, a, h) = (router(None), affinity(), HeaderMap::new());
    let d = resolve(
        &r,
        &a,
        "message/send",
        message("book an airline flight to Lisbon"),
        &h,
        None,
    );
    assert_eq!(routed(d), (1, Rule::Match));
    let d = resolve(
        &r,
        &a,
        "message/stream",
        message("will there be rain in Paris? weather forecast"),
        &h,
        None,
    );
    assert_eq!(routed(d), (0, Rule::Match));
}

#[test]
fn default_then_error_listing_skills() {
    let (a, h) = (affinity(), HeaderMap::new());
    let d = resolve(
        &router(Some("travel")),
        &a,
        "message/send",
        message("hello there"),
        &h,
        None,
    );
    assert_eq!(routed(d), (1, Rule::Default));
    match resolve(
        &router(None),
        &a,
        "message/send",
        message("hello there"),
        &h,
        None,
    ) {
        Err(GatewayError::NoRoute {
            skills, upstreams, ..
        }) => {
            assert_eq!(skills, ["forecast", "flights"]);
            assert_eq!(upstreams, ["weather", "travel"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn matcher_can_be_turned_off() {
    let text = "[[upstreams]]\nname = \"weather\"\nurl = \"http://h:1\"\n[[upstreams]]\nname = \"travel\"\nurl = \"http://h:2\"\n[routing.match]\nenabled = false\n";
    let c = config::load_str(text).unwrap();
    let r = Router::new(&c.upstreams, &c.routing);
    let d = resolve(
        &r,
        &affinity(),
        "message/send",
        message("book an airline flight"),
        &HeaderMap::new(),
        None,
    );
    assert!(matches!(d, Err(GatewayError::NoRoute { .. })));
}

#[test]
fn a_single_upstream_is_the_default() {
    let c = config::load_str("[[upstreams]]\nname = \"only\"\nurl = \"http://h:1\"\n").unwrap();
    let r = Router::new(&c.upstreams, &c.routing);
    let d = resolve(
        &r,
        &affinity(),
        "message/send",
        message("anything"),
        &HeaderMap::new(),
        None,
    );
    assert_eq!(routed(d), (0, Rule::Default));
}

mod properties {
    //! Every skill in the published card is routable, by its id, to exactly
    //! the upstream that declares it — whatever the fleet looks like.

    use super::*;
    use crate::card::aggregate::{aggregate, UpstreamCard};
    use crate::config::SkillPolicy;
    use proptest::prelude::*;

    const IDS: [&str; 6] = ["search", "book", "plan", "echo", "ask", "sum"];

    /// One upstream: the skill ids it declares, and maybe one rename.
    type UpstreamSpec = (Vec<usize>, Option<(usize, usize)>);

    /// Up to four upstreams, each declaring a random subset of a small id
    /// alphabet (so collisions are common) and maybe renaming one skill.
    fn fleet() -> impl Strategy<Value = Vec<UpstreamSpec>> {
        let one = (
            proptest::collection::btree_set(0..IDS.len(), 0..4)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
            proptest::option::of((0..IDS.len(), 0..IDS.len())),
        );
        proptest::collection::vec(one, 1..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn every_published_skill_routes_to_its_declaring_upstream(spec in fleet()) {
            let names: Vec<String> = (0..spec.len()).map(|i| format!("u{i}")).collect();
            let cards: Vec<Value> = spec
                .iter()
                .map(|(ids, _)| json!({"capabilities": {"streaming": true},
                    "skills": ids.iter().map(|&i| json!({"id": IDS[i], "name": IDS[i]})).collect::<Vec<_>>()}))
                .collect();
            let policies: Vec<SkillPolicy> = spec
                .iter()
                .map(|(_, rename)| SkillPolicy {
                    rename: rename.iter().map(|&(a, b)| (IDS[a].to_string(), format!("{}-x", IDS[b]))).collect(),
                    ..Default::default()
                })
                .collect();
            let text: String = names.iter().map(|n| format!("[[upstreams]]\nname = \"{n}\"\nurl = \"http://127.0.0.1:1\"\n")).collect();
            let c = config::load_str(&text).unwrap();
            let inputs: Vec<UpstreamCard<'_>> = (0..names.len())
                .map(|i| UpstreamCard { upstream: &names[i], card: &cards[i], policy: &policies[i] })
                .collect();
            let skills = aggregate(&c.card, &inputs, "http://gw/").skills;
            let view = FleetView::new(1, vec![], skills.clone(), Matcher::new(&skills));
            let router = Router::new(&c.upstreams, &c.routing);
            let a = affinity();
            for skill in &skills {
                let mut h = HeaderMap::new();
                h.insert("a2a-skill", skill.id.parse().unwrap());
                let params = message("anything");
                let input = RouteInput { method: lookup("message/send").unwrap(), params: params_of("message/send", &params), headers: &h, path_upstream: None };
                let route = match router.resolve(&input, &view, &a) {
                    Ok(Decision::Route(r)) => r,
                    other => panic!("{} did not route: {other:?}", skill.id),
                };
                prop_assert_eq!(&names[route.upstream], &skill.upstream);
                let declaring = names.iter().position(|n| n == &skill.upstream).unwrap();
                prop_assert!(spec[declaring].0.iter().any(|&i| IDS[i] == skill.original_id));
            }
        }
    }
}

#[test]
fn rule_indexes_are_their_places_in_all() {
    for (i, rule) in Rule::ALL.into_iter().enumerate() {
        assert_eq!(rule.index(), i, "{rule:?}");
    }
}

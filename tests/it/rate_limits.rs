//! Rate limits through a real gateway in front of mock agents on loopback:
//! per caller (anonymous by client address, authenticated by identity),
//! global, per upstream and per skill; the 429 answer (Retry-After, the IETF
//! RateLimit-Policy / RateLimit headers, JSON-RPC -32070 with the request id
//! mirrored); refused calls never reach the agent; recovery after
//! Retry-After; configuration errors.

use std::time::{Duration, Instant};

use crate::support::calls::send;
use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use a2a_gateway::config::{self, Overrides};
use http::StatusCode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const RATE_LIMITED: i64 = -32070;

/// A successful JSON-RPC answer with this id.
fn assert_ok(reply: &Reply, id: &str) {
    assert_eq!(reply.status, StatusCode::OK, "{id}: {}", reply.text());
    let body = reply.json();
    assert_eq!(body["id"], id, "{body}");
    assert!(body.get("result").is_some(), "{body}");
}

/// A well-formed rate-limit refusal by `limit`, with the id mirrored;
/// returns Retry-After in seconds.
fn assert_limited(reply: &Reply, id: &str, limit: &str, policy: &str) -> u64 {
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{id}: {}",
        reply.text()
    );
    let body = reply.json();
    assert_eq!(body["error"]["code"], RATE_LIMITED, "{body}");
    assert_eq!(body["id"], id, "the request id is mirrored: {body}");
    assert_eq!(body["error"]["data"]["limit"], limit, "{body}");
    let retry: u64 = reply
        .header("retry-after")
        .unwrap_or_else(|| panic!("429 carries Retry-After: {:?}", reply.headers))
        .parse()
        .expect("Retry-After is whole seconds");
    assert!(retry >= 1, "Retry-After {retry}");
    assert_eq!(
        reply.header("ratelimit-policy"),
        Some(policy),
        "{:?}",
        reply.headers
    );
    assert_eq!(
        reply.header("ratelimit"),
        Some(format!("\"{limit}\";r=0;t={retry}").as_str()),
        "{:?}",
        reply.headers
    );
    retry
}

fn limited(reply: &Reply) -> bool {
    reply.status == StatusCode::TOO_MANY_REQUESTS
}

fn at(gw: &TestGateway, path: &str) -> String {
    format!("http://{}{path}", gw.addr())
}

#[tokio::test]
async fn per_caller_limit_refuses_with_headers_and_recovers_after_retry_after() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("echo", &mock.url())],
        "[rate_limits]\nper_caller = { per_second = 1, burst = 2 }\n",
    )
    .await;
    let url = gw.url();

    // One unit back per second: the third call within that second is refused.
    let started = Instant::now();
    assert_ok(&client::post_json(&url, send("c1"), &[]).await, "c1");
    assert_ok(&client::post_json(&url, send("c2"), &[]).await, "c2");
    let third = client::post_json(&url, send("c3"), &[]).await;
    assert!(
        started.elapsed() < Duration::from_secs(1) || limited(&third),
        "too slow to test"
    );
    let retry = assert_limited(&third, "c3", "caller", "\"caller\";q=1;w=1");
    assert!(retry <= 1, "Retry-After {retry}");
    assert_eq!(
        mock.request_count(),
        2,
        "the refused call never reached the agent"
    );

    tokio::time::sleep(Duration::from_secs(retry)).await;
    assert_ok(&client::post_json(&url, send("c4"), &[]).await, "c4");
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test]
async fn global_limit_counts_every_call_exactly() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("echo", &mock.url())],
        "[rate_limits]\nglobal = { per_minute = 3 }\n",
    )
    .await;
    // Root and path-addressed calls share the one global budget.
    let urls = [gw.url(), at(&gw, "/agents/echo")];
    let mut refused = 0;
    for i in 0..6 {
        let id = format!("g{i}");
        let reply = client::post_json(&urls[i % 2], send(&id), &[]).await;
        if i < 3 {
            assert_ok(&reply, &id);
        } else {
            let retry = assert_limited(&reply, &id, "global", "\"global\";q=3;w=60");
            // One unit back every 20 s.
            assert!((1..=20).contains(&retry), "Retry-After {retry}");
            refused += 1;
        }
    }
    assert_eq!(refused, 3);
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test]
async fn upstream_limit_affects_only_that_upstream() {
    let a = MockAgent::start(Mode::Normal).await;
    let b = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("a", &a.url()), ("b", &b.url())],
        "[routing]\ndefault_upstream = \"a\"\n[rate_limits.upstreams.b]\nper_minute = 2\n",
    )
    .await;
    let to_b = at(&gw, "/agents/b");
    let b_replies = [
        client::post_json(&to_b, send("b1"), &[]).await,
        client::post_json(&to_b, send("b2"), &[]).await,
        client::post_json(&to_b, send("b3"), &[]).await,
        client::post_json(&to_b, send("b4"), &[]).await,
    ];
    assert_ok(&b_replies[0], "b1");
    assert_ok(&b_replies[1], "b2");
    assert_limited(&b_replies[2], "b3", "upstream", "\"upstream\";q=2;w=60");
    assert_limited(&b_replies[3], "b4", "upstream", "\"upstream\";q=2;w=60");
    assert_eq!(b.request_count(), 2);

    // Agent a (by default and by path) is not limited.
    for i in 0..5 {
        let id = format!("a{i}");
        let url = if i % 2 == 0 {
            gw.url()
        } else {
            at(&gw, "/agents/a")
        };
        assert_ok(&client::post_json(&url, send(&id), &[]).await, &id);
    }
    assert_eq!(a.request_count(), 5);
    assert_eq!(b.request_count(), 2);
}

#[tokio::test]
async fn skill_limit_applies_to_calls_naming_that_skill() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&mock.url());
    card["skills"] = json!([
        {"id": "forecast", "name": "Forecast", "description": "Weather forecasts for a city",
         "tags": ["weather"]},
        {"id": "convert", "name": "Convert", "description": "Currency conversion",
         "tags": ["money"]}
    ]);
    mock.set_card(Some(card));
    let gw = TestGateway::start(
        &[("agent", &mock.url())],
        "[rate_limits.skills.forecast]\nper_minute = 1\n",
    )
    .await;
    let url = gw.url();
    let forecast = [("a2a-skill", "forecast")];
    assert_ok(&client::post_json(&url, send("f1"), &forecast).await, "f1");
    let second = client::post_json(&url, send("f2"), &forecast).await;
    assert_limited(&second, "f2", "skill", "\"skill\";q=1;w=60");
    // The skill in the params' metadata is a hint too.
    let mut by_metadata: Value = serde_json::from_str(&send("f3")).unwrap();
    by_metadata["params"]["metadata"] = json!({"skillId": "forecast"});
    let third = client::post_json(&url, by_metadata.to_string(), &[]).await;
    assert_limited(&third, "f3", "skill", "\"skill\";q=1;w=60");
    assert_eq!(mock.request_count(), 1);

    // Other skills, and calls naming none, are not limited.
    for i in 0..3 {
        let id = format!("c{i}");
        let reply = client::post_json(&url, send(&id), &[("a2a-skill", "convert")]).await;
        assert_ok(&reply, &id);
        let id = format!("n{i}");
        assert_ok(&client::post_json(&url, send(&id), &[]).await, &id);
    }
    assert_eq!(mock.request_count(), 7);
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[tokio::test]
async fn authenticated_callers_have_separate_budgets() {
    let mock = MockAgent::start(Mode::Normal).await;
    let auth = format!(
        "[auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\n\
         keys = [{{ id = \"alice\", sha256 = \"{}\" }}, {{ id = \"bob\", sha256 = \"{}\" }}]\n\
         [rate_limits]\nper_caller = {{ per_minute = 2 }}\n",
        sha256_hex("alice-key"),
        sha256_hex("bob-key"),
    );
    let gw = TestGateway::start(&[("echo", &mock.url())], &auth).await;
    let url = gw.url();
    for (who, key) in [("alice", "alice-key"), ("bob", "bob-key")] {
        let headers = [("x-api-key", key)];
        let mut passed = 0;
        for i in 0..4 {
            let id = format!("{who}-{i}");
            let reply = client::post_json(&url, send(&id), &headers).await;
            if i < 2 {
                assert_ok(&reply, &id);
                passed += 1;
            } else {
                assert_limited(&reply, &id, "caller", "\"caller\";q=2;w=60");
            }
        }
        assert_eq!(passed, 2, "{who}");
    }
    assert_eq!(mock.request_count(), 4);

    // Unauthenticated calls are refused before any rate limit applies.
    let anon = client::post_json(&url, send("anon"), &[]).await;
    assert_eq!(anon.status, StatusCode::UNAUTHORIZED, "{}", anon.text());
    assert_eq!(mock.request_count(), 4);
}

#[tokio::test]
async fn invalid_rate_limits_are_config_errors() {
    let text = r#"
[rate_limits]
max_tracked_callers = 0
global = { per_second = 1, per_minute = 1 }
per_caller = { burst = 2 }
upstreams.nope = { per_second = 1 }
skills.s = { per_second = 0 }

[[upstreams]]
name = "echo"
url = "http://127.0.0.1:9"
"#;
    let errors = config::load_with(Some(text), &Overrides::default())
        .expect_err("the config is refused")
        .to_string();
    for field in [
        "rate_limits.max_tracked_callers:",
        "rate_limits.global:",
        "rate_limits.per_caller:",
        "rate_limits.upstreams.nope:",
        "rate_limits.skills.s.per_second:",
    ] {
        assert!(errors.contains(field), "{field} in:\n{errors}");
    }
    let unknown = "[rate_limits]\nglobal = { per_hour = 1 }\n[[upstreams]]\nname = \"echo\"\nurl = \"http://127.0.0.1:9\"\n";
    let errors = config::load_with(Some(unknown), &Overrides::default())
        .expect_err("unknown keys are refused")
        .to_string();
    assert!(errors.contains("per_hour"), "{errors}");
}

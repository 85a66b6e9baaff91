//! Rate limits shared through a real `redis-server` on loopback: two
//! gateways hold one limit between them, for every limit kind, with the
//! refusal headers from the store's answer; the store killed mid-run (each
//! `on_store_error` mode, no call hanging, sharing resumed when it is
//! back); a slow store (the per-call timeout holds); a wrong password and
//! TLS to a plain port (clear start-up errors from `run` and `check`); and
//! a reload that changes the store and the limits under traffic; and a
//! Redis Cluster of three masters.

use std::time::{Duration, Instant};

use crate::support::calls::send;
use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use crate::support::redis::{RedisCluster, RedisServer, SlowProxy};
use a2a_gateway::config::{self, Overrides};
use http::StatusCode;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");

/// `[rate_limits]` with `limits`, shared through the store at `url`, with
/// more store settings in `store`. The per-call timeout is generous: the
/// tests share two cores with the rest of the suite, and a late answer
/// would meet the fallback.
fn shared(url: &str, limits: &str, store: &str) -> String {
    format!(
        "[rate_limits]\n{limits}\n[rate_limits.store]\nurl = \"{url}\"\ntimeout = \"250ms\"\n{store}\n"
    )
}

fn admitted(reply: &Reply) -> bool {
    match reply.status {
        StatusCode::OK => {
            assert!(reply.json().get("result").is_some(), "{}", reply.text());
            true
        }
        StatusCode::TOO_MANY_REQUESTS => false,
        other => panic!(
            "neither admitted nor refused by a limit: {other} {}",
            reply.text()
        ),
    }
}

/// The refusal by `limit` with `policy`: -32070, Retry-After and the
/// RateLimit fields, which the store's answer gave.
fn assert_refused_by(reply: &Reply, limit: &str, policy: &str) {
    assert_eq!(
        reply.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        reply.text()
    );
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32070, "{body}");
    assert_eq!(body["error"]["data"]["limit"], limit, "{body}");
    let retry: u64 = reply
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("Retry-After: {:?}", reply.headers));
    assert!(retry >= 1, "{retry}");
    assert_eq!(reply.header("ratelimit-policy"), Some(policy));
    let state = format!("\"{limit}\";r=0;t={retry}");
    assert_eq!(reply.header("ratelimit"), Some(state.as_str()));
}

/// A counter's value in the gateway's metrics (0 when absent).
async fn metric(gw: &TestGateway, series: &str) -> f64 {
    let text = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The store's state in `/readyz`.
async fn store_state(gw: &TestGateway) -> String {
    let body = client::get(&format!("{}/readyz", gw.admin_url()), &[])
        .await
        .json();
    body["rate_limit_store"]["state"]
        .as_str()
        .unwrap_or("absent")
        .to_string()
}

async fn wait_store_state(gw: &TestGateway, want: &str, limit: Duration) {
    let started = Instant::now();
    while store_state(gw).await != want {
        assert!(
            started.elapsed() < limit,
            "store not {want} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn two_gateways_share_one_per_caller_limit() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let extra = shared(&redis.url(), "per_caller = { per_minute = 10 }", "");
    let a = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let b = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let started = Instant::now();
    let mut by_gateway = [0usize; 2];
    for i in 0..40 {
        let gw = [&a, &b][i % 2];
        let reply = client::post_json(&gw.url(), send(&format!("c{i}")), &[]).await;
        if admitted(&reply) {
            by_gateway[i % 2] += 1;
        } else {
            assert_refused_by(&reply, "caller", "\"caller\";q=10;w=60");
        }
    }
    // One unit comes back every 6 s.
    let refilled = (started.elapsed().as_secs() / 6) as usize;
    let total = by_gateway[0] + by_gateway[1];
    assert!((10..=10 + refilled).contains(&total), "{by_gateway:?}");
    assert!(by_gateway[0] >= 5 && by_gateway[1] >= 5, "{by_gateway:?}");
    assert_eq!(mock.request_count(), total);
    // The key is the caller's, with the prefix as hash tag, and expires.
    let key = "{a2a-gateway}:rl:caller:ip:127.0.0.1";
    let ttl: i64 = redis
        .command(&format!("PTTL {key}"))
        .await
        .lines()
        .find_map(|l| l.strip_prefix(':')?.parse().ok())
        .unwrap_or(-3);
    assert!(ttl > 0 && ttl <= 60_000, "PTTL {key}: {ttl}");
    // The script flushed from the store: EVALSHA meets NOSCRIPT, the
    // script is loaded again, and the store still decides (a fallback
    // would admit: its own budget is fresh).
    assert!(redis.command("SCRIPT FLUSH").await.contains("+OK"));
    for gw in [&a, &b] {
        let reply = client::post_json(&gw.url(), send("after-flush"), &[]).await;
        assert_refused_by(&reply, "caller", "\"caller\";q=10;w=60");
        assert_eq!(
            metric(
                gw,
                "a2a_gateway_rate_limit_store_errors_total{kind=\"script\"}"
            )
            .await,
            0.0
        );
    }
    for gw in [&a, &b] {
        let series = "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}";
        assert!(metric(gw, series).await >= 5.0);
        assert_eq!(store_state(gw).await, "up");
    }
}

#[tokio::test]
async fn every_limit_kind_is_shared() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&mock.url());
    card["skills"] = json!([
        {"id": "forecast", "name": "Forecast", "description": "Weather", "tags": ["weather"]}
    ]);
    mock.set_card(Some(card));
    // (limits, limit label, policy, headers naming the skill)
    let cases = [
        (
            "global = { per_minute = 3 }",
            "global",
            "\"global\";q=3;w=60",
            false,
        ),
        (
            "upstreams.echo = { per_minute = 3 }",
            "upstream",
            "\"upstream\";q=3;w=60",
            false,
        ),
        (
            "skills.forecast = { per_minute = 3 }",
            "skill",
            "\"skill\";q=3;w=60",
            true,
        ),
        (
            "per_caller = { per_minute = 3 }",
            "caller",
            "\"caller\";q=3;w=60",
            false,
        ),
    ];
    for (n, (limits, label, policy, skilled)) in cases.into_iter().enumerate() {
        let store = format!("key_prefix = \"case-{n}\"");
        let extra = shared(&redis.url(), limits, &store);
        let a = TestGateway::start(&[("echo", &mock.url())], &extra).await;
        let b = TestGateway::start(&[("echo", &mock.url())], &extra).await;
        let headers: &[(&str, &str)] = if skilled {
            &[("a2a-skill", "forecast")]
        } else {
            &[]
        };
        let mut passed = 0;
        for i in 0..8 {
            let gw = [&a, &b][i % 2];
            let reply = client::post_json(&gw.url(), send(&format!("k{i}")), headers).await;
            if admitted(&reply) {
                passed += 1;
            } else {
                assert_refused_by(&reply, label, policy);
            }
        }
        assert!((3..=4).contains(&passed), "{label}: {passed} admitted of 8");
        let keys = redis.command("KEYS *").await;
        assert!(keys.contains(&format!("{{case-{n}}}:rl:{label}")), "{keys}");
    }
}

/// One gateway per mode: the store is killed after two calls and started
/// again later; what each mode does meanwhile, and that no call waits.
#[tokio::test]
async fn store_killed_mid_run_each_mode_then_sharing_resumes() {
    let Some(mut redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    for mode in ["local", "allow", "deny"] {
        redis.restart().await;
        let store = format!(
            "on_store_error = \"{mode}\"\nexpected_replicas = 2\nconnect_timeout = \"200ms\"\nkey_prefix = \"{mode}\""
        );
        let extra = shared(&redis.url(), "per_caller = { per_minute = 6 }", &store);
        let gw = TestGateway::start(&[("echo", &mock.url())], &extra).await;
        for i in 0..2 {
            let reply = client::post_json(&gw.url(), send(&format!("s{i}")), &[]).await;
            assert!(admitted(&reply), "{mode}");
        }
        redis.kill();
        let mut statuses = Vec::new();
        for i in 0..6 {
            let started = Instant::now();
            let reply = client::post_json(&gw.url(), send(&format!("d{i}")), &[]).await;
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{mode}: a call waited {:?}",
                started.elapsed()
            );
            statuses.push(reply.status.as_u16());
            if reply.status == StatusCode::SERVICE_UNAVAILABLE {
                let body = reply.json();
                assert_eq!(body["error"]["code"], -32071, "{body}");
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .contains("store"),
                    "{body}"
                );
                assert_eq!(reply.header("retry-after"), Some("1"));
            }
        }
        let expected: &[u16] = match mode {
            // Each of two replicas keeps half of 6 while the store is away.
            "local" => &[200, 200, 200, 429, 429, 429],
            "allow" => &[200; 6],
            _ => &[503; 6],
        };
        assert_eq!(statuses, expected, "{mode}");
        let shed = metric(&gw, "a2a_gateway_rejections_total{limit=\"rate_store\"}").await;
        assert_eq!(
            shed as usize,
            expected.iter().filter(|s| **s == 503).count(),
            "{mode}"
        );
        assert_eq!(store_state(&gw).await, "down", "{mode}");
        let fallback = format!(
            "a2a_gateway_rate_limit_decisions_total{{result=\"allowed\",source=\"{mode}\"}}"
        );
        let counted = metric(&gw, &fallback).await;
        assert_eq!(
            counted as usize,
            expected.iter().filter(|s| **s == 200).count(),
            "{mode}"
        );
        assert!(metric(&gw, "a2a_gateway_rate_limit_store_up").await == 0.0);

        redis.restart().await;
        wait_store_state(&gw, "up", Duration::from_secs(5)).await;
        let before = metric(
            &gw,
            "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}",
        )
        .await;
        let reply = client::post_json(&gw.url(), send("back"), &[]).await;
        assert!(admitted(&reply), "{mode}: the store's fresh budget");
        let after = metric(
            &gw,
            "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}",
        )
        .await;
        assert_eq!(after, before + 1.0, "{mode}: decided by the store again");
        assert!(metric(&gw, "a2a_gateway_rate_limit_store_up").await == 1.0);
    }
}

#[tokio::test]
async fn a_slow_store_never_holds_a_call_past_the_timeout() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let proxy = SlowProxy::start(redis.addr()).await;
    let mock = MockAgent::start(Mode::Normal).await;
    let extra = format!(
        "[rate_limits]\nper_caller = {{ per_minute = 100 }}\n[rate_limits.store]\nurl = \"{}\"\ntimeout = \"40ms\"\nconnect_timeout = \"2s\"\n",
        proxy.url()
    );
    let gw = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    assert!(admitted(
        &client::post_json(&gw.url(), send("fast"), &[]).await
    ));
    proxy.set_delay(Duration::from_millis(400));
    for i in 0..5 {
        let started = Instant::now();
        let reply = client::post_json(&gw.url(), send(&format!("slow{i}")), &[]).await;
        let took = started.elapsed();
        assert!(took < Duration::from_millis(300), "call {i} took {took:?}");
        assert!(admitted(&reply), "the local fallback admits");
    }
    assert!(
        metric(
            &gw,
            "a2a_gateway_rate_limit_store_errors_total{kind=\"timeout\"}"
        )
        .await
            >= 1.0
    );
    assert_eq!(store_state(&gw).await, "down");
    proxy.set_delay(Duration::ZERO);
    wait_store_state(&gw, "up", Duration::from_secs(10)).await;
    let before = metric(
        &gw,
        "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}",
    )
    .await;
    assert!(admitted(
        &client::post_json(&gw.url(), send("again"), &[]).await
    ));
    let after = metric(
        &gw,
        "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}",
    )
    .await;
    assert_eq!(after, before + 1.0);
}

fn config_with(store: &str) -> String {
    format!(
        "[rate_limits]\nper_caller = {{ per_second = 5 }}\n[rate_limits.store]\n{store}\nconnect_timeout = \"2s\"\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n"
    )
}

/// `run`'s error (through the library) and `check`'s (the binary).
async fn start_error(text: &str) -> (String, String) {
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    let config = config::load_with(Some(text), &overrides).expect("valid config");
    let run = match a2a_gateway::build(config).start().await {
        Ok(_) => panic!("started against a store it cannot use"),
        Err(e) => e.to_string(),
    };
    let path = std::env::temp_dir().join(format!(
        "a2a-gw-store-{}-{}.toml",
        std::process::id(),
        text.len()
    ));
    std::fs::write(&path, text).unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .env("A2A_GW_TEST_STORE_PASSWORD", "not-the-password")
        .output()
        .await
        .expect("run check");
    let _ = std::fs::remove_file(&path);
    assert!(
        !out.status.success(),
        "check passed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (run, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn a_wrong_password_or_tls_to_a_plain_port_is_a_clear_start_up_error() {
    let Some(redis) = RedisServer::start_with(Some("the-password")).await else {
        return;
    };
    std::env::set_var("A2A_GW_TEST_STORE_PASSWORD", "not-the-password");
    let wrong = config_with(&format!(
        "url = \"{}\"\npassword_env = \"A2A_GW_TEST_STORE_PASSWORD\"",
        redis.url()
    ));
    let (run, check) = start_error(&wrong).await;
    for said in [&run, &check] {
        assert!(
            said.contains("rate_limits.store redis://127.0.0.1:"),
            "{said}"
        );
        assert!(said.contains("password"), "{said}");
        assert!(
            !said.contains("not-the-password"),
            "the password is never shown: {said}"
        );
    }
    let tls = config_with(&format!(
        "url = \"rediss://127.0.0.1:{}\"",
        redis.addr().port()
    ));
    let (run, check) = start_error(&tls).await;
    for said in [&run, &check] {
        assert!(
            said.contains("rate_limits.store rediss://127.0.0.1:"),
            "{said}"
        );
        assert!(said.to_lowercase().contains("tls"), "{said}");
    }
    // The right password: `check` says the store answers.
    std::env::set_var("A2A_GW_TEST_STORE_RIGHT_PASSWORD", "the-password");
    let right = config_with(&format!(
        "url = \"{}\"\npassword_env = \"A2A_GW_TEST_STORE_RIGHT_PASSWORD\"",
        redis.url()
    ));
    let path = std::env::temp_dir().join(format!("a2a-gw-store-ok-{}.toml", std::process::id()));
    std::fs::write(&path, &right).unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("rate-limit store: redis://127.0.0.1:"),
        "{said}"
    );
    assert!(said.contains("answers (on_store_error = local)"), "{said}");
}

#[tokio::test]
async fn a_reload_changes_the_store_and_the_limits_without_dropping_calls() {
    let Some(first) = RedisServer::start().await else {
        return;
    };
    let Some(second) = RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let upstream = format!("[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n", mock.url());
    let before = format!(
        "{}{upstream}",
        shared(&first.url(), "per_caller = { per_minute = 3 }", "")
    );
    let gw = TestGateway::from_toml(&before).await;
    let mut statuses = Vec::new();
    for i in 0..5 {
        statuses.push(
            client::post_json(&gw.url(), send(&format!("a{i}")), &[])
                .await
                .status
                .as_u16(),
        );
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let after = format!(
        "{}{upstream}",
        shared(&second.url(), "per_caller = { per_minute = 1000 }", "")
    );
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    gw.running
        .reload(config::load_with(Some(&after), &overrides))
        .expect("reload");
    // Until the new store has connected, calls meet the local fallback;
    // none fails, and then the new store decides.
    for i in 0..20 {
        let reply = client::post_json(&gw.url(), send(&format!("b{i}")), &[]).await;
        assert!(admitted(&reply), "call {i} after the reload");
    }
    wait_store_state(&gw, "up", Duration::from_secs(5)).await;
    let keys = second.command("KEYS *").await;
    assert!(keys.contains("rl:caller:ip:127.0.0.1"), "{keys}");
    let body: Value = client::get(&format!("{}/readyz", gw.admin_url()), &[])
        .await
        .json();
    assert_eq!(body["rate_limit_store"]["address"], second.url(), "{body}");
}

#[tokio::test]
async fn two_gateways_share_a_limit_through_a_redis_cluster() {
    let Some(cluster) = RedisCluster::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let urls: Vec<String> = cluster
        .nodes
        .iter()
        .map(|n| format!("\"{}\"", n.url()))
        .collect();
    let extra = format!(
        "[rate_limits]\nglobal = {{ per_minute = 4 }}\nper_caller = {{ per_minute = 1000 }}\n[rate_limits.store]\nurls = [{}]\ntimeout = \"250ms\"\n",
        urls.join(", ")
    );
    let a = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let b = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let mut passed = 0;
    for i in 0..10 {
        let gw = [&a, &b][i % 2];
        let reply = client::post_json(&gw.url(), send(&format!("c{i}")), &[]).await;
        if admitted(&reply) {
            passed += 1;
        } else {
            assert_refused_by(&reply, "global", "\"global\";q=4;w=60");
        }
    }
    assert!((4..=5).contains(&passed), "{passed} admitted of 10");
    // Both limits' keys share the prefix's slot, so one script reads both.
    let global = cluster.node_of("{a2a-gateway}:rl:global").await;
    let said = global
        .command("EXISTS {a2a-gateway}:rl:caller:ip:127.0.0.1")
        .await;
    assert!(said.starts_with(":1"), "{said}");
    assert_eq!(store_state(&a).await, "up");
}

/// A busy limit is leased: most calls spend units a gateway already holds,
/// and the two together still admit the limit, within the documented
/// tolerance (each may hold a lease of a tenth of the burst unspent).
#[tokio::test]
async fn a_busy_limit_is_leased_and_still_holds_within_the_tolerance() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let extra = shared(&redis.url(), "global = { per_minute = 200 }", "");
    let a = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let b = TestGateway::start(&[("echo", &mock.url())], &extra).await;
    let started = Instant::now();
    let mut passed = 0usize;
    for i in 0..300 {
        let gw = [&a, &b][i % 2];
        let reply = client::post_json(&gw.url(), send(&format!("l{i}")), &[]).await;
        if admitted(&reply) {
            passed += 1;
        } else {
            assert_refused_by(&reply, "global", "\"global\";q=200;w=60");
        }
    }
    // A lease is 20 units (a tenth of the burst): each gateway may end
    // with 19 unspent. One unit comes back every 0.3 s.
    let refilled = (started.elapsed().as_millis() / 300) as usize + 1;
    assert!(
        (200 - 2 * 19..=200 + refilled).contains(&passed),
        "{passed} admitted"
    );
    let mut by_lease = 0.0;
    let mut by_store = 0.0;
    for gw in [&a, &b] {
        by_lease += metric(
            gw,
            "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"lease\"}",
        )
        .await;
        by_store += metric(
            gw,
            "a2a_gateway_rate_limit_decisions_total{result=\"allowed\",source=\"store\"}",
        )
        .await;
    }
    assert_eq!((by_lease + by_store) as usize, passed);
    assert!(
        by_store * 5.0 < by_lease,
        "{by_store} round trips for {passed} calls"
    );
}

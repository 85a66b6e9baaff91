//! Replicas of one upstream through a real gateway: calls spread over them,
//! a busy replica is avoided, a refused connection fails over, a call that
//! may have been delivered is never sent twice, a failing replica is ejected
//! by its breaker and comes back through one trial call, and a fully ejected
//! upstream fails fast with 503 and Retry-After.
use std::time::{Duration, Instant};

use crate::support::calls::send_raw;
use crate::support::client::{self, Reply};
use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

/// Bound for any single wait in these tests.
const LIMIT: Duration = Duration::from_secs(5);

/// A gateway with one upstream "pool" whose replicas are `urls`; `keys` are
/// more TOML keys for that upstream.
async fn gateway(urls: &[String], keys: &str) -> TestGateway {
    let list: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    TestGateway::from_toml(&format!(
        "[server]\nshutdown_grace = \"2s\"\n[card_refresh]\ntimeout = \"1s\"\n\n[[upstreams]]\nname = \"pool\"\nurls = [{}]\n{keys}\n",
        list.join(", ")
    ))
    .await
}

async fn mocks(n: usize) -> Vec<MockAgent> {
    let mut all = Vec::new();
    for i in 0..n {
        let mock = MockAgent::start(Mode::Normal).await;
        mock.set_id_prefix(&format!("r{i}-"));
        all.push(mock);
    }
    all
}

fn urls(mocks: &[MockAgent]) -> Vec<String> {
    mocks.iter().map(MockAgent::url).collect()
}

async fn call(gw: &TestGateway, id: usize) -> Reply {
    let reply = tokio::time::timeout(
        LIMIT,
        client::post_json(&gw.url(), send_raw(&id.to_string()), &[]),
    )
    .await;
    reply.unwrap_or_else(|_| panic!("call {id}: no answer within {LIMIT:?}"))
}

async fn assert_ok(gw: &TestGateway, id: usize) {
    let reply = call(gw, id).await;
    assert_eq!(reply.status, StatusCode::OK, "call {id}: {}", reply.text());
    assert_eq!(reply.json()["result"]["kind"], "task", "{}", reply.text());
}

fn counts(mocks: &[MockAgent]) -> Vec<usize> {
    mocks.iter().map(MockAgent::request_count).collect()
}

/// The upstream's `replicas` array from `/readyz`.
async fn replicas(gw: &TestGateway) -> Vec<Value> {
    let reply = client::get(&format!("{}/readyz", gw.admin_url()), &[]).await;
    let ready = reply.json();
    match ready["upstreams"]["pool"]["replicas"].as_array() {
        Some(list) => list.clone(),
        None => panic!("no replicas in /readyz: {ready}"),
    }
}

async fn breaker_state(gw: &TestGateway, index: usize) -> String {
    let list = replicas(gw).await;
    list[index]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Polls `/readyz` until replica `index` is in `state`; panics after LIMIT.
async fn wait_state(gw: &TestGateway, index: usize, state: &str) {
    let started = Instant::now();
    loop {
        let now = breaker_state(gw, index).await;
        if now == state {
            return;
        }
        assert!(
            started.elapsed() < LIMIT,
            "replica {index} stayed {now}, not {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn fail_500() -> Mode {
    Mode::Fixed {
        status: 500,
        content_type: "application/json".into(),
        body: Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
        ),
    }
}

// ------------------------------------------------------------ balancing

async fn assert_spread(balance: &str) {
    let mocks = mocks(3).await;
    let gw = gateway(&urls(&mocks), &format!("balance = \"{balance}\"")).await;
    for id in 0..60 {
        assert_ok(&gw, id).await;
    }
    let counts = counts(&mocks);
    assert_eq!(counts.iter().sum::<usize>(), 60, "{counts:?}");
    assert!(counts.iter().all(|&c| c >= 10), "{balance}: {counts:?}");
}

#[tokio::test]
async fn least_outstanding_spreads_sequential_calls() {
    assert_spread("least_outstanding").await;
}

#[tokio::test]
async fn round_robin_spreads_sequential_calls() {
    assert_spread("round_robin").await;
}

#[tokio::test]
async fn least_outstanding_avoids_a_busy_replica() {
    let mocks = mocks(3).await;
    let gw = gateway(&urls(&mocks), "response_header_timeout = \"5s\"").await;
    for mock in &mocks {
        mock.set_mode(Mode::Hang);
    }
    // One call is held by whichever replica it lands on.
    let url = gw.url();
    let held = tokio::spawn(async move { client::try_post_json(&url, send_raw("0"), &[]).await });
    let started = Instant::now();
    let busy = loop {
        if let Some(i) = counts(&mocks).iter().position(|&c| c == 1) {
            break i;
        }
        assert!(
            started.elapsed() < LIMIT,
            "the held call reached no replica"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for mock in &mocks {
        mock.set_mode(Mode::Normal);
    }
    let list = replicas(&gw).await;
    assert_eq!(list[busy]["outstanding"], 1, "{list:?}");
    for id in 1..=12 {
        assert_ok(&gw, id).await;
    }
    let counts = counts(&mocks);
    assert_eq!(
        counts[busy], 1,
        "the busy replica got more calls: {counts:?}"
    );
    let idle: Vec<usize> = (0..3).filter(|&i| i != busy).map(|i| counts[i]).collect();
    assert!(idle.iter().all(|&c| c >= 4), "{counts:?}");
    held.abort();
}

// ------------------------------------------------------------- failover

#[tokio::test]
async fn refused_connection_fails_over_and_ejects_the_dead_replica() {
    let live = mocks(2).await;
    let closed = ClosedPort::new();
    let dead = closed.url();
    let all = vec![live[0].url(), dead, live[1].url()];
    let gw = gateway(&all, "breaker = { failures = 2, open_for = \"30s\" }").await;
    let mut calls = 0;
    while breaker_state(&gw, 1).await != "open" {
        assert!(calls < 30, "the dead replica was never ejected");
        assert_ok(&gw, calls).await;
        calls += 1;
    }
    for id in 100..110 {
        assert_ok(&gw, id).await;
    }
    // Every call was delivered exactly once, all to live replicas.
    assert_eq!(counts(&live).iter().sum::<usize>(), calls + 10);
    let list = replicas(&gw).await;
    assert_eq!(list[0]["state"], "closed", "{list:?}");
    assert_eq!(list[2]["state"], "closed", "{list:?}");
}

/// Replica 0 misbehaves in `mode` after taking the call; the others are
/// fine. Each failed call must have reached no other replica.
async fn assert_never_retried(mode: Mode, keys: &str, status: u16, code: i64) {
    let mocks = mocks(3).await;
    mocks[0].set_mode(mode);
    let gw = gateway(&urls(&mocks), keys).await;
    let mut failures = 0;
    for id in 0..9 {
        let (before, connections) = (counts(&mocks), mocks[0].connection_count());
        let reply = call(&gw, id).await;
        let after = counts(&mocks);
        if reply.status == StatusCode::OK {
            assert_eq!(
                after.iter().sum::<usize>(),
                before.iter().sum::<usize>() + 1
            );
            continue;
        }
        failures += 1;
        assert_eq!(reply.status.as_u16(), status, "{}", reply.text());
        assert_eq!(reply.json()["error"]["code"], code, "{}", reply.text());
        assert_eq!(after[1..], before[1..], "a delivered call was retried");
        assert!(mocks[0].connection_count() > connections || after[0] > before[0]);
    }
    assert!(failures >= 2, "replica 0 was hardly used: {failures}");
}

#[tokio::test]
async fn a_call_that_timed_out_after_delivery_is_not_retried() {
    let keys = "response_header_timeout = \"300ms\"";
    assert_never_retried(Mode::Hang, keys, 504, -32051).await;
}

#[tokio::test]
async fn a_call_whose_connection_was_dropped_is_not_retried() {
    assert_never_retried(Mode::CloseImmediately, "", 502, -32050).await;
}

// ------------------------------------------------------------- breakers

/// Calls until replica 0 has received `n` more calls (bounded).
async fn call_until_replica_0_hit(gw: &TestGateway, mocks: &[MockAgent], first_id: usize) {
    let before = mocks[0].request_count();
    for id in first_id..first_id + 10 {
        let reply = call(gw, id).await;
        if mocks[0].request_count() > before {
            return;
        }
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    }
    panic!("replica 0 took no call");
}

#[tokio::test]
async fn breaker_opens_then_lets_one_trial_through_and_closes() {
    let mocks = mocks(3).await;
    let keys = "breaker = { failures = 2, open_for = \"1s\" }";
    let gw = gateway(&urls(&mocks), keys).await;
    mocks[0].set_mode(fail_500());
    // Two 500s (relayed to the client as the agent sent them) open it.
    call_until_replica_0_hit(&gw, &mocks, 0).await;
    assert_eq!(breaker_state(&gw, 0).await, "closed");
    call_until_replica_0_hit(&gw, &mocks, 10).await;
    assert_eq!(breaker_state(&gw, 0).await, "open");
    let opened = Instant::now();
    let before = mocks[0].request_count();
    for id in 20..26 {
        assert_ok(&gw, id).await;
    }
    if opened.elapsed() < Duration::from_millis(900) {
        assert_eq!(
            mocks[0].request_count(),
            before,
            "an open replica got calls"
        );
    }
    // Half-open: the trial fails, and it is open again.
    wait_state(&gw, 0, "half_open").await;
    call_until_replica_0_hit(&gw, &mocks, 30).await;
    assert_eq!(breaker_state(&gw, 0).await, "open");
    // Healed: the next trial succeeds and closes it.
    mocks[0].set_mode(Mode::Normal);
    wait_state(&gw, 0, "half_open").await;
    call_until_replica_0_hit(&gw, &mocks, 40).await;
    assert_eq!(breaker_state(&gw, 0).await, "closed");
    for id in 50..56 {
        assert_ok(&gw, id).await;
    }
    assert!(
        mocks[0].request_count() > before + 2,
        "{:?}",
        counts(&mocks)
    );
}

#[tokio::test]
async fn every_replica_ejected_fails_fast_with_503_and_retry_after() {
    let mocks = mocks(3).await;
    let keys = "breaker = { failures = 1, open_for = \"30s\" }";
    let gw = gateway(&urls(&mocks), keys).await;
    for mock in &mocks {
        mock.set_mode(fail_500());
    }
    for id in 0..3 {
        let reply = call(&gw, id).await;
        assert_eq!(
            reply.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{}",
            reply.text()
        );
    }
    assert_eq!(counts(&mocks), [1, 1, 1]);
    let started = Instant::now();
    let reply = call(&gw, 3).await;
    assert!(started.elapsed() < Duration::from_secs(1), "not fast");
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    let v = reply.json();
    assert_eq!(v["error"]["code"], -32055, "{v}");
    assert_eq!(v["error"]["data"]["upstream"], "pool", "{v}");
    assert_eq!(v["id"], 3, "{v}");
    let retry: u64 = reply
        .header("retry-after")
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {:?}", reply.headers));
    assert!((25..=30).contains(&retry), "Retry-After {retry}");
    assert_eq!(counts(&mocks), [1, 1, 1], "an ejected replica got a call");
    let list = replicas(&gw).await;
    assert!(list.iter().all(|r| r["state"] == "open"), "{list:?}");
    let mut urls_seen: Vec<&str> = list.iter().filter_map(|r| r["url"].as_str()).collect();
    urls_seen.sort_unstable();
    assert_eq!(urls_seen.len(), 3);
}

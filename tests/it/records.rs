//! Every call is recorded, whatever its end (issue #52, item 8): a call
//! whose client leaves before the answer is counted `abandoned` (status
//! 499); a stream the gateway ends with its own error event, and a unary
//! answer the agent cut short after its head was passed on, are counted
//! under their error class, not as plain 200s.

use std::time::{Duration, Instant};

use crate::support::calls::send_raw;
use crate::support::client;
use crate::support::fault_agent::{Fault, FaultAgent};
use crate::support::gateway::TestGateway;
use bytes::Bytes;

const PROMPT: Duration = Duration::from_secs(10);

/// The value of the `requests_total` series whose labels contain all of
/// `labels` (0 when there is none).
async fn requests(gw: &TestGateway, labels: &[&str]) -> f64 {
    let text = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    text.lines()
        .filter(|l| l.starts_with("a2a_gateway_requests_total{"))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits until the series reaches `n`.
async fn until(gw: &TestGateway, labels: &[&str], n: f64) -> f64 {
    let deadline = Instant::now() + PROMPT;
    loop {
        let got = requests(gw, labels).await;
        if got >= n || Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_client_that_leaves_before_the_answer_is_counted_abandoned() {
    let bad = FaultAgent::start(Fault::Hang).await;
    let gw = TestGateway::one("bad", &bad.url(), "response_header_timeout = \"60s\"", "").await;
    let url = gw.url();
    let waiting =
        tokio::spawn(async move { client::try_post_json(&url, send_raw("1"), &[]).await });
    assert!(
        bad.wait_calls(1, PROMPT).await,
        "the call reached the agent"
    );
    assert_eq!(requests(&gw, &[r#"status="499""#]).await, 0.0);
    waiting.abort();
    let got = until(
        &gw,
        &[r#"status="499""#, r#"upstream="bad""#, r#"family="send""#],
        1.0,
    )
    .await;
    assert_eq!(got, 1.0, "one abandoned call, counted once");
}

#[tokio::test]
async fn a_stream_the_gateway_ends_with_an_error_event_counts_as_that_error() {
    let bad = FaultAgent::start(Fault::stream_dying_after_one_event("")).await;
    let gw = TestGateway::one("bad", &bad.url(), "response_header_timeout = \"60s\"", "").await;
    let call = crate::support::calls::stream_raw("\"s\"");
    let mut sse = client::post_stream(&gw.url(), call, &[]).await;
    let events = sse.collect_events(PROMPT).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let labels = [r#"error="upstream_stream_broken""#, r#"status="200""#];
    assert_eq!(until(&gw, &labels, 1.0).await, 1.0);
    assert_eq!(
        requests(&gw, &[r#"error="none""#]).await,
        0.0,
        "not a plain 200"
    );
}

#[tokio::test]
async fn a_unary_answer_cut_short_counts_as_a_bad_response() {
    let body = Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"pad":"{}"}}}}"#,
        "x".repeat(1000)
    ));
    let bad = FaultAgent::start(Fault::CloseMidBody {
        content_type: "application/json",
        body,
        sent: 100,
    })
    .await;
    let gw = TestGateway::one("bad", &bad.url(), "response_header_timeout = \"60s\"", "").await;
    let result = client::try_post_json(&gw.url(), send_raw("1"), &[]).await;
    assert!(result.is_err(), "the client sees a broken answer");
    let labels = [r#"error="upstream_bad_response""#];
    assert_eq!(until(&gw, &labels, 1.0).await, 1.0);
    assert_eq!(
        requests(&gw, &[r#"error="none""#]).await,
        0.0,
        "not a plain 200"
    );
}

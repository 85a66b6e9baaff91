//! The push relay's parts, over real loopback sockets: a webhook receiver
//! that records what it gets and answers as scripted (`support::webhook`);
//! the relay's sender with a resolver the test controls (a name that
//! answers loopback now is what a rebinding DNS does); its queues; and the
//! callback agents post to.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_gateway::push_guard::{settings, PushGuardSection};
use a2a_gateway::push_relay::deliver::{Delivered, Lookup, Resolve, Sender};
use a2a_gateway::push_relay::queue::{Bounds, Job, Observe, Queues};
use a2a_gateway::push_relay::seal::ClientConfig;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;

use crate::support::webhook::Receiver;

/// Answers `ips` for every name, counting the look-ups.
struct FixedDns {
    ips: Vec<IpAddr>,
    lookups: Arc<Mutex<Vec<String>>>,
}

impl Resolve for FixedDns {
    fn resolve(&self, host: String, _port: u16) -> Lookup {
        self.lookups.lock().unwrap().push(host);
        let ips = self.ips.clone();
        Box::pin(async move { Ok(ips) })
    }
}

fn sender(
    allow_cidrs: &[&str],
    dns: &[&str],
    max_attempts: u32,
) -> (Sender, Arc<Mutex<Vec<String>>>) {
    let guard = settings(&PushGuardSection {
        allow_http: true,
        allow_cidrs: allow_cidrs.iter().map(|c| c.to_string()).collect(),
        ..PushGuardSection::default()
    })
    .unwrap();
    let lookups = Arc::new(Mutex::new(Vec::new()));
    let resolve = FixedDns {
        ips: dns.iter().map(|i| i.parse().unwrap()).collect(),
        lookups: lookups.clone(),
    };
    let sender = Sender {
        guard,
        resolve: Arc::new(resolve),
        timeout: Duration::from_secs(2),
        max_attempts,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_secs(2),
    };
    (sender, lookups)
}

fn config(url: String) -> ClientConfig {
    ClientConfig {
        url,
        token: Some("client-token".into()),
        authentication: Some(serde_json::json!({"scheme": "Bearer", "credentials": "secret"})),
        version: "1.0".into(),
        binding: "JSONRPC".into(),
        agent_version: "1.0".into(),
        task_id: "task-1".into(),
        config_id: None,
        agent_token: "agent-token".into(),
        ..Default::default()
    }
}

const BODY: &str = r#"{"task":{"id":"task-1","status":{"state":"TASK_STATE_COMPLETED"}}}"#;

/// A name that does not exist in any DNS, resolved by the test to the
/// receiver: the delivery reaches it, so the connection went to the
/// address checked and was never looked up again; the Host is the URL's.
#[tokio::test]
async fn a_delivery_goes_to_the_address_checked_with_the_clients_credentials() {
    let receiver = Receiver::start(vec![]).await;
    let (sender, lookups) = sender(&["127.0.0.0/8"], &["127.0.0.1"], 3);
    let url = format!("http://hooks.invalid:{}/hook", receiver.addr.port());
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    assert_eq!(
        outcome,
        Delivered::Ok {
            status: 200,
            attempts: 1
        }
    );
    let got = receiver.got();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].host,
        format!("hooks.invalid:{}", receiver.addr.port())
    );
    assert_eq!(got[0].token.as_deref(), Some("client-token"));
    assert_eq!(got[0].authorization.as_deref(), Some("Bearer secret"));
    assert_eq!(got[0].body, BODY);
    assert_eq!(*lookups.lock().unwrap(), ["hooks.invalid"], "one look-up");
}

/// The name answers a loopback address at delivery, which the guard does
/// not allow: refused, naming the host, and nothing is sent.
#[tokio::test]
async fn a_host_that_turned_private_at_delivery_is_refused() {
    let receiver = Receiver::start(vec![]).await;
    let (sender, _) = sender(&[], &["127.0.0.1"], 3);
    let url = format!("http://rebound.example:{}/hook", receiver.addr.port());
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    let Delivered::Refused(why) = outcome else {
        panic!("refused: {outcome:?}")
    };
    assert!(
        why.starts_with("rebound.example resolves to 127.0.0.1 at delivery"),
        "{why}"
    );
    assert!(receiver.got().is_empty());
}

#[tokio::test]
async fn server_errors_and_429_are_retried_honouring_retry_after() {
    let receiver = Receiver::start(vec![(503, None), (429, Some("1")), (200, None)]).await;
    let (sender, _) = sender(&["127.0.0.0/8"], &[], 5);
    let url = format!("http://127.0.0.1:{}/hook", receiver.addr.port());
    let started = Instant::now();
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    assert_eq!(
        outcome,
        Delivered::Ok {
            status: 200,
            attempts: 3
        }
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
    assert_eq!(receiver.got().len(), 3);
    assert!(receiver.got().iter().all(|r| r.body == BODY));
}

#[tokio::test]
async fn a_client_error_is_not_retried_and_attempts_are_bounded() {
    let receiver = Receiver::start(vec![(400, None)]).await;
    let (sender, _) = sender(&["127.0.0.0/8"], &[], 4);
    let url = format!("http://127.0.0.1:{}/hook", receiver.addr.port());
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    assert_eq!(
        outcome,
        Delivered::Rejected {
            status: 400,
            attempts: 1
        }
    );
    assert_eq!(receiver.got().len(), 1);

    let failing = Receiver::start(vec![(500, None); 10]).await;
    let url = format!("http://127.0.0.1:{}/hook", failing.addr.port());
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    assert_eq!(
        outcome,
        Delivered::GaveUp {
            attempts: 4,
            last: "500".into()
        }
    );
    assert_eq!(failing.got().len(), 4);

    let closed = crate::support::closed_port::ClosedPort::new();
    let url = format!("http://{}/hook", closed.addr());
    let started = Instant::now();
    let Delivered::GaveUp { attempts, last } =
        sender.deliver(&config(url), &Bytes::from(BODY)).await
    else {
        panic!("gave up")
    };
    assert_eq!(attempts, 4);
    assert!(last.starts_with("connection failed"), "{last}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

fn job(url: String, task: &str) -> Job {
    let mut config = config(url);
    config.task_id = task.into();
    Job {
        config,
        body: Bytes::from(format!("{{\"task\":\"{task}\"}}")),
        queued_at: Instant::now(),
    }
}

/// Outcomes by task, as the queues report them.
type Outcomes = Arc<Mutex<Vec<(String, Delivered)>>>;

fn queues(bounds: Bounds) -> (Arc<Queues>, Outcomes) {
    let (sender, _) = sender(&["127.0.0.0/8"], &[], 2);
    let outcomes: Outcomes = Arc::default();
    let seen = outcomes.clone();
    let observe: Observe = Box::new(move |job, outcome, _began| {
        seen.lock()
            .unwrap()
            .push((job.config.task_id.clone(), outcome.clone()));
    });
    (Queues::new(bounds, Arc::new(sender), observe), outcomes)
}

async fn wait_for(outcomes: &Outcomes, n: usize) {
    for _ in 0..200 {
        if outcomes.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} of {n} outcomes", outcomes.lock().unwrap().len());
}

/// Each destination drains in order, and a slow one does not hold up
/// another.
#[tokio::test]
async fn destinations_drain_in_order_and_apart() {
    let slow = Receiver::start_slow(vec![], Duration::from_millis(300)).await;
    let fast = Receiver::start(vec![]).await;
    let bounds = Bounds {
        per_destination: 10,
        total: 100,
        bytes: 1 << 20,
    };
    let (queues, outcomes) = queues(bounds);
    for task in ["s1", "s2"] {
        queues.push(job(
            format!("http://127.0.0.1:{}/h", slow.addr.port()),
            task,
        ));
    }
    for task in ["f1", "f2", "f3"] {
        queues.push(job(
            format!("http://127.0.0.1:{}/h", fast.addr.port()),
            task,
        ));
    }
    wait_for(&outcomes, 3).await;
    let first: Vec<String> = outcomes
        .lock()
        .unwrap()
        .iter()
        .map(|(t, _)| t.clone())
        .collect();
    assert_eq!(
        first[..3],
        ["f1", "f2", "f3"],
        "the fast webhook did not wait"
    );
    wait_for(&outcomes, 5).await;
    let slow_order: Vec<String> = slow
        .got()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).to_string())
        .collect();
    assert_eq!(slow_order, [r#"{"task":"s1"}"#, r#"{"task":"s2"}"#]);
    assert_eq!(queues.depth(), (0, 0));
    assert_eq!(queues.dropped(), 0);
}

/// A webhook that answers slowly: its queue fills, the oldest waiting
/// notifications are dropped and counted, and the newest are delivered.
#[tokio::test]
async fn a_full_queue_drops_its_oldest_and_counts_them() {
    let slow = Receiver::start_slow(vec![], Duration::from_millis(200)).await;
    let bounds = Bounds {
        per_destination: 3,
        total: 100,
        bytes: 1 << 20,
    };
    let (queues, outcomes) = queues(bounds);
    let url = format!("http://127.0.0.1:{}/h", slow.addr.port());
    queues.push(job(url.clone(), "t0"));
    // t0 in flight: the webhook has it and has not answered.
    for _ in 0..100 {
        if !slow.got().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(slow.got().len(), 1);
    for i in 1..=8 {
        queues.push(job(url.clone(), &format!("t{i}")));
    }
    assert_eq!(queues.dropped(), 5);
    assert_eq!(queues.depth().0, 3);
    wait_for(&outcomes, 4).await;
    let delivered: Vec<String> = outcomes
        .lock()
        .unwrap()
        .iter()
        .map(|(t, _)| t.clone())
        .collect();
    assert_eq!(delivered, ["t0", "t6", "t7", "t8"]);
}

// ------------------------------------------------------------ the callback

use a2a_gateway::push_relay::callback::Callback;
use a2a_gateway::push_relay::seal::{SealKey, Sealer};
use a2a_gateway::push_relay::settings::PushRelay;

fn callback(per_second: u32) -> (Callback, Outcomes) {
    let relay = PushRelay {
        callback_base: "http://127.0.0.1:1".into(),
        sealer: Arc::new(Sealer::new(vec![SealKey::new("k1", &[7; 32]).unwrap()])),
        timeout: Duration::from_secs(2),
        max_attempts: 2,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_secs(1),
        queue_per_destination: 10,
        max_queued: 100,
        max_queued_bytes: 1 << 20,
        max_body_bytes: 4096,
        per_config_per_second: per_second,
    };
    let bounds = Bounds {
        per_destination: 10,
        total: 100,
        bytes: 1 << 20,
    };
    let (queues, outcomes) = queues(bounds);
    (Callback::new(relay, queues), outcomes)
}

/// A 0.3 client's config, forwarded to a 1.0 agent.
fn sealed(callback: &Callback, receiver: &Receiver) -> (String, String) {
    let mut config = config(format!("http://127.0.0.1:{}/hook", receiver.addr.port()));
    config.version = "0.3".into();
    config.agent_version = "1.0".into();
    config.agent_token = callback.relay.sealer.agent_token().unwrap();
    let id = callback.relay.sealer.seal(&config).unwrap();
    (id, config.agent_token)
}

fn token(value: &str) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert("x-a2a-notification-token", value.parse().unwrap());
    headers
}

fn body(text: &str) -> Full<Bytes> {
    Full::new(Bytes::from(text.to_string()))
}

/// A 1.0 agent's StreamResponse reaches the 0.3 client as a 0.3 Task,
/// with the client's own token and credentials; the agent is answered 202.
#[tokio::test]
async fn an_agents_post_is_accepted_and_delivered_in_the_clients_shape() {
    let receiver = Receiver::start(vec![]).await;
    let (callback, outcomes) = callback(10);
    let (id, agent_token) = sealed(&callback, &receiver);
    let (status, _) = callback
        .receive(&id, &token(&agent_token), body(BODY))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    wait_for(&outcomes, 1).await;
    let got = receiver.got();
    let task: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(task["kind"], "task", "{task}");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    assert_eq!(got[0].token.as_deref(), Some("client-token"));
    assert_eq!(got[0].authorization.as_deref(), Some("Bearer secret"));
}

/// Each bad post is refused with its status, and nothing is delivered.
#[tokio::test]
async fn bad_posts_are_refused_and_never_delivered() {
    let receiver = Receiver::start(vec![]).await;
    let (callback, outcomes) = callback(3);
    let (id, agent_token) = sealed(&callback, &receiver);
    let (kid, sealed_part) = id.split_once('.').unwrap();
    let other = Sealer::new(vec![SealKey::new("k1", &[8; 32]).unwrap()]);
    let mut forged_config = config("http://127.0.0.1:1/".into());
    forged_config.agent_token = agent_token.clone();
    let forged = other.seal(&forged_config).unwrap();
    // A character in the middle changed (a whole 6 bits: it still decodes).
    let mid = sealed_part.len() / 2;
    let swapped = if &sealed_part[mid..=mid] == "A" {
        "B"
    } else {
        "A"
    };
    let changed = format!(
        "{kid}.{}{swapped}{}",
        &sealed_part[..mid],
        &sealed_part[mid + 1..]
    );
    let good = token(&agent_token);
    let cases: Vec<(String, http::HeaderMap, String, u16, &str)> = vec![
        (
            "garbage".into(),
            good.clone(),
            BODY.into(),
            404,
            "not one this gateway makes",
        ),
        (
            format!("k9.{sealed_part}"),
            good.clone(),
            BODY.into(),
            404,
            "\"k9\"",
        ),
        (changed, good.clone(), BODY.into(), 404, "does not open"),
        (forged, good.clone(), BODY.into(), 404, "does not open"),
        (
            id.clone(),
            http::HeaderMap::new(),
            BODY.into(),
            401,
            "X-A2A-Notification-Token",
        ),
        (
            id.clone(),
            token("not-the-token"),
            BODY.into(),
            401,
            "X-A2A-Notification-Token",
        ),
        (
            id.clone(),
            good.clone(),
            "x".repeat(5000),
            413,
            "over 4096 bytes",
        ),
    ];
    for (id, headers, text, status, says) in cases {
        let (got, why) = callback.receive(&id, &headers, body(&text)).await;
        assert_eq!(got.as_u16(), status, "{why}");
        assert!(why.contains(says), "{status}: {why}");
    }
    // The rate (3 a second) was spent by the posts that got that far.
    let (id, agent_token) = sealed(&callback, &receiver);
    let good = token(&agent_token);
    for (text, status, says) in [
        ("{not json", 400, "not JSON"),
        (r#"{"neither": 1}"#, 400, "not a notification"),
        ("[1]", 400, "not a JSON object"),
    ] {
        let (got, why) = callback.receive(&id, &good, body(text)).await;
        assert_eq!(got.as_u16(), status, "{text}: {why}");
        assert!(why.contains(says), "{text}: {why}");
    }
    let (got, why) = callback.receive(&id, &good, body(BODY)).await;
    assert_eq!(got, StatusCode::TOO_MANY_REQUESTS, "{why}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(receiver.got().is_empty());
    assert!(outcomes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_https_webhook_whose_certificate_is_not_trusted_gets_nothing() {
    use crate::support::mock_agent::{MockAgent, Mode};
    let ca = crate::support::pki::Ca::new("a CA no one trusts");
    let leaf = ca.server("hooks.example", 1);
    let tls = crate::upstream_tls::agent_tls(&leaf, &[b"http/1.1"], None);
    let webhook = MockAgent::start_tls(Mode::Normal, tls).await;
    let (sender, lookups) = sender(&["127.0.0.0/8"], &["127.0.0.1"], 2);
    let url = format!("https://hooks.example:{}/hook", webhook.addr().port());
    let outcome = sender.deliver(&config(url), &Bytes::from(BODY)).await;
    let Delivered::GaveUp { attempts: 2, last } = outcome else {
        panic!("not delivered: {outcome:?}")
    };
    assert!(last.starts_with("connection failed"), "{last}");
    assert_eq!(lookups.lock().unwrap().len(), 2, "one look-up an attempt");
    let posted = webhook.all_requests();
    assert!(posted.is_empty(), "nothing reached the webhook: {posted:?}");
}

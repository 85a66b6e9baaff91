//! The push relay end to end, over real loopback sockets: a client sets a
//! webhook through the gateway; the mock agent is given a callback on the
//! gateway instead (and neither the client's URL, token nor credentials);
//! the test then posts as the agent would, and the webhook receiver must
//! get the notification in the client's version, with its token and
//! credentials. Also: another replica and a restarted gateway deliver
//! what the first one sealed; get and list show the client's own
//! webhook; a deleted config is no longer delivered; bad posts are
//! refused and counted.

use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::support::calls::rpc;
use crate::support::client::{get, post_json};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use crate::support::mock_grpc::MockGrpcAgent;
use crate::support::webhook::Receiver;
use crate::version_bridge::agent_speaking;
use a2a_gateway::a2a::grpc::v1;

const LIMIT: Duration = Duration::from_secs(10);

/// A sealing key every replica of a test reads.
fn key_file(name: &str) -> String {
    let bytes: Vec<u8> = (0..32u8)
        .map(|i| i.wrapping_mul(7) ^ name.len() as u8)
        .collect();
    let path =
        std::env::temp_dir().join(format!("a2a-gw-relay-it-{}-{name}.key", std::process::id()));
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// `[push_guard]` allowing the loopback receiver (or not), and the relay.
fn relay_toml(key: &str, loopback_allowed: bool) -> String {
    let cidrs = if loopback_allowed {
        "\"127.0.0.0/8\""
    } else {
        ""
    };
    format!(
        "[push_guard]\nallow_http = true\nallow_cidrs = [{cidrs}]\n\
         [push_relay]\nenabled = true\ncallback_base = \"http://gateway.internal:8080/\"\n\
         backoff = \"20ms\"\nmax_attempts = 2\n\
         [[push_relay.keys]]\nkid = \"k1\"\nfile = \"{key}\"\n"
    )
}

async fn gateway(agent: &MockAgent, key: &str) -> TestGateway {
    TestGateway::start(&[("agent", &agent.url())], &relay_toml(key, true)).await
}

/// The callback the agent was given: the id after `/push/`, and its token.
fn callback_in(value: &Value) -> Option<(String, String)> {
    match value {
        Value::Object(map) => {
            let url = map.get("url").and_then(Value::as_str);
            if let Some((base, id)) = url.and_then(|u| u.rsplit_once("/push/")) {
                assert_eq!(base, "http://gateway.internal:8080", "the configured base");
                let token = map["token"]
                    .as_str()
                    .expect("the agent's token")
                    .to_string();
                return Some((id.to_string(), token));
            }
            map.values().find_map(callback_in)
        }
        Value::Array(items) => items.iter().find_map(callback_in),
        _ => None,
    }
}

/// The last call the agent got, and the callback in it.
fn agent_got(agent: &MockAgent) -> (String, (String, String)) {
    let seen = agent.requests().pop().expect("the agent got the call");
    let text = String::from_utf8_lossy(&seen.body).to_string();
    let callback = callback_in(&seen.json()).unwrap_or_else(|| panic!("no callback in {text}"));
    (text, callback)
}

/// Posts `body` as the agent would, to `gateway`'s callback.
async fn post_as_agent(gateway: &TestGateway, (id, token): &(String, String), body: &Value) -> u16 {
    let url = format!("{}push/{id}", gateway.url());
    let headers = [("x-a2a-notification-token", token.as_str())];
    post_json(&url, body.to_string(), &headers)
        .await
        .status
        .as_u16()
}

/// A client's push-config set in its version, for `hook`.
fn set_call(client: &str, hook: &str) -> String {
    match client {
        "1.0" => rpc(
            1,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t1",
            "id": "c1", "url": hook, "token": "client-token",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}),
        ),
        "0.3" => rpc(
            1,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": "t1",
            "pushNotificationConfig": {"id": "c1", "url": hook, "token": "client-token",
                "authentication": {"schemes": ["Bearer"], "credentials": "s3cret"}}}),
        ),
        "0.1" => rpc(
            1,
            "tasks/pushNotification/set",
            json!({"id": "t1",
            "pushNotificationConfig": {"url": hook, "token": "client-token",
                "authentication": {"schemes": ["Bearer"], "credentials": "s3cret"}}}),
        ),
        _ => unreachable!(),
    }
}

/// What an agent of `agent`'s version posts when task t1 completes.
fn completed(agent: &str) -> Value {
    match agent {
        "1.0" => json!({"statusUpdate": {"taskId": "t1", "contextId": "ctx",
            "status": {"state": "TASK_STATE_COMPLETED"}}}),
        _ => json!({"kind": "task", "id": "t1", "contextId": "ctx",
            "status": {"state": "completed"}}),
    }
}

/// Task t1, completed, as a client of `client`'s version reads it.
fn assert_client_shape(client: &str, body: &Value) {
    match client {
        "1.0" => {
            let (task, status) = match body.get("statusUpdate") {
                Some(update) => (&update["taskId"], &update["status"]),
                None => (&body["task"]["id"], &body["task"]["status"]),
            };
            assert_eq!(task, "t1", "{body}");
            assert_eq!(status["state"], "TASK_STATE_COMPLETED", "{body}");
        }
        "0.3" => {
            assert_eq!(body["kind"], "task", "{body}");
            assert_eq!(body["id"], "t1", "{body}");
            assert_eq!(body["status"]["state"], "completed", "{body}");
        }
        _ => {
            assert!(body.get("kind").is_none(), "0.1 has no kind: {body}");
            assert_eq!(body["id"], "t1", "{body}");
            assert_eq!(body["status"]["state"], "completed", "{body}");
        }
    }
}

#[tokio::test]
async fn each_version_pair_is_delivered_in_the_client_s_shape() {
    let key = key_file("pairs");
    for (client, agent_version) in [
        ("1.0", "1.0"),
        ("1.0", "0.3"),
        ("0.3", "1.0"),
        ("0.3", "0.3"),
    ] {
        let pair = format!("{client}->{agent_version}");
        let receiver = Receiver::start(vec![]).await;
        let agent = agent_speaking(agent_version).await;
        let gw = gateway(&agent, &key).await;
        let hook = receiver.url(&format!("/hook/{client}"));
        let set = post_json(&gw.url(), set_call(client, &hook), &[]).await;
        let answer = set.json();
        // The answer shows the client's own webhook, token and credentials.
        let shown = answer["result"].to_string();
        assert!(shown.contains(&hook), "{pair}: {answer}");
        assert!(
            shown.contains("client-token") && shown.contains("s3cret"),
            "{pair}: {answer}"
        );
        assert!(!shown.contains("/push/"), "{pair}: {answer}");
        // The agent got a callback, and none of the client's secrets.
        let (sent, callback) = agent_got(&agent);
        for secret in [hook.as_str(), "client-token", "s3cret"] {
            assert!(
                !sent.contains(secret),
                "{pair}: the agent saw {secret}: {sent}"
            );
        }
        let status = post_as_agent(&gw, &callback, &completed(agent_version)).await;
        assert_eq!(status, 202, "{pair}");
        let got = receiver.wait_for(1, LIMIT).await;
        assert_eq!(got.len(), 1, "{pair}");
        assert_eq!(got[0].token.as_deref(), Some("client-token"), "{pair}");
        assert_eq!(
            got[0].authorization.as_deref(),
            Some("Bearer s3cret"),
            "{pair}"
        );
        let body: Value = serde_json::from_slice(&got[0].body).unwrap();
        assert_client_shape(client, &body);
    }
}

#[tokio::test]
async fn a_webhook_in_a_send_is_relayed_for_rest_clients_too() {
    let key = key_file("rest");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("1.0").await;
    let gw = gateway(&agent, &key).await;
    let hook = receiver.url("/rest");
    let send = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "taskId": "t1",
        "parts": [{"text": "hi"}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "client-token"}}});
    let url = format!("{}message:send", gw.url());
    let reply = post_json(&url, send.to_string(), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (sent, callback) = agent_got(&agent);
    assert!(!sent.contains(&hook), "{sent}");
    assert_eq!(post_as_agent(&gw, &callback, &completed("1.0")).await, 202);
    let got = receiver.wait_for(1, LIMIT).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].token.as_deref(), Some("client-token"));
    assert_client_shape("1.0", &serde_json::from_slice(&got[0].body).unwrap());
}

#[tokio::test]
async fn another_replica_and_a_restarted_gateway_deliver_what_one_sealed() {
    let key = key_file("replicas");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("1.0").await;
    let first = gateway(&agent, &key).await;
    let set = set_call("1.0", &receiver.url("/replicas"));
    assert_eq!(post_json(&first.url(), set, &[]).await.status, 200);
    let (_, callback) = agent_got(&agent);
    // The other replica, running beside it.
    let other = gateway(&agent, &key).await;
    assert_eq!(
        post_as_agent(&other, &callback, &completed("1.0")).await,
        202
    );
    assert_eq!(receiver.wait_for(1, LIMIT).await.len(), 1);
    // The first one stops; one started afterwards delivers too.
    first.shut_down_within(LIMIT).await;
    let restarted = gateway(&agent, &key).await;
    assert_eq!(
        post_as_agent(&restarted, &callback, &completed("1.0")).await,
        202
    );
    let got = receiver.wait_for(2, LIMIT).await;
    assert_eq!(got.len(), 2);
    assert!(got
        .iter()
        .all(|r| r.token.as_deref() == Some("client-token")));
    // Keys rotated: a new one seals, the old one still opens.
    let rotated = relay_toml(&key, true)
        .replace("[push_relay]\n", "[push_relay]\nactive = \"k2\"\n")
        + &format!(
            "[[push_relay.keys]]\nkid = \"k2\"\nfile = \"{}\"\n",
            key_file("rotated")
        );
    let rotated = TestGateway::start(&[("agent", &agent.url())], &rotated).await;
    assert_eq!(
        post_as_agent(&rotated, &callback, &completed("1.0")).await,
        202
    );
    assert_eq!(receiver.wait_for(3, LIMIT).await.len(), 3);
    let set = set_call("1.0", &receiver.url("/replicas"));
    assert_eq!(post_json(&rotated.url(), set, &[]).await.status, 200);
    let (_, (id, _)) = agent_got(&agent);
    assert!(id.starts_with("k2."), "sealed by the active key: {id}");
    // A gateway with another key cannot open it.
    let stranger = gateway(&agent, &key_file("a-stranger")).await;
    assert_eq!(
        post_as_agent(&stranger, &callback, &completed("1.0")).await,
        404
    );
}

#[tokio::test]
async fn get_and_list_show_the_client_s_own_webhook() {
    let key = key_file("get-list");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("1.0").await;
    let gw = gateway(&agent, &key).await;
    let hook = receiver.url("/mine");
    assert_eq!(
        post_json(&gw.url(), set_call("1.0", &hook), &[])
            .await
            .status,
        200
    );
    let (sent, _) = agent_got(&agent);
    // The agent answers get and list with what it holds: the callback.
    let held: Value = serde_json::from_str::<Value>(&sent).unwrap()["params"].clone();
    for (method, result) in [
        ("GetTaskPushNotificationConfig", held.clone()),
        (
            "ListTaskPushNotificationConfigs",
            json!({"configs": [held.clone()]}),
        ),
    ] {
        let answer = json!({"jsonrpc": "2.0", "id": 2, "result": result}).to_string();
        agent.set_mode(Mode::Fixed {
            status: 200,
            content_type: "application/json".into(),
            body: answer.into(),
        });
        let params = json!({"taskId": "t1", "id": "c1"});
        let reply = post_json(&gw.url(), rpc(2, method, params), &[])
            .await
            .json();
        let shown = reply["result"].to_string();
        assert!(shown.contains(&hook), "{method}: {reply}");
        assert!(shown.contains("client-token"), "{method}: {reply}");
        assert!(!shown.contains("/push/"), "{method}: {reply}");
    }
}

#[tokio::test]
async fn a_deleted_config_is_no_longer_delivered() {
    let key = key_file("deleted");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("0.3").await;
    let gw = gateway(&agent, &key).await;
    let set = set_call("0.3", &receiver.url("/deleted"));
    assert_eq!(post_json(&gw.url(), set, &[]).await.status, 200);
    let (_, callback) = agent_got(&agent);
    let delete = rpc(
        3,
        "tasks/pushNotificationConfig/delete",
        json!({"id": "t1", "pushNotificationConfigId": "c1"}),
    );
    let reply = post_json(&gw.url(), delete, &[]).await.json();
    assert!(reply.get("error").is_none(), "{reply}");
    assert_eq!(post_as_agent(&gw, &callback, &completed("0.3")).await, 410);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(receiver.got().is_empty());
}

#[tokio::test]
async fn bad_posts_are_refused_and_every_answer_counted() {
    let key = key_file("bad");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("1.0").await;
    let gw = gateway(&agent, &key).await;
    assert_eq!(
        post_json(&gw.url(), set_call("1.0", &receiver.url("/bad")), &[])
            .await
            .status,
        200
    );
    let (_, (id, token)) = agent_got(&agent);
    let wrong_token = (id.clone(), "not-the-token".to_string());
    assert_eq!(
        post_as_agent(&gw, &wrong_token, &completed("1.0")).await,
        401
    );
    let forged = (format!("k1.{}", "A".repeat(80)), token.clone());
    assert_eq!(post_as_agent(&gw, &forged, &completed("1.0")).await, 404);
    let unknown_key = (format!("k9.{}", &id[3..]), token.clone());
    assert_eq!(
        post_as_agent(&gw, &unknown_key, &completed("1.0")).await,
        404
    );
    let good = (id.clone(), token.clone());
    assert_eq!(post_as_agent(&gw, &good, &json!({"neither": 1})).await, 400);
    let url = format!("{}push/{id}", gw.url());
    let not_json = post_json(&url, "{oops", &[("x-a2a-notification-token", &token)]).await;
    assert_eq!(not_json.status, 400);
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let too_big = post_json(&url, huge, &[("x-a2a-notification-token", &token)]).await;
    assert_eq!(too_big.status, 413);
    assert_eq!(get(&url, &[]).await.status, 405);
    assert!(receiver.got().is_empty(), "nothing bad was delivered");
    let metrics = get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    for status in ["400", "401", "404", "413", "405"] {
        let series = format!("a2a_gateway_push_relay_callbacks_total{{status=\"{status}\"}}");
        assert!(metrics.contains(&series), "{series} in\n{metrics}");
    }
}

#[tokio::test]
async fn a_webhook_private_at_delivery_is_refused_counted_and_named() {
    let key = key_file("private");
    let receiver = Receiver::start(vec![]).await;
    let agent = agent_speaking("1.0").await;
    let setter = gateway(&agent, &key).await;
    let set = set_call("1.0", &receiver.url("/private"));
    assert_eq!(post_json(&setter.url(), set, &[]).await.status, 200);
    let (_, callback) = agent_got(&agent);
    // A replica whose guard does not allow loopback: by delivery time the
    // webhook's address is one the rules refuse.
    let strict = TestGateway::start(&[("agent", &agent.url())], &relay_toml(&key, false)).await;
    assert_eq!(
        post_as_agent(&strict, &callback, &completed("1.0")).await,
        202
    );
    let metrics_url = format!("{}/metrics", strict.admin_url());
    let series = "a2a_gateway_push_relay_deliveries_total{result=\"refused\"} 1";
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = get(&metrics_url, &[]).await.text();
        if metrics.contains(series) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(metrics.contains(series), "{metrics}");
    assert!(
        receiver.got().is_empty(),
        "nothing was sent to a refused address"
    );
    // The relay is off where it is not configured: no callback route.
    let plain = TestGateway::start(&[("agent", &agent.url())], "").await;
    let url = format!("{}push/{}", plain.url(), callback.0);
    assert_eq!(post_json(&url, "{}", &[]).await.status, 404);
}

/// The callback in a gRPC agent's recorded config (its Debug text).
fn callback_in_debug(text: &str) -> (String, String) {
    let quoted = |name: &str| {
        let at = text.find(&format!("{name}: \"")).expect(name) + name.len() + 3;
        text[at..].split('"').next().unwrap().to_string()
    };
    let url = quoted("url");
    let id = url.rsplit_once("/push/").expect("a callback").1.to_string();
    (id, quoted("token"))
}

#[tokio::test]
async fn rest_and_grpc_webhooks_are_sealed_where_they_would_pass_through() {
    let key = key_file("bindings");
    let receiver = Receiver::start(vec![]).await;
    // A REST client to a REST agent of its version: the call would go
    // byte for byte; with a webhook in it, it is written again.
    let rest = MockAgent::start(Mode::Normal).await;
    rest.set_rest("/rest");
    let gw = gateway(&rest, &key).await;
    let hook = receiver.url("/rest-rest");
    let url = format!("{}tasks/t1/pushNotificationConfigs", gw.url());
    let body = json!({"id": "c1", "url": hook, "token": "client-token"});
    let reply = post_json(&url, body.to_string(), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["url"], hook.as_str(), "{}", reply.text());
    let (sent, callback) = agent_got(&rest);
    assert!(
        !sent.contains(&hook) && !sent.contains("client-token"),
        "{sent}"
    );
    assert_eq!(post_as_agent(&gw, &callback, &completed("1.0")).await, 202);
    assert_eq!(receiver.wait_for(1, LIMIT).await.len(), 1);
    // A gRPC client to a gRPC agent of its service: the same.
    let grpc = MockGrpcAgent::start().await;
    grpc.send_push();
    let gw = gateway_of(&grpc.url(), &key).await;
    let mut client =
        v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let hook = receiver.url("/grpc-grpc");
    let config = v1::TaskPushNotificationConfig {
        task_id: "t1".into(),
        id: "c1".into(),
        url: hook.clone(),
        token: "client-token".into(),
        authentication: Some(v1::AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "s3cret".into(),
        }),
        ..Default::default()
    };
    let answer = client
        .create_task_push_notification_config(config)
        .await
        .unwrap();
    let answer = answer.into_inner();
    assert_eq!(answer.url, hook);
    assert_eq!(answer.token, "client-token");
    assert_eq!(answer.authentication.unwrap().credentials, "s3cret");
    let seen = grpc.calls().pop().expect("the agent got the call");
    assert_eq!(seen.rpc, "CreateTaskPushNotificationConfig");
    assert!(
        !seen.message.contains(&hook) && !seen.message.contains("s3cret"),
        "{}",
        seen.message
    );
    let callback = callback_in_debug(&seen.message);
    assert_eq!(post_as_agent(&gw, &callback, &completed("1.0")).await, 202);
    let got = receiver.wait_for(2, LIMIT).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].authorization.as_deref(), Some("Bearer s3cret"));
}

async fn gateway_of(url: &str, key: &str) -> TestGateway {
    TestGateway::start(&[("agent", url)], &relay_toml(key, true)).await
}

#[tokio::test]
async fn a_push_config_answer_that_breaks_off_is_the_agents_fault() {
    use crate::support::fault_agent::{Fault, FaultAgent};
    let key = key_file("broken");
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"configs":[{"url":"https://c.example/h"}]}}"#;
    let agent = FaultAgent::start(Fault::CloseMidBody {
        content_type: "application/json",
        body: bytes::Bytes::from(answer),
        sent: 20,
    })
    .await;
    let gw = gateway_of(&agent.url(), &key).await;
    let list = rpc(
        1,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": "t1"}),
    );
    let reply = post_json(&gw.url(), list, &[("a2a-version", "1.0")]).await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], -32050, "{}", reply.text());
}

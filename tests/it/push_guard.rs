//! The push-notification SSRF guard, driven through its public API the way
//! the proxy calls it. No test resolves a public name: only `localhost`
//! (answered by /etc/hosts) and `.invalid` names (which fail at once).

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use a2a_gateway::a2a::methods::lookup;
use a2a_gateway::a2a::model::Params;
use a2a_gateway::push_guard::{settings, PushGuard, PushGuardSection};
use serde_json::value::RawValue;
use serde_json::{json, Value};

fn guard(section: PushGuardSection) -> PushGuard {
    settings(&section).expect("valid section")
}

fn default_guard() -> PushGuard {
    guard(PushGuardSection::default())
}

/// A 0.3 `message/send` carrying `url` as its webhook.
async fn check_send(guard: &PushGuard, url: &str) -> Result<(), String> {
    let params = json!({
        "message": {"kind": "message", "messageId": "m", "role": "user", "parts": []},
        "configuration": {"pushNotificationConfig": {"url": url}},
    });
    check(guard, "message/send", params).await
}

/// Reads `params` for `method` as the front door does (a reading error is
/// the answer too), then runs the guard.
async fn check(guard: &PushGuard, method: &str, params: Value) -> Result<(), String> {
    let method = lookup(method).expect("known method");
    let raw = RawValue::from_string(params.to_string()).expect("params are JSON");
    let read = a2a_gateway::a2a::model::read::params(method, Some(&raw))?;
    guard.check_request(&read).await
}

fn assert_refused(result: Result<(), String>, url: &str, reason: &str) {
    let message = result.expect_err(url);
    assert!(
        message.contains(reason),
        "{url}: expected \"{reason}\" in \"{message}\""
    );
}

#[tokio::test]
async fn public_ip_literals_over_https_pass() {
    let guard = default_guard();
    for url in [
        "https://8.8.8.8/hook",
        "https://8.8.8.8:8443/hook?x=1",
        "https://[2606:4700::1111]/hook",
        "HTTPS://1.1.1.1",
    ] {
        assert_eq!(check_send(&guard, url).await, Ok(()), "{url}");
    }
}

#[tokio::test]
async fn plain_http_needs_allow_http() {
    let refused = check_send(&default_guard(), "http://8.8.8.8/hook").await;
    assert_eq!(
        refused,
        Err(
            "params.configuration.pushNotificationConfig.url: http://8.8.8.8/hook is refused: \
             plain http is not allowed"
                .into()
        )
    );
    let allowing = guard(PushGuardSection {
        allow_http: true,
        ..PushGuardSection::default()
    });
    assert_eq!(check_send(&allowing, "http://8.8.8.8/hook").await, Ok(()));
    // allow_http opens the scheme, not the address
    assert_refused(
        check_send(&allowing, "http://127.0.0.1/").await,
        "http://127.0.0.1/",
        "loopback address",
    );
}

#[tokio::test]
async fn the_message_names_path_url_and_reason() {
    let result = check_send(&default_guard(), "http://169.254.169.254/latest").await;
    assert_eq!(
        result,
        Err(
            "params.configuration.pushNotificationConfig.url: http://169.254.169.254/latest \
             is refused: cloud metadata address (plain http is not allowed either)"
                .into()
        )
    );
}

#[tokio::test]
async fn internal_addresses_are_refused_in_every_spelling() {
    let guard = default_guard();
    let table = [
        ("https://127.0.0.1/", "loopback address"),
        ("https://127.0.0.1:8443/x", "loopback address"),
        ("https://[::1]/", "loopback address"),
        ("https://[::1]:9/", "loopback address"),
        ("https://[::ffff:127.0.0.1]/", "loopback address"),
        ("https://[::ffff:7f00:1]/", "loopback address"),
        ("https://[fd00:ec2::254]/", "cloud metadata address"),
        (
            "https://169.254.169.254/latest/meta-data",
            "cloud metadata address",
        ),
        ("https://10.0.0.1/", "private address"),
        ("https://192.168.0.10/", "private address"),
        ("https://100.64.0.1/", "shared (CGNAT) address"),
        ("https://0.0.0.0/", "unspecified address"),
        ("https://[fe80::1]/", "link-local address"),
        ("https://2130706433/", "not a standard IPv4 address"),
        ("https://0x7f.1/", "not a standard IPv4 address"),
        ("https://0x7f.0.0.1/", "not a standard IPv4 address"),
        ("https://017700000001/", "not a standard IPv4 address"),
        ("https://0177.0.0.1/", "not a standard IPv4 address"),
        ("https://127.1/", "not a standard IPv4 address"),
        (
            "https://user@10.0.0.1/",
            "user information (user@host) is not allowed",
        ),
        (
            "https://user:pw@8.8.8.8/",
            "user information (user@host) is not allowed",
        ),
        ("https://[fe80::1%25eth0]/", "not a valid IPv6 address"),
        ("https://8.8.8.8:99999/", "not a valid port"),
        ("https://:443/", "has no host"),
        ("/relative/hook", "not an absolute URL"),
        ("hooks.example.com/x", "not a valid absolute URL"),
        (
            "https://evil.example\\@127.0.0.1/",
            "not a valid absolute URL",
        ),
        ("ftp://8.8.8.8/", "scheme \"ftp\" is not allowed"),
        ("file:///etc/passwd", "not a valid absolute URL"),
    ];
    for (url, reason) in table {
        assert_refused(check_send(&guard, url).await, url, reason);
    }
}

#[tokio::test]
async fn names_are_resolved_and_every_address_checked() {
    let guard = default_guard();
    assert_refused(
        check_send(&guard, "https://localhost/hook").await,
        "https://localhost/hook",
        "localhost resolves to",
    );
    assert_refused(
        check_send(&guard, "https://LocalHost:8443/hook").await,
        "https://LocalHost:8443/hook",
        "(loopback address)",
    );
    // The trailing dot is kept for the resolver (it turns off search
    // domains); whether /etc/hosts answers it or not, it is refused.
    let dotted = check_send(&guard, "https://localhost./hook").await;
    assert!(dotted.is_err(), "{dotted:?}");
    assert_refused(
        check_send(&guard, "https://no-such-host.invalid/hook").await,
        "https://no-such-host.invalid/hook",
        "cannot resolve no-such-host.invalid",
    );
}

#[tokio::test]
async fn allow_hosts_lets_a_named_host_through() {
    let guard = guard(PushGuardSection {
        allow_hosts: vec!["LOCALHOST".into()],
        ..PushGuardSection::default()
    });
    assert_eq!(
        check_send(&guard, "https://localhost:9443/hook").await,
        Ok(())
    );
    assert_eq!(check_send(&guard, "https://localhost./hook").await, Ok(()));
    // the allowance is for the name, not for what it resolves to
    assert_refused(
        check_send(&guard, "https://127.0.0.1/").await,
        "https://127.0.0.1/",
        "loopback address",
    );
    // and not for the scheme
    assert_refused(
        check_send(&guard, "http://localhost/").await,
        "http://localhost/",
        "plain http is not allowed",
    );
}

#[tokio::test]
async fn allow_cidrs_lets_a_range_through() {
    let guard = guard(PushGuardSection {
        allow_cidrs: vec!["127.0.0.0/8".into(), "::1/128".into()],
        ..PushGuardSection::default()
    });
    for url in [
        "https://127.0.0.1/",
        "https://127.9.9.9:8443/",
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://localhost/",
    ] {
        assert_eq!(check_send(&guard, url).await, Ok(()), "{url}");
    }
    assert_refused(
        check_send(&guard, "https://10.0.0.1/").await,
        "https://10.0.0.1/",
        "private address",
    );
    // the range is not a way around the strict host syntax
    assert_refused(
        check_send(&guard, "https://2130706433/").await,
        "https://2130706433/",
        "not a standard IPv4 address",
    );
}

#[tokio::test]
async fn disabled_guard_lets_everything_through() {
    let guard = guard(PushGuardSection {
        enabled: false,
        ..PushGuardSection::default()
    });
    assert_eq!(
        check_send(&guard, "http://169.254.169.254/latest").await,
        Ok(())
    );
}

#[tokio::test]
async fn every_method_shape_is_checked() {
    let guard = default_guard();
    let bad = "https://10.0.0.1/hook";
    let cases = [
        (
            "tasks/send",
            json!({"id": "t", "message": {}, "pushNotification": {"url": bad}}),
            "params.pushNotification.url",
        ),
        (
            "tasks/sendSubscribe",
            json!({"id": "t", "message": {}, "pushNotification": {"url": bad}}),
            "params.pushNotification.url",
        ),
        (
            "tasks/pushNotification/set",
            json!({"id": "t", "pushNotificationConfig": {"url": bad}}),
            "params.pushNotificationConfig.url",
        ),
        (
            "message/stream",
            json!({"message": {}, "configuration": {"pushNotificationConfig": {"url": bad}}}),
            "params.configuration.pushNotificationConfig.url",
        ),
        (
            "tasks/pushNotificationConfig/set",
            json!({"taskId": "t", "pushNotificationConfig": {"url": bad}}),
            "params.pushNotificationConfig.url",
        ),
        (
            "SendMessage",
            json!({"message": {}, "configuration": {"taskPushNotificationConfig": {"url": bad}}}),
            "params.configuration.taskPushNotificationConfig.url",
        ),
        (
            "SendStreamingMessage",
            json!({"message": {}, "configuration": {"taskPushNotificationConfig":
                {"pushNotificationConfig": {"url": bad}}}}),
            "params.configuration.taskPushNotificationConfig.pushNotificationConfig.url",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "c", "url": bad}),
            "params.url",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "config": {"url": bad}}),
            "params.config.url",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "pushNotificationConfig": {"url": bad}}),
            "params.pushNotificationConfig.url",
        ),
    ];
    for (method, params, path) in cases {
        let message = check(&guard, method, params).await.expect_err(method);
        assert!(
            message.starts_with(&format!("{path}: {bad} is refused: private address")),
            "{method}: {message}"
        );
    }
}

#[tokio::test]
async fn one_bad_url_among_good_ones_refuses_the_request() {
    let params = json!({
        "taskId": "t",
        "url": "https://8.8.8.8/ok",
        "config": {"url": "https://192.168.1.1/bad"},
    });
    let message = check(&default_guard(), "CreateTaskPushNotificationConfig", params)
        .await
        .unwrap_err();
    assert!(message.starts_with("params.config.url:"), "{message}");
}

#[tokio::test]
async fn a_url_that_is_not_a_string_is_refused() {
    let params =
        json!({"configuration": {"pushNotificationConfig": {"url": ["https://8.8.8.8/"]}}});
    assert_eq!(
        check(&default_guard(), "message/send", params).await,
        Err("params.configuration.pushNotificationConfig.url must be a string".into())
    );
}

#[tokio::test]
async fn requests_without_webhooks_pass() {
    let guard = default_guard();
    let params = json!({"message": {}, "configuration": {"pushNotificationConfig": null}});
    assert_eq!(check(&guard, "message/send", params).await, Ok(()));
    let params = json!({"id": "t", "url": "https://10.0.0.1/"});
    assert_eq!(check(&guard, "tasks/get", params).await, Ok(()));
    assert_eq!(guard.check_request(&Params::Absent).await, Ok(()));
}

// ------------------------------------------------- through a real gateway

/// A 0.3 `message/send` body with `url` as its webhook.
fn send_body(url: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": 7, "method": "message/send",
        "params": {
            "message": {"kind": "message", "messageId": "m-1", "role": "user",
                        "parts": [{"kind": "text", "text": "hi"}]},
            "configuration": {"pushNotificationConfig": {"url": url}},
        },
    })
    .to_string()
}

#[tokio::test]
async fn the_gateway_refuses_internal_webhooks_before_the_upstream_sees_them() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &mock.url())], "").await;

    let body = send_body("http://169.254.169.254/latest");
    let reply = client::post_json(&gw.url(), body, &[]).await;
    let answer = reply.json();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("params.configuration.pushNotificationConfig.url")
            && message.contains("cloud metadata address"),
        "{answer}"
    );
    assert_eq!(mock.request_count(), 0);

    // A public https webhook goes through.
    let reply = client::post_json(&gw.url(), send_body("https://8.8.8.8/hook"), &[]).await;
    let answer = reply.json();
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(mock.request_count(), 1);
}

/// A refusal's message, which is logged and may be relayed, never carries
/// the credentials a webhook URL names (`user:pass@`).
#[tokio::test]
async fn a_refused_webhooks_userinfo_is_not_echoed() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &mock.url())], "").await;
    let body = send_body("https://hook-user:s3cret-pass@10.0.0.1:8443/hook");
    let reply = client::post_json(&gw.url(), body, &[]).await;
    let answer = reply.json();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("https://***@10.0.0.1:8443/hook is refused"),
        "{answer}"
    );
    assert!(
        !message.contains("s3cret") && !message.contains("hook-user"),
        "{answer}"
    );
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test]
async fn the_gateway_applies_the_configured_exceptions() {
    let mock = MockAgent::start(Mode::Normal).await;
    let extra = "[push_guard]\nallow_http = true\nallow_cidrs = [\"127.0.0.0/8\"]\n";
    let gw = TestGateway::start(&[("echo", &mock.url())], extra).await;
    let reply = client::post_json(&gw.url(), send_body("http://127.0.0.1:9/hook"), &[]).await;
    let answer = reply.json();
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn a_grpc_calls_webhook_is_guarded_in_either_service() {
    use a2a_gateway::a2a::grpc::{v03, v1};
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &agent.url())], "").await;
    let metadata_url = "http://169.254.169.254/latest";
    let refused = |status: tonic::Status| {
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(
            status.message().contains("cloud metadata address"),
            "{}",
            status.message()
        );
    };
    let mut v1 = v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
        .await
        .unwrap();
    let config = v1::TaskPushNotificationConfig {
        task_id: "t-1".into(),
        url: metadata_url.into(),
        ..Default::default()
    };
    refused(
        v1.create_task_push_notification_config(config.clone())
            .await
            .unwrap_err(),
    );
    let send = v1::SendMessageRequest {
        configuration: Some(v1::SendMessageConfiguration {
            task_push_notification_config: Some(config),
            ..Default::default()
        }),
        ..crate::support::calls::grpc_send("hi")
    };
    refused(v1.send_message(send).await.unwrap_err());
    let mut v03 =
        v03::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let create = v03::CreateTaskPushNotificationConfigRequest {
        parent: "tasks/t-1".into(),
        config_id: "c-1".into(),
        config: Some(v03::TaskPushNotificationConfig {
            name: "tasks/t-1/pushNotificationConfigs/c-1".into(),
            push_notification_config: Some(v03::PushNotificationConfig {
                url: metadata_url.into(),
                ..Default::default()
            }),
        }),
    };
    refused(
        v03.create_task_push_notification_config(create)
            .await
            .unwrap_err(),
    );
    let sent = agent
        .requests()
        .into_iter()
        .filter(|r| !r.is_card_fetch())
        .count();
    assert_eq!(sent, 0, "no refused call reached the agent");
}

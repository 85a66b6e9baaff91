//! The console's endpoints on the admin listener, over real loopback
//! sockets: the page with its Content-Security-Policy; the fleet, skills
//! and the matcher, the recent calls (listed and live), the limits;
//! "Try it" through the public listener, unary and streaming; a hostile
//! card's text given back as data; sign-in when `[console] auth` asks.

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};

use crate::auth::{argon2_hash, basic, basic_scheme};
use crate::support::calls::rpc;
use crate::support::client::{self, get, post_json, Proto};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};

const LIMIT: Duration = Duration::from_secs(10);

async fn admin(gw: &TestGateway, path: &str) -> Value {
    let reply = get(&format!("{}{path}", gw.admin_url()), &[]).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    reply.json()
}

fn send03(text: &str) -> String {
    rpc(
        1,
        "message/send",
        json!({"message": {"kind": "message", "messageId": "m1",
        "role": "user", "parts": [{"kind": "text", "text": text}]}}),
    )
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &agent.url())], "").await;
    for (path, kind) in [
        ("/console", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/console.css", "text/css"),
    ] {
        let reply = get(&format!("{}{path}", gw.admin_url()), &[]).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(
            reply.header("content-type").unwrap().starts_with(kind),
            "{path}"
        );
        let csp = reply.header("content-security-policy").unwrap();
        assert!(
            csp.contains("script-src 'self'") && csp.contains("default-src 'none'"),
            "{csp}"
        );
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
    }
    let page = get(&format!("{}/console", gw.admin_url()), &[])
        .await
        .text();
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "no inline script or style"
    );
    let missing = get(&format!("{}/console/nope.js", gw.admin_url()), &[]).await;
    assert_eq!(missing.status, 404);
    // Never on the public listener.
    let public = get(&format!("{}console", gw.url()), &[]).await;
    assert_ne!(public.status, 200);
    // Off when configured so.
    let off = TestGateway::start(&[("a", &agent.url())], "[console]\nenabled = false\n").await;
    assert_eq!(
        get(&format!("{}/console", off.admin_url()), &[])
            .await
            .status,
        404
    );
    assert_eq!(
        get(&format!("{}/admin/fleet", off.admin_url()), &[])
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn the_fleet_skills_and_matcher_are_what_the_gateway_sees() {
    let weather = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&weather.url());
    card["skills"] = json!([{"id": "forecast", "name": "Forecast", "tags": ["weather"],
        "description": "Weather forecasts: rain, sun and wind for a city"}]);
    weather.set_card(Some(card));
    let other = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("weather", &weather.url()), ("other", &other.url())], "").await;
    let fleet = admin(&gw, "/admin/fleet").await;
    let agents = fleet["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["weather", "other"]);
    assert_eq!(agents[0]["card"]["state"], "fresh");
    assert_eq!(agents[0]["replicas"][0]["state"], "closed");
    assert!(
        agents[0]["versions"]["JSONRPC"].as_array().is_some(),
        "{fleet}"
    );
    // A call counts in the agent's last minute.
    post_json(&format!("{}agents/weather", gw.url()), send03("hi"), &[]).await;
    let fleet = admin(&gw, "/admin/fleet").await;
    assert!(
        fleet["agents"][0]["last_minute"]["seconds"]
            .as_f64()
            .is_some(),
        "{fleet}"
    );
    let skills = admin(&gw, "/admin/skills").await;
    let forecast = (skills["skills"].as_array().unwrap().iter())
        .find(|s| s["name"] == "Forecast")
        .expect("the skill is listed");
    assert_eq!(forecast["owner"], "weather");
    let id = forecast["id"].as_str().unwrap();
    let matched = admin(&gw, "/admin/skills/match?text=will+it+rain+in+Paris").await;
    assert_eq!(matched["scores"][0]["skill"], id, "{matched}");
    assert!(matched["scores"][0]["score"].as_f64().unwrap() > 0.0);
}

#[tokio::test]
async fn recent_calls_are_kept_while_someone_looks_and_stream_live() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &agent.url())], "").await;
    // Nobody looked yet: nothing kept.
    post_json(&gw.url(), send03("before"), &[]).await;
    let first = admin(&gw, "/admin/calls").await;
    // (A look at any console endpoint turns recording on.)
    assert_eq!(first["calls"].as_array().unwrap().len(), 0, "{first}");
    assert_eq!(first["recording"], true);
    let mut live = client::get_stream(&format!("{}/admin/calls/stream", gw.admin_url())).await;
    post_json(&gw.url(), send03("after"), &[]).await;
    let refused = post_json(&format!("{}message:send", gw.url()), "{broken", &[]).await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    let calls = admin(&gw, "/admin/calls").await;
    let calls = calls["calls"].as_array().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1]["method"], "message/send");
    assert_eq!(calls[1]["status"], 200);
    assert_eq!(calls[1]["upstream"], "a");
    assert_eq!(calls[1]["binding"], "jsonrpc");
    assert!(calls[1]["duration_ms"].as_f64().is_some());
    let errors = admin(&gw, "/admin/calls?status=4xx").await;
    assert_eq!(errors["calls"].as_array().unwrap().len(), 1, "{errors}");
    assert_eq!(errors["calls"][0]["status"], 400);
    assert_eq!(
        admin(&gw, "/admin/calls?upstream=zzz").await["calls"],
        json!([])
    );
    let event = live.next_event(LIMIT).await.expect("a live call");
    let event: Value = serde_json::from_str(&event).unwrap();
    assert_eq!(event["method"], "message/send", "{event}");
}

#[tokio::test]
async fn limits_show_what_is_configured_and_refused() {
    let agent = MockAgent::start(Mode::Normal).await;
    let extra = "[rate_limits]\nper_caller = { per_second = 1, burst = 1 }\n";
    let gw = TestGateway::start(&[("a", &agent.url())], extra).await;
    for _ in 0..3 {
        post_json(&gw.url(), send03("x"), &[]).await;
    }
    let limits = admin(&gw, "/admin/limits").await;
    assert_eq!(
        limits["rate_limits"]["configured"][0]["limit"], "caller",
        "{limits}"
    );
    assert!(
        limits["rate_limits"]["rejections"]["caller"]
            .as_f64()
            .unwrap()
            >= 1.0,
        "{limits}"
    );
    assert_eq!(limits["in_flight"][0]["upstream"], "a");
    assert!(limits["concurrency"]["max_streams"].as_u64().is_some());
}

#[tokio::test]
async fn try_it_goes_through_the_public_listener_unary_and_streaming() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &agent.url())], "").await;
    let config = admin(&gw, "/admin/config").await;
    assert_eq!(config["public_url"], format!("http://{}", gw.addr()));
    let try_url = format!("{}/admin/try", gw.admin_url());
    let unary = json!({"method": "POST", "path": "/", "headers": {"content-type": "application/json"},
        "body": send03("tried")});
    let reply = post_json(&try_url, unary.to_string(), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().contains("echo: tried"), "{}", reply.text());
    let seen = agent.requests().pop().unwrap();
    assert!(String::from_utf8_lossy(&seen.body).contains("tried"));
    let stream = rpc(
        2,
        "message/stream",
        json!({"message": {"kind": "message", "messageId": "m2",
        "role": "user", "parts": [{"kind": "text", "text": "streamed"}]}}),
    );
    let streaming =
        json!({"path": "/", "headers": {"content-type": "application/json"}, "body": stream});
    let events = client::post_stream(&try_url, streaming.to_string(), &[])
        .await
        .collect_events(LIMIT)
        .await;
    assert!(events.len() >= 2, "{events:?}");
    // Only a client call's headers, only the gateway's own paths, only JSON.
    let odd = json!({"path": "/", "headers": {"x-forwarded-for": "1.2.3.4"}, "body": "{}"});
    assert_eq!(post_json(&try_url, odd.to_string(), &[]).await.status, 400);
    let away = json!({"path": "//evil.example/", "body": "{}"});
    assert_eq!(post_json(&try_url, away.to_string(), &[]).await.status, 400);
    let form = client::request(
        Method::POST,
        &try_url,
        Bytes::from("path=/"),
        &[("content-type", "application/x-www-form-urlencoded")],
        Proto::Http1,
    )
    .await;
    assert_eq!(form.status, 415);
}

#[tokio::test]
async fn a_hostile_card_is_given_back_as_data() {
    let agent = MockAgent::start(Mode::Normal).await;
    let evil = "<script>window.__xss=1</script><img src=x onerror=\"window.__xss=1\">";
    let mut card = default_card(&agent.url());
    card["name"] = json!(evil);
    card["skills"] = json!([{"id": "evil", "name": evil, "description": evil, "tags": [evil]}]);
    agent.set_card(Some(card));
    let gw = TestGateway::start(&[("a", &agent.url())], "").await;
    let reply = get(&format!("{}/admin/skills", gw.admin_url()), &[]).await;
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    let skills = reply.json();
    assert_eq!(
        skills["skills"][0]["name"], evil,
        "the text as the agent wrote it"
    );
    let fleet = admin(&gw, "/admin/fleet").await;
    assert_eq!(fleet["agents"][0]["card"]["name"], evil);
}

#[tokio::test]
async fn with_auth_the_console_needs_a_session_and_credentials_once() {
    let agent = MockAgent::start(Mode::Normal).await;
    let auth = basic_scheme("ops", &[("ops", &argon2_hash("s3cret"))]);
    let extra = format!("{auth}\n[console]\nauth = [\"ops\"]\n");
    let gw = TestGateway::start(&[("a", &agent.url())], &extra).await;
    let fleet = format!("{}/admin/fleet", gw.admin_url());
    let refused = get(&fleet, &[]).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["sign_in"], true);
    // The page itself loads, to show its sign-in form.
    assert_eq!(
        get(&format!("{}/console", gw.admin_url()), &[])
            .await
            .status,
        200
    );
    let session = format!("{}/admin/session", gw.admin_url());
    let wrong = json!({"headers": {"authorization": basic("ops", "guess")}});
    assert_eq!(
        post_json(&session, wrong.to_string(), &[]).await.status,
        401
    );
    let right = json!({"headers": {"authorization": basic("ops", "s3cret")}});
    let signed = post_json(&session, right.to_string(), &[]).await;
    assert_eq!(signed.status, 200, "{}", signed.text());
    let cookie = signed.header("set-cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    assert_eq!(get(&fleet, &[("cookie", &pair)]).await.status, 200);
    assert_eq!(
        get(&fleet, &[("cookie", "a2a_console=forged")])
            .await
            .status,
        401
    );
    // Credentials sent to an endpoint are not a session.
    let basic_header = basic("ops", "s3cret");
    assert_eq!(
        get(&fleet, &[("authorization", &basic_header)])
            .await
            .status,
        401
    );
    // Signed out: the session is gone.
    let out = client::request(
        Method::DELETE,
        &session,
        Bytes::new(),
        &[("cookie", &pair)],
        Proto::Http1,
    )
    .await;
    assert_eq!(out.status, 200);
    assert_eq!(get(&fleet, &[("cookie", &pair)]).await.status, 401);
}

#[tokio::test]
async fn a_console_naming_an_unknown_scheme_is_refused_at_load() {
    let text = "[console]\nauth = [\"nobody\"]\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n";
    let errors = a2a_gateway::config::load_str(text).unwrap_err().to_string();
    assert!(errors.contains("console.auth[0]"), "{errors}");
}

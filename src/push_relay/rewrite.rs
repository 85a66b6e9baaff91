//! The client's webhooks in a call's params, sealed into callbacks on the
//! gateway on their way to the agent (`seal_params`); and the callbacks in
//! a push-config answer opened back into the client's own webhooks on
//! their way to the client (`open_answer`).
//!
//! Both work on the params and answers in the client's version, so what
//! is sealed is what the client sent, and what it reads back is the same.
//! The places a config sits are those `crate::push_guard::webhook_urls`
//! checks, in every spelling the model reads.

use serde_json::{Map, Value};

use super::deleted::now_ms;
use super::seal::{ClientConfig, Sealer};
use super::settings::PushRelay;
use crate::a2a::Family;

/// A send's push config, by each version's name for it (and the proto's).
const SEND_CONFIGS: [&str; 6] = [
    "pushNotificationConfig",
    "push_notification_config",
    "pushNotification",
    "push_notification",
    "taskPushNotificationConfig",
    "task_push_notification_config",
];

/// A config nested in a config: 0.1/0.3's set, 1.0's create (and drafts').
const NESTED: [&str; 3] = [
    "pushNotificationConfig",
    "push_notification_config",
    "config",
];

/// The path under `callback_base` agents post to.
pub const CALLBACK_PATH: &str = "/push/";

/// What every config sealed in one call shares: the client's version and
/// binding, the agent's version, the task, the call's trace.
pub struct Sealing<'a> {
    pub relay: &'a PushRelay,
    pub template: ClientConfig,
}

/// Seals every webhook in `params` (a call of `family`, in the client's
/// version): each becomes `{callback_base}/push/{id}` with a fresh token
/// for the agent, and loses its `authentication`, which is sealed. Gives
/// how many were sealed.
pub fn seal_params(params: &mut Value, family: Family, sealing: &Sealing) -> Result<usize, String> {
    let mut sealed = 0;
    match family {
        Family::Send | Family::Stream => {
            // 0.1's webhook sits in the params; the others' in the
            // send's configuration.
            for name in ["pushNotification", "push_notification"] {
                if let Some(config) = params.get_mut(name) {
                    walk(config, sealing, &mut sealed)?;
                }
            }
            if let Some(configuration) = params.get_mut("configuration") {
                for name in SEND_CONFIGS {
                    if let Some(config) = configuration.get_mut(name) {
                        walk(config, sealing, &mut sealed)?;
                    }
                }
            }
        }
        Family::PushSet => walk(params, sealing, &mut sealed)?,
        _ => {}
    }
    Ok(sealed)
}

/// A config's own webhook, then those nested in it.
fn walk(config: &mut Value, sealing: &Sealing, sealed: &mut usize) -> Result<(), String> {
    let Some(map) = config.as_object_mut() else {
        return Ok(());
    };
    if map.get("url").is_some_and(Value::is_string) {
        seal_one(map, sealing)?;
        *sealed += 1;
    }
    for name in NESTED {
        if let Some(nested) = map.get_mut(name) {
            walk(nested, sealing, sealed)?;
        }
    }
    Ok(())
}

fn seal_one(map: &mut Map<String, Value>, sealing: &Sealing) -> Result<(), String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let relay = sealing.relay;
    let mut config = sealing.template.clone();
    config.url = text(map.get("url")).unwrap_or_default();
    config.token = text(map.get("token"));
    config.authentication = map.remove("authentication").filter(|a| !a.is_null());
    config.config_id = text(map.get("id")).or(config.config_id);
    config.agent_token = relay.sealer.agent_token()?;
    config.sealed_at = now_ms();
    let id = relay.sealer.seal(&config)?;
    let callback = format!("{}{CALLBACK_PATH}{id}", relay.callback_base);
    map.insert("url".into(), Value::String(callback));
    map.insert("token".into(), Value::String(config.agent_token));
    Ok(())
}

/// Puts the client's own webhook back wherever an answer shows one of
/// the gateway's callbacks (a set, get or list answer, in any shape):
/// URL, token and `authentication` as the client sent them. Gives how many
/// were opened.
pub fn open_answer(value: &mut Value, sealer: &Sealer) -> usize {
    match value {
        Value::Array(items) => items.iter_mut().map(|v| open_answer(v, sealer)).sum(),
        Value::Object(map) => {
            let mut opened = 0;
            if let Some(config) = callback_config(map.get("url"), sealer) {
                restore(map, config);
                opened += 1;
            }
            opened
                + map
                    .values_mut()
                    .map(|v| open_answer(v, sealer))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

/// The config sealed in a callback URL, whatever base it was made with
/// (the base may have changed since).
fn callback_config(url: Option<&Value>, sealer: &Sealer) -> Option<ClientConfig> {
    let url = url?.as_str()?;
    let (_, id) = url.rsplit_once(CALLBACK_PATH)?;
    sealer.open(id).ok()
}

fn restore(map: &mut Map<String, Value>, config: ClientConfig) {
    map.insert("url".into(), Value::String(config.url));
    match config.token {
        Some(token) => map.insert("token".into(), Value::String(token)),
        None => map.remove("token"),
    };
    match config.authentication {
        Some(authentication) => map.insert("authentication".into(), authentication),
        None => map.remove("authentication"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push_relay::seal::SealKey;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    fn relay() -> PushRelay {
        PushRelay {
            callback_base: "http://gw.internal:8080".into(),
            sealer: Arc::new(Sealer::new(vec![SealKey::new("k1", &[3; 32]).unwrap()])),
            timeout: Duration::from_secs(1),
            max_attempts: 1,
            backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
            queue_per_destination: 1,
            max_queued: 1,
            max_queued_bytes: 1 << 20,
            max_body_bytes: 1 << 20,
            per_config_per_second: 1,
        }
    }

    fn sealing(relay: &PushRelay) -> Sealing<'_> {
        Sealing {
            relay,
            template: ClientConfig {
                version: "0.3".into(),
                binding: "JSONRPC".into(),
                agent_version: "1.0".into(),
                task_id: "t1".into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_0_3_set_is_sealed_and_its_answer_opened() {
        let relay = relay();
        let auth = json!({"schemes": ["Bearer"], "credentials": "s3cret"});
        let sent = json!({"taskId": "t1", "pushNotificationConfig":
            {"id": "c1", "url": "https://client.example/hook", "token": "ct", "authentication": auth}});
        let mut params = sent.clone();
        let n = seal_params(&mut params, Family::PushSet, &sealing(&relay)).unwrap();
        assert_eq!(n, 1);
        let config = &params["pushNotificationConfig"];
        let url = config["url"].as_str().unwrap();
        assert!(url.starts_with("http://gw.internal:8080/push/k1."), "{url}");
        assert!(config.get("authentication").is_none(), "{config}");
        assert_ne!(config["token"], "ct");
        let id = url.rsplit_once("/push/").unwrap().1;
        let opened = relay.sealer.open(id).unwrap();
        assert_eq!(opened.url, "https://client.example/hook");
        assert_eq!(opened.config_id.as_deref(), Some("c1"));
        assert_eq!(opened.token.as_deref(), Some("ct"));
        assert_eq!(opened.agent_token, config["token"].as_str().unwrap());
        // The agent's answer, as a get or list shows it, opens back.
        let mut answer = json!([params.clone()]);
        assert_eq!(open_answer(&mut answer, &relay.sealer), 1);
        assert_eq!(answer, json!([sent]));
    }

    #[test]
    fn every_send_spelling_is_sealed() {
        let relay = relay();
        for name in SEND_CONFIGS {
            let mut params = json!({"message": {"parts": [{"url": "https://file.example/x"}]},
                "configuration": {name: {"url": "https://c.example/h"}}});
            let n = seal_params(&mut params, Family::Send, &sealing(&relay)).unwrap();
            assert_eq!(n, 1, "{name}");
            let url = params["configuration"][name]["url"].as_str().unwrap();
            assert!(url.contains("/push/"), "{name}: {url}");
            // A part's url is no webhook.
            assert_eq!(
                params["message"]["parts"][0]["url"],
                "https://file.example/x"
            );
        }
        let mut v01 = json!({"id": "t1", "pushNotification": {"url": "https://c.example/h"}});
        assert_eq!(
            seal_params(&mut v01, Family::Send, &sealing(&relay)).unwrap(),
            1
        );
        let mut flat = json!({"taskId": "t1", "url": "https://c.example/h"});
        assert_eq!(
            seal_params(&mut flat, Family::PushSet, &sealing(&relay)).unwrap(),
            1
        );
        let mut get = json!({"id": "t1", "url": "https://c.example/h"});
        assert_eq!(
            seal_params(&mut get, Family::GetTask, &sealing(&relay)).unwrap(),
            0
        );
    }

    #[test]
    fn an_answer_without_callbacks_is_left_alone() {
        let relay = relay();
        let original =
            json!({"configs": [{"url": "https://c.example/push/not-ours", "token": "t"}]});
        let mut answer = original.clone();
        assert_eq!(open_answer(&mut answer, &relay.sealer), 0);
        assert_eq!(answer, original);
    }
}

//! Where webhook URLs live in a call's params, in every version's shape:
//! a send's `configuration` (0.3 `pushNotificationConfig`, 1.0
//! `taskPushNotificationConfig`), 0.1's `pushNotification`, and a
//! push-config set/create (0.1/0.3 nested, 1.0 flat, and the 1.0 drafts'
//! `config`). The model reads every spelling an agent may accept (JSON and
//! proto names): a shape skipped here would be a way around the guard.

use crate::a2a::model::{Params, PushConfig};

/// Every webhook URL in a call's params, with the JSON path it was found
/// at (in the JSON names of the members).
pub fn webhook_urls<'s>(params: &'s Params<'_>) -> Vec<(String, &'s str)> {
    let mut found = Vec::new();
    match params {
        Params::Send(p) => {
            if let Some(c) = &p.push_notification {
                walk(c, "params.pushNotification".into(), &mut found);
            }
            if let Some(cfg) = &p.configuration {
                let configs = [
                    (&cfg.push_notification_config, "pushNotificationConfig"),
                    (
                        &cfg.task_push_notification_config,
                        "taskPushNotificationConfig",
                    ),
                ];
                for (config, name) in configs {
                    if let Some(c) = config {
                        walk(c, format!("params.configuration.{name}"), &mut found);
                    }
                }
            }
        }
        Params::PushSet(p) => walk(p, "params".into(), &mut found),
        _ => {}
    }
    found
}

/// The config's own URL, then those of the configs nested in it.
fn walk<'s>(config: &'s PushConfig<'_>, at: String, found: &mut Vec<(String, &'s str)>) {
    if let Some(url) = config.url.as_deref() {
        found.push((format!("{at}.url"), url));
    }
    let nested = [
        (&config.push_notification_config, "pushNotificationConfig"),
        (&config.config, "config"),
    ];
    for (nested, name) in nested {
        if let Some(nested) = nested {
            walk(nested, format!("{at}.{name}"), found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::model::read::params_of;
    use serde_json::{json, Value};

    fn urls(method: &str, params: Value) -> Vec<(String, String)> {
        webhook_urls(params_of(method, &params))
            .into_iter()
            .map(|(path, url)| (path, url.to_string()))
            .collect()
    }

    fn one(path: &str, url: &str) -> Vec<(String, String)> {
        vec![(path.to_string(), url.to_string())]
    }

    #[test]
    fn webhook_urls_v0_1() {
        let config = json!({"url": "https://a.example/h", "token": "t"});
        for method in ["tasks/send", "tasks/sendSubscribe"] {
            assert_eq!(
                urls(
                    method,
                    json!({"id": "t", "message": {}, "pushNotification": config})
                ),
                one("params.pushNotification.url", "https://a.example/h")
            );
        }
        assert_eq!(
            urls(
                "tasks/pushNotification/set",
                json!({"id": "t", "pushNotificationConfig": config})
            ),
            one("params.pushNotificationConfig.url", "https://a.example/h")
        );
    }

    #[test]
    fn webhook_urls_v0_3() {
        let config = json!({"url": "https://a.example/h", "authentication": {"schemes": []}});
        for method in ["message/send", "message/stream"] {
            assert_eq!(
                urls(
                    method,
                    json!({"message": {}, "configuration": {"blocking": true, "pushNotificationConfig": config}})
                ),
                one(
                    "params.configuration.pushNotificationConfig.url",
                    "https://a.example/h"
                )
            );
        }
        assert_eq!(
            urls(
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": config})
            ),
            one("params.pushNotificationConfig.url", "https://a.example/h")
        );
        // The proto's spellings, which pydantic-based servers accept too.
        for name in [
            "push_notification_config",
            "pushNotification",
            "push_notification",
        ] {
            assert_eq!(
                urls("message/send", json!({"configuration": {name: config}})),
                one(
                    "params.configuration.pushNotificationConfig.url",
                    "https://a.example/h"
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn webhook_urls_v1_0() {
        for method in ["SendMessage", "SendStreamingMessage"] {
            assert_eq!(
                urls(
                    method,
                    json!({"message": {}, "configuration": {"taskPushNotificationConfig": {"url": "https://flat.example/"}}})
                ),
                one(
                    "params.configuration.taskPushNotificationConfig.url",
                    "https://flat.example/"
                )
            );
            assert_eq!(
                urls(
                    method,
                    json!({"configuration": {"task_push_notification_config": {"pushNotificationConfig": {"url": "https://nested.example/"}}}})
                ),
                one(
                    "params.configuration.taskPushNotificationConfig.pushNotificationConfig.url",
                    "https://nested.example/"
                )
            );
        }
        let create = "CreateTaskPushNotificationConfig";
        assert_eq!(
            urls(
                create,
                json!({"taskId": "t", "id": "c", "url": "https://flat.example/"})
            ),
            one("params.url", "https://flat.example/")
        );
        for nested in ["pushNotificationConfig", "push_notification_config"] {
            assert_eq!(
                urls(
                    create,
                    json!({"task_id": "t", nested: {"url": "https://c.example/"}})
                ),
                one("params.pushNotificationConfig.url", "https://c.example/"),
                "{nested}"
            );
        }
        assert_eq!(
            urls(
                create,
                json!({"taskId": "t", "config": {"url": "https://c.example/"}})
            ),
            one("params.config.url", "https://c.example/")
        );
        assert_eq!(
            urls(
                create,
                json!({"config": {"pushNotificationConfig": {"url": "https://n.example/"}}})
            ),
            one(
                "params.config.pushNotificationConfig.url",
                "https://n.example/"
            )
        );
    }

    #[test]
    fn every_url_is_found() {
        let found = urls(
            "CreateTaskPushNotificationConfig",
            json!({"url": "https://a.example/", "config": {"url": "https://b.example/"}}),
        );
        assert_eq!(
            found,
            vec![
                ("params.url".to_string(), "https://a.example/".to_string()),
                (
                    "params.config.url".to_string(),
                    "https://b.example/".to_string()
                ),
            ]
        );
        let found = urls(
            "SendMessage",
            json!({"configuration": {"pushNotificationConfig": {"url": "https://a.example/"},
                                     "taskPushNotificationConfig": {"url": "https://b.example/"}}}),
        );
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn webhook_urls_ignores_absent_null_and_other_methods() {
        assert!(urls(
            "message/send",
            json!({"configuration": {"pushNotificationConfig": null}})
        )
        .is_empty());
        assert!(urls(
            "message/send",
            json!({"configuration": {"pushNotificationConfig": {"url": null}}})
        )
        .is_empty());
        assert!(urls("message/send", json!({"message": {}})).is_empty());
        assert!(urls("tasks/get", json!({"id": "t", "url": "http://127.0.0.1/"})).is_empty());
        assert!(urls(
            "tasks/pushNotificationConfig/get",
            json!({"id": "t", "pushNotificationConfig": {"url": "http://127.0.0.1/"}})
        )
        .is_empty());
        assert!(webhook_urls(&Params::Absent).is_empty());
    }
}

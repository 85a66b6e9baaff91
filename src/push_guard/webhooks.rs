//! Where webhook URLs live in each version's params: the shapes of
//! `message/send` and `message/stream` configurations and of the push
//! config methods, found without building a tree.

use crate::a2a::{Family, Method, Version};
use crate::sketch::Sketch;

/// A path through params: at each step, the keys that may spell it.
type Shape = &'static [&'static [&'static str]];

const URL: &[&str] = &["url"];
const CONFIGURATION: &[&str] = &["configuration"];
/// The nested config object of 0.1/0.3 and of the 1.0 drafts.
const NESTED: &[&str] = &["pushNotificationConfig", "push_notification_config"];
/// The push config inside a send's `configuration`: 0.3 JSON, 0.3 proto
/// (`pushNotification`), 1.0 (`taskPushNotificationConfig`) and its drafts.
const SEND_CONFIG: &[&str] = &[
    "pushNotificationConfig",
    "push_notification_config",
    "taskPushNotificationConfig",
    "task_push_notification_config",
    "pushNotification",
    "push_notification",
];
/// The config object of a set/create: 0.1/0.3 and the 1.0 request forms.
const SET_CONFIG: &[&str] = &[
    "pushNotificationConfig",
    "push_notification_config",
    "config",
];

/// 0.1 `tasks/send`/`tasks/sendSubscribe`: `params.pushNotification`.
const V0_1_SEND: &[Shape] = &[&[&["pushNotification", "push_notification"], URL]];
/// 0.3 `message/send`, 1.0 `SendMessage` and their streaming forms. 1.0's
/// `taskPushNotificationConfig` holds the url flat or under a nested config.
const SEND: &[Shape] = &[
    &[CONFIGURATION, SEND_CONFIG, URL],
    &[CONFIGURATION, SEND_CONFIG, NESTED, URL],
];
/// 0.1/0.3 `…/set` (`{id|taskId, pushNotificationConfig{url}}`) and 1.0
/// `CreateTaskPushNotificationConfig` (flat `{taskId, id, url}`, or the url
/// under `config` / `config.pushNotificationConfig`).
const SET: &[Shape] = &[&[URL], &[SET_CONFIG, URL], &[SET_CONFIG, NESTED, URL]];

/// Where a method's webhook URLs may be. Each version's shape comes with the
/// other spellings an upstream may accept for it: SDKs serve several
/// versions on one endpoint and take snake_case names too (protobuf JSON,
/// pydantic), and every shape skipped here would be a way around the guard.
fn shapes(method: &Method) -> &'static [Shape] {
    match (method.version, method.family) {
        (Version::V0_1, Family::Send | Family::Stream) => V0_1_SEND,
        (_, Family::Send | Family::Stream) => SEND,
        (_, Family::PushSet) => SET,
        _ => &[],
    }
}

/// Every webhook URL in a request's params, for every version's shape, with
/// the JSON path it was found at and the value as found (`check_request`
/// refuses a `url` that is not a string).
pub fn webhook_values<'s, 'a>(
    method: &Method,
    params: Option<&'s Sketch<'a>>,
) -> Vec<(String, &'s Sketch<'a>)> {
    let mut found = Vec::new();
    if let Some(params) = params {
        let mut trail = Vec::new();
        for shape in shapes(method) {
            collect(params, shape, &mut trail, &mut found);
        }
    }
    found
}

/// Follows `shape` from `node`, every spelling at every step. `null` counts
/// as absent: clients that write unset optional fields as `null` carry no
/// webhook, and refusing them would break them for nothing. The path is
/// written out only for what is found (most calls carry no webhook).
fn collect<'s, 'a>(
    node: &'s Sketch<'a>,
    shape: Shape,
    trail: &mut Vec<&'static str>,
    found: &mut Vec<(String, &'s Sketch<'a>)>,
) {
    let Some((keys, rest)) = shape.split_first() else {
        found.push((format!("params.{}", trail.join(".")), node));
        return;
    };
    if !node.is_object() {
        return;
    }
    for key in *keys {
        match node.get(key) {
            None | Some(Sketch::Null) => {}
            Some(child) => {
                trail.push(key);
                collect(child, rest, trail, found);
                trail.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;
    use serde_json::{json, Value};

    fn urls(method: &str, params: Value) -> Vec<(String, String)> {
        let method = lookup(method).unwrap();
        let text = params.to_string();
        let arena = bumpalo::Bump::new();
        let read = crate::a2a::params::read(&text, &arena).unwrap();
        webhook_values(method, Some(&read))
            .into_iter()
            .map(|(path, value)| (path, shown_value(value)))
            .collect()
    }

    /// A URL as found, or a non-string as its JSON text.
    fn shown_value(value: &Sketch<'_>) -> String {
        match value {
            Sketch::Str(url) => url.to_string(),
            other => json_text(other),
        }
    }

    fn json_text(value: &Sketch<'_>) -> String {
        match value {
            Sketch::Str(s) => Value::from(*s).to_string(),
            Sketch::Num(n) => n.to_string(),
            Sketch::Bool(b) => b.to_string(),
            Sketch::Null => "null".into(),
            Sketch::Deep => "…".into(),
            Sketch::Arr(items) => {
                let items: Vec<String> = items.iter().map(json_text).collect();
                format!("[{}]", items.join(","))
            }
            Sketch::Obj(members) => {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{}:{}", Value::from(*k), json_text(v)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
        }
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
        // snake_case, as pydantic-based servers also accept it
        assert_eq!(
            urls(
                "message/send",
                json!({"configuration": {"push_notification_config": config}})
            ),
            one(
                "params.configuration.push_notification_config.url",
                "https://a.example/h"
            )
        );
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
                    json!({"configuration": {"taskPushNotificationConfig": {"pushNotificationConfig": {"url": "https://nested.example/"}}}})
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
                json!({"taskId": "t", "pushNotificationConfig": {"url": "https://p.example/"}})
            ),
            one("params.pushNotificationConfig.url", "https://p.example/")
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
    fn webhook_urls_finds_every_url_and_non_strings() {
        let found = urls(
            "CreateTaskPushNotificationConfig",
            json!({"url": "https://a.example/", "config": {"url": 42}, "pushNotificationConfig": {"url": {"x": 1}}}),
        );
        assert_eq!(
            found,
            vec![
                ("params.url".to_string(), "https://a.example/".to_string()),
                (
                    "params.pushNotificationConfig.url".to_string(),
                    "{\"x\":1}".to_string()
                ),
                ("params.config.url".to_string(), "42".to_string()),
            ]
        );
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
        assert!(urls("message/send", json!(["positional"])).is_empty());
        assert!(urls("tasks/get", json!({"id": "t", "url": "http://127.0.0.1/"})).is_empty());
        assert!(urls(
            "tasks/pushNotificationConfig/get",
            json!({"id": "t", "pushNotificationConfig": {"url": "http://127.0.0.1/"}})
        )
        .is_empty());
        let method = lookup("message/send").unwrap();
        assert!(webhook_values(method, None).is_empty());
    }
}

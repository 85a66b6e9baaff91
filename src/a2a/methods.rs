//! Every A2A JSON-RPC method name the gateway knows, for every protocol
//! version, with what the gateway needs to know about it.

/// Protocol generation a method name belongs to. 0.2 and 0.3 share their
/// method names; `tasks/get`, `tasks/cancel` and `tasks/resubscribe` are the
/// same in 0.1 and 0.3 and are counted as 0.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V0_1,
    V0_3,
    V1_0,
}

impl Version {
    /// How many versions there are (`index` is below it).
    pub const COUNT: usize = 3;

    /// A dense index below `COUNT`, for per-version tables.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn label(self) -> &'static str {
        match self {
            Version::V0_1 => "0.1",
            Version::V0_3 => "0.3",
            Version::V1_0 => "1.0",
        }
    }
}

/// What a method does, independent of its spelling in a given version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Send,
    Stream,
    GetTask,
    ListTasks,
    CancelTask,
    Resubscribe,
    PushSet,
    PushGet,
    PushList,
    PushDelete,
    ExtendedCard,
}

impl Family {
    /// How many families there are (`index` is below it; a test checks).
    pub const COUNT: usize = 11;

    /// A dense index below `COUNT`, for per-family tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Each family's label, in declaration order (metrics, authz rules).
    pub const LABELS: [&'static str; Family::COUNT] = [
        "send",
        "stream",
        "get_task",
        "list_tasks",
        "cancel_task",
        "resubscribe",
        "push_config_set",
        "push_config_get",
        "push_config_list",
        "push_config_delete",
        "extended_card",
    ];

    pub fn label(self) -> &'static str {
        Family::LABELS[self.index()]
    }

    /// Methods whose answer is an SSE stream.
    pub fn streams(self) -> bool {
        matches!(self, Family::Stream | Family::Resubscribe)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Method {
    pub name: &'static str,
    pub version: Version,
    pub family: Family,
}

const fn m(name: &'static str, version: Version, family: Family) -> Method {
    Method {
        name,
        version,
        family,
    }
}

use Family::*;
use Version::*;

pub static METHODS: &[Method] = &[
    // 0.1
    m("tasks/send", V0_1, Send),
    m("tasks/sendSubscribe", V0_1, Stream),
    m("tasks/pushNotification/set", V0_1, PushSet),
    m("tasks/pushNotification/get", V0_1, PushGet),
    // 0.2 / 0.3 (tasks/get, tasks/cancel, tasks/resubscribe also serve 0.1)
    m("message/send", V0_3, Send),
    m("message/stream", V0_3, Stream),
    m("tasks/get", V0_3, GetTask),
    m("tasks/cancel", V0_3, CancelTask),
    m("tasks/resubscribe", V0_3, Resubscribe),
    m("tasks/pushNotificationConfig/set", V0_3, PushSet),
    m("tasks/pushNotificationConfig/get", V0_3, PushGet),
    m("tasks/pushNotificationConfig/list", V0_3, PushList),
    m("tasks/pushNotificationConfig/delete", V0_3, PushDelete),
    m("agent/getAuthenticatedExtendedCard", V0_3, ExtendedCard),
    // 1.0
    m("SendMessage", V1_0, Send),
    m("SendStreamingMessage", V1_0, Stream),
    m("GetTask", V1_0, GetTask),
    m("ListTasks", V1_0, ListTasks),
    m("CancelTask", V1_0, CancelTask),
    m("SubscribeToTask", V1_0, Resubscribe),
    m("CreateTaskPushNotificationConfig", V1_0, PushSet),
    m("GetTaskPushNotificationConfig", V1_0, PushGet),
    m("ListTaskPushNotificationConfigs", V1_0, PushList),
    m("DeleteTaskPushNotificationConfig", V1_0, PushDelete),
    m("GetExtendedAgentCard", V1_0, ExtendedCard),
];

/// Exact, case-sensitive lookup: JSON-RPC method names are case-sensitive.
pub fn lookup(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_indexes_are_dense_below_count() {
        let mut seen = [false; Family::COUNT];
        for m in METHODS {
            let i = m.family.index();
            assert!(i < Family::COUNT, "{:?}", m.family);
            seen[i] = true;
        }
        assert!(
            seen.iter().all(|&s| s),
            "every index is some method's family"
        );
    }

    #[test]
    fn every_name_is_unique_and_found() {
        for (i, a) in METHODS.iter().enumerate() {
            assert_eq!(lookup(a.name), Some(a));
            assert!(METHODS[i + 1..].iter().all(|b| b.name != a.name));
        }
    }

    #[test]
    fn streaming_families() {
        let streaming: Vec<_> = METHODS
            .iter()
            .filter(|m| m.family.streams())
            .map(|m| m.name)
            .collect();
        assert_eq!(
            streaming,
            [
                "tasks/sendSubscribe",
                "message/stream",
                "tasks/resubscribe",
                "SendStreamingMessage",
                "SubscribeToTask"
            ]
        );
    }

    #[test]
    fn lookup_is_case_sensitive_and_rejects_unknown() {
        assert!(lookup("sendmessage").is_none());
        assert!(lookup("message/Send").is_none());
        assert!(lookup("").is_none());
    }
}

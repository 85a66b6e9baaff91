//! The params of every A2A operation, in every version's shape, read into
//! one typed model. A struct serves each group of operations whose params
//! share members; each field is read under its JSON name and its ProtoJSON
//! proto name. Members the gateway does not use are skipped on reading:
//! forwarding sends the client's own bytes.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::borrowed;
use super::count::Count;
use super::members::Members;
use super::message::Message;

/// `message/send`, `message/stream`, `SendMessage`, `SendStreamingMessage`
/// and 0.1's `tasks/send`, `tasks/sendSubscribe`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams<'a> {
    #[serde(borrow, default)]
    pub message: Option<Message<'a>>,
    #[serde(borrow, default)]
    pub configuration: Option<SendConfiguration<'a>>,
    #[serde(borrow, default)]
    pub metadata: Option<Members<'a>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub tenant: Option<Cow<'a, str>>,
    /// 0.1: the task id the client picks.
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub id: Option<Cow<'a, str>>,
    /// 0.1: the conversation (later `contextId`).
    #[serde(
        borrow,
        default,
        alias = "session_id",
        deserialize_with = "borrowed::opt"
    )]
    pub session_id: Option<Cow<'a, str>>,
    /// 0.1: the webhook for this task.
    #[serde(borrow, default, alias = "push_notification")]
    pub push_notification: Option<PushConfig<'a>>,
    /// 0.1: how much history the answer carries.
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Count>,
}

/// A send's `configuration`: 0.3 and 1.0 members side by side.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration<'a> {
    #[serde(borrow, default, alias = "accepted_output_modes")]
    pub accepted_output_modes: Option<&'a RawValue>,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Count>,
    /// 0.3 (default true).
    #[serde(default)]
    pub blocking: Option<bool>,
    /// 1.0: `blocking` inverted (default false).
    #[serde(default, alias = "return_immediately")]
    pub return_immediately: Option<bool>,
    /// 0.3's webhook, also as the 0.3 proto spells it (`pushNotification`).
    #[serde(
        borrow,
        default,
        alias = "push_notification_config",
        alias = "pushNotification",
        alias = "push_notification"
    )]
    pub push_notification_config: Option<PushConfig<'a>>,
    /// 1.0's webhook.
    #[serde(borrow, default, alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<PushConfig<'a>>,
}

/// A webhook's settings in any version's shape: 0.3's
/// `PushNotificationConfig`, 1.0's flat `TaskPushNotificationConfig`, and
/// the 1.0 drafts that nest the config under `pushNotificationConfig` or
/// `config`. A push-config set/create's params are one of these too
/// (0.1/0.3 `{id|taskId, pushNotificationConfig}`, 1.0 `{taskId, url, …}`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default, alias = "task_id", deserialize_with = "borrowed::opt")]
    pub task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub url: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub token: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub authentication: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub tenant: Option<Cow<'a, str>>,
    #[serde(borrow, default, alias = "push_notification_config")]
    pub push_notification_config: Option<Box<PushConfig<'a>>>,
    /// A 1.0 draft's name for the nested config.
    #[serde(borrow, default)]
    pub config: Option<Box<PushConfig<'a>>>,
    #[serde(borrow, default)]
    pub metadata: Option<Members<'a>>,
}

/// The operations on one task: get, cancel, resubscribe, and push-config
/// get, list and delete. 0.x names the task `id` (and the push config
/// `pushNotificationConfigId`); 1.0's push-config calls name the task
/// `taskId` and the config `id`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default, alias = "task_id", deserialize_with = "borrowed::opt")]
    pub task_id: Option<Cow<'a, str>>,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Count>,
    #[serde(
        borrow,
        default,
        alias = "push_notification_config_id",
        deserialize_with = "borrowed::opt"
    )]
    pub push_notification_config_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub metadata: Option<Members<'a>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub tenant: Option<Cow<'a, str>>,
}

/// 1.0 `ListTasks`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams<'a> {
    #[serde(
        borrow,
        default,
        alias = "context_id",
        deserialize_with = "borrowed::opt"
    )]
    pub context_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub status: Option<&'a RawValue>,
    #[serde(default, alias = "page_size")]
    pub page_size: Option<Count>,
    #[serde(
        borrow,
        default,
        alias = "page_token",
        deserialize_with = "borrowed::opt"
    )]
    pub page_token: Option<Cow<'a, str>>,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Count>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub tenant: Option<Cow<'a, str>>,
}

/// An operation's params, as the model reads them. Made once per call and
/// kept where it was made, so the variants' sizes may differ.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Params<'a> {
    /// Boxed: 848 bytes inline made every `Params` as large, and the
    /// one-pass read moved it 16 times a call (1.8k instructions of
    /// memcpy, callgrind).
    Send(Box<SendParams<'a>>),
    Task(TaskParams<'a>),
    List(ListParams<'a>),
    PushSet(PushConfig<'a>),
    /// The extended card: its params carry nothing the gateway uses.
    Card,
    /// No `params` member (or `null`).
    Absent,
}

impl<'a> Params<'a> {
    /// The 1.0 `tenant` member, where the params have one.
    pub fn tenant(&self) -> Option<&str> {
        match self {
            Params::Send(p) => p.tenant.as_deref(),
            Params::Task(p) => p.tenant.as_deref(),
            Params::List(p) => p.tenant.as_deref(),
            Params::PushSet(p) => p.tenant.as_deref(),
            Params::Card | Params::Absent => None,
        }
    }

    pub fn send(&self) -> Option<&SendParams<'a>> {
        match self {
            Params::Send(p) => Some(p),
            _ => None,
        }
    }

    pub fn task(&self) -> Option<&TaskParams<'a>> {
        match self {
            Params::Task(p) => Some(p),
            _ => None,
        }
    }

    /// The message a send carries.
    pub fn message(&self) -> Option<&Message<'a>> {
        self.send()?.message.as_ref()
    }

    /// `params.metadata`, where the operation has one.
    pub fn metadata(&self) -> Option<&Members<'a>> {
        match self {
            Params::Send(p) => p.metadata.as_ref(),
            Params::Task(p) => p.metadata.as_ref(),
            Params::PushSet(p) => p.metadata.as_ref(),
            _ => None,
        }
    }
}

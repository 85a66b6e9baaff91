//! A message and its parts, as every version writes them: 0.1 parts are
//! told apart by `type`, 0.2/0.3 parts by `kind`, 1.0 parts by which
//! content member is set. Each field is read under its JSON name and, for
//! 1.0's ProtoJSON, its proto name too (`message_id`, `media_type`).
//! Reading checks only JSON types; what each version requires is checked
//! in `crate::a2a::validate`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::borrowed;
use super::members::Members;
use super::role::Role;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message<'a> {
    /// 0.2/0.3: `"message"`.
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        alias = "message_id",
        deserialize_with = "borrowed::opt"
    )]
    pub message_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub role: Option<Role>,
    #[serde(borrow, default)]
    pub parts: Option<Vec<Part<'a>>>,
    #[serde(borrow, default, alias = "task_id", deserialize_with = "borrowed::opt")]
    pub task_id: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        alias = "context_id",
        deserialize_with = "borrowed::opt"
    )]
    pub context_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub metadata: Option<Members<'a>>,
    #[serde(borrow, default)]
    pub extensions: Option<&'a RawValue>,
    #[serde(borrow, default, alias = "reference_task_ids")]
    pub reference_task_ids: Option<&'a RawValue>,
}

/// One part. Every version's members are read; which must be set, and
/// how many, depends on the version (`crate::a2a::validate`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part<'a> {
    /// 0.1: `text`, `file` or `data`.
    #[serde(borrow, default, rename = "type", deserialize_with = "borrowed::opt")]
    pub type_: Option<Cow<'a, str>>,
    /// 0.2/0.3: `text`, `file` or `data`.
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub text: Option<Cow<'a, str>>,
    /// 0.1–0.3 file content.
    #[serde(borrow, default)]
    pub file: Option<File<'a>>,
    /// Any JSON value (0.1–0.3: an object). `null` reads as absent.
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
    /// 1.0: base64 bytes.
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub raw: Option<Cow<'a, str>>,
    /// 1.0: a file's URL.
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub url: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        alias = "media_type",
        deserialize_with = "borrowed::opt"
    )]
    pub media_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub filename: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub metadata: Option<Members<'a>>,
}

/// 0.1–0.3 `file`: bytes (base64) or a URI, with its media type and name.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct File<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub bytes: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub uri: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        alias = "mime_type",
        deserialize_with = "borrowed::opt"
    )]
    pub mime_type: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed::opt")]
    pub name: Option<Cow<'a, str>>,
}

impl Part<'_> {
    /// The part's text, whatever the version.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Message<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn reads_every_versions_message() {
        let m = read(
            r#"{"kind":"message","messageId":"m1","role":"user","taskId":"t","contextId":"c",
               "parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"https://x","mimeType":"image/png","name":"a.png"}},
                        {"kind":"data","data":{"k":1}}],"metadata":{"a":1}}"#,
        );
        assert_eq!(m.message_id.as_deref(), Some("m1"));
        assert_eq!(m.role, Some(Role::User));
        assert_eq!(m.task_id.as_deref(), Some("t"));
        assert_eq!(m.context_id.as_deref(), Some("c"));
        let parts = m.parts.unwrap();
        assert_eq!(parts[0].text(), Some("hi"));
        let file = parts[1].file.as_ref().unwrap();
        assert_eq!(file.uri.as_deref(), Some("https://x"));
        assert_eq!(file.mime_type.as_deref(), Some("image/png"));
        assert_eq!(parts[2].data.unwrap().get(), r#"{"k":1}"#);

        let v1 = read(
            r#"{"messageId":"m","role":"ROLE_AGENT","parts":[{"raw":"aGk=","mediaType":"text/plain","filename":"a"},{"url":"https://x"}]}"#,
        );
        assert_eq!(v1.role, Some(Role::Agent));
        let parts = v1.parts.unwrap();
        assert_eq!(parts[0].raw.as_deref(), Some("aGk="));
        assert_eq!(parts[0].media_type.as_deref(), Some("text/plain"));
        assert_eq!(parts[1].url.as_deref(), Some("https://x"));

        let v01 = read(r#"{"role":"user","parts":[{"type":"text","text":"x"}]}"#);
        assert_eq!(v01.parts.unwrap()[0].type_.as_deref(), Some("text"));
    }

    #[test]
    fn proto_names_are_read_too() {
        let m = read(
            r#"{"message_id":"m","role":"ROLE_USER","task_id":"t","context_id":"c","reference_task_ids":["r"],
               "parts":[{"raw":"aGk=","media_type":"text/plain"},{"file":{"bytes":"aGk=","mime_type":"text/plain"}}]}"#,
        );
        assert_eq!(m.message_id.as_deref(), Some("m"));
        assert_eq!(m.task_id.as_deref(), Some("t"));
        assert_eq!(m.context_id.as_deref(), Some("c"));
        assert_eq!(m.reference_task_ids.unwrap().get(), r#"["r"]"#);
        let parts = m.parts.unwrap();
        assert_eq!(parts[0].media_type.as_deref(), Some("text/plain"));
        assert_eq!(
            parts[1].file.as_ref().unwrap().mime_type.as_deref(),
            Some("text/plain")
        );
    }

    #[test]
    fn both_spellings_at_once_are_refused() {
        let e = serde_json::from_str::<Message<'_>>(r#"{"taskId":"a","task_id":"b"}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate field"), "{e}");
    }

    #[test]
    fn null_members_read_as_absent() {
        let m = read(r#"{"taskId":null,"parts":[{"data":null,"text":null}]}"#);
        assert!(m.task_id.is_none());
        let parts = m.parts.unwrap();
        assert!(parts[0].data.is_none() && parts[0].text.is_none());
    }
}

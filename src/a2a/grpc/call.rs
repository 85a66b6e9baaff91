//! An A2A call encoded as its gRPC call: the RPC a call family is, its
//! request message from the params' ProtoJSON, one message in gRPC's
//! framing, and the answer message back as ProtoJSON; for the 1.0 service
//! (`lf.a2a.v1`) and the 0.3 one (`a2a.v1`, whose ProtoJSON is 0.3
//! HTTP+JSON's: the bridge says the call in it first). The HTTP/2 around
//! it is the caller's (`crate::egress::grpc`, `crate::call::probe`).

use bytes::{Buf, Bytes, BytesMut};
use http::Uri;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{v03, v1};
use crate::a2a::{Family, Version};

/// The path of an RPC of the service of `version` (1.0, or else 0.3):
/// `/lf.a2a.v1.A2AService/GetTask`, `/a2a.v1.A2AService/GetTask`.
pub fn path(version: Version, rpc: &str) -> String {
    let service = match version {
        Version::V1_0 => v1::a2a_service_server::SERVICE_NAME,
        _ => v03::a2a_service_server::SERVICE_NAME,
    };
    format!("/{service}/{rpc}")
}

/// The origin of an agent's gRPC interface from its card's URL. gRPC URLs
/// are often bare (`host:port`): they take the scheme of the upstream's
/// own URL (`secure`: `https`). `grpc://` and `grpcs://` are read as
/// `http://` and `https://`. `None`: not an address.
pub fn origin_of(url: &str, secure: bool) -> Option<Uri> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http" | "grpc", rest)) => ("http", rest),
        Some(("https" | "grpcs", rest)) => ("https", rest),
        Some(_) => return None,
        None if secure => ("https", url),
        None => ("http", url),
    };
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query("/")
        .build()
        .ok()
}

/// The RPC a call family is in the service of `version` (1.0, or else
/// 0.3), and its request message from the params' ProtoJSON.
pub fn request(
    version: Version,
    family: Family,
    params: Value,
) -> Result<(&'static str, Vec<u8>), String> {
    match version {
        Version::V1_0 => request_1_0(family, params),
        _ => request_0_3(family, params),
    }
}

/// One row per family: the RPC and its request message.
#[rustfmt::skip]
fn request_1_0(family: Family, params: Value) -> Result<(&'static str, Vec<u8>), String> {
    use Family::*;
    Ok(match family {
        Send => ("SendMessage", encode::<v1::SendMessageRequest>(params)?),
        Stream => ("SendStreamingMessage", encode::<v1::SendMessageRequest>(params)?),
        GetTask => ("GetTask", encode::<v1::GetTaskRequest>(params)?),
        ListTasks => ("ListTasks", encode::<v1::ListTasksRequest>(params)?),
        CancelTask => ("CancelTask", encode::<v1::CancelTaskRequest>(params)?),
        Resubscribe => ("SubscribeToTask", encode::<v1::SubscribeToTaskRequest>(params)?),
        PushSet => ("CreateTaskPushNotificationConfig", encode::<v1::TaskPushNotificationConfig>(params)?),
        PushGet => ("GetTaskPushNotificationConfig", encode::<v1::GetTaskPushNotificationConfigRequest>(params)?),
        PushList => ("ListTaskPushNotificationConfigs", encode::<v1::ListTaskPushNotificationConfigsRequest>(params)?),
        PushDelete => ("DeleteTaskPushNotificationConfig", encode::<v1::DeleteTaskPushNotificationConfigRequest>(params)?),
        ExtendedCard => ("GetExtendedAgentCard", encode::<v1::GetExtendedAgentCardRequest>(params)?),
    })
}

/// 0.3 has no ListTasks and names its tasks and configs by resource name
/// (`tasks/{id}`): the params are the 0.3 request messages' ProtoJSON.
#[rustfmt::skip]
fn request_0_3(family: Family, params: Value) -> Result<(&'static str, Vec<u8>), String> {
    use Family::*;
    Ok(match family {
        Send => ("SendMessage", encode::<v03::SendMessageRequest>(params)?),
        Stream => ("SendStreamingMessage", encode::<v03::SendMessageRequest>(params)?),
        GetTask => ("GetTask", encode::<v03::GetTaskRequest>(params)?),
        ListTasks => return Err("A2A 0.3's gRPC service has no ListTasks".into()),
        CancelTask => ("CancelTask", encode::<v03::CancelTaskRequest>(params)?),
        Resubscribe => ("TaskSubscription", encode::<v03::TaskSubscriptionRequest>(params)?),
        PushSet => ("CreateTaskPushNotificationConfig", encode::<v03::CreateTaskPushNotificationConfigRequest>(params)?),
        PushGet => ("GetTaskPushNotificationConfig", encode::<v03::GetTaskPushNotificationConfigRequest>(params)?),
        PushList => ("ListTaskPushNotificationConfig", encode::<v03::ListTaskPushNotificationConfigRequest>(params)?),
        PushDelete => ("DeleteTaskPushNotificationConfig", encode::<v03::DeleteTaskPushNotificationConfigRequest>(params)?),
        ExtendedCard => ("GetAgentCard", encode::<v03::GetAgentCardRequest>(params)?),
    })
}

fn encode<M: DeserializeOwned + prost::Message>(params: Value) -> Result<Vec<u8>, String> {
    let message: M = serde_json::from_value(params).map_err(|e| e.to_string())?;
    Ok(message.encode_to_vec())
}

/// One uncompressed gRPC message: a zero flag, its length, its bytes.
pub fn framed(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 5);
    out.extend_from_slice(&[0]);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out.freeze()
}

/// The agent's answer message of `family` in the service of `version`,
/// as its ProtoJSON.
pub fn answer_json(version: Version, family: Family, message: &[u8]) -> Result<Vec<u8>, String> {
    use Family::*;
    if version != Version::V1_0 {
        return match family {
            Send => json_of::<v03::SendMessageResponse>(message),
            Stream | Resubscribe => json_of::<v03::StreamResponse>(message),
            GetTask | CancelTask => json_of::<v03::Task>(message),
            PushSet | PushGet => json_of::<v03::TaskPushNotificationConfig>(message),
            PushList => json_of::<v03::ListTaskPushNotificationConfigResponse>(message),
            PushDelete => json_of::<pbjson_types::Empty>(message),
            ExtendedCard | ListTasks => json_of::<v03::AgentCard>(message),
        };
    }
    match family {
        Send => json_of::<v1::SendMessageResponse>(message),
        Stream | Resubscribe => json_of::<v1::StreamResponse>(message),
        GetTask | CancelTask => json_of::<v1::Task>(message),
        ListTasks => json_of::<v1::ListTasksResponse>(message),
        PushSet | PushGet => json_of::<v1::TaskPushNotificationConfig>(message),
        PushList => json_of::<v1::ListTaskPushNotificationConfigsResponse>(message),
        PushDelete => json_of::<pbjson_types::Empty>(message),
        ExtendedCard => json_of::<v1::AgentCard>(message),
    }
}

fn json_of<M: prost::Message + Default + Serialize>(message: &[u8]) -> Result<Vec<u8>, String> {
    let read = M::decode(message).map_err(|e| format!("its message does not decode: {e}"))?;
    serde_json::to_vec(&read).map_err(|e| e.to_string())
}

/// The field number of `tenant` in the 1.0 request message of `rpc`.
pub fn tenant_field(rpc: &str) -> u32 {
    match rpc {
        "ListTaskPushNotificationConfigs" => 4,
        _ => 1,
    }
}

/// One framed, uncompressed message with its string field `field` set
/// anew as `value`, the rest of its bytes as they came (fields this proto
/// does not know included). Protobuf reads the last of a repeated scalar
/// field, so the new value is appended. `None`: `frames` is not exactly one
/// uncompressed message.
pub fn with_string_field(frames: &[u8], field: u32, value: &str) -> Option<Bytes> {
    let (&flag, rest) = frames.split_first()?;
    let length = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let message = rest.get(4..)?;
    if flag != 0 || message.len() != length {
        return None;
    }
    let mut encoded = BytesMut::with_capacity(message.len() + value.len() + 16);
    encoded.extend_from_slice(message);
    prost::encoding::encode_key(
        field,
        prost::encoding::WireType::LengthDelimited,
        &mut encoded,
    );
    prost::encoding::encode_varint(value.len() as u64, &mut encoded);
    encoded.extend_from_slice(value.as_bytes());
    Some(framed(&encoded))
}

/// The next whole message in `buffer`, taken out of it (`None`: none
/// whole yet). A compressed one is refused (none was offered), and one
/// over `max` bytes.
pub fn next_message(buffer: &mut BytesMut, max: usize) -> Result<Option<Bytes>, String> {
    if buffer.len() < 5 {
        return Ok(None);
    }
    let length = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if buffer[0] != 0 {
        return Err("a compressed message, which was not offered".into());
    }
    if length > max {
        return Err(format!("a message over {max} bytes"));
    }
    if buffer.len() < 5 + length {
        return Ok(None);
    }
    buffer.advance(5);
    Ok(Some(buffer.split_to(length).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use serde_json::json;

    #[test]
    fn card_urls_become_origins() {
        let at = |url, secure| origin_of(url, secure).map(|u| u.to_string());
        assert_eq!(
            at("127.0.0.1:50051", false).as_deref(),
            Some("http://127.0.0.1:50051/")
        );
        assert_eq!(
            at("a.example:443", true).as_deref(),
            Some("https://a.example:443/")
        );
        assert_eq!(at("grpc://a:1/x", true).as_deref(), Some("http://a:1/"));
        assert_eq!(at("grpcs://a:1", false).as_deref(), Some("https://a:1/"));
        assert_eq!(at("ftp://a:1", false), None);
        assert_eq!(at("", false), None);
    }

    #[test]
    fn messages_are_taken_whole_from_a_buffer() {
        let mut two = BytesMut::new();
        two.extend_from_slice(&framed(b"ab"));
        two.extend_from_slice(&framed(b"c")[..3]);
        let mut buffer = two;
        assert_eq!(
            next_message(&mut buffer, 16).unwrap().as_deref(),
            Some(&b"ab"[..])
        );
        assert_eq!(
            next_message(&mut buffer, 16).unwrap(),
            None,
            "half a frame waits"
        );
        let mut compressed = BytesMut::from(&[1u8, 0, 0, 0, 0][..]);
        assert!(next_message(&mut compressed, 16).is_err());
    }

    #[test]
    fn a_string_field_is_said_anew_keeping_the_rest() {
        let request = v1::SendMessageRequest {
            tenant: "agents/a/t".into(),
            metadata: None,
            ..Default::default()
        };
        let mut bytes = request.encode_to_vec();
        // A field this proto does not know (99, varint 7) stays.
        prost::encoding::encode_key(99, prost::encoding::WireType::Varint, &mut bytes);
        prost::encoding::encode_varint(7, &mut bytes);
        let encoded = with_string_field(&framed(&bytes), tenant_field("SendMessage"), "t").unwrap();
        let read = v1::SendMessageRequest::decode(&encoded[5..]).unwrap();
        assert_eq!(read.tenant, "t");
        assert!(
            encoded.windows(2).any(|w| w == [0x98, 0x06]),
            "the unknown field's key"
        );
        let none = with_string_field(&framed(&bytes), 1, "").unwrap();
        assert_eq!(
            v1::SendMessageRequest::decode(&none[5..]).unwrap().tenant,
            ""
        );
        assert!(
            with_string_field(&[1, 0, 0, 0, 0], 1, "t").is_none(),
            "compressed"
        );
        assert!(
            with_string_field(&[0, 0, 0, 0, 9, 1], 1, "t").is_none(),
            "not whole"
        );
        assert_eq!(tenant_field("ListTaskPushNotificationConfigs"), 4);
    }

    #[test]
    fn params_become_the_request_message() {
        let (name, bytes) = request(
            Version::V1_0,
            Family::GetTask,
            json!({"id": "t", "historyLength": 2}),
        )
        .unwrap();
        assert_eq!(name, "GetTask");
        let read = v1::GetTaskRequest::decode(&bytes[..]).unwrap();
        assert_eq!((read.id.as_str(), read.history_length), ("t", Some(2)));
        assert!(request(Version::V1_0, Family::GetTask, json!({"id": 5})).is_err());
        assert_eq!(
            path(Version::V1_0, "GetTask"),
            "/lf.a2a.v1.A2AService/GetTask"
        );
        let (name, bytes) =
            request(Version::V0_3, Family::GetTask, json!({"name": "tasks/t"})).unwrap();
        assert_eq!(name, "GetTask");
        assert_eq!(
            v03::GetTaskRequest::decode(&bytes[..]).unwrap().name,
            "tasks/t"
        );
        assert!(request(Version::V0_3, Family::ListTasks, json!({})).is_err());
        assert_eq!(path(Version::V0_3, "GetTask"), "/a2a.v1.A2AService/GetTask");
    }
}

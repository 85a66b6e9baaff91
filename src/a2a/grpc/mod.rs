//! The gRPC binding's messages and services, generated at build time from
//! the vendored official protos (`proto/`, `src/build.rs`): `v1` is A2A 1.0
//! (`lf.a2a.v1.A2AService`), `v03` is A2A 0.3 (`a2a.v1.A2AService`, the
//! package the SDKs use). Each has the messages with their ProtoJSON
//! (serde: the JSON names written, the JSON and proto names read), a client
//! and a server trait.

pub mod call;
pub mod codec;
pub mod seen;

/// A2A 1.0: package `lf.a2a.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    tonic::include_proto!("lf.a2a.v1");
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

/// A2A 0.3: package `a2a.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod v03 {
    tonic::include_proto!("a2a.v1");
    include!(concat!(env!("OUT_DIR"), "/a2a.v1.serde.rs"));
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use serde_json::json;

    #[test]
    fn a_1_0_send_round_trips_in_the_wire_format() {
        use super::v1::{part, Message, Part, Role, SendMessageRequest};
        let request = SendMessageRequest {
            message: Some(Message {
                message_id: "m-1".into(),
                context_id: "ctx".into(),
                role: Role::User as i32,
                parts: vec![Part {
                    content: Some(part::Content::Text("hello".into())),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bytes = request.encode_to_vec();
        let back = SendMessageRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, request);
        assert!(SendMessageRequest::decode(&b"\xff\xff\xff"[..]).is_err());
    }

    #[test]
    fn a_1_0_send_is_the_protojson_the_rest_binding_carries() {
        use super::v1::SendMessageRequest;
        let body = json!({
            "message": {
                "messageId": "m-1", "role": "ROLE_USER",
                "parts": [{"text": "hi"}, {"raw": "aGk=", "mediaType": "text/plain"},
                          {"data": {"k": [1, "two", null]}}],
                "metadata": {"trace": true}
            },
            "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2}
        });
        let read: SendMessageRequest = serde_json::from_value(body.clone()).unwrap();
        let message = read.message.as_ref().unwrap();
        assert_eq!(message.parts.len(), 3);
        // All of it comes back but one thing the proto cannot hold: a
        // number in `data` is a google.protobuf.Value, a double, so 1 is
        // written 1.0 (the bridge will have to write integers as integers).
        let mut expected = body.clone();
        expected["message"]["parts"][2]["data"]["k"][0] = json!(1.0);
        assert_eq!(serde_json::to_value(&read).unwrap(), expected);
        // Proto names are read too, and enums as numbers.
        let by_proto_name =
            json!({"message": {"message_id": "m-1", "role": 1, "parts": [{"text": "hi"}]}});
        let read: SendMessageRequest = serde_json::from_value(by_proto_name).unwrap();
        assert_eq!(read.message.unwrap().message_id, "m-1");
    }

    #[test]
    fn a_0_3_task_reads_and_writes_its_protojson() {
        use super::v03::Task;
        let task = json!({
            "id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-27T12:00:00Z"},
            "artifacts": [{"artifactId": "a-1", "parts": [{"text": "done"}]}]
        });
        let read: Task = serde_json::from_value(task.clone()).unwrap();
        // The same instant, written with an offset rather than `Z` (both
        // RFC 3339; ProtoJSON's canonical form is `Z`, which the bridge
        // will have to write).
        let mut expected = task.clone();
        expected["status"]["timestamp"] = json!("2026-11-27T12:00:00+00:00");
        assert_eq!(serde_json::to_value(&read).unwrap(), expected);
        let back = Task::decode(read.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, read);
    }

    #[test]
    fn the_services_have_the_names_the_sdks_call() {
        assert_eq!(
            super::v1::a2a_service_server::SERVICE_NAME,
            "lf.a2a.v1.A2AService"
        );
        assert_eq!(
            super::v03::a2a_service_server::SERVICE_NAME,
            "a2a.v1.A2AService"
        );
    }
}

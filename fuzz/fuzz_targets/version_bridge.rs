//! The version bridge on anything: a request's params, an agent's answer
//! and an agent's SSE events, between every pair of versions and for every
//! method family. Invariants: never a panic; what comes out is JSON (each
//! event's data too) and an answer carries the client's request id.
//!
//! Input: byte 0 = method family (mod 11), byte 1 = client version, byte 2
//! = agent version (mod 3 each); the rest is the params, the answer and the
//! events alike.
#![no_main]

use a2a_gateway::a2a::{Family, Version};
use a2a_gateway::bridge::answer::{response, Answering};
use a2a_gateway::bridge::events::EventTranslator;
use a2a_gateway::bridge::request::translate;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::Value;

const FAMILIES: [Family; 11] = [
    Family::Send,
    Family::Stream,
    Family::GetTask,
    Family::ListTasks,
    Family::CancelTask,
    Family::Resubscribe,
    Family::PushSet,
    Family::PushGet,
    Family::PushList,
    Family::PushDelete,
    Family::ExtendedCard,
];
const VERSIONS: [Version; 3] = [Version::V0_1, Version::V0_3, Version::V1_0];

fuzz_target!(|data: &[u8]| bridge(data));

fn bridge(data: &[u8]) {
    let [f, c, a, rest @ ..] = data else {
        return;
    };
    let family = FAMILIES[usize::from(*f) % FAMILIES.len()];
    let client = VERSIONS[usize::from(*c) % 3];
    let agent = VERSIONS[usize::from(*a) % 3];
    let id = RawValue::from_string("\"fuzz-id\"".into()).unwrap();
    if let Ok(text) = std::str::from_utf8(rest) {
        if let Ok(params) = serde_json::from_str::<Box<RawValue>>(text) {
            let known = |t: &str| (t.len() % 2 == 0).then(|| format!("agent-{t}"));
            if let Ok(sent) = translate(family, client, agent, Some(&id), Some(&params), &known) {
                let v: Value = serde_json::from_slice(&sent.body).expect("a request is JSON");
                assert_eq!(v["id"], "fuzz-id");
            }
        }
    }
    let answering = Answering {
        family,
        client,
        agent,
        client_task: Some("mine".into()),
        id: Some(id),
        context: Some("fuzz-context".into()),
    };
    if let Ok(answered) = response(rest, &answering) {
        let v: Value = serde_json::from_slice(&answered.body).expect("an answer is JSON");
        assert_eq!(v["id"], "fuzz-id");
    }
    let said = match EventTranslator::new(answering, None).chunk(rest) {
        Ok(said) => said,
        Err((said, _)) => said,
    };
    for line in said.split(|&b| b == b'\n') {
        if let Some(data) = line.strip_prefix(b"data: ") {
            let v: Value = serde_json::from_slice(data).expect("each event is JSON");
            assert_eq!(v["id"], "fuzz-id");
        }
    }
}

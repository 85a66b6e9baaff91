//! Property tests over real sockets: one gateway in front of one mock agent
//! on 127.0.0.1, and generated JSON-RPC calls.
//!
//! * The JSON-RPC `id` of every answer is the request's id byte for byte,
//!   whatever its spelling (escapes, exponents, big integers, null), whether
//!   the gateway answers itself (an error) or relays the agent's answer,
//!   unary or streamed.
//! * A call the gateway forwards reaches the agent byte-equal: member order,
//!   whitespace, escapes and unknown members untouched.

use std::collections::HashMap;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::runtime::Runtime;

use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};

/// A runtime, agent and gateway shared by the cases of one property (the
/// properties run in parallel, each with its own).
struct Rig {
    runtime: Runtime,
    agent: MockAgent,
    gateway: TestGateway,
}

const MIRRORING: usize = 0;
const FORWARDING: usize = 1;

fn rig(which: usize) -> &'static Rig {
    static RIGS: [OnceLock<Rig>; 2] = [OnceLock::new(), OnceLock::new()];
    RIGS[which].get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let (agent, gateway) = runtime.block_on(async {
            let agent = MockAgent::start(Mode::Normal).await;
            let gateway = TestGateway::start(&[("agent", &agent.url())], "").await;
            (agent, gateway)
        });
        Rig {
            runtime,
            agent,
            gateway,
        }
    })
}

fn post(which: usize, body: &str) -> Reply {
    let rig = rig(which);
    let url = rig.gateway.url();
    rig.runtime
        .block_on(client::post_json(&url, body.to_string(), &[]))
}

/// JSON-RPC ids in the spellings clients use: strings with and without
/// escapes, integers of every size, numbers with fractions and exponents,
/// and null.
fn ids() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9_-]{1,12}".prop_map(|s| format!("\"{s}\"")),
        any::<String>().prop_map(|s| serde_json::to_string(&s).expect("a string")),
        "[a-z]{0,4}".prop_map(|s| format!("\"\\u00e9{s}\\n\\\"\\/\"")),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        (0u32..1000, 0u32..100).prop_map(|(a, b)| format!("{a}.{b:02}")),
        (1u32..9, 0u32..20).prop_map(|(a, e)| format!("{a}e{e}")),
        Just("-0".to_string()),
        Just("null".to_string()),
    ]
}

/// Whitespace JSON allows between tokens.
fn gap() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![" ", "\n", "\t", "\r\n", ""]),
        0..3,
    )
    .prop_map(|parts| parts.concat())
}

/// What a call asks for; each is answered differently.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Forwarded; the agent answers with a task.
    Send,
    /// Forwarded; the agent answers with an SSE stream.
    Stream,
    /// Forwarded (1.0 name).
    GetTask,
    /// Answered by the gateway: -32601.
    UnknownMethod,
    /// Answered by the gateway: -32602.
    BadParams,
    /// Answered by the gateway: -32600.
    WrongVersion,
}

fn kinds() -> impl Strategy<Value = Kind> {
    prop::sample::select(vec![
        Kind::Send,
        Kind::Stream,
        Kind::GetTask,
        Kind::UnknownMethod,
        Kind::BadParams,
        Kind::WrongVersion,
    ])
}

/// A message's params with generated text, pretty or compact.
fn message_params(text: &str, message_id: &str, pretty: bool, extra: bool) -> String {
    let mut params = json!({
        "message": {
            "kind": "message",
            "role": "user",
            "messageId": message_id,
            "parts": [{"kind": "text", "text": text}],
        }
    });
    if extra {
        params["metadata"] = json!({"client": {"x-unknown": [1, 2.5, null, {"deep": "é"}]}});
    }
    if pretty {
        serde_json::to_string_pretty(&params).expect("params")
    } else {
        serde_json::to_string(&params).expect("params")
    }
}

/// A whole body: the members in the given order, with gaps between tokens.
fn body(members: &[(&str, String)], order: &[usize], gaps: &[String]) -> String {
    let gap = |i: usize| gaps[i % gaps.len()].as_str();
    let mut out = format!("{}{{", gap(0));
    for (n, &i) in order.iter().enumerate() {
        let (name, value) = &members[i];
        if n > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{}\"{name}\"{}:{}{value}{}",
            gap(n + 1),
            gap(n + 2),
            gap(n + 3),
            gap(n + 4)
        ));
    }
    out.push('}');
    out.push_str(gap(order.len() + 5));
    out
}

fn call_members(kind: Kind, id: &str, params: String) -> Vec<(&'static str, String)> {
    let (version, method, params) = match kind {
        Kind::Send => ("2.0", "message/send", params),
        Kind::Stream => ("2.0", "message/stream", params),
        Kind::GetTask => ("2.0", "GetTask", r#"{"id":"task-1"}"#.to_string()),
        Kind::UnknownMethod => ("2.0", "tasks/doesNotExist", params),
        Kind::BadParams => ("2.0", "message/send", r#"{"message":{}}"#.to_string()),
        Kind::WrongVersion => ("1.0", "message/send", params),
    };
    vec![
        ("jsonrpc", format!("\"{version}\"")),
        ("id", id.to_string()),
        ("method", format!("\"{method}\"")),
        ("params", params),
    ]
}

/// The `id` of one JSON-RPC answer, as raw JSON text.
fn raw_id(answer: &str) -> String {
    let members: HashMap<String, Box<RawValue>> = serde_json::from_str(answer)
        .unwrap_or_else(|e| panic!("the answer is not a JSON object ({e}): {answer}"));
    members
        .get("id")
        .map(|id| id.get().to_string())
        .unwrap_or_else(|| panic!("the answer has no id: {answer}"))
}

/// The JSON-RPC answers in a reply: the body, or each SSE event's data.
fn answers(reply: &Reply) -> Vec<String> {
    let is_sse = reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if is_sse {
        client::parse_sse(&reply.body)
    } else {
        vec![reply.text()]
    }
}

fn expected_code(kind: Kind) -> Option<i64> {
    match kind {
        Kind::Send | Kind::Stream | Kind::GetTask => None,
        Kind::UnknownMethod => Some(-32601),
        Kind::BadParams => Some(-32602),
        Kind::WrongVersion => Some(-32600),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_answer_mirrors_the_request_id_byte_for_byte(
        id in ids(),
        kind in kinds(),
        text in "\\PC{0,40}",
        pretty in any::<bool>(),
        order in Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        gaps in prop::collection::vec(gap(), 1..6),
    ) {
        let params = message_params(&text, "m-1", pretty, false);
        let sent = body(&call_members(kind, &id, params), &order, &gaps);
        let reply = post(MIRRORING, &sent);
        prop_assert_eq!(reply.status.as_u16(), 200, "{}: {}", sent, reply.text());
        let answers = answers(&reply);
        prop_assert!(!answers.is_empty(), "no answer to {}", sent);
        for answer in &answers {
            prop_assert_eq!(raw_id(answer), id.clone(), "answer {} to {}", answer, sent);
            let parsed: Value = serde_json::from_str(answer).expect("JSON");
            match expected_code(kind) {
                Some(code) => prop_assert_eq!(parsed["error"]["code"].as_i64(), Some(code), "{}", answer),
                None => prop_assert!(parsed.get("result").is_some(), "{}", answer),
            }
        }
    }

    #[test]
    fn forwarded_calls_reach_the_agent_byte_equal(
        id in ids(),
        kind in prop::sample::select(vec![Kind::Send, Kind::Stream, Kind::GetTask]),
        text in "\\PC{0,200}",
        message_id in "[a-zA-Z0-9-]{1,24}",
        pretty in any::<bool>(),
        extra in any::<bool>(),
        order in Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        gaps in prop::collection::vec(gap(), 1..6),
    ) {
        let params = message_params(&text, &message_id, pretty, extra);
        let sent = body(&call_members(kind, &id, params), &order, &gaps);
        let before = rig(FORWARDING).agent.request_count();
        let reply = post(FORWARDING, &sent);
        prop_assert_eq!(reply.status.as_u16(), 200, "{}: {}", sent, reply.text());
        let seen = rig(FORWARDING).agent.requests();
        prop_assert_eq!(seen.len(), before + 1, "one call reached the agent");
        let last = seen.last().expect("a recorded call");
        prop_assert_eq!(&last.body[..], sent.as_bytes(), "the agent got other bytes");
    }
}

//! An agent's SSE events in the client's version. Each event's `data` is
//! one JSON-RPC response (`answer::response`); other lines (`event:`,
//! `id:`, comments) pass as they are.

use bytes::{BufMut, Bytes, BytesMut};

use super::answer::{response, Answering};
use super::{Result, Untranslatable};
use crate::a2a::sse::lines;

/// Called with the agent's task id the first time a 0.1 client's stream
/// names it.
pub type LearnTask = Box<dyn FnMut(&str) + Send>;

pub struct EventTranslator {
    answering: Answering,
    learn: Option<LearnTask>,
}

impl EventTranslator {
    pub fn new(answering: Answering, learn: Option<LearnTask>) -> Self {
        Self { answering, learn }
    }

    /// Whole events from the agent, as the client's version says them; on
    /// an event that cannot be translated, the events before it and why.
    pub fn chunk(&mut self, events: &[u8]) -> std::result::Result<Bytes, (Bytes, Untranslatable)> {
        map_event_data(events, |data| {
            self.event(data).map(|encoded| (None, encoded))
        })
    }

    fn event(&mut self, data: &[u8]) -> Result<Vec<u8>> {
        let answered = response(data, &self.answering)?;
        if let (Some(task), Some(learn)) = (answered.agent_task.as_deref(), self.learn.as_mut()) {
            learn(task);
            self.learn = None;
        }
        Ok(answered.body)
    }
}

/// What an event's data is encoded as: an event name to add (`event: error`),
/// and the new data.
pub type Encoded = (Option<&'static str>, Vec<u8>);

/// Whole SSE events with each event's `data` (multi-line data joined with
/// `\n`) encoded anew by `encode`, as one `data:` line (after an `event:` line
/// when `encode` names one); other lines (`event:`, `id:`, comments) pass as
/// they are. On an event `encode` refuses: the events before it, and why.
pub fn map_event_data<E>(
    events: &[u8],
    mut encode: impl FnMut(&[u8]) -> std::result::Result<Encoded, E>,
) -> std::result::Result<Bytes, (Bytes, E)> {
    let mut out = BytesMut::with_capacity(events.len() + events.len() / 4);
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    let mut event_start = 0;
    let mut emit = |data: &[u8], out: &mut BytesMut| -> std::result::Result<(), E> {
        let (event, encoded) = encode(data)?;
        if let Some(event) = event {
            out.put_slice(b"event: ");
            out.put_slice(event.as_bytes());
            out.put_u8(b'\n');
        }
        out.put_slice(b"data: ");
        out.put_slice(&encoded);
        out.put_u8(b'\n');
        Ok(())
    };
    for line in lines(events) {
        if line.is_empty() {
            if has_data {
                if let Err(e) = emit(&data, &mut out) {
                    out.truncate(event_start);
                    return Err((out.freeze(), e));
                }
            }
            out.put_u8(b'\n');
            event_start = out.len();
            data.clear();
            has_data = false;
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(rest);
            has_data = true;
        } else {
            out.put_slice(line);
            out.put_u8(b'\n');
        }
    }
    // The relay hands over whole events only; a last one without its
    // blank line is still written.
    if has_data {
        if let Err(e) = emit(&data, &mut out) {
            out.truncate(event_start);
            return Err((out.freeze(), e));
        }
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{Family, Version};
    use serde_json::value::RawValue;

    fn translator(client: Version, agent: Version, client_task: Option<&str>) -> EventTranslator {
        EventTranslator::new(
            Answering {
                family: Family::Stream,
                client,
                agent,
                client_task: client_task.map(str::to_owned),
                id: Some(RawValue::from_string("1".into()).unwrap()),
                context: None,
            },
            None,
        )
    }

    #[test]
    fn each_event_is_translated_and_other_lines_kept() {
        let mut t = translator(Version::V0_3, Version::V1_0, None);
        let chunk = b": hello\r\nevent: x\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\r\n\r\n";
        let out = t.chunk(chunk).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.starts_with(": hello\nevent: x\ndata: {"), "{text}");
        assert!(text.ends_with("}\n\n"), "{text}");
        let data = text.lines().nth(2).unwrap().strip_prefix("data: ").unwrap();
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["result"]["kind"], "status-update");
        assert_eq!(v["result"]["final"], true);
        assert_eq!(v["result"]["status"]["state"], "completed");
    }

    #[test]
    fn a_0_3_stream_reaches_a_1_0_client_without_final() {
        let mut t = translator(Version::V1_0, Version::V0_3, None);
        let chunk = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"artifact-update\",\"taskId\":\"t\",\"contextId\":\"c\",\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]}}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"status-update\",\"taskId\":\"t\",\"contextId\":\"c\",\"final\":true,\"status\":{\"state\":\"completed\"}}}\n\n";
        let out = t.chunk(chunk).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        let events: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        assert_eq!(
            events[0]["result"],
            serde_json::json!({"artifactUpdate": {"taskId": "t", "contextId": "c",
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}})
        );
        assert_eq!(
            events[1]["result"],
            serde_json::json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
    }

    #[test]
    fn a_bad_event_is_an_error() {
        let mut t = translator(Version::V1_0, Version::V0_3, None);
        assert!(t
            .chunk(b"data: {\"id\":1,\"result\":{\"kind\":\"nap\"}}\n\n")
            .is_err());
        assert!(t.chunk(b"data: not json\n\n").is_err());
    }
}

//! An upstream's SSE bytes, split at fuzzer-chosen points, through the
//! `EventScanner` (as the relay's buffer uses it) and through the whole
//! `SseRelay` (with task-id learning on every forwarded chunk, as the proxy
//! wires it). Invariants: nothing is lost or invented (what was forwarded
//! plus what is still pending is exactly the input), every forward ends at
//! an event end, and an event is forwarded as soon as its last byte arrives.
//!
//! Input: byte 0 = number of split points (low 4 bits) and whether the
//! relay gets a small event-size limit (bit 4); then one byte per split
//! point (the length of that chunk); the rest is the stream.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use a2a_gateway::a2a::seen;
use a2a_gateway::relay::sse::{EventScanner, RelaySettings, SseRelay};
use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;

#[path = "split.rs"]
mod split;

const REQUEST_ID: &str = "\"fz-1\"";

fuzz_target!(|data: &[u8]| sse(data));

fn sse(data: &[u8]) {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let splits = usize::from(control & 0x0F).min(rest.len());
    let (lengths, stream) = rest.split_at(splits);
    let chunks = split::cut(stream, lengths);
    let ends = event_ends(stream);
    scanner(stream, &chunks, &ends);
    let limit = if control & 0x10 != 0 {
        32
    } else {
        stream.len() + 1
    };
    relay(stream, &chunks, &ends, limit);
}

/// Where events end, by a plain reading of the WHATWG rules: lines end in
/// CRLF, LF or CR; an empty line ends an event. The boundary is just after
/// the first byte of the empty line's terminator (the scanner does not wait
/// to see whether a CR is followed by LF; that LF starts the next event).
fn event_ends(stream: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut line_start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\r' | b'\n' => {
                if i == line_start {
                    ends.push(i + 1);
                }
                let crlf = stream[i] == b'\r' && stream.get(i + 1) == Some(&b'\n');
                i += if crlf { 2 } else { 1 };
                line_start = i;
            }
            _ => i += 1,
        }
    }
    ends
}

/// The largest event end within the first `n` bytes (0 if none).
fn complete_within(ends: &[usize], n: usize) -> usize {
    ends.iter().rev().find(|&&e| e <= n).copied().unwrap_or(0)
}

fn scanner(stream: &[u8], chunks: &[&[u8]], ends: &[usize]) {
    let mut scanner = EventScanner::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut forwarded: Vec<u8> = Vec::new();
    let mut fed = 0;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        fed += chunk.len();
        let n = scanner.scan(&buf);
        assert!(n <= buf.len());
        forwarded.extend(buf.drain(..n));
        // Forwarded exactly up to the last complete event: at an event end,
        // and nothing complete is held back.
        assert_eq!(
            forwarded.len(),
            complete_within(ends, fed),
            "forwarded {} of {fed} bytes; event ends {ends:?}",
            forwarded.len()
        );
    }
    forwarded.extend_from_slice(&buf);
    assert_eq!(forwarded, stream, "forwarded + pending == input");
}

type Chunk = Result<Frame<Bytes>, std::io::Error>;

fn relay(stream: &[u8], chunks: &[&[u8]], ends: &[usize], max_event_bytes: usize) {
    let frames: Vec<Chunk> = chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let body = StreamBody::new(futures_util::stream::iter(frames));
    let settings = RelaySettings {
        upstream: "agent".into(),
        request_id: Some(RawValue::from_string(REQUEST_ID.into()).unwrap()),
        x_request_id: "fuzz".into(),
        idle_timeout: Duration::from_secs(3600),
        max_event_bytes,
        on_events: Some(Box::new(|events: &[u8]| {
            let _ = seen::from_events(events);
        })),
        rewrite: None,
        rest: false,
        closing: None,
        ended: None,
    };
    let out: Vec<Bytes> = runtime().block_on(async move {
        // The relay's idle timer needs the runtime.
        let relay = SseRelay::new(body, settings);
        let mut relay = std::pin::pin!(relay);
        let mut out = Vec::new();
        while let Some(frame) = relay.frame().await {
            let frame = frame.expect("the relay itself never fails");
            if let Ok(data) = frame.into_data() {
                out.push(data);
            }
        }
        out
    });
    let all: Vec<u8> = out.concat();
    if all == stream {
        // Every frame but a final dangling partial event ends at an event end.
        let mut at = 0;
        for (i, frame) in out.iter().enumerate() {
            at += frame.len();
            // An empty upstream frame is passed on empty (hyper drops
            // those on HTTP/1 and sends an empty DATA frame on HTTP/2).
            if i + 1 < out.len() && !frame.is_empty() {
                assert!(ends.contains(&at), "frame {i} ends mid-event at {at}");
            }
        }
        return;
    }
    // Otherwise an event grew past the limit: whole events, then one error
    // event for this request, then the end. The relay may send events it
    // held and the error event in one frame, so split the bytes, not the
    // frames: the error event is the last line (its JSON has no line breaks).
    let body = all.strip_suffix(b"\n\n").expect("the stream ends with an event");
    let start = body
        .iter()
        .rposition(|&b| b == b'\n' || b == b'\r')
        .map_or(0, |i| i + 1);
    let (sent, last) = all.split_at(start);
    assert!(stream.starts_with(sent), "forwarded bytes were altered");
    assert!(
        sent.is_empty() || ends.contains(&sent.len()),
        "forwarded a partial event before the error"
    );
    let text = std::str::from_utf8(last).expect("the error event is UTF-8");
    let json = text
        .strip_prefix("data: ")
        .and_then(|t| t.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("not an SSE event: {text:?}"));
    let v: serde_json::Value = serde_json::from_str(json).expect("the error event is JSON");
    assert_eq!(v["error"]["code"], -32052, "{text}");
    assert_eq!(v["id"], "fz-1", "{text}");
    assert!(
        stream.len() - sent.len() > max_event_bytes,
        "refused an event no larger than the limit"
    );
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime")
    })
}

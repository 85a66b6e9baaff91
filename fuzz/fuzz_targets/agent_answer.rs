//! An agent's HTTP/1.1 answer to a streaming call, as the gateway reads it
//! from the socket itself (`upstream::take_head` for the head, 1xx heads
//! skipped; `upstream::framing` for the body: chunked, a length, or to the
//! close), fed in fuzzer-chosen pieces the way reads deliver them.
//! Invariants: the outcome (head, body, how it ended, bytes left over) is
//! the same however the bytes were split; a sized body is exactly the bytes
//! after the head, up to its length; a body to the close is everything
//! after the head; a chunked body is pieces of the input in order (nothing
//! invented); answers without a body (204, 304) have none.
//!
//! Input: byte 0 = number of split points (low 4 bits); then one byte per
//! split point (the length of that piece); the rest is the answer.
#![no_main]

use a2a_gateway::upstream::framing::{self, Decoder, Framing};
use a2a_gateway::upstream::take_head;
use bytes::BytesMut;
use http::StatusCode;
use libfuzzer_sys::fuzz_target;

#[path = "split.rs"]
mod split;

fuzz_target!(|data: &[u8]| answer(data));

fn answer(data: &[u8]) {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let splits = usize::from(control & 0x0F).min(rest.len());
    let (lengths, bytes) = rest.split_at(splits);
    let (whole, frames) = read(&[bytes]);
    let pieces = split::cut(bytes, lengths);
    let (split, _) = read(&pieces);
    assert_eq!(
        whole, split,
        "the outcome depends on how the answer was split"
    );
    check(bytes, &whole, &frames);
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The head was refused (not HTTP, too large, a 101).
    BadHead,
    /// The connection closed before a whole head.
    NoHead,
    /// The head's framing headers were refused.
    BadFraming,
    Answer(Answer),
}

#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    /// The head's length, the final one's and any 1xx before it.
    head_len: usize,
    framing: Framing,
    keep_alive: bool,
    /// The data handed on (its frames are cut where the reads were).
    body: Vec<u8>,
    /// `Ok` when the body ended cleanly (its end, or the close for a body
    /// framed by it); `Err` when its framing broke or it was cut short.
    ended: Result<(), String>,
    /// Bytes past the body's end (which keep a socket out of the pool).
    left_over: usize,
}

/// What the gateway makes of `pieces` arriving one read at a time and the
/// connection then closing: `read_head`, then `StreamBody::poll_frame`.
/// Also the data frames as they were handed on.
fn read(pieces: &[&[u8]]) -> (Outcome, Vec<Vec<u8>>) {
    let total: usize = pieces.iter().map(|p| p.len()).sum();
    let mut pieces = pieces.iter();
    let mut buf = BytesMut::new();
    let mut taken = 0;
    let head = loop {
        match take_head(&mut buf) {
            Err(_) => return (Outcome::BadHead, Vec::new()),
            Ok(Some(head)) => break head,
            Ok(None) => {}
        }
        let Some(piece) = pieces.next() else {
            return (Outcome::NoHead, Vec::new());
        };
        buf.extend_from_slice(piece);
        taken += piece.len();
    };
    let head_len = taken - buf.len();
    let Ok((framing, keep_alive)) = framing::of_head(head.status(), head.version(), head.headers())
    else {
        return (Outcome::BadFraming, Vec::new());
    };
    let mut decoder = Decoder::new(framing, buf);
    let mut frames = Vec::new();
    let ended = loop {
        match decoder.next_data() {
            Ok(Some(data)) => {
                assert!(!data.is_empty(), "an empty data frame");
                frames.push(data.to_vec());
                continue;
            }
            Ok(None) if decoder.framing() == Framing::Done => break Ok(()),
            Ok(None) => {}
            Err(e) => break Err(e.to_string()),
        }
        match pieces.next() {
            Some(piece) => {
                decoder.room(piece.len()).extend_from_slice(piece);
                taken += piece.len();
            }
            None => break decoder.closed().map_err(|e| e.to_string()),
        }
    };
    let left_over = match ended {
        Ok(()) => decoder.buffered() + (total - taken),
        Err(_) => 0,
    };
    let answer = Outcome::Answer(Answer {
        status: head.status().as_u16(),
        headers: (head.headers().iter())
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect(),
        head_len,
        framing,
        keep_alive,
        body: frames.concat(),
        ended,
        left_over,
    });
    (answer, frames)
}

/// What a read answer must be, given the bytes it was read from.
fn check(bytes: &[u8], outcome: &Outcome, frames: &[Vec<u8>]) {
    let Outcome::Answer(answer) = outcome else {
        return;
    };
    let after = &bytes[answer.head_len..];
    let body = &answer.body;
    let status = StatusCode::from_u16(answer.status).unwrap();
    if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        assert_eq!(answer.framing, Framing::Done);
    }
    match answer.framing {
        Framing::Done => {
            assert!(body.is_empty(), "a body where none may be");
            assert_eq!(answer.left_over, after.len());
        }
        Framing::Length(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            assert_eq!(
                body[..],
                after[..n.min(after.len())],
                "a sized body is the bytes after the head"
            );
            assert_eq!(
                answer.ended.is_ok(),
                after.len() >= n,
                "a sized body ends at its length"
            );
            if answer.ended.is_ok() {
                assert_eq!(answer.left_over, after.len() - n);
            }
        }
        Framing::ToClose => {
            assert_eq!(
                body[..],
                after[..],
                "a body to the close is everything after the head"
            );
            assert!(answer.ended.is_ok());
            assert!(
                !answer.keep_alive,
                "a body framed by the close cannot leave the socket reusable"
            );
        }
        Framing::Chunked(_) => {
            // Each frame is a piece of the input, after the one before it.
            let mut at = 0;
            for frame in frames {
                let found = memchr::memmem::find(&after[at..], frame);
                let found = found.expect("a chunked frame that is not in the input");
                at += found + frame.len();
            }
            if answer.ended.is_ok() {
                assert!(answer.left_over <= after.len() - at);
            }
        }
    }
}

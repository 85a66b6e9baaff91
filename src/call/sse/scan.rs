//! Finds where complete Server-Sent Events end in a growing byte buffer.
//!
//! An event ends at an empty line; lines end in LF, CRLF or CR (WHATWG HTML
//! §9.2.5). The relay forwards only whole events, so a stream that breaks
//! mid-event never hands the client half a JSON object before the gateway's
//! final error event.

#[derive(Debug, Default)]
pub struct EventScanner {
    /// Bytes of the pending buffer already scanned.
    pos: usize,
    /// The current line has content (it is not, so far, an empty line).
    in_line: bool,
    /// The last byte was CR, so an LF next completes that line ending.
    after_cr: bool,
}

impl EventScanner {
    /// Scans new bytes at the end of `buf` and returns how many leading bytes
    /// hold only complete events (0 if none). The caller must then remove
    /// exactly that many bytes from the front of its buffer.
    pub fn scan(&mut self, buf: &[u8]) -> usize {
        let mut boundary = 0;
        let mut i = self.pos;
        while i < buf.len() {
            // Everything up to the next CR or LF is line content: one search
            // (memchr, SIMD) instead of a look at every byte of an event.
            let end = memchr::memchr2(b'\n', b'\r', &buf[i..]).map(|n| i + n);
            if end != Some(i) {
                self.in_line = true;
                self.after_cr = false;
            }
            let Some(at) = end else { break };
            let b = buf[at];
            if b == b'\n' && self.after_cr {
                self.after_cr = false;
            } else {
                self.after_cr = b == b'\r';
                if !self.in_line {
                    boundary = at + 1;
                }
                self.in_line = false;
            }
            i = at + 1;
        }
        self.pos = buf.len() - boundary;
        boundary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` one by one and returns the events as forwarded.
    fn run(chunks: &[&str]) -> Vec<String> {
        let mut s = EventScanner::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c.as_bytes());
            let n = s.scan(&buf);
            if n > 0 {
                out.push(String::from_utf8(buf.drain(..n).collect()).unwrap());
            }
        }
        out
    }

    #[test]
    fn whole_events_pass_at_once() {
        assert_eq!(run(&["data: a\n\ndata: b\n\n"]), ["data: a\n\ndata: b\n\n"]);
    }

    #[test]
    fn partial_event_waits_for_its_end() {
        assert_eq!(
            run(&["data: {\"a\"", ":1}\n", "\n", "data: x"]),
            ["data: {\"a\":1}\n\n"]
        );
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(run(&["data: a\r\n\r\n"]), ["data: a\r\n\r"]);
        assert_eq!(
            run(&["data: a\r\n\r", "\ndata: b\r\n\r\n"]),
            ["data: a\r\n\r", "\ndata: b\r\n\r"]
        );
        assert_eq!(run(&["data: a\r\r"]), ["data: a\r\r"]);
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        // "\r" then "\n" must not count as two line endings (an empty line).
        assert_eq!(
            run(&["data: a\r", "\ndata: b\n\n"]),
            ["data: a\r\ndata: b\n\n"]
        );
    }

    #[test]
    fn multi_line_events_and_comments() {
        assert_eq!(
            run(&[": keep-alive\n\n", "event: x\ndata: 1\ndata: 2\n\n"]),
            [": keep-alive\n\n", "event: x\ndata: 1\ndata: 2\n\n"]
        );
    }

    /// The scanner as first written, a byte at a time: the reference.
    fn reference(state: &mut (bool, bool), buf: &[u8], from: usize) -> usize {
        let (in_line, after_cr) = state;
        let mut boundary = 0;
        for (i, &b) in buf.iter().enumerate().skip(from) {
            match b {
                b'\n' if *after_cr => *after_cr = false,
                b'\n' | b'\r' => {
                    *after_cr = b == b'\r';
                    if !*in_line {
                        boundary = i + 1;
                    }
                    *in_line = false;
                }
                _ => {
                    *after_cr = false;
                    *in_line = true;
                }
            }
        }
        boundary
    }

    proptest::proptest! {
        #[test]
        fn finds_the_boundaries_a_byte_at_a_time_scan_finds(
            chunks in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(b"ab:\r\n".to_vec()), 0..12),
                1..8,
            )
        ) {
            let (mut fast, mut slow) = (EventScanner::default(), (false, false));
            let (mut buf, mut slow_pos) = (Vec::new(), 0);
            for chunk in chunks {
                buf.extend_from_slice(&chunk);
                let want = reference(&mut slow, &buf, slow_pos);
                slow_pos = buf.len() - want;
                proptest::prop_assert_eq!(fast.scan(&buf), want);
                buf.drain(..want);
            }
        }
    }

    #[test]
    fn byte_by_byte_matches_whole() {
        let text = "data: one\n\nid: 2\ndata: two\r\n\r\ndata: three\n\n";
        let chunks: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(run(&refs).concat(), text);
    }
}

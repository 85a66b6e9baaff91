//! Whole bodies checked to be UTF-8 before they are read as JSON (a request,
//! an answer, an SSE event's data). std's check costs about 0.44
//! instructions a byte of JSON; simdutf8 checks 32 bytes a step where the CPU
//! has AVX2 (picked at run time, with a fallback), and for a 64 KiB
//! `message/send` std's check was 23 % of the gateway's instructions
//! (bench/profile.md). Only whether the bytes are valid matters here: every
//! caller that gets `None` either skips the body or takes a path that names
//! the problem itself.

/// `bytes` as text, or `None` when they are not UTF-8.
pub fn text(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn accepts_exactly_what_std_accepts() {
        let mut samples: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"{\"a\":1}".to_vec(),
            "caf\u{e9} \u{1f600} \u{4e2d}".as_bytes().to_vec(),
            vec![0xff],
            vec![0xc3],                   // a truncated two-byte sequence
            vec![0xed, 0xa0, 0x80],       // a UTF-16 surrogate
            vec![0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
            vec![0xc0, 0xaf],             // an overlong '/'
        ];
        // Long inputs take the vector path: an error on either side of a
        // 32-byte step, and at the very end.
        for at in [0, 31, 32, 33, 63, 64, 1000, 4095] {
            let mut long = "x".repeat(4096).into_bytes();
            long[at] = 0x80;
            samples.push(long);
        }
        let mut cut = "\u{20ac}".repeat(2000).into_bytes();
        cut.pop();
        samples.push(cut);
        samples.push("\u{20ac}".repeat(2000).into_bytes());
        for bytes in &samples {
            assert_eq!(
                text(bytes),
                std::str::from_utf8(bytes).ok(),
                "{:?}",
                &bytes[..bytes.len().min(8)]
            );
        }
    }
}

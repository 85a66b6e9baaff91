//! How the targets that feed bytes in pieces (as reads deliver them) cut
//! their input: shared by `sse_scanning` and `agent_answer`.

/// `bytes` cut into the given lengths (each clipped to what is left), then
/// the remainder as the last piece.
pub fn cut<'a>(bytes: &'a [u8], lengths: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    for &len in lengths {
        let end = (at + usize::from(len)).min(bytes.len());
        out.push(&bytes[at..end]);
        at = end;
    }
    out.push(&bytes[at..]);
    out
}

//! The tokenizer the matcher applies to skills and messages alike: lower
//! case, split on non-alphanumerics, drop short words and stopwords, stem
//! (the exact rules are in the parent module's docs).

use std::borrow::Cow;

/// Words too common to say anything about a skill (lowercase, unstemmed).
/// One-letter words ("a", "i") are dropped by the length rule anyway.
pub const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "could",
    "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "let", "me", "my", "of", "on", "or", "our",
    "please", "she", "should", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "us", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "would", "you", "your",
];
use std::sync::LazyLock;

/// The tokenizer (see the module docs for the exact rules).
pub fn tokens(text: &str) -> Vec<String> {
    terms(&lowercase(text)).map(Cow::into_owned).collect()
}

/// Unicode lower case; ASCII text (most messages) by the byte-wise fast
/// path, which gives the same result for it.
pub(super) fn lowercase(text: &str) -> String {
    if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    }
}

/// The tokens of already lower-cased text, borrowed from it where stemming
/// only shortens a word (all rules but `ies` → `y`).
pub(super) fn terms(lower: &str) -> impl Iterator<Item = Cow<'_, str>> {
    words(lower).filter(|w| is_token(w)).map(stem)
}

/// Maximal runs of alphanumeric characters.
pub(super) fn words(lower: &str) -> impl Iterator<Item = &str> {
    lower.split(|c: char| !c.is_alphanumeric())
}

/// The non-empty [`words`] of ASCII text, found byte by byte (no UTF-8
/// decoding, and slices cut at ASCII bytes need no validation). A plain
/// index loop over a byte table: the `position` iterators it replaced cost
/// ~20 instructions a byte, most of a fleet call's matching.
pub(super) fn ascii_words(lower: &str) -> impl Iterator<Item = &str> {
    let bytes = lower.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !ALNUM[usize::from(bytes[i])] {
            i += 1;
        }
        if i == bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && ALNUM[usize::from(bytes[i])] {
            i += 1;
        }
        lower.get(start..i)
    })
}

/// `ALNUM[b]`: byte `b` is an ASCII letter or digit.
pub(super) static ALNUM: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    table
};

/// At least two characters and not a stopword.
pub(super) fn is_token(word: &str) -> bool {
    at_least_chars(word, 2) && !is_stopword(word)
}

/// Whether `s` has at least `n` characters (reads at most `n` of them).
pub(super) fn at_least_chars(s: &str, n: usize) -> bool {
    n == 0 || s.chars().nth(n - 1).is_some()
}

/// Which two-byte starts some term has, as a 65,536-bit set. Every rule of
/// [`stem`] keeps at least the first two characters of a word, so a word
/// whose first two bytes are not in the set cannot stem to a term.
#[derive(Debug, Clone, Default)]
pub(super) struct Starts(Vec<u64>);

impl Starts {
    pub(super) fn of<'a>(terms: impl Iterator<Item = &'a String>) -> Starts {
        let mut bits = vec![0u64; 1 << 10];
        for term in terms {
            if let Some(i) = Starts::index(term) {
                bits[i >> 6] |= 1 << (i & 63);
            }
        }
        Starts(bits)
    }

    fn index(word: &str) -> Option<usize> {
        match word.as_bytes() {
            [a, b, ..] => Some(usize::from(*a) << 8 | usize::from(*b)),
            _ => None,
        }
    }

    /// False only when no term starts like `word` (empty set: always false).
    pub(super) fn may_start(&self, word: &str) -> bool {
        Starts::index(word)
            .and_then(|i| self.0.get(i >> 6).map(|bits| bits >> (i & 63) & 1 == 1))
            .unwrap_or(false)
    }
}

/// Whether `word` is in [`STOPWORDS`]. Every stopword fits in 8 bytes, so
/// words are compared as integers: a message has hundreds of words, and
/// string comparisons (a `memcmp` call each) were most of its matching time.
pub(super) fn is_stopword(word: &str) -> bool {
    static KEYS: LazyLock<Vec<u64>> = LazyLock::new(|| {
        let mut keys: Vec<u64> = STOPWORDS.iter().filter_map(|w| word_key(w)).collect();
        keys.sort_unstable();
        keys
    });
    word_key(word).is_some_and(|key| KEYS.binary_search(&key).is_ok())
}

/// A word of at most 8 bytes as one integer. Tokens never contain NUL (it
/// is not alphanumeric), so the zero padding cannot make two words equal.
pub(super) fn word_key(word: &str) -> Option<u64> {
    let bytes = word.as_bytes();
    let mut key = [0u8; 8];
    key.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(u64::from_le_bytes(key))
}

/// Light suffix stemming (see the module docs).
pub(super) fn stem(word: &str) -> Cow<'_, str> {
    let out = strip_inflection(word);
    if !(out.ends_with('e') && at_least_chars(&out, 4)) {
        return out;
    }
    match out {
        Cow::Borrowed(s) => Cow::Borrowed(&s[..s.len() - 1]),
        Cow::Owned(mut s) => {
            s.pop();
            Cow::Owned(s)
        }
    }
}

/// The first matching inflection rule. Suffixes are ASCII, so byte slicing
/// at `word.len() - suffix.len()` is always on a char boundary.
pub(super) fn strip_inflection(word: &str) -> Cow<'_, str> {
    let cut = |n: usize| &word[..word.len() - n];
    let len_at_least = |n: usize| at_least_chars(word, n);
    if word.ends_with("ies") && len_at_least(5) {
        return Cow::Owned(format!("{}y", cut(3)));
    }
    if word.ends_with("ing") && len_at_least(6) {
        return Cow::Borrowed(undouble(cut(3)));
    }
    if word.ends_with("ed") && !word.ends_with("eed") && len_at_least(5) {
        return Cow::Borrowed(undouble(cut(2)));
    }
    if word.ends_with("es") && len_at_least(5) {
        let stem = cut(2);
        if ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|s| stem.ends_with(s))
        {
            return Cow::Borrowed(stem);
        }
    }
    if word.ends_with('s')
        && len_at_least(4)
        && !["ss", "us", "is"].iter().any(|s| word.ends_with(s))
    {
        return Cow::Borrowed(cut(1));
    }
    Cow::Borrowed(word)
}

/// `shipp` → `ship`: drops one of a doubled final ASCII consonant (not `l`,
/// `s`, `z`, which English doubles in base words) when ≥ 3 chars remain.
pub(super) fn undouble(stem: &str) -> &str {
    let mut chars = stem.chars().rev();
    let (last, prev) = (chars.next(), chars.next());
    let doubled = match (last, prev) {
        (Some(a), Some(b)) => a == b && a.is_ascii_lowercase() && !"aeiouylsz".contains(a),
        _ => false,
    };
    if doubled && at_least_chars(stem, 4) {
        &stem[..stem.len() - 1]
    } else {
        stem
    }
}

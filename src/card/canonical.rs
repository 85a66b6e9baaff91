//! RFC 8785 (JCS) canonical JSON: the bytes a card signature covers.
//!
//! serde_json_canonicalizer writes it (keys in UTF-16 code-unit order,
//! numbers as ECMAScript writes them, through ryu-js; only the escapes
//! RFC 8785 allows). What it does not do is bound the nesting: a card is
//! an agent's input, and `AgentExtension.params` may nest as deep as the
//! agent likes, so a value deeper than [`MAX_DEPTH`] is refused before it
//! is written (the official Python SDK refuses the same depth).

use serde_json::Value;

/// Containers open at once, the outermost counting 1.
pub const MAX_DEPTH: usize = 128;

/// Why a value has no canonical form here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("nesting exceeds the maximum depth of {MAX_DEPTH}")]
    TooDeep,
    #[error("cannot be written canonically: {0}")]
    Unwritable(String),
}

/// The canonical bytes of `value`.
pub fn jcs(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    if depth(value) > MAX_DEPTH {
        return Err(CanonicalError::TooDeep);
    }
    serde_json_canonicalizer::to_vec(value).map_err(|e| CanonicalError::Unwritable(e.to_string()))
}

/// The deepest nesting of containers in `value` (a scalar is 0), without
/// recursion: a value too deep for the stack is measured all the same.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut open: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((v, at)) = open.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        deepest = deepest.max(at);
        open.extend(children.map(|c| (c, at + 1)));
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        String::from_utf8(jcs(&value).unwrap()).unwrap()
    }

    /// RFC 8785 section 3.2.4: the sample input and its canonical form.
    #[test]
    fn the_rfcs_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let expected = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
        assert_eq!(canonical(input), expected);
    }

    /// RFC 8785 section 3.2.3: keys sorted by UTF-16 code units (the emoji,
    /// a surrogate pair, before U+FB33).
    #[test]
    fn keys_are_sorted_by_utf16_code_units() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let text = canonical(input);
        let positions: Vec<usize> = [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ]
        .iter()
        .map(|name| {
            text.find(name)
                .unwrap_or_else(|| panic!("{name} in {text}"))
        })
        .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(
            text.starts_with("{\"\\r\":\"Carriage Return\",\"1\":\"One\""),
            "{text}"
        );
    }

    /// RFC 8785 appendix B: IEEE 754 doubles and how JCS writes them.
    #[test]
    fn numbers_are_written_as_ecmascript_writes_them() {
        let vectors: [(u64, &str); 22] = [
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, expected) in vectors {
            let value = json!(f64::from_bits(bits));
            let written = String::from_utf8(jcs(&value).unwrap()).unwrap();
            assert_eq!(written, expected, "{bits:#018x}");
        }
    }

    #[test]
    fn nesting_beyond_the_bound_is_refused_without_recursion() {
        // Value::Array, not json!: the macro serializes its operand anew.
        let mut deep = json!(1);
        for _ in 0..MAX_DEPTH {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(depth(&deep), MAX_DEPTH);
        assert!(jcs(&deep).is_ok());
        let deeper = Value::Object([("params".to_string(), deep)].into_iter().collect());
        assert_eq!(jcs(&deeper), Err(CanonicalError::TooDeep));
        // Far deeper than any stack would take recursively.
        let mut abyss = Value::Null;
        for _ in 0..200_000 {
            abyss = Value::Array(vec![abyss]);
        }
        assert_eq!(depth(&abyss), 200_000);
        assert_eq!(jcs(&abyss), Err(CanonicalError::TooDeep));
        // Taken apart from the outside in: dropping it whole would recurse.
        while let Value::Array(mut items) = abyss {
            abyss = items.pop().unwrap_or(Value::Null);
        }
    }
}

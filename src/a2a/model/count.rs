//! A non-negative count (`historyLength`, `pageSize`). ProtoJSON writes
//! 32-bit integers as numbers and also accepts them as decimal strings.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u32);

const WHAT: &str = "must be a non-negative integer";

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CountVisitor)
    }
}

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Count, E> {
        u32::try_from(v)
            .map(Count)
            .map_err(|_| E::custom("must be a non-negative integer below 2^32"))
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<Count, E> {
        u64::try_from(v)
            .map_err(|_| E::custom(WHAT))
            .and_then(|v| self.visit_u64(v))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<Count, E> {
        // ProtoJSON allows an integral value written with an exponent.
        if v.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&v) {
            Ok(Count(v as u32))
        } else {
            Err(E::custom(WHAT))
        }
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Count, E> {
        v.parse::<u32>().map(Count).map_err(|_| E::custom(WHAT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_decimal_strings() {
        for (json, n) in [("0", 0), ("3", 3), (r#""7""#, 7), ("2e1", 20), ("5.0", 5)] {
            assert_eq!(
                serde_json::from_str::<Count>(json).unwrap(),
                Count(n),
                "{json}"
            );
        }
        for bad in [
            "-1",
            "1.5",
            r#""x""#,
            "true",
            "[1]",
            "4294967296",
            r#""-2""#,
        ] {
            let e = serde_json::from_str::<Count>(bad).unwrap_err().to_string();
            assert!(e.contains("non-negative integer"), "{bad}: {e}");
        }
    }
}

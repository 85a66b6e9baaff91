//! An open JSON object the gateway reads a few members of (`metadata`):
//! its members in order, values left as raw JSON. A name that repeats is
//! refused: JSON leaves duplicates undefined, and an agent that keeps the
//! other value would act on something other than what the gateway read
//! (a skill hint that authorization looked at).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::borrowed::Borrowed;

#[derive(Debug, Default)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    /// The member `name`'s raw value.
    pub fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The member `name` when it is a string.
    pub fn text(&self, name: &str) -> Option<Cow<'a, str>> {
        let raw = self.get(name)?;
        let text = serde_json::from_str::<Borrowed<'a>>(raw.get()).ok()?;
        Some(text.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        while let Some(Borrowed(key)) = map.next_key()? {
            if members.iter().any(|(k, _)| *k == key) {
                return Err(A::Error::custom(format_args!(
                    "member '{key}' appears twice"
                )));
            }
            let value = map.next_value()?;
            members.push((key, value));
        }
        Ok(Members(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_members_and_their_strings() {
        let m: Members<'_> = serde_json::from_str(r#"{"skillId":"a","n":1}"#).unwrap();
        assert_eq!(m.text("skillId").as_deref(), Some("a"));
        assert_eq!(m.text("n"), None);
        assert_eq!(m.get("n").map(RawValue::get), Some("1"));
        assert!(m.get("x").is_none());
    }

    #[test]
    fn refuses_a_repeated_name() {
        let e = serde_json::from_str::<Members<'_>>(r#"{"a":1,"a":2}"#).unwrap_err();
        assert!(e.to_string().contains("member 'a' appears twice"), "{e}");
    }
}

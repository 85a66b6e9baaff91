//! Strings borrowed from the body where they have no escapes. serde's
//! derive borrows a `Cow<str>` only when it is a field's whole type: an
//! `Option<Cow<str>>` field, a map key or `from_str::<Cow<str>>` is read
//! into a new `String`, an allocation and a copy each (five a
//! pass-through call, the message's text among them).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

/// A string, borrowed when it can be.
#[derive(Deserialize)]
pub struct Borrowed<'a>(#[serde(borrow)] pub Cow<'a, str>);

/// For `#[serde(deserialize_with)]` on an `Option<Cow<str>>` field.
pub fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Ok(Option::<Borrowed<'de>>::deserialize(d)?.map(|b| b.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder<'a> {
        #[serde(borrow, default, deserialize_with = "opt")]
        text: Option<Cow<'a, str>>,
    }

    #[test]
    fn borrows_unless_escaped() {
        let plain: Holder<'_> = serde_json::from_str(r#"{"text":"hi"}"#).unwrap();
        assert!(matches!(plain.text, Some(Cow::Borrowed("hi"))));
        let escaped: Holder<'_> = serde_json::from_str(r#"{"text":"a\nb"}"#).unwrap();
        assert!(matches!(escaped.text, Some(Cow::Owned(ref s)) if s == "a\nb"));
        let null: Holder<'_> = serde_json::from_str(r#"{"text":null}"#).unwrap();
        assert!(null.text.is_none());
        let absent: Holder<'_> = serde_json::from_str("{}").unwrap();
        assert!(absent.text.is_none());
        let e = serde_json::from_str::<Holder<'_>>(r#"{"text":7}"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("expected a string"), "{e}");
    }
}

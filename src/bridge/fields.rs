//! Small tools for walking JSON objects while translating: where we are
//! (for error messages), taking a member under its JSON or proto name, and
//! requiring a shape.

use serde_json::{Map, Value};

use super::{Result, Untranslatable};

pub type Obj = Map<String, Value>;

/// `at.name`, for messages that name the member.
pub fn at(at: &str, name: &str) -> String {
    format!("{at}.{name}")
}

/// `at[i]`.
pub fn item(at: &str, i: usize) -> String {
    format!("{at}[{i}]")
}

/// The object `value` is, or why not.
pub fn object(value: Value, at: &str) -> Result<Obj> {
    match value {
        Value::Object(obj) => Ok(obj),
        other => Err(Untranslatable::new(
            at,
            format!("must be an object, not {}", kind_of(&other)),
        )),
    }
}

/// The array `value` is, or why not.
pub fn array(value: Value, at: &str) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(Untranslatable::new(
            at,
            format!("must be an array, not {}", kind_of(&other)),
        )),
    }
}

/// Maps every item of the array member `name` (if present) with `f`.
pub fn map_list(
    obj: &mut Obj,
    name: &str,
    here: &str,
    f: impl Fn(Value, &str) -> Result<Value>,
) -> Result<()> {
    let Some(list) = obj.remove(name) else {
        return Ok(());
    };
    let path = at(here, name);
    let items = array(list, &path)?
        .into_iter()
        .enumerate()
        .map(|(i, v)| f(v, &item(&path, i)))
        .collect::<Result<Vec<_>>>()?;
    obj.insert(name.into(), Value::Array(items));
    Ok(())
}

/// Maps the member `name` (if present and not null) with `f`.
pub fn map_member(
    obj: &mut Obj,
    name: &str,
    here: &str,
    f: impl Fn(Value, &str) -> Result<Value>,
) -> Result<()> {
    match obj.remove(name) {
        None | Some(Value::Null) => Ok(()),
        Some(v) => {
            let mapped = f(v, &at(here, name))?;
            obj.insert(name.into(), mapped);
            Ok(())
        }
    }
}

/// Renames `from` to `to` when present (a value already under `to` wins:
/// a reader never sees both, the model refuses repeated members).
pub fn rename(obj: &mut Obj, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.entry(to.to_string()).or_insert(v);
    }
}

/// The string member `name`, if it is one.
pub fn text<'a>(obj: &'a Obj, name: &str) -> Option<&'a str> {
    obj.get(name).and_then(Value::as_str)
}

/// A required string member.
pub fn required_text(obj: &Obj, name: &str, here: &str) -> Result<String> {
    text(obj, name)
        .map(str::to_owned)
        .ok_or_else(|| Untranslatable::new(at(here, name), "is required and must be a string"))
}

pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

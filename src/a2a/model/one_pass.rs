//! A JSON-RPC request read in one serde pass: the envelope, and the typed
//! params as they go by when `method` comes before `params` (as every
//! official SDK writes it). Reading the envelope with `params` raw and the
//! params again scanned the message twice.
//!
//! This is only the fast way for a request that is fine. Whatever it does
//! not take as it is (an error of any kind, `params` before `method`, an
//! unknown method, a repeated member) gives `None`, and the caller reads
//! the request the two-pass way (`crate::a2a::jsonrpc::parse`, then
//! `super::read::params`), which accepts the same requests and words every
//! refusal.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::borrowed::Borrowed;
use super::params::Params;
use super::read::by_family;
use crate::a2a::{methods, Method};

/// A request that read without a fault.
#[derive(Debug)]
pub struct Request<'a> {
    /// `None` for a notification.
    pub id: Option<&'a RawValue>,
    pub method: &'static Method,
    pub params: Params<'a>,
}

/// Reads `text` as one JSON-RPC request, or `None` (see the header).
pub fn read(text: &str) -> Option<Request<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let request = (&mut de).deserialize_map(RequestVisitor).ok()?;
    de.end().ok()?;
    request.id.is_none_or(id_ok).then_some(request)
}

/// JSON-RPC's rule for `id`: a string, a number or `null`.
pub fn id_ok(id: &RawValue) -> bool {
    matches!(
        id.get().as_bytes().first(),
        Some(b'"' | b'-' | b'0'..=b'9' | b'n')
    )
}

struct RequestVisitor;

/// Stops the pass: the two-pass read says what is wrong, if anything.
fn stop<E: de::Error>() -> E {
    E::custom("read in two passes")
}

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut version = false;
        let mut id: Option<Option<&'de RawValue>> = None;
        let mut method: Option<&'static Method> = None;
        let mut params: Option<Params<'de>> = None;
        while let Some(Borrowed(key)) = map.next_key()? {
            match &*key {
                "jsonrpc" if !version => {
                    let raw: &RawValue = map.next_value()?;
                    if raw.get() != "\"2.0\"" {
                        return Err(stop());
                    }
                    version = true;
                }
                "id" if id.is_none() => id = Some(Some(map.next_value()?)),
                "method" if method.is_none() => {
                    let Borrowed(name) = map.next_value()?;
                    method = Some(methods::lookup(&name).ok_or_else(stop)?);
                }
                "params" if params.is_none() => {
                    let method = method.ok_or_else(stop)?;
                    params = Some(map.next_value_seed(ParamsSeed(method))?);
                }
                "jsonrpc" | "id" | "method" | "params" => return Err(stop()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (version, method) {
            (true, Some(method)) => Ok(Request {
                id: id.flatten(),
                method,
                params: params.unwrap_or(Params::Absent),
            }),
            _ => Err(stop()),
        }
    }
}

/// `params`: `null` reads as absent, an object as the method's params,
/// anything else stops the pass.
struct ParamsSeed(&'static Method);

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Params::Absent)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(ObjectSeed(self.0))
    }
}

/// The params object, read as its method's params type. An array would
/// read as a struct's fields in order, so only an object gets here.
struct ObjectSeed(&'static Method);

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        by_family(self.0, de::value::MapAccessDeserializer::new(map))
    }
}

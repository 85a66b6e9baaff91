//! Who wrote a message. 0.x writes `user`/`agent`; 1.0 writes the proto
//! enum's names, which ProtoJSON also allows as numbers (1, 2).

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, Visitor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Agent,
}

/// What the message says when a role is none of these.
pub const ROLE_SPELLINGS: &str = "user, agent, ROLE_USER, ROLE_AGENT";

impl Role {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "user" | "ROLE_USER" => Some(Role::User),
            "agent" | "ROLE_AGENT" => Some(Role::Agent),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RoleVisitor)
    }
}

struct RoleVisitor;

impl Visitor<'_> for RoleVisitor {
    type Value = Role;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {ROLE_SPELLINGS}")
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Role, E> {
        Role::from_name(v).ok_or_else(|| E::custom(format_args!("must be one of {ROLE_SPELLINGS}")))
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Role, E> {
        match v {
            1 => Ok(Role::User),
            2 => Ok(Role::Agent),
            _ => Err(E::custom(format_args!("must be one of {ROLE_SPELLINGS}"))),
        }
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<Role, E> {
        u64::try_from(v)
            .map_err(|_| E::custom(format_args!("must be one of {ROLE_SPELLINGS}")))
            .and_then(|v| self.visit_u64(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_and_number() {
        for (json, role) in [
            (r#""user""#, Role::User),
            (r#""ROLE_USER""#, Role::User),
            ("1", Role::User),
            (r#""agent""#, Role::Agent),
            (r#""ROLE_AGENT""#, Role::Agent),
            ("2", Role::Agent),
        ] {
            assert_eq!(serde_json::from_str::<Role>(json).unwrap(), role, "{json}");
        }
        for bad in [r#""boss""#, "0", "3", "-1", "true", r#""ROLE_UNSPECIFIED""#] {
            let e = serde_json::from_str::<Role>(bad).unwrap_err().to_string();
            assert!(
                e.contains("user, agent, ROLE_USER, ROLE_AGENT"),
                "{bad}: {e}"
            );
        }
    }
}

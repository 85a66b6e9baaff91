//! `[console]` (`crate::console`): whether the console is served on the admin listener, the
//! gateway's own schemes it asks credentials for, and how many recent
//! calls it keeps.

use serde::Deserialize;

/// The recent calls kept unless `recent_calls` says otherwise.
pub const DEFAULT_RECENT_CALLS: usize = 500;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSection {
    pub enabled: bool,
    /// Names of `[auth.schemes]`; empty: no credentials asked.
    pub auth: Vec<String>,
    pub recent_calls: usize,
}

impl Default for ConsoleSection {
    fn default() -> Self {
        ConsoleSection {
            enabled: true,
            auth: Vec::new(),
            recent_calls: DEFAULT_RECENT_CALLS,
        }
    }
}

/// The checked section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Console {
    pub enabled: bool,
    pub auth: Vec<String>,
    pub recent_calls: usize,
}

impl Default for Console {
    fn default() -> Self {
        let section = ConsoleSection::default();
        Console {
            enabled: section.enabled,
            auth: section.auth,
            recent_calls: section.recent_calls,
        }
    }
}

/// Checks `[console]` against the schemes `[auth]` defines (`schemes`:
/// `None` without `[auth]`).
pub fn console(
    section: &ConsoleSection,
    schemes: Option<&[String]>,
) -> Result<Console, Vec<(String, String)>> {
    let mut problems = Vec::new();
    if !(1..=100_000).contains(&section.recent_calls) {
        problems.push(("recent_calls".into(), "must be 1 to 100000".into()));
    }
    for (i, name) in section.auth.iter().enumerate() {
        let known = schemes.is_some_and(|s| s.contains(name));
        if !known {
            let why = match schemes {
                None => format!("names scheme \"{name}\", but there is no [auth] section"),
                Some(_) => format!("names scheme \"{name}\", which [auth.schemes] does not define"),
            };
            problems.push((format!("auth[{i}]"), why));
        }
    }
    match problems.is_empty() {
        true => Ok(Console {
            enabled: section.enabled,
            auth: section.auth.clone(),
            recent_calls: section.recent_calls,
        }),
        false => Err(problems),
    }
}

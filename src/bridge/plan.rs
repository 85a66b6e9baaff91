//! Whether a call passes through or is translated, and to what: the
//! agent's own JSON-RPC versions decide (from its card or the config).

use crate::a2a::dialect::Versions;
use crate::a2a::{Family, Version};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The agent speaks the client's version (or nothing is known of it):
    /// the client's bytes go as they are.
    Pass,
    /// Translate to this version and back.
    Translate(Version),
    /// The agent's versions cannot carry this call: -32004 with this text.
    Refuse(String),
}

/// The plan for a call of `family` in `client`'s version to `agent`, which
/// speaks `versions` over JSON-RPC. A translated call goes to the agent's
/// newest version.
pub fn plan(client: Version, family: Family, agent: &str, versions: Versions) -> Plan {
    if versions.is_empty() || versions.contains(client) {
        return Plan::Pass;
    }
    let target = [Version::V1_0, Version::V0_3, Version::V0_1]
        .into_iter()
        .find(|&v| versions.contains(v));
    let Some(target) = target else {
        return Plan::Pass;
    };
    if family == Family::ListTasks && target != Version::V1_0 {
        return Plan::Refuse(format!(
            "ListTasks: agent '{agent}' speaks A2A {}, which has no ListTasks over JSON-RPC",
            target.label()
        ));
    }
    if client == Version::V0_1 && !v01_has(family) {
        return Plan::Refuse(format!("{} has no A2A 0.1 form", family.label()));
    }
    if target == Version::V0_1 && !v01_has(family) {
        return Plan::Refuse(format!(
            "{}: agent '{agent}' speaks only A2A 0.1, which has no such operation",
            family.label()
        ));
    }
    Plan::Translate(target)
}

/// What 0.1 can express.
fn v01_has(family: Family) -> bool {
    use Family::*;
    matches!(
        family,
        Send | Stream | GetTask | CancelTask | Resubscribe | PushSet | PushGet
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speaks(versions: &[Version]) -> Versions {
        versions.iter().copied().collect()
    }

    #[test]
    fn the_clients_version_passes_and_others_go_to_the_newest() {
        use Version::*;
        let both = speaks(&[V0_3, V1_0]);
        assert_eq!(plan(V1_0, Family::Send, "a", both), Plan::Pass);
        assert_eq!(plan(V0_3, Family::Send, "a", both), Plan::Pass);
        assert_eq!(plan(V0_1, Family::Send, "a", both), Plan::Translate(V1_0));
        let old = speaks(&[V0_3]);
        assert_eq!(plan(V1_0, Family::Send, "a", old), Plan::Translate(V0_3));
        assert!(
            matches!(plan(V1_0, Family::ListTasks, "a", old), Plan::Refuse(m) if m.contains("0.3"))
        );
        let new = speaks(&[V1_0]);
        assert_eq!(plan(V0_3, Family::Stream, "a", new), Plan::Translate(V1_0));
        assert_eq!(
            plan(V0_3, Family::Send, "a", speaks(&[])),
            Plan::Pass,
            "unknown: as before"
        );
    }
}

//! Who may use which skill and method. With no rules, every authenticated
//! caller may use everything (authentication is the gate). With rules, the
//! default is deny: a call is allowed only when some rule names both the
//! caller and the target.

use serde_json::Value;

use super::config::{Authz, Rule};
use super::Identity;

/// What a call is about once routed.
pub struct Target<'a> {
    pub upstream: &'a str,
    /// The published skill, when routing chose one.
    pub skill: Option<&'a str>,
    /// The method family label ("send", "get_task", …).
    pub family: &'a str,
}

impl Authz {
    pub fn is_open(&self) -> bool {
        self.rules.is_empty()
    }

    /// `owned` says whether a published skill id belongs to the target's
    /// upstream: a call routed without a skill (a task follow-up, a path, the
    /// default) is allowed by a rule naming any skill of that upstream.
    pub fn allows(
        &self,
        who: &Identity,
        target: &Target<'_>,
        owned: impl Fn(&str) -> bool,
    ) -> bool {
        self.is_open()
            || self
                .rules
                .iter()
                .any(|r| names_caller(r, who) && names_target(r, target, &owned))
    }
}

fn names_caller(rule: &Rule, who: &Identity) -> bool {
    let subject = rule.subjects.iter().any(|s| s == "*" || *s == who.subject);
    let scope = rule.scopes.iter().any(|s| who.scopes.contains(s));
    let claims = !rule.claims.is_empty()
        && rule
            .claims
            .iter()
            .all(|(k, v)| claim_holds(who.claims.get(k), v));
    subject || scope || claims
}

/// A string claim equal to `want`, or an array claim containing it.
fn claim_holds(claim: Option<&Value>, want: &str) -> bool {
    match claim {
        Some(Value::String(s)) => s == want,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(want)),
        Some(Value::Bool(b)) => b.to_string() == want,
        Some(Value::Number(n)) => n.to_string() == want,
        _ => false,
    }
}

fn names_target(rule: &Rule, target: &Target<'_>, owned: &impl Fn(&str) -> bool) -> bool {
    let method = rule.methods.iter().any(|m| m == "*" || m == target.family);
    let upstream = rule
        .upstreams
        .iter()
        .any(|u| u == "*" || u == target.upstream);
    let skill = rule.skills.iter().any(|s| {
        s == "*"
            || match target.skill {
                Some(chosen) => s == chosen,
                None => owned(s),
            }
    });
    method && (upstream || skill)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn who(subject: &str, scopes: &[&str], claims: Value) -> Identity {
        let claims: Map<String, Value> = claims.as_object().cloned().unwrap_or_default();
        Identity {
            subject: subject.into(),
            scheme: "t".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims: std::sync::Arc::new(claims),
        }
    }

    fn rule(
        subjects: &[&str],
        scopes: &[&str],
        claims: &[(&str, &str)],
        skills: &[&str],
        upstreams: &[&str],
        methods: &[&str],
    ) -> Rule {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        Rule {
            subjects: v(subjects),
            scopes: v(scopes),
            claims: claims
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            skills: v(skills),
            upstreams: v(upstreams),
            methods: v(methods),
        }
    }

    fn target<'a>(upstream: &'a str, skill: Option<&'a str>, family: &'a str) -> Target<'a> {
        Target {
            upstream,
            skill,
            family,
        }
    }

    #[test]
    fn no_rules_allows_every_authenticated_caller() {
        assert!(Authz::default().allows(
            &who("x", &[], json!({})),
            &target("a", None, "send"),
            |_| false
        ));
    }

    #[test]
    fn rules_deny_by_default_and_allow_what_they_name() {
        let authz = Authz {
            rules: vec![
                rule(
                    &["alice"],
                    &[],
                    &[],
                    &["book-flight"],
                    &[],
                    &["send", "get_task"],
                ),
                rule(&[], &["weather:read"], &[], &[], &["weather"], &["*"]),
                rule(
                    &[],
                    &[],
                    &[("team", "ops"), ("tier", "gold")],
                    &["*"],
                    &[],
                    &["get_task"],
                ),
            ],
        };
        let alice = who("alice", &[], json!({}));
        let owns_flight = |s: &str| s == "book-flight";
        assert!(authz.allows(
            &alice,
            &target("travel", Some("book-flight"), "send"),
            owns_flight
        ));
        assert!(!authz.allows(
            &alice,
            &target("travel", Some("book-flight"), "stream"),
            owns_flight
        ));
        assert!(!authz.allows(
            &alice,
            &target("travel", Some("find-hotel"), "send"),
            owns_flight
        ));
        // A follow-up routed by affinity: allowed through the upstream's skill.
        assert!(authz.allows(&alice, &target("travel", None, "get_task"), owns_flight));
        assert!(!authz.allows(&alice, &target("weather", None, "get_task"), |_| false));
        let reader = who("bot", &["weather:read"], json!({}));
        assert!(authz.allows(
            &reader,
            &target("weather", Some("forecast"), "stream"),
            |_| false
        ));
        assert!(!authz.allows(
            &reader,
            &target("travel", Some("book-flight"), "send"),
            owns_flight
        ));
        let ops = who("carol", &[], json!({"team": "ops", "tier": "gold"}));
        assert!(authz.allows(&ops, &target("travel", None, "get_task"), |_| false));
        let half = who("dan", &[], json!({"team": "ops"}));
        assert!(!authz.allows(&half, &target("travel", None, "get_task"), |_| false));
        let listed = who("erin", &[], json!({"team": ["dev", "ops"], "tier": "gold"}));
        assert!(authz.allows(&listed, &target("travel", None, "get_task"), |_| false));
    }
}

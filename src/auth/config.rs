//! `[auth]` and `[authz]`: the security schemes the gateway enforces *and*
//! publishes (one source of truth), which alternatives a caller may satisfy,
//! and who may use which skill and method.

mod schemes;
mod sections;
mod settings;

pub use sections::{
    ApiKeyEntry, AuthSection, AuthzSection, BasicUserEntry, RuleSection, SchemeSection,
};
pub use settings::{Auth, Authz, KeyLocation, Rule, Scheme, SchemeKind};

use crate::cidr::{problem, Problems};
use schemes::scheme;

/// Validates `[auth]`; problems are `(path under auth, message)`.
pub fn auth(section: &AuthSection) -> Result<Auth, Problems> {
    let mut problems = Vec::new();
    if section.schemes.is_empty() {
        problems.push(problem("schemes", "at least one scheme is required"));
    }
    let schemes: Vec<Scheme> = section
        .schemes
        .iter()
        .filter_map(|(name, s)| scheme(name, s, &mut problems))
        .collect();
    let alternatives = alternatives(section, &schemes, &mut problems);
    match problems.is_empty() {
        true => Ok(Auth {
            schemes,
            alternatives,
            public_card: section.public_card,
        }),
        false => Err(problems),
    }
}

fn alternatives(
    section: &AuthSection,
    schemes: &[Scheme],
    problems: &mut Problems,
) -> Vec<Vec<(usize, Vec<String>)>> {
    let Some(listed) = &section.security else {
        return (0..schemes.len()).map(|i| vec![(i, Vec::new())]).collect();
    };
    if listed.is_empty() {
        problems.push(problem(
            "security",
            "an empty list would let nobody in; remove it to accept each scheme alone",
        ));
    }
    let mut out = Vec::new();
    for (i, alt) in listed.iter().enumerate() {
        if alt.is_empty() {
            problems.push(problem(
                format!("security[{i}]"),
                "an empty alternative would let everybody in",
            ));
            continue;
        }
        let mut resolved = Vec::new();
        for (name, scopes) in alt {
            match schemes.iter().position(|s| &s.name == name) {
                Some(idx) => resolved.push((idx, scopes.clone())),
                None => problems.push(problem(
                    format!("security[{i}].{name}"),
                    "names no scheme in auth.schemes",
                )),
            }
        }
        out.push(resolved);
    }
    out
}

/// Validates `[authz]`: a rule that names no caller or no target would
/// silently allow nothing (or, worse, be read as "everyone"), so it is refused.
pub fn authz(section: &AuthzSection, upstreams: &[String]) -> Result<Authz, Problems> {
    let mut problems = Vec::new();
    for (i, r) in section.rules.iter().enumerate() {
        check_rule(r, i, upstreams, &mut problems);
    }
    let rules = section
        .rules
        .iter()
        .map(|r| Rule {
            subjects: r.subjects.clone(),
            scopes: r.scopes.clone(),
            claims: r.claims.clone(),
            skills: r.skills.clone(),
            upstreams: r.upstreams.clone(),
            methods: r.methods.clone(),
        })
        .collect();
    match problems.is_empty() {
        true => Ok(Authz { rules }),
        false => Err(problems),
    }
}

/// What is wrong with the `i`th rule `r`, pushed onto `problems`.
fn check_rule(r: &RuleSection, i: usize, upstreams: &[String], problems: &mut Problems) {
    let at = |f: &str| format!("rules[{i}].{f}");
    if r.subjects.is_empty() && r.scopes.is_empty() && r.claims.is_empty() {
        problems.push(problem(at("subjects"), "a rule must name its callers: subjects, scopes or claims (\"*\" in subjects for every authenticated caller)"));
    }
    if r.skills.is_empty() && r.upstreams.is_empty() {
        problems.push(problem(
            at("skills"),
            "a rule must name what it allows: skills or upstreams (\"*\" for all)",
        ));
    }
    if r.methods.is_empty() {
        problems.push(problem(
            at("methods"),
            "a rule must name its methods (\"*\" for all)",
        ));
    }
    for m in r
        .methods
        .iter()
        .filter(|m| *m != "*" && !crate::a2a::Family::LABELS.contains(&m.as_str()))
    {
        problems.push((
            at("methods"),
            format!(
                "unknown method family '{m}'; use {} or \"*\"",
                crate::a2a::Family::LABELS.join(", ")
            ),
        ));
    }
    for u in r
        .upstreams
        .iter()
        .filter(|u| *u != "*" && !upstreams.contains(u))
    {
        problems.push((
            at("upstreams"),
            format!("names no configured upstream: '{u}'"),
        ));
    }
}

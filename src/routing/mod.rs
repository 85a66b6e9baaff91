//! Which upstream takes a request. `Router::resolve` is the one decision,
//! applying the rules in order:
//!
//! 0. path — `POST /agents/{name}` addresses one agent and always goes there
//!    (the per-agent card points clients at that path, so everything sent
//!    there is meant for that agent);
//! 1. affinity — a task (or context) already owned by an upstream goes
//!    back to it; an unknown task id the call requires is resolved by
//!    probing the upstreams (`Decision::Probe`);
//! 2. hint — the skill header or `skillId` in metadata; an unknown skill is
//!    an error, never a silent fallback;
//! 3. match — the message text scored against the published skills;
//! 4. default — the configured default upstream (or the only one);
//!    otherwise an error listing the routable skills.

pub mod affinity;
pub mod fleet;
pub mod matcher;

pub mod request;

use std::collections::HashMap;
use std::sync::Arc;

use http::HeaderMap;

use crate::a2a::model::Params;
use crate::a2a::{Family, Method};
use crate::config;
use crate::http::error::GatewayError;
use crate::routing::fleet::FleetView;
use affinity::Affinity;

/// The rule that picked the upstream (a bounded label for logs and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Path,
    Affinity,
    Hint,
    Match,
    Default,
}

// Every rule has its own kept metrics handle.
const _: () = assert!(Rule::COUNT < crate::telemetry::metrics::ROUTING_SLOTS);

impl Rule {
    pub const ALL: [Rule; 5] = [
        Rule::Path,
        Rule::Affinity,
        Rule::Hint,
        Rule::Match,
        Rule::Default,
    ];
    /// How many rules there are (`index` is below it; a test checks).
    pub const COUNT: usize = Rule::ALL.len();

    /// A dense index below `COUNT`, for per-rule tables.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn label(self) -> &'static str {
        match self {
            Rule::Path => "path",
            Rule::Affinity => "affinity",
            Rule::Hint => "hint",
            Rule::Match => "match",
            Rule::Default => "default",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Index into the gateway's upstream list.
    pub upstream: usize,
    pub rule: Rule,
    /// The published skill, when the rule chose one.
    pub skill: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Route(Route),
    /// The request continues a task nobody here knows: ask the upstreams.
    Probe {
        task: String,
    },
}

/// What routing may look at. Params are already parsed and validated.
pub struct RouteInput<'a> {
    pub method: &'a Method,
    pub params: &'a Params<'a>,
    pub headers: &'a HeaderMap,
    /// The upstream named by an `/agents/{name}` path.
    pub path_upstream: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Router {
    names: Vec<Arc<str>>,
    /// Name → index: a call's lookups do not scan the fleet.
    by_name: HashMap<Arc<str>, usize, foldhash::fast::RandomState>,
    default: Option<usize>,
    settings: config::Routing,
}

impl Router {
    pub fn new(upstreams: &[config::Upstream], routing: &config::Routing) -> Self {
        let names: Vec<Arc<str>> = upstreams
            .iter()
            .map(|u| Arc::from(u.name.as_str()))
            .collect();
        let by_name: HashMap<_, _, _> = (names.iter().cloned()).zip(0..).collect();
        let default = match names.len() {
            1 => Some(0),
            _ => (routing.default_upstream.as_deref()).and_then(|d| by_name.get(d).copied()),
        };
        Self {
            names,
            by_name,
            default,
            settings: routing.clone(),
        }
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn name(&self, index: usize) -> Arc<str> {
        self.names
            .get(index)
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    pub fn settings(&self) -> &config::Routing {
        &self.settings
    }

    pub fn resolve(
        &self,
        input: &RouteInput<'_>,
        view: &FleetView,
        affinity: &Affinity,
    ) -> Result<Decision, GatewayError> {
        let route = |upstream, rule, skill| {
            Ok(Decision::Route(Route {
                upstream,
                rule,
                skill,
            }))
        };
        if let Some(upstream) = input.path_upstream {
            return route(upstream, Rule::Path, None);
        }
        if let Some(task) = request::task_ref(input.method, input.params) {
            if let Some(owner) = affinity.task_owner(&task.id).and_then(|n| self.index(&n)) {
                return route(owner, Rule::Affinity, None);
            }
            // With one upstream there is nobody else to ask.
            if task.must_exist && self.names.len() > 1 {
                return Ok(Decision::Probe { task: task.id });
            }
        }
        if let Some(context) = request::context_ref(input.method, input.params) {
            if let Some(owner) = affinity
                .context_owner(&context)
                .and_then(|n| self.index(&n))
            {
                return route(owner, Rule::Affinity, None);
            }
        }
        if let Some(hinted) = self.by_hint(input, view) {
            return hinted.map(Decision::Route);
        }
        if let Some(matched) = self.by_match(input, view) {
            return Ok(Decision::Route(matched));
        }
        match self.default {
            Some(upstream) => route(upstream, Rule::Default, None),
            None => Err(GatewayError::NoRoute {
                reason: "no rule placed it: name a skill (header or metadata skillId), send to /agents/{name}, or set routing.default_upstream".into(),
                upstreams: self.names.iter().map(|n| n.to_string()).collect(),
                skills: view.skill_ids(),
            }),
        }
    }

    /// Rule 2: the skill the call names, if it names one; an unknown skill
    /// is an error, never a silent fallback.
    fn by_hint(
        &self,
        input: &RouteInput<'_>,
        view: &FleetView,
    ) -> Option<Result<Route, GatewayError>> {
        let s = &self.settings;
        let skill = request::skill_hint(
            input.headers,
            &s.skill_header,
            &s.metadata_keys,
            input.params,
        )?;
        let owner = view.skill(&skill).and_then(|k| self.index(&k.upstream));
        Some(match owner {
            Some(upstream) => Ok(Route {
                upstream,
                rule: Rule::Hint,
                skill: Some(skill),
            }),
            None => Err(GatewayError::UnknownSkill {
                skill,
                skills: view.skill_ids(),
            }),
        })
    }

    /// Rule 3: the message's text scored against the published skills.
    fn by_match(&self, input: &RouteInput<'_>, view: &FleetView) -> Option<Route> {
        // With one upstream the default takes the call whatever the text
        // says: scoring it would only cost time (a sixth of a send's CPU).
        let s = &self.settings;
        let several = self.names.len() > 1;
        if !several
            || !s.matcher.enabled
            || !matches!(input.method.family, Family::Send | Family::Stream)
        {
            return None;
        }
        let pick =
            request::message_text(input.params).and_then(|t| view.matcher.pick(&t, &s.matcher))?;
        let upstream = self.index(&pick.upstream)?;
        Some(Route {
            upstream,
            rule: Rule::Match,
            skill: Some(pick.skill_id),
        })
    }
}

#[cfg(test)]
mod tests;

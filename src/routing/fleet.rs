//! The fleet as the gateway currently sees it: which upstream cards are
//! fresh, the skills they publish, the matcher over them, and who owns
//! which task. Rebuilt (and swapped in atomically) only when a card
//! changes or goes stale, so requests read it without locking.

use std::sync::Arc;

use arc_swap::ArcSwap;
use moka::sync::Cache;
use serde_json::Value;

use crate::a2a::dialect::{Binding, Interface, Versions};
use crate::a2a::Version;
use crate::card::aggregate::{self, UpstreamCard};
use crate::card::inherit;
use crate::card::published::{self, Rendered};
use crate::card::skills::PublishedSkill;
use crate::card::store::{CardStore, FetchedCard};
use crate::config::{Config, ReadyWhen};
use crate::routing::affinity::Affinity;
use crate::routing::matcher::Matcher;
use crate::upstream::Upstream;

/// Positions in a view's lists by name, built with the view.
type Index = std::collections::HashMap<String, usize, foldhash::fast::RandomState>;

/// An immutable snapshot; a new one replaces it when cards change. Cards
/// and skills are found by name through maps built here, once per view:
/// a lookup costs the same in a fleet of one agent and of thousands.
pub struct FleetView {
    pub generation: u64,
    /// Fresh cards, in config order.
    pub cards: Vec<(String, Arc<FetchedCard>)>,
    pub skills: Vec<PublishedSkill>,
    pub matcher: Matcher,
    card_index: Index,
    skill_index: Index,
}

impl FleetView {
    pub fn new(
        generation: u64,
        cards: Vec<(String, Arc<FetchedCard>)>,
        skills: Vec<PublishedSkill>,
        matcher: Matcher,
    ) -> Self {
        let index = |names: &mut dyn Iterator<Item = &String>| -> Index {
            let mut index = Index::default();
            for (i, name) in names.enumerate() {
                // The first of a name wins, as a scan in order would find.
                index.entry(name.clone()).or_insert(i);
            }
            index
        };
        let card_index = index(&mut cards.iter().map(|(name, _)| name));
        let skill_index = index(&mut skills.iter().map(|s| &s.id));
        Self {
            generation,
            cards,
            skills,
            matcher,
            card_index,
            skill_index,
        }
    }

    fn empty() -> Self {
        Self::new(0, Vec::new(), Vec::new(), Matcher::new(&[]))
    }

    pub fn skill(&self, id: &str) -> Option<&PublishedSkill> {
        self.skills.get(*self.skill_index.get(id)?)
    }

    pub fn skill_ids(&self) -> Vec<String> {
        self.skills.iter().map(|s| s.id.clone()).collect()
    }

    pub fn card_of(&self, upstream: &str) -> Option<&Arc<FetchedCard>> {
        let (_, card) = self.cards.get(*self.card_index.get(upstream)?)?;
        Some(card)
    }

    /// Whether the upstream's card says it streams; `None` without a card.
    pub fn can_stream(&self, upstream: &str) -> Option<bool> {
        Some(self.card_of(upstream)?.streaming)
    }

    /// Whether the upstream's card says it sends push notifications;
    /// `None` without a card.
    pub fn can_push(&self, upstream: &str) -> Option<bool> {
        Some(self.card_of(upstream)?.push_notifications)
    }
}

/// What an upstream speaks, and who says so: the config's
/// `protocol_versions` (over JSON-RPC at its URL) win over its card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speaks {
    pub interfaces: Vec<Interface>,
    /// "config", "card", or "unknown" (no card yet, nothing configured).
    pub from: &'static str,
}

impl FleetView {
    pub fn speaks(&self, upstream: &crate::config::Upstream) -> Speaks {
        if let Some(versions) = &upstream.protocol_versions {
            let interfaces = versions
                .iter()
                .map(|&version| Interface {
                    binding: Binding::JsonRpc,
                    version,
                    url: upstream.url.to_string(),
                    tenant: None,
                })
                .collect();
            return Speaks {
                interfaces,
                from: "config",
            };
        }
        match self.card_of(&upstream.name) {
            Some(card) => Speaks {
                interfaces: card.interfaces.clone(),
                from: "card",
            },
            None => Speaks {
                interfaces: Vec::new(),
                from: "unknown",
            },
        }
    }
}

impl FleetView {
    /// The versions `upstream` speaks over JSON-RPC: the config's, else its
    /// card's; none when nothing is known yet.
    pub fn rpc_versions(&self, upstream: &crate::config::Upstream) -> Versions {
        match &upstream.protocol_versions {
            Some(versions) => versions.iter().copied().collect(),
            None => self
                .card_of(&upstream.name)
                .map_or_else(Versions::default, |c| c.rpc_versions),
        }
    }

    /// Which of `upstream`'s interfaces a call made over `binding` in
    /// `version` goes to (`crate::bridge::door`). Versions in the config
    /// are JSON-RPC ones and decide alone; without a card, JSON-RPC.
    pub fn agent_binding(
        &self,
        upstream: &crate::config::Upstream,
        binding: Binding,
        version: Version,
    ) -> crate::bridge::agent_binding::AgentBinding {
        use crate::bridge::agent_binding::{choose, AgentBinding};
        if upstream.protocol_versions.is_some() {
            return AgentBinding::JsonRpc(self.rpc_versions(upstream));
        }
        match self.card_of(&upstream.name) {
            Some(card) => choose(binding, version, &card.interfaces, card.rpc_versions),
            None => AgentBinding::JsonRpc(Versions::default()),
        }
    }
}

impl Speaks {
    /// The versions spoken over each binding, bindings and versions in a
    /// fixed order: `{"JSONRPC": ["1.0", "0.3"]}`.
    pub fn versions(&self) -> Vec<(Binding, Vec<&'static str>)> {
        let mut by_binding: Vec<(Binding, Vec<&'static str>)> = Vec::new();
        let mut all: Vec<(Binding, Version)> = self
            .interfaces
            .iter()
            .map(|i| (i.binding, i.version))
            .collect();
        all.sort_by_key(|(b, v)| (*b, std::cmp::Reverse(v.index())));
        all.dedup();
        for (binding, version) in all {
            match by_binding.last_mut() {
                Some((b, versions)) if *b == binding => versions.push(version.label()),
                _ => by_binding.push((binding, vec![version.label()])),
            }
        }
        by_binding
    }
}

pub struct Fleet {
    pub store: CardStore,
    pub affinity: Affinity,
    view: ArcSwap<FleetView>,
    /// Published card bytes per (generation, endpoint): the endpoint comes
    /// from the Host header when no public URL is configured.
    rendered: Cache<(u64, String), Arc<Rendered>>,
    /// Each agent's card as published at `/agents/{name}`, per (generation,
    /// name, endpoint): rewritten, and signed, once, not per request. Bounded
    /// by bytes, so a large fleet's cards do not hold memory without end.
    agent_rendered: Cache<(u64, String, String), Arc<Rendered>>,
}

/// What the per-agent cards kept may weigh in all.
const AGENT_CARDS_BYTES: u64 = 16 << 20;

impl Fleet {
    pub fn new(config: &Config, metrics: Arc<crate::telemetry::metrics::Metrics>) -> Self {
        Self {
            store: CardStore::new(&config.card_refresh, metrics),
            affinity: Affinity::new(
                config.routing.affinity_capacity,
                config.routing.affinity_ttl,
            ),
            view: ArcSwap::from_pointee(FleetView::empty()),
            rendered: Cache::new(64),
            agent_rendered: Cache::builder()
                .weigher(|_, r: &Arc<Rendered>| u32::try_from(r.body.len()).unwrap_or(u32::MAX))
                .max_capacity(AGENT_CARDS_BYTES)
                .build(),
        }
    }

    pub fn view(&self) -> Arc<FleetView> {
        self.view.load_full()
    }

    /// One refresh round: fetch every card, then rebuild if anything changed
    /// or expired.
    pub async fn refresh(&self, upstreams: &[Arc<Upstream>], config: &Config) {
        let signatures: Vec<_> = config.upstreams.iter().map(|u| &u.card_signature).collect();
        self.store.refresh_all(upstreams, &signatures).await;
        self.rebuild_if_changed(config);
    }

    /// After a config reload: skill policies, the card's identity and the
    /// upstream set may have changed even though no card did.
    pub fn reconfigure(&self, config: &Config) {
        self.rebuild(config, true);
    }

    pub fn rebuild_if_changed(&self, config: &Config) {
        self.rebuild(config, false);
    }

    fn rebuild(&self, config: &Config, force: bool) {
        let fresh: Vec<(String, Arc<FetchedCard>)> = config
            .upstreams
            .iter()
            .filter_map(|u| self.store.get(&u.name).map(|c| (u.name.clone(), c)))
            .collect();
        let current = self.view.load();
        let same = fresh.len() == current.cards.len()
            && fresh
                .iter()
                .zip(&current.cards)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y));
        if same && current.generation > 0 && !force {
            return;
        }
        let skills = aggregate::aggregate(&config.card, &inputs(config, &fresh), "").skills;
        let matcher = Matcher::new(&skills);
        // A refresh that fetched the same cards again makes a new view (the
        // cards' ages changed) but is no news to an operator.
        let news = force
            || fresh.len() != current.cards.len()
            || (fresh.iter().zip(&current.cards))
                .any(|((a, x), (b, y))| a != b || x.card != y.card);
        if news {
            tracing::info!(
                cards = fresh.len(),
                skills = skills.len(),
                "fleet view updated"
            );
        } else {
            tracing::debug!(cards = fresh.len(), "fleet view refreshed, cards unchanged");
        }
        let generation = current.generation + 1;
        (self.view).store(Arc::new(FleetView::new(generation, fresh, skills, matcher)));
    }

    /// The published card for clients reaching the gateway at `endpoint`.
    pub fn published(&self, config: &Config, endpoint: &str) -> Arc<Rendered> {
        let view = self.view();
        let key = (view.generation, endpoint.to_string());
        self.rendered.get_with(key, || {
            let mut card =
                aggregate::aggregate(&config.card, &inputs(config, &view.cards), endpoint).card;
            let agents: Vec<&Value> = view.cards.iter().map(|(_, c)| &c.card).collect();
            inherit::apply(&mut card, &agents, config);
            if let Some(signing) = &config.card.signing {
                crate::card::sign::sign(
                    &mut card,
                    signing,
                    &crate::card::sign::jku(signing, endpoint),
                );
            }
            Arc::new(published::render(&card))
        })
    }

    /// Agent `name`'s card for clients reaching it at `endpoint`, made by
    /// `build` the first time in this view. A config reload or a changed
    /// card makes a new view, so nothing kept outlives what it was made of.
    pub fn agent_card(
        &self,
        view: &FleetView,
        name: &str,
        endpoint: &str,
        build: impl FnOnce() -> Value,
    ) -> Arc<Rendered> {
        let key = (view.generation, name.to_string(), endpoint.to_string());
        (self.agent_rendered).get_with(key, || Arc::new(published::render(&build())))
    }

    pub fn ready(&self, config: &Config) -> bool {
        let view = self.view();
        match config.card_refresh.ready_when {
            ReadyWhen::Any => !view.cards.is_empty(),
            ReadyWhen::All => view.cards.len() == config.upstreams.len(),
        }
    }
}

fn inputs<'a>(
    config: &'a Config,
    cards: &'a [(String, Arc<FetchedCard>)],
) -> Vec<UpstreamCard<'a>> {
    cards
        .iter()
        .filter_map(|(name, card)| {
            let policy = &config.upstreams.iter().find(|u| &u.name == name)?.skills;
            Some(UpstreamCard {
                upstream: name,
                card: &card.card,
                policy,
            })
        })
        .collect()
}

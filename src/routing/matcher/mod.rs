//! Skill matching: which upstream should take a message that carries no
//! routing hint. Pure (no I/O, no clock, no randomness); build a [`Matcher`]
//! once per card change and call [`Matcher::pick`] per message.
//!
//! # Rules
//!
//! **Tokenizer** ([`tokens`]), applied identically to skills and messages:
//! 1. lowercase the whole text (Unicode `to_lowercase`);
//! 2. split on every character that is not alphanumeric (Unicode), so
//!    `"what's"` gives `what` + `s` and `"Übersetzung"` stays one token;
//! 3. drop tokens shorter than 2 characters and tokens in a small English
//!    stopword list ([`STOPWORDS`], checked before stemming);
//! 4. light suffix stemming, first matching rule only, where "remain" counts
//!    the characters left after stripping:
//!    - `ies` → `y` when ≥ 2 remain (`cities` → `city`);
//!    - `ing` stripped when ≥ 3 remain (`booking` → `book`);
//!    - `ed` stripped when ≥ 3 remain and not after `e` (`booked` → `book`,
//!      `need` kept);
//!    - after `ing`/`ed`, a doubled final consonant other than `l`, `s`, `z`
//!      is undoubled when ≥ 3 remain (`shipping` → `ship`);
//!    - `es` stripped when ≥ 3 remain and it follows `s`, `x`, `z`, `ch` or
//!      `sh` (`searches` → `search`, `boxes` → `box`);
//!    - `s` stripped when ≥ 3 remain and not after `s`, `u` or `i`
//!      (`flights` → `flight`; `class`, `status`, `analysis` kept);
//!
//!    then a final `e` is dropped when ≥ 3 remain, so `translate`,
//!    `translates`, `translated` and `translating` all become `translat`.
//!
//! **Documents**: one BM25 document per skill: name ×2, description ×1,
//! tags ×2, examples ×1 (the repetition weights name and tags higher). The
//! skill id is not indexed.
//!
//! **Scoring**: Okapi BM25 with k1 = 1.2, b = 0.75 and
//! IDF = ln(1 + (N − n + 0.5) / (n + 0.5)), always positive (N skills, n of
//! them containing the term). Each distinct query token counts once, so
//! repeating a word does not raise a score.
//!
//! **Decision** ([`Matcher::pick`]): routing is per upstream; an upstream's
//! score is its best skill's score (equal skills of one upstream: the
//! lexicographically smallest id is reported). The best upstream is picked
//! when matching is enabled, its score is > 0 and ≥ `min_score`, it is not
//! tied with the runner-up upstream (relative difference ≤ 1e-9 counts as a
//! tie) and it is ≥ (1 + `margin`) × the runner-up's score (0 when no other
//! upstream scores). Otherwise — also for empty text, no matching token or
//! no skills — there is no pick and routing falls through to the next rule.

use std::collections::HashMap;

use crate::card::skills::PublishedSkill;
use crate::config::MatchSettings;

mod tokens;

use tokens::*;
pub use tokens::{tokens, STOPWORDS};

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 document-length normalization.
const B: f64 = 0.75;
/// How often a skill's name is repeated in its document.
const NAME_WEIGHT: usize = 2;
/// How often a skill's tags are repeated in its document.
const TAG_WEIGHT: usize = 2;
/// Two upstream scores closer than this (relative) are a tie.
const TIE_EPSILON: f64 = 1e-9;

/// The chosen upstream and how confident the choice was.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub upstream: String,
    /// The upstream's best-scoring skill.
    pub skill_id: String,
    pub score: f64,
    /// The best score of any other upstream (0 when none scored).
    pub runner_up: f64,
}

/// A BM25 index over the published skills.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    /// Term → its rank and its (skill index, precomputed BM25 weight) list.
    /// The weight does not depend on the query because query tokens are
    /// deduplicated.
    postings: Postings,
    /// The first two bytes of every term in `postings`.
    starts: Starts,
    skills: Vec<SkillRef>,
    /// Distinct upstream names, sorted.
    upstreams: Vec<String>,
}

#[derive(Debug, Clone)]
struct SkillRef {
    id: String,
    /// Index into `Matcher::upstreams`.
    upstream: usize,
}

/// Looked up for words of every message: foldhash (seeded per process)
/// rather than SipHash, which was a fifth of the matching time. The keys
/// come from skill cards, so there is nothing for a client to flood.
type Postings = HashMap<String, Term, foldhash::fast::RandomState>;

/// One term's entry in the index.
#[derive(Debug, Clone)]
struct Term {
    /// The term's place among all terms in byte order. A message's hits are
    /// summed in this order, so that a score (a float sum) does not depend
    /// on word order; ranks compare as integers, words with a `memcmp`.
    rank: usize,
    /// (skill index, precomputed BM25 weight).
    postings: Vec<(usize, f64)>,
}

/// An upstream's best skill so far: (score, skill index).
type Best = Option<(f64, usize)>;

impl Matcher {
    pub fn new(skills: &[PublishedSkill]) -> Matcher {
        let mut upstreams: Vec<String> = skills.iter().map(|s| s.upstream.clone()).collect();
        upstreams.sort();
        upstreams.dedup();
        let refs = skills
            .iter()
            .map(|s| SkillRef {
                id: s.id.clone(),
                upstream: upstreams.binary_search(&s.upstream).unwrap_or(0),
            })
            .collect();
        let docs: Vec<Vec<String>> = skills.iter().map(document).collect();
        let postings = index(&docs);
        Matcher {
            starts: Starts::of(postings.keys()),
            postings,
            skills: refs,
            upstreams,
        }
    }

    /// The upstream to route `text` to, or None when not confident.
    pub fn pick(&self, text: &str, settings: &MatchSettings) -> Option<Pick> {
        if !settings.enabled {
            return None;
        }
        let scores = self.skill_scores(text);
        let bests = self.upstream_bests(&scores);
        let (winner, score, runner_up) = top_two(&bests)?;
        let tied = score - runner_up <= TIE_EPSILON * score;
        let confident = score >= settings.min_score && score >= (1.0 + settings.margin) * runner_up;
        if tied || !confident {
            return None;
        }
        let (_, skill) = bests[winner]?;
        Some(Pick {
            upstream: self.upstreams[winner].clone(),
            skill_id: self.skills[skill].id.clone(),
            score,
            runner_up,
        })
    }

    /// Every skill's score, best first (equal scores by skill id).
    pub fn scores(&self, text: &str) -> Vec<(String, f64)> {
        let scores = self.skill_scores(text);
        let mut out: Vec<(String, f64)> = self
            .skills
            .iter()
            .zip(scores)
            .map(|(s, score)| (s.id.clone(), score))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// BM25 score of every skill, in index order.
    fn skill_scores(&self, text: &str) -> Vec<f64> {
        let lower = lowercase(text);
        // Only words some skill uses can score, and most words of a message
        // are in no skill. Stemming keeps a word's first two bytes, so a
        // word whose first two bytes start no term is skipped before the
        // stopword check, stemming and lookup. The few words that are
        // terms are then sorted by the term's rank and deduplicated: sorted
        // so the summation order (and thus the float result) does not depend
        // on word order; deduplicated so each term counts once.
        let mut hits = if lower.is_ascii() {
            self.hits(ascii_words(&lower))
        } else {
            self.hits(words(&lower))
        };
        hits.sort_unstable_by_key(|&(rank, _)| rank);
        hits.dedup_by_key(|&mut (rank, _)| rank);
        let mut scores = vec![0.0; self.skills.len()];
        for (_, postings) in hits {
            for &(skill, weight) in postings {
                if let Some(s) = scores.get_mut(skill) {
                    *s += weight;
                }
            }
        }
        scores
    }

    /// The words of a message that are terms, with their postings. The
    /// checks are those of [`terms`], cheapest and most selective first:
    /// the order does not change which words pass all of them.
    fn hits<'a>(
        &'a self,
        words: impl Iterator<Item = &'a str>,
    ) -> Vec<(usize, &'a [(usize, f64)])> {
        words
            .filter(|w| self.starts.may_start(w))
            .filter_map(|word| {
                let term = self.postings.get(stem(word).as_ref())?;
                is_token(word).then_some((term.rank, term.postings.as_slice()))
            })
            .collect()
    }

    /// Each upstream's best-scoring skill (None when none scored above 0).
    fn upstream_bests(&self, scores: &[f64]) -> Vec<Best> {
        let mut bests: Vec<Best> = vec![None; self.upstreams.len()];
        for (i, (skill, &score)) in self.skills.iter().zip(scores).enumerate() {
            if score <= 0.0 {
                continue;
            }
            let Some(slot) = bests.get_mut(skill.upstream) else {
                continue;
            };
            let better = match *slot {
                None => true,
                Some((s, j)) => score > s || (score == s && skill.id < self.skills[j].id),
            };
            if better {
                *slot = Some((score, i));
            }
        }
        bests
    }
}

/// The best upstream's index and score, and the runner-up's score (0 when
/// none). None when no upstream scored.
fn top_two(bests: &[Best]) -> Option<(usize, f64, f64)> {
    let mut top: Option<(usize, f64)> = None;
    let mut runner_up = 0.0;
    for (u, best) in bests.iter().enumerate() {
        let Some((score, _)) = *best else { continue };
        match top {
            Some((_, t)) if score <= t => runner_up = f64::max(runner_up, score),
            _ => {
                if let Some((_, t)) = top {
                    runner_up = f64::max(runner_up, t);
                }
                top = Some((u, score));
            }
        }
    }
    top.map(|(u, score)| (u, score, runner_up))
}

/// A skill's BM25 document: name ×2, description, tags ×2, examples.
fn document(skill: &PublishedSkill) -> Vec<String> {
    let name = tokens(&skill.name);
    let tags: Vec<String> = skill.tags.iter().flat_map(|t| tokens(t)).collect();
    let mut doc = Vec::new();
    for _ in 0..NAME_WEIGHT {
        doc.extend(name.iter().cloned());
    }
    doc.extend(tokens(&skill.description));
    for _ in 0..TAG_WEIGHT {
        doc.extend(tags.iter().cloned());
    }
    for example in &skill.examples {
        doc.extend(tokens(example));
    }
    doc
}

/// Postings with precomputed BM25 weights for the given documents.
fn index(docs: &[Vec<String>]) -> Postings {
    let n = docs.len() as f64;
    let total: usize = docs.iter().map(Vec::len).sum();
    // All documents empty: no postings either, any positive value will do.
    let avgdl = if total == 0 { 1.0 } else { total as f64 / n };

    let mut tfs: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
    for (i, doc) in docs.iter().enumerate() {
        let mut counts: HashMap<&str, u32> = HashMap::new();
        for t in doc {
            *counts.entry(t.as_str()).or_insert(0) += 1;
        }
        for (t, tf) in counts {
            tfs.entry(t.to_owned()).or_default().push((i, tf));
        }
    }

    let mut terms: Vec<(String, Vec<(usize, u32)>)> = tfs.into_iter().collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    terms
        .into_iter()
        .enumerate()
        .map(|(rank, (term, list))| {
            let idf = idf(n, list.len() as f64);
            let postings = list
                .into_iter()
                .map(|(i, tf)| {
                    let dl = docs.get(i).map_or(0, Vec::len) as f64;
                    (i, idf * saturate(f64::from(tf), dl / avgdl))
                })
                .collect();
            (term, Term { rank, postings })
        })
        .collect()
}

/// BM25 IDF, always positive: ln(1 + (N − n + 0.5) / (n + 0.5)).
fn idf(docs: f64, with_term: f64) -> f64 {
    (1.0 + (docs - with_term + 0.5) / (with_term + 0.5)).ln()
}

/// BM25 term-frequency part for a document of relative length `rel_len`.
fn saturate(tf: f64, rel_len: f64) -> f64 {
    tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * rel_len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn skill(
        id: &str,
        upstream: &str,
        name: &str,
        desc: &str,
        tags: &[&str],
        ex: &[&str],
    ) -> PublishedSkill {
        PublishedSkill {
            id: id.to_owned(),
            original_id: id.to_owned(),
            upstream: upstream.to_owned(),
            streaming: false,
            name: name.to_owned(),
            description: desc.to_owned(),
            tags: tags.iter().map(|s| s.to_string()).collect(),
            examples: ex.iter().map(|s| s.to_string()).collect(),
            json: json!({ "id": id }),
        }
    }

    fn fleet() -> Vec<PublishedSkill> {
        vec![
            skill(
                "forecast",
                "weather",
                "Weather forecast",
                "Hourly and daily weather forecasts for any city: temperature, rain, wind \
                 and humidity for the next 10 days.",
                &["weather", "forecast", "temperature"],
                &[
                    "What's the weather in Berlin tomorrow?",
                    "Will it rain in Paris this weekend?",
                ],
            ),
            skill(
                "alerts",
                "weather",
                "Severe weather alerts",
                "Active storm, flood, heat and wildfire warnings issued by national \
                 meteorological services for a region.",
                &["weather", "alerts", "storm", "warnings"],
                &[
                    "Are there any storm warnings for Florida?",
                    "Is there a heat alert in Madrid today?",
                ],
            ),
            skill(
                "flights",
                "travel",
                "Flight search and booking",
                "Search flights between airports, compare fares and book tickets on major \
                 airlines.",
                &["travel", "flights", "airline", "booking"],
                &[
                    "Book a flight from London to Lisbon on Friday",
                    "Cheapest flight to Tokyo in March",
                ],
            ),
            skill(
                "hotels",
                "travel",
                "Hotel booking",
                "Find and reserve hotel rooms by city, dates, price and rating.",
                &["travel", "hotels", "accommodation", "booking"],
                &[
                    "Find a hotel in Paris near the Louvre",
                    "Book two nights in Rome next weekend",
                ],
            ),
        ]
    }

    fn settings() -> MatchSettings {
        MatchSettings {
            enabled: true,
            min_score: 1.0,
            margin: 0.25,
        }
    }

    fn upstream_of(m: &Matcher, text: &str, s: &MatchSettings) -> Option<String> {
        m.pick(text, s).map(|p| p.upstream)
    }

    #[test]
    fn tokens_lowercase_and_split_on_punctuation() {
        assert_eq!(
            tokens("Hello, WORLD!  foo-bar/baz_qux"),
            ["hello", "world", "foo", "bar", "baz", "qux"]
        );
        assert_eq!(tokens("what's the weather?"), ["weather"]);
        assert_eq!(tokens("route 66"), ["rout", "66"]);
    }

    #[test]
    fn tokens_unicode() {
        assert_eq!(
            tokens("Übersetzung ins Französische"),
            ["übersetzung", "ins", "französisch"]
        );
        assert_eq!(tokens("café—crème"), ["café", "crèm"]);
        assert_eq!(tokens("東京 weather"), ["東京", "weather"]);
    }

    #[test]
    fn tokens_drop_short_words_and_stopwords() {
        assert!(tokens("a I x . , ! ?").is_empty());
        assert_eq!(tokens("Can you please tell me what this is?"), ["tell"]);
        assert_eq!(
            tokens("book me a flight to Lisbon"),
            ["book", "flight", "lisbon"]
        );
        assert!(tokens("").is_empty());
    }

    #[test]
    fn every_stopword_is_found_by_its_key() {
        for w in STOPWORDS {
            assert!(word_key(w).is_some(), "{w} is longer than 8 bytes");
            assert!(is_stopword(w), "{w}");
        }
        for w in ["weather", "abouts", "th", "", "thé", "shoulder"] {
            assert!(!is_stopword(w), "{w}");
        }
    }

    /// The tokenizer as it was before it borrowed its words: one `String`
    /// per token, a linear stopword scan.
    fn reference_tokens(text: &str) -> Vec<String> {
        fn undouble(stem: &str) -> String {
            let mut chars = stem.chars().rev();
            let (last, prev) = (chars.next(), chars.next());
            let doubled = match (last, prev) {
                (Some(a), Some(b)) => a == b && a.is_ascii_lowercase() && !"aeiouylsz".contains(a),
                _ => false,
            };
            if doubled && at_least_chars(stem, 4) {
                stem[..stem.len() - 1].to_owned()
            } else {
                stem.to_owned()
            }
        }
        fn strip(word: &str, len: usize) -> String {
            let cut = |n: usize| &word[..word.len() - n];
            if word.ends_with("ies") && len >= 5 {
                return format!("{}y", cut(3));
            }
            if word.ends_with("ing") && len >= 6 {
                return undouble(cut(3));
            }
            if word.ends_with("ed") && !word.ends_with("eed") && len >= 5 {
                return undouble(cut(2));
            }
            if word.ends_with("es") && len >= 5 {
                let stem = cut(2);
                if ["s", "x", "z", "ch", "sh"]
                    .iter()
                    .any(|s| stem.ends_with(s))
                {
                    return stem.to_owned();
                }
            }
            if word.ends_with('s')
                && len >= 4
                && !["ss", "us", "is"].iter().any(|s| word.ends_with(s))
            {
                return cut(1).to_owned();
            }
            word.to_owned()
        }
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 2 && !STOPWORDS.contains(w))
            .map(|w| {
                let mut out = strip(w, w.chars().count());
                if out.ends_with('e') && out.chars().count() > 3 {
                    out.pop();
                }
                out
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn tokens_match_the_reference(
            words in prop::collection::vec(
                prop_oneof![
                    "[a-zA-Zé]{0,7}(ies|ing|ed|eed|es|ches|s|ss|us|is|e|tted|pping)?",
                    any::<String>(),
                ],
                0..10,
            )
        ) {
            let text = words.join(" ");
            prop_assert_eq!(tokens(&text), reference_tokens(&text));
        }

        /// The byte scanner finds exactly the non-empty words of ASCII text.
        #[test]
        fn ascii_words_are_the_words(text in "[ -~\t\n]{0,80}") {
            let lower = text.to_ascii_lowercase();
            let expected: Vec<&str> = words(&lower).filter(|w| !w.is_empty()).collect();
            prop_assert_eq!(ascii_words(&lower).collect::<Vec<_>>(), expected);
        }

        /// What lets `Starts` skip a word before stemming it.
        #[test]
        fn stemming_keeps_the_first_two_bytes(word in "[a-zé]{2,9}(ies|ing|ed|es|s|e|tted|pping)?") {
            let stemmed = stem(&word);
            prop_assert_eq!(&stemmed.as_bytes()[..2], &word.as_bytes()[..2], "{} -> {}", word, stemmed);
        }

        /// Skipping words by their start never changes a score.
        #[test]
        fn the_start_filter_changes_no_score(
            words in prop::collection::vec(
                prop_oneof![
                    "(weather|forecast|rain|flight|book|hotel|translat|language|city)(s|es|ing|ed|ies|e)?",
                    "[a-zA-Zé]{1,9}",
                    any::<String>(),
                ],
                0..24,
            )
        ) {
            let m = Matcher::new(&fleet());
            let text = words.join(" ");
            prop_assert_eq!(m.skill_scores(&text), unfiltered_scores(&m, &text));
        }
    }

    /// `skill_scores` without the `Starts` filter: every token is stemmed
    /// and looked up.
    fn unfiltered_scores(m: &Matcher, text: &str) -> Vec<f64> {
        let mut terms: Vec<String> = tokens(text)
            .into_iter()
            .filter(|t| m.postings.contains_key(t))
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let mut scores = vec![0.0; m.skills.len()];
        for term in &terms {
            for &(skill, weight) in &m.postings[term].postings {
                scores[skill] += weight;
            }
        }
        scores
    }

    #[test]
    fn tokens_stemming() {
        let stems = |s: &str| tokens(s).join(" ");
        assert_eq!(stems("flights hotels alerts"), "flight hotel alert");
        assert_eq!(stems("booking booked books book"), "book book book book");
        assert_eq!(
            stems("translate translates translated translating"),
            "translat translat translat translat"
        );
        assert_eq!(
            stems("cities searches boxes classes"),
            "city search box class"
        );
        assert_eq!(
            stems("shipping stopped calling passed"),
            "ship stop call pass"
        );
        assert_eq!(
            stems("class status analysis need"),
            "class status analysis need"
        );
        // Too short to strip.
        assert_eq!(stems("ties bus king used"), "tie bus king used");
    }

    #[test]
    fn routes_clear_queries() {
        let m = Matcher::new(&fleet());
        let s = settings();
        let p = m
            .pick("what's the weather forecast for Paris tomorrow", &s)
            .unwrap();
        assert_eq!(
            (p.upstream.as_str(), p.skill_id.as_str()),
            ("weather", "forecast")
        );
        assert!(
            p.score >= s.min_score && p.score >= 1.25 * p.runner_up,
            "{p:?}"
        );

        let p = m.pick("book me a flight to Lisbon", &s).unwrap();
        assert_eq!(
            (p.upstream.as_str(), p.skill_id.as_str()),
            ("travel", "flights")
        );

        assert_eq!(
            upstream_of(&m, "Any storm warnings near Miami?", &s).as_deref(),
            Some("weather")
        );
        assert_eq!(
            upstream_of(&m, "I need a cheap hotel room in Rome", &s).as_deref(),
            Some("travel")
        );
    }

    #[test]
    fn ambiguous_query_is_none() {
        let m = Matcher::new(&fleet());
        // "Paris" and "weekend" appear in one example of each upstream.
        let text = "Paris this weekend";
        let scores = m.scores(text);
        assert!(scores[0].1 > 0.0 && scores[1].1 > 0.0, "{scores:?}");
        assert_eq!(m.pick(text, &settings()), None, "{scores:?}");
    }

    #[test]
    fn exact_tie_between_upstreams_is_none_even_without_margin() {
        let a = skill(
            "a",
            "one",
            "Summarize",
            "Summarize documents",
            &["summary"],
            &[],
        );
        let b = skill(
            "b",
            "two",
            "Summarize",
            "Summarize documents",
            &["summary"],
            &[],
        );
        let m = Matcher::new(&[a, b]);
        let s = MatchSettings {
            enabled: true,
            min_score: 0.0,
            margin: 0.0,
        };
        assert_eq!(m.pick("summarize this document", &s), None);
    }

    #[test]
    fn below_min_score_is_none() {
        let m = Matcher::new(&fleet());
        // A single rare term: enough for a low threshold, not a high one.
        let text = "tomorrow";
        let score = m.scores(text)[0].1;
        let low = MatchSettings {
            min_score: score * 0.9,
            ..settings()
        };
        let high = MatchSettings {
            min_score: score * 1.1,
            ..settings()
        };
        assert_eq!(upstream_of(&m, text, &low).as_deref(), Some("weather"));
        assert_eq!(m.pick(text, &high), None);
    }

    #[test]
    fn margin_decides_a_close_lead() {
        let m = Matcher::new(&fleet());
        let text = "Paris weather";
        let p = m.pick(text, &settings()).unwrap();
        assert_eq!(p.upstream, "weather");
        assert!(p.runner_up > 0.0, "{p:?}");
        let lead = p.score / p.runner_up - 1.0;
        let below = MatchSettings {
            margin: lead * 0.99,
            ..settings()
        };
        let above = MatchSettings {
            margin: lead * 1.01,
            ..settings()
        };
        assert_eq!(m.pick(text, &below), Some(p));
        assert_eq!(m.pick(text, &above), None);
    }

    #[test]
    fn disabled_is_none() {
        let m = Matcher::new(&fleet());
        let s = MatchSettings {
            enabled: false,
            ..settings()
        };
        assert_eq!(m.pick("book me a flight to Lisbon", &s), None);
    }

    #[test]
    fn nothing_to_match_is_none() {
        let m = Matcher::new(&fleet());
        let s = MatchSettings {
            min_score: 0.0,
            margin: 0.0,
            ..settings()
        };
        assert_eq!(m.pick("", &s), None);
        assert_eq!(m.pick("the of and?!", &s), None);
        assert_eq!(m.pick("quantum chromodynamics", &s), None);
        assert!(m.scores("quantum").iter().all(|(_, score)| *score == 0.0));
        let empty = Matcher::new(&[]);
        assert_eq!(empty.pick("book me a flight", &s), None);
        assert!(empty.scores("book me a flight").is_empty());
    }

    #[test]
    fn single_upstream_runner_up_is_zero() {
        let skills: Vec<_> = fleet()
            .into_iter()
            .filter(|s| s.upstream == "travel")
            .collect();
        let p = Matcher::new(&skills)
            .pick("hotel in Rome", &settings())
            .unwrap();
        assert_eq!(
            (p.upstream.as_str(), p.skill_id.as_str(), p.runner_up),
            ("travel", "hotels", 0.0)
        );
    }

    #[test]
    fn same_upstream_tie_reports_smallest_skill_id() {
        let mk = |id: &str| skill(id, "docs", "Summarize", "Summarize documents", &[], &[]);
        let m = Matcher::new(&[mk("zeta"), mk("alpha"), mk("mid")]);
        let p = m
            .pick(
                "summarize",
                &MatchSettings {
                    min_score: 0.0,
                    ..settings()
                },
            )
            .unwrap();
        assert_eq!(
            (p.upstream.as_str(), p.skill_id.as_str()),
            ("docs", "alpha")
        );
        let ids: Vec<_> = m
            .scores("summarize")
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["alpha", "mid", "zeta"]);
    }

    #[test]
    fn deterministic_across_calls_and_skill_order() {
        let queries = [
            "what's the weather forecast for Paris tomorrow",
            "book me a flight to Lisbon",
            "Paris weather",
            "Paris this weekend",
            "storm",
        ];
        let forward = Matcher::new(&fleet());
        let mut skills = fleet();
        skills.reverse();
        skills.swap(0, 2);
        let shuffled = Matcher::new(&skills);
        for q in queries {
            let first = forward.pick(q, &settings());
            assert_eq!(first, forward.pick(q, &settings()), "{q}");
            assert_eq!(first, shuffled.pick(q, &settings()), "{q}");
            assert_eq!(forward.scores(q), shuffled.scores(q), "{q}");
        }
        // Word order does not matter either.
        assert_eq!(
            forward.scores("flight Lisbon book"),
            forward.scores("book flight Lisbon")
        );
    }

    #[test]
    fn repeated_words_count_once() {
        let m = Matcher::new(&fleet());
        assert_eq!(m.scores("storm"), m.scores("storm storm STORM storms"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics(text in any::<String>(), margin in 0.0f64..5.0, min in 0.0f64..5.0) {
            let m = Matcher::new(&fleet());
            for t in tokens(&text) {
                prop_assert!(t.chars().count() >= 2);
            }
            let s = MatchSettings { enabled: true, min_score: min, margin };
            if let Some(p) = m.pick(&text, &s) {
                prop_assert!(p.score >= min && p.score > p.runner_up);
            }
        }
    }
}

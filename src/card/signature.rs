//! Where each upstream's card signature stands (`card_signature` verify or
//! required): the latest verdict, for `/readyz`, the metrics and the log.
//! A verdict is logged when it changes, not at every refresh.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::verify::{Refusal, Verified};
use crate::config::card_trust::{CardSignature, SignatureMode};
use crate::telemetry::metrics::Metrics;

/// The latest verdict on one upstream's card.
#[derive(Debug, Clone, PartialEq)]
pub struct SignatureState {
    /// The settings it was reached under: a reload that changes them asks
    /// for the card again rather than keep a verdict they did not make.
    pub under: CardSignature,
    pub verdict: Result<(String, &'static str), Refusal>,
}

impl SignatureState {
    pub fn label(&self) -> &'static str {
        match &self.verdict {
            Ok(_) => "valid",
            Err(Refusal::Unsigned) => "unsigned",
            Err(Refusal::Invalid(_)) => "invalid",
        }
    }

    /// Why the card is not verified, if it is not.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.verdict.as_ref().err()
    }

    /// The `/readyz` entry.
    pub fn describe(&self) -> Value {
        let mut entry = json!({"mode": self.under.mode.label(), "state": self.label()});
        match &self.verdict {
            Ok((kid, covers)) => {
                entry["kid"] = json!(kid);
                entry["covers"] = json!(covers);
            }
            Err(refusal) => entry["reason"] = json!(refusal.to_string()),
        }
        entry
    }
}

#[derive(Default)]
pub struct Signatures {
    states: Mutex<HashMap<String, SignatureState>>,
}

impl Signatures {
    pub fn get(&self, upstream: &str) -> Option<SignatureState> {
        self.states.lock().ok()?.get(upstream).cloned()
    }

    pub fn forget(&self, upstream: &str) {
        if let Ok(mut states) = self.states.lock() {
            states.remove(upstream);
        }
    }

    /// Records a verdict: counted, and logged when it is news.
    pub fn record(
        &self,
        upstream: &str,
        under: &CardSignature,
        verdict: &Result<Verified, Refusal>,
        metrics: &Metrics,
    ) {
        let state = SignatureState {
            under: under.clone(),
            verdict: match verdict {
                Ok(v) => Ok((v.kid.clone(), v.covers)),
                Err(refusal) => Err(refusal.clone()),
            },
        };
        let label = state.label();
        (metrics.card_signature_checks)
            .with_label_values(&[upstream, label])
            .inc();
        (metrics.card_signature_valid)
            .with_label_values(&[upstream])
            .set(i64::from(verdict.is_ok()));
        let Ok(mut states) = self.states.lock() else {
            return;
        };
        let news = states.get(upstream) != Some(&state);
        if news {
            log(upstream, &state);
        }
        states.insert(upstream.to_string(), state);
    }
}

fn log(upstream: &str, state: &SignatureState) {
    let mode = state.under.mode.label();
    match (&state.verdict, state.under.mode) {
        (Ok((kid, covers)), _) => {
            tracing::info!(upstream, kid = %kid, covers = *covers, mode, "agent card signature is valid")
        }
        (Err(reason), SignatureMode::Required) => {
            tracing::warn!(upstream, reason = %reason, mode, "agent card refused: no valid signature from a trusted key; the agent is not ready and its skills are withdrawn")
        }
        (Err(reason), _) => {
            tracing::warn!(upstream, reason = %reason, mode, "agent card signature is not valid; the card is used (card_signature = verify)")
        }
    }
}

//! Who failed, and how: a call's failure mapped to the error the client
//! gets (502 for an agent that could not be reached or answered garbage,
//! 504 for one that took too long, 503 while every replica is ejected), and
//! whether the call may have reached the agent, which decides whether
//! another replica may be tried.

use std::error::Error as StdError;
use std::time::Instant;

use http::{StatusCode, Uri};

use super::agent::Upstream;
use super::breaker::State as BreakerState;
use super::{h1_stream, pool};
use crate::http::error::GatewayError;

/// A failed call, and whether it may have reached the agent (then it must
/// not be sent again).
pub(super) struct Failure {
    pub(super) error: GatewayError,
    pub(super) maybe_delivered: bool,
}

impl Upstream {
    pub(super) fn pooled_failure(&self, e: &pool::Error, replica: &Uri) -> Failure {
        Failure {
            maybe_delivered: e.maybe_delivered(),
            error: self.classify_pooled(e, replica),
        }
    }

    /// Every replica's breaker is open: fail fast, saying when to come back.
    pub(super) fn ejected(&self) -> GatewayError {
        let retry_after = self.replicas.wait(Instant::now());
        GatewayError::UpstreamEjected {
            upstream: self.name.clone(),
            detail: format!(
                "every replica ({}) failed repeatedly and is ejected; the next is tried again in {:.1}s",
                self.replicas.len(),
                retry_after.as_secs_f64()
            ),
            retry_after,
        }
    }

    pub(super) fn header_timeout(&self, replica: &Uri) -> GatewayError {
        GatewayError::UpstreamTimeout {
            upstream: self.name.clone(),
            detail: self.at(
                replica,
                format!(
                    "no response headers within {:?}",
                    self.response_header_timeout
                ),
            ),
        }
    }

    /// With several replicas, says which one failed.
    fn at(&self, replica: &Uri, detail: String) -> String {
        match (self.replicas.len(), replica.authority()) {
            (2.., Some(authority)) => format!("replica {authority}: {detail}"),
            _ => detail,
        }
    }

    pub(super) fn log_transition(&self, replica: &Uri, state: BreakerState) {
        match state {
            BreakerState::Open => {
                tracing::warn!(upstream = %self.name, %replica, "circuit breaker open: replica ejected")
            }
            BreakerState::Closed => {
                tracing::info!(upstream = %self.name, %replica, "circuit breaker closed: replica back")
            }
            BreakerState::HalfOpen => {}
        }
    }

    /// Maps a client failure to the party at fault: the request never got an
    /// answer from the upstream, so it is 502/504, never a client error.
    pub(super) fn classify(
        &self,
        e: &hyper_util::client::legacy::Error,
        replica: &Uri,
    ) -> GatewayError {
        let upstream = self.name.clone();
        let detail = self.at(replica, chain(e));
        if e.is_connect() {
            if has_io_kind(e, std::io::ErrorKind::TimedOut) {
                return self.connect_timed_out(replica);
            }
            return GatewayError::UpstreamUnavailable { upstream, detail };
        }
        from_hyper(find_hyper_error(e), upstream, detail)
    }

    /// As [`Upstream::classify`], for a failure on the gateway's own pool.
    fn classify_pooled(&self, e: &pool::Error, replica: &Uri) -> GatewayError {
        let upstream = self.name.clone();
        match e {
            pool::Error::ConnectTimeout => self.connect_timed_out(replica),
            pool::Error::Resolve(_) | pool::Error::Connect(_) => {
                GatewayError::UpstreamUnavailable {
                    upstream,
                    detail: self.at(replica, e.to_string()),
                }
            }
            pool::Error::Call { error, .. } => {
                from_hyper(Some(error), upstream, self.at(replica, e.to_string()))
            }
            pool::Error::Stream(stream) => {
                let detail = self.at(replica, e.to_string());
                match stream {
                    h1_stream::Error::Malformed(_) | h1_stream::Error::HeadTooLarge => {
                        GatewayError::UpstreamBadResponse { upstream, detail }
                    }
                    h1_stream::Error::Io(_) | h1_stream::Error::Closed => {
                        GatewayError::UpstreamUnavailable { upstream, detail }
                    }
                }
            }
        }
    }

    /// The same answer from either client when a connect outlasts its limit.
    fn connect_timed_out(&self, replica: &Uri) -> GatewayError {
        let why = format!("connect timed out after {:?}", self.connect_timeout);
        GatewayError::UpstreamTimeout {
            upstream: self.name.clone(),
            detail: self.at(replica, why),
        }
    }
}

/// An answer that was garbage is a bad response; one that never came in
/// time, a timeout; anything else, the upstream unavailable.
fn from_hyper(h: Option<&hyper::Error>, upstream: String, detail: String) -> GatewayError {
    match h {
        Some(h) if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() => {
            GatewayError::UpstreamBadResponse { upstream, detail }
        }
        Some(h) if h.is_timeout() => GatewayError::UpstreamTimeout { upstream, detail },
        _ => GatewayError::UpstreamUnavailable { upstream, detail },
    }
}

/// A 5xx counts against the replica's breaker, except 501 Not Implemented:
/// that is an answer about the call, not a sign of a sick replica.
pub(super) fn is_failure_status(status: StatusCode) -> bool {
    status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED
}

fn sources<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| e.source())
}

fn chain(e: &hyper_util::client::legacy::Error) -> String {
    sources(e)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn has_io_kind(e: &hyper_util::client::legacy::Error, kind: std::io::ErrorKind) -> bool {
    sources(e).any(|s| {
        s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

fn find_hyper_error(e: &hyper_util::client::legacy::Error) -> Option<&hyper::Error> {
    sources(e).find_map(|s| s.downcast_ref::<hyper::Error>())
}

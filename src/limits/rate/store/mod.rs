//! The store the gateway's replicas share their rate limits through: Redis
//! or Valkey, one node or a cluster, by redis-rs (its reconnecting
//! `ConnectionManager`, its cluster client, and `Script`, which sends
//! EVALSHA and loads the script again on NOSCRIPT).
//!
//! One decision is one round trip: `gcra.lua` checks every limit that
//! applies to a call and charges them only if all let it through, on the
//! store's clock. Every key carries the prefix as a hash tag, so in a
//! cluster they all live in one slot and the script stays atomic.
//!
//! A call never waits for the store longer than `timeout`. A failed or
//! late answer marks the store down (logged once); calls then meet the
//! `on_store_error` fallback without asking it, while one probe task asks
//! every [`PROBE_INTERVAL`] until it answers again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{IntoConnectionInfo, RedisError, Script};

use super::QuotaSpec;

mod health;
pub mod lease;
mod settings;

pub use health::State;
pub use settings::*;

/// How often a store that stopped answering is asked again.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// The decision script (see its header).
const GCRA: &str = include_str!("gcra.lua");

/// The metrics the store and the shared limits keep (handles into the
/// gateway's registry, `crate::state::rate_store_meters`).
#[derive(Clone)]
pub struct Meters {
    /// `rate_limit_decisions_total{source, result}`
    pub decisions: prometheus::IntCounterVec,
    /// `rate_limit_store_errors_total{kind}`
    pub errors: prometheus::IntCounterVec,
    /// `rate_limit_store_up`
    pub up: prometheus::IntGauge,
    /// `rate_limit_store_seconds`
    pub duration: prometheus::Histogram,
}

/// One limit a call must pass: which, its key in the store, and the units
/// to ask for (1, or a lease: `super::shared`).
#[derive(Debug)]
pub struct Ask {
    pub label: &'static str,
    pub spec: QuotaSpec,
    pub key: String,
    pub want: u32,
}

/// The store's answer: let through with the units each limit granted (in
/// `asks` order, each at least 1), or refused by `asks[index]` for `wait`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed(Vec<u32>),
    Refused { index: usize, wait: Duration },
}

/// Why the store gave no decision (the call meets the fallback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered(pub String);

/// A client for one node or a cluster, made when the settings are read.
/// Made once per store, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Client {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A live connection; both kinds are cheap to clone (shared handles).
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

pub struct Store {
    settings: StoreSettings,
    describe: String,
    client: Client,
    conn: tokio::sync::OnceCell<Conn>,
    script: Script,
    health: health::Health,
    probing: AtomicBool,
    metrics: Meters,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("address", &self.describe)
            .field("state", &self.health.get())
            .finish()
    }
}

impl Store {
    /// A store for `settings`; it connects in the background (calls meet
    /// the fallback until it has), or at once through [`Store::ready`].
    pub fn new(settings: &StoreSettings, metrics: Meters) -> Result<Arc<Store>, String> {
        let describe = settings.describe();
        let client = client(settings).map_err(|e| format!("{describe}: {e}"))?;
        let store = Arc::new(Store {
            settings: settings.clone(),
            describe,
            client,
            conn: tokio::sync::OnceCell::new(),
            script: Script::new(GCRA),
            health: health::Health::default(),
            probing: AtomicBool::new(false),
            metrics,
        });
        store.metrics.up.set(0);
        store.start_probe();
        Ok(store)
    }

    pub fn settings(&self) -> &StoreSettings {
        &self.settings
    }

    /// The store's address, without credentials.
    pub fn describe(&self) -> &str {
        &self.describe
    }

    pub fn state(&self) -> State {
        self.health.get()
    }

    pub(crate) fn metrics(&self) -> &Meters {
        &self.metrics
    }

    /// Connects, authenticates and loads the script, within the connect
    /// timeout: what `run` and `check` wait for, so that a wrong password
    /// or TLS to a plain port is a clear error before any call.
    pub async fn ready(self: &Arc<Self>) -> Result<(), String> {
        let limit = self.settings.connect_timeout;
        let answered = tokio::time::timeout(limit, async {
            let conn = self.connection().await?;
            ping(conn.clone()).await?;
            let load = self.script.prepare_invoke();
            match conn {
                Conn::Single(mut c) => load.load_async(&mut c).await.map(drop),
                Conn::Cluster(mut c) => load.load_async(&mut c).await.map(drop),
            }
        })
        .await;
        let outcome = match answered {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(explain(&e)),
            Err(_) if self.describe.contains("rediss://") => Err(format!(
                "no answer within {limit:?} (connect_timeout); is the port TLS? \
                 A plain port never answers the TLS handshake of rediss://"
            )),
            Err(_) => Err(format!("no answer within {limit:?} (connect_timeout)")),
        };
        match &outcome {
            Ok(()) => self.mark_up(),
            Err(why) => self.mark_down(why),
        }
        outcome.map_err(|why| format!("rate_limits.store {}: {why}", self.describe))
    }

    /// One decision for `asks` (in checking order), within the timeout.
    pub async fn decide(self: &Arc<Self>, asks: &[Ask]) -> Result<Decision, Unanswered> {
        let conn = match (self.health.get(), self.conn.get()) {
            (State::Up, Some(conn)) => conn.clone(),
            (state, _) => return Err(Unanswered(format!("is {}", state.label()))),
        };
        let mut invocation = self.script.prepare_invoke();
        for ask in asks {
            invocation.key(ask.key.as_str());
        }
        for ask in asks {
            invocation
                .arg(ask.spec.interval_us())
                .arg(ask.spec.burst.get())
                .arg(ask.want.max(1));
        }
        let started = Instant::now();
        let answer = tokio::time::timeout(self.settings.timeout, async {
            match conn {
                Conn::Single(mut c) => invocation.invoke_async::<Vec<i64>>(&mut c).await,
                Conn::Cluster(mut c) => invocation.invoke_async::<Vec<i64>>(&mut c).await,
            }
        })
        .await;
        self.metrics
            .duration
            .observe(started.elapsed().as_secs_f64());
        let failure = match answer {
            Ok(Ok(answer)) => return self.decision(answer, asks.len()),
            Ok(Err(e)) => (error_kind(&e), explain(&e)),
            Err(_) => (
                "timeout",
                format!("did not answer within {:?}", self.settings.timeout),
            ),
        };
        self.metrics.errors.with_label_values(&[failure.0]).inc();
        self.mark_down(&failure.1);
        Err(Unanswered(failure.1))
    }

    /// The script's `{0, grants...}` or `{index, wait}` as a decision;
    /// anything else is the store's fault.
    fn decision(&self, answer: Vec<i64>, asked: usize) -> Result<Decision, Unanswered> {
        let decided = match answer.as_slice() {
            [0, grants @ ..] if grants.len() == asked => grants
                .iter()
                .map(|g| u32::try_from(*g).ok().filter(|g| *g >= 1))
                .collect::<Option<Vec<u32>>>()
                .map(Decision::Allowed),
            [index, wait] => usize::try_from(*index)
                .ok()
                .filter(|i| (1..=asked).contains(i))
                .map(|i| Decision::Refused {
                    index: i - 1,
                    wait: Duration::from_micros(u64::try_from(*wait).unwrap_or(0)),
                }),
            _ => None,
        };
        decided.ok_or_else(|| {
            self.metrics.errors.with_label_values(&["script"]).inc();
            Unanswered(format!("answered {answer:?} for {asked} limit(s)"))
        })
    }

    /// The connection, made on first use (redis-rs reconnects it after).
    async fn connection(&self) -> Result<Conn, RedisError> {
        let conn = self
            .conn
            .get_or_try_init(|| connect(&self.client, &self.settings));
        Ok(conn.await?.clone())
    }

    /// Whether the store answers now: connected within the connect
    /// timeout, and a PING within the per-call timeout (a store slower
    /// than that would only fail the next call again).
    async fn answers(&self) -> Result<(), String> {
        let limit = self.settings.connect_timeout;
        let conn = match tokio::time::timeout(limit, self.connection()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(explain(&e)),
            Err(_) => return Err(format!("no connection within {limit:?}")),
        };
        let limit = self.settings.timeout;
        match tokio::time::timeout(limit, ping(conn)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(explain(&e)),
            Err(_) => Err(format!("no PONG within {limit:?}")),
        }
    }

    fn mark_up(&self) {
        self.metrics.up.set(1);
        if self.health.set(State::Up) != State::Up {
            tracing::info!(store = %self.describe, "rate-limit store answers: limits are shared");
        }
    }

    /// Down, as a call saw it: the probe starts asking.
    fn mark_down(self: &Arc<Self>, why: &str) {
        self.note_down(why);
        self.start_probe();
    }

    /// Starts the probe task unless one runs (or there is no runtime).
    fn start_probe(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        runtime.spawn(probe(Arc::downgrade(self)));
    }
}

/// Asks the store until it answers, then ends (also when the store is
/// dropped by a reload).
async fn probe(store: Weak<Store>) {
    let mut first = true;
    loop {
        if !first {
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
        first = false;
        let Some(store) = store.upgrade() else {
            return;
        };
        match store.answers().await {
            Ok(()) => {
                store.probing.store(false, Ordering::Release);
                store.mark_up();
                return;
            }
            Err(why) => store.note_down(&why),
        }
    }
}

async fn ping(conn: Conn) -> Result<(), RedisError> {
    let ping = redis::cmd("PING");
    match conn {
        Conn::Single(mut c) => ping.query_async::<()>(&mut c).await,
        Conn::Cluster(mut c) => ping.query_async::<()>(&mut c).await,
    }
}

impl Store {
    /// Down, as seen by the probe (which must not start another).
    fn note_down(&self, why: &str) {
        self.metrics.up.set(0);
        if self.health.set(State::Down) != State::Down {
            tracing::warn!(
                store = %self.describe,
                fallback = self.settings.on_store_error.label(),
                "rate-limit store cannot answer ({why}): calls meet the fallback until it does"
            );
        }
    }
}

/// The client for the settings: credentials and roots added to the URL's.
fn client(s: &StoreSettings) -> Result<Client, RedisError> {
    let roots = || redis::TlsCertificates {
        client_tls: None,
        root_cert: s.ca.clone(),
    };
    match &s.nodes {
        Nodes::Single(url) => {
            let mut info = url.as_str().into_connection_info()?;
            let mut redis = info.redis_settings().clone();
            if let Some(user) = &s.username {
                redis = redis.set_username(user);
            }
            if let Some(password) = &s.password {
                redis = redis.set_password(&password.0);
            }
            info = info.set_redis_settings(redis);
            match s.ca {
                Some(_) => redis::Client::build_with_tls(info, roots()),
                None => redis::Client::open(info),
            }
            .map(Client::Single)
        }
        Nodes::Cluster(urls) => {
            let mut b = redis::cluster::ClusterClientBuilder::new(urls.iter().map(String::as_str))
                .connection_timeout(s.connect_timeout)
                .response_timeout(s.connect_timeout.max(s.timeout));
            if let Some(user) = &s.username {
                b = b.username(user);
            }
            if let Some(password) = &s.password {
                b = b.password(&password.0);
            }
            if s.ca.is_some() {
                b = b.certs(roots());
            }
            b.build().map(Client::Cluster)
        }
    }
}

/// Connects (one attempt, within the connect timeout).
async fn connect(client: &Client, s: &StoreSettings) -> Result<Conn, RedisError> {
    match client {
        Client::Single(c) => {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(s.connect_timeout))
                .set_number_of_retries(1)
                .set_max_delay(PROBE_INTERVAL);
            ConnectionManager::new_with_config(c.clone(), config)
                .await
                .map(Conn::Single)
        }
        Client::Cluster(c) => c.get_async_connection().await.map(Conn::Cluster),
    }
}

/// A bounded label for the errors metric.
fn error_kind(e: &RedisError) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        "connection"
    } else {
        "script"
    }
}

/// A store error in words an operator can act on.
fn explain(e: &RedisError) -> String {
    let text = e.to_string();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    let hint = if has(&[
        "WRONGPASS",
        "NOAUTH",
        "AuthenticationFailed",
        "invalid password",
    ]) {
        " (check the user name and password_env / password_file)"
    } else if has(&[
        "InvalidContentType",
        "CorruptMessage",
        "HandshakeFailure",
        "tls",
        "TLS",
    ]) {
        " (is the port TLS? rediss:// needs a TLS port, redis:// a plain one)"
    } else {
        ""
    };
    format!("{text}{hint}")
}

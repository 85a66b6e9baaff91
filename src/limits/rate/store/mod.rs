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
use crate::telemetry::metrics::Metrics;

mod health;
mod settings;

pub use health::State;
pub use settings::*;

/// How often a store that stopped answering is asked again.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// The decision script (see its header).
const GCRA: &str = include_str!("gcra.lua");

/// One limit a call must pass: which, and its key in the store.
#[derive(Debug)]
pub struct Ask {
    pub label: &'static str,
    pub spec: QuotaSpec,
    pub key: String,
}

/// The store's answer: let through, or refused by `asks[index]` for `wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
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
    metrics: Arc<Metrics>,
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
    pub fn new(settings: &StoreSettings, metrics: Arc<Metrics>) -> Result<Arc<Store>, String> {
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
        store.metrics.rate_store_up.set(0);
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

    pub(crate) fn metrics(&self) -> &Metrics {
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
                .arg(ask.spec.burst.get());
        }
        let started = Instant::now();
        let answer = tokio::time::timeout(self.settings.timeout, async {
            match conn {
                Conn::Single(mut c) => invocation.invoke_async::<(i64, i64)>(&mut c).await,
                Conn::Cluster(mut c) => invocation.invoke_async::<(i64, i64)>(&mut c).await,
            }
        })
        .await;
        self.metrics
            .rate_store_duration
            .observe(started.elapsed().as_secs_f64());
        let failure = match answer {
            Ok(Ok(answer)) => return self.decision(answer, asks.len()),
            Ok(Err(e)) => (error_kind(&e), explain(&e)),
            Err(_) => (
                "timeout",
                format!("did not answer within {:?}", self.settings.timeout),
            ),
        };
        self.metrics
            .rate_store_errors
            .with_label_values(&[failure.0])
            .inc();
        self.mark_down(&failure.1);
        Err(Unanswered(failure.1))
    }

    /// The script's `{index, wait}` as a decision; anything else is the
    /// store's fault.
    fn decision(&self, (index, wait): (i64, i64), asked: usize) -> Result<Decision, Unanswered> {
        let index = usize::try_from(index).ok().filter(|i| *i <= asked);
        match index {
            Some(0) => Ok(Decision::Allowed),
            Some(i) => Ok(Decision::Refused {
                index: i - 1,
                wait: Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
            }),
            None => {
                let why = format!("answered {index:?} for {asked} limit(s)");
                self.metrics
                    .rate_store_errors
                    .with_label_values(&["script"])
                    .inc();
                Err(Unanswered(why))
            }
        }
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
        self.metrics.rate_store_up.set(1);
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
        self.metrics.rate_store_up.set(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A store on a port nobody listens on.
    fn unreachable(mode: OnStoreError) -> StoreSettings {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        StoreSettings {
            nodes: Nodes::Single(format!("redis://127.0.0.1:{port}")),
            key_prefix: DEFAULT_KEY_PREFIX.into(),
            connect_timeout: Duration::from_millis(200),
            timeout: DEFAULT_TIMEOUT,
            username: None,
            password: None,
            ca: None,
            on_store_error: mode,
            expected_replicas: std::num::NonZeroU32::MIN,
        }
    }

    fn ask() -> Ask {
        let one = std::num::NonZeroU32::MIN;
        Ask {
            label: "global",
            spec: QuotaSpec {
                period: super::super::Period::Second,
                amount: one,
                burst: one,
            },
            key: "{t}:rl:global".into(),
        }
    }

    // The lock is held across awaits on purpose: the lines are logged there.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test]
    async fn a_store_that_cannot_answer_is_logged_once_not_per_call() {
        let _serial = crate::telemetry::log::capture::serial();
        let capture = crate::telemetry::log::capture::Capture::default();
        let _logging = capture.install(crate::config::LogFormat::Text);
        let metrics = Arc::new(Metrics::new());
        let store = Store::new(&unreachable(OnStoreError::Deny), metrics.clone()).unwrap();
        let why = store.ready().await.unwrap_err();
        assert!(
            why.starts_with("rate_limits.store redis://127.0.0.1:"),
            "{why}"
        );
        assert_eq!(store.state(), State::Down);
        let asks = [ask()];
        for _ in 0..50 {
            let started = Instant::now();
            let refused = store.decide(&asks).await.unwrap_err();
            assert_eq!(refused, Unanswered("is down".into()));
            assert!(started.elapsed() < Duration::from_millis(50));
        }
        // The probe asks again meanwhile, and says nothing new.
        tokio::time::sleep(PROBE_INTERVAL * 3).await;
        let text = capture.text();
        assert_eq!(text.matches("cannot answer").count(), 1, "{text}");
        assert!(
            text.contains("WARN") && text.contains("fallback=\"deny\""),
            "{text}"
        );
        assert_eq!(metrics.rate_store_up.get(), 0);
    }
}

//! The `a2a-gateway` command: `run`, `check` and `demo`. Thin: everything it
//! does is in the library, which the integration tests drive directly.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use a2a_gateway::config::{self, Overrides};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "a2a-gateway",
    version,
    about = "A gateway for A2A (Agent2Agent) agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway from a config file, from flags, or both (flags win).
    Run(RunArgs),
    /// Validate a config file and print every problem in it; connect to
    /// the shared rate-limit store, if one is configured.
    Check {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
        /// Check the file alone: do not connect to the rate-limit store
        /// (for a build machine that cannot reach it).
        #[arg(long)]
        offline: bool,
    },
    /// Run the gateway in front of a built-in sample agent, on loopback.
    Demo {
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        #[arg(long, default_value = "127.0.0.1:9090")]
        admin_listen: SocketAddr,
    },
}

#[derive(Args)]
struct RunArgs {
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Proxy listen address (IP:port).
    #[arg(long)]
    listen: Option<String>,
    /// Admin listen address for /healthz and /readyz (IP:port).
    #[arg(long)]
    admin_listen: Option<String>,
    /// The URL clients use to reach the gateway (goes into the Agent Card).
    #[arg(long)]
    public_url: Option<String>,
    /// An upstream agent as NAME=URL; repeatable. Replaces the URL of a
    /// configured upstream with that name, or adds one.
    #[arg(long = "upstream", value_name = "NAME=URL", value_parser = parse_upstream)]
    upstreams: Vec<(String, String)>,
    /// Serve plain HTTP on a non-loopback address (TLS ends before the
    /// gateway, e.g. at an ingress or in a mesh).
    #[arg(long)]
    plaintext: bool,
}

fn parse_upstream(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, url)) if !name.is_empty() && !url.is_empty() => Ok((name.into(), url.into())),
        _ => Err(format!(
            "expected NAME=URL (e.g. echo=http://127.0.0.1:9001), got '{s}'"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before any thread allocates: see `memory_release::tune_malloc`.
    a2a_gateway::memory_release::tune_malloc();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run(args).await,
            Command::Check { config, offline } => check(&config, offline).await,
            Command::Demo {
                listen,
                admin_listen,
            } => demo(listen, admin_listen).await,
        }
    })
}

async fn check(path: &std::path::Path, offline: bool) -> ExitCode {
    match config::load_file(path, &Overrides::default()) {
        Ok(c) => {
            let store = rate_store(&c, offline).await;
            let store = match store {
                Ok(said) => said,
                Err(why) => {
                    eprintln!("{}: 1 problem(s)", path.display());
                    eprintln!("  error: {why}");
                    return ExitCode::FAILURE;
                }
            };
            println!(
                "{}: OK ({} upstream(s), listening on {}, admin on {})",
                path.display(),
                c.upstreams.len(),
                c.server.listen,
                c.server.admin_listen
            );
            for u in &c.upstreams {
                println!("  upstream {}: {}", u.name, speaks(u));
            }
            println!("  traces: {}", traces(&c.telemetry));
            println!("  rate-limit store: {store}");
            println!("  push relay: {}", push_relay(&c));
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprintln!("{}: {} problem(s)", path.display(), errors.0.len());
            for line in errors.to_string().lines() {
                eprintln!("  error: {line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// What `check` says of `[push_relay]`.
fn push_relay(c: &config::Config) -> String {
    match &c.push_relay {
        None => "off (agents post to the clients' webhooks themselves)".into(),
        Some(relay) => format!(
            "on: agents post to {}/push/{{id}}, sealed with key \"{}\"",
            relay.callback_base,
            relay.sealer.active_kid()
        ),
    }
}

/// The shared rate-limit store, connected to and asked once: a wrong
/// password or TLS to a plain port is found here rather than in traffic.
async fn rate_store(c: &config::Config, offline: bool) -> Result<String, String> {
    use a2a_gateway::limits::rate::store::Store;
    let Some(settings) = &c.rate_limits.store else {
        return Ok("none (limits are each replica's own)".into());
    };
    if offline {
        return Ok(format!("{} not contacted (--offline)", settings.describe()));
    }
    let metrics = a2a_gateway::telemetry::metrics::Metrics::new();
    let store = Store::new(settings, a2a_gateway::state::rate_store_meters(&metrics))?;
    store.ready().await?;
    Ok(format!(
        "{} answers (on_store_error = {})",
        store.describe(),
        settings.on_store_error.label()
    ))
}

/// What `check` can tell of an upstream's versions without asking it.
fn speaks(upstream: &config::Upstream) -> String {
    match &upstream.protocol_versions {
        Some(versions) => {
            let names: Vec<&str> = versions.iter().map(|v| v.label()).collect();
            format!("speaks JSON-RPC {} (protocol_versions)", names.join(", "))
        }
        None => {
            "versions from its card, read when the gateway runs (GET /readyz shows them)".into()
        }
    }
}

/// What `check` can tell of trace export from the file alone.
fn traces(telemetry: &config::Telemetry) -> String {
    match &telemetry.otlp_endpoint {
        Some(endpoint) => {
            let protocol = match telemetry.otlp_protocol {
                Some(config::OtlpProtocol::Grpc) => "grpc",
                _ => "http/protobuf",
            };
            format!("exported over OTLP ({protocol}) to {endpoint}; OTEL_* variables win")
        }
        None => "off unless OTEL_EXPORTER_OTLP_ENDPOINT is set where the gateway runs".into(),
    }
}

async fn run(args: RunArgs) -> ExitCode {
    let overrides = Overrides {
        listen: args.listen,
        admin_listen: args.admin_listen,
        public_url: args.public_url,
        upstreams: args.upstreams,
        plaintext: args.plaintext,
    };
    let loaded = match &args.config {
        Some(path) => config::load_file(path, &overrides),
        None => config::load_with(None, &overrides),
    };
    let config = match loaded {
        Ok(c) => c,
        Err(errors) => {
            for line in errors.to_string().lines() {
                eprintln!("error: {line}");
            }
            return ExitCode::FAILURE;
        }
    };
    // Held to the end: dropping it flushes the queued log lines.
    let _log = a2a_gateway::telemetry::log::init(&config);
    let running = match a2a_gateway::build(config).start().await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    serve_until_stopped(&running, args.config.as_deref(), &overrides).await;
    tracing::info!("shutting down: draining connections");
    running.shutdown().await;
    ExitCode::SUCCESS
}

/// How often the config file is checked for changes.
const CONFIG_WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs until SIGTERM/SIGINT, reloading the configuration on SIGHUP and
/// whenever the file changes (checked every CONFIG_WATCH_INTERVAL).
async fn serve_until_stopped(
    running: &a2a_gateway::Running,
    path: Option<&std::path::Path>,
    overrides: &Overrides,
) {
    let stop = wait_for_signal();
    tokio::pin!(stop);
    let mut hangups = hangup_signals();
    let mut seen = path.and_then(file_stamp);
    let mut tick = tokio::time::interval(CONFIG_WATCH_INTERVAL);
    loop {
        let reason = tokio::select! {
            _ = &mut stop => return,
            _ = next_hangup(&mut hangups) => "SIGHUP",
            _ = tick.tick() => {
                let now = path.and_then(file_stamp);
                if now == seen {
                    continue;
                }
                seen = now;
                "the file changed"
            }
        };
        tracing::info!("reloading the configuration ({reason})");
        let loaded = match path {
            Some(p) => config::load_file(p, overrides),
            None => config::load_with(None, overrides),
        };
        let _ = running.reload(loaded);
    }
}

/// Modification time and length: enough to notice an edit or a replaced
/// file (e.g. a Kubernetes ConfigMap update).
fn file_stamp(path: &std::path::Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = ();

#[cfg(unix)]
fn hangup_signals() -> Hangups {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}

#[cfg(not(unix))]
fn hangup_signals() -> Hangups {}

#[cfg(unix)]
async fn next_hangup(h: &mut Hangups) {
    match h {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
async fn next_hangup(_: &mut Hangups) {
    std::future::pending().await
}

async fn demo(listen: SocketAddr, admin_listen: SocketAddr) -> ExitCode {
    let logging = config::load_with(
        None,
        &Overrides {
            upstreams: vec![("demo".into(), "http://127.0.0.1:1".into())],
            ..Default::default()
        },
    );
    let _log = logging
        .as_ref()
        .ok()
        .and_then(a2a_gateway::telemetry::log::init);
    let demo = match a2a_gateway::demo::start(listen, admin_listen).await {
        Ok(demo) => demo,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (addr, admin) = (demo.gateway.addr(), demo.gateway.admin_addr());
    println!("{}", a2a_gateway::demo::instructions(addr, admin));
    wait_for_signal().await;
    demo.gateway.shutdown().await;
    ExitCode::SUCCESS
}

/// SIGTERM (Kubernetes, docker stop) or SIGINT (Ctrl-C).
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

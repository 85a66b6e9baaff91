//! Whether traces are exported, and how: `[telemetry]` in the file, with
//! the standard `OTEL_*` variables winning over each of its values (an
//! operator sets them per deployment). Export is on once an endpoint is
//! known, from either; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`
//! turn it off whatever the file says.

use opentelemetry_sdk::trace::Sampler;

use crate::config::{OtlpProtocol, Telemetry};

/// The service name when neither `OTEL_SERVICE_NAME`, `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES` nor the file names one.
pub const DEFAULT_SERVICE_NAME: &str = "a2a-gateway";

/// The batch queue's size when `OTEL_BSP_MAX_QUEUE_SIZE` does not say.
const DEFAULT_QUEUE: usize = 2048;

#[derive(Debug)]
pub struct Settings {
    pub protocol: OtlpProtocol,
    /// The file's endpoint, as the exporter is given it. `None`: the
    /// exporter reads `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` itself.
    pub endpoint: Option<String>,
    /// The file's service name; `None` leaves it to the environment.
    pub service_name: Option<String>,
    /// The file's sampler; `None` leaves it to `OTEL_TRACES_SAMPLER`
    /// (parent-based, always on, by default).
    pub sampler: Option<Sampler>,
    pub max_queue: usize,
    pub max_stream_events: u32,
}

/// The settings, or `Ok(None)` when export is off.
pub fn resolve(
    file: &Telemetry,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Settings>, String> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    if let Some(exporter) = set("OTEL_TRACES_EXPORTER") {
        match exporter.trim() {
            "none" => return Ok(None),
            "otlp" => {}
            other => {
                return Err(format!(
                "OTEL_TRACES_EXPORTER: only \"otlp\" and \"none\" are supported, not \"{other}\""
            ))
            }
        }
    }
    let from_env = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    if !from_env && file.otlp_endpoint.is_none() {
        return Ok(None);
    }
    let protocol = protocol(file, &set)?;
    let endpoint = match (from_env, &file.otlp_endpoint) {
        (false, Some(base)) => Some(signal_endpoint(base, protocol)),
        _ => None,
    };
    let service_name = service_name(file, &set);
    let sampler = match (set("OTEL_TRACES_SAMPLER"), &file.sampler) {
        (None, Some((name, arg))) => Some(sampler(name, *arg)?),
        _ => None,
    };
    let max_queue = max_queue(&set)?;
    Ok(Some(Settings {
        protocol,
        endpoint,
        service_name,
        sampler,
        max_queue,
        max_stream_events: file.max_stream_events,
    }))
}

/// The OTLP protocol: the traces variable, the general one, the file's,
/// else the specification's default.
fn protocol(
    file: &Telemetry,
    set: &impl Fn(&str) -> Option<String>,
) -> Result<OtlpProtocol, String> {
    match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .map(|p| ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", p))
        .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL").map(|p| ("OTEL_EXPORTER_OTLP_PROTOCOL", p)))
    {
        Some((name, p)) => OtlpProtocol::parse(p.trim()).map_err(|why| format!("{name}: {why}")),
        // The specification's default.
        None => Ok(file.otlp_protocol.unwrap_or(OtlpProtocol::HttpProtobuf)),
    }
}

/// The service's name from the file (or the default), unless the
/// environment names it (the SDK then reads it there).
fn service_name(file: &Telemetry, set: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let named_in_env = set("OTEL_SERVICE_NAME").is_some()
        || set("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| {
            a.split(',').any(|pair| {
                pair.split_once('=')
                    .is_some_and(|(k, _)| k.trim() == "service.name")
            })
        });
    match named_in_env {
        true => None,
        false => Some(
            file.service_name
                .clone()
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.into()),
        ),
    }
}

/// The batch queue's size: `OTEL_BSP_MAX_QUEUE_SIZE`, else the default.
fn max_queue(set: &impl Fn(&str) -> Option<String>) -> Result<usize, String> {
    match set("OTEL_BSP_MAX_QUEUE_SIZE") {
        Some(n) => n
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("OTEL_BSP_MAX_QUEUE_SIZE: '{n}' is not a positive count")),
        None => Ok(DEFAULT_QUEUE),
    }
}

/// The file's endpoint is a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` is:
/// over HTTP the traces go to its `/v1/traces`.
fn signal_endpoint(base: &str, protocol: OtlpProtocol) -> String {
    match protocol {
        OtlpProtocol::Grpc => base.to_string(),
        OtlpProtocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
}

/// A sampler named as `OTEL_TRACES_SAMPLER` names them (the file's names
/// were checked when it was loaded).
fn sampler(name: &str, arg: Option<f64>) -> Result<Sampler, String> {
    let ratio = || arg.ok_or_else(|| format!("telemetry.sampler '{name}' needs sampler_arg"));
    Ok(match name {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio()?),
        "parentbased_always_on" => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => {
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio()?)))
        }
        other => return Err(format!("telemetry.sampler: unknown sampler '{other}'")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn file() -> Telemetry {
        Telemetry {
            max_stream_events: 32,
            ..Default::default()
        }
    }

    #[test]
    fn off_without_an_endpoint_anywhere() {
        assert!(matches!(resolve(&file(), with(&[])), Ok(None)));
        let named_only = [("OTEL_SERVICE_NAME", "gw")];
        assert!(matches!(resolve(&file(), with(&named_only)), Ok(None)));
    }

    #[test]
    fn an_endpoint_in_the_environment_turns_export_on_and_is_left_to_the_exporter() {
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        let s = resolve(&file(), with(&vars)).unwrap().unwrap();
        assert_eq!(s.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(s.endpoint, None);
        assert_eq!(s.service_name.as_deref(), Some(DEFAULT_SERVICE_NAME));
        assert!(s.sampler.is_none());
        let grpc = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:4317",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let s = resolve(&file(), with(&grpc)).unwrap().unwrap();
        assert_eq!(s.protocol, OtlpProtocol::Grpc);
    }

    #[test]
    fn the_file_turns_export_on_and_the_environment_wins_over_it() {
        let mut f = file();
        f.otlp_endpoint = Some("http://collector:4318/".into());
        f.service_name = Some("edge".into());
        f.sampler = Some(("traceidratio".into(), Some(0.5)));
        let s = resolve(&f, with(&[])).unwrap().unwrap();
        assert_eq!(
            s.endpoint.as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(s.service_name.as_deref(), Some("edge"));
        assert!(matches!(s.sampler, Some(Sampler::TraceIdRatioBased(r)) if r == 0.5));
        let vars = [
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let s = resolve(&f, with(&vars)).unwrap().unwrap();
        assert_eq!(s.service_name, None);
        assert!(s.sampler.is_none());
        assert_eq!(s.endpoint.as_deref(), Some("http://collector:4318/"));
        let attrs = [("OTEL_RESOURCE_ATTRIBUTES", "team=a, service.name=x")];
        assert_eq!(
            resolve(&f, with(&attrs)).unwrap().unwrap().service_name,
            None
        );
    }

    #[test]
    fn disabled_and_bad_values_are_reported() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert!(matches!(resolve(&file(), with(&vars)), Ok(None)));
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ];
        assert!(matches!(resolve(&file(), with(&vars)), Ok(None)));
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ];
        let why = resolve(&file(), with(&vars)).unwrap_err();
        assert!(why.starts_with("OTEL_EXPORTER_OTLP_PROTOCOL"), "{why}");
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "lots"),
        ];
        assert!(resolve(&file(), with(&vars)).is_err());
    }
}

//! The `telemetry:` block (contract §6d), checked into [`Telemetry`]: where traces go (OTLP over
//! HTTP), under which service name, and what share of new traces is kept; with the standard
//! OpenTelemetry variables beside it (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER_ARG`). Unlike the
//! `SEREN_SCC_*` overrides, the file's keys win over these variables: they are the whole host's,
//! read by every OpenTelemetry program on it, and the file is this service's own.
//!
//! No endpoint anywhere: no traces, and the variables are not read. Only the settings; the spans
//! and the exporter are `crate::telemetry`'s.

use super::env::Env;
use super::error::ConfigError;
use crate::limits::MAX_SERVICE_NAME_BYTES;
use serde::Deserialize;
use url::Url;

/// The service name when neither the file nor `OTEL_SERVICE_NAME` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "seren-corpus-callosum";

/// The path OTLP/HTTP takes traces at, below a base endpoint (the OpenTelemetry exporter spec).
const TRACES_PATH: &str = "/v1/traces";

/// The `telemetry:` block as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileTelemetry {
    pub(super) otlp_endpoint: Option<String>,
    pub(super) service_name: Option<String>,
    pub(super) sample_ratio: Option<f64>,
}

/// Traces, on: where they are sent and how they are named and sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    /// The OTLP/HTTP traces url spans are POSTed to (`.../v1/traces`).
    pub endpoint: Url,
    /// `service.name` on every span.
    pub service_name: String,
    /// The share of traces started here that are kept (0..=1); a search that comes with a
    /// `traceparent` follows its caller's choice instead.
    pub sample_ratio: f64,
}

/// The block, checked: `Ok(None)` when no endpoint is set, in the file or the environment. A bad
/// value in the file is a problem naming its key (every one is named at once); a bad variable,
/// read only when the file leaves its key out, is an error naming the variable.
pub(super) fn read(
    file: FileTelemetry,
    env: &Env,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<Option<Telemetry>, ConfigError> {
    let before = problems.len();
    let endpoint = given(file.otlp_endpoint.as_deref()).and_then(|text| {
        base_endpoint("telemetry.otlp_endpoint", text)
            .map_err(|why| problems.push(why))
            .ok()
    });
    let service_name = (file.service_name.as_deref()).and_then(|text| {
        checked_name("telemetry.service_name", text)
            .map_err(|why| problems.push(why))
            .ok()
    });
    let sample_ratio = file.sample_ratio.and_then(|ratio| {
        checked_ratio(ratio)
            .map_err(|why| problems.push(format!("telemetry.sample_ratio {why}")))
            .ok()
    });
    if problems.len() > before {
        return Ok(None);
    }
    let endpoint = match endpoint {
        Some(endpoint) => endpoint,
        None => match from_env(env)? {
            Some(endpoint) => endpoint,
            None => {
                if file.service_name.is_some() || file.sample_ratio.is_some() {
                    warnings.push(
                        "telemetry: no otlp_endpoint (nor OTEL_EXPORTER_OTLP_ENDPOINT) is set, \
                         so no traces are sent; service_name and sample_ratio wait for one"
                            .into(),
                    );
                }
                return Ok(None);
            }
        },
    };
    let service_name = match service_name {
        Some(name) => name,
        None => match env.var("OTEL_SERVICE_NAME") {
            Some(text) => {
                checked_name("OTEL_SERVICE_NAME", &text).map_err(|message| ConfigError::Env {
                    name: "OTEL_SERVICE_NAME",
                    message,
                })?
            }
            None => DEFAULT_SERVICE_NAME.to_owned(),
        },
    };
    let sample_ratio = match sample_ratio {
        Some(ratio) => ratio,
        None => match env.var("OTEL_TRACES_SAMPLER_ARG") {
            Some(text) => (text.trim().parse::<f64>().ok())
                .and_then(|ratio| checked_ratio(ratio).ok())
                .ok_or_else(|| ConfigError::Env {
                    name: "OTEL_TRACES_SAMPLER_ARG",
                    message: format!(
                        "expected the share of traces kept, a number within 0..=1, got {text:?}"
                    ),
                })?,
            None => 1.0,
        },
    };
    Ok(Some(Telemetry {
        endpoint,
        service_name,
        sample_ratio,
    }))
}

/// The endpoint the environment names, as any OpenTelemetry SDK reads it: the traces url as
/// given (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), else a base url with `/v1/traces` added
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`).
fn from_env(env: &Env) -> Result<Option<Url>, ConfigError> {
    const TRACES: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
    const BASE: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
    if let Some(text) = env.var(TRACES) {
        return endpoint(TRACES, text.trim())
            .map(Some)
            .map_err(|message| ConfigError::Env {
                name: TRACES,
                message,
            });
    }
    match env.var(BASE) {
        Some(text) => base_endpoint(BASE, text.trim())
            .map(Some)
            .map_err(|message| ConfigError::Env {
                name: BASE,
                message,
            }),
        None => Ok(None),
    }
}

/// A base endpoint (the file's key, `OTEL_EXPORTER_OTLP_ENDPOINT`): `/v1/traces` is added to its
/// path, unless the path already ends with it (a traces url written where a base was meant).
fn base_endpoint(key: &str, text: &str) -> Result<Url, String> {
    let mut url = endpoint(key, text)?;
    if !url.path().ends_with(TRACES_PATH) {
        let path = format!("{}{TRACES_PATH}", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url)
}

/// An OTLP/HTTP url: `http://` or `https://`, a host, no user or password (a collector's
/// credentials go in `OTEL_EXPORTER_OTLP_HEADERS`, which no log shows), no `#fragment`. Plain
/// http is allowed anywhere: a span carries no query and no token.
fn endpoint(key: &str, text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|why| format!("{key} is not a url ({why})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "{key} must be an http:// or https:// url with a host (OTLP over HTTP)"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{key} must not hold a user or password (send a collector's credentials with \
             OTEL_EXPORTER_OTLP_HEADERS)"
        ));
    }
    if url.fragment().is_some() {
        return Err(format!("{key} must not have a #fragment"));
    }
    Ok(url)
}

/// A service name: not blank, at most [`MAX_SERVICE_NAME_BYTES`], printable.
fn checked_name(key: &str, text: &str) -> Result<String, String> {
    let name = text.trim();
    if name.is_empty() {
        return Err(format!("{key} must not be blank"));
    }
    if name.len() > MAX_SERVICE_NAME_BYTES {
        return Err(format!(
            "{key} is longer than {MAX_SERVICE_NAME_BYTES} bytes"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("{key} must not hold control characters"));
    }
    Ok(name.to_owned())
}

/// A share of traces kept: a finite number within 0..=1.
fn checked_ratio(ratio: f64) -> Result<f64, String> {
    if ratio.is_finite() && (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(format!("must be within 0..=1, got {ratio}"))
    }
}

/// A value set to something other than blanks.
fn given(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        file: FileTelemetry,
        env: &[(&str, &str)],
    ) -> (Result<Option<Telemetry>, String>, Vec<String>) {
        let (mut problems, mut warnings) = (Vec::new(), Vec::new());
        let read = read(file, &Env::of(env), &mut problems, &mut warnings);
        let read = match read {
            Ok(_) if !problems.is_empty() => Err(problems.join("; ")),
            Ok(telemetry) => Ok(telemetry),
            Err(error) => Err(error.to_string()),
        };
        (read, warnings)
    }

    fn file(endpoint: Option<&str>, name: Option<&str>, ratio: Option<f64>) -> FileTelemetry {
        FileTelemetry {
            otlp_endpoint: endpoint.map(str::to_owned),
            service_name: name.map(str::to_owned),
            sample_ratio: ratio,
        }
    }

    fn on(read: Result<Option<Telemetry>, String>) -> Telemetry {
        read.expect("no error").expect("telemetry on")
    }

    #[test]
    fn nothing_set_is_off_and_reads_no_variable() {
        let (read, warnings) = check(file(None, None, None), &[("OTEL_TRACES_SAMPLER_ARG", "x")]);
        assert_eq!(read, Ok(None));
        assert!(warnings.is_empty());
        let (read, warnings) = check(file(None, Some("a"), Some(0.5)), &[]);
        assert_eq!(read, Ok(None));
        assert!(warnings[0].contains("no otlp_endpoint"), "{warnings:?}");
    }

    #[test]
    fn the_file_key_is_a_base_and_wins_over_the_variables() {
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ];
        let t = on(check(
            file(Some("http://127.0.0.1:4318"), Some("mine"), Some(0.5)),
            &both,
        )
        .0);
        assert_eq!(t.endpoint.as_str(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!((t.service_name.as_str(), t.sample_ratio), ("mine", 0.5));
        let t = on(check(file(Some("https://c.example/otlp/"), None, None), &both).0);
        assert_eq!(t.endpoint.as_str(), "https://c.example/otlp/v1/traces");
        assert_eq!(
            (t.service_name.as_str(), t.sample_ratio),
            ("from-env", 0.25)
        );
        let t = on(check(file(Some("http://c:4318/v1/traces"), None, None), &[]).0);
        assert_eq!(t.endpoint.as_str(), "http://c:4318/v1/traces");
        assert_eq!(
            (t.service_name.as_str(), t.sample_ratio),
            (DEFAULT_SERVICE_NAME, 1.0)
        );
    }

    #[test]
    fn the_traces_variable_is_taken_as_given_and_before_the_base() {
        let t = on(check(
            file(None, None, None),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:9/custom",
                ),
            ],
        )
        .0);
        assert_eq!(t.endpoint.as_str(), "http://traces:9/custom");
        let t = on(check(
            file(None, None, None),
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")],
        )
        .0);
        assert_eq!(t.endpoint.as_str(), "http://base:4318/v1/traces");
    }

    #[test]
    fn bad_file_values_name_their_keys_all_at_once() {
        let (read, _) = check(file(Some("grpc://c:4317"), Some(" "), Some(1.5)), &[]);
        let why = read.unwrap_err();
        for key in [
            "telemetry.otlp_endpoint must be an http:// or https:// url",
            "telemetry.service_name must not be blank",
            "telemetry.sample_ratio must be within 0..=1, got 1.5",
        ] {
            assert!(why.contains(key), "{why}");
        }
        for (endpoint, words) in [
            ("not a url", "telemetry.otlp_endpoint is not a url"),
            ("http://user:pw@c:4318", "must not hold a user or password"),
            ("http://c:4318/#x", "must not have a #fragment"),
        ] {
            let why = check(file(Some(endpoint), None, None), &[]).0.unwrap_err();
            assert!(why.contains(words), "{why}");
            assert!(!why.contains("pw@"), "{why}");
        }
        let why = check(file(Some("http://c"), None, Some(f64::NAN)), &[])
            .0
            .unwrap_err();
        assert!(
            why.contains("telemetry.sample_ratio must be within 0..=1"),
            "{why}"
        );
    }

    #[test]
    fn bad_variables_name_the_variable() {
        let endpoint = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        for (env, named) in [
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "nope")],
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            ),
            (
                vec![endpoint[0], ("OTEL_TRACES_SAMPLER_ARG", "half")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (
                vec![endpoint[0], ("OTEL_TRACES_SAMPLER_ARG", "-0.1")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (
                vec![endpoint[0], ("OTEL_SERVICE_NAME", "a\u{7}b")],
                "OTEL_SERVICE_NAME",
            ),
        ] {
            let why = check(file(None, None, None), &env).0.unwrap_err();
            assert!(
                why.starts_with(&format!("environment variable {named}:")),
                "{why}"
            );
        }
        // A variable the file's key stands in front of is not read, so not judged either.
        let t = on(check(
            file(None, None, Some(0.1)),
            &[endpoint[0], ("OTEL_TRACES_SAMPLER_ARG", "half")],
        )
        .0);
        assert_eq!(t.sample_ratio, 0.1);
    }
}

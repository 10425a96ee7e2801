//! Logging and OTLP export for the `eai-gpu` binary, from the environment:
//!
//! - logs go to stderr, filtered by `RUST_LOG` (default given by the command), as JSON with `EAI_LOG_FORMAT=json`;
//! - spans are exported over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
//!   The standard variables apply: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//!   `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` and `_TIMEOUT`, `OTEL_TRACES_SAMPLER[_ARG]` (default: parent-based,
//!   always on), `OTEL_BSP_*`. Which spans are exported is filtered apart from the logs, by `EAI_TRACE_FILTER`
//!   (default `info`): turning logs down never turns traces off.
//!
//! Spans are sent by the SDK's batch processor on a thread of its own, so exporting never blocks a request.

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{bail, Context as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Flushes and stops the exporter when dropped (at the end of `main`).
#[derive(Debug)]
pub struct Guard {
    provider: Option<SdkTracerProvider>,
}

impl Guard {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            if let Err(e) = p.shutdown() {
                eprintln!("warning: could not flush the last spans to the OTLP endpoint: {e}");
            }
        }
    }
}

fn env(k: &str) -> Option<String> {
    std::env::var(k)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Whether the environment asks for span export.
pub fn export_requested() -> anyhow::Result<bool> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    match env("OTEL_TRACES_EXPORTER").as_deref() {
        None | Some("otlp") => {}
        Some("none") => return Ok(false),
        Some(other) => bail!("OTEL_TRACES_EXPORTER={other} is not supported: use otlp (or none)"),
    }
    let endpoint =
        env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if endpoint.is_none() {
        return Ok(false);
    }
    let protocol =
        env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match protocol.as_deref() {
        None | Some("http/protobuf") => Ok(true),
        Some(p) => bail!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={p} is not supported: eai-gpu exports OTLP over HTTP with protobuf \
             (http/protobuf, the collector's port 4318)"
        ),
    }
}

/// Sets up logging and, when the environment asks for it, span export. `service` is the default
/// `service.name` (`OTEL_SERVICE_NAME` overrides it). Keep the guard until the end of `main`.
pub fn init(service: &str, default_log_filter: &str) -> anyhow::Result<Guard> {
    let logs =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_log_filter));
    // Colours only on a terminal: a journal, a file or a pipe gets plain text (and `NO_COLOR` turns them off).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr()) && env("NO_COLOR").is_none();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let fmt = if env("EAI_LOG_FORMAT").is_some_and(|v| v == "json") {
        fmt.json().with_filter(logs).boxed()
    } else {
        fmt.with_filter(logs).boxed()
    };
    let provider = if export_requested()? {
        Some(provider(service)?)
    } else {
        None
    };
    let otel = match &provider {
        Some(p) => {
            let spans = match env("EAI_TRACE_FILTER") {
                Some(f) => EnvFilter::try_new(&f).with_context(|| {
                    format!("EAI_TRACE_FILTER `{f}` is not a filter like `info,eai_store=debug`")
                })?,
                None => EnvFilter::new("info"),
            };
            Some(
                tracing_opentelemetry::layer()
                    .with_tracer(p.tracer("eai-gpu"))
                    .with_filter(spans)
                    .boxed(),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()
        .context("cannot set up logging")?;
    if provider.is_some() {
        tracing::info!(service, "exporting spans over OTLP/HTTP");
    }
    Ok(Guard { provider })
}

fn provider(service: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(Blocking::default())
        .build()
        .context("cannot set up the OTLP exporter (OTEL_EXPORTER_OTLP_* variables)")?;
    // The SDK's default resource reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; ours names the service
    // when they do not.
    let mut resource = Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(service.to_string());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// How long one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT` also bounds it in the SDK).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of the exporter. The SDK's batch processor exports from a thread of its own, outside any
/// async runtime: a blocking client fits it (built on that thread, on first use), and keeps one HTTP stack
/// (the workspace's reqwest) in the binary.
#[derive(Debug, Default)]
struct Blocking {
    client: OnceLock<reqwest::blocking::Client>,
}

#[async_trait::async_trait]
impl HttpClient for Blocking {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = match self.client.get() {
            Some(c) => c,
            None => {
                let c = reqwest::blocking::Client::builder()
                    .timeout(EXPORT_TIMEOUT)
                    .build()?;
                self.client.get_or_init(|| c)
            }
        };
        let (parts, body) = request.into_parts();
        let resp = client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body.to_vec())
            .send()?;
        let mut out = Response::builder().status(resp.status());
        for (k, v) in resp.headers() {
            out = out.header(k, v);
        }
        let body = resp.bytes()?;
        Ok(out.body(body)?)
    }
}

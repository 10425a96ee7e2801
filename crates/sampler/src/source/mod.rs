//! Sources: where readings come from. Each is a small adapter behind [`Source`], given its URL (or library) by
//! configuration, so tests point it at fixture files and local servers:
//!
//! - [`dcgm::DcgmSource`]: a DCGM exporter's `/metrics` (or a `file://` capture of one);
//! - [`prometheus::PrometheusSource`]: the same series through a Prometheus server's HTTP API, which can also
//!   backfill windows missed while the sampler was down;
//! - `nvml::NvmlSource` (cargo feature `nvml`): the NVIDIA driver's library, loaded at run time; it measures
//!   each process's GPU time and memory ([`processes`]), so that a GPU shared by several pods is split by use;
//! - [`processes::WithProcesses`]: a DCGM or Prometheus source with NVML's per-process reader beside it
//!   (`--nvml-processes`);
//! - [`slurm::WithSlurm`]: a device source with Slurm's running jobs read beside it (`--slurm-jobs`): each GPU
//!   goes to the job holding it;
//! - [`vllm::VllmReader`]: not a GPU source but read beside one: vLLM servers' token and timing counters.

use async_trait::async_trait;
use eai_engine::Timestamp;

use crate::error::Result;
use crate::readings::Readings;

pub mod dcgm;
pub mod hami;
#[cfg(feature = "nvml")]
pub mod nvml;
pub mod processes;
pub mod prometheus;
pub mod slurm;
pub mod vllm;

/// A source of per-GPU readings.
#[async_trait]
pub trait Source: Send {
    /// A short name for logs and errors: `dcgm`, `prometheus`, `nvml`.
    fn name(&self) -> &'static str;

    /// Reads the current values, for the window that ends at `at`. An error means no readings this time
    /// (never zeros): the caller counts it and tries again at the next tick.
    async fn scrape(&mut self, at: Timestamp) -> Result<Readings>;

    /// Whether [`Source::backfill`] can read the past.
    fn can_backfill(&self) -> bool {
        false
    }

    /// Readings for past window ends (ascending, evenly spaced by `window_ms`), for the windows missed while
    /// the sampler was down. Only ends the source had data for are returned.
    async fn backfill(&mut self, _ends: &[Timestamp], _window_ms: i64) -> Result<Vec<Readings>> {
        Ok(Vec::new())
    }
}

/// An HTTP client with a timeout, for the sources: `https://` with the system's roots, and a private CA's when
/// `EAI_CA_FILE` names a PEM file.
pub(crate) fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(std::time::Duration::from_secs(5)));
    if let Some(path) = std::env::var_os("EAI_CA_FILE").filter(|v| !v.is_empty()) {
        let certs = eai_client::ca_certificates(std::path::Path::new(&path))
            .map_err(|e| crate::error::SamplerError::config(e.to_string()))?;
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    builder.build().map_err(|e| {
        crate::error::SamplerError::Unavailable(format!("cannot build an HTTP client: {e}"))
    })
}

/// Checks a URL the sampler will call: `http://` or `https://` with a host.
pub(crate) fn check_http_url(flag: &str, url: &str) -> Result<()> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    if rest.is_none_or(str::is_empty) {
        return Err(crate::error::SamplerError::config(format!(
            "{flag} `{url}` must be an http:// or https:// URL"
        )));
    }
    Ok(())
}

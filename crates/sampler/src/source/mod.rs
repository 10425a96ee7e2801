//! Sources: where readings come from. Each is a small adapter behind [`Source`], given its URL (or library) by
//! configuration, so tests point it at fixture files and local servers:
//!
//! - [`dcgm::DcgmSource`]: a DCGM exporter's `/metrics` (or a `file://` capture of one);
//! - [`prometheus::PrometheusSource`]: the same series through a Prometheus server's HTTP API, which can also
//!   backfill windows missed while the sampler was down;
//! - `nvml::NvmlSource` (cargo feature `nvml`): the NVIDIA driver's library, loaded at run time.

use async_trait::async_trait;
use eai_engine::Timestamp;

use crate::dcgm::Readings;
use crate::error::Result;

pub mod dcgm;
#[cfg(feature = "nvml")]
pub mod nvml;
pub mod prometheus;

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

/// An HTTP client with a timeout, for the sources.
pub(crate) fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(std::time::Duration::from_secs(5)))
        .build()
        .map_err(|e| {
            crate::error::SamplerError::Unavailable(format!("cannot build an HTTP client: {e}"))
        })
}

/// Checks a URL the sampler will call: `http://` only (this build has no TLS; put a TLS-terminating proxy on the
/// node if the server only speaks HTTPS).
pub(crate) fn check_http_url(flag: &str, url: &str) -> Result<()> {
    if url.starts_with("https://") {
        return Err(crate::error::SamplerError::config(format!(
            "{flag} `{url}`: https:// is not supported by this build (no TLS); use http://, e.g. through a local \
             TLS-terminating proxy"
        )));
    }
    if !url.starts_with("http://") || url.len() <= "http://".len() {
        return Err(crate::error::SamplerError::config(format!(
            "{flag} `{url}` must be an http:// URL"
        )));
    }
    Ok(())
}

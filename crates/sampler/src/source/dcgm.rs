//! The DCGM exporter source: `GET <url>` (its `/metrics`), parsed by [`crate::dcgm::from_text`]. A `file://`
//! URL reads a capture instead (fixtures, `--once --dry-run` on a saved scrape).

use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;

use crate::dcgm::from_text;
use crate::error::{Result, SamplerError};
use crate::readings::Readings;
use crate::source::{check_http_url, http_client, Source};

/// A DCGM exporter's `/metrics`.
#[derive(Debug)]
pub struct DcgmSource {
    url: String,
    http: reqwest::Client,
}

impl DcgmSource {
    /// `url`: `http://host:9400/metrics` or `file:///path/to/capture.prom`.
    pub fn new(url: &str, timeout: Duration) -> Result<Self> {
        if !url.starts_with("file://") {
            check_http_url("--dcgm-url", url)?;
        }
        Ok(DcgmSource {
            url: url.to_string(),
            http: http_client(timeout)?,
        })
    }

    async fn fetch(&self) -> Result<String> {
        if let Some(path) = self.url.strip_prefix("file://") {
            return tokio::fs::read_to_string(path)
                .await
                .map_err(|e| SamplerError::source("dcgm", format!("cannot read {path}: {e}")));
        }
        let resp = self
            .http
            .get(&self.url)
            .send()
            .await
            .map_err(|e| SamplerError::source("dcgm", format!("GET {}: {e}", self.url)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(SamplerError::source(
                "dcgm",
                format!("GET {} answered {status}", self.url),
            ));
        }
        resp.text()
            .await
            .map_err(|e| SamplerError::source("dcgm", format!("GET {}: {e}", self.url)))
    }
}

#[async_trait]
impl Source for DcgmSource {
    fn name(&self) -> &'static str {
        "dcgm"
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let text = self.fetch().await?;
        Ok(from_text(&text, at))
    }
}

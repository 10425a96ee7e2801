//! HAMi beside a device source (`--hami-url`): each window, HAMi's vGPU monitor (`GET <url>`, its `/metrics`) is
//! read too, and its per-container GPU time and memory ([`crate::hami`]) become the measured shares of the GPUs it
//! names ([`crate::shares::merge`]), so that a GPU HAMi shares between pods is split by what each used. A read
//! that fails keeps the device source's readings (shared GPUs then split equally, and reported so), never a
//! made-up zero. Like the DCGM source, a `file://` URL reads a capture.

use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;

use crate::error::{Result, SamplerError};
use crate::readings::Readings;
use crate::source::{check_http_url, http_client, Source};

/// A device source with HAMi's exporter read beside it.
pub struct WithHami {
    inner: Box<dyn Source>,
    url: String,
    http: reqwest::Client,
}

impl WithHami {
    pub fn new(inner: Box<dyn Source>, url: &str, timeout: Duration) -> Result<Self> {
        if !url.starts_with("file://") {
            check_http_url("--hami-url", url)?;
        }
        Ok(WithHami {
            inner,
            url: url.to_string(),
            http: http_client(timeout)?,
        })
    }
}

impl std::fmt::Debug for WithHami {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithHami")
            .field("inner", &self.inner.name())
            .field("url", &self.url)
            .finish()
    }
}

/// HAMi's exporter text (a free function: the source itself is `Send`, not `Sync`).
async fn fetch(http: &reqwest::Client, url: &str) -> Result<String> {
    if let Some(path) = url.strip_prefix("file://") {
        return tokio::fs::read_to_string(path)
            .await
            .map_err(|e| SamplerError::source("hami", format!("cannot read {path}: {e}")));
    }
    let resp = http
        .get(url)
        .send()
        .await
        .map_err(|e| SamplerError::source("hami", format!("GET {url}: {e}")))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(SamplerError::source(
            "hami",
            format!("GET {url} answered {status}"),
        ));
    }
    resp.text()
        .await
        .map_err(|e| SamplerError::source("hami", format!("GET {url}: {e}")))
}

#[async_trait]
impl Source for WithHami {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let mut readings = self.inner.scrape(at).await?;
        match fetch(&self.http, &self.url).await {
            Ok(text) => {
                let (measured, stats) = crate::hami::measured_from_text(&text);
                crate::shares::merge(&mut readings, &measured);
                if stats.malformed > 0 || stats.busy_devices_read_idle > 0 {
                    tracing::debug!(
                        ?stats,
                        "HAMi's exporter read with lines or devices left out"
                    );
                }
            }
            Err(e) => tracing::warn!(window_end = %at, error = %e,
                "cannot read HAMi's exporter: shared GPUs of this window are split equally"),
        }
        Ok(readings)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use eai_engine::Timestamp;

    use super::WithHami;
    use crate::source::dcgm::DcgmSource;
    use crate::source::Source;

    fn fixture(dir: &str, name: &str) -> String {
        format!(
            "file://{}/tests/fixtures/{dir}/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    /// DCGM's repeated series of a GPU HAMi shares between two pods (no per-pod figures of its own), with
    /// HAMi's exporter beside it: each pod's share is its measured GPU time (62 % and 23 %), the rest idle; a
    /// HAMi exporter that cannot be read leaves the device source's readings as they were (split equally).
    #[tokio::test]
    async fn hamis_figures_become_the_measured_shares_of_the_gpus_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let uuid = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec";
        let mut text = String::new();
        for (ns, pod, c) in [
            ("team-a", "vllm-a-0", "vllm"),
            ("team-b", "embed-b-0", "server"),
        ] {
            for (family, v) in [
                ("DCGM_FI_DEV_GPU_UTIL", "88"),
                ("DCGM_FI_DEV_FB_USED", "19664"),
                ("DCGM_FI_DEV_POWER_USAGE", "300"),
            ] {
                text.push_str(&format!(
                    "{family}{{gpu=\"0\",UUID=\"{uuid}\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"gpu-node-1\",\
                     container=\"{c}\",namespace=\"{ns}\",pod=\"{pod}\"}} {v}\n"
                ));
            }
        }
        let capture = dir.path().join("dcgm.prom");
        std::fs::write(&capture, text).unwrap();
        let device = || {
            Box::new(
                DcgmSource::new(
                    &format!("file://{}", capture.display()),
                    Duration::from_secs(1),
                )
                .unwrap(),
            )
        };
        let mut with = WithHami::new(
            device(),
            &fixture("hami", "hami_v2.10_vgpu_monitor_a100x4.prom"),
            Duration::from_secs(1),
        )
        .unwrap();
        let r = with.scrape(Timestamp(15_000)).await.unwrap();
        let times: Vec<(String, Option<String>)> = r.devices[0]
            .sharers
            .iter()
            .map(|s| {
                (
                    s.workload.pod.clone(),
                    s.gpu_time.map(|t| t.normalize().to_string()),
                )
            })
            .collect();
        assert_eq!(
            times,
            vec![
                ("vllm-a-0".to_string(), Some("0.62".to_string())),
                ("embed-b-0".to_string(), Some("0.23".to_string())),
            ]
        );
        let mut broken = WithHami::new(
            device(),
            "file:///nonexistent/hami.prom",
            Duration::from_secs(1),
        )
        .unwrap();
        let r = broken.scrape(Timestamp(15_000)).await.unwrap();
        assert_eq!(r.devices[0].sharers.len(), 2);
        assert!(r.devices[0].sharers.iter().all(|s| s.gpu_time.is_none()));
    }
}

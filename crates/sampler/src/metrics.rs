//! The sampler's own Prometheus metrics (`--metrics-listen`): base units, `_total` on counters.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Result, SamplerError};

/// Counters and gauges, shared between the sampler and the metrics listener.
#[derive(Debug, Default)]
pub struct Metrics {
    pub scrapes: AtomicU64,
    pub scrape_errors: AtomicU64,
    pub samples_sent: AtomicU64,
    pub samples_spooled: AtomicU64,
    pub samples_dropped: AtomicU64,
    pub samples_rejected: AtomicU64,
    pub samples_duplicate: AtomicU64,
    pub delivery_errors: AtomicU64,
    pub spool_bytes: AtomicU64,
    /// Batches (one per window) and samples in the spool not delivered yet.
    pub spool_batches: AtomicU64,
    pub spool_samples: AtomicU64,
    /// When the last tick ran (Unix ms; 0: none yet).
    pub last_tick_ms: AtomicU64,
    pub last_success_ms: AtomicU64,
    pub malformed_lines: AtomicU64,
    pub sentinel_values: AtomicU64,
    pub out_of_range_values: AtomicU64,
    pub unmapped_pod_samples: AtomicU64,
    pub incomplete_devices: AtomicU64,
    pub missing_memory_samples: AtomicU64,
    pub unknown_mig_profiles: AtomicU64,
    pub backfilled_windows: AtomicU64,
}

impl Metrics {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(c: &AtomicU64, n: u64) {
        c.store(n, Ordering::Relaxed);
    }

    /// The spool's size: bytes, and the batches and samples not delivered yet.
    pub fn set_spool(&self, spool: &crate::spool::Spool) {
        let (batches, samples) = spool.pending();
        Self::set(&self.spool_bytes, spool.bytes());
        Self::set(&self.spool_batches, batches);
        Self::set(&self.spool_samples, samples);
    }

    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let rows: [(&str, &str, &str, f64); 21] = [
            (
                "scrapes_total",
                "counter",
                "Reads of the source (successful or not).",
                Self::get(&self.scrapes) as f64,
            ),
            (
                "scrape_errors_total",
                "counter",
                "Reads of the source that failed: no sample was made for their window.",
                Self::get(&self.scrape_errors) as f64,
            ),
            (
                "samples_sent_total",
                "counter",
                "Samples the control plane accepted.",
                Self::get(&self.samples_sent) as f64,
            ),
            (
                "samples_spooled_total",
                "counter",
                "Samples written (fsync'd) to the spool.",
                Self::get(&self.samples_spooled) as f64,
            ),
            (
                "samples_dropped_total",
                "counter",
                "Undelivered samples deleted because the spool was full (oldest first).",
                Self::get(&self.samples_dropped) as f64,
            ),
            (
                "samples_rejected_total",
                "counter",
                "Samples the control plane refused as invalid, kept in rejected/.",
                Self::get(&self.samples_rejected) as f64,
            ),
            (
                "samples_duplicate_total",
                "counter",
                "Samples the control plane already had (re-sends, counted once there).",
                Self::get(&self.samples_duplicate) as f64,
            ),
            (
                "delivery_errors_total",
                "counter",
                "Sends to the control plane that failed and will be retried (unreachable, 5xx, 429, refused key).",
                Self::get(&self.delivery_errors) as f64,
            ),
            (
                "spool_bytes",
                "gauge",
                "Bytes held in the spool's segments.",
                Self::get(&self.spool_bytes) as f64,
            ),
            (
                "spool_batches",
                "gauge",
                "Batches (one per window) in the spool not delivered yet.",
                Self::get(&self.spool_batches) as f64,
            ),
            (
                "spool_samples",
                "gauge",
                "Samples in the spool not delivered yet.",
                Self::get(&self.spool_samples) as f64,
            ),
            (
                "last_tick_timestamp_seconds",
                "gauge",
                "When the sampler last ticked (read its source and tried to deliver).",
                Self::get(&self.last_tick_ms) as f64 / 1000.0,
            ),
            (
                "last_success_timestamp_seconds",
                "gauge",
                "When a batch was last accepted by the control plane.",
                Self::get(&self.last_success_ms) as f64 / 1000.0,
            ),
            (
                "malformed_lines_total",
                "counter",
                "Exposition lines (or series) that could not be read: skipped.",
                Self::get(&self.malformed_lines) as f64,
            ),
            (
                "sentinel_values_total",
                "counter",
                "DCGM blank sentinel values skipped.",
                Self::get(&self.sentinel_values) as f64,
            ),
            (
                "out_of_range_values_total",
                "counter",
                "Values out of their range (negative, NaN, percent above 100) skipped.",
                Self::get(&self.out_of_range_values) as f64,
            ),
            (
                "unmapped_pod_samples_total",
                "counter",
                "Samples of pods no attribution rule maps (shared, derived deployment id).",
                Self::get(&self.unmapped_pod_samples) as f64,
            ),
            (
                "incomplete_devices_total",
                "counter",
                "Devices skipped for a window: no utilization or no power.",
                Self::get(&self.incomplete_devices) as f64,
            ),
            (
                "missing_memory_samples_total",
                "counter",
                "Samples sent with memory 0 because the source had no FB_USED.",
                Self::get(&self.missing_memory_samples) as f64,
            ),
            (
                "unknown_mig_profiles_total",
                "counter",
                "MIG instances skipped: unreadable profile.",
                Self::get(&self.unknown_mig_profiles) as f64,
            ),
            (
                "backfilled_windows_total",
                "counter",
                "Past windows read back from Prometheus after a downtime.",
                Self::get(&self.backfilled_windows) as f64,
            ),
        ];
        let mut out = String::with_capacity(4096);
        for (name, kind, help, v) in rows {
            let _ = writeln!(out, "# HELP eai_sampler_{name} {help}");
            let _ = writeln!(out, "# TYPE eai_sampler_{name} {kind}");
            let _ = writeln!(out, "eai_sampler_{name} {v}");
        }
        out
    }
}

/// Binds `addr` and serves `GET /metrics` until the task is dropped. Returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use axum::routing::get;
    let listener =
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| SamplerError::Metrics {
                addr: addr.to_string(),
                message: e.to_string(),
            })?;
    let bound = listener.local_addr().map_err(|e| SamplerError::Metrics {
        addr: addr.to_string(),
        message: e.to_string(),
    })?;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let m = metrics.clone();
            async move { ([("content-type", "text/plain; version=0.0.4")], m.render()) }
        }),
    );
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_parses_with_our_own_parser() {
        let m = Metrics::default();
        Metrics::add(&m.samples_sent, 8);
        Metrics::set(&m.last_success_ms, 1_700_000_000_500);
        let text = m.render();
        let mut seen = Vec::new();
        let stats = crate::exposition::parse(&text, |l| seen.push((l.name.to_string(), l.value)));
        assert_eq!(stats.malformed, 0);
        assert!(seen.contains(&("eai_sampler_samples_sent_total".to_string(), 8.0)));
        assert!(seen.contains(&(
            "eai_sampler_last_success_timestamp_seconds".to_string(),
            1_700_000_000.5
        )));
        for name in [
            "scrapes_total",
            "scrape_errors_total",
            "samples_spooled_total",
            "samples_dropped_total",
            "spool_bytes",
            "spool_batches",
            "spool_samples",
            "delivery_errors_total",
            "last_tick_timestamp_seconds",
            "malformed_lines_total",
        ] {
            assert!(
                seen.iter()
                    .any(|(n, _)| n == &format!("eai_sampler_{name}")),
                "{name}"
            );
        }
    }
}

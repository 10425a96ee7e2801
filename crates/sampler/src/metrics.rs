//! The sampler's own Prometheus metrics (`--metrics-listen`), with the prometheus-client crate: base units,
//! `_total` on counters, served in the OpenMetrics text format ([`CONTENT_TYPE`]).

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::{Result, SamplerError};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A gauge of whole numbers.
pub type UGauge = Gauge<u64, AtomicU64>;

/// A Unix time set in milliseconds and shown in seconds.
#[derive(Debug, Clone, Default)]
pub struct UnixMs {
    ms: Arc<AtomicU64>,
    seconds: Gauge<f64, AtomicU64>,
}

/// What [`Metrics::add`], [`Metrics::set`] and [`Metrics::get`] work on.
pub trait Value {
    fn get(&self) -> u64;
}

impl Value for Counter {
    fn get(&self) -> u64 {
        Counter::get(self)
    }
}

impl Value for UGauge {
    fn get(&self) -> u64 {
        Gauge::get(self)
    }
}

impl Value for UnixMs {
    fn get(&self) -> u64 {
        self.ms.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A gauge [`Metrics::set`] sets.
pub trait Settable: Value {
    fn set(&self, v: u64);
}

impl Settable for UGauge {
    fn set(&self, v: u64) {
        Gauge::set(self, v);
    }
}

impl Settable for UnixMs {
    fn set(&self, ms: u64) {
        self.ms.store(ms, std::sync::atomic::Ordering::Relaxed);
        self.seconds.set(ms as f64 / 1000.0);
    }
}

/// A metric to register.
enum Handle<'a> {
    C(&'a Counter),
    G(&'a UGauge),
    F(&'a Gauge<f64, AtomicU64>),
}

/// Counters and gauges, shared between the sampler and the metrics listener.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub scrapes: Counter,
    pub scrape_errors: Counter,
    pub samples_sent: Counter,
    pub samples_spooled: Counter,
    pub samples_dropped: Counter,
    pub spool_write_errors: Counter,
    pub clock_behind_ticks: Counter,
    pub samples_rejected: Counter,
    pub samples_duplicate: Counter,
    pub delivery_errors: Counter,
    pub spool_bytes: UGauge,
    /// Batches (one per window) and samples in the spool not delivered yet.
    pub spool_batches: UGauge,
    pub spool_samples: UGauge,
    /// When the last tick ran (Unix ms; 0: none yet).
    pub last_tick_ms: UnixMs,
    pub last_success_ms: UnixMs,
    pub malformed_lines: Counter,
    pub sentinel_values: Counter,
    pub out_of_range_values: Counter,
    pub unmapped_pod_samples: Counter,
    pub incomplete_devices: Counter,
    pub missing_memory_samples: Counter,
    pub unknown_mig_profiles: Counter,
    pub names_fitted: Counter,
    pub bad_uuids: Counter,
    pub shared_devices: Counter,
    pub equal_shares: Counter,
    /// Slurm (`--slurm-jobs`): running jobs read last, and reads that failed.
    pub slurm_jobs: UGauge,
    pub slurm_errors: Counter,
    pub backfilled_windows: Counter,
    pub vllm_reads: Counter,
    pub vllm_read_errors: Counter,
    pub vllm_counter_resets: Counter,
    pub vllm_events_spooled: Counter,
    pub vllm_events_sent: Counter,
    pub vllm_events_rejected: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut m = Metrics {
            registry: Registry::default(),
            scrapes: Counter::default(),
            scrape_errors: Counter::default(),
            samples_sent: Counter::default(),
            samples_spooled: Counter::default(),
            samples_dropped: Counter::default(),
            spool_write_errors: Counter::default(),
            clock_behind_ticks: Counter::default(),
            samples_rejected: Counter::default(),
            samples_duplicate: Counter::default(),
            delivery_errors: Counter::default(),
            spool_bytes: UGauge::default(),
            spool_batches: UGauge::default(),
            spool_samples: UGauge::default(),
            last_tick_ms: UnixMs::default(),
            last_success_ms: UnixMs::default(),
            malformed_lines: Counter::default(),
            sentinel_values: Counter::default(),
            out_of_range_values: Counter::default(),
            unmapped_pod_samples: Counter::default(),
            incomplete_devices: Counter::default(),
            missing_memory_samples: Counter::default(),
            unknown_mig_profiles: Counter::default(),
            names_fitted: Counter::default(),
            bad_uuids: Counter::default(),
            shared_devices: Counter::default(),
            equal_shares: Counter::default(),
            slurm_jobs: UGauge::default(),
            slurm_errors: Counter::default(),
            backfilled_windows: Counter::default(),
            vllm_reads: Counter::default(),
            vllm_read_errors: Counter::default(),
            vllm_counter_resets: Counter::default(),
            vllm_events_spooled: Counter::default(),
            vllm_events_sent: Counter::default(),
            vllm_events_rejected: Counter::default(),
        };
        let mut registry = Registry::default();
        let rows: [(&str, &str, Handle<'_>); 35] = [
            (
                "scrapes",
                "Reads of the source (successful or not).",
                Handle::C(&m.scrapes),
            ),
            (
                "scrape_errors",
                "Reads of the source that failed: no sample was made for their window.",
                Handle::C(&m.scrape_errors),
            ),
            (
                "samples_sent",
                "Samples the control plane accepted.",
                Handle::C(&m.samples_sent),
            ),
            (
                "samples_spooled",
                "Samples written (fsync'd) to the spool.",
                Handle::C(&m.samples_spooled),
            ),
            (
                "samples_dropped",
                "Samples given up because the spool was full: new windows refused (--spool-full keep-oldest, from a source without history) or the oldest deleted (keep-newest).",
                Handle::C(&m.samples_dropped),
            ),
            (
                "spool_write_errors",
                "Windows or vLLM event batches the spool could not write (disk full, I/O error): a window is left \
                 unspooled (a gap at the control plane unless the source has history), vLLM events are kept in \
                 memory and tried again at the next tick.",
                Handle::C(&m.spool_write_errors),
            ),
            (
                "clock_behind_ticks",
                "Ticks whose window ended before the last window spooled: the wall clock stepped back. No window is \
                 read again; reading resumes once the clock passes the last window.",
                Handle::C(&m.clock_behind_ticks),
            ),
            (
                "samples_rejected",
                "Samples the control plane refused as invalid, kept in rejected/.",
                Handle::C(&m.samples_rejected),
            ),
            (
                "samples_duplicate",
                "Samples the control plane already had (re-sends, counted once there).",
                Handle::C(&m.samples_duplicate),
            ),
            (
                "delivery_errors",
                "Sends to the control plane that failed and will be retried (unreachable, 5xx, 429, refused key).",
                Handle::C(&m.delivery_errors),
            ),
            (
                "spool_bytes",
                "Bytes held in the spool's segments.",
                Handle::G(&m.spool_bytes),
            ),
            (
                "spool_batches",
                "Batches (one per window, or of vLLM usage events) in the spool not delivered yet.",
                Handle::G(&m.spool_batches),
            ),
            (
                "spool_samples",
                "Samples in the spool not delivered yet.",
                Handle::G(&m.spool_samples),
            ),
            (
                "last_tick_timestamp_seconds",
                "When the sampler last ticked (read its source and tried to deliver).",
                Handle::F(&m.last_tick_ms.seconds),
            ),
            (
                "last_success_timestamp_seconds",
                "When a batch was last accepted by the control plane.",
                Handle::F(&m.last_success_ms.seconds),
            ),
            (
                "malformed_lines",
                "Exposition lines (or series) that could not be read: skipped.",
                Handle::C(&m.malformed_lines),
            ),
            (
                "sentinel_values",
                "DCGM blank sentinel values skipped.",
                Handle::C(&m.sentinel_values),
            ),
            (
                "out_of_range_values",
                "Values out of their range (negative, NaN, percent above 100) skipped.",
                Handle::C(&m.out_of_range_values),
            ),
            (
                "unmapped_pod_samples",
                "Samples of pods no attribution rule maps (shared, derived deployment id).",
                Handle::C(&m.unmapped_pod_samples),
            ),
            (
                "incomplete_devices",
                "Devices skipped for a window: no utilization or no power.",
                Handle::C(&m.incomplete_devices),
            ),
            (
                "missing_memory_samples",
                "Samples sent with memory 0 because the source had no FB_USED.",
                Handle::C(&m.missing_memory_samples),
            ),
            (
                "unknown_mig_profiles",
                "MIG instances skipped: unreadable profile.",
                Handle::C(&m.unknown_mig_profiles),
            ),
            (
                "names_fitted",
                "Names (node, model, namespace, pod, deployment) cut to 253 characters or blank and replaced, so that the control plane takes the window's batch.",
                Handle::C(&m.names_fitted),
            ),
            (
                "bad_uuids",
                "Devices skipped: a GPU uuid blank or over 253 characters.",
                Handle::C(&m.bad_uuids),
            ),
            (
                "shared_devices",
                "Device-windows (a GPU or MIG instance in one window) that two or more pods used: split between them.",
                Handle::C(&m.shared_devices),
            ),
            (
                "equal_shares",
                "Shared device-windows split equally between their pods (no per-pod GPU time): estimates, reported by the control plane as equal_gpu_shares.",
                Handle::C(&m.equal_shares),
            ),
            (
                "slurm_jobs",
                "Slurm's running jobs read last (--slurm-jobs), of any node.",
                Handle::G(&m.slurm_jobs),
            ),
            (
                "slurm_errors",
                "Reads of Slurm's running jobs that failed (the jobs read last are kept five minutes).",
                Handle::C(&m.slurm_errors),
            ),
            (
                "backfilled_windows",
                "Past windows read back from Prometheus after a downtime.",
                Handle::C(&m.backfilled_windows),
            ),
            (
                "vllm_reads",
                "Reads of vLLM's counters (one per --vllm-url target, one per Prometheus discovery query).",
                Handle::C(&m.vllm_reads),
            ),
            (
                "vllm_read_errors",
                "Reads of vLLM's counters that failed: their series keep their baseline until the next read.",
                Handle::C(&m.vllm_read_errors),
            ),
            (
                "vllm_counter_resets",
                "vLLM series whose counters went down (a restart of vLLM): the delta is the new value.",
                Handle::C(&m.vllm_counter_resets),
            ),
            (
                "vllm_events_spooled",
                "vLLM usage events written (fsync'd) to the spool.",
                Handle::C(&m.vllm_events_spooled),
            ),
            (
                "vllm_events_sent",
                "vLLM usage events the control plane accepted.",
                Handle::C(&m.vllm_events_sent),
            ),
            (
                "vllm_events_rejected",
                "vLLM usage events the control plane refused as invalid, kept in rejected/.",
                Handle::C(&m.vllm_events_rejected),
            ),
        ];
        for (name, help, metric) in rows {
            // Counters are registered without `_total` (the crate appends it); the crate adds HELP's period.
            let name = format!("eai_sampler_{name}");
            let help = help.strip_suffix('.').unwrap_or(help);
            match metric {
                Handle::C(c) => registry.register(name, help, c.clone()),
                Handle::G(g) => registry.register(name, help, g.clone()),
                Handle::F(g) => registry.register(name, help, g.clone()),
            }
        }
        m.registry = registry;
        m
    }
}

impl Metrics {
    pub fn add(c: &Counter, n: u64) {
        c.inc_by(n);
    }

    pub fn set(g: &impl Settable, n: u64) {
        g.set(n);
    }

    /// The spool's size: bytes, and the batches and samples not delivered yet.
    pub fn set_spool(&self, spool: &crate::spool::Spool) {
        let (batches, samples) = spool.pending();
        Self::set(&self.spool_bytes, spool.bytes());
        Self::set(&self.spool_batches, batches);
        Self::set(&self.spool_samples, samples);
    }

    pub fn get(c: &impl Value) -> u64 {
        c.get()
    }

    /// The OpenMetrics text exposition ([`CONTENT_TYPE`]), `# EOF` included.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode the metrics");
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
            async move { ([("content-type", CONTENT_TYPE)], m.render()) }
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
    use super::Metrics;

    #[test]
    fn the_exposition_parses_with_our_own_parser() {
        let m = Metrics::default();
        Metrics::add(&m.samples_sent, 8);
        Metrics::set(&m.last_success_ms, 1_700_000_000_500);
        let text = m.render();
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(
            text.contains("# TYPE eai_sampler_samples_sent counter\n"),
            "{text}"
        );
        assert!(!text.contains("..\n"), "{text}");
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
            "spool_write_errors_total",
            "clock_behind_ticks_total",
            "spool_bytes",
            "spool_batches",
            "spool_samples",
            "delivery_errors_total",
            "last_tick_timestamp_seconds",
            "malformed_lines_total",
            "vllm_reads_total",
            "vllm_read_errors_total",
            "vllm_events_sent_total",
        ] {
            assert!(
                seen.iter()
                    .any(|(n, _)| n == &format!("eai_sampler_{name}")),
                "{name}"
            );
        }
    }
}

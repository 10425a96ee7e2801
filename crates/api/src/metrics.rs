//! Prometheus metrics, hand-rolled: a few counters and one latency histogram, rendered in the text format.
//! Names are in base units with `_total` on counters. These are this process's own; the figures read from the
//! store (the same on every replica) are cached by [`crate::store_metrics`] and rendered with them. Every
//! metric is documented in docs/METRICS.md.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store_metrics::Figures;

/// Upper bounds of the latency histogram, in microseconds (5 ms .. 10 s).
const BUCKETS_US: [u64; 12] = [
    5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000,
    10_000_000, 30_000_000,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Cumulative counts per bound of [`BUCKETS_US`].
    buckets: [u64; BUCKETS_US.len()],
    count: u64,
    sum_us: u64,
}

/// The registry. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    durations: Mutex<BTreeMap<String, Histogram>>,
    pub samples_ingested: AtomicU64,
    pub samples_duplicates: AtomicU64,
    pub samples_rejected: AtomicU64,
    pub usage_events_ingested: AtomicU64,
    /// Failed sign-ins by reason (`missing`, `malformed`, `unknown`, `revoked`, `expired`).
    auth_failures: Mutex<BTreeMap<&'static str, u64>>,
    /// Requests answered 429.
    pub rate_limited: AtomicU64,
    /// The audit chain's head as last read (seq, hash): what an operator anchors.
    audit_head: Mutex<Option<(u64, String)>>,
    /// The ClickHouse replica (all zero when there is none).
    pub replica: ReplicaMetrics,
    /// Budgets in force: (budget id, tenant id) -> spent over the limit, as last checked.
    budget_ratio: Mutex<BTreeMap<(String, String), String>>,
    /// Threshold crossings recorded, webhook deliveries acknowledged and failed.
    pub budget_crossings: AtomicU64,
    pub webhooks_delivered: AtomicU64,
    pub webhooks_failed: AtomicU64,
    /// Leases and the allocation batch.
    pub jobs: crate::leader::JobMetrics,
    /// The store-derived figures as last refreshed (rendered by every scrape).
    figures: Mutex<Arc<Figures>>,
    /// Parts of a refresh of the store-derived figures that failed (their last values were kept).
    pub refresh_failures: AtomicU64,
}

/// Lag and failures of the ClickHouse replica, set by the replicator.
#[derive(Debug, Default)]
pub struct ReplicaMetrics {
    /// Outbox entries not delivered yet (gauge).
    pub outbox_pending: AtomicU64,
    /// Age of the oldest of them, in seconds (gauge; 0 when none wait).
    pub outbox_oldest_age_seconds: AtomicU64,
    /// Rows ClickHouse stored (counter; a redelivery counts again).
    pub delivered_rows: AtomicU64,
    /// Failed attempts: schema migration, delivery or acknowledgement (counter).
    pub failures: AtomicU64,
    /// Unix time of the last delivery that succeeded (gauge; 0: never).
    pub last_success_timestamp_seconds: AtomicU64,
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one finished request. `route` must be a route template (bounded cardinality), never a raw path.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        if let Ok(mut m) = self.requests.lock() {
            *m.entry((method.to_string(), route.to_string(), status))
                .or_default() += 1;
        }
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        if let Ok(mut d) = self.durations.lock() {
            let h = d.entry(route.to_string()).or_default();
            h.count += 1;
            h.sum_us = h.sum_us.saturating_add(us);
            for (i, bound) in BUCKETS_US.iter().enumerate() {
                if us <= *bound {
                    h.buckets[i] += 1;
                }
            }
        }
    }

    pub fn auth_failed(&self, reason: &'static str) {
        if let Ok(mut m) = self.auth_failures.lock() {
            *m.entry(reason).or_default() += 1;
        }
    }

    pub fn rate_limited(&self) {
        Self::add(&self.rate_limited, 1);
    }

    /// The budgets in force as last checked: (budget id, tenant id, spent / limit as a decimal text).
    pub fn set_budgets(&self, rows: Vec<(String, String, String)>) {
        if let Ok(mut m) = self.budget_ratio.lock() {
            *m = rows.into_iter().map(|(b, t, r)| ((b, t), r)).collect();
        }
    }

    /// The store-derived figures as last refreshed.
    pub fn figures(&self) -> Arc<Figures> {
        self.figures
            .lock()
            .map(|f| Arc::clone(&f))
            .unwrap_or_default()
    }

    pub fn set_figures(&self, figures: Figures) {
        if let Ok(mut f) = self.figures.lock() {
            *f = Arc::new(figures);
        }
    }

    pub fn set_audit_head(&self, seq: u64, hash: &str) {
        if let Ok(mut h) = self.audit_head.lock() {
            *h = Some((seq, hash.to_string()));
        }
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(gauge: &AtomicU64, v: u64) {
        gauge.store(v, Ordering::Relaxed);
    }

    /// The Prometheus text exposition (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP eai_http_requests_total HTTP requests answered, by method, route template and status.\n");
        out.push_str("# TYPE eai_http_requests_total counter\n");
        if let Ok(m) = self.requests.lock() {
            for ((method, route, status), n) in m.iter() {
                let _ = writeln!(
                    out,
                    "eai_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                    escape(method),
                    escape(route)
                );
            }
        }
        out.push_str("# HELP eai_http_request_duration_seconds Time to answer an HTTP request, by route template.\n");
        out.push_str("# TYPE eai_http_request_duration_seconds histogram\n");
        if let Ok(d) = self.durations.lock() {
            for (route, h) in d.iter() {
                let r = escape(route);
                for (bound, n) in BUCKETS_US.iter().zip(h.buckets.iter()) {
                    let _ = writeln!(
                        out,
                        "eai_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{}\"}} {n}",
                        seconds(*bound)
                    );
                }
                let _ = writeln!(
                    out,
                    "eai_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}",
                    h.count
                );
                let _ = writeln!(
                    out,
                    "eai_http_request_duration_seconds_sum{{route=\"{r}\"}} {}",
                    seconds(h.sum_us)
                );
                let _ = writeln!(
                    out,
                    "eai_http_request_duration_seconds_count{{route=\"{r}\"}} {}",
                    h.count
                );
            }
        }
        out.push_str("# HELP eai_budget_spent_ratio Spent this month over the limit, per budget in force (1 = the limit).\n");
        out.push_str("# TYPE eai_budget_spent_ratio gauge\n");
        if let Ok(m) = self.budget_ratio.lock() {
            for ((budget, tenant), ratio) in m.iter() {
                let _ = writeln!(
                    out,
                    "eai_budget_spent_ratio{{budget_id=\"{}\",tenant_id=\"{}\"}} {ratio}",
                    escape(budget),
                    escape(tenant)
                );
            }
        }
        let counters: [(&str, &str, &AtomicU64); 8] = [
            (
                "eai_metrics_refresh_failures_total",
                "Parts of a refresh of the store-derived metrics that failed (their last values were kept).",
                &self.refresh_failures,
            ),
            (
                "eai_budget_threshold_crossings_total",
                "Budget thresholds crossed (each once a month).",
                &self.budget_crossings,
            ),
            (
                "eai_budget_webhooks_delivered_total",
                "Threshold webhooks acknowledged by their receiver (2xx).",
                &self.webhooks_delivered,
            ),
            (
                "eai_budget_webhooks_failed_total",
                "Threshold webhook attempts that failed (retried with backoff).",
                &self.webhooks_failed,
            ),
            (
                "eai_gpu_samples_ingested_total",
                "GPU samples stored (re-sends not counted).",
                &self.samples_ingested,
            ),
            (
                "eai_gpu_samples_duplicates_total",
                "GPU samples received again and counted once.",
                &self.samples_duplicates,
            ),
            (
                "eai_gpu_samples_rejected_total",
                "GPU samples of batches rejected as invalid or too large.",
                &self.samples_rejected,
            ),
            (
                "eai_usage_events_ingested_total",
                "Usage events accepted (upserted by event_id).",
                &self.usage_events_ingested,
            ),
        ];
        let r = &self.replica;
        let replica: [(&str, &str, &str, &AtomicU64); 5] = [
            (
                "eai_replica_outbox_pending",
                "gauge",
                "Outbox entries not yet delivered to the ClickHouse replica.",
                &r.outbox_pending,
            ),
            (
                "eai_replica_outbox_oldest_age_seconds",
                "gauge",
                "Age of the oldest outbox entry not yet delivered (0 when none wait).",
                &r.outbox_oldest_age_seconds,
            ),
            (
                "eai_replica_delivered_rows_total",
                "counter",
                "Rows delivered to the ClickHouse replica (redeliveries included).",
                &r.delivered_rows,
            ),
            (
                "eai_replica_failures_total",
                "counter",
                "Failed attempts to migrate or deliver to the ClickHouse replica.",
                &r.failures,
            ),
            (
                "eai_replica_last_success_timestamp_seconds",
                "gauge",
                "Unix time of the last successful delivery to the ClickHouse replica (0: never).",
                &r.last_success_timestamp_seconds,
            ),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                c.load(Ordering::Relaxed)
            );
        }
        for (name, kind, help, c) in replica {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                c.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP eai_auth_failures_total Failed sign-ins (the key is never recorded), by reason.\n");
        out.push_str("# TYPE eai_auth_failures_total counter\n");
        if let Ok(m) = self.auth_failures.lock() {
            for (reason, n) in m.iter() {
                let _ = writeln!(out, "eai_auth_failures_total{{reason=\"{reason}\"}} {n}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP eai_rate_limited_total Requests answered 429 rate_limited.\n# TYPE eai_rate_limited_total counter\neai_rate_limited_total {}",
            self.rate_limited.load(Ordering::Relaxed)
        );
        if let Ok(h) = self.audit_head.lock() {
            if let Some((seq, hash)) = h.as_ref() {
                let _ = writeln!(
                    out,
                    "# HELP eai_audit_head_seq Sequence of the audit chain's newest event: anchor it outside the database.\n\
                     # TYPE eai_audit_head_seq gauge\neai_audit_head_seq {seq}\n\
                     # HELP eai_audit_head_info The audit chain's newest event (its hash as a label).\n\
                     # TYPE eai_audit_head_info gauge\neai_audit_head_info{{seq=\"{seq}\",hash=\"{hash}\"}} 1"
                );
            }
        }
        self.jobs.render(&mut out);
        crate::store_metrics::render(&self.figures(), &mut out);
        out
    }
}

/// Microseconds as decimal seconds, without floating point.
pub(crate) fn seconds(us: u64) -> String {
    let frac = us % 1_000_000;
    if frac == 0 {
        format!("{}", us / 1_000_000)
    } else {
        let s = format!("{}.{:06}", us / 1_000_000, frac);
        s.trim_end_matches('0').to_string()
    }
}

/// Escapes a label value (backslash, double quote, newline).
pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::new();
        m.observe_request("GET", "/healthz", 200, Duration::from_millis(3));
        m.observe_request("GET", "/healthz", 200, Duration::from_millis(30));
        Metrics::add(&m.samples_ingested, 480);
        let text = m.render();
        assert!(
            text.contains(
                "eai_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "eai_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.005\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "eai_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.05\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "eai_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("eai_http_request_duration_seconds_sum{route=\"/healthz\"} 0.033"),
            "{text}"
        );
        assert!(
            text.contains("eai_gpu_samples_ingested_total 480"),
            "{text}"
        );
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(5_000), "0.005");
        assert_eq!(seconds(2_500_000), "2.5");
        assert_eq!(seconds(10_000_000), "10");
    }
}

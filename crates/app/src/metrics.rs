//! Prometheus metrics with the prometheus-client crate: this process's counters, gauges and one latency
//! histogram in a [`Registry`], rendered in the OpenMetrics text format ([`CONTENT_TYPE`]). Names are in base
//! units with `_total` on counters (registered without it: the crate appends it, and OpenMetrics names the
//! counter's family without it). The figures read from the store (the same on every replica) are cached by
//! [`crate::store_metrics`] and encoded by its collector at scrape time. Every metric is documented in
//! docs/METRICS.md.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eai_store::lease::LeaderJob;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Metric, Registry};
use rust_decimal::Decimal;

use crate::store_metrics::figures::{float, Figures};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Upper bounds of the latency histogram, in seconds (5 ms .. 30 s).
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A gauge of whole numbers (counts, Unix seconds).
pub type UGauge = Gauge<u64, AtomicU64>;
/// A gauge of fractional values (seconds, ratios).
pub type FGauge = Gauge<f64, AtomicU64>;
type Labels<const N: usize> = [(&'static str, String); N];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// Registers `metric` under `name` (a counter without its `_total`) with `help` as documented (the crate adds
/// the final period).
pub(crate) fn register(registry: &mut Registry, name: &str, help: &str, metric: impl Metric) {
    registry.register(name, help.strip_suffix('.').unwrap_or(help), metric);
}

/// The registry and the handles that feed it. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels<3>, Counter>,
    durations: Family<Labels<1>, Histogram, fn() -> Histogram>,
    pub samples_ingested: Counter,
    pub samples_duplicates: Counter,
    pub samples_rejected: Counter,
    pub usage_events_ingested: Counter,
    /// Failed sign-ins by reason (`missing`, `malformed`, `unknown`, `revoked`, `expired`).
    auth_failures: Family<Labels<1>, Counter>,
    /// Requests answered 429.
    pub rate_limited: Counter,
    /// The ClickHouse replica (all zero when there is none).
    pub replica: ReplicaMetrics,
    /// Budgets in force: (budget id, tenant id) -> spent over the limit, as last checked.
    budget_ratio: Family<Labels<2>, FGauge>,
    /// Threshold crossings recorded, webhook deliveries acknowledged and failed.
    pub budget_crossings: Counter,
    pub webhooks_delivered: Counter,
    pub webhooks_failed: Counter,
    /// Spend anomalies recorded, by metric (`cost`, `gpu_seconds`).
    spend_anomalies: Family<Labels<1>, Counter>,
    /// Leases and the allocation batch.
    pub jobs: JobMetrics,
    /// The audit head and the store-derived figures, encoded at scrape time.
    cached: Arc<Cached>,
    /// Parts of a refresh of the store-derived figures that failed (their last values were kept).
    pub refresh_failures: Counter,
}

/// Lag and failures of the ClickHouse replica, set by the replicator.
#[derive(Debug, Default)]
pub struct ReplicaMetrics {
    /// Outbox entries not delivered yet (gauge).
    pub outbox_pending: UGauge,
    /// Age of the oldest of them, in seconds (gauge; 0 when none wait).
    pub outbox_oldest_age_seconds: UGauge,
    /// Rows ClickHouse stored (counter; a redelivery counts again).
    pub delivered_rows: Counter,
    /// Failed attempts: schema migration, delivery or acknowledgement (counter).
    pub failures: Counter,
    /// Unix time of the last delivery that succeeded (gauge; 0: never).
    pub last_success_timestamp_seconds: UGauge,
}

/// What a scrape encodes from a cache rather than from a metric handle: the audit head (shown once read) and
/// the store-derived figures.
#[derive(Debug, Default)]
struct Cached {
    /// The audit chain's head as last read (seq, hash): what an operator anchors.
    audit_head: Mutex<Option<(u64, String)>>,
    /// The store-derived figures as last refreshed.
    figures: Mutex<Arc<Figures>>,
}

impl Collector for Cached {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let head = self.audit_head.lock().map(|h| h.clone()).unwrap_or(None);
        if let Some((seq, hash)) = head {
            let m = encoder.encode_descriptor(
                "eai_audit_head_seq",
                "Sequence of the audit chain's newest event: anchor it outside the database.",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(seq).encode(m)?;
            let mut m = encoder.encode_descriptor(
                "eai_audit_head_info",
                "The audit chain's newest event (its hash as a label).",
                None,
                MetricType::Gauge,
            )?;
            let labels = [("seq", seq.to_string()), ("hash", hash)];
            ConstGauge::new(1_u64).encode(m.encode_family(&labels)?)?;
        }
        let figures = self
            .figures
            .lock()
            .map(|f| Arc::clone(&f))
            .unwrap_or_default();
        crate::store_metrics::figures::encode(&figures, &mut encoder)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut m = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            durations: Family::new_with_constructor(latency_histogram),
            samples_ingested: Counter::default(),
            samples_duplicates: Counter::default(),
            samples_rejected: Counter::default(),
            usage_events_ingested: Counter::default(),
            auth_failures: Family::default(),
            rate_limited: Counter::default(),
            replica: ReplicaMetrics::default(),
            budget_ratio: Family::default(),
            budget_crossings: Counter::default(),
            webhooks_delivered: Counter::default(),
            webhooks_failed: Counter::default(),
            spend_anomalies: Family::default(),
            jobs: JobMetrics::default(),
            cached: Arc::new(Cached::default()),
            refresh_failures: Counter::default(),
        };
        let r = &mut m.registry;
        register(
            r,
            "eai_http_requests",
            "HTTP requests answered, by method, route template and status.",
            m.requests.clone(),
        );
        register(
            r,
            "eai_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template.",
            m.durations.clone(),
        );
        register(
            r,
            "eai_budget_spent_ratio",
            "Spent this month over the limit, per budget in force (1 = the limit).",
            m.budget_ratio.clone(),
        );
        let counters: [(&str, &str, &Counter); 9] = [
            (
                "eai_metrics_refresh_failures",
                "Parts of a refresh of the store-derived metrics that failed (their last values were kept).",
                &m.refresh_failures,
            ),
            (
                "eai_budget_threshold_crossings",
                "Budget thresholds crossed (each once a month).",
                &m.budget_crossings,
            ),
            (
                "eai_budget_webhooks_delivered",
                "Threshold webhooks acknowledged by their receiver (2xx).",
                &m.webhooks_delivered,
            ),
            (
                "eai_budget_webhooks_failed",
                "Threshold webhook attempts that failed (retried with backoff).",
                &m.webhooks_failed,
            ),
            (
                "eai_gpu_samples_ingested",
                "GPU samples stored (re-sends not counted).",
                &m.samples_ingested,
            ),
            (
                "eai_gpu_samples_duplicates",
                "GPU samples received again and counted once.",
                &m.samples_duplicates,
            ),
            (
                "eai_gpu_samples_rejected",
                "GPU samples of batches rejected as invalid or too large.",
                &m.samples_rejected,
            ),
            (
                "eai_usage_events_ingested",
                "Usage events accepted (upserted by event_id).",
                &m.usage_events_ingested,
            ),
            (
                "eai_rate_limited",
                "Requests answered 429 rate_limited.",
                &m.rate_limited,
            ),
        ];
        for (name, help, c) in counters {
            register(r, name, help, c.clone());
        }
        let rep = &m.replica;
        let gauges: [(&str, &str, &UGauge); 3] = [
            (
                "eai_replica_outbox_pending",
                "Outbox entries not yet delivered to the ClickHouse replica.",
                &rep.outbox_pending,
            ),
            (
                "eai_replica_outbox_oldest_age_seconds",
                "Age of the oldest outbox entry not yet delivered (0 when none wait).",
                &rep.outbox_oldest_age_seconds,
            ),
            (
                "eai_replica_last_success_timestamp_seconds",
                "Unix time of the last successful delivery to the ClickHouse replica (0: never).",
                &rep.last_success_timestamp_seconds,
            ),
        ];
        for (name, help, g) in gauges {
            register(r, name, help, g.clone());
        }
        register(
            r,
            "eai_replica_delivered_rows",
            "Rows delivered to the ClickHouse replica (redeliveries included).",
            rep.delivered_rows.clone(),
        );
        register(
            r,
            "eai_replica_failures",
            "Failed attempts to migrate or deliver to the ClickHouse replica.",
            rep.failures.clone(),
        );
        register(
            r,
            "eai_auth_failures",
            "Failed sign-ins (the key is never recorded), by reason.",
            m.auth_failures.clone(),
        );
        register(
            r,
            "eai_gpu_spend_anomalies",
            "Spend anomalies recorded (each once), by metric.",
            m.spend_anomalies.clone(),
        );
        m.jobs.register(r);
        r.register_collector(Box::new(Arc::clone(&m.cached)));
        m
    }

    /// Records one finished request. `route` must be a route template (bounded cardinality), never a raw path.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&[
                ("method", method.to_string()),
                ("route", route.to_string()),
                ("status", status.to_string()),
            ])
            .inc();
        self.durations
            .get_or_create(&[("route", route.to_string())])
            .observe(elapsed.as_secs_f64());
    }

    pub fn auth_failed(&self, reason: &'static str) {
        self.auth_failures
            .get_or_create(&[("reason", reason.to_string())])
            .inc();
    }

    /// A spend anomaly of `metric` recorded.
    pub fn spend_anomaly(&self, metric: &str) {
        self.spend_anomalies
            .get_or_create(&[("metric", metric.to_string())])
            .inc();
    }

    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// The budgets in force as last checked: (budget id, tenant id, spent / limit). The ratio is exact here
    /// and a float64 in the exposition (as Prometheus keeps every sample).
    pub fn set_budgets(&self, rows: Vec<(String, String, Decimal)>) {
        self.budget_ratio.clear();
        for (budget, tenant, ratio) in rows {
            self.budget_ratio
                .get_or_create(&[("budget_id", budget), ("tenant_id", tenant)])
                .set(float(ratio));
        }
    }

    /// The store-derived figures as last refreshed.
    pub fn figures(&self) -> Arc<Figures> {
        self.cached
            .figures
            .lock()
            .map(|f| Arc::clone(&f))
            .unwrap_or_default()
    }

    pub fn set_figures(&self, figures: Figures) {
        if let Ok(mut f) = self.cached.figures.lock() {
            *f = Arc::new(figures);
        }
    }

    pub fn set_audit_head(&self, seq: u64, hash: &str) {
        if let Ok(mut h) = self.cached.audit_head.lock() {
            *h = Some((seq, hash.to_string()));
        }
    }

    pub fn add(counter: &Counter, n: u64) {
        counter.inc_by(n);
    }

    pub fn set(gauge: &UGauge, v: u64) {
        gauge.set(v);
    }

    /// The OpenMetrics text exposition ([`CONTENT_TYPE`]), `# EOF` included.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        out
    }
}

/// What the jobs tell `/metrics`: who leads, and how the allocation batch fares.
#[derive(Debug)]
pub struct JobMetrics {
    leader_gauge: Family<[(&'static str, String); 1], Gauge>,
    /// Runs of the allocation batch by outcome (one run allocates one month).
    batch_runs: Family<[(&'static str, &'static str); 1], Counter>,
    /// Unix time of the last run that succeeded (0: none since start).
    pub batch_last_success_seconds: UGauge,
    /// How long the last run took, in seconds.
    pub batch_last_duration_seconds: FGauge,
}

impl Default for JobMetrics {
    fn default() -> Self {
        let m = JobMetrics {
            leader_gauge: Family::default(),
            batch_runs: Family::default(),
            batch_last_success_seconds: UGauge::default(),
            batch_last_duration_seconds: FGauge::default(),
        };
        // Both outcomes are shown from the start (0 until a run).
        for outcome in ["success", "failure"] {
            drop(m.batch_runs.get_or_create(&[("outcome", outcome)]));
        }
        m
    }
}

impl JobMetrics {
    pub fn set_leader(&self, job: LeaderJob, leading: bool) {
        self.leader_gauge
            .get_or_create(&[("task", job.to_string())])
            .set(i64::from(leading));
    }

    /// A finished batch run.
    pub fn batch_ran(&self, ok: bool, took: Duration, at_unix_seconds: u64) {
        let outcome = if ok { "success" } else { "failure" };
        self.batch_runs.get_or_create(&[("outcome", outcome)]).inc();
        self.batch_last_duration_seconds.set(took.as_secs_f64());
        if ok {
            self.batch_last_success_seconds.set(at_unix_seconds);
        }
    }

    /// Registers this part of the exposition.
    pub fn register(&self, r: &mut Registry) {
        register(
            r,
            "eai_leader",
            "1 when this replica runs the job (one replica per job holds its lease).",
            self.leader_gauge.clone(),
        );
        register(
            r,
            "eai_batch_runs",
            "Runs of the allocation batch on this replica (one month each), by outcome.",
            self.batch_runs.clone(),
        );
        register(
            r,
            "eai_batch_last_success_timestamp_seconds",
            "Unix time of this replica's last successful batch run (0: none since start).",
            self.batch_last_success_seconds.clone(),
        );
        register(
            r,
            "eai_batch_last_duration_seconds",
            "How long this replica's last batch run took.",
            self.batch_last_duration_seconds.clone(),
        );
    }
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
        for line in [
            "# TYPE eai_http_requests counter",
            "eai_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 2",
            "eai_http_request_duration_seconds_bucket{le=\"0.005\",route=\"/healthz\"} 1",
            "eai_http_request_duration_seconds_bucket{le=\"0.05\",route=\"/healthz\"} 2",
            "eai_http_request_duration_seconds_bucket{le=\"+Inf\",route=\"/healthz\"} 2",
            "eai_http_request_duration_seconds_count{route=\"/healthz\"} 2",
            "# HELP eai_gpu_samples_ingested GPU samples stored (re-sends not counted).",
            "eai_gpu_samples_ingested_total 480",
            "eai_rate_limited_total 0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
        let sum = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("eai_http_request_duration_seconds_sum{route=\"/healthz\"} ")
            })
            .and_then(|v| v.parse::<f64>().ok());
        assert!(sum.is_some_and(|s| (s - 0.033).abs() < 1e-9), "{text}");
        assert!(
            !text.contains("..\n"),
            "one period after each HELP:\n{text}"
        );
        assert!(!text.contains("eai_audit_head_seq"), "not read yet");
        m.set_audit_head(7, "ab\"c");
        let text = m.render();
        assert!(
            text.contains("eai_audit_head_info{seq=\"7\",hash=\"ab\\\"c\"} 1\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn budgets_in_force_replace_the_last_ones() {
        let m = Metrics::new();
        m.set_budgets(vec![("bud_1".into(), "t1".into(), Decimal::new(11, 1))]);
        m.set_budgets(vec![("bud_2".into(), "t1".into(), Decimal::new(5, 1))]);
        let text = m.render();
        assert!(!text.contains("bud_1"), "{text}");
        assert!(
            text.contains("eai_budget_spent_ratio{budget_id=\"bud_2\",tenant_id=\"t1\"} 0.5\n"),
            "{text}"
        );
    }
}

//! The figures `/metrics` shows from the store rather than from this process: each GPU's latest sample, each
//! node's latest window, the month to date's cost per deployment (and per tenant, opt-in), the last closed
//! hour's idle ratio and unpriced samples, the gaps the month's allocation reports, and the audit chain's
//! verification. A refresher task ([`run`]) reads them every `EAI_METRICS_REFRESH_SECONDS` and caches them
//! ([`Figures`]); a scrape encodes the cache ([`encode`], as float64 samples) and never runs an allocation. Every replica reads the
//! same store, so every replica shows the same values: aggregate them with `max`, never `sum`
//! (docs/METRICS.md).
//!
//! Definitions (docs/METRICS.md says the same):
//! - *month to date*: the allocation of `[first instant of the UTC month, now)` widened to whole buckets, as
//!   `GET /v1/finops/gpu/allocation` computes it (same code path, same `EAI_ALLOCATION_SOURCE`);
//! - *last hour*: the allocation of the last closed UTC hour `[floor(now) - 1 h, floor(now))`;
//! - *idle ratio* of a deployment: `1 - busy GPU-seconds / GPU-seconds` over the last hour, where the engine's
//!   busy GPU-seconds are each window's GPU-seconds times its utilization (`busy_gpu_seconds` of the allocation):
//!   the share of the GPU time the deployment's GPUs were measured doing nothing;
//! - *gaps*: the gaps the month's allocation reports (a span of a GPU series longer than `EAI_MAX_GAP_MINUTES`,
//!   or across a change of series, left unfilled), counted per deployment and reason, with the seconds of the
//!   month they cover.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::batch::{month, month_of};
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_engine::tokens::{token_costs, Aggregate, Basis, TokenCostInput};
use eai_store::{AuditHead, Scope, Store, StoreError};

use crate::allocation::Source;
use crate::clock::{Clock, Ticker};
use crate::metrics::Metrics;

pub mod figures;
pub use figures::{
    encode, float, AuditCheck, CostRow, DeploymentUsage, Figures, GapCount, PeriodFigures,
    TenantCost, TokenCostFigure,
};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// GPUs and nodes not seen for this long are taken as retired: they leave the per-GPU and per-node series (a
/// silent node's alert has fired for a week by then).
pub const SEEN_HORIZON_MS: i64 = 7 * DAY_MS;
/// How often the audit chain is verified (and once at start).
pub const AUDIT_VERIFY_EVERY_MS: i64 = DAY_MS;

/// What the refresher reads and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// `EAI_METRICS_REFRESH_SECONDS` (60).
    pub every: Duration,
    /// `EAI_METRICS_MAX_GPU_SERIES` (10,000): beyond, the GPUs seen longest ago are left out and counted.
    pub max_gpu_series: u64,
    /// `EAI_METRICS_TENANT_COST` (off): the month to date's cost per tenant (one series per tenant and currency).
    pub tenant_cost: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            every: Duration::from_secs(60),
            max_gpu_series: 10_000,
            tenant_cost: false,
        }
    }
}

/// The month to date at `now`: `[first instant of the UTC month, now)` (one bucket at least).
pub fn month_to_date(now: Timestamp, bucket_ms: i64) -> Option<Period> {
    let (start, _) = month(&month_of(now))?;
    Period::new(start, Timestamp(now.0.max(start.0 + 1)), bucket_ms).ok()
}

/// The last closed UTC hour at `now`.
pub fn last_hour(now: Timestamp) -> Option<Period> {
    let to = now.floor_to(HOUR_MS);
    Period::new(Timestamp(to.0 - HOUR_MS), to, HOUR_MS).ok()
}

/// What the refresher reads (the store, where allocations read their rows, its options and the allocation
/// buckets) and where it puts the figures.
#[derive(Clone)]
pub struct Refresher {
    pub store: Arc<dyn Store>,
    pub source: Arc<Source>,
    pub metrics: Arc<Metrics>,
    pub options: Options,
    /// `EAI_ALLOCATION_BUCKET_SECONDS`, in milliseconds.
    pub bucket_ms: i64,
    /// Where the refresher reads the time and waits for the next refresh.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for Refresher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refresher")
            .field("store", &self.store.backend())
            .field("options", &self.options)
            .field("bucket_ms", &self.bucket_ms)
            .finish()
    }
}

/// Refreshes the figures every `EAI_METRICS_REFRESH_SECONDS` for as long as the server runs (the first at once).
pub async fn run(state: Refresher) {
    let options = state.options;
    let mut tick = Ticker::new(
        state.clock.clone(),
        options.every.max(Duration::from_secs(1)),
    );
    let mut anchor: Option<AuditHead> = None;
    loop {
        tick.tick().await;
        let previous = state.metrics.figures();
        let (figures, failures) = refresh(&state, options, &previous, &mut anchor).await;
        if failures > 0 {
            Metrics::add(&state.metrics.refresh_failures, failures);
        }
        state.metrics.set_figures(figures);
    }
}

/// One refresh: every part read again; a part that cannot be read keeps its previous value (and counts a
/// failure). The audit chain is verified when it never was or a day has passed, anchored on the head verified
/// last (so a tail cut or a chain recomputed since is a broken link).
pub async fn refresh(
    state: &Refresher,
    options: Options,
    previous: &Figures,
    anchor: &mut Option<AuditHead>,
) -> (Figures, u64) {
    let started = Instant::now();
    let store = state.store.as_ref();
    let at = state.clock.now();
    let mut failures = 0;
    let mut failed = |what: &str, e: &StoreError| {
        failures += 1;
        tracing::warn!(error = %e, "cannot refresh the metrics of {what}; keeping the last values");
    };
    let mut f = previous.clone();
    let since = Timestamp(at.0 - SEEN_HORIZON_MS);
    match store.latest_samples(since, options.max_gpu_series).await {
        Ok(l) => {
            f.gpus = l.samples;
            f.gpus_seen = l.gpus;
        }
        Err(e) => failed("the GPUs", &e),
    }
    match store.nodes_last_seen(since).await {
        Ok(n) => f.nodes = n,
        Err(e) => failed("the nodes", &e),
    }
    let config = AllocationConfig {
        bucket_ms: state.bucket_ms,
        ..AllocationConfig::default()
    };
    if let Some(p) = month_to_date(at, config.bucket_ms) {
        match crate::allocation::compute_from(&state.source, store, p, config).await {
            Ok(a) => {
                f.month = Some(PeriodFigures::of(&a));
                match month_token_costs(store, &a, p).await {
                    Ok(t) => f.token_costs = t,
                    Err(e) => failed("the cost per token", &e),
                }
                if options.tenant_cost {
                    match tenant_costs(store, &a).await {
                        Ok(t) => f.tenants = Some(t),
                        Err(e) => failed("the tenants", &e),
                    }
                }
            }
            Err(e) => failed("the month to date", &e),
        }
    }
    if !options.tenant_cost {
        f.tenants = None;
    }
    if let Some(p) = last_hour(at) {
        let hourly = AllocationConfig {
            bucket_ms: HOUR_MS,
            ..config
        };
        match crate::allocation::compute_from(&state.source, store, p, hourly).await {
            Ok(a) => f.last_hour = Some(PeriodFigures::of(&a)),
            Err(e) => failed("the last hour", &e),
        }
    }
    let due = f
        .audit
        .as_ref()
        .is_none_or(|a| at.0 - a.at.0 >= AUDIT_VERIFY_EVERY_MS);
    if due {
        match verify_audit(store, anchor.as_ref(), at).await {
            Ok(check) => {
                if check.verified {
                    anchor.clone_from(&check.head);
                }
                f.audit = Some(check);
            }
            Err(e) => failed("the audit chain", &e),
        }
    }
    if failures == 0 {
        f.refreshed_at = Some(state.clock.now());
    }
    f.refresh_duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    (f, failures)
}

/// Verifies the whole chain (as `eai-gpu audit verify` does), anchored on `anchor` when given.
async fn verify_audit(
    store: &dyn Store,
    anchor: Option<&AuditHead>,
    at: Timestamp,
) -> Result<AuditCheck, StoreError> {
    let head = store.audit_head().await?;
    let broken = store.verify_audit_chain(anchor).await?;
    match &broken {
        None => tracing::info!(
            seq = head.as_ref().map_or(0, |h| h.seq),
            "audit chain verified: intact"
        ),
        Some(b) => {
            tracing::error!(seq = b.seq, reason = %b.reason, "audit chain verification FAILED: broken link")
        }
    }
    Ok(AuditCheck {
        verified: broken.is_none(),
        at,
        head,
    })
}

/// The month's cost per million tokens per deployment, on both bases.
async fn month_token_costs(
    store: &dyn Store,
    a: &Allocation,
    p: Period,
) -> Result<Vec<TokenCostFigure>, StoreError> {
    let events = store.usage_events(Scope::Platform, p.from, p.to).await?;
    let policies = store.policies().await?;
    let mut out = Vec::new();
    for basis in [Basis::Allocation, Basis::Usage] {
        let input = TokenCostInput {
            allocation: a,
            events: &events,
            policies: &policies,
            basis,
        };
        out.extend(
            token_costs(&input, Aggregate::Deployment, None)
                .iter()
                .filter_map(|r| TokenCostFigure::of(r, basis)),
        );
    }
    Ok(out)
}

/// The month's cost per tenant and currency, named by slug where registered.
async fn tenant_costs(store: &dyn Store, a: &Allocation) -> Result<Vec<TenantCost>, StoreError> {
    let names: BTreeMap<String, String> = store
        .tenants(Scope::Platform)
        .await?
        .into_iter()
        .map(|t| (t.id.to_string(), t.slug.to_string()))
        .collect();
    Ok(a.tenants
        .iter()
        .map(|t| {
            let id = t.tenant_id.to_string();
            TenantCost {
                tenant: names.get(&id).cloned().unwrap_or_else(|| id.clone()),
                tenant_id: id,
                currency: t.currency,
                cost: t.cost,
            }
        })
        .collect())
}

// --- encoding -------------------------------------------------------------------------------------------------
// The figures stay exact decimals in the cache; a sample of the exposition is a float64 (Prometheus keeps every
// sample as one), converted here and nowhere else.

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::str::FromStr;

    use eai_engine::allocate::allocate_samples;
    use eai_engine::domain::{
        GpuFraction, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, Sample, TenantId,
        UnitInterval,
    };
    use eai_engine::money::Currency;
    use eai_engine::policy::Glob;
    use eai_engine::series::SeriesConfig;
    use eai_store::NodeSeen;
    use prometheus_client::encoding::DescriptorEncoder;
    use rust_decimal::Decimal;

    use super::*;

    const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn sample(node: &str, gpu: &str, dep: &str, end_ms: i64, util: &str) -> Sample {
        Sample {
            node: node.into(),
            gpu_uuid: gpu.into(),
            model: "H100-80GB".into(),
            namespace: "eai".into(),
            pod: format!("{dep}-0"),
            deployment_id: dep.into(),
            owner: None,
            window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
            end: Timestamp(end_ms),
            utilization: UnitInterval::new(d(util)).unwrap(),
            memory_used_gb: NonNegative::new(d("61.2")).unwrap(),
            power_w: NonNegative::new(d("312.5")).unwrap(),
            storage_gb: NonNegative::ZERO,
            gpu_fraction: GpuFraction::WHOLE,
            share_method: Default::default(),
        }
    }

    fn policy(pattern: &str) -> Policy {
        Policy {
            id: "alp_1".into(),
            seq: 1,
            spec: PolicySpec {
                name: "p".into(),
                deployment_pattern: Glob::new(pattern).unwrap(),
                gpu_model: None,
                currency: Currency::EUR,
                gpu_hourly_cost: NonNegative::new(d("2.10")).unwrap(),
                overhead_pct: NonNegative::new(d("18")).unwrap(),
                energy_kwh_price: NonNegative::new(d("0.21")).unwrap(),
                pue: Pue::new(d("1.4")).unwrap(),
                storage_gb_month_price: NonNegative::ZERO,
                idle_capacity: IdleCapacity::Unallocated,
                output_token_weight: Default::default(),
                enabled: true,
                effective_from: Timestamp(0),
                effective_to: None,
            },
        }
    }

    /// An hour of `dep` on one GPU every 15 s, with a hole of 20 minutes (a gap) when `hole`.
    fn hour(node: &str, gpu: &str, dep: &str, util: &str, hole: bool) -> Vec<Sample> {
        (1..=240)
            .filter(|k| !hole || !(80..160).contains(k))
            .map(|k| sample(node, gpu, dep, T0 + k * 15_000, util))
            .collect()
    }

    /// The figures alone, encoded as a scrape does.
    #[derive(Debug)]
    struct Fixed(Figures);

    impl prometheus_client::collector::Collector for Fixed {
        fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
            super::encode(&self.0, &mut e)
        }
    }

    fn render(f: &Figures) -> String {
        let mut r = prometheus_client::registry::Registry::default();
        r.register_collector(Box::new(Fixed(f.clone())));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        text
    }

    /// The value of the one series whose line starts with `prefix` (name and labels), as the shortest decimal
    /// (the exposition writes `3600.0` for 3600).
    fn value(text: &str, prefix: &str) -> String {
        let found: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
            .collect();
        assert_eq!(found.len(), 1, "{prefix} in:\n{text}");
        let v = found[0][prefix.len() + 1..].trim();
        Decimal::from_str(v)
            .or_else(|_| Decimal::from_scientific(v))
            .unwrap()
            .normalize()
            .to_string()
    }

    /// Every line is a comment or `name{labels} value` with a float value, and every family has a TYPE.
    fn well_formed(text: &str) {
        let mut typed = std::collections::BTreeSet::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                let mut it = rest.split(' ');
                typed.insert(it.next().unwrap().to_string());
                assert!(matches!(it.next(), Some("gauge" | "counter")), "{l}");
                continue;
            }
            if l.starts_with('#') {
                continue;
            }
            let (series, v) = l.rsplit_once(' ').unwrap();
            assert!(v.parse::<f64>().is_ok(), "not a number: {l}");
            let name = series.split('{').next().unwrap();
            assert!(typed.contains(name), "no TYPE before {l}");
            if let Some(labels) = series.strip_prefix(name) {
                assert!(
                    labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                    "{l}"
                );
            }
        }
    }

    fn figures() -> Figures {
        let mut samples = hour("gpu-node-1", "GPU-a", "vllm-llama-70b", "0.82", false);
        samples.extend(hour("gpu-node-2", "GPU-b", "legacy-train", "0.02", true));
        let period = Period::new(Timestamp(T0), Timestamp(T0 + HOUR_MS), HOUR_MS).unwrap();
        let a = allocate_samples(
            &samples,
            &[],
            &[policy("vllm-*")],
            period,
            &SeriesConfig::default(),
            AllocationConfig::default(),
        );
        let p = PeriodFigures::of(&a);
        let mut mig = sample(
            "gpu-node-1",
            "GPU-a/mig-1g.10gb-13",
            "vllm-llama-70b",
            T0 + HOUR_MS,
            "0.5",
        );
        mig.memory_used_gb = NonNegative::new(d("0.0009765625")).unwrap(); // 1 MiB
        Figures {
            refreshed_at: Some(Timestamp(T0 + HOUR_MS + 1_500)),
            refresh_duration_ms: 42,
            gpus: vec![
                mig,
                sample(
                    "gpu-node-1",
                    "GPU-a",
                    "vllm-llama-70b",
                    T0 + HOUR_MS,
                    "0.82",
                ),
            ],
            gpus_seen: 3,
            nodes: vec![NodeSeen {
                node: "gpu-node-\"2\"".into(),
                last_seen: Timestamp(T0 + 45 * 60_000),
            }],
            month: Some(p.clone()),
            last_hour: Some(p),
            tenants: Some(vec![TenantCost {
                tenant_id: TenantId(uuid::Uuid::nil()).to_string(),
                tenant: "acme".into(),
                currency: Currency::EUR,
                cost: d("3.63"),
            }]),
            token_costs: vec![TokenCostFigure {
                deployment: "vllm-shared".into(),
                model: "meta-llama/Llama-3.1-8B-Instruct".into(),
                currency: Currency::EUR,
                basis: "allocation",
                method: "compute_time",
                tokens_in: d("12000000"),
                tokens_out: d("3000000"),
                per_mtok: Some(d("0.2133")),
                input_per_mtok: Some(d("0.1429")),
                output_per_mtok: None,
            }],
            audit: Some(AuditCheck {
                verified: true,
                at: Timestamp(T0 + 1_000),
                head: Some(AuditHead {
                    seq: 12,
                    hash: "ab".into(),
                }),
            }),
        }
    }

    #[test]
    fn gpus_nodes_and_bounds_render_as_exact_decimals() {
        let text = render(&figures());
        well_formed(&text);
        let a = r#"{node="gpu-node-1",gpu="GPU-a",model="H100-80GB",deployment="vllm-llama-70b"}"#;
        assert_eq!(
            value(&text, &format!("eai_gpu_utilization_ratio{a}")),
            "0.82"
        );
        // 61.2 GiB, exactly.
        assert_eq!(
            value(&text, &format!("eai_gpu_memory_used_bytes{a}")),
            "65712999628.8"
        );
        assert_eq!(value(&text, &format!("eai_gpu_power_watts{a}")), "312.5");
        assert_eq!(
            value(&text, &format!("eai_gpu_last_sample_timestamp_seconds{a}")),
            "1790816400"
        );
        let mig = r#"{node="gpu-node-1",gpu="GPU-a/mig-1g.10gb-13",model="H100-80GB",deployment="vllm-llama-70b"}"#;
        assert_eq!(
            value(&text, &format!("eai_gpu_memory_used_bytes{mig}")),
            "1048576"
        );
        assert_eq!(value(&text, "eai_gpus_seen"), "3");
        assert_eq!(value(&text, "eai_metrics_gpu_series_omitted"), "1");
        assert_eq!(
            value(
                &text,
                r#"eai_node_last_sample_timestamp_seconds{node="gpu-node-\"2\""}"#
            ),
            "1790815500",
            "label values are escaped"
        );
        assert_eq!(
            value(&text, "eai_metrics_refresh_timestamp_seconds"),
            "1790816401.5"
        );
        assert_eq!(
            value(&text, "eai_metrics_refresh_duration_seconds"),
            "0.042"
        );
        assert_eq!(value(&text, "eai_audit_chain_verified"), "1");
        assert_eq!(value(&text, "eai_audit_chain_verified_seq"), "12");
        assert_eq!(
            value(&text, "eai_audit_chain_verified_timestamp_seconds"),
            "1790812801"
        );
    }

    #[test]
    fn cost_per_token_per_deployment_and_basis() {
        let text = render(&figures());
        well_formed(&text);
        let labels = r#"{deployment="vllm-shared",model="meta-llama/Llama-3.1-8B-Instruct",currency="EUR",basis="allocation",allocation_method="compute_time"}"#;
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_cost_per_mtok_month_to_date{labels}")
            ),
            "0.2133"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_input_cost_per_mtok_month_to_date{labels}")
            ),
            "0.1429"
        );
        // No rate (no output token): no series, never a zero.
        assert!(!text.contains("eai_deployment_output_cost_per_mtok_month_to_date{"));
        assert_eq!(
            value(
                &text,
                r#"eai_deployment_tokens_month_to_date{deployment="vllm-shared",model="meta-llama/Llama-3.1-8B-Instruct",direction="output"}"#
            ),
            "3000000"
        );
    }

    #[test]
    fn the_allocation_figures_per_deployment_and_tenant() {
        let text = render(&figures());
        well_formed(&text);
        // One GPU for an hour at 312.5 W: 2.10 x 1.18 + 0.3125 kWh x 1.4 x 0.21 = 2.570875 -> 2.57, no usage.
        let eur = r#"{deployment="vllm-llama-70b",currency="EUR"}"#;
        assert_eq!(
            value(&text, &format!("eai_deployment_cost_month_to_date{eur}")),
            "2.57"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_allocated_month_to_date{eur}")
            ),
            "0"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_unallocated_month_to_date{eur}")
            ),
            "2.57"
        );
        let v = r#"{deployment="vllm-llama-70b"}"#;
        let l = r#"{deployment="legacy-train"}"#;
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_gpu_seconds_month_to_date{v}")
            ),
            "3600"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_busy_gpu_seconds_month_to_date{v}")
            ),
            "2952"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_unpriced_samples_month_to_date{v}")
            ),
            "0"
        );
        // legacy-train: no policy; 160 samples of 15 s (80 left out: a 20-minute hole, a gap).
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_unpriced_samples_month_to_date{l}")
            ),
            "160"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_unpriced_gpu_seconds_last_hour{l}")
            ),
            "2400"
        );
        assert!(
            !text.contains(r#"eai_deployment_cost_month_to_date{deployment="legacy-train""#),
            "an unpriced deployment has no cost row"
        );
        let gap = r#"{deployment="legacy-train",reason="too_long"}"#;
        assert_eq!(
            value(&text, &format!("eai_deployment_gaps_month_to_date{gap}")),
            "1"
        );
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_gap_seconds_month_to_date{gap}")
            ),
            "1200"
        );
        assert_eq!(
            value(&text, &format!("eai_deployment_idle_ratio_last_hour{v}")),
            "0.18"
        );
        assert_eq!(
            value(&text, &format!("eai_deployment_idle_ratio_last_hour{l}")),
            "0.98"
        );
        assert_eq!(
            value(
                &text,
                r#"eai_tenant_cost_month_to_date{tenant_id="00000000-0000-0000-0000-000000000000",tenant="acme",currency="EUR"}"#
            ),
            "3.63"
        );
    }

    #[test]
    fn before_the_first_refresh_only_the_bounds_are_shown() {
        let text = render(&Figures::default());
        well_formed(&text);
        assert_eq!(value(&text, "eai_gpus_seen"), "0");
        assert!(!text.contains("eai_audit_chain_verified "), "{text}");
        assert!(
            !text.contains("eai_metrics_refresh_timestamp_seconds "),
            "{text}"
        );
        assert!(!text.contains("eai_tenant_cost_month_to_date"), "opt-in");
    }

    #[test]
    fn the_idle_ratio_is_the_share_of_gpu_time_not_busy() {
        let u = |gs: &str, busy: &str| DeploymentUsage {
            deployment: "d".into(),
            gpu_seconds: d(gs),
            busy_gpu_seconds: d(busy),
            unpriced_samples: 0,
            unpriced_gpu_seconds: Decimal::ZERO,
        };
        assert_eq!(u("15", "7.5").idle_ratio(), Some(d("0.5")));
        assert_eq!(u("3", "1").idle_ratio(), Some(d("0.666667")));
        assert_eq!(u("10", "10").idle_ratio(), Some(Decimal::ZERO));
        assert_eq!(u("0", "0").idle_ratio(), None);
    }

    #[test]
    fn the_periods_are_the_month_to_date_and_the_last_closed_hour() {
        let now = Timestamp(T0 + 3 * 86_400_000 + 90 * 60_000 + 7); // 2026-10-04T01:30:00.007Z
        let m = month_to_date(now, HOUR_MS).unwrap();
        assert_eq!(
            (m.from, m.to),
            (Timestamp(T0), Timestamp(T0 + 3 * 86_400_000 + 2 * HOUR_MS))
        );
        let h = last_hour(now).unwrap();
        assert_eq!(
            (h.from, h.to),
            (
                Timestamp(T0 + 3 * 86_400_000),
                Timestamp(T0 + 3 * 86_400_000 + HOUR_MS)
            )
        );
        let at_start = month_to_date(Timestamp(T0), HOUR_MS).unwrap();
        assert_eq!(
            (at_start.from, at_start.to),
            (Timestamp(T0), Timestamp(T0 + HOUR_MS))
        );
    }
}

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
use eai_engine::domain::Sample;
use eai_engine::money::Currency;
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_engine::tokens::{token_costs, Aggregate, Basis, TokenCost, TokenCostInput};
use eai_store::{AuditHead, NodeSeen, Scope, Store, StoreError};
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeMetric, MetricEncoder,
};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use rust_decimal::Decimal;

use crate::allocation::Source;
use crate::clock::now;
use crate::metrics::{float, Metrics};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// GPUs and nodes not seen for this long are taken as retired: they leave the per-GPU and per-node series (a
/// silent node's alert has fired for a week by then).
pub const SEEN_HORIZON_MS: i64 = 7 * DAY_MS;
/// How often the audit chain is verified (and once at start).
pub const AUDIT_VERIFY_EVERY_MS: i64 = DAY_MS;
/// GiB (the samples' `memory_used_gb`) to bytes.
const BYTES_PER_GIB: i64 = 1 << 30;

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

/// What the refresher read last: the cache every scrape renders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// When the last refresh that read every part ended (`None`: none yet), and how long the last one took.
    pub refreshed_at: Option<Timestamp>,
    pub refresh_duration_ms: u64,
    /// The latest sample of each GPU seen within [`SEEN_HORIZON_MS`], the newest first, at most the limit.
    pub gpus: Vec<Sample>,
    /// The GPUs seen within the horizon, listed or not (those beyond the limit are left out).
    pub gpus_seen: u64,
    pub nodes: Vec<NodeSeen>,
    pub month: Option<PeriodFigures>,
    pub last_hour: Option<PeriodFigures>,
    /// The month to date's cost per tenant, when `EAI_METRICS_TENANT_COST` is on.
    pub tenants: Option<Vec<TenantCost>>,
    /// The month to date's cost per million tokens per deployment, on both bases.
    pub token_costs: Vec<TokenCostFigure>,
    pub audit: Option<AuditCheck>,
}

/// A deployment's cost per million tokens on one basis (the month to date).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCostFigure {
    pub deployment: String,
    pub model: String,
    pub currency: Currency,
    pub basis: &'static str,
    pub method: &'static str,
    pub tokens_in: Decimal,
    pub tokens_out: Decimal,
    pub per_mtok: Option<Decimal>,
    pub input_per_mtok: Option<Decimal>,
    pub output_per_mtok: Option<Decimal>,
}

impl TokenCostFigure {
    fn of(r: &TokenCost, basis: Basis) -> Option<Self> {
        Some(TokenCostFigure {
            deployment: r.deployment_id.clone()?,
            model: r.model.clone().unwrap_or_default(),
            currency: r.currency,
            basis: basis.as_str(),
            method: r.method.as_str(),
            tokens_in: r.tokens.input,
            tokens_out: r.tokens.output,
            per_mtok: r.per_mtok,
            input_per_mtok: r.input_per_mtok,
            output_per_mtok: r.output_per_mtok,
        })
    }
}

/// What one allocation says, per deployment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeriodFigures {
    pub from: Timestamp,
    pub to: Timestamp,
    /// One per (deployment, currency) priced.
    pub costs: Vec<CostRow>,
    /// One per deployment (its currency rows added up).
    pub usage: Vec<DeploymentUsage>,
    /// Per (deployment, reason).
    pub gaps: Vec<GapCount>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostRow {
    pub deployment: String,
    pub currency: Currency,
    pub cost: Decimal,
    pub allocated: Decimal,
    pub unallocated: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentUsage {
    pub deployment: String,
    pub gpu_seconds: Decimal,
    pub busy_gpu_seconds: Decimal,
    pub unpriced_samples: u64,
    pub unpriced_gpu_seconds: Decimal,
}

impl DeploymentUsage {
    /// `1 - busy / GPU-seconds`, to 6 places; `None` without GPU time.
    pub fn idle_ratio(&self) -> Option<Decimal> {
        if self.gpu_seconds <= Decimal::ZERO {
            return None;
        }
        let busy = self.busy_gpu_seconds.checked_div(self.gpu_seconds)?;
        Some(
            (Decimal::ONE - busy.min(Decimal::ONE))
                .round_dp(6)
                .normalize(),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapCount {
    pub deployment: String,
    pub reason: &'static str,
    pub gaps: u64,
    /// Seconds of the period the gaps cover, summed over GPUs.
    pub seconds: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantCost {
    pub tenant_id: String,
    /// The registered slug, else the id.
    pub tenant: String,
    pub currency: Currency,
    pub cost: Decimal,
}

/// The last verification of the audit chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCheck {
    /// Intact (and still holding the head verified before: a cut tail or a recomputed chain is not).
    pub verified: bool,
    pub at: Timestamp,
    /// The head the verification saw (`None`: an empty chain).
    pub head: Option<AuditHead>,
}

impl PeriodFigures {
    /// The figures of an allocation of `[from, to)`.
    pub fn of(a: &Allocation) -> PeriodFigures {
        let mut costs = Vec::new();
        let mut usage: BTreeMap<&str, DeploymentUsage> = BTreeMap::new();
        for d in &a.deployments {
            if let Some(currency) = d.currency {
                costs.push(CostRow {
                    deployment: d.deployment_id.clone(),
                    currency,
                    cost: d.cost,
                    allocated: d.allocated,
                    unallocated: d.unallocated,
                });
            }
            let u = usage
                .entry(&d.deployment_id)
                .or_insert_with(|| DeploymentUsage {
                    deployment: d.deployment_id.clone(),
                    gpu_seconds: Decimal::ZERO,
                    busy_gpu_seconds: Decimal::ZERO,
                    unpriced_samples: 0,
                    unpriced_gpu_seconds: Decimal::ZERO,
                });
            u.gpu_seconds += d.gpu_seconds;
            u.busy_gpu_seconds += d.busy_gpu_seconds;
            u.unpriced_samples += d.unpriced_samples;
            u.unpriced_gpu_seconds += d.unpriced_gpu_seconds;
        }
        let mut gaps: BTreeMap<(&str, &'static str), GapCount> = BTreeMap::new();
        for g in &a.gaps {
            let reason = g.reason.as_str();
            let c = gaps
                .entry((&g.deployment_id, reason))
                .or_insert_with(|| GapCount {
                    deployment: g.deployment_id.clone(),
                    reason,
                    gaps: 0,
                    seconds: Decimal::ZERO,
                });
            c.gaps += 1;
            let span = g.to.0.min(a.to.0) - g.from.0.max(a.from.0);
            c.seconds += Decimal::new(span.max(0), 3);
        }
        PeriodFigures {
            from: a.from,
            to: a.to,
            costs,
            usage: usage.into_values().collect(),
            gaps: gaps.into_values().collect(),
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
    let mut tick = tokio::time::interval(options.every.max(Duration::from_secs(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
    let at = now();
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
        f.refreshed_at = Some(now());
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

/// Milliseconds as seconds.
fn seconds(t: Timestamp) -> f64 {
    float(Decimal::new(t.0, 3))
}

/// A family of gauges rendered from a list of rows: its name (or name part), its help, and the value of a row.
type Rows<T> = (&'static str, &'static str, fn(&T) -> Option<f64>);

type Enc<'a> = DescriptorEncoder<'a>;

/// A gauge family's HELP and TYPE.
fn family<'s>(
    e: &'s mut Enc<'_>,
    name: &'s str,
    help: &str,
) -> Result<MetricEncoder<'s>, fmt::Error> {
    e.encode_descriptor(name, help, None, MetricType::Gauge)
}

/// One series of a family (label values are escaped by the encoder).
fn series(
    m: &mut MetricEncoder<'_>,
    labels: &[(&str, &str)],
    value: impl EncodeGaugeValue + fmt::Debug + Send + Sync,
) -> fmt::Result {
    ConstGauge::new(value).encode(m.encode_family(&labels)?)
}

/// A family of one series without labels.
fn single(
    e: &mut Enc<'_>,
    name: &str,
    help: &str,
    value: impl EncodeGaugeValue + fmt::Debug + Send + Sync,
) -> fmt::Result {
    ConstGauge::new(value).encode(family(e, name, help)?)
}

/// The cached figures, encoded (the collector of [`crate::metrics`] calls it at each scrape).
pub fn encode(f: &Figures, e: &mut Enc<'_>) -> fmt::Result {
    let gpu_families: [Rows<Sample>; 4] = [
        (
            "eai_gpu_utilization_ratio",
            "Utilization (0..1) of the GPU's latest stored sample.",
            |s| Some(float(s.utilization.get())),
        ),
        (
            "eai_gpu_memory_used_bytes",
            "GPU memory used in the GPU's latest stored sample, in bytes.",
            |s| {
                s.memory_used_gb
                    .get()
                    .checked_mul(Decimal::from(BYTES_PER_GIB))
                    .map(float)
            },
        ),
        (
            "eai_gpu_power_watts",
            "Average power over the GPU's latest stored sample, in watts.",
            |s| Some(float(s.power_w.get())),
        ),
        (
            "eai_gpu_last_sample_timestamp_seconds",
            "End of the GPU's latest stored sample window (Unix time).",
            |s| Some(seconds(s.end)),
        ),
    ];
    for (name, help, value) in gpu_families {
        let mut m = family(e, name, help)?;
        for s in &f.gpus {
            if let Some(v) = value(s) {
                let labels = [
                    ("node", s.node.as_str()),
                    ("gpu", s.gpu_uuid.as_str()),
                    ("model", s.model.as_str()),
                    ("deployment", s.deployment_id.as_str()),
                ];
                series(&mut m, &labels, v)?;
            }
        }
    }
    single(
        e,
        "eai_gpus_seen",
        "GPUs (or MIG slices) with a sample stored in the last 7 days.",
        f.gpus_seen,
    )?;
    single(
        e,
        "eai_metrics_gpu_series_omitted",
        "GPUs left out of the eai_gpu_* series by EAI_METRICS_MAX_GPU_SERIES (those seen longest ago).",
        f.gpus_seen.saturating_sub(f.gpus.len() as u64),
    )?;

    let mut m = family(
        e,
        "eai_node_last_sample_timestamp_seconds",
        "Latest sample window end stored for the node, any GPU (Unix time): an old value is a silent sampler.",
    )?;
    for n in &f.nodes {
        series(&mut m, &[("node", &n.node)], seconds(n.last_seen))?;
    }

    encode_month(e, f.month.as_ref())?;
    encode_token_costs(e, &f.token_costs)?;
    encode_last_hour(e, f.last_hour.as_ref())?;

    if let Some(tenants) = &f.tenants {
        let mut m = family(
            e,
            "eai_tenant_cost_month_to_date",
            "The tenant's allocated GPU cost this UTC month to date (EAI_METRICS_TENANT_COST).",
        )?;
        for t in tenants {
            let labels = [
                ("tenant_id", t.tenant_id.as_str()),
                ("tenant", t.tenant.as_str()),
                ("currency", t.currency.as_str()),
            ];
            series(&mut m, &labels, float(t.cost))?;
        }
    }

    if let Some(a) = &f.audit {
        single(
            e,
            "eai_audit_chain_verified",
            "1 when the last verification found the audit chain intact (and still holding the head verified before), else 0.",
            u64::from(a.verified),
        )?;
        single(
            e,
            "eai_audit_chain_verified_timestamp_seconds",
            "When the audit chain was last verified (Unix time; at start and daily).",
            seconds(a.at),
        )?;
        single(
            e,
            "eai_audit_chain_verified_seq",
            "Sequence of the newest audit event when the chain was last verified.",
            a.head.as_ref().map_or(0, |h| h.seq),
        )?;
    }

    if let Some(at) = f.refreshed_at {
        single(
            e,
            "eai_metrics_refresh_timestamp_seconds",
            "When a refresh of the store-derived metrics last read every part (Unix time).",
            seconds(at),
        )?;
        single(
            e,
            "eai_metrics_refresh_duration_seconds",
            "How long the last refresh of the store-derived metrics took.",
            float(Decimal::new(
                i64::try_from(f.refresh_duration_ms).unwrap_or(i64::MAX),
                3,
            )),
        )?;
    }
    Ok(())
}

const MONTH: &str = "this UTC month to date";
const LAST_HOUR: &str = "the last closed UTC hour";

/// The month to date's families: cost, allocated and unallocated per currency; GPU-seconds, busy GPU-seconds,
/// unpriced samples and GPU-seconds; gaps by reason.
fn encode_month(e: &mut Enc<'_>, p: Option<&PeriodFigures>) -> fmt::Result {
    let (costs, usage, gaps) = match p {
        Some(p) => (p.costs.as_slice(), p.usage.as_slice(), p.gaps.as_slice()),
        None => (&[][..], &[][..], &[][..]),
    };
    let money: [Rows<CostRow>; 3] = [
        ("cost", "Cost of the deployment", |c| Some(float(c.cost))),
        (
            "allocated",
            "Cost of the deployment allocated to tenants",
            |c| Some(float(c.allocated)),
        ),
        (
            "unallocated",
            "Cost of the deployment no tenant's usage accounts for (idle capacity)",
            |c| Some(float(c.unallocated)),
        ),
    ];
    for (what, help, value) in money {
        let name = format!("eai_deployment_{what}_month_to_date");
        let help = format!("{help}, {MONTH}.");
        let mut m = family(e, &name, &help)?;
        for c in costs {
            let labels = [
                ("deployment", c.deployment.as_str()),
                ("currency", c.currency.as_str()),
            ];
            if let Some(v) = value(c) {
                series(&mut m, &labels, v)?;
            }
        }
    }
    let quantities: [Rows<DeploymentUsage>; 2] = [
        (
            "gpu_seconds",
            "GPU-seconds (x GPU fraction) measured of the deployment",
            |u| Some(float(u.gpu_seconds)),
        ),
        (
            "busy_gpu_seconds",
            "Busy GPU-seconds (GPU-seconds x utilization) of the deployment",
            |u| Some(float(u.busy_gpu_seconds)),
        ),
    ];
    for (what, help, value) in quantities {
        let name = format!("eai_deployment_{what}_month_to_date");
        let help = format!("{help}, {MONTH}.");
        let mut m = family(e, &name, &help)?;
        for u in usage {
            if let Some(v) = value(u) {
                series(&mut m, &[("deployment", &u.deployment)], v)?;
            }
        }
    }
    encode_unpriced(e, usage, "month_to_date", MONTH)?;
    let help = format!(
        "Gaps (spans of a GPU series left unfilled) the allocation reports, {MONTH}, by reason."
    );
    let mut m = family(e, "eai_deployment_gaps_month_to_date", &help)?;
    for g in gaps {
        let labels = [("deployment", g.deployment.as_str()), ("reason", g.reason)];
        series(&mut m, &labels, g.gaps)?;
    }
    let help = format!("Seconds the reported gaps cover, summed over GPUs, {MONTH}, by reason.");
    let mut m = family(e, "eai_deployment_gap_seconds_month_to_date", &help)?;
    for g in gaps {
        let labels = [("deployment", g.deployment.as_str()), ("reason", g.reason)];
        series(&mut m, &labels, float(g.seconds))?;
    }
    Ok(())
}

/// The month to date's cost per million tokens (blended, input, output) per deployment and basis, and its
/// tokens.
fn encode_token_costs(e: &mut Enc<'_>, rows: &[TokenCostFigure]) -> fmt::Result {
    let rates: [Rows<TokenCostFigure>; 3] = [
        (
            "eai_deployment_cost_per_mtok_month_to_date",
            "Cost per million tokens (input and output together) of the deployment",
            |r| r.per_mtok.map(float),
        ),
        (
            "eai_deployment_input_cost_per_mtok_month_to_date",
            "Cost per million input tokens that needed compute (prefix-cache hits left out where vLLM reports them) of the deployment",
            |r| r.input_per_mtok.map(float),
        ),
        (
            "eai_deployment_output_cost_per_mtok_month_to_date",
            "Cost per million output tokens of the deployment",
            |r| r.output_per_mtok.map(float),
        ),
    ];
    for (name, help, value) in rates {
        let help = format!("{help}, {MONTH}; basis allocation (reconciles to the allocation) or usage (busy GPU-seconds only).");
        let mut m = family(e, name, &help)?;
        for r in rows {
            if let Some(v) = value(r) {
                let labels = [
                    ("deployment", r.deployment.as_str()),
                    ("model", r.model.as_str()),
                    ("currency", r.currency.as_str()),
                    ("basis", r.basis),
                    ("allocation_method", r.method),
                ];
                series(&mut m, &labels, v)?;
            }
        }
    }
    let help = format!("Tokens served by the deployment, {MONTH}, by direction (vLLM's counters where the sampler reads them, else the tenants' usage events).");
    let mut m = family(e, "eai_deployment_tokens_month_to_date", &help)?;
    for r in rows.iter().filter(|r| r.basis == "allocation") {
        for (direction, v) in [("input", r.tokens_in), ("output", r.tokens_out)] {
            let labels = [
                ("deployment", r.deployment.as_str()),
                ("model", r.model.as_str()),
                ("direction", direction),
            ];
            series(&mut m, &labels, float(v))?;
        }
    }
    Ok(())
}

/// The last closed hour's families: unpriced samples and GPU-seconds, idle ratio.
fn encode_last_hour(e: &mut Enc<'_>, p: Option<&PeriodFigures>) -> fmt::Result {
    let usage = p.map_or(&[][..], |p| p.usage.as_slice());
    encode_unpriced(e, usage, "last_hour", LAST_HOUR)?;
    let help = format!("1 - busy GPU-seconds / GPU-seconds of the deployment (busy = GPU-seconds x utilization), {LAST_HOUR}.");
    let mut m = family(e, "eai_deployment_idle_ratio_last_hour", &help)?;
    for u in usage {
        if let Some(r) = u.idle_ratio() {
            series(&mut m, &[("deployment", &u.deployment)], float(r))?;
        }
    }
    Ok(())
}

fn encode_unpriced(
    e: &mut Enc<'_>,
    usage: &[DeploymentUsage],
    suffix: &str,
    when: &str,
) -> fmt::Result {
    let name = format!("eai_deployment_unpriced_samples_{suffix}");
    let help = format!("Samples of the deployment no policy prices, {when}.");
    let mut m = family(e, &name, &help)?;
    for u in usage {
        series(&mut m, &[("deployment", &u.deployment)], u.unpriced_samples)?;
    }
    let name = format!("eai_deployment_unpriced_gpu_seconds_{suffix}");
    let help = format!("GPU-seconds of the deployment no policy prices, {when}.");
    let mut m = family(e, &name, &help)?;
    for u in usage {
        let v = float(u.unpriced_gpu_seconds);
        series(&mut m, &[("deployment", &u.deployment)], v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::str::FromStr;

    use eai_engine::allocate::allocate_samples;
    use eai_engine::domain::{
        GpuFraction, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, TenantId, UnitInterval,
    };
    use eai_engine::policy::Glob;
    use eai_engine::series::SeriesConfig;

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

//! The figures `/metrics` shows from the store, as the refresher caches them ([`Figures`]: exact decimals), and
//! their encoding at scrape time ([`encode`]: float64 samples, the only place they become floats). A leaf of the
//! crate: the process's registry ([`crate::metrics`]) encodes them, the refresher ([`super`]) fills them.

use std::collections::BTreeMap;
use std::fmt;

use eai_engine::domain::Sample;
use eai_engine::money::Currency;
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_engine::tokens::{Basis, TokenCost};
use eai_store::{AuditHead, NodeSeen};
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeMetric, MetricEncoder,
};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// GiB (the samples' `memory_used_gb`) to bytes.
const BYTES_PER_GIB: i64 = 1 << 30;

/// What the refresher read last: the cache every scrape renders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// When the last refresh that read every part ended (`None`: none yet), and how long the last one took.
    pub refreshed_at: Option<Timestamp>,
    pub refresh_duration_ms: u64,
    /// The latest sample of each GPU seen within [`super::SEEN_HORIZON_MS`], the newest first, at most the limit.
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
    pub fn of(r: &TokenCost, basis: Basis) -> Option<Self> {
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

/// A decimal as the float64 of an exposition sample (NaN for one out of its range).
pub fn float(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(f64::NAN)
}

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

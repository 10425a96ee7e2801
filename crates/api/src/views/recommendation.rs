//! Recommendations (SPEC §13): `RecommendationList`, its `Recommendation`s with their `RecommendationEvidence`
//! and `IdleGpu`s, and the `RecommendationThresholds` they were made at. Hours and GPU-hours at 4 places,
//! rounded half to even; money rounded once by the engine.

use eai_engine::recommend::{self as engine, Thresholds};
use eai_engine::time::Timestamp;
use eai_engine::view::{quantity, Quantity};
use rust_decimal::Decimal;
use serde::Serialize;

use super::budget::Money;
use super::Count;

/// Hours and GPU-hours: 4 places.
const DP: u32 = 4;

fn q(d: Decimal) -> Quantity {
    quantity(d, DP)
}

fn money(m: Option<eai_engine::money::Money>) -> Option<Money> {
    m.map(|m| Money::of(m.amount, m.currency))
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecommendationThresholds {
    pub idle_utilization: String,
    pub idle_share: String,
    pub low_utilization: String,
}

impl RecommendationThresholds {
    pub fn of(t: &Thresholds) -> Self {
        let s = |d: Decimal| d.normalize().to_string();
        RecommendationThresholds {
            idle_utilization: s(t.idle_utilization),
            idle_share: s(t.idle_share),
            low_utilization: s(t.low_utilization),
        }
    }
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IdleGpu {
    pub gpu_uuid: String,
    pub hours: u32,
    pub idle_hours: u32,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecommendationEvidence {
    pub hours: u32,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub gpu_hours: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub busy_gpu_hours: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub utilization: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub utilization_p50: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub utilization_p95: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub peak_busy_gpus: Quantity,
    pub memory_peak_gb: Option<Count>,
    pub profile_memory_gb: Option<Count>,
    pub idle_gpus: Vec<IdleGpu>,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub unpriced_gpu_hours: Quantity,
}

impl RecommendationEvidence {
    pub fn of(e: &engine::Evidence) -> Self {
        RecommendationEvidence {
            hours: e.hours,
            gpu_hours: q(e.gpu_hours),
            busy_gpu_hours: q(e.busy_gpu_hours),
            utilization: q(e.utilization),
            utilization_p50: q(e.utilization_p50),
            utilization_p95: q(e.utilization_p95),
            peak_busy_gpus: q(e.peak_busy_gpus),
            memory_peak_gb: e.memory_peak_gb.map(|m| Count(m.round_dp(DP))),
            profile_memory_gb: e.profile_memory_gb.map(Count),
            idle_gpus: e
                .idle_gpus
                .iter()
                .map(|g| IdleGpu {
                    gpu_uuid: g.gpu_uuid.clone(),
                    hours: g.hours,
                    idle_hours: g.idle_hours,
                })
                .collect(),
            unpriced_gpu_hours: q(e.unpriced_gpu_hours),
        }
    }
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Recommendation {
    pub kind: &'static str,
    pub deployment_id: String,
    pub model: String,
    pub current_gpus: u32,
    pub gpus: u32,
    pub action: &'static str,
    pub mig_profile: Option<&'static str>,
    pub gpu_fraction: Option<String>,
    pub evidence: RecommendationEvidence,
    pub cost: Option<Money>,
    pub savings: Option<Money>,
    pub monthly_savings: Option<Money>,
    pub message: String,
}

impl Recommendation {
    pub fn of(r: &engine::Recommendation) -> Self {
        Recommendation {
            kind: r.kind.name(),
            deployment_id: r.deployment_id.clone(),
            model: r.model.clone(),
            current_gpus: r.current_gpus,
            gpus: r.gpus,
            action: r.action.name(),
            mig_profile: r.mig_profile,
            gpu_fraction: r.gpu_fraction.map(|f| f.normalize().to_string()),
            evidence: RecommendationEvidence::of(&r.evidence),
            cost: money(r.cost),
            savings: money(r.savings),
            monthly_savings: money(r.monthly_savings),
            message: r.message.clone(),
        }
    }
}

/// `GET /v1/finops/gpu/recommendations`: the period, the thresholds and the items.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecommendationList {
    pub from: String,
    pub to: String,
    pub thresholds: RecommendationThresholds,
    pub items: Vec<Recommendation>,
}

impl RecommendationList {
    pub fn new(
        from: Timestamp,
        to: Timestamp,
        t: &Thresholds,
        items: &[engine::Recommendation],
    ) -> Self {
        RecommendationList {
            from: from.to_string(),
            to: to.to_string(),
            thresholds: RecommendationThresholds::of(t),
            items: items.iter().map(Recommendation::of).collect(),
        }
    }
}

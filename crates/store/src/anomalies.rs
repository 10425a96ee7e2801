//! Spend anomalies as both backends store them (SPEC §13; the detection: `eai_engine::anomaly`). One row per
//! (deployment, hour, metric, currency), written once: a finding found again by a later round is not new. A row
//! to be posted to the anomaly webhook carries its next attempt's time until it is delivered or given up. A new
//! row is written with its audit event (`gpu.anomaly_detected`) in one transaction.

use eai_engine::anomaly::{Direction, Metric};
use eai_engine::domain::TenantId;
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;

use crate::{Result, StoreError};

/// A finding to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAnomaly {
    pub deployment_id: String,
    /// The tenant of a dedicated deployment; `None` for a shared one.
    pub owner: Option<TenantId>,
    pub hour: Timestamp,
    pub metric: Metric,
    /// The cost's currency (`None` for GPU-seconds).
    pub currency: Option<Currency>,
    pub value: Decimal,
    pub median: Decimal,
    pub mad: Decimal,
    pub deviation: Option<Decimal>,
    pub direction: Direction,
    pub baseline_hours: u32,
    pub detected_at: Timestamp,
    /// Whether it is to be posted to the anomaly webhook (due at once).
    pub deliver: bool,
}

/// A recorded anomaly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anomaly {
    /// The store's sequence: the id is `anm_<seq>`.
    pub seq: i64,
    pub finding: NewAnomaly,
    /// Webhook attempts made so far.
    pub attempts: u32,
    pub delivered_at: Option<Timestamp>,
}

impl Anomaly {
    /// `anm_<seq>`.
    pub fn id(&self) -> String {
        format!("anm_{}", self.seq)
    }
}

fn corrupt(what: &str, v: &str) -> StoreError {
    StoreError::Internal(format!("corrupt anomaly {what}: {v:?}"))
}

/// The metric column read back.
pub fn metric_of(s: &str) -> Result<Metric> {
    Metric::parse(s).ok_or_else(|| corrupt("metric", s))
}

/// The direction column read back.
pub fn direction_of(s: &str) -> Result<Direction> {
    Direction::parse(s).ok_or_else(|| corrupt("direction", s))
}

/// The currency column: `''` for none, so that the uniqueness on (deployment, hour, metric, currency) holds
/// for GPU-seconds too (a NULL is never equal to another).
pub fn currency_text(c: Option<Currency>) -> String {
    c.map(|c| c.as_str().to_string()).unwrap_or_default()
}

/// The currency column read back.
pub fn currency_of(s: &str) -> Result<Option<Currency>> {
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<Currency>()
        .map(Some)
        .map_err(|_| corrupt("currency", s))
}

/// The webhook state of a row read back: whether it was to be delivered at all (a due time, an attempt or a
/// delivery), and the anomaly.
pub fn with_delivery(
    seq: i64,
    mut finding: NewAnomaly,
    attempts: i64,
    next_attempt: Option<i64>,
    delivered_at: Option<i64>,
) -> Anomaly {
    finding.deliver = next_attempt.is_some() || delivered_at.is_some() || attempts > 0;
    Anomaly {
        seq,
        finding,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        delivered_at: delivered_at.map(Timestamp),
    }
}

/// The audit event of a new anomaly: the platform's, of the deployment's tenant when it is dedicated.
pub fn recorded_audit(a: &Anomaly) -> crate::AuditDraft {
    let f = &a.finding;
    let mut d = crate::AuditDraft::system(
        "system",
        "gpu.anomaly_detected",
        f.detected_at,
        serde_json::json!({
            "deployment_id": f.deployment_id,
            "hour": f.hour.to_string(),
            "metric": f.metric.as_str(),
            "currency": f.currency.map(|c| c.as_str().to_string()),
            "value": f.value.normalize().to_string(),
            "baseline_median": f.median.normalize().to_string(),
            "baseline_mad": f.mad.normalize().to_string(),
            "direction": f.direction.as_str(),
        }),
    );
    d.tenant_id = f.owner;
    d.resource = Some(a.id());
    d
}

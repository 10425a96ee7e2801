//! Spend anomalies: `Anomaly` and `AnomalyList` (`GET /v1/finops/gpu/anomalies`).

use eai_store::anomalies::Anomaly as Record;
use serde::Serialize;

/// One anomaly: the hour, the metric, its value against the baseline's median and MAD (exact decimals).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Anomaly {
    pub id: String,
    pub deployment_id: String,
    pub hour: String,
    pub metric: &'static str,
    pub currency: Option<String>,
    pub value: String,
    pub baseline_median: String,
    pub baseline_mad: String,
    pub deviation_mads: Option<String>,
    pub direction: &'static str,
    pub baseline_hours: u32,
    pub detected_at: String,
    pub message: String,
}

impl Anomaly {
    pub fn of(a: &Record) -> Self {
        let f = &a.finding;
        Anomaly {
            id: a.id(),
            deployment_id: f.deployment_id.clone(),
            hour: f.hour.to_string(),
            metric: f.metric.as_str(),
            currency: f.currency.map(|c| c.as_str().to_string()),
            value: f.value.normalize().to_string(),
            baseline_median: f.median.normalize().to_string(),
            baseline_mad: f.mad.normalize().to_string(),
            deviation_mads: f.deviation.map(|d| d.to_string()),
            direction: f.direction.as_str(),
            baseline_hours: f.baseline_hours,
            detected_at: f.detected_at.to_string(),
            message: eai_app::anomalies::message(a),
        }
    }
}

/// `GET /v1/finops/gpu/anomalies`: the period and its anomalies, newest hour first.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AnomalyList {
    pub from: String,
    pub to: String,
    pub items: Vec<Anomaly>,
}

//! Spend anomalies (SPEC §13), every `EAI_ANOMALY_CHECK_SECONDS` on the replica that holds their lease: the
//! settled hours of every deployment are judged against its baseline (`eai_engine::anomaly`), each anomaly is
//! recorded once (`AnomalyStore::record_anomaly`, an insert-if-absent), counted in
//! `eai_gpu_spend_anomalies_total{metric}`, and, when `EAI_ANOMALY_WEBHOOK_URL` is set, posted once.
//!
//! The job keeps nothing in memory: each round checks the trailing [`CHECK_HOURS`] settled hours again (an hour
//! is settled [`SETTLE_MS`] after its end, the allocation having no settle delay of its own: late samples of
//! the last hour get that long), so a round missed, a restart or a new leader loses nothing, and an anomaly
//! found again is not new. The values are read from the primary as the allocation reads them
//! ([`crate::allocation::read_inputs`]): each hour's GPU-seconds and its cost per currency before rounding.
//!
//! The webhook: a `POST` of `{"type": "gpu.anomaly", …}` signed as budget webhooks are
//! ([`crate::budget_alerts::post_signed`] with `EAI_ANOMALY_WEBHOOK_SECRET`), with `X-EAI-Webhook-Id: anm_<seq>`;
//! at least once, retried on the budget webhooks' schedule ([`crate::budget_alerts::retry_at`],
//! [`eai_store::budgets::MAX_ATTEMPTS`] attempts).

use std::sync::Arc;
use std::time::Duration;

use eai_engine::allocate::Period;
use eai_engine::anomaly::{detect, hourly_values, Metric, Thresholds};
use eai_engine::time::Timestamp;
use eai_store::anomalies::{Anomaly, NewAnomaly};
use eai_store::{AnomalyStore, Store, StoreError};
use serde_json::json;

use crate::allocation::{read_inputs, Source};
use crate::budget_alerts::{http_client, post_signed, retry_at};
use crate::clock::{Clock, Ticker};
use crate::metrics::Metrics;

const HOUR_MS: i64 = 3_600_000;

/// How long after its end an hour is judged: its late samples have had that long to arrive.
pub const SETTLE_MS: i64 = HOUR_MS;

/// The settled hours each round checks (again): two days, so that rounds missed for up to a day and a half
/// (a restart, a change of leader) still check every hour.
pub const CHECK_HOURS: i64 = 48;

/// How often due webhooks are posted between two rounds (a failed delivery is retried on its schedule, not
/// at the next round).
pub const DELIVER_EVERY: Duration = Duration::from_secs(15);

/// Where anomalies are posted.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// `EAI_ANOMALY_WEBHOOK_URL`.
    pub url: String,
    /// `EAI_ANOMALY_WEBHOOK_SECRET`: the HMAC key of the signature. Never logged.
    pub secret: String,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The job's settings (`EAI_ANOMALY_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnomalyConfig {
    /// `EAI_ANOMALY_CHECK_SECONDS` (3600).
    pub every: Duration,
    /// `EAI_ANOMALY_BASELINE_DAYS` (28), `EAI_ANOMALY_THRESHOLD_MADS` (5), `EAI_ANOMALY_MIN_RATIO` (0.5).
    pub thresholds: Thresholds,
    /// `EAI_ANOMALY_WEBHOOK_URL` and `EAI_ANOMALY_WEBHOOK_SECRET`.
    pub webhook: Option<Webhook>,
}

impl Default for AnomalyConfig {
    fn default() -> Self {
        AnomalyConfig {
            every: Duration::from_secs(3600),
            thresholds: Thresholds::default(),
            webhook: None,
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// The hours checked, `[from, to)`.
    pub from: Timestamp,
    pub to: Timestamp,
    /// The anomalies recorded by this round (those found again are not).
    pub recorded: Vec<Anomaly>,
    /// Webhooks acknowledged and attempts failed.
    pub delivered: usize,
    pub failed: usize,
}

/// The settled hours a round at `at` checks: the [`CHECK_HOURS`] hours before the first that is not settled.
pub fn hours_checked(at: Timestamp) -> (Timestamp, Timestamp) {
    let to = Timestamp(at.0 - SETTLE_MS).floor_to(HOUR_MS);
    (Timestamp(to.0 - CHECK_HOURS * HOUR_MS), to)
}

/// Runs the job forever on the replica holding its lease: a round every `config.every` on `clock` (the first at
/// once), and due webhooks posted every [`DELIVER_EVERY`] between rounds.
pub async fn run(
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    config: AnomalyConfig,
    clock: Arc<dyn Clock>,
) {
    let http = match http_client() {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "anomaly webhooks: no HTTP client");
            return;
        }
    };
    let mut lease = crate::leader::Lease::new(
        store.clone(),
        eai_store::lease::LeaderJob::Anomalies,
        metrics.clone(),
    );
    let mut tick = Ticker::new(clock, config.every.min(DELIVER_EVERY));
    let every_ms = i64::try_from(config.every.as_millis()).unwrap_or(i64::MAX);
    // When the next round is due (scheduling only: a round missed is made up by the next one's 48 hours).
    let mut next_round = Timestamp(i64::MIN);
    loop {
        let at = tick.tick().await;
        if !lease.check().await {
            continue;
        }
        let done = if at >= next_round {
            next_round = Timestamp(at.0.saturating_add(every_ms));
            check_once(store.as_ref(), &metrics, &http, &config, at)
                .await
                .map(|_| ())
        } else if let Some(w) = &config.webhook {
            deliver_due(store.as_ref(), &http, w, at).await.map(|_| ())
        } else {
            Ok(())
        };
        if let Err(e) = done {
            tracing::warn!(error = %e, "anomaly check failed (retried next time)");
        }
    }
}

/// One round at `at`: the settled hours judged, the new anomalies recorded and counted, due webhooks posted.
pub async fn check_once(
    store: &dyn Store,
    metrics: &Metrics,
    http: &reqwest::Client,
    config: &AnomalyConfig,
    at: Timestamp,
) -> Result<Round, StoreError> {
    let (from, to) = hours_checked(at);
    let mut round = Round {
        from,
        to,
        ..Round::default()
    };
    let read_from = Timestamp(from.0 - config.thresholds.baseline_ms());
    let period = Period::new(read_from, to, HOUR_MS)
        .map_err(|e| StoreError::Internal(format!("anomaly period: {}", e.reason)))?;
    let inputs = read_inputs(&Source::Primary, store, period).await?;
    let hourly = hourly_values(&inputs.read.rollups, &inputs.policies);
    let check: Vec<Timestamp> = (0..CHECK_HOURS)
        .map(|k| Timestamp(from.0 + k * HOUR_MS))
        .collect();
    for (key, values) in &hourly.series {
        for f in detect(values, &check, &config.thresholds) {
            let finding = NewAnomaly {
                deployment_id: key.deployment_id.clone(),
                owner: hourly.owners.get(&key.deployment_id).copied(),
                hour: f.hour,
                metric: key.metric,
                currency: key.currency,
                value: f.value,
                median: f.median,
                mad: f.mad,
                deviation: f.deviation_mads,
                direction: f.direction,
                baseline_hours: f.baseline_hours,
                detected_at: at,
                deliver: config.webhook.is_some(),
            };
            if let Some(a) = store.record_anomaly(&finding).await? {
                tracing::info!(id = %a.id(), deployment_id = %a.finding.deployment_id, hour = %a.finding.hour, metric = a.finding.metric.as_str(), "spend anomaly");
                metrics.spend_anomaly(a.finding.metric.as_str());
                round.recorded.push(a);
            }
        }
    }
    if let Some(w) = &config.webhook {
        (round.delivered, round.failed) = deliver_due(store, http, w, at).await?;
    }
    Ok(round)
}

/// Posts the due anomaly webhooks; returns how many were acknowledged and how many failed.
async fn deliver_due(
    store: &dyn AnomalyStore,
    http: &reqwest::Client,
    w: &Webhook,
    at: Timestamp,
) -> Result<(usize, usize), StoreError> {
    let (mut delivered, mut failed) = (0, 0);
    for a in store.due_anomaly_webhooks(at, 100).await? {
        let outcome = post(http, w, &a, at).await;
        let next = match &outcome {
            Ok(()) => {
                delivered += 1;
                None
            }
            Err(e) => {
                failed += 1;
                tracing::warn!(id = %a.id(), url = %w.url, error = %e, "anomaly webhook not delivered");
                retry_at(at, a.attempts)
            }
        };
        store
            .anomaly_webhook_attempted(a.seq, at, outcome, next)
            .await?;
    }
    Ok((delivered, failed))
}

/// The text of an anomaly: what, when, how far.
pub fn message(a: &Anomaly) -> String {
    let f = &a.finding;
    let what = match (f.metric, f.currency) {
        (Metric::Cost, Some(c)) => format!("cost ({})", c.as_str()),
        (Metric::Cost, None) => "cost".to_string(),
        (Metric::GpuSeconds, _) => "GPU-seconds".to_string(),
    };
    let how_far = match f.deviation {
        Some(d) => format!("{d} scaled MADs"),
        None => "its baseline does not vary".to_string(),
    };
    // A cost reads in its currency's minor unit here; the fields keep their places.
    let shown = |v: rust_decimal::Decimal| match (f.metric, f.currency) {
        (Metric::Cost, Some(c)) => c.round(v).to_string(),
        _ => v.normalize().to_string(),
    };
    format!(
        "{} in the hour from {}: {what} {} is {} its median {} over {} hours ({how_far})",
        f.deployment_id,
        f.hour,
        shown(f.value),
        f.direction.as_str(),
        shown(f.median),
        f.baseline_hours,
    )
}

/// The body of an anomaly webhook: event `gpu.anomaly` and the anomaly's fields as the API lists them.
pub fn payload(a: &Anomaly) -> serde_json::Value {
    let f = &a.finding;
    json!({
        "type": "gpu.anomaly",
        "id": a.id(),
        "deployment_id": f.deployment_id,
        "tenant_id": f.owner.map(|t| t.to_string()),
        "hour": f.hour.to_string(),
        "metric": f.metric.as_str(),
        "currency": f.currency.map(|c| c.as_str().to_string()),
        "value": f.value.normalize().to_string(),
        "baseline_median": f.median.normalize().to_string(),
        "baseline_mad": f.mad.normalize().to_string(),
        "deviation_mads": f.deviation.map(|d| d.to_string()),
        "direction": f.direction.as_str(),
        "baseline_hours": f.baseline_hours,
        "detected_at": f.detected_at.to_string(),
        "message": message(a),
    })
}

#[tracing::instrument(name = "anomaly.webhook", skip_all, fields(otel.kind = "client", id = %a.id()))]
async fn post(
    http: &reqwest::Client,
    w: &Webhook,
    a: &Anomaly,
    at: Timestamp,
) -> Result<(), String> {
    post_signed(http, &w.url, &w.secret, &a.id(), payload(a).to_string(), at).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_checks_the_two_days_before_the_last_settled_hour() {
        // At 10:30, the hour 09:00-10:00 ended 30 minutes ago: not settled. 08:00-09:00 is the last checked.
        let h = |n: i64| Timestamp(1_790_812_800_000 + n * HOUR_MS);
        let (from, to) = hours_checked(Timestamp(h(10).0 + 30 * 60_000));
        assert_eq!(to, h(9));
        assert_eq!(from, h(9 - 48));
        // At 11:00 sharp, 09:00-10:00 ended an hour ago: settled.
        assert_eq!(hours_checked(h(11)).1, h(10));
    }
}

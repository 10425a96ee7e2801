//! Budget chores, every `EAI_BUDGET_CHECK_SECONDS` on the replica that holds their lease: holds past their expiry are marked expired, thresholds
//! reached this month are recorded (once each, audited, counted in `/metrics`), and due webhooks are delivered.
//!
//! Forecast alerts (SPEC §13): the month's forecast ([`crate::forecast`]) allocates some fifty days, so the chores
//! compute it at most once an hour ([`FORECAST_EVERY`]; the last run's time is kept in the loop, per replica: a
//! new lease holder computes it at once). A budget with a webhook whose limit is not reached yet and is expected to
//! be reached before the month's end gets one alert `budget.forecast_exceeded` a month (`"expected to exceed on
//! <day>"`), recorded and audited by the store once per budget and month, and delivered as the thresholds are.
//!
//! A webhook is a `POST` of a JSON body to the budget's `webhook_url`, signed like Stripe's: header
//! `X-EAI-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the budget's webhook secret>`,
//! plus `X-EAI-Webhook-Id` (the alert's id: a receiver that sees it twice drops the second). Delivery is at
//! least once: any answer but a 2xx is retried with exponential backoff (2^n s, at most an hour:
//! [`WEBHOOK_BACKOFF`], the shared [`Backoff`] schedule) for
//! [`eai_store::budgets::MAX_ATTEMPTS`] attempts (about two days), then given up and audited.

use std::sync::Arc;
use std::time::Duration;

use eai_engine::allocate::AllocationConfig;
use eai_engine::backoff::Backoff;
use eai_engine::forecast::day_start;
use eai_engine::time::Timestamp;
use eai_store::budgets::{Alert, AlertKind, Delivery, MAX_ATTEMPTS};
use eai_store::{BudgetStore, Scope, Store, StoreError};
use rust_decimal::Decimal;
use serde_json::json;
use sha2::Sha256;
use uuid::Uuid;

use crate::allocation::Source;
use crate::clock::{Clock, Ticker};
use crate::forecast::{days_fit, forecast_of, Window};
use crate::metrics::Metrics;

/// The webhooks' retry schedule: 1 s doubling to an hour, no jitter (the chores' period spreads them).
pub const WEBHOOK_BACKOFF: Backoff = Backoff::new(1000, 3_600_000);

/// How long a receiver may take to answer.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The chores compute the forecast of the budgets at most this often (on the clock).
pub const FORECAST_EVERY: Duration = Duration::from_secs(3600);

/// Where the chores' forecast reads the allocation from, and its buckets.
#[derive(Debug, Clone)]
pub struct Forecasts {
    pub source: Arc<Source>,
    pub config: AllocationConfig,
}

/// Runs the chores forever, every `every` on `clock` (the first at once); the forecast's alerts at most every
/// [`FORECAST_EVERY`].
pub async fn run(
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    every: Duration,
    clock: Arc<dyn Clock>,
    forecasts: Forecasts,
) {
    let http = match http_client() {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "budget webhooks: no HTTP client");
            return;
        }
    };
    let mut lease = crate::leader::Lease::new(
        store.clone(),
        eai_store::lease::LeaderJob::BudgetChores,
        metrics.clone(),
    );
    let mut tick = Ticker::new(clock, every);
    let forecast_every = i64::try_from(FORECAST_EVERY.as_millis()).unwrap_or(i64::MAX);
    let mut last_forecast: Option<Timestamp> = None;
    loop {
        let at = tick.tick().await;
        // One replica delivers the webhooks (each is also deduplicated by its id).
        if !lease.check().await {
            continue;
        }
        if last_forecast.is_none_or(|last| at.0 - last.0 >= forecast_every) {
            // Tried once an hour, failed or not (a failure is retried an hour later, not every round).
            last_forecast = Some(at);
            match forecast_once(store.as_ref(), &forecasts, at).await {
                Ok(alerts) => {
                    for a in &alerts {
                        tracing::info!(budget = %a.budget_id, tenant = %a.tenant_id, "budget expected to exceed its limit this month");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "budget forecast failed (retried in an hour)"),
            }
        }
        if let Err(e) = check_once(store.as_ref(), &metrics, &http, at).await {
            tracing::warn!(error = %e, "budget check failed (retried next time)");
        }
    }
}

/// When a webhook that failed at `at` for the `attempts + 1`-th time is tried again: 2^attempts s later, at
/// most an hour ([`WEBHOOK_BACKOFF`]).
pub fn next_attempt(at: Timestamp, attempts: u32) -> Timestamp {
    Timestamp(at.0 + WEBHOOK_BACKOFF.delay(attempts.saturating_add(1), 0))
}

/// When a webhook whose delivery at `at` failed after `attempts` earlier ones is tried again: [`next_attempt`],
/// or `None` once it has had its [`MAX_ATTEMPTS`] (given up).
pub fn retry_at(at: Timestamp, attempts: u32) -> Option<Timestamp> {
    (attempts + 1 < MAX_ATTEMPTS).then(|| next_attempt(at, attempts))
}

/// The HTTP client every webhook is posted with (budgets' and anomalies'): a receiver has 10 s to answer.
pub fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder().timeout(DELIVERY_TIMEOUT).build()
}

/// One round of the chores at `at`.
pub async fn check_once(
    store: &dyn BudgetStore,
    metrics: &Metrics,
    http: &reqwest::Client,
    at: Timestamp,
) -> eai_store::Result<()> {
    let expired = store.expire_reservations(at).await?;
    if expired > 0 {
        tracing::info!(expired, "reservation holds expired");
    }
    let crossed = store.record_crossings(at).await?;
    for a in &crossed {
        tracing::info!(budget = %a.budget_id, tenant = %a.tenant_id, threshold_pct = a.threshold_pct, "budget threshold crossed");
    }
    Metrics::add(&metrics.budget_crossings, crossed.len() as u64);
    let ratios = store
        .budget_standings(Scope::Platform, at)
        .await?
        .into_iter()
        .map(|s| {
            let ratio = if s.budget.spec.limit.is_zero() {
                Decimal::ZERO
            } else {
                (s.spent.cost / s.budget.spec.limit).round_dp(6)
            };
            (
                s.budget.id.clone(),
                s.budget.spec.tenant_id.to_string(),
                ratio,
            )
        })
        .collect();
    metrics.set_budgets(ratios);
    for d in store.due_deliveries(at, 100).await? {
        let outcome = deliver(http, &d, at).await;
        let next = match &outcome {
            Ok(()) => None,
            Err(_) => retry_at(at, d.alert.attempts),
        };
        match &outcome {
            Ok(()) => Metrics::add(&metrics.webhooks_delivered, 1),
            Err(e) => {
                Metrics::add(&metrics.webhooks_failed, 1);
                tracing::warn!(alert = %d.alert.id, url = %d.url, error = %e, "budget webhook not delivered");
            }
        }
        store
            .delivery_attempted(d.alert.id, at, outcome, next)
            .await?;
    }
    Ok(())
}

/// Records the forecast alerts due at `at`: the month's forecast (platform-wide), and for each budget with a
/// webhook, not reached yet, expected to be reached before the month's end, its alert unless it has one this
/// month. Returns the alerts recorded now.
pub async fn forecast_once(
    store: &dyn Store,
    forecasts: &Forecasts,
    at: Timestamp,
) -> eai_store::Result<Vec<Alert>> {
    days_fit(forecasts.config)
        .map_err(|e| StoreError::Internal(format!("no forecast: the period {}", e.reason)))?;
    let window = Window::of(None, at).map_err(|e| StoreError::Internal(e.reason))?;
    let f = forecast_of(
        &forecasts.source,
        store,
        window,
        forecasts.config,
        Scope::Platform,
        at,
    )
    .await?;
    let mut out = Vec::new();
    for b in &f.budgets {
        let Some(day) = b.exhausted_on else {
            continue;
        };
        if b.budget.spec.webhook_url.is_none() || b.reached() {
            continue;
        }
        let alert = Alert::forecast(
            Uuid::new_v4(),
            &b.budget,
            b.spent,
            b.expected,
            day_start(day),
            at,
        );
        if store.record_forecast_alert(&alert).await? {
            out.push(alert);
        }
    }
    Ok(out)
}

/// The body of a webhook: a threshold crossed, or the limit expected to be reached this month.
pub fn payload(a: &Alert) -> serde_json::Value {
    let c = a.currency;
    let money = |d: Decimal| json!({ "amount": c.amount_text(d), "currency": c.as_str() });
    if let AlertKind::Forecast {
        expected,
        exhausted_on,
    } = a.kind
    {
        let day = exhausted_on.date_string();
        return json!({
            "type": "budget.forecast_exceeded",
            "id": a.id.hyphenated().to_string(),
            "budget_id": a.budget_id,
            "tenant_id": a.tenant_id.to_string(),
            "month": eai_engine::batch::month_of(a.month),
            "limit": money(a.limit),
            "spent": money(a.spent),
            "expected": money(expected),
            "exhausted_on": day,
            "message": format!("expected to exceed on {day}"),
            "forecast_at": a.crossed_at.to_string(),
        });
    }
    json!({
        "type": "budget.threshold_crossed",
        "id": a.id.hyphenated().to_string(),
        "budget_id": a.budget_id,
        "tenant_id": a.tenant_id.to_string(),
        "month": eai_engine::batch::month_of(a.month),
        "threshold_pct": a.threshold_pct,
        "spent": money(a.spent),
        "limit": money(a.limit),
        "crossed_at": a.crossed_at.to_string(),
    })
}

#[tracing::instrument(name = "budget.webhook", skip_all, fields(otel.kind = "client", eai.tenant_id = %d.alert.tenant_id, budget_id = %d.alert.budget_id))]
async fn deliver(http: &reqwest::Client, d: &Delivery, at: Timestamp) -> Result<(), String> {
    let body = payload(&d.alert).to_string();
    post_signed(
        http,
        &d.url,
        &d.secret,
        &d.alert.id.hyphenated().to_string(),
        body,
        at,
    )
    .await
}

/// POSTs `body` to `url` as every webhook is sent (the budgets' and the anomalies'): JSON, its id in
/// `X-EAI-Webhook-Id`, signed at `at` with `secret` ([`signature`]), the trace context passed on. `Err`: why it
/// was not acknowledged (no answer, or an answer other than 2xx).
pub async fn post_signed(
    http: &reqwest::Client,
    url: &str,
    secret: &str,
    id: &str,
    body: String,
    at: Timestamp,
) -> Result<(), String> {
    let t = at.0.div_euclid(1000);
    let mut req = http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-EAI-Webhook-Id", id)
        .header("X-EAI-Signature", signature(secret, t, &body));
    if let Some(tp) = eai_telemetry::traceparent() {
        req = req.header("traceparent", tp);
    }
    let resp = req
        .body(body)
        .send()
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(format!("answered {}", resp.status()))
    }
}

/// `t=<seconds>,v1=<hex HMAC-SHA256(secret, "<seconds>.<body>")>`. The anomaly webhooks are signed with it too.
pub fn signature(secret: &str, unix_seconds: i64, body: &str) -> String {
    let mac = hmac_sha256(
        secret.as_bytes(),
        format!("{unix_seconds}.{body}").as_bytes(),
    );
    format!("t={unix_seconds},v1={}", hex::encode(mac))
}

/// HMAC (RFC 2104) over SHA-256 (the `hmac` crate).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::{Mac, SimpleHmac};
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = <SimpleHmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(message);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_rfc_4231() {
        // RFC 4231, test cases 1 and 2.
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn webhooks_back_off_one_second_doubling_to_an_hour() {
        let t = Timestamp(0);
        assert_eq!(next_attempt(t, 0), Timestamp(1_000));
        assert_eq!(next_attempt(t, 3), Timestamp(8_000));
        assert_eq!(next_attempt(t, 19), Timestamp(3_600_000));
        // Before it is given up, as the README says "about two days": 1 + 2 + … + 2,048 s (4,095 s), then 47
        // hours of an hour (it was 20 attempts, about nine hours, against the README's two days).
        let waited: i64 = (0..MAX_ATTEMPTS).map(|n| next_attempt(t, n).0).sum();
        assert_eq!(waited, (4_095 + 47 * 3_600) * 1_000);
    }

    #[test]
    fn the_signature_covers_the_time_and_the_body() {
        let s = signature("whsec_x", 1_790_812_800, "{}");
        assert!(s.starts_with("t=1790812800,v1="), "{s}");
        assert_ne!(s, signature("whsec_x", 1_790_812_801, "{}"));
        assert_ne!(s, signature("whsec_y", 1_790_812_800, "{}"));
    }
}

//! Budgets, reservations and threshold alerts whatever the backend (SPEC §9): the records both backends store
//! and the rules they share, settled once here.
//!
//! - A budget's terms are a JSON body written once; its effective dates are columns, and closing one sets
//!   `effective_to` (never edited in place, like policies: [`check_close`]). Ids are `bud_<seq>`. Its webhook
//!   secret is stored beside it and never shown again after creation.
//! - **Spend** is kept per (tenant, calendar month, currency): the sum of [`eai_engine::budget::spend_of`] over the
//!   stored usage events, maintained in the usage upsert's own transaction ([`SpendDeltas`]: a replaced event's
//!   spend is taken out, the new one's added), as the group rollups and claims are.
//! - A **reservation** holds its estimate until committed, released or expired. The decision and the hold are one
//!   transaction under the tenant's budget lock (SQLite: the one writer; PostgreSQL: a transaction advisory lock),
//!   so concurrent requests never over-grant. Held sums count open holds only (`expires_at > now`). A commit writes
//!   the commit event through the usage upsert (so its spend counts at once) and is idempotent: a committed
//!   reservation is returned as it is. Releasing a committed one is a [`StoreError::Conflict`].
//! - A threshold **alert** is recorded once per (budget, month, threshold), with its audit event, in one
//!   transaction; its webhook delivery is retried until acknowledged (the application's backoff). A **forecast**
//!   alert (the limit expected to be reached before the month's end, SPEC §13) is recorded once per (budget,
//!   month) the same way ([`AlertKind`]; its row has threshold 0) and delivered on the same path.

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::budget::{Amounts, Budget, BudgetSpec, ReservationRequest, Standing};
use eai_engine::domain::{TenantId, UsageEvent};
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::{corrupt, dec_parse, dec_text};
use crate::{Result, StoreError};

/// A budget to store, with the secret that signs its webhook (if it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBudget {
    pub spec: BudgetSpec,
    pub webhook_secret: Option<String>,
}

/// A stored budget.
#[derive(Clone, PartialEq, Eq)]
pub struct BudgetRecord {
    pub budget: Budget,
    /// Signs the webhook's deliveries; never shown after creation.
    pub webhook_secret: Option<String>,
}

impl std::fmt::Debug for BudgetRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetRecord")
            .field("budget", &self.budget)
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "***"),
            )
            .finish()
    }
}

/// Where a reservation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservationStatus {
    Held,
    Committed,
    Released,
    Expired,
}

impl ReservationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationStatus::Held => "held",
            ReservationStatus::Committed => "committed",
            ReservationStatus::Released => "released",
            ReservationStatus::Expired => "expired",
        }
    }
}

impl FromStr for ReservationStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "held" => ReservationStatus::Held,
            "committed" => ReservationStatus::Committed,
            "released" => ReservationStatus::Released,
            "expired" => ReservationStatus::Expired,
            other => return Err(corrupt("reservations.status", other)),
        })
    }
}

/// A stored reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// `res_<uuid>`: unguessable, so that a reservation id reveals nothing of other tenants' volume.
    pub id: String,
    pub tenant_id: TenantId,
    pub action: String,
    pub deployment_id: Option<String>,
    pub currency: Currency,
    pub estimate: Amounts,
    pub status: ReservationStatus,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// When it was committed, released or found expired.
    pub closed_at: Option<Timestamp>,
    pub actual: Option<Amounts>,
    /// The usage event a commit recorded.
    pub event_id: Option<Uuid>,
}

impl Reservation {
    /// The status at `at`: a hold past its expiry is expired even before housekeeping marks it.
    pub fn status_at(&self, at: Timestamp) -> ReservationStatus {
        if self.status == ReservationStatus::Held && self.expires_at <= at {
            ReservationStatus::Expired
        } else {
            self.status
        }
    }
}

/// A reservation to decide: the request, with its id and times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReservation {
    pub id: String,
    pub request: ReservationRequest,
    pub created_at: Timestamp,
}

impl NewReservation {
    pub fn new(request: ReservationRequest, at: Timestamp) -> Self {
        NewReservation {
            id: format!("res_{}", Uuid::new_v4().simple()),
            request,
            created_at: at,
        }
    }

    /// The stored row once granted in `currency`.
    pub fn granted(&self, currency: Currency) -> Reservation {
        let r = &self.request;
        Reservation {
            id: self.id.clone(),
            tenant_id: r.tenant_id,
            action: r.action.clone(),
            deployment_id: r.deployment_id.clone(),
            currency,
            estimate: r.estimate,
            status: ReservationStatus::Held,
            created_at: self.created_at,
            expires_at: Timestamp(self.created_at.0 + r.ttl_ms),
            closed_at: None,
            actual: None,
            event_id: None,
        }
    }
}

/// What a reservation request came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReserveOutcome {
    Granted(Reservation),
    Refused(eai_engine::budget::Refusal),
}

/// The decision of [`ReserveOutcome`], taken from the tenant's budgets in force and their standings: the
/// currency (the estimate's, or the budgets'), then whether the estimate fits.
pub fn decide(req: &NewReservation, standings: &[Standing]) -> Result<ReserveOutcome> {
    let budgets: Vec<Budget> = standings.iter().map(|s| s.budget.clone()).collect();
    let currency = eai_engine::budget::reservation_currency(req.request.currency, &budgets)
        .map_err(|e| StoreError::Refused(vec![e]))?;
    Ok(
        match eai_engine::budget::decide(standings, req.request.estimate, currency) {
            Ok(()) => ReserveOutcome::Granted(req.granted(currency)),
            Err(refusal) => ReserveOutcome::Refused(refusal),
        },
    )
}

/// What a commit does to a stored reservation: `None` when it is committed already (nothing changes).
pub fn check_commit(r: &Reservation) -> Result<Option<()>> {
    match r.status {
        ReservationStatus::Committed => Ok(None),
        ReservationStatus::Held | ReservationStatus::Expired => Ok(Some(())),
        ReservationStatus::Released => Err(StoreError::conflict(
            "status",
            format!("reservation {} was released: it cannot be committed", r.id),
        )),
    }
}

/// What a release does: `None` when nothing is held any more (released or expired already).
pub fn check_release(r: &Reservation, at: Timestamp) -> Result<Option<()>> {
    match r.status_at(at) {
        ReservationStatus::Held => Ok(Some(())),
        ReservationStatus::Released | ReservationStatus::Expired => Ok(None),
        ReservationStatus::Committed => Err(StoreError::conflict(
            "status",
            format!("reservation {} is committed: it cannot be released", r.id),
        )),
    }
}

/// The commit event of `r` with the `actual` amounts at `at`.
pub fn commit_event_of(r: &Reservation, actual: Amounts, at: Timestamp) -> UsageEvent {
    eai_engine::budget::commit_event(
        &r.id,
        r.tenant_id,
        &r.action,
        r.deployment_id.as_deref(),
        actual,
        r.currency,
        at,
    )
}

/// What an alert tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertKind {
    /// The month's spend reached `threshold_pct` of the limit.
    Threshold,
    /// The limit is expected to be reached on the day starting at `exhausted_on`, the month's spend at `expected`
    /// by its end (SPEC §13's forecast).
    Forecast {
        expected: Decimal,
        exhausted_on: Timestamp,
    },
}

impl AlertKind {
    /// The stored `kind`: `threshold` or `forecast`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AlertKind::Threshold => "threshold",
            AlertKind::Forecast { .. } => "forecast",
        }
    }

    /// Back from the stored columns.
    pub fn parse(
        kind: &str,
        expected: Option<Decimal>,
        exhausted_on_ms: Option<i64>,
    ) -> Result<Self> {
        match (kind, expected, exhausted_on_ms) {
            ("threshold", _, _) => Ok(AlertKind::Threshold),
            ("forecast", Some(expected), Some(day)) => Ok(AlertKind::Forecast {
                expected,
                exhausted_on: Timestamp(day),
            }),
            _ => Err(corrupt("budget_alerts.kind", kind)),
        }
    }

    /// The stored `expected` and `exhausted_on_ms` (none for a threshold).
    pub fn columns(&self) -> (Option<Decimal>, Option<i64>) {
        match self {
            AlertKind::Threshold => (None, None),
            AlertKind::Forecast {
                expected,
                exhausted_on,
            } => (Some(*expected), Some(exhausted_on.0)),
        }
    }
}

/// A recorded alert (a threshold crossed, or a forecast of the limit) and its webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub id: Uuid,
    pub budget_id: String,
    pub tenant_id: TenantId,
    /// The first instant of the month.
    pub month: Timestamp,
    pub kind: AlertKind,
    /// The threshold crossed; 0 for a forecast.
    pub threshold_pct: u32,
    pub spent: Decimal,
    pub limit: Decimal,
    pub currency: Currency,
    pub crossed_at: Timestamp,
    pub attempts: u32,
    pub delivered_at: Option<Timestamp>,
}

impl Alert {
    /// The alert of `standing`'s budget reaching `threshold_pct` in the month of `at`, not delivered yet.
    pub fn crossed(id: Uuid, standing: &Standing, threshold_pct: u32, at: Timestamp) -> Alert {
        let spec = &standing.budget.spec;
        Alert {
            id,
            budget_id: standing.budget.id.clone(),
            tenant_id: spec.tenant_id,
            month: month_start(at),
            kind: AlertKind::Threshold,
            threshold_pct,
            spent: standing.spent.cost,
            limit: spec.limit,
            currency: spec.currency,
            crossed_at: at,
            attempts: 0,
            delivered_at: None,
        }
    }
}

impl Alert {
    /// The forecast alert of `budget` at `at`: `spent` so far, `expected` by the month's end, the limit reached on
    /// the day starting at `exhausted_on`. Not delivered yet.
    pub fn forecast(
        id: Uuid,
        budget: &Budget,
        spent: Decimal,
        expected: Decimal,
        exhausted_on: Timestamp,
        at: Timestamp,
    ) -> Alert {
        let spec = &budget.spec;
        Alert {
            id,
            budget_id: budget.id.clone(),
            tenant_id: spec.tenant_id,
            month: month_start(at),
            kind: AlertKind::Forecast {
                expected,
                exhausted_on,
            },
            threshold_pct: 0,
            spent,
            limit: spec.limit,
            currency: spec.currency,
            crossed_at: at,
            attempts: 0,
            delivered_at: None,
        }
    }
}

/// An alert due for delivery, with where to and the secret that signs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Delivery {
    pub alert: Alert,
    pub url: String,
    pub secret: String,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("alert", &self.alert)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The audit event of a crossing: on the budget's tenant's trail.
pub fn crossing_audit(a: &Alert) -> crate::AuditDraft {
    let mut d = crate::AuditDraft::system(
        "system",
        "budget.threshold_crossed",
        a.crossed_at,
        serde_json::json!({
            "alert_id": a.id.hyphenated().to_string(),
            "threshold_pct": a.threshold_pct,
            "month": eai_engine::batch::month_of(a.month),
            "spent": dec_text(a.spent),
            "limit": dec_text(a.limit),
            "currency": a.currency.as_str(),
        }),
    );
    d.tenant_id = Some(a.tenant_id);
    d.resource = Some(a.budget_id.clone());
    d
}

/// The audit event of a forecast alert: on the budget's tenant's trail.
pub fn forecast_audit(a: &Alert) -> crate::AuditDraft {
    let (expected, day) = a.kind.columns();
    let mut d = crate::AuditDraft::system(
        "system",
        "budget.forecast_exceeded",
        a.crossed_at,
        serde_json::json!({
            "alert_id": a.id.hyphenated().to_string(),
            "month": eai_engine::batch::month_of(a.month),
            "spent": dec_text(a.spent),
            "expected": expected.map(dec_text),
            "exhausted_on": day.map(|d| Timestamp(d).date_string()),
            "limit": dec_text(a.limit),
            "currency": a.currency.as_str(),
        }),
    );
    d.tenant_id = Some(a.tenant_id);
    d.resource = Some(a.budget_id.clone());
    d
}

/// The audit event of a delivery given up after its last attempt.
pub fn abandoned_audit(alert: Uuid, at: Timestamp, last_error: &str) -> crate::AuditDraft {
    let mut d = crate::AuditDraft::system(
        "system",
        "budget.webhook_abandoned",
        at,
        serde_json::json!({ "alert_id": alert.hyphenated().to_string(), "last_error": last_error }),
    );
    d.decision = "deny".into();
    d
}

/// A webhook is tried this many times (about two days at the application's backoff, one second doubling to an
/// hour: 4,095 s, then 47 hours) before it is given up (and the giving up audited).
pub const MAX_ATTEMPTS: u32 = 59;

/// The first instant of the calendar month (UTC) holding `t`.
pub fn month_start(t: Timestamp) -> Timestamp {
    let month = eai_engine::batch::month_of(t);
    eai_engine::batch::month(&month).map_or(t, |(start, _)| start)
}

// --- budget bodies ---------------------------------------------------------------------------------------------

/// A budget's terms as both backends store them (its tenant and dates are columns).
#[derive(Debug, Serialize, Deserialize)]
struct BudgetBody {
    name: String,
    limit: String,
    currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_limit: Option<u64>,
    thresholds_pct: Vec<u32>,
    enforce: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    webhook_url: Option<String>,
}

pub fn budget_json(spec: &BudgetSpec) -> Result<String> {
    serde_json::to_string(&BudgetBody {
        name: spec.name.clone(),
        limit: dec_text(spec.limit),
        currency: spec.currency.as_str().to_string(),
        tokens_limit: spec.tokens_limit,
        thresholds_pct: spec.thresholds_pct.clone(),
        enforce: spec.enforce,
        webhook_url: spec.webhook_url.clone(),
    })
    .map_err(|e| StoreError::Internal(format!("encode a budget: {e}")))
}

/// A stored budget row back.
pub fn budget_parse(
    seq: i64,
    tenant_id: TenantId,
    body: &str,
    from: i64,
    to: Option<i64>,
    webhook_secret: Option<String>,
) -> Result<BudgetRecord> {
    let b: BudgetBody = serde_json::from_str(body).map_err(|_| corrupt("budgets.body", body))?;
    let spec = BudgetSpec {
        tenant_id,
        name: b.name,
        limit: dec_parse(&b.limit, "budgets.limit")?,
        currency: Currency::from_str(&b.currency)
            .map_err(|_| corrupt("budgets.currency", &b.currency))?,
        tokens_limit: b.tokens_limit,
        thresholds_pct: b.thresholds_pct,
        enforce: b.enforce,
        webhook_url: b.webhook_url,
        effective_from: Timestamp(from),
        effective_to: to.map(Timestamp),
    };
    let seq = u64::try_from(seq).map_err(|_| corrupt("budgets.seq", seq))?;
    Ok(BudgetRecord {
        budget: Budget::new(seq, spec),
        webhook_secret,
    })
}

/// The sequence of a budget id, or `NotFound`.
pub fn budget_seq(id: &str) -> Result<i64> {
    eai_engine::budget::budget_seq(id)
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| StoreError::NotFound(format!("budget {id}")))
}

/// Whether budget `b` may be closed at `at`: [`Budget::close_at`]'s rule (that of policies), its refusal a
/// conflict.
pub fn check_close(b: &Budget, at: Timestamp) -> Result<()> {
    b.close_at(at).map(drop).map_err(|refused| {
        StoreError::conflict("effective_to", format!("budget {} {refused}", b.id))
    })
}

/// A replacement belongs to the budget's tenant.
pub fn check_replacement(old: &Budget, new: &BudgetSpec) -> Result<()> {
    if new.tenant_id != old.spec.tenant_id {
        return Err(StoreError::conflict(
            "tenant_id",
            format!(
                "the successor of budget {} must be of the same tenant",
                old.id
            ),
        ));
    }
    Ok(())
}

// --- spend -----------------------------------------------------------------------------------------------------

/// One row of spend: a tenant's month in one currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpendKey {
    pub tenant_id: TenantId,
    pub month: Timestamp,
    pub currency: Currency,
}

/// A transaction's changes to the spend rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpendDeltas {
    pub rows: BTreeMap<SpendKey, Amounts>,
}

impl SpendDeltas {
    fn apply(&mut self, e: &UsageEvent, sign: Decimal) {
        if let Some((currency, a)) = eai_engine::budget::spend_of(e) {
            let key = SpendKey {
                tenant_id: e.tenant_id,
                month: month_start(e.occurred_at),
                currency,
            };
            let row = self.rows.entry(key).or_default();
            row.cost += a.cost * sign;
            row.tokens += a.tokens * sign;
        }
    }

    /// An event stored: its spend, if it is spend, is added.
    pub fn add(&mut self, e: &UsageEvent) {
        self.apply(e, Decimal::ONE);
    }

    /// An event replaced: its old spend is taken out.
    pub fn remove(&mut self, e: &UsageEvent) {
        self.apply(e, Decimal::NEGATIVE_ONE);
    }

    /// The rows that change.
    pub fn changed(&self) -> impl Iterator<Item = (&SpendKey, &Amounts)> {
        self.rows
            .iter()
            .filter(|(_, a)| !a.cost.is_zero() || !a.tokens.is_zero())
    }
}

/// A stored spend row's amounts back.
pub fn amounts_parse(cost: &str, tokens: &str, what: &str) -> Result<Amounts> {
    Ok(Amounts {
        cost: dec_parse(cost, what)?,
        tokens: dec_parse(tokens, what)?,
    })
}

/// Standings of `budgets` (in force at `at`), from the spend of their months and the open holds per (tenant,
/// currency).
pub fn standings(
    budgets: Vec<Budget>,
    spent: &BTreeMap<SpendKey, Amounts>,
    held: &BTreeMap<(TenantId, Currency), Amounts>,
    at: Timestamp,
) -> Vec<Standing> {
    let month = month_start(at);
    budgets
        .into_iter()
        .map(|budget| {
            let key = SpendKey {
                tenant_id: budget.spec.tenant_id,
                month,
                currency: budget.spec.currency,
            };
            Standing {
                spent: spent.get(&key).copied().unwrap_or_default(),
                held: held
                    .get(&(budget.spec.tenant_id, budget.spec.currency))
                    .copied()
                    .unwrap_or_default(),
                budget,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use eai_engine::budget::{commit_event, Amounts};

    fn tenant() -> TenantId {
        "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
            .parse()
            .expect("uuid")
    }

    #[test]
    fn spend_follows_replacements_exactly() {
        let eur = Currency::from_str("EUR").expect("eur");
        let at = Timestamp::parse_rfc3339("2026-11-15T10:00:00Z").expect("t");
        let a = |c: i64| Amounts {
            cost: Decimal::new(c, 2),
            tokens: Decimal::from(10),
        };
        let first = commit_event("res_a", tenant(), "llm.invoke", None, a(150), eur, at);
        let again = commit_event("res_a", tenant(), "llm.invoke", None, a(120), eur, at);
        let mut d = SpendDeltas::default();
        d.add(&first);
        d.remove(&first);
        d.add(&again);
        let rows: Vec<_> = d.changed().collect();
        assert_eq!(rows.len(), 1);
        let (key, amounts) = rows[0];
        assert_eq!(
            key.month,
            Timestamp::parse_rfc3339("2026-11-01T00:00:00Z").expect("m")
        );
        assert_eq!(amounts.cost, Decimal::new(120, 2));
    }
}

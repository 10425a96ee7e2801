//! Budgets and reservations: `Budget` (with its month's `BudgetCurrent`), `BudgetChange`, `Reservation` (the
//! list is [`super::Items`]).

use eai_engine::budget::{crossed, Amounts, Budget as Stored, Standing};
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use eai_store::budgets::Reservation as StoredReservation;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::Count;

/// An amount with at least its currency's minor digits (`12.50`, not `12.5`), and its currency.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Money {
    pub amount: String,
    pub currency: String,
}

impl Money {
    pub fn of(d: Decimal, c: Currency) -> Self {
        Money {
            amount: c.amount_text(d),
            currency: c.as_str().to_string(),
        }
    }
}

/// The month's standing of a budget in force: spent, held, left, and the thresholds reached.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BudgetCurrent {
    pub month: String,
    pub spent: Money,
    pub held: Money,
    pub left: Money,
    pub spent_tokens: Count,
    pub held_tokens: Count,
    pub tokens_left: Option<Count>,
    pub crossed_pct: Vec<u32>,
}

impl BudgetCurrent {
    pub fn of(s: &Standing, at: Timestamp) -> Self {
        let c = s.budget.spec.currency;
        BudgetCurrent {
            month: eai_engine::batch::month_of(at),
            spent: Money::of(s.spent.cost, c),
            held: Money::of(s.held.cost, c),
            left: Money::of(s.left(), c),
            spent_tokens: Count(s.spent.tokens),
            held_tokens: Count(s.held.tokens),
            tokens_left: s.tokens_left().map(Count),
            crossed_pct: crossed(&s.budget.spec, s.spent.cost),
        }
    }
}

/// `closed` once `effective_to` has passed, `scheduled` before `effective_from`, else `active`.
fn status(b: &Stored, at: Timestamp) -> &'static str {
    if b.spec.effective_to.is_some_and(|t| t <= at) {
        "closed"
    } else if b.spec.effective_from > at {
        "scheduled"
    } else {
        "active"
    }
}

/// A budget as the API shows it: never its webhook secret, except in the answer that makes it
/// (`webhook_secret`, present only then).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Budget {
    pub id: String,
    pub tenant_id: String,
    pub name: String,
    pub period: &'static str,
    pub limit: Money,
    pub tokens_limit: Option<u64>,
    pub thresholds_pct: Vec<u32>,
    pub enforce: bool,
    pub webhook_url: Option<String>,
    pub effective_from: String,
    pub effective_to: Option<String>,
    pub status: &'static str,
    pub current: Option<BudgetCurrent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub webhook_secret: Option<String>,
}

impl Budget {
    /// `standing`: the month's, for a budget in force at `at`.
    pub fn of(b: &Stored, standing: Option<&Standing>, at: Timestamp) -> Self {
        let s = &b.spec;
        Budget {
            id: b.id.clone(),
            tenant_id: s.tenant_id.to_string(),
            name: s.name.clone(),
            period: "month",
            limit: Money::of(s.limit, s.currency),
            tokens_limit: s.tokens_limit,
            thresholds_pct: s.thresholds_pct.clone(),
            enforce: s.enforce,
            webhook_url: s.webhook_url.clone(),
            effective_from: s.effective_from.to_string(),
            effective_to: s.effective_to.map(|t| t.to_string()),
            status: status(b, at),
            current: standing.map(|st| BudgetCurrent::of(st, at)),
            webhook_secret: None,
        }
    }
}

/// A supersede (`opened`: the successor) or a disable (`opened`: null).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BudgetChange {
    pub closed: Budget,
    pub opened: Option<Budget>,
}

/// A reservation's cost and tokens, in its currency.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReservationAmounts {
    pub cost: String,
    pub tokens: Count,
    pub currency: String,
}

impl ReservationAmounts {
    fn of(a: Amounts, c: Currency) -> Self {
        ReservationAmounts {
            cost: c.amount_text(a.cost),
            tokens: Count(a.tokens),
            currency: c.as_str().to_string(),
        }
    }
}

/// A reservation as the API shows it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reservation {
    pub id: String,
    pub tenant_id: String,
    pub action: String,
    pub deployment_id: Option<String>,
    pub status: &'static str,
    pub estimate: ReservationAmounts,
    pub actual: Option<ReservationAmounts>,
    pub created_at: String,
    pub expires_at: String,
    pub closed_at: Option<String>,
    pub usage_event_id: Option<String>,
}

impl Reservation {
    pub fn of(r: &StoredReservation, at: Timestamp) -> Self {
        Reservation {
            id: r.id.clone(),
            tenant_id: r.tenant_id.to_string(),
            action: r.action.clone(),
            deployment_id: r.deployment_id.clone(),
            status: r.status_at(at).as_str(),
            estimate: ReservationAmounts::of(r.estimate, r.currency),
            actual: r.actual.map(|a| ReservationAmounts::of(a, r.currency)),
            created_at: r.created_at.to_string(),
            expires_at: r.expires_at.to_string(),
            closed_at: r.closed_at.map(|t| t.to_string()),
            usage_event_id: r.event_id.map(|e| e.hyphenated().to_string()),
        }
    }
}

/// The body of `POST /v1/finops/budgets/{id}/disable` (optional): when it closes, default now.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BudgetDisable {
    pub effective_at: Option<String>,
}

//! The month's forecast: `Forecast`, its `ForecastLine`s, `ForecastTotal`s and `BudgetForecast`s.

use eai_app::forecast::{BudgetOutlook, Line, Total};
use eai_engine::forecast::Rounded;
use eai_engine::money::Currency;
use serde::Serialize;

use super::budget::Money;

/// One tenant's spend on one deployment in one currency (no tenant: the deployment's unallocated idle capacity).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ForecastLine {
    pub tenant_id: Option<String>,
    pub deployment_id: String,
    pub spent: Money,
    pub expected: Money,
    pub low: Money,
    pub high: Money,
}

/// A tenant's totals in one currency: the sums of its lines.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ForecastTotal {
    pub tenant_id: Option<String>,
    pub spent: Money,
    pub expected: Money,
    pub low: Money,
    pub high: Money,
}

/// A budget in force and the day its limit is expected to be reached.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BudgetForecast {
    pub budget_id: String,
    pub tenant_id: String,
    pub name: String,
    pub limit: Money,
    pub spent: Money,
    pub expected: Money,
    pub exhausted_on: Option<String>,
    pub exhausted_on_high: Option<String>,
}

/// `GET /v1/finops/gpu/forecast`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Forecast {
    pub period: String,
    pub from: String,
    pub to: String,
    pub as_of: String,
    pub history_from: String,
    pub days_left: u32,
    pub lines: Vec<ForecastLine>,
    pub tenants: Vec<ForecastTotal>,
    pub budgets: Vec<BudgetForecast>,
}

/// The four figures of a line or a total.
fn figures(r: &Rounded, c: Currency) -> [Money; 4] {
    [
        Money::of(r.spent, c),
        Money::of(r.expected, c),
        Money::of(r.low, c),
        Money::of(r.high, c),
    ]
}

impl ForecastLine {
    pub fn of(l: &Line) -> Self {
        let [spent, expected, low, high] = figures(&l.figures, l.currency);
        ForecastLine {
            tenant_id: l.tenant_id.map(|t| t.to_string()),
            deployment_id: l.deployment_id.clone(),
            spent,
            expected,
            low,
            high,
        }
    }
}

impl ForecastTotal {
    pub fn of(t: &Total) -> Self {
        let [spent, expected, low, high] = figures(&t.figures, t.currency);
        ForecastTotal {
            tenant_id: t.tenant_id.map(|t| t.to_string()),
            spent,
            expected,
            low,
            high,
        }
    }
}

impl BudgetForecast {
    pub fn of(b: &BudgetOutlook) -> Self {
        let spec = &b.budget.spec;
        let c = spec.currency;
        BudgetForecast {
            budget_id: b.budget.id.clone(),
            tenant_id: spec.tenant_id.to_string(),
            name: spec.name.clone(),
            limit: Money::of(spec.limit, c),
            spent: Money::of(b.spent, c),
            expected: Money::of(b.expected, c),
            exhausted_on: b.exhausted_on.map(|d| d.to_string()),
            exhausted_on_high: b.exhausted_on_high.map(|d| d.to_string()),
        }
    }
}

impl Forecast {
    pub fn of(f: &eai_app::forecast::Forecast) -> Self {
        let w = &f.window;
        Forecast {
            period: w.period(),
            from: w.from.to_string(),
            to: w.to.to_string(),
            as_of: w.as_of.to_string(),
            history_from: w.history_from.to_string(),
            days_left: u32::try_from(w.days_left().len()).unwrap_or(u32::MAX),
            lines: f.lines.iter().map(ForecastLine::of).collect(),
            tenants: f.tenants.iter().map(ForecastTotal::of).collect(),
            budgets: f.budgets.iter().map(BudgetForecast::of).collect(),
        }
    }
}

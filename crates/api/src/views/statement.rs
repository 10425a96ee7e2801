//! Statements: `Statement` (with its `StatementLine`s), `StatementSummary`, `StatementList`, `StatementIssued`,
//! and the body `StatementIssue`.

use std::collections::BTreeMap;

use eai_app::statements::{Issued, Shown};
use eai_engine::domain::TenantId;
use eai_engine::money::Money as Amount;
use eai_engine::statement::Line;
use eai_store::statements::{month_text, Statement as Stored};
use serde::{Deserialize, Serialize};

use super::budget::Money;

fn money(m: &Amount) -> Money {
    Money::of(m.amount, m.currency)
}

/// A charge as issued, or an adjustment since.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatementLine {
    pub kind: String,
    pub deployment_id: String,
    pub policy_id: String,
    pub gpu_hours: String,
    pub energy_kwh: String,
    pub amount: Money,
}

impl StatementLine {
    pub fn of(l: &Line) -> Self {
        StatementLine {
            kind: l.kind.as_str().to_string(),
            deployment_id: l.deployment_id.clone(),
            policy_id: l.policy_id.clone(),
            gpu_hours: l.gpu_hours.to_string(),
            energy_kwh: l.energy_kwh.to_string(),
            amount: money(&l.amount),
        }
    }
}

/// An issued statement as read now: as issued, with its adjustments.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Statement {
    pub number: String,
    pub tenant_id: String,
    pub tenant_name: Option<String>,
    pub period: String,
    pub from: String,
    pub to: String,
    pub issued_at: String,
    pub issued_by: String,
    pub lines: Vec<StatementLine>,
    pub totals: Vec<Money>,
    pub adjustments: Vec<StatementLine>,
    pub adjusted_totals: Vec<Money>,
    pub as_of: String,
}

impl Statement {
    pub fn of(s: &Shown) -> Self {
        let i = &s.statement.issued;
        Statement {
            number: s.statement.number.clone(),
            tenant_id: i.tenant_id.to_string(),
            tenant_name: s.tenant_name.clone(),
            period: month_text(i.from),
            from: i.from.to_string(),
            to: i.to.to_string(),
            issued_at: i.issued_at.to_string(),
            issued_by: i.issued_by.clone(),
            lines: i.lines.iter().map(StatementLine::of).collect(),
            totals: i.totals.iter().map(money).collect(),
            adjustments: s.adjustments.iter().map(StatementLine::of).collect(),
            adjusted_totals: s.adjusted_totals.iter().map(money).collect(),
            as_of: s.as_of.to_string(),
        }
    }
}

/// An issued statement without its lines.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatementSummary {
    pub number: String,
    pub tenant_id: String,
    pub tenant_name: Option<String>,
    pub period: String,
    pub issued_at: String,
    pub totals: Vec<Money>,
}

impl StatementSummary {
    /// `s`, its tenant named from `names` (none for the platform's own, or an unregistered tenant).
    pub fn of(s: &Stored, names: &BTreeMap<TenantId, String>) -> Self {
        let i = &s.issued;
        StatementSummary {
            number: s.number.clone(),
            tenant_id: i.tenant_id.to_string(),
            tenant_name: names.get(&i.tenant_id).cloned(),
            period: month_text(i.from),
            issued_at: i.issued_at.to_string(),
            totals: i.totals.iter().map(money).collect(),
        }
    }
}

/// `GET /v1/finops/gpu/statements`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatementList {
    pub statements: Vec<StatementSummary>,
}

/// `POST /v1/finops/gpu/statements`: what this call issued, and what was issued before.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatementIssued {
    pub issued: Vec<StatementSummary>,
    pub already_issued: Vec<StatementSummary>,
}

impl StatementIssued {
    pub fn of(i: &Issued, names: &BTreeMap<TenantId, String>) -> Self {
        let all = |v: &[Stored]| v.iter().map(|s| StatementSummary::of(s, names)).collect();
        StatementIssued {
            issued: all(&i.issued),
            already_issued: all(&i.already_issued),
        }
    }
}

/// The body of `POST /v1/finops/gpu/statements`, read as given (`routes::statements` checks it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatementIssue {
    pub period: Option<String>,
    pub tenant_id: Option<String>,
}

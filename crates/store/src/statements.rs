//! Statements as both backends store them (the figures: `eai_engine::statement`). One row per (tenant, month),
//! never updated nor deleted (the database refuses both); its number `ST-YYYY-MM-NNNN` is the next in its month,
//! taken in the transaction that inserts it. The issued lines and totals are one JSON text column (`content`),
//! every decimal as its exact text. A new row is written with its audit event (`gpu_statement.issue`) in one
//! transaction; a statement already issued is read back, never issued twice.

use eai_engine::domain::TenantId;
use eai_engine::money::{Currency, Money};
use eai_engine::statement::{Kind, Line};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::{AuditDraft, Result, StoreError};

/// A statement to issue: its tenant (the platform tenant, the nil uuid: the unallocated capacity), its month
/// `[from, to)`, who issues it and when, and its lines and totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStatement {
    pub tenant_id: TenantId,
    pub from: Timestamp,
    pub to: Timestamp,
    pub issued_at: Timestamp,
    /// The API key id, or `cli`.
    pub issued_by: String,
    pub lines: Vec<Line>,
    pub totals: Vec<Money>,
}

/// An issued statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// `ST-YYYY-MM-NNNN`.
    pub number: String,
    pub issued: NewStatement,
}

/// An issued statement's number, tenant and month start: what the FOCUS export names its rows by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementNumber {
    pub tenant_id: TenantId,
    pub month: Timestamp,
    pub number: String,
}

/// The month `YYYY-MM` of a statement starting at `from`.
pub fn month_text(from: Timestamp) -> String {
    eai_engine::batch::month_of(from)
}

/// The lines and totals as the `content` column holds them.
pub fn content(s: &NewStatement) -> String {
    let lines: Vec<Value> = s
        .lines
        .iter()
        .map(|l| {
            json!({
                "deployment_id": l.deployment_id,
                "policy_id": l.policy_id,
                "gpu_hours": l.gpu_hours.to_string(),
                "energy_kwh": l.energy_kwh.to_string(),
                "amount": l.amount.amount.to_string(),
                "currency": l.amount.currency.as_str(),
            })
        })
        .collect();
    let totals: Vec<Value> = s.totals.iter().map(money).collect();
    json!({ "lines": lines, "totals": totals }).to_string()
}

fn money(m: &Money) -> Value {
    json!({ "amount": m.amount.to_string(), "currency": m.currency.as_str() })
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Internal(format!("corrupt statement {what}"))
}

fn text<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| corrupt(key))
}

fn decimal(v: &Value, key: &str) -> Result<Decimal> {
    text(v, key)?.parse().map_err(|_| corrupt(key))
}

fn money_of(v: &Value) -> Result<Money> {
    Ok(Money {
        amount: decimal(v, "amount")?,
        currency: text(v, "currency")?
            .parse::<Currency>()
            .map_err(|_| corrupt("currency"))?,
    })
}

/// The `content` column read back: (lines, totals).
pub fn content_of(s: &str) -> Result<(Vec<Line>, Vec<Money>)> {
    let v: Value = serde_json::from_str(s).map_err(|_| corrupt("content"))?;
    let array = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| corrupt(key))
    };
    let lines = array("lines")?
        .iter()
        .map(|l| {
            Ok(Line {
                kind: Kind::Charge,
                deployment_id: text(l, "deployment_id")?.to_string(),
                policy_id: text(l, "policy_id")?.to_string(),
                gpu_hours: decimal(l, "gpu_hours")?,
                energy_kwh: decimal(l, "energy_kwh")?,
                amount: money_of(l)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let totals = array("totals")?
        .iter()
        .map(money_of)
        .collect::<Result<Vec<_>>>()?;
    Ok((lines, totals))
}

/// The tenant column read back (the nil uuid: the platform's statement).
pub fn tenant_of(s: &str) -> Result<TenantId> {
    TenantId::from_stored(s).ok_or_else(|| corrupt("tenant"))
}

/// The audit event of a new statement: `draft` completed with its number, tenant, month and totals, on the
/// tenant's trail (none for the platform's own).
pub fn issued_audit(draft: &AuditDraft, s: &Statement) -> AuditDraft {
    let i = &s.issued;
    let mut d = crate::audit::completed(
        draft,
        Some(s.number.clone()),
        json!({
            "number": s.number,
            "tenant_id": i.tenant_id.to_string(),
            "period": month_text(i.from),
            "totals": i.totals.iter().map(|m| json!({
                "amount": m.currency.amount_text(m.amount),
                "currency": m.currency.as_str(),
            })).collect::<Vec<_>>(),
        }),
    );
    d.tenant_id = (!i.tenant_id.is_platform()).then_some(i.tenant_id);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn the_content_keeps_every_decimal_exactly() {
        let eur = |s: &str| Money {
            amount: Decimal::from_str(s).unwrap(),
            currency: Currency::EUR,
        };
        let s = NewStatement {
            tenant_id: TenantId::PLATFORM,
            from: Timestamp(0),
            to: Timestamp(1),
            issued_at: Timestamp(2),
            issued_by: "cli".into(),
            lines: vec![Line {
                kind: Kind::Charge,
                deployment_id: "d".into(),
                policy_id: "alp_1".into(),
                gpu_hours: Decimal::from_str("1.500000").unwrap(),
                energy_kwh: Decimal::from_str("0.000001").unwrap(),
                amount: eur("3.10"),
            }],
            totals: vec![eur("3.10")],
        };
        let (lines, totals) = content_of(&content(&s)).unwrap();
        assert_eq!(lines, s.lines);
        assert_eq!(lines[0].gpu_hours.to_string(), "1.500000");
        assert_eq!(totals[0].amount.to_string(), "3.10");
        assert!(content_of("{}").is_err());
    }
}

//! The FOCUS 1.2 export (FinOps Open Cost and Usage Specification), pure: an allocation's day items
//! ([`crate::report::DayItem`]) as FOCUS rows, one per tenant x deployment x policy x UTC day, plus one per
//! deployment x policy x day of unallocated (idle) cost, and their CSV text. The Parquet encoding of the same
//! rows lives in `eai-api` (it needs the `parquet` crate).
//!
//! Internal chargeback has no discounts: BilledCost = EffectiveCost = ListCost = ContractedCost = the allocated
//! cost. Column types follow the FOCUS column table (`fixtures/focus_spec_v1.2_columns.csv`); our own columns
//! are prefixed `x_`.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::TenantId;
use crate::report::{Allocation, DayItem};
use crate::time::Timestamp;

const DAY_MS: i64 = 86_400_000;

/// The unit of ConsumedQuantity and PricingQuantity (FOCUS unit format `<unit>-<plural time unit>`, like
/// `GB-Hours`).
pub const GPU_HOURS: &str = "GPU-Hours";
/// FOCUS ServiceCategory of every row.
pub const SERVICE_CATEGORY: &str = "AI and Machine Learning";
/// FOCUS ServiceSubcategory of every row.
pub const SERVICE_SUBCATEGORY: &str = "AI Platforms";
/// FOCUS ServiceName of every row.
pub const SERVICE_NAME: &str = "GPU Compute";
/// SubAccountName of the rows of unallocated cost (their SubAccountId is the reserved platform tenant).
pub const UNALLOCATED_NAME: &str = "Unallocated (idle capacity)";
/// Decimal places of GPU-hours (ConsumedQuantity, PricingQuantity): 3.6 microseconds.
pub const HOURS_DP: u32 = 9;
/// Decimal places of the `x_` quantities (as the allocation reports them).
pub const QUANTITY_DP: u32 = 6;
/// Decimal places of money columns in a typed encoding (Parquet): every ISO 4217 minor unit fits.
pub const MONEY_DP: u32 = 4;

/// A column's type in the encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// An instant in UTC: `YYYY-MM-DDTHH:MM:SSZ` in CSV.
    DateTime,
    /// An exact decimal with at most this many places.
    Decimal(u32),
    Bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    /// May be empty (null) in some rows.
    pub nullable: bool,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: false,
    }
}

const fn nullable(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: true,
    }
}

const MONEY: Kind = Kind::Decimal(MONEY_DP);
const HOURS: Kind = Kind::Decimal(HOURS_DP);
const QTY: Kind = Kind::Decimal(QUANTITY_DP);

/// Number of columns of the export.
pub const N_COLUMNS: usize = 36;

/// The columns of the export, in order: FOCUS 1.2's Mandatory ones, the Conditional and Recommended ones that
/// apply to an on-prem GPU chargeback, then ours.
pub const COLUMNS: [Column; N_COLUMNS] = [
    col("BilledCost", MONEY),
    col("BillingAccountId", Kind::Text),
    col("BillingAccountName", Kind::Text),
    col("BillingCurrency", Kind::Text),
    col("BillingPeriodEnd", Kind::DateTime),
    col("BillingPeriodStart", Kind::DateTime),
    col("ChargeCategory", Kind::Text),
    nullable("ChargeClass", Kind::Text),
    col("ChargeDescription", Kind::Text),
    col("ChargeFrequency", Kind::Text),
    col("ChargePeriodEnd", Kind::DateTime),
    col("ChargePeriodStart", Kind::DateTime),
    col("ConsumedQuantity", HOURS),
    col("ConsumedUnit", Kind::Text),
    col("ContractedCost", MONEY),
    col("EffectiveCost", MONEY),
    col("InvoiceIssuerName", Kind::Text),
    col("ListCost", MONEY),
    col("PricingQuantity", HOURS),
    col("PricingUnit", Kind::Text),
    col("ProviderName", Kind::Text),
    col("PublisherName", Kind::Text),
    col("ResourceId", Kind::Text),
    col("ResourceName", Kind::Text),
    col("ResourceType", Kind::Text),
    col("ServiceCategory", Kind::Text),
    col("ServiceName", Kind::Text),
    col("ServiceSubcategory", Kind::Text),
    col("SubAccountId", Kind::Text),
    nullable("SubAccountName", Kind::Text),
    col("x_AllocationPolicyId", Kind::Text),
    col("x_EnergyWh", QTY),
    col("x_EstimatedGpuSeconds", QTY),
    col("x_GpuMemoryGbSeconds", QTY),
    col("x_GpuSeconds", QTY),
    col("x_Unallocated", Kind::Bool),
];

/// One cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Text(String),
    DateTime(Timestamp),
    Decimal(Decimal),
    Bool(bool),
}

/// One row, in the order of [`COLUMNS`].
pub type Row = [Value; N_COLUMNS];

/// Who issues the charges: the platform (configurable; `eai-gpu` by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    /// ProviderName, PublisherName, InvoiceIssuerName and BillingAccountName.
    pub name: String,
    /// BillingAccountId.
    pub billing_account_id: String,
}

impl Default for Issuer {
    fn default() -> Self {
        Issuer {
            name: "eai-gpu".into(),
            billing_account_id: "eai-gpu".into(),
        }
    }
}

/// The FOCUS rows of an allocation computed with `AllocationConfig::day_items` (scope it first for a tenant:
/// its day items are then its own and no idle row is left). `names`: the registered tenants' display names
/// (SubAccountName; null for a tenant seen in data but never registered). The billing period is the
/// allocation's `[from, to)`; each row's charge period is its UTC day, clipped to it.
pub fn rows(a: &Allocation, names: &BTreeMap<TenantId, String>, issuer: &Issuer) -> Vec<Row> {
    a.day_items
        .iter()
        .map(|d| row(d, a.from, a.to, names, issuer))
        .collect()
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn quantity(d: Decimal, dp: u32) -> Value {
    Value::Decimal(d.round_dp(dp).normalize())
}

fn row(
    d: &DayItem,
    from: Timestamp,
    to: Timestamp,
    names: &BTreeMap<TenantId, String>,
    issuer: &Issuer,
) -> Row {
    let cost = Value::Decimal(d.cost.amount);
    let hours = d.gpu_seconds / Decimal::from(3600);
    let (sub_id, sub_name, description) = match d.tenant_id {
        Some(t) => (
            t,
            names.get(&t).map_or(Value::Null, |n| text(n.as_str())),
            format!(
                "GPU time on deployment {} under allocation policy {}",
                d.deployment_id, d.policy_id
            ),
        ),
        None => (
            TenantId::PLATFORM,
            text(UNALLOCATED_NAME),
            format!(
                "Idle GPU capacity of deployment {} under allocation policy {}, allocated to no tenant",
                d.deployment_id, d.policy_id
            ),
        ),
    };
    let start = d.day.max(from);
    let end = Timestamp(d.day.0 + DAY_MS).min(to);
    [
        cost.clone(),
        text(issuer.billing_account_id.as_str()),
        text(issuer.name.as_str()),
        text(d.cost.currency.as_str()),
        Value::DateTime(to),
        Value::DateTime(from),
        text("Usage"),
        Value::Null,
        text(description),
        text("Usage-Based"),
        Value::DateTime(end),
        Value::DateTime(start),
        quantity(hours, HOURS_DP),
        text(GPU_HOURS),
        cost.clone(),
        cost.clone(),
        text(issuer.name.as_str()),
        cost,
        quantity(hours, HOURS_DP),
        text(GPU_HOURS),
        text(issuer.name.as_str()),
        text(issuer.name.as_str()),
        text(d.deployment_id.as_str()),
        text(d.deployment_id.as_str()),
        text("GPU Deployment"),
        text(SERVICE_CATEGORY),
        text(SERVICE_NAME),
        text(SERVICE_SUBCATEGORY),
        text(sub_id.to_string()),
        sub_name,
        text(d.policy_id.as_str()),
        quantity(d.energy_wh, QUANTITY_DP),
        quantity(d.estimated_gpu_seconds, QUANTITY_DP),
        quantity(d.gpu_memory_gb_seconds, QUANTITY_DP),
        quantity(d.gpu_seconds, QUANTITY_DP),
        Value::Bool(d.tenant_id.is_none()),
    ]
}

/// The rows as CSV (RFC 4180: a header line, CRLF line ends, fields quoted when they hold a comma, a quote or a
/// line break). Null is an empty field; decimals are written exactly, date-times as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::new();
    let header: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
    out.push_str(&header.join(","));
    out.push_str("\r\n");
    for r in rows {
        for (i, v) in r.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match v {
                Value::Null => {}
                Value::Text(s) => push_field(&mut out, s),
                Value::DateTime(t) => out.push_str(&t.to_string()),
                Value::Decimal(d) => out.push_str(&d.to_string()),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            }
        }
        out.push_str("\r\n");
    }
    out
}

fn push_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rust_decimal::Decimal;

    use super::{csv, rows, Issuer, Kind, Value, COLUMNS};
    use crate::domain::TenantId;
    use crate::money::{Currency, Money};
    use crate::report::{Allocation, DayItem};
    use crate::time::Timestamp;

    fn item(tenant: Option<TenantId>) -> DayItem {
        DayItem {
            tenant_id: tenant,
            deployment_id: "vllm-llama, 70b".into(),
            policy_id: "alp_1".into(),
            day: Timestamp::parse_date("2026-10-01").expect("date"),
            gpu_seconds: Decimal::new(7200, 0),
            estimated_gpu_seconds: Decimal::new(15, 0),
            gpu_memory_gb_seconds: Decimal::new(288_000, 0),
            energy_wh: Decimal::new(800, 0),
            cost: Money {
                amount: Decimal::new(519, 2),
                currency: Currency::EUR,
            },
        }
    }

    fn allocation(items: Vec<DayItem>) -> Allocation {
        Allocation {
            from: Timestamp::parse_rfc3339("2026-10-01T06:00:00Z").expect("from"),
            to: Timestamp::parse_date("2026-11-01").expect("to"),
            items: Vec::new(),
            deployments: Vec::new(),
            tenants: Vec::new(),
            daily: Vec::new(),
            gaps: Vec::new(),
            findings: Vec::new(),
            day_items: items,
        }
    }

    #[test]
    fn every_value_has_its_columns_kind() {
        let t = TenantId(uuid::Uuid::from_bytes([7; 16]));
        let a = allocation(vec![item(Some(t)), item(None)]);
        for r in rows(&a, &BTreeMap::new(), &Issuer::default()) {
            for (c, v) in COLUMNS.iter().zip(r.iter()) {
                let ok = match (c.kind, v) {
                    (_, Value::Null) => c.nullable,
                    (Kind::Text, Value::Text(_)) | (Kind::DateTime, Value::DateTime(_)) => true,
                    (Kind::Decimal(dp), Value::Decimal(d)) => d.scale() <= dp,
                    (Kind::Bool, Value::Bool(_)) => true,
                    _ => false,
                };
                assert!(ok, "{}: {v:?}", c.name);
            }
        }
    }

    #[test]
    fn a_row_tells_the_day_the_tenant_and_the_cost() {
        let t = TenantId(uuid::Uuid::from_bytes([7; 16]));
        let names = BTreeMap::from([(t, "Acme, Inc.".to_string())]);
        let text = csv(&rows(
            &allocation(vec![item(Some(t)), item(None)]),
            &names,
            &Issuer::default(),
        ));
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("BilledCost,BillingAccountId,"));
        assert_eq!(lines[3], "");
        // The charge period is the day clipped to the billing period; the period is the allocation's.
        assert_eq!(
            lines[1],
            "5.19,eai-gpu,eai-gpu,EUR,2026-11-01T00:00:00Z,2026-10-01T06:00:00Z,Usage,,\
             \"GPU time on deployment vllm-llama, 70b under allocation policy alp_1\",Usage-Based,\
             2026-10-02T00:00:00Z,2026-10-01T06:00:00Z,2,GPU-Hours,5.19,5.19,eai-gpu,5.19,2,GPU-Hours,\
             eai-gpu,eai-gpu,\"vllm-llama, 70b\",\"vllm-llama, 70b\",GPU Deployment,AI and Machine Learning,\
             GPU Compute,AI Platforms,07070707-0707-0707-0707-070707070707,\"Acme, Inc.\",alp_1,800,15,288000,\
             7200,false"
        );
        assert!(
            lines[2].contains(",00000000-0000-0000-0000-000000000000,Unallocated (idle capacity),")
        );
        assert!(lines[2].ends_with(",true"));
    }
}

//! The FOCUS export (FinOps Open Cost and Usage Specification), 1.3 by default or 1.2, pure: an allocation's
//! day items ([`crate::report::DayItem`]) as FOCUS rows, one per tenant x deployment x policy x UTC day (or
//! hour), plus one per deployment x policy x span of unallocated (idle) cost, and their CSV text. The Parquet
//! encoding of the same rows lives in `eai-api` (it needs the `parquet` crate).
//!
//! Internal chargeback has no discounts: BilledCost = EffectiveCost = ListCost = ContractedCost = the allocated
//! cost. Column types follow the FOCUS column table (`fixtures/focus_spec_v1.2_columns.csv`, and 1.3's text);
//! our own columns are prefixed `x_`. A row is built with every column of the newest version; a version writes
//! its own columns of it ([`Version::columns`]).
//!
//! 1.3's split-cost columns: the *origin charge* is a deployment's cost under one policy over a row's charge
//! period, and the rows split from it (the tenants' and the idle row) carry their share of it
//! (`AllocatedRatio`: the row's cost over the origin's, rounded to 12 places, the rounding remainder given to
//! the largest share so that the ratios of an origin charge sum to exactly 1; an origin of no cost is split
//! by GPU-seconds, or equally when it has none either). An origin charge that one row makes up (a dedicated
//! deployment, a tenant's own export) is not split: its `Allocated*` columns are null. JSON values are written
//! here by a small exact writer (numbers as exact decimals).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

pub use crate::allocate::Span;
use crate::batch::{month, month_of};
use crate::domain::TenantId;
use crate::error::FieldError;
use crate::report::{Allocation, DayItem};
use crate::time::Timestamp;

/// A FOCUS version of the columns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    V1_2,
    #[default]
    V1_3,
}

impl Version {
    /// `1.3` (the default) or `1.2`.
    pub fn parse(s: Option<&str>) -> Result<Version, FieldError> {
        match s.map(str::trim) {
            None | Some("1.3") => Ok(Version::V1_3),
            Some("1.2") => Ok(Version::V1_2),
            Some(other) => Err(FieldError::new(
                "version",
                format!("must be `1.3` or `1.2`, not `{other}`"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1_2 => "1.2",
            Version::V1_3 => "1.3",
        }
    }

    /// The columns of this version, in order, with their index in a [`Row`].
    pub fn columns(self) -> impl Iterator<Item = (usize, &'static Column)> {
        COLUMNS
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.since <= self)
    }
}

/// `day` (the default) or `hour`: the charge period of a row.
pub fn granularity(s: Option<&str>) -> Result<Span, FieldError> {
    match s.map(str::trim) {
        None | Some("day") => Ok(Span::Day),
        Some("hour") => Ok(Span::Hour),
        Some(other) => Err(FieldError::new(
            "granularity",
            format!("must be `day` or `hour`, not `{other}`"),
        )),
    }
}

/// The statement numbers rows belong to (InvoiceId): per (SubAccountId, the month's first instant). The idle
/// rows take the entry of [`TenantId::PLATFORM`].
pub type Invoices = BTreeMap<(TenantId, Timestamp), String>;

/// AllocatedMethodId of a split row: `eai-gpu/` and its basis.
pub const METHOD_PREFIX: &str = "eai-gpu/";
/// The AllocatedTags key of the tenant (the nil uuid on idle rows).
pub const TAG_TENANT: &str = "eai-gpu/tenant";
/// The AllocatedTags key of the allocation policy.
pub const TAG_POLICY: &str = "eai-gpu/policy";
/// Decimal places of an AllocatedRatio.
pub const RATIO_DP: u32 = 12;

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
    /// The first version with this column.
    pub since: Version,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: false,
        since: Version::V1_2,
    }
}

const fn nullable(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: true,
        since: Version::V1_2,
    }
}

/// A column new in 1.3.
const fn v1_3(c: Column) -> Column {
    Column {
        since: Version::V1_3,
        ..c
    }
}

const MONEY: Kind = Kind::Decimal(MONEY_DP);
const HOURS: Kind = Kind::Decimal(HOURS_DP);
const QTY: Kind = Kind::Decimal(QUANTITY_DP);

/// Number of columns of a [`Row`] (every version's).
pub const N_COLUMNS: usize = 45;

/// The columns of a row, in order: FOCUS's Mandatory ones and the Conditional and Recommended ones that apply
/// to an on-prem GPU chargeback, in FOCUS's alphabetical order, then ours. 1.2 writes those with `since` 1.2.
pub const COLUMNS: [Column; N_COLUMNS] = [
    v1_3(nullable("AllocatedMethodDetails", Kind::Text)),
    v1_3(nullable("AllocatedMethodId", Kind::Text)),
    v1_3(nullable("AllocatedResourceId", Kind::Text)),
    v1_3(nullable("AllocatedResourceName", Kind::Text)),
    v1_3(nullable("AllocatedTags", Kind::Text)),
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
    v1_3(col("HostProviderName", Kind::Text)),
    nullable("InvoiceId", Kind::Text),
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
    v1_3(col("ServiceProviderName", Kind::Text)),
    col("ServiceSubcategory", Kind::Text),
    col("SubAccountId", Kind::Text),
    nullable("SubAccountName", Kind::Text),
    v1_3(col("x_AllocationBasis", Kind::Text)),
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

/// One row, in the order of [`COLUMNS`] (every version's columns).
pub type Row = [Value; N_COLUMNS];

/// Who issues the charges: the platform (configurable; `eai-gpu` by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    /// ProviderName, PublisherName, InvoiceIssuerName, BillingAccountName, and 1.3's ServiceProviderName and
    /// HostProviderName.
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
/// its day items are then its own and no idle row is left, so none is split: a shared deployment's total stays
/// withheld). `names`: the registered tenants' display names (SubAccountName; null for a tenant seen in data but
/// never registered). The billing period is the allocation's `[from, to)`; each row's charge period is its
/// span (UTC day or hour), clipped to it. `invoices`: the statement numbers (InvoiceId; null where absent).
pub fn rows(
    a: &Allocation,
    names: &BTreeMap<TenantId, String>,
    issuer: &Issuer,
    invoices: &Invoices,
) -> Vec<Row> {
    let ratios = ratios(&a.day_items);
    let mut months: BTreeMap<Timestamp, Timestamp> = BTreeMap::new();
    a.day_items
        .iter()
        .zip(ratios)
        .map(|(d, ratio)| {
            let start = d.start.max(a.from);
            let first = *months
                .entry(start.floor_to(86_400_000))
                .or_insert_with(|| month(&month_of(start)).map_or(start, |(m, _)| m));
            let tenant = d.tenant_id.unwrap_or(TenantId::PLATFORM);
            let invoice = invoices.get(&(tenant, first));
            row(d, a.from, a.to, names, issuer, ratio, invoice)
        })
        .collect()
}

/// Each day item's AllocatedRatio within its origin charge (deployment, policy, span); `None` where the origin
/// charge is that one item.
fn ratios(items: &[DayItem]) -> Vec<Option<Decimal>> {
    let mut origins: BTreeMap<(&str, &str, Timestamp), Vec<usize>> = BTreeMap::new();
    for (i, d) in items.iter().enumerate() {
        origins
            .entry((d.deployment_id.as_str(), d.policy_id.as_str(), d.start))
            .or_default()
            .push(i);
    }
    let mut out = vec![None; items.len()];
    for members in origins.values().filter(|m| m.len() > 1) {
        let cost: Vec<Decimal> = members.iter().map(|&i| items[i].cost.amount).collect();
        let seconds: Vec<Decimal> = members.iter().map(|&i| items[i].gpu_seconds).collect();
        for (&i, r) in members.iter().zip(split_ratios(&cost, &seconds)) {
            out[i] = Some(r);
        }
    }
    out
}

/// The shares of `weights` (or of `fallback` when they sum to zero, or equal ones when both do), each rounded
/// to [`RATIO_DP`] places, the rounding remainder added to the largest (the first of equals): they sum to 1.
pub fn split_ratios(weights: &[Decimal], fallback: &[Decimal]) -> Vec<Decimal> {
    let positive = |w: &[Decimal]| {
        let sum: Decimal = w.iter().map(|x| (*x).max(Decimal::ZERO)).sum();
        (sum > Decimal::ZERO).then_some(sum)
    };
    let (w, sum): (Vec<Decimal>, Decimal) = if let Some(sum) = positive(weights) {
        (
            weights.iter().map(|x| (*x).max(Decimal::ZERO)).collect(),
            sum,
        )
    } else if let Some(sum) = positive(fallback) {
        (
            fallback.iter().map(|x| (*x).max(Decimal::ZERO)).collect(),
            sum,
        )
    } else {
        (
            vec![Decimal::ONE; weights.len()],
            Decimal::from(weights.len()),
        )
    };
    let mut r: Vec<Decimal> = w.iter().map(|x| (x / sum).round_dp(RATIO_DP)).collect();
    let rest = Decimal::ONE - r.iter().copied().sum::<Decimal>();
    let largest = (0..r.len()).fold(0, |best, i| if r[i] > r[best] { i } else { best });
    if let Some(x) = r.get_mut(largest) {
        *x += rest;
    }
    r.into_iter().map(|x| x.normalize()).collect()
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn quantity(d: Decimal, dp: u32) -> Value {
    Value::Decimal(d.round_dp(dp).normalize())
}

/// A JSON string (quotes, backslashes and control characters escaped).
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// AllocatedMethodDetails: one element, the row's ratio and the GPU-hours it was split by.
fn method_details(ratio: Decimal, gpu_hours: Decimal) -> String {
    let mut out = String::from("{\"Elements\":[{\"AllocatedRatio\":");
    out.push_str(&ratio.normalize().to_string());
    out.push_str(",\"UsageUnit\":");
    push_json_string(&mut out, GPU_HOURS);
    out.push_str(",\"UsageQuantity\":");
    out.push_str(&gpu_hours.to_string());
    out.push_str("}]}");
    out
}

/// AllocatedTags: a flat object of strings.
fn tags(pairs: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(&mut out, k);
        out.push(':');
        push_json_string(&mut out, v);
    }
    out.push('}');
    out
}

fn row(
    d: &DayItem,
    from: Timestamp,
    to: Timestamp,
    names: &BTreeMap<TenantId, String>,
    issuer: &Issuer,
    ratio: Option<Decimal>,
    invoice: Option<&String>,
) -> Row {
    let cost = Value::Decimal(d.cost.amount);
    let hours = (d.gpu_seconds / Decimal::from(3600))
        .round_dp(HOURS_DP)
        .normalize();
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
    let start = d.start.max(from);
    let end = d.end.min(to);
    let sub = sub_id.to_string();
    let [details, method, resource_id, resource_name, tag_text] = match ratio {
        Some(r) => [
            text(method_details(r, hours)),
            text(format!("{METHOD_PREFIX}{}", d.basis.as_str())),
            text(d.deployment_id.as_str()),
            text(d.deployment_id.as_str()),
            text(tags(&[(TAG_TENANT, &sub), (TAG_POLICY, &d.policy_id)])),
        ],
        None => [
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ],
    };
    [
        details,
        method,
        resource_id,
        resource_name,
        tag_text,
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
        Value::Decimal(hours),
        text(GPU_HOURS),
        cost.clone(),
        cost.clone(),
        text(issuer.name.as_str()),
        invoice.map_or(Value::Null, |n| text(n.as_str())),
        text(issuer.name.as_str()),
        cost,
        Value::Decimal(hours),
        text(GPU_HOURS),
        text(issuer.name.as_str()),
        text(issuer.name.as_str()),
        text(d.deployment_id.as_str()),
        text(d.deployment_id.as_str()),
        text("GPU Deployment"),
        text(SERVICE_CATEGORY),
        text(SERVICE_NAME),
        text(issuer.name.as_str()),
        text(SERVICE_SUBCATEGORY),
        text(sub),
        sub_name,
        text(d.basis.as_str()),
        text(d.policy_id.as_str()),
        quantity(d.energy_wh, QUANTITY_DP),
        quantity(d.estimated_gpu_seconds, QUANTITY_DP),
        quantity(d.gpu_memory_gb_seconds, QUANTITY_DP),
        quantity(d.gpu_seconds, QUANTITY_DP),
        Value::Bool(d.tenant_id.is_none()),
    ]
}

/// The rows as CSV with the columns of `version` (RFC 4180: a header line, CRLF line ends, fields quoted when
/// they hold a comma, a quote or a line break). Null is an empty field; decimals are written exactly, date-times
/// as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn csv(rows: &[Row], version: Version) -> String {
    let mut out = String::new();
    let columns: Vec<usize> = version.columns().map(|(i, _)| i).collect();
    let header: Vec<&str> = version.columns().map(|(_, c)| c.name).collect();
    out.push_str(&header.join(","));
    out.push_str("\r\n");
    for r in rows {
        for (n, &i) in columns.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            match &r[i] {
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

    use super::{csv, rows, split_ratios, Invoices, Issuer, Kind, Value, Version, COLUMNS};
    use crate::domain::TenantId;
    use crate::money::{Currency, Money};
    use crate::report::{Allocation, DayItem, SplitBasis};
    use crate::time::Timestamp;

    fn item(tenant: Option<TenantId>, cents: i64, seconds: i64) -> DayItem {
        DayItem {
            tenant_id: tenant,
            deployment_id: "vllm-llama, 70b".into(),
            policy_id: "alp_1".into(),
            start: Timestamp::parse_date("2026-10-01").expect("date"),
            end: Timestamp::parse_date("2026-10-02").expect("date"),
            basis: SplitBasis::UsageWeightedGpuSeconds,
            gpu_seconds: Decimal::new(seconds, 0),
            estimated_gpu_seconds: Decimal::new(15, 0),
            gpu_memory_gb_seconds: Decimal::new(288_000, 0),
            energy_wh: Decimal::new(800, 0),
            cost: Money {
                amount: Decimal::new(cents, 2),
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

    fn tenant() -> TenantId {
        TenantId(uuid::Uuid::from_bytes([7; 16]))
    }

    #[test]
    fn every_value_has_its_columns_kind() {
        let a = allocation(vec![item(Some(tenant()), 519, 7200), item(None, 1, 0)]);
        for r in rows(&a, &BTreeMap::new(), &Issuer::default(), &Invoices::new()) {
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
    fn a_row_tells_the_day_the_tenant_the_cost_and_its_share() {
        let t = tenant();
        let names = BTreeMap::from([(t, "Acme, Inc.".to_string())]);
        let a = allocation(vec![item(Some(t), 519, 7200), item(None, 173, 2400)]);
        let found = rows(&a, &names, &Issuer::default(), &Invoices::new());
        let text = csv(&found, Version::V1_2);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("BilledCost,BillingAccountId,"));
        assert!(!lines[0].contains("Allocated") && !lines[0].contains("ServiceProviderName"));
        assert_eq!(lines[3], "");
        // The charge period is the day clipped to the billing period; the period is the allocation's. No
        // statement: InvoiceId is empty.
        assert_eq!(
            lines[1],
            "5.19,eai-gpu,eai-gpu,EUR,2026-11-01T00:00:00Z,2026-10-01T06:00:00Z,Usage,,\
             \"GPU time on deployment vllm-llama, 70b under allocation policy alp_1\",Usage-Based,\
             2026-10-02T00:00:00Z,2026-10-01T06:00:00Z,2,GPU-Hours,5.19,5.19,,eai-gpu,5.19,2,GPU-Hours,\
             eai-gpu,eai-gpu,\"vllm-llama, 70b\",\"vllm-llama, 70b\",GPU Deployment,AI and Machine Learning,\
             GPU Compute,AI Platforms,07070707-0707-0707-0707-070707070707,\"Acme, Inc.\",alp_1,800,15,288000,\
             7200,false"
        );
        assert!(
            lines[2].contains(",00000000-0000-0000-0000-000000000000,Unallocated (idle capacity),")
        );
        assert!(lines[2].ends_with(",true"));

        // 1.3: the origin charge is 5.19 + 1.73 = 6.92 EUR; 5.19 / 6.92 = 0.75 exactly, 1.73 / 6.92 = 0.25.
        let text = csv(&found, Version::V1_3);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert!(lines[0].starts_with(
            "AllocatedMethodDetails,AllocatedMethodId,AllocatedResourceId,AllocatedResourceName,\
             AllocatedTags,BilledCost,"
        ));
        assert!(lines[0].ends_with(
            ",SubAccountName,x_AllocationBasis,x_AllocationPolicyId,x_EnergyWh,\
             x_EstimatedGpuSeconds,x_GpuMemoryGbSeconds,x_GpuSeconds,x_Unallocated"
        ));
        assert!(lines[0].contains(",EffectiveCost,HostProviderName,InvoiceId,InvoiceIssuerName,"));
        assert!(lines[0].contains(",ServiceName,ServiceProviderName,ServiceSubcategory,"));
        assert!(
            lines[1].starts_with(
                "\"{\"\"Elements\"\":[{\"\"AllocatedRatio\"\":0.75,\"\"UsageUnit\"\":\"\"GPU-Hours\"\",\
                 \"\"UsageQuantity\"\":2}]}\",eai-gpu/usage-weighted-gpu-seconds,\"vllm-llama, 70b\",\
                 \"vllm-llama, 70b\",\"{\"\"eai-gpu/tenant\"\":\"\"07070707-0707-0707-0707-070707070707\"\",\
                 \"\"eai-gpu/policy\"\":\"\"alp_1\"\"}\",5.19,"
            ),
            "{}",
            lines[1]
        );
        // 2400 s = 0.666666667 GPU-hours (9 places).
        assert!(
            lines[2].contains("AllocatedRatio\"\":0.25,")
                && lines[2].contains("UsageQuantity\"\":0.666666667}")
                && lines[2].contains("00000000-0000-0000-0000-000000000000\"\","),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn an_origin_charge_of_one_row_is_not_split() {
        let found = rows(
            &allocation(vec![item(Some(tenant()), 519, 7200)]),
            &BTreeMap::new(),
            &Issuer::default(),
            &Invoices::new(),
        );
        assert!(found[0][..5].iter().all(|v| *v == Value::Null));
        // ServiceProviderName and HostProviderName are the issuer.
        assert_eq!(found[0][21], Value::Text("eai-gpu".into()));
        assert_eq!(found[0][34], Value::Text("eai-gpu".into()));
    }

    #[test]
    fn ratios_sum_to_exactly_one() {
        // Thirds: 0.333333333333 each, the remainder 0.000000000001 to the first of the largest.
        let third = Decimal::new(1, 0);
        let r = split_ratios(&[third, third, third], &[]);
        assert_eq!(
            r,
            [
                Decimal::new(333_333_333_334, 12),
                Decimal::new(333_333_333_333, 12),
                Decimal::new(333_333_333_333, 12)
            ]
        );
        assert_eq!(r.iter().copied().sum::<Decimal>(), Decimal::ONE);
        // 2/3 rounds up to 0.666666666667: 0.333333333333 + 0.666666666667 = 1 without a remainder.
        let r = split_ratios(&[Decimal::new(1, 2), Decimal::new(2, 2)], &[]);
        assert_eq!(
            r,
            [
                Decimal::new(333_333_333_333, 12),
                Decimal::new(666_666_666_667, 12)
            ]
        );
        // No cost: by GPU-seconds (1:3); neither: equal halves.
        let zero = [Decimal::ZERO, Decimal::ZERO];
        assert_eq!(
            split_ratios(&zero, &[Decimal::new(10, 0), Decimal::new(30, 0)]),
            [Decimal::new(25, 2), Decimal::new(75, 2)]
        );
        assert_eq!(
            split_ratios(&zero, &zero),
            [Decimal::new(5, 1), Decimal::new(5, 1)]
        );
        for n in 2..40i64 {
            let w: Vec<Decimal> = (1..=n)
                .map(|i| Decimal::new(i * 7919 % 1013 + 1, 2))
                .collect();
            let sum: Decimal = split_ratios(&w, &[]).into_iter().sum();
            assert_eq!(sum, Decimal::ONE, "{n} shares");
        }
    }

    #[test]
    fn invoice_ids_come_from_the_map_by_tenant_and_month() {
        let t = tenant();
        let october = Timestamp::parse_date("2026-10-01").expect("date");
        let invoices = Invoices::from([
            ((t, october), "ST-2026-10-0001".to_string()),
            (
                (t, Timestamp::parse_date("2026-09-01").expect("date")),
                "ST-old".into(),
            ),
        ]);
        let found = rows(
            &allocation(vec![item(Some(t), 519, 7200), item(None, 1, 0)]),
            &BTreeMap::new(),
            &Issuer::default(),
            &invoices,
        );
        assert_eq!(found[0][22], Value::Text("ST-2026-10-0001".into()));
        // The idle row: the platform tenant's entry, none here.
        assert_eq!(found[1][22], Value::Null);
        assert_eq!(COLUMNS[22].name, "InvoiceId");
    }

    #[test]
    fn versions_and_granularities_parse_or_name_their_field() {
        assert_eq!(Version::parse(None), Ok(Version::V1_3));
        assert_eq!(Version::parse(Some("1.2")), Ok(Version::V1_2));
        assert_eq!(
            Version::parse(Some("1.4")).expect_err("no").field,
            "version"
        );
        assert_eq!(super::granularity(Some("hour")), Ok(super::Span::Hour));
        assert_eq!(super::granularity(None), Ok(super::Span::Day));
        assert_eq!(
            super::granularity(Some("week")).expect_err("no").field,
            "granularity"
        );
        assert_eq!(Version::V1_2.columns().count(), 37);
        assert_eq!(Version::V1_3.columns().count(), COLUMNS.len());
    }
}

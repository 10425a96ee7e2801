//! The allocation as the API, the CLI's `--json` and the portal show it (SPEC §4): the seed's `period` and
//! `items`, plus `from`, `to`, `deployments`, `tenants`, `daily`, `gaps` and `findings`. Money travels as
//! decimal strings; quantities (GPU-seconds, GB-seconds, energy, shares) as JSON numbers written exactly, digit for
//! digit as the decimal ([`Quantity`]: never through a float).

use rust_decimal::Decimal;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::domain::TenantId;
use crate::report::{Allocation, Finding};
use crate::wire::EXACT_NUMBER;

#[derive(Debug, Serialize)]
pub struct MoneyView {
    pub amount: String,
    pub currency: String,
}

#[derive(Debug, Serialize)]
pub struct ItemView {
    pub tenant_id: String,
    pub deployment_id: String,
    pub gpu_seconds: Quantity,
    pub gpu_memory_gb_seconds: Quantity,
    pub energy_wh: Quantity,
    pub allocated: MoneyView,
    pub policy_id: String,
}

#[derive(Debug, Serialize)]
pub struct DeploymentView {
    pub deployment_id: String,
    pub dedicated: bool,
    pub samples: u64,
    pub estimated_samples: u64,
    pub gpus: u64,
    pub gpu_hours: Quantity,
    pub busy_gpu_hours: Quantity,
    pub estimated_gpu_seconds: Quantity,
    pub gpu_memory_gb_seconds: Quantity,
    pub energy_kwh: Quantity,
    pub cost: String,
    pub allocated: String,
    pub unallocated: String,
    pub unpriced_samples: u64,
    pub currency: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TenantView {
    pub tenant_id: String,
    pub gpu_seconds: Quantity,
    pub share: Quantity,
    pub cost: MoneyView,
}

#[derive(Debug, Serialize)]
pub struct DailyView {
    pub date: String,
    pub deployment_id: String,
    pub cost: MoneyView,
}

#[derive(Debug, Serialize)]
pub struct GapView {
    pub gpu_uuid: String,
    pub node: String,
    pub deployment_id: String,
    pub from: String,
    pub to: String,
    pub reason: &'static str,
}

#[derive(Debug, Serialize)]
pub struct FindingView {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct AllocationView {
    pub period: String,
    pub from: String,
    pub to: String,
    pub items: Vec<ItemView>,
    pub deployments: Vec<DeploymentView>,
    pub tenants: Vec<TenantView>,
    pub daily: Vec<DailyView>,
    pub gaps: Vec<GapView>,
    pub findings: Vec<FindingView>,
}

/// A decimal for display: at most `dp` places, no trailing zeros.
pub fn fmt_dec(d: Decimal, dp: u32) -> String {
    d.round_dp(dp).normalize().to_string()
}

/// A quantity as an exact JSON number: [`fmt_dec`]'s digits, never a float.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity(String);

impl Quantity {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut n = s.serialize_struct(EXACT_NUMBER, 1)?;
        n.serialize_field(EXACT_NUMBER, &self.0)?;
        n.end()
    }
}

/// A quantity of at most `dp` places. A normalized decimal prints as plain digits (no exponent): always a valid
/// JSON number.
pub fn quantity(d: Decimal, dp: u32) -> Quantity {
    Quantity(fmt_dec(d, dp))
}

fn money(amount: Decimal, currency: &str) -> MoneyView {
    MoneyView {
        amount: amount.to_string(),
        currency: currency.to_string(),
    }
}

/// The period label: `2026-10` when the period is one calendar month, else `FROM/TO`.
fn period_label(a: &Allocation) -> String {
    let (f, t) = (a.from.to_string(), a.to.to_string());
    let month_start = |s: &str| s.ends_with("-01T00:00:00Z");
    if month_start(&f) && month_start(&t) {
        let (fy, fm): (i32, u32) = (f[..4].parse().unwrap_or(0), f[5..7].parse().unwrap_or(0));
        let (ty, tm): (i32, u32) = (t[..4].parse().unwrap_or(0), t[5..7].parse().unwrap_or(0));
        if (fm == 12 && ty == fy + 1 && tm == 1) || (ty == fy && tm == fm + 1) {
            return f[..7].to_string();
        }
    }
    format!("{f}/{t}")
}

pub fn finding_message(f: &Finding) -> String {
    match f {
        Finding::Unpriced { deployment_id, samples, gpu_seconds } => {
            format!("{samples} samples ({gpu_seconds} GPU-seconds) of {deployment_id} match no enabled allocation policy")
        }
        Finding::OverAttribution { deployment_id, bucket_start, claimed_gpu_seconds, measured_gpu_seconds } => format!(
            "usage events on {deployment_id} claim {} GPU-seconds in the bucket of {bucket_start} where {} were measured; claims scaled down",
            fmt_dec(*claimed_gpu_seconds, 3),
            fmt_dec(*measured_gpu_seconds, 3)
        ),
        Finding::UsageWithoutSamples { deployment_id, events } => {
            format!("{events} tenant usage records on {deployment_id} fall in hours with no GPU sample of it")
        }
        Finding::PolicyBoundaryInsideRollup { deployment_id, gpu_uuid, bucket_start, gpu_seconds } => {
            let of = if gpu_uuid.is_empty() {
                deployment_id.clone()
            } else {
                format!("{gpu_uuid} ({deployment_id})")
            };
            format!(
                "a policy changes inside the hour of {of} at {bucket_start}, whose raw samples were pruned before the policy existed: its {} GPU-seconds are priced by the policy in effect at its first window",
                fmt_dec(*gpu_seconds, 3)
            )
        }
        Finding::MixedCurrency { deployment_id } => format!("{deployment_id} is priced in several currencies"),
        Finding::EqualGpuShares { deployment_id, samples, gpu_seconds } => format!(
            "{samples} samples ({} GPU-seconds) of {deployment_id} are shares of GPUs used by several pods, split equally: the node gave no per-pod GPU time (run the sampler's per-process reader, NVML or HAMi, to measure them)",
            fmt_dec(*gpu_seconds, 3)
        ),
        Finding::ConflictingDuplicate { gpu_uuid, timestamp } => {
            format!("two different samples of {gpu_uuid} at {timestamp}; the first received was kept")
        }
    }
}

impl AllocationView {
    pub fn new(a: &Allocation) -> Self {
        let tid = |t: &TenantId| t.to_string();
        AllocationView {
            period: period_label(a),
            from: a.from.to_string(),
            to: a.to.to_string(),
            items: a
                .items
                .iter()
                .map(|i| ItemView {
                    tenant_id: tid(&i.tenant_id),
                    deployment_id: i.deployment_id.clone(),
                    gpu_seconds: quantity(i.gpu_seconds, 3),
                    gpu_memory_gb_seconds: quantity(i.gpu_memory_gb_seconds, 3),
                    energy_wh: quantity(i.energy_wh, 3),
                    allocated: money(i.allocated.amount, i.allocated.currency.as_str()),
                    policy_id: i.policy_id.clone(),
                })
                .collect(),
            deployments: a
                .deployments
                .iter()
                .map(|d| DeploymentView {
                    deployment_id: d.deployment_id.clone(),
                    dedicated: d.dedicated,
                    samples: d.samples,
                    estimated_samples: d.estimated_samples,
                    gpus: d.gpus,
                    gpu_hours: quantity(d.gpu_hours(), 4),
                    busy_gpu_hours: quantity(d.busy_gpu_hours(), 4),
                    estimated_gpu_seconds: quantity(d.estimated_gpu_seconds, 3),
                    gpu_memory_gb_seconds: quantity(d.gpu_memory_gb_seconds, 3),
                    energy_kwh: quantity(d.energy_kwh(), 4),
                    cost: d.cost.to_string(),
                    allocated: d.allocated.to_string(),
                    unallocated: d.unallocated.to_string(),
                    unpriced_samples: d.unpriced_samples,
                    currency: d.currency.map(|c| c.to_string()),
                })
                .collect(),
            tenants: a
                .tenants
                .iter()
                .map(|t| TenantView {
                    tenant_id: tid(&t.tenant_id),
                    gpu_seconds: quantity(t.gpu_seconds, 3),
                    share: quantity(t.share, 4),
                    cost: money(t.cost, t.currency.as_str()),
                })
                .collect(),
            daily: a
                .daily
                .iter()
                .map(|d| DailyView {
                    date: d.date.clone(),
                    deployment_id: d.deployment_id.clone(),
                    cost: money(d.cost, d.currency.as_str()),
                })
                .collect(),
            gaps: a
                .gaps
                .iter()
                .map(|g| GapView {
                    gpu_uuid: g.gpu_uuid.clone(),
                    node: g.node.clone(),
                    deployment_id: g.deployment_id.clone(),
                    from: g.from.to_string(),
                    to: g.to.to_string(),
                    reason: g.reason.as_str(),
                })
                .collect(),
            findings: a
                .findings
                .iter()
                .map(|f| FindingView {
                    code: f.code(),
                    message: finding_message(f),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{quantity, Quantity};

    #[test]
    fn quantities_are_json_numbers_with_the_decimals_digits() {
        let d = |s: &str| Decimal::from_str(s).expect("decimal");
        let out = |q: Quantity| serde_json::to_string(&q).expect("json");
        assert_eq!(out(quantity(d("182300.000"), 3)), "182300");
        assert_eq!(out(quantity(d("0.69944"), 4)), "0.6994");
        // 17 significant digits: a double would print 12345678901234.57 or worse.
        assert_eq!(
            out(quantity(d("12345678901234.567"), 3)),
            "12345678901234.567"
        );
        assert_eq!(out(quantity(d("0.0000004"), 3)), "0");
        assert_eq!(out(quantity(d("-2.5"), 3)), "-2.5");
        // Read back by serde_json as the same number, digit for digit.
        let v: serde_json::Value =
            serde_json::from_str(&out(quantity(d("7.1234"), 4))).expect("back");
        assert_eq!(v.to_string(), "7.1234");
    }
}

/// The explanation of a deployment's cost as the API and the CLI's `--json` show it
/// (`GET /v1/finops/gpu/allocation/explain`). Exact amounts before rounding travel as decimal strings, every digit
/// kept; quantities and shares as exact JSON numbers. A party is `{"kind": "tenant", "tenant_id"}`,
/// `{"kind": "other_tenants"}` (every tenant but the reader, summed) or, in the rounding, `{"kind": "unallocated"}`.
#[derive(Debug, Serialize)]
pub struct ExplanationView {
    pub deployment_id: String,
    pub from: String,
    pub to: String,
    pub bucket_seconds: i64,
    pub policies: Vec<PolicyRatesView>,
    pub buckets: Vec<BucketView>,
    pub idle_spread: Vec<IdleSpreadView>,
    pub rounding: Vec<RoundingView>,
    /// Where the deployment's time ran: its breakdown by namespace, pod, GPU and share method (SPEC §11: a pod
    /// on a GPU shared with others has its share of the GPU and how it was obtained), as the reader may see it.
    pub pods: Vec<BreakdownRowView>,
}

#[derive(Debug, Serialize)]
pub struct PolicyRatesView {
    pub policy_id: String,
    pub name: String,
    pub currency: String,
    pub gpu_hourly_cost: String,
    pub overhead_pct: String,
    pub energy_kwh_price: String,
    pub pue: String,
    pub storage_gb_month_price: String,
    pub idle_capacity: &'static str,
}

#[derive(Debug, Serialize)]
pub struct PartyView {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct BucketView {
    pub start: String,
    /// The owner of dedicated time; absent for shared time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<PartyView>,
    pub gpu_seconds: Quantity,
    pub estimated_gpu_seconds: Quantity,
    pub over_attribution: bool,
    pub claims: Vec<ClaimView>,
    pub priced: Vec<PricedView>,
}

#[derive(Debug, Serialize)]
pub struct ClaimView {
    pub party: PartyView,
    pub gpu_seconds: Quantity,
    pub tokens: Quantity,
    pub share: Quantity,
}

#[derive(Debug, Serialize)]
pub struct PricedView {
    pub policy_id: String,
    pub currency: String,
    pub gpu_seconds: Quantity,
    pub energy_wh: Quantity,
    pub gpu_time_cost: String,
    pub energy_cost: String,
    pub storage_cost: String,
    pub cost: String,
    pub parties: Vec<PartyCostView>,
    pub idle: String,
}

#[derive(Debug, Serialize)]
pub struct PartyCostView {
    pub party: PartyView,
    pub cost: String,
}

#[derive(Debug, Serialize)]
pub struct IdleSpreadView {
    pub policy_id: String,
    pub idle: String,
    pub parties: Vec<IdleShareView>,
}

#[derive(Debug, Serialize)]
pub struct IdleShareView {
    pub party: PartyView,
    pub weight: String,
    pub cost: String,
}

#[derive(Debug, Serialize)]
pub struct RoundingView {
    pub currency: String,
    pub exact: String,
    pub cost: String,
    pub lines: Vec<RoundingLineView>,
}

#[derive(Debug, Serialize)]
pub struct RoundingLineView {
    pub party: PartyView,
    pub policy_id: String,
    pub exact: String,
    pub scaled: String,
    pub floor: String,
    pub remainder_unit: String,
    pub amount: String,
}

fn exact(d: Decimal) -> String {
    d.normalize().to_string()
}

fn exact_quantity(d: Decimal) -> Quantity {
    Quantity(d.normalize().to_string())
}

fn party(p: crate::allocate::Party) -> PartyView {
    match p {
        crate::allocate::Party::Tenant(t) => PartyView {
            kind: "tenant",
            tenant_id: Some(t.to_string()),
        },
        crate::allocate::Party::Others => PartyView {
            kind: "other_tenants",
            tenant_id: None,
        },
    }
}

impl ExplanationView {
    /// The explanation `e`, with `pods`: the deployment's breakdown by pod (see [`ExplanationView::pods`]).
    pub fn new(e: &crate::allocate::Explanation, pods: &crate::breakdown::Breakdown) -> Self {
        ExplanationView {
            pods: pods
                .rows
                .iter()
                .map(|r| BreakdownRowView::new(&pods.group_by, r))
                .collect(),
            deployment_id: e.deployment_id.clone(),
            from: e.from.to_string(),
            to: e.to.to_string(),
            bucket_seconds: e.bucket_ms / 1000,
            policies: e
                .policies
                .iter()
                .map(|p| PolicyRatesView {
                    policy_id: p.policy_id.clone(),
                    name: p.name.clone(),
                    currency: p.currency.as_str().to_string(),
                    gpu_hourly_cost: exact(p.gpu_hourly_cost),
                    overhead_pct: exact(p.overhead_pct),
                    energy_kwh_price: exact(p.energy_kwh_price),
                    pue: exact(p.pue),
                    storage_gb_month_price: exact(p.storage_gb_month_price),
                    idle_capacity: p.idle_capacity.as_str(),
                })
                .collect(),
            buckets: e
                .buckets
                .iter()
                .map(|b| BucketView {
                    start: b.start.to_string(),
                    owner: b.owner.map(party),
                    gpu_seconds: exact_quantity(b.gpu_seconds),
                    estimated_gpu_seconds: exact_quantity(b.estimated_gpu_seconds),
                    over_attribution: b.over_attribution,
                    claims: b
                        .claims
                        .iter()
                        .map(|c| ClaimView {
                            party: party(c.party),
                            gpu_seconds: exact_quantity(c.gpu_seconds),
                            tokens: exact_quantity(c.tokens),
                            share: exact_quantity(c.share),
                        })
                        .collect(),
                    priced: b
                        .priced
                        .iter()
                        .map(|p| PricedView {
                            policy_id: p.policy_id.clone(),
                            currency: p.currency.as_str().to_string(),
                            gpu_seconds: exact_quantity(p.gpu_seconds),
                            energy_wh: exact_quantity(p.energy_wh),
                            gpu_time_cost: exact(p.gpu_time_cost),
                            energy_cost: exact(p.energy_cost),
                            storage_cost: exact(p.storage_cost),
                            cost: exact(p.cost),
                            parties: p
                                .parties
                                .iter()
                                .map(|(t, c)| PartyCostView {
                                    party: party(*t),
                                    cost: exact(*c),
                                })
                                .collect(),
                            idle: exact(p.idle),
                        })
                        .collect(),
                })
                .collect(),
            idle_spread: e
                .idle_spread
                .iter()
                .map(|s| IdleSpreadView {
                    policy_id: s.policy_id.clone(),
                    idle: exact(s.idle),
                    parties: s
                        .parties
                        .iter()
                        .map(|(t, w, c)| IdleShareView {
                            party: party(*t),
                            weight: exact(*w),
                            cost: exact(*c),
                        })
                        .collect(),
                })
                .collect(),
            rounding: e
                .rounding
                .iter()
                .map(|r| RoundingView {
                    currency: r.currency.as_str().to_string(),
                    exact: exact(r.exact),
                    cost: r.cost.to_string(),
                    lines: r
                        .lines
                        .iter()
                        .map(|l| RoundingLineView {
                            party: l.party.map(party).unwrap_or(PartyView {
                                kind: "unallocated",
                                tenant_id: None,
                            }),
                            policy_id: l.policy_id.clone(),
                            exact: exact(l.exact),
                            scaled: exact(l.scaled),
                            floor: l.floor.to_string(),
                            remainder_unit: l.remainder_unit.to_string(),
                            amount: l.amount.to_string(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// A breakdown as the API and the CLI's `--json` show it (`GET /v1/finops/gpu/usage`): one row per value of the
/// grouping, its `group` naming each dimension's value (`null`: a shared deployment's tenant, or time stored before
/// placements were kept), quantities as exact JSON numbers and the cost per currency as money.
#[derive(Debug, Serialize)]
pub struct BreakdownView {
    pub from: String,
    pub to: String,
    pub group_by: Vec<&'static str>,
    pub rows: Vec<BreakdownRowView>,
}

#[derive(Debug, Serialize)]
pub struct BreakdownRowView {
    pub group: std::collections::BTreeMap<&'static str, Option<String>>,
    pub samples: u64,
    pub estimated_samples: u64,
    pub gpu_seconds: Quantity,
    pub busy_gpu_seconds: Quantity,
    pub estimated_gpu_seconds: Quantity,
    pub gpu_memory_gb_seconds: Quantity,
    pub energy_wh: Quantity,
    pub unpriced_gpu_seconds: Quantity,
    pub cost: Vec<MoneyView>,
    /// Only when the grouping has `gpu`, for a platform reader: the row's part of its GPU's time in the period
    /// (a pod alone on its GPU: 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_share: Option<Quantity>,
}

impl BreakdownView {
    pub fn new(
        b: &crate::breakdown::Breakdown,
        from: crate::time::Timestamp,
        to: crate::time::Timestamp,
    ) -> Self {
        BreakdownView {
            from: from.to_string(),
            to: to.to_string(),
            group_by: b.group_by.iter().map(|d| d.name()).collect(),
            rows: b
                .rows
                .iter()
                .map(|r| BreakdownRowView::new(&b.group_by, r))
                .collect(),
        }
    }
}

impl BreakdownRowView {
    /// Row `r` of a breakdown grouped by `group_by`.
    pub fn new(
        group_by: &[crate::breakdown::Dimension],
        r: &crate::breakdown::BreakdownRow,
    ) -> Self {
        BreakdownRowView {
            group: group_by
                .iter()
                .map(|d| d.name())
                .zip(r.key.iter().cloned())
                .collect(),
            samples: r.samples,
            estimated_samples: r.estimated_samples,
            gpu_seconds: quantity(r.q.gpu_seconds, 3),
            busy_gpu_seconds: quantity(r.q.busy_gpu_seconds, 3),
            estimated_gpu_seconds: quantity(r.q.estimated_gpu_seconds, 3),
            gpu_memory_gb_seconds: quantity(r.q.memory_gb_seconds, 3),
            energy_wh: quantity(r.q.energy_wh(), 3),
            unpriced_gpu_seconds: quantity(r.unpriced_gpu_seconds, 3),
            cost: r.cost.iter().map(|(c, a)| money(*a, c.as_str())).collect(),
            gpu_share: r
                .gpu_share
                .map(|s| quantity(s, crate::breakdown::GPU_SHARE_DP)),
        }
    }
}

/// A Slurm reconciliation as the API and the CLI's `--json` show it (`POST /v1/finops/gpu/slurm/reconciliation`).
#[derive(Debug, Serialize)]
pub struct ReconciliationView {
    pub from: String,
    pub to: String,
    pub idle_below: String,
    pub allocated_gpu_seconds: Quantity,
    pub measured_gpu_seconds: Quantity,
    /// The cost of the jobs marked `idle`, per currency.
    pub idle_cost: Vec<MoneyView>,
    pub jobs: Vec<JobLineView>,
}

#[derive(Debug, Serialize)]
pub struct JobLineView {
    pub job_id: String,
    pub account: String,
    pub user: Option<String>,
    pub partition: Option<String>,
    pub state: Option<String>,
    pub tenant_id: Option<String>,
    pub deployment_id: Option<String>,
    pub gpus: Option<u32>,
    pub allocated_gpu_seconds: Option<Quantity>,
    pub measured_gpu_seconds: Quantity,
    pub busy_gpu_seconds: Quantity,
    pub busy_share: Option<Quantity>,
    pub cost: Vec<MoneyView>,
    pub status: &'static str,
}

impl ReconciliationView {
    pub fn new(r: &crate::slurm::Reconciliation) -> Self {
        let costs = |c: &[(crate::money::Currency, Decimal)]| {
            c.iter().map(|(c, a)| money(*a, c.as_str())).collect()
        };
        ReconciliationView {
            from: r.from.to_string(),
            to: r.to.to_string(),
            idle_below: r.idle_below.normalize().to_string(),
            allocated_gpu_seconds: quantity(r.allocated_gpu_seconds, 3),
            measured_gpu_seconds: quantity(r.measured_gpu_seconds, 3),
            idle_cost: costs(&r.idle_cost),
            jobs: r
                .jobs
                .iter()
                .map(|j| JobLineView {
                    job_id: j.job_id.clone(),
                    account: j.account.clone(),
                    user: j.user.clone(),
                    partition: j.partition.clone(),
                    state: j.state.clone(),
                    tenant_id: j.tenant_id.map(|t| t.to_string()),
                    deployment_id: j.deployment_id.clone(),
                    gpus: j.gpus,
                    allocated_gpu_seconds: j.allocated_gpu_seconds.map(|q| quantity(q, 3)),
                    measured_gpu_seconds: quantity(j.measured_gpu_seconds, 3),
                    busy_gpu_seconds: quantity(j.busy_gpu_seconds, 3),
                    busy_share: j.busy_share.map(|q| quantity(q, 4)),
                    cost: costs(&j.cost),
                    status: j.status.as_str(),
                })
                .collect(),
        }
    }
}

//! What the engine answers: items per (tenant, deployment, policy), rows per deployment and tenant, gaps and
//! findings. Money here is already rounded; quantities are exact decimals.

use rust_decimal::Decimal;

use crate::domain::TenantId;
use crate::money::{Currency, Money};
use crate::time::Timestamp;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub from: Timestamp,
    pub to: Timestamp,
    /// One per (tenant, deployment, policy): what the tenant is charged.
    pub items: Vec<Item>,
    /// One per (deployment, currency); a deployment only ever priced in one currency has one row.
    pub deployments: Vec<DeploymentRow>,
    /// One per (tenant, currency).
    pub tenants: Vec<TenantRow>,
    /// Cost per deployment and UTC day, apportioned so that the days sum to the deployment's cost.
    pub daily: Vec<DailyCost>,
    pub gaps: Vec<Gap>,
    pub findings: Vec<Finding>,
    /// Each item and each deployment's unallocated cost split per UTC day (or hour), apportioned so that the days of an
    /// item sum to its `allocated` exactly; empty unless asked for (`AllocationConfig::day_items`).
    pub day_items: Vec<DayItem>,
}

impl Allocation {
    /// Every way the figures fail to reconcile, in words (empty: they reconcile). Per deployment row:
    /// `allocated + unallocated = cost`, its items sum to `allocated`, its days to `cost`, and the cost is in
    /// the currency's minor unit; per tenant row: its items sum to its cost; and, when asked for, the day items
    /// sum to their item's `allocated` and to the row's `unallocated` and `cost`. The fuzzer and the tests hold
    /// every allocation to this.
    pub fn reconciliation_errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        let mut check = |what: String, got: Decimal, want: Decimal| {
            if got != want {
                errors.push(format!("{what}: {got} != {want}"));
            }
        };
        for row in &self.deployments {
            let d = &row.deployment_id;
            check(
                format!("{d}: allocated + unallocated = cost"),
                row.allocated + row.unallocated,
                row.cost,
            );
            let items: Decimal = self
                .items
                .iter()
                .filter(|i| &i.deployment_id == d && Some(i.allocated.currency) == row.currency)
                .map(|i| i.allocated.amount)
                .sum();
            check(format!("{d}: items = allocated"), items, row.allocated);
            let Some(c) = row.currency else { continue };
            check(
                format!("{d}: cost in minor units"),
                c.round(row.cost),
                row.cost,
            );
            let days: Decimal = self
                .daily
                .iter()
                .filter(|x| &x.deployment_id == d && x.currency == c)
                .map(|x| x.cost)
                .sum();
            check(format!("{d}: daily costs = cost"), days, row.cost);
            if self.day_items.is_empty() {
                continue;
            }
            let day_items = |idle_only: bool| -> Decimal {
                self.day_items
                    .iter()
                    .filter(|x| {
                        &x.deployment_id == d
                            && x.cost.currency == c
                            && (x.tenant_id.is_none() || !idle_only)
                    })
                    .map(|x| x.cost.amount)
                    .sum()
            };
            check(
                format!("{d}: idle day items = unallocated"),
                day_items(true),
                row.unallocated,
            );
            check(format!("{d}: day items = cost"), day_items(false), row.cost);
        }
        for t in &self.tenants {
            let items: Decimal = self
                .items
                .iter()
                .filter(|i| i.tenant_id == t.tenant_id && i.allocated.currency == t.currency)
                .map(|i| i.allocated.amount)
                .sum();
            check(
                format!("tenant {}: items = cost", t.tenant_id.0),
                items,
                t.cost,
            );
        }
        if !self.day_items.is_empty() {
            for i in &self.items {
                let days: Decimal = self
                    .day_items
                    .iter()
                    .filter(|x| {
                        x.tenant_id == Some(i.tenant_id)
                            && x.deployment_id == i.deployment_id
                            && x.policy_id == i.policy_id
                    })
                    .map(|x| x.cost.amount)
                    .sum();
                check(
                    format!(
                        "{} {} {}: day items = allocated",
                        i.tenant_id.0, i.deployment_id, i.policy_id
                    ),
                    days,
                    i.allocated.amount,
                );
            }
        }
        errors
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub tenant_id: TenantId,
    pub deployment_id: String,
    pub policy_id: String,
    pub gpu_seconds: Decimal,
    pub gpu_memory_gb_seconds: Decimal,
    pub energy_wh: Decimal,
    pub allocated: Money,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentRow {
    pub deployment_id: String,
    /// `None` when nothing of the deployment was priced.
    pub currency: Option<Currency>,
    /// True when its samples carry an owner tenant (all of it goes to the owner).
    pub dedicated: bool,
    pub samples: u64,
    pub estimated_samples: u64,
    pub gpus: u64,
    pub gpu_seconds: Decimal,
    pub estimated_gpu_seconds: Decimal,
    pub busy_gpu_seconds: Decimal,
    pub gpu_memory_gb_seconds: Decimal,
    pub energy_wh: Decimal,
    pub cost: Decimal,
    pub allocated: Decimal,
    pub unallocated: Decimal,
    pub unpriced_samples: u64,
    pub unpriced_gpu_seconds: Decimal,
}

impl DeploymentRow {
    pub fn gpu_hours(&self) -> Decimal {
        self.gpu_seconds / Decimal::from(3600)
    }
    pub fn busy_gpu_hours(&self) -> Decimal {
        self.busy_gpu_seconds / Decimal::from(3600)
    }
    pub fn energy_kwh(&self) -> Decimal {
        self.energy_wh / Decimal::from(1000)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRow {
    pub tenant_id: TenantId,
    pub currency: Currency,
    pub gpu_seconds: Decimal,
    /// The tenant's cost over the cost of every deployment in the view, in that currency (0..=1).
    pub share: Decimal,
    pub cost: Decimal,
}

/// One UTC day of an item (a tenant's charge) or of a deployment's unallocated (idle) cost, per policy.
/// Quantities are exact to 6 places; `cost` is the item's (or the unallocated) rounded amount apportioned over
/// its days with the largest-remainder method, weighed by each day's exact cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayItem {
    /// `None`: the deployment's unallocated (idle) cost under the policy that day.
    pub tenant_id: Option<TenantId>,
    pub deployment_id: String,
    pub policy_id: String,
    /// The start of its span (`AllocationConfig::item_span`): midnight UTC for a day, the hour for an hour.
    pub start: Timestamp,
    /// The end of its span (exclusive; not clipped to the period).
    pub end: Timestamp,
    /// How the deployment's cost was split between its parties.
    pub basis: SplitBasis,
    pub gpu_seconds: Decimal,
    pub estimated_gpu_seconds: Decimal,
    pub gpu_memory_gb_seconds: Decimal,
    pub energy_wh: Decimal,
    pub cost: Money,
}

/// How a deployment's cost is split between its parties (what a day item rests on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SplitBasis {
    /// A dedicated deployment: everything to its owner, idle time included.
    Dedicated,
    /// A shared deployment: each bucket's cost split by the tenants' usage (the GPU-seconds their usage events
    /// carry, or their tokens weighting the measured GPU-seconds); the rest unallocated (idle).
    UsageWeightedGpuSeconds,
    /// As [`SplitBasis::UsageWeightedGpuSeconds`], the idle cost then spread over the tenants in proportion to
    /// their allocated cost (a `proportional` policy).
    UsageWeightedGpuSecondsIdleProportional,
}

impl SplitBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            SplitBasis::Dedicated => "dedicated",
            SplitBasis::UsageWeightedGpuSeconds => "usage-weighted-gpu-seconds",
            SplitBasis::UsageWeightedGpuSecondsIdleProportional => {
                "usage-weighted-gpu-seconds-idle-proportional"
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DailyCost {
    pub date: String,
    pub deployment_id: String,
    pub currency: Currency,
    pub cost: Decimal,
}

/// Why a missing span of a GPU series was not filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GapReason {
    /// Longer than the interpolation limit.
    TooLong,
    /// The samples on either side belong to another deployment, owner, model or GPU fraction.
    SeriesChanged,
}

impl GapReason {
    pub fn as_str(self) -> &'static str {
        match self {
            GapReason::TooLong => "too_long",
            GapReason::SeriesChanged => "series_changed",
        }
    }
}

/// A span of a GPU series with no sample, not filled: reported, never a silent zero.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gap {
    pub gpu_uuid: String,
    pub node: String,
    pub deployment_id: String,
    pub from: Timestamp,
    pub to: Timestamp,
    pub reason: GapReason,
}

/// Something the figures rest on that a FinOps reader should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Samples no enabled policy prices: counted, never priced at zero silently.
    Unpriced {
        deployment_id: String,
        samples: u64,
        gpu_seconds: Decimal,
    },
    /// Tenants' usage events claimed more GPU-seconds than were measured in a bucket; they were scaled down.
    OverAttribution {
        deployment_id: String,
        bucket_start: Timestamp,
        claimed_gpu_seconds: Decimal,
        measured_gpu_seconds: Decimal,
    },
    /// Usage events name a deployment in a bucket where none of its GPU time was measured.
    UsageWithoutSamples { deployment_id: String, events: u64 },
    /// A rollup spans a policy change; it was priced by the policy at its first window. The store keeps rollups
    /// cut at every boundary it knows when it writes them, and reads an hour with a newer boundary from raw
    /// samples while it has them: this is left for hours whose raw samples were pruned before the policy existed.
    PolicyBoundaryInsideRollup {
        deployment_id: String,
        /// Empty for a group rollup (a deployment-hour).
        gpu_uuid: String,
        bucket_start: Timestamp,
        /// The GPU-seconds of the rollup: what may be priced by the wrong side of the boundary.
        gpu_seconds: Decimal,
    },
    /// A deployment priced in several currencies: one row per currency.
    MixedCurrency { deployment_id: String },
    /// GPU time of a deployment that rests on GPUs shared by several pods and split equally between them (no
    /// per-pod GPU time on the node: `share_method: "equal"`), an estimate ([`crate::shares`]).
    EqualGpuShares {
        deployment_id: String,
        samples: u64,
        gpu_seconds: Decimal,
    },
    /// Two samples with the same (gpu_uuid, timestamp) but different figures: the first was kept.
    ConflictingDuplicate {
        gpu_uuid: String,
        timestamp: Timestamp,
    },
}

impl Finding {
    pub fn code(&self) -> &'static str {
        match self {
            Finding::Unpriced { .. } => "unpriced_samples",
            Finding::OverAttribution { .. } => "over_attribution",
            Finding::UsageWithoutSamples { .. } => "usage_without_samples",
            Finding::PolicyBoundaryInsideRollup { .. } => "policy_boundary_inside_rollup",
            Finding::MixedCurrency { .. } => "mixed_currency",
            Finding::ConflictingDuplicate { .. } => "conflicting_duplicate",
            Finding::EqualGpuShares { .. } => "equal_gpu_shares",
        }
    }
}

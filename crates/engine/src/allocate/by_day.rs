//! Items per UTC day (`AllocationConfig::day_items`, what the FOCUS export writes): the exact parts of each
//! (tenant, policy) and of each policy's idle capacity kept per day while a deployment is settled, then each
//! rounded item (and unallocated amount) apportioned over its days with the largest-remainder method, weighed
//! by the days' exact costs. So the days of an item sum to the item's `allocated` to the minor unit, and a
//! deployment's days (items and idle) sum to its `cost`.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::pricing::Part;
use super::round::{idle_weights, Rounded};
use super::{report_quantity, Ctx, DAY_MS};
use crate::decimal_ops;
use crate::domain::{IdleCapacity, Policy, TenantId};
use crate::money::{apportion, Currency, Money};
use crate::report::DayItem;
use crate::time::Timestamp;

/// An exact part and its estimated GPU-seconds.
#[derive(Debug, Clone, Copy, Default)]
struct DayPart {
    part: Part,
    estimated: Decimal,
}

impl DayPart {
    fn add(&mut self, o: &DayPart) {
        self.part.add(&o.part);
        self.estimated = decimal_ops::add(self.estimated, o.estimated);
    }

    fn sub(&mut self, o: &DayPart) {
        self.part.sub(&o.part);
        self.estimated = decimal_ops::sub(self.estimated, o.estimated);
    }

    fn times(&self, f: Decimal) -> DayPart {
        DayPart {
            part: self.part.times(f),
            estimated: decimal_ops::mul(self.estimated, f),
        }
    }
}

/// One deployment's exact parts per day: keyed (tenant, policy index, day index) and (policy index, day index).
#[derive(Debug, Default)]
pub(super) struct ByDay {
    tenants: BTreeMap<(TenantId, usize, usize), DayPart>,
    idle: BTreeMap<(usize, usize), DayPart>,
}

impl ByDay {
    /// A dedicated owner's day under policy `p`.
    pub(super) fn add_owned(
        &mut self,
        owner: TenantId,
        p: usize,
        day: usize,
        part: &Part,
        estimated: Decimal,
    ) {
        let dp = DayPart {
            part: *part,
            estimated,
        };
        self.tenants.entry((owner, p, day)).or_default().add(&dp);
    }

    /// A shared bucket of day `day` under policy `p`: each tenant's fraction of `whole` (the same products as
    /// the period's split), the rest to idle.
    pub(super) fn split(
        &mut self,
        p: usize,
        day: usize,
        whole: &Part,
        estimated: Decimal,
        fractions: &[(TenantId, Decimal)],
    ) {
        let whole = DayPart {
            part: *whole,
            estimated,
        };
        let mut rest = whole;
        for (t, f) in fractions {
            let part = whole.times(*f);
            self.tenants.entry((*t, p, day)).or_default().add(&part);
            rest.sub(&part);
        }
        self.idle.entry((p, day)).or_default().add(&rest);
    }

    /// The days of `settle::spread_idle`: a `proportional` policy's idle days go to the deployment's tenants in
    /// proportion to their allocated cost (`parts`: before the spread); with no tenant they stay idle.
    pub(super) fn spread_idle(
        &mut self,
        policies: &[Policy],
        parts: &BTreeMap<(TenantId, usize), Part>,
    ) {
        let (weights, total) = idle_weights(parts);
        if total <= Decimal::ZERO {
            return;
        }
        let spread: Vec<(usize, usize)> = self
            .idle
            .keys()
            .filter(|(p, _)| policies[*p].spec.idle_capacity == IdleCapacity::Proportional)
            .copied()
            .collect();
        for (p, day) in spread {
            let Some(idle) = self.idle.remove(&(p, day)) else {
                continue;
            };
            for (t, w) in &weights {
                let share = idle.times(*w / total);
                self.tenants.entry((*t, p, day)).or_default().add(&share);
            }
        }
    }

    /// The rounded amounts of a (deployment, currency) row apportioned over their days, as day items.
    pub(super) fn apportion(
        &self,
        ctx: &Ctx<'_>,
        cur: Currency,
        dep_id: &str,
        rounded: &Rounded,
        out: &mut Vec<DayItem>,
    ) {
        for ((t, p), amount) in &rounded.items {
            let days: Vec<(usize, &DayPart)> = self
                .tenants
                .range((*t, *p, 0)..=(*t, *p, usize::MAX))
                .map(|((_, _, d), dp)| (*d, dp))
                .collect();
            emit(ctx, cur, dep_id, Some(*t), *p, *amount, &days, out);
        }
        for (p, amount) in &rounded.idle {
            let days: Vec<(usize, &DayPart)> = self
                .idle
                .range((*p, 0)..=(*p, usize::MAX))
                .map(|((_, d), dp)| (*d, dp))
                .collect();
            emit(ctx, cur, dep_id, None, *p, *amount, &days, out);
        }
    }
}

/// `amount` over `days` (largest remainder, weighed by each day's exact cost). A day with neither GPU time
/// nor money is left out; an amount with no day at all (never: every part is added to a day) would land on the
/// period's first day rather than be lost.
#[allow(clippy::too_many_arguments)]
fn emit(
    ctx: &Ctx<'_>,
    cur: Currency,
    dep_id: &str,
    tenant_id: Option<TenantId>,
    p: usize,
    amount: Decimal,
    days: &[(usize, &DayPart)],
    out: &mut Vec<DayItem>,
) {
    let nothing = DayPart::default();
    let first = [(0usize, &nothing)];
    let days = if days.is_empty() { &first[..] } else { days };
    let quotas: Vec<Decimal> = days
        .iter()
        .map(|(_, dp)| dp.part.cost.max(Decimal::ZERO))
        .collect();
    for ((day, dp), cost) in days
        .iter()
        .zip(apportion(amount, &quotas, cur.minor_unit()))
    {
        let gpu_seconds = report_quantity(dp.part.gpu_seconds);
        if cost.is_zero() && gpu_seconds.is_zero() {
            continue;
        }
        out.push(DayItem {
            tenant_id,
            deployment_id: dep_id.to_string(),
            policy_id: ctx.policies[p].id.clone(),
            day: Timestamp(ctx.day0 + *day as i64 * DAY_MS),
            gpu_seconds,
            estimated_gpu_seconds: report_quantity(dp.estimated),
            gpu_memory_gb_seconds: report_quantity(dp.part.memory_gb_seconds),
            energy_wh: report_quantity(dp.part.energy_ws / Decimal::from(3600)),
            cost: Money {
                amount: cost,
                currency: cur,
            },
        });
    }
}

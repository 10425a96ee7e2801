//! Items per span of time, a UTC day or hour (`AllocationConfig::day_items` and `item_span`, what the FOCUS
//! export writes): the exact parts of each (tenant, policy) and of each policy's idle capacity kept per span
//! while a deployment is settled, then each rounded item (and unallocated amount) apportioned over its days with
//! the largest-remainder method, weighed by the days' exact costs, and each day's amount over its hours the same
//! way. So the spans of an item sum to the item's `allocated` to the minor unit, a deployment's spans (items and
//! idle) sum to its `cost`, and the hours of a day sum to what that day's item would be.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::pricing::Part;
use super::round::{idle_weights, Rounded};
use super::{report_quantity, Ctx, DAY_MS};
use crate::decimal_ops;
use crate::domain::{IdleCapacity, Policy, TenantId};
use crate::money::{apportion, Currency, Money};
use crate::report::{DayItem, SplitBasis};
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

/// One deployment's exact parts per span: keyed (tenant, policy index, span index) and (policy index, span
/// index), spans counted from `Ctx::span0`.
#[derive(Debug, Default)]
pub(super) struct ByDay {
    tenants: BTreeMap<(TenantId, usize, usize), DayPart>,
    idle: BTreeMap<(usize, usize), DayPart>,
}

impl ByDay {
    /// A dedicated owner's span under policy `p`.
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

    /// A shared bucket of span `day` under policy `p`: each tenant's fraction of `whole` (the same products as
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

    /// The rounded amounts of a (deployment, currency) row apportioned over their spans, as day items.
    /// `dedicated`: the deployment had an owner (its basis).
    pub(super) fn apportion(
        &self,
        ctx: &Ctx<'_>,
        cur: Currency,
        dep_id: &str,
        dedicated: bool,
        rounded: &Rounded,
        out: &mut Vec<DayItem>,
    ) {
        let basis = |p: usize| {
            if dedicated {
                SplitBasis::Dedicated
            } else if ctx.policies[p].spec.idle_capacity == IdleCapacity::Proportional {
                SplitBasis::UsageWeightedGpuSecondsIdleProportional
            } else {
                SplitBasis::UsageWeightedGpuSeconds
            }
        };
        for ((t, p), amount) in &rounded.items {
            let days: Vec<(usize, &DayPart)> = self
                .tenants
                .range((*t, *p, 0)..=(*t, *p, usize::MAX))
                .map(|((_, _, d), dp)| (*d, dp))
                .collect();
            let who = Who {
                dep_id,
                tenant_id: Some(*t),
                p: *p,
                basis: basis(*p),
            };
            emit(ctx, cur, &who, *amount, &days, out);
        }
        for (p, amount) in &rounded.idle {
            let days: Vec<(usize, &DayPart)> = self
                .idle
                .range((*p, 0)..=(*p, usize::MAX))
                .map(|((_, d), dp)| (*d, dp))
                .collect();
            let who = Who {
                dep_id,
                tenant_id: None,
                p: *p,
                basis: basis(*p),
            };
            emit(ctx, cur, &who, *amount, &days, out);
        }
    }
}

/// Whose day items [`emit`] writes.
struct Who<'d> {
    dep_id: &'d str,
    tenant_id: Option<TenantId>,
    p: usize,
    basis: SplitBasis,
}

/// `amount` over `spans` (largest remainder): first over their UTC days, weighed by each day's exact cost, then
/// each day's amount over its spans the same way (for day spans, the second step gives the day its amount). A
/// span with neither GPU time nor money is left out; an amount with no span at all (never: every part is added
/// to a span) would land on the period's first span rather than be lost.
fn emit(
    ctx: &Ctx<'_>,
    cur: Currency,
    who: &Who<'_>,
    amount: Decimal,
    spans: &[(usize, &DayPart)],
    out: &mut Vec<DayItem>,
) {
    let nothing = DayPart::default();
    let first = [(0usize, &nothing)];
    let spans = if spans.is_empty() { &first[..] } else { spans };
    let start = |s: usize| ctx.span0 + s as i64 * ctx.span_ms;
    // Spans are in order, so the spans of a day are a run.
    let mut days: Vec<(i64, std::ops::Range<usize>, Decimal)> = Vec::new();
    for (i, (s, dp)) in spans.iter().enumerate() {
        let day = start(*s).div_euclid(DAY_MS);
        let cost = dp.part.cost.max(Decimal::ZERO);
        match days.last_mut() {
            Some((d, run, sum)) if *d == day => {
                run.end = i + 1;
                *sum = decimal_ops::add(*sum, cost);
            }
            _ => days.push((day, i..i + 1, cost)),
        }
    }
    let day_quotas: Vec<Decimal> = days.iter().map(|(_, _, c)| *c).collect();
    let unit = cur.minor_unit();
    for ((_, run, _), day_amount) in days.iter().zip(apportion(amount, &day_quotas, unit)) {
        let run = &spans[run.clone()];
        let quotas: Vec<Decimal> = run
            .iter()
            .map(|(_, dp)| dp.part.cost.max(Decimal::ZERO))
            .collect();
        for ((s, dp), cost) in run.iter().zip(apportion(day_amount, &quotas, unit)) {
            let gpu_seconds = report_quantity(dp.part.gpu_seconds);
            if cost.is_zero() && gpu_seconds.is_zero() {
                continue;
            }
            out.push(DayItem {
                tenant_id: who.tenant_id,
                deployment_id: who.dep_id.to_string(),
                policy_id: ctx.policies[who.p].id.clone(),
                start: Timestamp(start(*s)),
                end: Timestamp(start(*s) + ctx.span_ms),
                basis: who.basis,
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
}

//! The end of step 3, per deployment: idle capacity spread over the tenants by a `proportional` policy
//! (weighed by their allocated cost), then each (deployment, currency) row rounded once and apportioned between
//! its tenants' items and its policies' unallocated amounts with the largest-remainder method.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::pricing::Part;
use super::report_quantity;
use super::trace::{IdleSpread, Party, Rounding, RoundingLine, Trace};
use crate::domain::{IdleCapacity, Policy, TenantId};
use crate::money::{apportion, apportion_steps, Currency, Money};
use crate::report::{DeploymentRow, Item};

/// Idle capacity under a `proportional` policy goes to the deployment's tenants in proportion to their
/// allocated cost; with no tenant it stays unallocated.
pub(super) fn spread_idle(
    policies: &[Policy],
    parts: &mut BTreeMap<(TenantId, usize), Part>,
    unalloc: &mut BTreeMap<usize, Part>,
    mut trace: Option<&mut Trace>,
) {
    let (weights, total) = idle_weights(parts);
    if total <= Decimal::ZERO {
        return;
    }
    for (p, idle) in unalloc.iter_mut() {
        if policies[*p].spec.idle_capacity != IdleCapacity::Proportional {
            continue;
        }
        let n = weights.len();
        let mut left = *idle;
        let mut spread = Vec::new();
        for (i, (t, w)) in weights.iter().enumerate() {
            // The last tenant takes the remainder, so that nothing is left over by division.
            let share = if i + 1 == n {
                left
            } else {
                idle.times(*w / total)
            };
            parts.entry((*t, *p)).or_default().add(&share);
            left.sub(&share);
            spread.push((Party::Tenant(*t), *w, share.cost));
        }
        if let Some(tr) = trace.as_deref_mut() {
            tr.idle_spread.push(IdleSpread {
                policy_id: policies[*p].id.clone(),
                idle: idle.cost,
                parties: spread,
            });
        }
        *idle = Part::default();
    }
}

/// What weighs the spread of idle capacity: each tenant's allocated cost on the deployment, and their sum.
pub(super) fn idle_weights(
    parts: &BTreeMap<(TenantId, usize), Part>,
) -> (BTreeMap<TenantId, Decimal>, Decimal) {
    let mut weights: BTreeMap<TenantId, Decimal> = BTreeMap::new();
    for ((t, _), p) in parts.iter() {
        *weights.entry(*t).or_default() += p.cost;
    }
    let total: Decimal = weights.values().copied().sum();
    (weights, total)
}

/// The rounded amounts of a (deployment, currency) row: each (tenant, policy) item's and each policy's
/// unallocated amount.
#[derive(Debug, Default)]
pub(super) struct Rounded {
    pub(super) items: Vec<((TenantId, usize), Decimal)>,
    pub(super) idle: Vec<(usize, Decimal)>,
}

/// Rounds a (deployment, currency) row once and apportions it between its tenants' items and unallocated.
pub(super) fn round_row(
    cur: Currency,
    dep_id: &str,
    policies: &[Policy],
    parts: &BTreeMap<(TenantId, usize), Part>,
    unalloc: &BTreeMap<usize, Part>,
    row: &mut DeploymentRow,
    items: &mut Vec<Item>,
) -> Rounded {
    let in_cur = |p: usize| policies[p].spec.currency == cur;
    let tenant_parts: Vec<(&(TenantId, usize), &Part)> =
        parts.iter().filter(|((_, p), _)| in_cur(*p)).collect();
    let idle_parts: Vec<(usize, &Part)> = unalloc
        .iter()
        .filter(|(p, _)| in_cur(**p))
        .map(|(p, part)| (*p, part))
        .collect();
    let quotas: Vec<Decimal> = tenant_parts
        .iter()
        .map(|(_, p)| p.cost)
        .chain(idle_parts.iter().map(|(_, p)| p.cost))
        .map(|c| c.max(Decimal::ZERO))
        .collect();
    let exact: Decimal = tenant_parts
        .iter()
        .map(|(_, p)| p.cost)
        .chain(idle_parts.iter().map(|(_, p)| p.cost))
        .sum();
    row.cost = cur.round(exact);
    let amounts = apportion(row.cost, &quotas, cur.minor_unit());
    let (tenant_amounts, idle_amounts) = amounts.split_at(tenant_parts.len());
    row.allocated = cur.round(tenant_amounts.iter().copied().sum());
    row.unallocated = cur.round(idle_amounts.iter().copied().sum());
    for (((t, p), part), amount) in tenant_parts.iter().zip(tenant_amounts) {
        items.push(Item {
            tenant_id: *t,
            deployment_id: dep_id.to_string(),
            policy_id: policies[*p].id.clone(),
            gpu_seconds: report_quantity(part.gpu_seconds),
            gpu_memory_gb_seconds: report_quantity(part.memory_gb_seconds),
            energy_wh: report_quantity(part.energy_ws / Decimal::from(3600)),
            allocated: Money {
                amount: *amount,
                currency: cur,
            },
        });
    }
    Rounded {
        items: tenant_parts
            .iter()
            .map(|(key, _)| **key)
            .zip(tenant_amounts.iter().copied())
            .collect(),
        idle: idle_parts
            .iter()
            .map(|(p, _)| *p)
            .zip(idle_amounts.iter().copied())
            .collect(),
    }
}

/// The rounding of a (deployment, currency) row as [`round_row`] does it, step by step.
pub(super) fn rounding(
    cur: Currency,
    policies: &[Policy],
    parts: &BTreeMap<(TenantId, usize), Part>,
    unalloc: &BTreeMap<usize, Part>,
    cost: Decimal,
) -> Rounding {
    let in_cur = |p: usize| policies[p].spec.currency == cur;
    let lines: Vec<(Option<Party>, usize, Decimal)> = parts
        .iter()
        .filter(|((_, p), _)| in_cur(*p))
        .map(|((t, p), part)| (Some(Party::Tenant(*t)), *p, part.cost))
        .chain(
            unalloc
                .iter()
                .filter(|(p, _)| in_cur(**p))
                .map(|(p, part)| (None, *p, part.cost)),
        )
        .collect();
    let quotas: Vec<Decimal> = lines.iter().map(|l| l.2.max(Decimal::ZERO)).collect();
    let steps = apportion_steps(cost, &quotas, cur.minor_unit());
    Rounding {
        currency: cur,
        exact: lines.iter().map(|l| l.2).sum(),
        cost,
        lines: lines
            .iter()
            .zip(steps)
            .map(|((party, p, exact), s)| RoundingLine {
                party: *party,
                policy_id: policies[*p].id.clone(),
                exact: *exact,
                scaled: s.scaled,
                floor: s.floor,
                remainder_unit: s.extra,
                amount: s.amount,
            })
            .collect(),
    }
}

//! Step 3, per deployment: buckets priced, shared buckets split between their claims, idle capacity spread or
//! left unallocated, each (deployment, currency) row rounded once and apportioned (those two with `round`'s
//! functions); the tenants' rows.

use std::collections::{BTreeMap, HashSet};

use rust_decimal::Decimal;

use super::accumulate::{Bucket, Dep, Stats};
use super::by_day::ByDay;
use super::claims::split;
use super::pricing::{add_part, from_fixed, Acc, Part};
use super::round::{round_row, rounding, spread_idle};
use super::split_cache::{DepSplits, SplitCache};
use super::trace::{bucket_start, priced_line, Party, Trace};
use super::{report_quantity, Ctx, DAY_MS};
use crate::decimal_ops;
use crate::domain::TenantId;
use crate::money::{apportion, Currency};
use crate::report::{DailyCost, DayItem, DeploymentRow, Finding, Item, TenantRow};
use crate::time::Timestamp;

/// One deployment, priced, split, rounded.
#[derive(Debug, Default)]
pub(super) struct Settled {
    pub(super) items: Vec<Item>,
    pub(super) rows: Vec<DeploymentRow>,
    pub(super) daily: Vec<DailyCost>,
    pub(super) findings: Vec<Finding>,
    pub(super) day_items: Vec<DayItem>,
}

/// Settles a deployment; with the context's [`SplitCache`], its shared buckets' splits are taken from it (or
/// computed and kept there).
pub(super) fn settle(ctx: &Ctx<'_>, dep: &Dep<'_>) -> Settled {
    match ctx.splits {
        Some(cache) => {
            let kept = cache.deployment(dep.id);
            let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
            settle_with(ctx, dep, None, Some((cache, &mut kept)))
        }
        None => settle_with(ctx, dep, None, None),
    }
}

/// [`settle`], recording each step in `trace` when given (the explanation of one deployment).
pub(super) fn settle_traced(ctx: &Ctx<'_>, dep: &Dep<'_>, trace: Option<&mut Trace>) -> Settled {
    settle_with(ctx, dep, trace, None)
}

/// The kept splits of one deployment and the cache that holds them.
type Kept<'k> = Option<(&'k SplitCache, &'k mut DepSplits)>;

fn settle_with(
    ctx: &Ctx<'_>,
    dep: &Dep<'_>,
    mut trace: Option<&mut Trace>,
    mut kept: Kept<'_>,
) -> Settled {
    let policies = ctx.policies;
    let mut out = Settled::default();
    let (items, rows, daily, findings) = (
        &mut out.items,
        &mut out.rows,
        &mut out.daily,
        &mut out.findings,
    );
    let day_items = &mut out.day_items;
    let dep_id = dep.id;
    let mut parts: Vec<((TenantId, usize), Part)> = Vec::new();
    let mut unalloc: Vec<(usize, Part)> = Vec::new();
    let mut days = Days::default();
    let mut by_day = ctx.day_items.then(ByDay::default);
    let mut orphan_events = 0u64;
    let mut cursor = 0usize;
    for (owner, buckets) in &dep.owners {
        match owner {
            Some(t) => {
                if let Some(tr) = trace.as_deref_mut() {
                    for (bi, b) in buckets.iter().enumerate() {
                        if b.per_policy.iter().next().is_some() {
                            tr.owned(ctx, bucket_start(ctx, bi), *t, b);
                        }
                    }
                }
                settle_dedicated(ctx, *t, buckets, &mut parts, &mut days, by_day.as_mut())
            }
            None => {
                let shared = settle_shared(
                    ctx,
                    dep,
                    buckets,
                    &mut parts,
                    &mut unalloc,
                    &mut days,
                    by_day.as_mut(),
                    trace.as_deref_mut(),
                    kept.as_mut().map(|(c, k)| (*c, &mut **k)),
                );
                orphan_events += shared.orphan_events;
                cursor = shared.cursor;
                findings.extend(shared.findings);
            }
        }
    }
    // Claims on buckets of a deployment that had no shared GPU time at all.
    orphan_events += dep.events.len().saturating_sub(cursor) as u64;
    if dep.owners.iter().all(|(o, _)| o.is_some()) {
        orphan_events = 0; // a dedicated deployment ignores usage events
    }
    if orphan_events > 0 {
        findings.push(Finding::UsageWithoutSamples {
            deployment_id: dep_id.to_string(),
            events: orphan_events,
        });
    }
    let mut unalloc: BTreeMap<usize, Part> = unalloc.into_iter().collect();
    let mut parts: BTreeMap<(TenantId, usize), Part> = parts.into_iter().collect();
    if let Some(b) = &mut by_day {
        b.spread_idle(policies, &parts);
    }
    spread_idle(policies, &mut parts, &mut unalloc, trace.as_deref_mut());

    // Rows per currency.
    let mut currencies: Vec<Currency> = dep
        .stats
        .iter()
        .filter_map(|(p, _)| *p)
        .map(|p| policies[p].spec.currency)
        .collect();
    currencies.sort();
    currencies.dedup();
    if currencies.len() > 1 {
        findings.push(Finding::MixedCurrency {
            deployment_id: dep_id.to_string(),
        });
    }
    let unpriced = dep.stats.iter().find(|(p, _)| p.is_none()).map(|(_, s)| s);
    let unpriced_gs = unpriced.map_or(Decimal::ZERO, |u| report_quantity(from_fixed(u.q.gs)));
    if let Some(u) = unpriced {
        findings.push(Finding::Unpriced {
            deployment_id: dep_id.to_string(),
            samples: u.samples,
            gpu_seconds: unpriced_gs,
        });
    }
    let row_currencies: Vec<Option<Currency>> = if currencies.is_empty() {
        vec![None]
    } else {
        currencies.iter().copied().map(Some).collect()
    };
    for (ri, cur) in row_currencies.iter().enumerate() {
        let mut row_stats: Vec<&Stats<'_>> = dep
            .stats
            .iter()
            .filter(|(p, _)| p.map(|p| policies[p].spec.currency) == *cur && p.is_some())
            .map(|(_, s)| s)
            .collect();
        // Unpriced usage is shown on the deployment's first row.
        if ri == 0 {
            row_stats.extend(unpriced);
        }
        let mut row = DeploymentRow {
            deployment_id: dep_id.to_string(),
            currency: *cur,
            dedicated: dep.dedicated,
            samples: 0,
            estimated_samples: 0,
            gpus: 0,
            gpu_seconds: Decimal::ZERO,
            estimated_gpu_seconds: Decimal::ZERO,
            busy_gpu_seconds: Decimal::ZERO,
            gpu_memory_gb_seconds: Decimal::ZERO,
            energy_wh: Decimal::ZERO,
            cost: Decimal::ZERO,
            allocated: Decimal::ZERO,
            unallocated: Decimal::ZERO,
            unpriced_samples: if ri == 0 {
                unpriced.map_or(0, |u| u.samples)
            } else {
                0
            },
            unpriced_gpu_seconds: if ri == 0 { unpriced_gs } else { Decimal::ZERO },
        };
        let mut gpus: HashSet<&str> = HashSet::new();
        let mut acc = Acc::default();
        for s in &row_stats {
            row.samples += s.samples;
            row.estimated_samples += s.estimated_samples;
            acc.merge(&s.q);
            gpus.extend(s.gpus.iter().copied());
        }
        let q = acc.quantities();
        row.gpus = gpus.len() as u64;
        row.gpu_seconds = report_quantity(q.gpu_seconds);
        row.estimated_gpu_seconds = report_quantity(q.estimated_gpu_seconds);
        row.busy_gpu_seconds = report_quantity(q.busy_gpu_seconds);
        row.gpu_memory_gb_seconds = report_quantity(q.memory_gb_seconds);
        row.energy_wh = report_quantity(q.energy_wh());
        if let Some(cur) = cur {
            let rounded = round_row(*cur, dep_id, policies, &parts, &unalloc, &mut row, items);
            if let Some(tr) = trace.as_deref_mut() {
                tr.rounding
                    .push(rounding(*cur, policies, &parts, &unalloc, row.cost));
            }
            if let Some(b) = &by_day {
                b.apportion(ctx, *cur, dep_id, dep.dedicated, &rounded, day_items);
            }
            let (day_keys, quotas): (Vec<i64>, Vec<Decimal>) = days.of(*cur, ctx).unzip();
            for (d, amount) in day_keys
                .iter()
                .zip(apportion(row.cost, &quotas, cur.minor_unit()))
            {
                daily.push(DailyCost {
                    date: Timestamp(*d).date_string(),
                    deployment_id: dep_id.to_string(),
                    currency: *cur,
                    cost: amount,
                });
            }
        }
        rows.push(row);
    }
    out
}

/// A dedicated owner's buckets: everything to the owner, priced per day (cost is linear in the quantities).
pub(super) fn settle_dedicated(
    ctx: &Ctx<'_>,
    owner: TenantId,
    buckets: &[Bucket],
    parts: &mut Vec<((TenantId, usize), Part)>,
    days: &mut Days,
    mut by_day: Option<&mut ByDay>,
) {
    let mut per_day: BTreeMap<(usize, usize), Acc> = BTreeMap::new();
    for (bi, b) in buckets.iter().enumerate() {
        for (p, acc) in b.per_policy.iter() {
            per_day
                .entry((ctx.bucket_day[bi], *p))
                .or_default()
                .merge(acc);
        }
    }
    // Day items of day spans take the days' parts; of shorter spans, their own.
    let spans_are_days = ctx.span_ms == DAY_MS;
    for ((day, p), acc) in per_day {
        let part = acc.priced(&ctx.rates[p]);
        days.add(ctx, p, day, part.cost);
        add_part(parts, (owner, p), &part);
        if let Some(b) = by_day.as_deref_mut().filter(|_| spans_are_days) {
            b.add_owned(owner, p, day, &part, from_fixed(acc.est));
        }
    }
    if let Some(b) = by_day.filter(|_| !spans_are_days) {
        let mut per_span: BTreeMap<(usize, usize), Acc> = BTreeMap::new();
        for (bi, b) in buckets.iter().enumerate() {
            for (p, acc) in b.per_policy.iter() {
                per_span
                    .entry((ctx.bucket_span[bi], *p))
                    .or_default()
                    .merge(acc);
            }
        }
        for ((span, p), acc) in per_span {
            let part = acc.priced(&ctx.rates[p]);
            b.add_owned(owner, p, span, &part, from_fixed(acc.est));
        }
    }
}

/// What settling the shared buckets of a deployment leaves besides sums.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Claims on buckets without GPU time.
    pub(super) orphan_events: u64,
    /// How many of the deployment's claims (sorted by bucket) were visited.
    pub(super) cursor: usize,
    pub(super) findings: Vec<Finding>,
}

/// The shared buckets of a deployment: each bucket's cost split between the tenants that claimed it, the rest
/// to idle. Buckets are visited in order and every sum is added to in that order (the sums are exact decimals
/// that may round once they grow long, so the order is part of the answer).
#[allow(clippy::too_many_arguments)]
pub(super) fn settle_shared(
    ctx: &Ctx<'_>,
    dep: &Dep<'_>,
    buckets: &[Bucket],
    parts: &mut Vec<((TenantId, usize), Part)>,
    unalloc: &mut Vec<(usize, Part)>,
    days: &mut Days,
    mut by_day: Option<&mut ByDay>,
    mut trace: Option<&mut Trace>,
    mut kept: Kept<'_>,
) -> Shared {
    let mut out = Shared::default();
    // Reused for every bucket: a month of buckets would otherwise allocate one list each.
    let mut fractions: Vec<(TenantId, Decimal)> = Vec::new();
    for (bi, b) in buckets.iter().enumerate() {
        // The claims of this bucket: claims are sorted by bucket and every bucket is visited in order, so they
        // are the run that starts where the previous bucket's ended.
        let start = out.cursor;
        while out.cursor < dep.events.len() && dep.events[out.cursor].0 <= bi {
            out.cursor += 1;
        }
        let claims = &dep.events[start..out.cursor];
        if b.measured == 0 {
            out.orphan_events += claims.len() as u64;
            if let Some(tr) = trace.as_deref_mut().filter(|_| !claims.is_empty()) {
                tr.shared(bucket_start(ctx, bi), b, claims, &[], false, Vec::new());
            }
            continue;
        }
        let measured = from_fixed(b.measured);
        if let Some((cache, kept)) = kept.as_mut().filter(|_| trace.is_none()) {
            let start = ctx.period.from.0 + bi as i64 * ctx.bucket_ms;
            let s = kept.get(cache, ctx, start, b, claims);
            if let Some(claimed) = s.over {
                out.findings.push(Finding::OverAttribution {
                    deployment_id: dep.id.to_string(),
                    bucket_start: Timestamp(start),
                    claimed_gpu_seconds: claimed,
                    measured_gpu_seconds: measured,
                });
            }
            for ps in &s.policies {
                let p = ps.p;
                days.add(ctx, p, ctx.bucket_day[bi], ps.whole.cost);
                if let Some(b) = by_day.as_deref_mut() {
                    b.split(p, ctx.bucket_span[bi], &ps.whole, ps.est, &s.fractions);
                }
                let i = unalloc
                    .iter()
                    .position(|(q, _)| *q == p)
                    .unwrap_or_else(|| {
                        unalloc.push((p, Part::default()));
                        unalloc.len() - 1
                    });
                for ((t, _), part) in s.fractions.iter().zip(&ps.parts) {
                    add_part(parts, (*t, p), part);
                }
                let idle = &mut unalloc[i].1;
                if ctx.idle_quantities[p] {
                    idle.add(&ps.rest);
                } else {
                    idle.cost = decimal_ops::add(idle.cost, ps.rest.cost);
                }
            }
            continue;
        }
        fractions.clear();
        let mut over = false;
        if !claims.is_empty() {
            if let Some(claimed) = split(claims, measured, &mut fractions) {
                over = true;
                out.findings.push(Finding::OverAttribution {
                    deployment_id: dep.id.to_string(),
                    bucket_start: Timestamp(ctx.period.from.0 + bi as i64 * ctx.bucket_ms),
                    claimed_gpu_seconds: claimed,
                    measured_gpu_seconds: measured,
                });
            }
        }
        let mut priced = Vec::new();
        for (p, acc) in b.per_policy.iter() {
            let whole = acc.priced(&ctx.rates[*p]);
            if trace.is_some() {
                // The same operations as `share`, on the cost alone.
                let mut rest = whole.cost;
                let mut parties = Vec::with_capacity(fractions.len());
                for (t, f) in &fractions {
                    let c = whole.times(*f).cost;
                    rest = decimal_ops::sub(rest, c);
                    parties.push((Party::Tenant(*t), c));
                }
                priced.push(priced_line(ctx, *p, acc, &whole, parties, rest));
            }
            days.add(ctx, *p, ctx.bucket_day[bi], whole.cost);
            if let Some(b) = by_day.as_deref_mut() {
                b.split(
                    *p,
                    ctx.bucket_span[bi],
                    &whole,
                    from_fixed(acc.est),
                    &fractions,
                );
            }
            let i = unalloc.iter().position(|(q, _)| q == p).unwrap_or_else(|| {
                unalloc.push((*p, Part::default()));
                unalloc.len() - 1
            });
            share(
                &whole,
                *p,
                &fractions,
                ctx.idle_quantities[*p],
                parts,
                &mut unalloc[i].1,
            );
        }
        if let Some(tr) = trace.as_deref_mut() {
            tr.shared(bucket_start(ctx, bi), b, claims, &fractions, over, priced);
        }
    }
    out
}

/// Gives each tenant its fraction of a bucket's `whole` under policy `p`, and what is left to `idle`.
///
/// Only a `proportional` policy ever reads the quantities of idle (to spread them over tenants); otherwise the
/// idle cost is all that is read, so only the cost of what is left is worked out (`idle_quantities` false),
/// with the very same decimal operations on it.
pub(super) fn share(
    whole: &Part,
    p: usize,
    fractions: &[(TenantId, Decimal)],
    idle_quantities: bool,
    parts: &mut Vec<((TenantId, usize), Part)>,
    idle: &mut Part,
) {
    if idle_quantities {
        let mut rest = *whole;
        for (t, f) in fractions {
            let part = whole.times(*f);
            add_part(parts, (*t, p), &part);
            rest.sub(&part);
        }
        idle.add(&rest);
    } else {
        let mut rest = whole.cost;
        for (t, f) in fractions {
            let part = whole.times(*f);
            add_part(parts, (*t, p), &part);
            rest = decimal_ops::sub(rest, part.cost);
        }
        idle.cost = decimal_ops::add(idle.cost, rest);
    }
}

/// The exact cost of one deployment per (currency, UTC day), each day added to in bucket order. Dense per day
/// of the period: a month of buckets costs no map look-ups. `None`: no bucket of that day was priced.
#[derive(Debug, Default)]
pub(super) struct Days(Vec<(Currency, Vec<Option<Decimal>>)>);

impl Days {
    /// Adds `cost` under policy `p` to day `day` (an index from the period's first day).
    pub(super) fn add(&mut self, ctx: &Ctx<'_>, p: usize, day: usize, cost: Decimal) {
        let cur = ctx.policies[p].spec.currency;
        let i = match self.0.iter().position(|(c, _)| *c == cur) {
            Some(i) => i,
            None => {
                self.0.push((cur, vec![None; ctx.n_days]));
                self.0.len() - 1
            }
        };
        let sum = self.0[i].1[day].get_or_insert(Decimal::ZERO);
        *sum = decimal_ops::add(*sum, cost);
    }

    /// The priced days of a currency, in order: (start of the day, exact cost).
    pub(super) fn of<'s>(
        &'s self,
        cur: Currency,
        ctx: &Ctx<'_>,
    ) -> impl Iterator<Item = (i64, Decimal)> + 's {
        let day0 = ctx.day0;
        self.0
            .iter()
            .filter(move |(c, _)| *c == cur)
            .flat_map(|(_, d)| d.iter().enumerate())
            .filter_map(move |(i, cost)| cost.map(|c| (day0 + i as i64 * DAY_MS, c)))
    }
}

pub(super) fn tenant_rows(items: &[Item], rows: &[DeploymentRow]) -> Vec<TenantRow> {
    let mut totals: BTreeMap<Currency, Decimal> = BTreeMap::new();
    for r in rows {
        if let Some(c) = r.currency {
            *totals.entry(c).or_default() += r.cost;
        }
    }
    let mut acc: BTreeMap<(TenantId, Currency), (Decimal, Decimal)> = BTreeMap::new();
    for i in items {
        let e = acc.entry((i.tenant_id, i.allocated.currency)).or_default();
        e.0 += i.gpu_seconds;
        e.1 += i.allocated.amount;
    }
    acc.into_iter()
        .map(|((t, c), (gs, cost))| {
            let total = totals.get(&c).copied().unwrap_or_default();
            let share = if total > Decimal::ZERO {
                (cost / total).round_dp(4)
            } else {
                Decimal::ZERO
            };
            TenantRow {
                tenant_id: t,
                currency: c,
                gpu_seconds: report_quantity(gs),
                share,
                cost,
            }
        })
        .collect()
}

//! The allocation: rollups + usage events + policies -> exact, reconciled costs per deployment and tenant.
//!
//! Preconditions (never checked by panicking): rollups are cut at `bucket_ms` multiples of the allocation
//! bucket or finer; policies are stored policies. Postconditions, for every (deployment, currency) row:
//! `allocated + unallocated == cost` and the items of the row sum to `allocated`, to the minor unit.

use std::collections::{BTreeMap, HashMap, HashSet};

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::domain::{IdleCapacity, Policy, Sample, TenantId, UsageEvent, ALLOCATION_SOURCE};
use crate::error::FieldError;
use crate::money::{apportion, Currency, Money};
use crate::policy::Candidates;
use crate::report::{Allocation, DailyCost, DeploymentRow, Finding, Gap, Item, TenantRow};
use crate::rollup::{Quantities, Rollup};
use crate::series::{self, SeriesConfig};
use crate::time::Timestamp;

const DAY_MS: i64 = 86_400_000;

/// How usage is split in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationConfig {
    /// Shared deployments are split per bucket of this length, aligned to UTC. Default 1 hour.
    pub bucket_ms: i64,
}

impl Default for AllocationConfig {
    fn default() -> Self {
        AllocationConfig { bucket_ms: 3_600_000 }
    }
}

/// The period of an allocation, widened to whole buckets: `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub from: Timestamp,
    pub to: Timestamp,
}

impl Period {
    pub fn new(from: Timestamp, to: Timestamp, bucket_ms: i64) -> Result<Self, FieldError> {
        if from >= to {
            return Err(FieldError::new("to", "must be after `from`"));
        }
        Ok(Period { from: from.floor_to(bucket_ms), to: to.ceil_to(bucket_ms) })
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && t < self.to
    }
}

/// Everything an allocation reads.
#[derive(Debug, Clone, Copy)]
pub struct AllocationInput<'a> {
    pub period: Period,
    pub rollups: &'a [Rollup],
    pub usage: &'a [UsageEvent],
    pub policies: &'a [Policy],
    /// Gaps of the series (from [`series::cells`] or the store); those that touch the period are reported.
    pub gaps: &'a [Gap],
    pub config: AllocationConfig,
}

/// The cost of quantities under a policy, exact:
/// GPU time with overhead + energy with PUE + storage GB-months (a month is 30 days).
pub fn price(policy: &Policy, q: &Quantities) -> Decimal {
    let s = &policy.spec;
    let gpu = s.gpu_hourly_cost.get() * q.gpu_seconds * (Decimal::ONE_HUNDRED + s.overhead_pct.get())
        / Decimal::from(360_000);
    let energy = q.energy_ws * s.pue.get() * s.energy_kwh_price.get() / Decimal::from(3_600_000);
    let storage = q.storage_gb_seconds * s.storage_gb_month_price.get() / Decimal::from(2_592_000);
    gpu + energy + storage
}

/// The raw path: samples through [`series::cells`], then [`allocate`]. Findings of the series are kept.
pub fn allocate_samples(
    samples: &[Sample],
    usage: &[UsageEvent],
    policies: &[Policy],
    period: Period,
    series_cfg: &SeriesConfig,
    config: AllocationConfig,
) -> Allocation {
    let out = series::cells(samples, series_cfg);
    let mut a = allocate(&AllocationInput { period, rollups: &out.cells, usage, policies, gaps: &out.gaps, config });
    a.findings.extend(out.findings);
    a
}

#[derive(Debug, Default)]
struct Stats<'a> {
    samples: u64,
    estimated_samples: u64,
    q: Quantities,
    gpus: HashSet<&'a str>,
}

#[derive(Debug, Default)]
struct Bucket {
    measured_gpu_seconds: Decimal,
    per_policy: Vec<(usize, Quantities)>,
}

#[derive(Debug, Default)]
struct Dep<'a> {
    dedicated: bool,
    /// Keyed by pricing policy; `None`: unpriced.
    stats: HashMap<Option<usize>, Stats<'a>>,
    /// Keyed by (owner, bucket start).
    buckets: BTreeMap<(Option<TenantId>, i64), Bucket>,
}

/// An exact amount of money and the quantities behind it.
#[derive(Debug, Clone, Copy, Default)]
struct Part {
    cost: Decimal,
    q: Quantities,
}

impl Part {
    fn add(&mut self, cost: Decimal, q: &Quantities) {
        self.cost += cost;
        self.q.add(q);
    }
}

/// Per tenant: GPU-seconds claimed by events that carry them, and tokens of those that do not.
#[derive(Debug, Default, Clone, Copy)]
struct Claim {
    gpu_seconds: Decimal,
    tokens: Decimal,
}

/// Splits a bucket's measured GPU-seconds between tenants. Claims in GPU-seconds come first (scaled down if
/// they exceed what was measured); tokens then weigh what is left. Returns the shares and, if the claims were
/// scaled, what was claimed.
fn split(claims: &BTreeMap<TenantId, Claim>, measured: Decimal) -> (Vec<(TenantId, Decimal)>, Option<Decimal>) {
    let claimed: Decimal = claims.values().map(|c| c.gpu_seconds).sum();
    let tokens: Decimal = claims.values().map(|c| c.tokens).sum();
    let over = claimed > measured;
    let remaining = if over { Decimal::ZERO } else { measured - claimed };
    let shares = claims
        .iter()
        .map(|(t, c)| {
            let mut a = if over { c.gpu_seconds * measured / claimed } else { c.gpu_seconds };
            if tokens > Decimal::ZERO && remaining > Decimal::ZERO {
                a += remaining * c.tokens / tokens;
            }
            (*t, a)
        })
        .filter(|(_, a)| *a > Decimal::ZERO)
        .collect();
    (shares, over.then_some(claimed))
}

fn report_quantity(d: Decimal) -> Decimal {
    d.round_dp(6).normalize()
}

/// Allocates a period. Pure: the same input gives the same answer, whatever the order of rollups and events.
pub fn allocate(input: &AllocationInput<'_>) -> Allocation {
    let AllocationInput { period, rollups, usage, policies, gaps, config } = *input;
    let bucket_ms = config.bucket_ms;
    let mut findings = Vec::new();

    // 1. Accumulate rollups per deployment, pricing policy and bucket.
    let mut deps: BTreeMap<&str, Dep<'_>> = BTreeMap::new();
    let mut candidates: HashMap<(&str, &str), Candidates> = HashMap::new();
    let mut last_key: Option<(&str, &str)> = None;
    let mut last_cand = Candidates::default();
    for r in rollups {
        if !period.contains(r.key.bucket_start) {
            continue;
        }
        let k = (r.key.deployment_id.as_str(), r.key.model.as_str());
        if last_key != Some(k) {
            last_cand = candidates
                .entry(k)
                .or_insert_with(|| Candidates::for_key(policies, k.0, k.1))
                .clone();
            last_key = Some(k);
        }
        let policy = last_cand.pick(policies, r.first_window_start);
        if r.first_window_start != r.last_window_start
            && last_cand.boundary_within(policies, r.first_window_start, r.last_window_start)
        {
            findings.push(Finding::PolicyBoundaryInsideRollup {
                deployment_id: r.key.deployment_id.clone(),
                gpu_uuid: r.key.gpu_uuid.clone(),
                bucket_start: r.key.bucket_start,
            });
        }
        let dep = deps.entry(k.0).or_default();
        dep.dedicated |= r.key.owner.is_some();
        let st = dep.stats.entry(policy).or_default();
        st.samples += r.samples;
        st.estimated_samples += r.estimated_samples;
        st.q.add(&r.q);
        st.gpus.insert(r.key.gpu_uuid.as_str());
        let b = dep.buckets.entry((r.key.owner, r.key.bucket_start.floor_to(bucket_ms).0)).or_default();
        b.measured_gpu_seconds += r.q.gpu_seconds;
        if let Some(p) = policy {
            match b.per_policy.iter_mut().find(|(i, _)| *i == p) {
                Some((_, q)) => q.add(&r.q),
                None => b.per_policy.push((p, r.q)),
            }
        }
    }

    // 2. Usage events that weigh shared buckets: deduplicated by event id, ours excluded.
    let mut latest: HashMap<Uuid, &UsageEvent> = HashMap::new();
    for e in usage {
        latest.insert(e.event_id, e);
    }
    let mut events: BTreeMap<&str, BTreeMap<i64, BTreeMap<TenantId, Claim>>> = BTreeMap::new();
    for e in latest.values() {
        let Some(d) = e.deployment_id.as_deref() else { continue };
        if e.source == ALLOCATION_SOURCE || !period.contains(e.occurred_at) {
            continue;
        }
        let c = events
            .entry(d)
            .or_default()
            .entry(e.occurred_at.floor_to(bucket_ms).0)
            .or_default()
            .entry(e.tenant_id)
            .or_default();
        match e.unit("gpu_seconds") {
            Some(gs) => c.gpu_seconds += gs,
            None => c.tokens += e.tokens(),
        }
    }

    // 3. Per deployment: price buckets, split them, spread idle, round once.
    let mut items = Vec::new();
    let mut rows = Vec::new();
    let mut daily = Vec::new();
    for (dep_id, dep) in &deps {
        let dep_events = events.get(dep_id);
        let mut parts: BTreeMap<(TenantId, usize), Part> = BTreeMap::new();
        let mut unalloc: BTreeMap<usize, Part> = BTreeMap::new();
        let mut days: BTreeMap<(Currency, i64), Decimal> = BTreeMap::new();
        let mut used_buckets: HashSet<i64> = HashSet::new();
        for ((owner, bucket), b) in &dep.buckets {
            let day = Timestamp(*bucket).floor_to(DAY_MS).0;
            let shares = match owner {
                Some(t) => vec![(*t, b.measured_gpu_seconds)],
                None => {
                    used_buckets.insert(*bucket);
                    match dep_events.and_then(|e| e.get(bucket)) {
                        Some(claims) => {
                            let (shares, over) = split(claims, b.measured_gpu_seconds);
                            if let Some(claimed) = over {
                                findings.push(Finding::OverAttribution {
                                    deployment_id: dep_id.to_string(),
                                    bucket_start: Timestamp(*bucket),
                                    claimed_gpu_seconds: claimed,
                                    measured_gpu_seconds: b.measured_gpu_seconds,
                                });
                            }
                            shares
                        }
                        None => Vec::new(),
                    }
                }
            };
            for (p, q) in &b.per_policy {
                let cost = price(&policies[*p], q);
                *days.entry((policies[*p].spec.currency, day)).or_default() += cost;
                let mut given = Part::default();
                for (t, a) in &shares {
                    let part = Part {
                        cost: cost * *a / b.measured_gpu_seconds,
                        q: q.scaled(*a, b.measured_gpu_seconds),
                    };
                    parts.entry((*t, *p)).or_default().add(part.cost, &part.q);
                    given.add(part.cost, &part.q);
                }
                let mut rest = *q;
                rest.sub(&given.q);
                unalloc.entry(*p).or_default().add(cost - given.cost, &rest);
            }
        }
        if let Some(evs) = dep_events {
            let orphan: u64 = evs
                .iter()
                .filter(|(b, _)| !used_buckets.contains(b))
                .map(|(_, claims)| claims.len() as u64)
                .sum();
            if orphan > 0 {
                findings.push(Finding::UsageWithoutSamples { deployment_id: dep_id.to_string(), events: orphan });
            }
        }
        spread_idle(policies, &mut parts, &mut unalloc);

        // Rows per currency.
        let mut currencies: Vec<Currency> = dep.stats.keys().flatten().map(|p| policies[*p].spec.currency).collect();
        currencies.sort();
        currencies.dedup();
        if currencies.len() > 1 {
            findings.push(Finding::MixedCurrency { deployment_id: dep_id.to_string() });
        }
        let unpriced = dep.stats.get(&None);
        if let Some(u) = unpriced {
            findings.push(Finding::Unpriced {
                deployment_id: dep_id.to_string(),
                samples: u.samples,
                gpu_seconds: report_quantity(u.q.gpu_seconds),
            });
        }
        let row_currencies: Vec<Option<Currency>> =
            if currencies.is_empty() { vec![None] } else { currencies.iter().copied().map(Some).collect() };
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
                unpriced_samples: if ri == 0 { unpriced.map_or(0, |u| u.samples) } else { 0 },
                unpriced_gpu_seconds: if ri == 0 {
                    unpriced.map_or(Decimal::ZERO, |u| report_quantity(u.q.gpu_seconds))
                } else {
                    Decimal::ZERO
                },
            };
            let mut gpus: HashSet<&str> = HashSet::new();
            let mut q = Quantities::default();
            for s in &row_stats {
                row.samples += s.samples;
                row.estimated_samples += s.estimated_samples;
                q.add(&s.q);
                gpus.extend(s.gpus.iter().copied());
            }
            row.gpus = gpus.len() as u64;
            row.gpu_seconds = report_quantity(q.gpu_seconds);
            row.estimated_gpu_seconds = report_quantity(q.estimated_gpu_seconds);
            row.busy_gpu_seconds = report_quantity(q.busy_gpu_seconds);
            row.gpu_memory_gb_seconds = report_quantity(q.memory_gb_seconds);
            row.energy_wh = report_quantity(q.energy_wh());
            if let Some(cur) = cur {
                round_row(*cur, dep_id, policies, &parts, &unalloc, &mut row, &mut items);
                let day_keys: Vec<i64> = days.keys().filter(|(c, _)| c == cur).map(|(_, d)| *d).collect();
                let quotas: Vec<Decimal> = day_keys.iter().map(|d| days[&(*cur, *d)]).collect();
                for (d, amount) in day_keys.iter().zip(apportion(row.cost, &quotas, cur.minor_unit())) {
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
    }

    let tenants = tenant_rows(&items, &rows);
    let mut gaps: Vec<Gap> = gaps.iter().filter(|g| g.from < period.to && g.to > period.from).cloned().collect();
    gaps.sort();
    items.sort_by(|a: &Item, b: &Item| {
        (&a.deployment_id, a.tenant_id, &a.policy_id).cmp(&(&b.deployment_id, b.tenant_id, &b.policy_id))
    });
    Allocation { from: period.from, to: period.to, items, deployments: rows, tenants, daily, gaps, findings }
}

/// Idle capacity under a `proportional` policy goes to the deployment's tenants in proportion to their
/// allocated cost; with no tenant it stays unallocated.
fn spread_idle(policies: &[Policy], parts: &mut BTreeMap<(TenantId, usize), Part>, unalloc: &mut BTreeMap<usize, Part>) {
    let mut weights: BTreeMap<TenantId, Decimal> = BTreeMap::new();
    for ((t, _), p) in parts.iter() {
        *weights.entry(*t).or_default() += p.cost;
    }
    let total: Decimal = weights.values().copied().sum();
    if total <= Decimal::ZERO {
        return;
    }
    for (p, idle) in unalloc.iter_mut() {
        if policies[*p].spec.idle_capacity != IdleCapacity::Proportional {
            continue;
        }
        let n = weights.len();
        let mut left = *idle;
        for (i, (t, w)) in weights.iter().enumerate() {
            // The last tenant takes the remainder, so that nothing is left over by division.
            let share = if i + 1 == n { left } else { Part { cost: idle.cost * *w / total, q: idle.q.scaled(*w, total) } };
            parts.entry((*t, *p)).or_default().add(share.cost, &share.q);
            left.cost -= share.cost;
            left.q.sub(&share.q);
        }
        *idle = Part::default();
    }
}

/// Rounds a (deployment, currency) row once and apportions it between its tenants' items and unallocated.
fn round_row(
    cur: Currency,
    dep_id: &str,
    policies: &[Policy],
    parts: &BTreeMap<(TenantId, usize), Part>,
    unalloc: &BTreeMap<usize, Part>,
    row: &mut DeploymentRow,
    items: &mut Vec<Item>,
) {
    let in_cur = |p: usize| policies[p].spec.currency == cur;
    let tenant_parts: Vec<(&(TenantId, usize), &Part)> = parts.iter().filter(|((_, p), _)| in_cur(*p)).collect();
    let idle_parts: Vec<&Part> = unalloc.iter().filter(|(p, _)| in_cur(**p)).map(|(_, part)| part).collect();
    let quotas: Vec<Decimal> = tenant_parts
        .iter()
        .map(|(_, p)| p.cost)
        .chain(idle_parts.iter().map(|p| p.cost))
        .map(|c| c.max(Decimal::ZERO))
        .collect();
    let exact: Decimal = tenant_parts.iter().map(|(_, p)| p.cost).chain(idle_parts.iter().map(|p| p.cost)).sum();
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
            gpu_seconds: report_quantity(part.q.gpu_seconds),
            gpu_memory_gb_seconds: report_quantity(part.q.memory_gb_seconds),
            energy_wh: report_quantity(part.q.energy_wh()),
            allocated: Money { amount: *amount, currency: cur },
        });
    }
}

fn tenant_rows(items: &[Item], rows: &[DeploymentRow]) -> Vec<TenantRow> {
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
            let share = if total > Decimal::ZERO { (cost / total).round_dp(4) } else { Decimal::ZERO };
            TenantRow { tenant_id: t, currency: c, gpu_seconds: report_quantity(gs), share, cost }
        })
        .collect()
}

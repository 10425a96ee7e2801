//! TEMPORARY reference copy of the original allocation, for differential checks only. DELETE.
#![allow(dead_code, clippy::all)]
use crate::domain::{IdleCapacity, Policy, TenantId};
use rust_decimal::Decimal;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::allocate::{claim_of, AllocationInput, Period};
use crate::money::{apportion, Currency, Money};
use crate::policy::Candidates;
use crate::report::{Allocation, DailyCost, DeploymentRow, Finding, Gap, Item, TenantRow};
use crate::rollup::{GpuSet, Quantities, Rollup, CELL_DP};
use crate::time::Timestamp;
const DAY_MS: i64 = 86_400_000;
#[derive(Debug, Clone, Copy)]
struct Rates {
    gpu: Decimal,
    energy: Decimal,
    storage: Decimal,
}

impl Rates {
    const DENOMINATOR: i64 = 64_800_000;

    fn of(policy: &Policy) -> Self {
        let s = &policy.spec;
        Rates {
            // 64.8e6 / 360,000 = 180 (GPU-seconds x hourly x (100 + overhead%) / 360,000)
            gpu: s.gpu_hourly_cost.get()
                * (Decimal::ONE_HUNDRED + s.overhead_pct.get())
                * Decimal::from(180),
            // 64.8e6 / 3.6e6 = 18 (watt-seconds -> kWh)
            energy: s.pue.get() * s.energy_kwh_price.get() * Decimal::from(18),
            // 64.8e6 / 2,592,000 = 25 (GB-seconds -> GB-months of 30 days)
            storage: s.storage_gb_month_price.get() * Decimal::from(25),
        }
    }

    fn price(&self, q: &Quantities) -> Decimal {
        let mut n = self.gpu * q.gpu_seconds;
        if !self.energy.is_zero() {
            n += self.energy * q.energy_ws;
        }
        if !self.storage.is_zero() {
            n += self.storage * q.storage_gb_seconds;
        }
        n / Decimal::from(Self::DENOMINATOR)
    }
}
/// hot loop adds integers. Exact: cells never carry more than 15 places.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    gs: i128,
    busy: i128,
    est: i128,
    mem: i128,
    ews: i128,
    storage: i128,
}

const POW10: [i128; 16] = {
    let mut t = [1i128; 16];
    let mut i = 1;
    while i < 16 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

fn to_fixed(d: Decimal) -> i128 {
    let d = if d.scale() > CELL_DP {
        d.round_dp(CELL_DP)
    } else {
        d
    };
    d.mantissa() * POW10[(CELL_DP - d.scale()) as usize]
}

fn from_fixed(mut v: i128) -> Decimal {
    let mut scale = CELL_DP;
    loop {
        if let Ok(d) = Decimal::try_from_i128_with_scale(v, scale) {
            return d;
        }
        // Beyond 28 digits (never for a real fleet): drop the least significant place.
        if scale == 0 {
            return Decimal::MAX;
        }
        v /= 10;
        scale -= 1;
    }
}

impl Acc {
    fn add(&mut self, q: &Quantities) {
        self.gs += to_fixed(q.gpu_seconds);
        self.busy += to_fixed(q.busy_gpu_seconds);
        self.est += to_fixed(q.estimated_gpu_seconds);
        self.mem += to_fixed(q.memory_gb_seconds);
        self.ews += to_fixed(q.energy_ws);
        self.storage += to_fixed(q.storage_gb_seconds);
    }

    fn merge(&mut self, o: &Acc) {
        self.gs += o.gs;
        self.busy += o.busy;
        self.est += o.est;
        self.mem += o.mem;
        self.ews += o.ews;
        self.storage += o.storage;
    }

    fn quantities(&self) -> Quantities {
        Quantities {
            gpu_seconds: from_fixed(self.gs),
            busy_gpu_seconds: from_fixed(self.busy),
            estimated_gpu_seconds: from_fixed(self.est),
            memory_gb_seconds: from_fixed(self.mem),
            energy_ws: from_fixed(self.ews),
            storage_gb_seconds: from_fixed(self.storage),
        }
    }
}

#[derive(Debug, Default)]
struct Stats<'a> {
    samples: u64,
    estimated_samples: u64,
    q: Acc,
    gpus: HashSet<&'a str>,
    last_gpu: &'a str,
    /// The GPU set of the last group rollup added (group rollups of consecutive hours share one).
    last_set: Option<&'a GpuSet>,
}

#[derive(Debug, Default, Clone)]
struct Bucket {
    measured: i128,
    per_policy: Vec<(usize, Acc)>,
}

#[derive(Debug)]
struct Dep<'a> {
    id: &'a str,
    dedicated: bool,
    /// Keyed by pricing policy; `None`: unpriced.
    stats: Vec<(Option<usize>, Stats<'a>)>,
    /// Per owner (None: shared), one bucket per allocation bucket of the period.
    owners: Vec<(Option<TenantId>, Vec<Bucket>)>,
    /// Usage claims on it: (bucket index, tenant, claim), sorted and merged.
    events: Vec<(usize, TenantId, Claim)>,
}

/// Sorts claims by (bucket, tenant) and adds up those of the same tenant and bucket.
fn merge_claims(mut evs: Vec<(usize, TenantId, Claim)>) -> Vec<(usize, TenantId, Claim)> {
    evs.sort_by_key(|e| (e.0, e.1));
    let mut out: Vec<(usize, TenantId, Claim)> = Vec::with_capacity(evs.len());
    for (b, t, c) in evs {
        match out.last_mut() {
            Some((lb, lt, lc)) if *lb == b && *lt == t => {
                lc.gpu_seconds += c.gpu_seconds;
                lc.tokens += c.tokens;
            }
            _ => out.push((b, t, c)),
        }
    }
    out
}

/// An exact amount of money and the quantities an item shows.
#[derive(Debug, Clone, Copy, Default)]
struct Part {
    cost: Decimal,
    gpu_seconds: Decimal,
    memory_gb_seconds: Decimal,
    energy_ws: Decimal,
}

/// Adds to the part of `key`, in a short list (a deployment has few tenants and policies).
fn add_part(parts: &mut Vec<((TenantId, usize), Part)>, key: (TenantId, usize), part: &Part) {
    match parts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, p)) => p.add(part),
        None => parts.push((key, *part)),
    }
}

impl Part {
    fn of(cost: Decimal, q: &Quantities) -> Part {
        Part {
            cost,
            gpu_seconds: q.gpu_seconds,
            memory_gb_seconds: q.memory_gb_seconds,
            energy_ws: q.energy_ws,
        }
    }

    fn add(&mut self, o: &Part) {
        self.cost += o.cost;
        self.gpu_seconds += o.gpu_seconds;
        self.memory_gb_seconds += o.memory_gb_seconds;
        self.energy_ws += o.energy_ws;
    }

    fn sub(&mut self, o: &Part) {
        self.cost -= o.cost;
        self.gpu_seconds -= o.gpu_seconds;
        self.memory_gb_seconds -= o.memory_gb_seconds;
        self.energy_ws -= o.energy_ws;
    }

    /// This part times `f`.
    fn times(&self, f: Decimal) -> Part {
        Part {
            cost: self.cost * f,
            gpu_seconds: self.gpu_seconds * f,
            memory_gb_seconds: self.memory_gb_seconds * f,
            energy_ws: self.energy_ws * f,
        }
    }
}

/// Per tenant: GPU-seconds claimed by events that carry them, and tokens of those that do not.
#[derive(Debug, Default, Clone, Copy)]
struct Claim {
    gpu_seconds: Decimal,
    tokens: Decimal,
}

/// Splits a bucket's measured GPU-seconds between tenants. Claims in GPU-seconds come first (scaled down if
/// they exceed what was measured); tokens then weigh what is left. Returns each tenant's fraction of the
/// bucket (they sum to at most 1) and, if the claims were scaled, what was claimed.
fn split(
    claims: &[(TenantId, Claim)],
    measured: Decimal,
) -> (Vec<(TenantId, Decimal)>, Option<Decimal>) {
    let claimed: Decimal = claims.iter().map(|(_, c)| c.gpu_seconds).sum();
    let tokens: Decimal = claims.iter().map(|(_, c)| c.tokens).sum();
    let over = claimed > measured;
    // Fraction of the bucket left to tokens after the GPU-second claims.
    let token_part = if over || tokens.is_zero() {
        Decimal::ZERO
    } else {
        (measured - claimed) / measured
    };
    let fractions = claims
        .iter()
        .map(|(t, c)| {
            let mut f = if over {
                c.gpu_seconds / claimed
            } else if c.gpu_seconds.is_zero() {
                Decimal::ZERO
            } else {
                c.gpu_seconds / measured
            };
            if !token_part.is_zero() && !c.tokens.is_zero() {
                f += if token_part == Decimal::ONE {
                    c.tokens / tokens
                } else {
                    token_part * c.tokens / tokens
                };
            }
            (*t, f)
        })
        .filter(|(_, f)| *f > Decimal::ZERO)
        .collect();
    (fractions, over.then_some(claimed))
}

fn report_quantity(d: Decimal) -> Decimal {
    d.round_dp(6).normalize()
}

/// Below this many rollups the accumulation runs on one thread (threads cost more than they save).
const PARALLEL_MIN_ROLLUPS: usize = 100_000;
/// Below this many (deployment, owner) buckets the settlement runs on one thread.
const PARALLEL_MIN_BUCKETS: usize = 5_000;

/// What every step reads.
#[derive(Debug)]
struct Ctx<'a> {
    period: Period,
    bucket_ms: i64,
    n_buckets: usize,
    policies: &'a [Policy],
    rates: Vec<Rates>,
}

/// Allocates a period. Pure: the same input gives the same answer, whatever the order of rollups and events.
/// Large inputs are accumulated and settled on the machine's cores (scoped threads; the result does not depend
/// on how the work was split: sums are exact integers and each deployment is settled alone).
pub fn allocate(input: &AllocationInput<'_>) -> Allocation {
    let AllocationInput {
        period,
        rollups,
        usage,
        policies,
        claims,
        gaps,
        config,
    } = *input;
    let bucket_ms = config.bucket_ms;
    let ctx = Ctx {
        period,
        bucket_ms,
        n_buckets: usize::try_from((period.to.0 - period.from.0 + bucket_ms - 1) / bucket_ms)
            .unwrap_or(0),
        policies,
        rates: policies.iter().map(Rates::of).collect(),
    };
    let cores = || {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
    };
    let threads = if config.threads > 0 {
        config.threads
    } else if rollups.len() >= PARALLEL_MIN_ROLLUPS {
        cores()
    } else {
        1
    };

    // 1. Accumulate rollups per deployment, owner, bucket and pricing policy, in fixed point.
    let (mut deps, mut findings) = if threads > 1 {
        let chunk = rollups.len().div_ceil(threads).max(1);
        let parts: Vec<(Vec<Dep<'_>>, Vec<Finding>)> = std::thread::scope(|s| {
            let handles: Vec<_> = rollups
                .chunks(chunk)
                .map(|c| s.spawn(|| accumulate(&ctx, c)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let mut deps: Vec<Dep<'_>> = Vec::new();
        let mut findings = Vec::new();
        for (d, f) in parts {
            deps = merge_deps(deps, d);
            findings.extend(f);
        }
        (deps, findings)
    } else {
        accumulate(&ctx, rollups)
    };
    findings.sort_by_key(finding_order);
    let dep_index: HashMap<&str, usize> = deps.iter().enumerate().map(|(i, d)| (d.id, i)).collect();

    // 2. Usage events that weigh shared buckets: deduplicated by event id (the last given wins), ours excluded,
    // grouped per measured deployment as (bucket, tenant) claims; then the claims summed already.
    // Sort (id, position) pairs held inline: sorting indices through the events would chase pointers.
    let mut order: Vec<(u128, usize)> = usage
        .iter()
        .enumerate()
        .map(|(i, e)| (e.event_id.as_u128(), i))
        .collect();
    order.sort_unstable();
    let mut superseded = vec![false; usage.len()];
    for w in order.windows(2) {
        if w[0].0 == w[1].0 {
            superseded[w[0].1] = true; // re-sent later in the input: that one replaces this one
        }
    }
    let mut dep_events: Vec<Vec<(usize, TenantId, Claim)>> = vec![Vec::new(); deps.len()];
    let mut add_claim = |d: &str, at: Timestamp, tenant: TenantId, claim: Claim| {
        if !period.contains(at) {
            return;
        }
        let Some(&di) = dep_index.get(d) else {
            return;
        };
        let bi = usize::try_from((at.0 - period.from.0) / bucket_ms).unwrap_or(0);
        dep_events[di].push((bi, tenant, claim));
    };
    // In input order: the events' fields live on the heap in that order.
    for (e, _) in usage.iter().zip(&superseded).filter(|(_, s)| !**s) {
        if let Some(c) = claim_of(e) {
            let claim = Claim {
                gpu_seconds: c.gpu_seconds,
                tokens: c.tokens,
            };
            add_claim(&c.deployment_id, e.occurred_at, c.tenant_id, claim);
        }
    }
    for c in claims {
        let claim = Claim {
            gpu_seconds: c.gpu_seconds,
            tokens: c.tokens,
        };
        add_claim(&c.deployment_id, c.bucket_start, c.tenant_id, claim);
    }
    for (d, evs) in deps.iter_mut().zip(dep_events) {
        d.events = merge_claims(evs);
    }
    deps.sort_by(|a, b| a.id.cmp(b.id));
    for d in &mut deps {
        d.owners.sort_by_key(|o| o.0);
        d.stats.sort_by_key(|st| st.0);
    }

    // 3. Per deployment: price buckets, split them, spread idle, round once.
    // Settling grows with deployment-buckets, not rollups: group rollups make few rollups and much to settle.
    let buckets: usize = deps.iter().map(|d| d.owners.len() * ctx.n_buckets).sum();
    let settle_threads = if config.threads > 0 {
        config.threads
    } else if buckets >= PARALLEL_MIN_BUCKETS {
        cores()
    } else {
        1
    };
    let settled: Vec<Settled> = if settle_threads > 1 && deps.len() > 1 {
        // Interleaved, so that each thread gets a fair share of shared (costly) and dedicated deployments.
        let chunks: Vec<Vec<(usize, &Dep<'_>)>> = (0..settle_threads)
            .map(|k| {
                deps.iter()
                    .enumerate()
                    .skip(k)
                    .step_by(settle_threads)
                    .collect()
            })
            .collect();
        let mut done: Vec<(usize, Settled)> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .iter()
                .map(|c| {
                    s.spawn(|| {
                        c.iter()
                            .map(|(i, d)| (*i, settle(&ctx, d)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        // Back in deployment order: the answer does not depend on the threads.
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, s)| s).collect()
    } else {
        deps.iter().map(|d| settle(&ctx, d)).collect()
    };
    let mut items = Vec::new();
    let mut rows = Vec::new();
    let mut daily = Vec::new();
    for s in settled {
        items.extend(s.items);
        rows.extend(s.rows);
        daily.extend(s.daily);
        findings.extend(s.findings);
    }

    let tenants = tenant_rows(&items, &rows);
    let mut gaps: Vec<Gap> = gaps
        .iter()
        .filter(|g| g.from < period.to && g.to > period.from)
        .cloned()
        .collect();
    gaps.sort();
    items.sort_by(|a: &Item, b: &Item| {
        (&a.deployment_id, a.tenant_id, &a.policy_id).cmp(&(
            &b.deployment_id,
            b.tenant_id,
            &b.policy_id,
        ))
    });
    Allocation {
        from: period.from,
        to: period.to,
        items,
        deployments: rows,
        tenants,
        daily,
        gaps,
        findings,
    }
}

/// Findings of the accumulation sorted independently of the order of the rollups.
fn finding_order(f: &Finding) -> (String, String, i64) {
    match f {
        Finding::PolicyBoundaryInsideRollup {
            deployment_id,
            gpu_uuid,
            bucket_start,
        } => (deployment_id.clone(), gpu_uuid.clone(), bucket_start.0),
        other => (other.code().to_string(), String::new(), 0),
    }
}

/// Sums one slice of rollups. Deployments come back in first-seen order.
fn accumulate<'a>(ctx: &Ctx<'_>, rollups: &'a [Rollup]) -> (Vec<Dep<'a>>, Vec<Finding>) {
    let (period, bucket_ms, n_buckets, policies) =
        (ctx.period, ctx.bucket_ms, ctx.n_buckets, ctx.policies);
    let mut findings = Vec::new();
    let mut deps: Vec<Dep<'a>> = Vec::new();
    let mut dep_index: HashMap<&str, usize> = HashMap::new();
    let mut candidates: HashMap<(&str, &str), Candidates> = HashMap::new();
    let mut last: Option<(&str, &str, usize, Candidates)> = None;
    for r in rollups {
        if !period.contains(r.key.bucket_start) {
            continue;
        }
        let (dep_id, model) = (r.key.deployment_id.as_str(), r.key.model.as_str());
        let (di, cand) = match &last {
            Some((d, m, di, c)) if *d == dep_id && *m == model => (*di, c),
            _ => {
                let c = candidates
                    .entry((dep_id, model))
                    .or_insert_with(|| Candidates::for_key(policies, dep_id, model))
                    .clone();
                let di = *dep_index.entry(dep_id).or_insert_with(|| {
                    deps.push(Dep {
                        id: dep_id,
                        dedicated: false,
                        stats: Vec::new(),
                        owners: Vec::new(),
                        events: Vec::new(),
                    });
                    deps.len() - 1
                });
                last = Some((dep_id, model, di, c));
                match &last {
                    Some((_, _, di, c)) => (*di, c),
                    None => continue,
                }
            }
        };
        let policy = cand.pick(policies, r.first_window_start);
        if r.first_window_start != r.last_window_start
            && cand.boundary_within(policies, r.first_window_start, r.last_window_start)
        {
            findings.push(Finding::PolicyBoundaryInsideRollup {
                deployment_id: r.key.deployment_id.clone(),
                gpu_uuid: r.key.gpu_uuid.clone(),
                bucket_start: r.key.bucket_start,
            });
        }
        let dep = &mut deps[di];
        dep.dedicated |= r.key.owner.is_some();
        let si = match dep.stats.iter().position(|(p, _)| *p == policy) {
            Some(i) => i,
            None => {
                dep.stats.push((policy, Stats::default()));
                dep.stats.len() - 1
            }
        };
        let st = &mut dep.stats[si].1;
        st.samples += r.samples;
        st.estimated_samples += r.estimated_samples;
        let mut acc = Acc::default();
        acc.add(&r.q);
        st.q.merge(&acc);
        match &r.gpus {
            Some(set) => {
                if !st.last_set.is_some_and(|l| std::sync::Arc::ptr_eq(l, set)) {
                    st.gpus.extend(set.iter().map(|g| &**g));
                    st.last_set = Some(set);
                }
            }
            None => {
                if st.last_gpu != r.key.gpu_uuid {
                    st.gpus.insert(r.key.gpu_uuid.as_str());
                    st.last_gpu = r.key.gpu_uuid.as_str();
                }
            }
        }
        let oi = match dep.owners.iter().position(|(o, _)| *o == r.key.owner) {
            Some(i) => i,
            None => {
                dep.owners
                    .push((r.key.owner, vec![Bucket::default(); n_buckets]));
                dep.owners.len() - 1
            }
        };
        let bi = usize::try_from((r.key.bucket_start.0 - period.from.0) / bucket_ms).unwrap_or(0);
        let Some(b) = dep.owners[oi].1.get_mut(bi) else {
            continue;
        };
        b.measured += acc.gs;
        if let Some(p) = policy {
            match b.per_policy.iter_mut().find(|(i, _)| *i == p) {
                Some((_, q)) => q.merge(&acc),
                None => b.per_policy.push((p, acc)),
            }
        }
    }
    (deps, findings)
}

/// Adds the sums of `b` into `a` (exact: integer sums and set unions).
fn merge_deps<'a>(mut a: Vec<Dep<'a>>, b: Vec<Dep<'a>>) -> Vec<Dep<'a>> {
    for d in b {
        let Some(t) = a.iter_mut().find(|x| x.id == d.id) else {
            a.push(d);
            continue;
        };
        t.dedicated |= d.dedicated;
        for (p, st) in d.stats {
            match t.stats.iter_mut().find(|(q, _)| *q == p) {
                Some((_, ts)) => {
                    ts.samples += st.samples;
                    ts.estimated_samples += st.estimated_samples;
                    ts.q.merge(&st.q);
                    ts.gpus.extend(st.gpus);
                }
                None => t.stats.push((p, st)),
            }
        }
        for (owner, buckets) in d.owners {
            match t.owners.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, tb)) => {
                    for (x, y) in tb.iter_mut().zip(buckets) {
                        x.measured += y.measured;
                        for (p, acc) in y.per_policy {
                            match x.per_policy.iter_mut().find(|(q, _)| *q == p) {
                                Some((_, xa)) => xa.merge(&acc),
                                None => x.per_policy.push((p, acc)),
                            }
                        }
                    }
                }
                None => t.owners.push((owner, buckets)),
            }
        }
    }
    a
}

/// One deployment, priced, split, rounded.
#[derive(Debug, Default)]
struct Settled {
    items: Vec<Item>,
    rows: Vec<DeploymentRow>,
    daily: Vec<DailyCost>,
    findings: Vec<Finding>,
}

fn settle(ctx: &Ctx<'_>, dep: &Dep<'_>) -> Settled {
    let (period, bucket_ms, policies, rates) =
        (ctx.period, ctx.bucket_ms, ctx.policies, &ctx.rates);
    let mut out = Settled::default();
    let (items, rows, daily, findings) = (
        &mut out.items,
        &mut out.rows,
        &mut out.daily,
        &mut out.findings,
    );
    let dep_id = dep.id;
    let mut parts: Vec<((TenantId, usize), Part)> = Vec::new();
    let mut unalloc: BTreeMap<usize, Part> = BTreeMap::new();
    let mut days: BTreeMap<(Currency, i64), Decimal> = BTreeMap::new();
    let mut orphan_events = 0u64;
    let mut cursor = 0usize;
    for (owner, buckets) in &dep.owners {
        if let Some(t) = owner {
            // Dedicated: everything to the owner; priced per day (cost is linear in the quantities).
            let mut per_day: BTreeMap<(i64, usize), Acc> = BTreeMap::new();
            for (bi, b) in buckets.iter().enumerate() {
                let day = Timestamp(period.from.0 + bi as i64 * bucket_ms)
                    .floor_to(DAY_MS)
                    .0;
                for (p, acc) in &b.per_policy {
                    per_day.entry((day, *p)).or_default().merge(acc);
                }
            }
            for ((day, p), acc) in per_day {
                let q = acc.quantities();
                let part = Part::of(rates[p].price(&q), &q);
                *days.entry((policies[p].spec.currency, day)).or_default() += part.cost;
                add_part(&mut parts, (*t, p), &part);
            }
            continue;
        }
        for (bi, b) in buckets.iter().enumerate() {
            // The claims of this bucket (events are sorted by bucket).
            let start = cursor;
            while cursor < dep.events.len() && dep.events[cursor].0 <= bi {
                cursor += 1;
            }
            let claims: Vec<(TenantId, Claim)> = dep.events[start..cursor]
                .iter()
                .filter(|e| e.0 == bi)
                .map(|e| (e.1, e.2))
                .collect();
            if b.measured == 0 {
                orphan_events += claims.len() as u64;
                continue;
            }
            let bucket = period.from.0 + bi as i64 * bucket_ms;
            let day = Timestamp(bucket).floor_to(DAY_MS).0;
            let measured = from_fixed(b.measured);
            let fractions = if claims.is_empty() {
                Vec::new()
            } else {
                let (fractions, over) = split(&claims, measured);
                if let Some(claimed) = over {
                    findings.push(Finding::OverAttribution {
                        deployment_id: dep_id.to_string(),
                        bucket_start: Timestamp(bucket),
                        claimed_gpu_seconds: claimed,
                        measured_gpu_seconds: measured,
                    });
                }
                fractions
            };
            for (p, acc) in &b.per_policy {
                let q = acc.quantities();
                let whole = Part::of(rates[*p].price(&q), &q);
                *days.entry((policies[*p].spec.currency, day)).or_default() += whole.cost;
                let mut rest = whole;
                for (t, f) in &fractions {
                    let part = whole.times(*f);
                    add_part(&mut parts, (*t, *p), &part);
                    rest.sub(&part);
                }
                unalloc.entry(*p).or_default().add(&rest);
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
    let mut parts: BTreeMap<(TenantId, usize), Part> = parts.into_iter().collect();
    spread_idle(policies, &mut parts, &mut unalloc);

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
            round_row(*cur, dep_id, policies, &parts, &unalloc, &mut row, items);
            let day_keys: Vec<i64> = days
                .keys()
                .filter(|(c, _)| c == cur)
                .map(|(_, d)| *d)
                .collect();
            let quotas: Vec<Decimal> = day_keys.iter().map(|d| days[&(*cur, *d)]).collect();
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

/// Idle capacity under a `proportional` policy goes to the deployment's tenants in proportion to their
/// allocated cost; with no tenant it stays unallocated.
fn spread_idle(
    policies: &[Policy],
    parts: &mut BTreeMap<(TenantId, usize), Part>,
    unalloc: &mut BTreeMap<usize, Part>,
) {
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
            let share = if i + 1 == n {
                left
            } else {
                idle.times(*w / total)
            };
            parts.entry((*t, *p)).or_default().add(&share);
            left.sub(&share);
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
    let tenant_parts: Vec<(&(TenantId, usize), &Part)> =
        parts.iter().filter(|((_, p), _)| in_cur(*p)).collect();
    let idle_parts: Vec<&Part> = unalloc
        .iter()
        .filter(|(p, _)| in_cur(**p))
        .map(|(_, part)| part)
        .collect();
    let quotas: Vec<Decimal> = tenant_parts
        .iter()
        .map(|(_, p)| p.cost)
        .chain(idle_parts.iter().map(|p| p.cost))
        .map(|c| c.max(Decimal::ZERO))
        .collect();
    let exact: Decimal = tenant_parts
        .iter()
        .map(|(_, p)| p.cost)
        .chain(idle_parts.iter().map(|p| p.cost))
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

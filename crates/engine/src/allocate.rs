//! The allocation: rollups + usage events + policies -> exact, reconciled costs per deployment and tenant.
//!
//! Preconditions (never checked by panicking): rollups are cut at `bucket_ms` multiples of the allocation
//! bucket or finer; policies are stored policies. Postconditions, for every (deployment, currency) row:
//! `allocated + unallocated == cost` and the items of the row sum to `allocated`, to the minor unit.

use std::collections::{BTreeMap, HashMap, HashSet};

use rust_decimal::Decimal;

use crate::decimal_ops;
use crate::domain::{is_platform_record, IdleCapacity, Policy, Sample, TenantId, UsageEvent};
use crate::error::FieldError;
use crate::money::{apportion, Currency, Money};
use crate::policy::Candidates;
use crate::report::{Allocation, DailyCost, DeploymentRow, Finding, Gap, Item, TenantRow};
use crate::rollup::{GpuSet, Quantities, Rollup, CELL_DP};
use crate::series::{self, SeriesConfig};
use crate::time::Timestamp;

const DAY_MS: i64 = 86_400_000;

/// How usage is split in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationConfig {
    /// Shared deployments are split per bucket of this length, aligned to UTC. Default 1 hour.
    pub bucket_ms: i64,
    /// Threads to use: 0 = the machine's cores for large inputs, one thread for small ones.
    pub threads: usize,
}

impl Default for AllocationConfig {
    fn default() -> Self {
        AllocationConfig {
            bucket_ms: 3_600_000,
            threads: 0,
        }
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
        Ok(Period {
            from: from.floor_to(bucket_ms),
            to: to.ceil_to(bucket_ms),
        })
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
    /// Usage already summed per (deployment, tenant, hour) with [`claim_of`] (what the store keeps as events
    /// arrive): added to the claims of `usage`. Never the same events as `usage`.
    pub claims: &'a [UsageClaim],
    /// Gaps of the series (from [`series::cells`] or the store); those that touch the period are reported.
    pub gaps: &'a [Gap],
    pub config: AllocationConfig,
}

/// What usage events claim on a shared deployment in one hour, per tenant. The split of a shared bucket weighs
/// GPU-seconds claimed first, then tokens (see `split`); an hour's claims of a tenant add up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageClaim {
    pub deployment_id: String,
    pub tenant_id: TenantId,
    /// The hour (UTC) in which the events occurred.
    pub bucket_start: Timestamp,
    /// GPU-seconds of the events that carry a `gpu_seconds` unit.
    pub gpu_seconds: Decimal,
    /// Tokens (`tokens_in + tokens_out`) of the events that carry no `gpu_seconds` unit.
    pub tokens: Decimal,
}

/// Hours: claims are kept per hour, allocation buckets are whole hours.
pub const CLAIM_BUCKET_MS: i64 = 3_600_000;

/// The claim one event makes, or `None` when it weighs no split: no deployment, or written by the allocation
/// itself. Summing the claims of distinct events per (deployment, tenant, hour) gives what [`allocate`] reads
/// from `usage` (where an event re-sent with the same id replaces the earlier one).
pub fn claim_of(e: &UsageEvent) -> Option<UsageClaim> {
    let (deployment_id, claim) = event_claim(e)?;
    Some(UsageClaim {
        deployment_id: deployment_id.to_string(),
        tenant_id: e.tenant_id,
        bucket_start: e.occurred_at.floor_to(CLAIM_BUCKET_MS),
        gpu_seconds: claim.gpu_seconds,
        tokens: claim.tokens,
    })
}

/// The deployment and claim of [`claim_of`], borrowed: the allocation reads every event, and copying each
/// one's deployment id would cost an allocation per event.
fn event_claim(e: &UsageEvent) -> Option<(&str, Claim)> {
    let deployment_id = e.deployment_id.as_deref()?;
    if is_platform_record(&e.source) {
        return None;
    }
    let claim = match e.unit("gpu_seconds") {
        Some(gpu_seconds) => Claim {
            gpu_seconds,
            tokens: Decimal::ZERO,
        },
        None => Claim {
            gpu_seconds: Decimal::ZERO,
            tokens: e.tokens(),
        },
    };
    Some((deployment_id, claim))
}

/// The claims of events summed per (deployment, tenant, hour), an event re-sent with the same id counted once
/// (the last given wins): what a store keeps, computed at once. Sorted by (deployment, hour, tenant).
pub fn sum_claims(events: &[UsageEvent]) -> Vec<UsageClaim> {
    let mut last: HashMap<uuid::Uuid, &UsageEvent> = HashMap::with_capacity(events.len());
    for e in events {
        last.insert(e.event_id, e);
    }
    let mut sums: BTreeMap<(String, Timestamp, TenantId), UsageClaim> = BTreeMap::new();
    for c in last.values().filter_map(|e| claim_of(e)) {
        match sums.get_mut(&(c.deployment_id.clone(), c.bucket_start, c.tenant_id)) {
            Some(s) => {
                s.gpu_seconds += c.gpu_seconds;
                s.tokens += c.tokens;
            }
            None => {
                sums.insert((c.deployment_id.clone(), c.bucket_start, c.tenant_id), c);
            }
        }
    }
    sums.into_values().collect()
}

/// The cost of quantities under a policy, exact:
/// GPU time with overhead + energy with PUE + storage GB-months (a month is 30 days).
///
/// That is `gpu_hourly_cost x gpu_seconds/3600 x (1 + overhead/100)`, plus `energy_ws/3.6e6 x pue x kwh_price`,
/// plus `storage_gb_seconds/2_592_000 x gb_month_price`, computed over the common denominator 64,800,000 so
/// that the only inexact step is one final division.
pub fn price(policy: &Policy, q: &Quantities) -> Decimal {
    Rates::of(policy).price(q)
}

/// A policy's prices over the common denominator of [`price`].
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
        self.price_of(q.gpu_seconds, q.energy_ws, q.storage_gb_seconds)
    }

    /// [`Rates::price`] of the three quantities it reads.
    fn price_of(
        &self,
        gpu_seconds: Decimal,
        energy_ws: Decimal,
        storage_gb_seconds: Decimal,
    ) -> Decimal {
        let mut n = self.gpu * gpu_seconds;
        if !self.energy.is_zero() {
            n += self.energy * energy_ws;
        }
        if !self.storage.is_zero() {
            n += self.storage * storage_gb_seconds;
        }
        n / Decimal::from(Self::DENOMINATOR)
    }
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
    let mut a = allocate(&AllocationInput {
        period,
        rollups: &out.cells,
        usage,
        policies,
        claims: &[],
        gaps: &out.gaps,
        config,
    });
    a.findings.extend(out.findings);
    a
}

/// Fixed-point accumulator of [`Quantities`]: every field in units of 10^-15 ([`CELL_DP`] places), so that the
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

    /// The priced part of these sums: the cost [`Rates::price`] gives [`Acc::quantities`] and the quantities an
    /// item shows, converting only the four quantities these read.
    fn priced(&self, rates: &Rates) -> Part {
        let (gpu_seconds, energy_ws) = (from_fixed(self.gs), from_fixed(self.ews));
        Part {
            cost: rates.price_of(gpu_seconds, energy_ws, from_fixed(self.storage)),
            gpu_seconds,
            memory_gb_seconds: from_fixed(self.mem),
            energy_ws,
        }
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
    per_policy: PolicySums,
}

/// The sums of one bucket per pricing policy, in the order first seen. A bucket nearly always has one policy:
/// it is kept inline, so that a bucket costs no allocation of its own.
#[derive(Debug, Default, Clone)]
struct PolicySums {
    first: Option<(usize, Acc)>,
    more: Vec<(usize, Acc)>,
}

impl PolicySums {
    fn add(&mut self, p: usize, acc: &Acc) {
        match &mut self.first {
            None => self.first = Some((p, *acc)),
            Some((f, sum)) if *f == p => sum.merge(acc),
            Some(_) => match self.more.iter_mut().find(|(i, _)| *i == p) {
                Some((_, sum)) => sum.merge(acc),
                None => self.more.push((p, *acc)),
            },
        }
    }

    fn iter(&self) -> impl Iterator<Item = &(usize, Acc)> {
        self.first.iter().chain(&self.more)
    }
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
    // Parts are split by 28-digit fractions and summed over the period: nearly every operation here rounds, so
    // they go through `decimal_ops` (the same results as `Decimal`'s operators, faster when rounding).

    fn add(&mut self, o: &Part) {
        self.cost = decimal_ops::add(self.cost, o.cost);
        self.gpu_seconds = decimal_ops::add(self.gpu_seconds, o.gpu_seconds);
        self.memory_gb_seconds = decimal_ops::add(self.memory_gb_seconds, o.memory_gb_seconds);
        self.energy_ws = decimal_ops::add(self.energy_ws, o.energy_ws);
    }

    fn sub(&mut self, o: &Part) {
        self.cost = decimal_ops::sub(self.cost, o.cost);
        self.gpu_seconds = decimal_ops::sub(self.gpu_seconds, o.gpu_seconds);
        self.memory_gb_seconds = decimal_ops::sub(self.memory_gb_seconds, o.memory_gb_seconds);
        self.energy_ws = decimal_ops::sub(self.energy_ws, o.energy_ws);
    }

    /// This part times `f`.
    fn times(&self, f: Decimal) -> Part {
        Part {
            cost: decimal_ops::mul(self.cost, f),
            gpu_seconds: decimal_ops::mul(self.gpu_seconds, f),
            memory_gb_seconds: decimal_ops::mul(self.memory_gb_seconds, f),
            energy_ws: decimal_ops::mul(self.energy_ws, f),
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
/// they exceed what was measured); tokens then weigh what is left. Writes each tenant's fraction of the bucket
/// (they sum to at most 1) to `fractions`, and returns what was claimed if the claims were scaled.
fn split(
    claims: &[(usize, TenantId, Claim)],
    measured: Decimal,
    fractions: &mut Vec<(TenantId, Decimal)>,
) -> Option<Decimal> {
    let claimed: Decimal = claims.iter().map(|(_, _, c)| c.gpu_seconds).sum();
    let tokens: Decimal = claims.iter().map(|(_, _, c)| c.tokens).sum();
    let over = claimed > measured;
    // Fraction of the bucket left to tokens after the GPU-second claims (all of it, exactly, when none were
    // claimed: `measured / measured` would only spend a division to say so).
    let token_part = if over || tokens.is_zero() {
        Decimal::ZERO
    } else if claimed.is_zero() {
        Decimal::ONE
    } else {
        (measured - claimed) / measured
    };
    fractions.extend(
        claims
            .iter()
            .map(|(_, t, c)| {
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
            .filter(|(_, f)| *f > Decimal::ZERO),
    );
    over.then_some(claimed)
}

fn report_quantity(d: Decimal) -> Decimal {
    d.round_dp(6).normalize()
}

/// Below this many rollups the accumulation runs on one thread (threads cost more than they save).
const PARALLEL_MIN_ROLLUPS: usize = 100_000;
/// From this many usage events and claims, they are gathered on a thread of their own during the accumulation.
const PARALLEL_MIN_CLAIMS: usize = 10_000;
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
    /// Per policy: whether the quantities of its idle capacity are ever read (a `proportional` policy spreads
    /// them over tenants; otherwise only the idle cost is reported).
    idle_quantities: Vec<bool>,
    /// The UTC day of the period's first bucket, and the days from it to the last one's.
    day0: i64,
    n_days: usize,
    /// Per bucket: its UTC day, as an index from `day0`.
    bucket_day: Vec<usize>,
}

impl<'a> Ctx<'a> {
    fn new(period: Period, bucket_ms: i64, policies: &'a [Policy]) -> Self {
        let n_buckets =
            usize::try_from((period.to.0 - period.from.0 + bucket_ms - 1) / bucket_ms).unwrap_or(0);
        let day0 = period.from.floor_to(DAY_MS).0;
        let bucket_day: Vec<usize> = (0..n_buckets)
            .map(|bi| {
                let day = Timestamp(period.from.0 + bi as i64 * bucket_ms).floor_to(DAY_MS);
                usize::try_from((day.0 - day0) / DAY_MS).unwrap_or(0)
            })
            .collect();
        Ctx {
            period,
            bucket_ms,
            n_buckets,
            policies,
            rates: policies.iter().map(Rates::of).collect(),
            idle_quantities: policies
                .iter()
                .map(|p| p.spec.idle_capacity == IdleCapacity::Proportional)
                .collect(),
            day0,
            n_days: bucket_day.last().map_or(0, |d| d + 1),
            bucket_day,
        }
    }
}

/// Allocates a period. Pure: the same input gives the same answer, whatever the order of rollups and events.
/// Large inputs are accumulated and settled on the machine's cores, their usage gathered meanwhile (scoped
/// threads; the result does not depend on how the work was split: sums are exact integers, claims keep their
/// order, and each deployment is settled alone, its sums added to in bucket order).
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
    let ctx = Ctx::new(period, bucket_ms, policies);
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
    // 2. Usage events and claims that weigh shared buckets, as (bucket, tenant) claims per deployment.
    // The two are independent: on large inputs the claims are gathered on a thread of their own meanwhile.
    let overlap = config.threads != 1
        && usage.len() + claims.len() >= PARALLEL_MIN_CLAIMS
        && (config.threads > 1 || cores() > 1);
    let ((mut deps, mut findings), mut gathered) = if overlap {
        std::thread::scope(|s| {
            let gathering = s.spawn(|| gather_claims(period, bucket_ms, usage, claims));
            let sums = accumulate_all(&ctx, rollups, threads);
            (sums, joined(gathering))
        })
    } else {
        (
            accumulate_all(&ctx, rollups, threads),
            gather_claims(period, bucket_ms, usage, claims),
        )
    };
    findings.sort_by_key(finding_order);
    // Claims on deployments without GPU time in the period weigh nothing: they are left behind.
    for d in &mut deps {
        d.events = merge_claims(gathered.take(d.id));
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
    let settled = settle_all(&ctx, &deps, settle_threads);
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

/// Step 1 on `threads` threads: each sums a slice of the rollups, then the sums are added up.
fn accumulate_all<'a>(
    ctx: &Ctx<'_>,
    rollups: &'a [Rollup],
    threads: usize,
) -> (Vec<Dep<'a>>, Vec<Finding>) {
    if threads <= 1 {
        return accumulate(ctx, rollups);
    }
    let chunk = rollups.len().div_ceil(threads).max(1);
    let parts: Vec<(Vec<Dep<'a>>, Vec<Finding>)> = std::thread::scope(|s| {
        let handles: Vec<_> = rollups
            .chunks(chunk)
            .map(|c| s.spawn(|| accumulate(ctx, c)))
            .collect();
        handles.into_iter().map(joined).collect()
    });
    let mut deps: Vec<Dep<'a>> = Vec::new();
    let mut findings = Vec::new();
    for (d, f) in parts {
        deps = merge_deps(deps, d);
        findings.extend(f);
    }
    (deps, findings)
}

/// The result of a scoped thread; its panic, if it panicked.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Step 2: usage events deduplicated by event id (the last given wins), ours excluded, then the claims summed
/// already; those in the period, as (bucket, tenant, claim) per deployment, each in the order given.
fn gather_claims<'a>(
    period: Period,
    bucket_ms: i64,
    usage: &'a [UsageEvent],
    claims: &'a [UsageClaim],
) -> ClaimsByDeployment<'a> {
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
    let mut out = ClaimsByDeployment::default();
    let mut add = |d: &'a str, at: Timestamp, tenant: TenantId, claim: Claim| {
        if period.contains(at) {
            let bi = usize::try_from((at.0 - period.from.0) / bucket_ms).unwrap_or(0);
            out.push(d, (bi, tenant, claim));
        }
    };
    // In input order: the events' fields live on the heap in that order.
    for (e, _) in usage.iter().zip(&superseded).filter(|(_, s)| !**s) {
        if let Some((d, claim)) = event_claim(e) {
            add(d, e.occurred_at, e.tenant_id, claim);
        }
    }
    for c in claims {
        let claim = Claim {
            gpu_seconds: c.gpu_seconds,
            tokens: c.tokens,
        };
        add(&c.deployment_id, c.bucket_start, c.tenant_id, claim);
    }
    out
}

/// Claims per deployment id, each list in the order the claims were pushed.
#[derive(Debug, Default)]
struct ClaimsByDeployment<'a> {
    index: HashMap<&'a str, usize>,
    lists: Vec<Vec<(usize, TenantId, Claim)>>,
    /// The deployment pushed to last: claims come grouped by deployment, so most need no look-up.
    last: Option<(&'a str, usize)>,
}

impl<'a> ClaimsByDeployment<'a> {
    fn push(&mut self, deployment_id: &'a str, claim: (usize, TenantId, Claim)) {
        let i = match self.last {
            Some((d, i)) if d == deployment_id => i,
            _ => {
                let next = self.lists.len();
                let i = *self.index.entry(deployment_id).or_insert(next);
                if i == next {
                    self.lists.push(Vec::new());
                }
                self.last = Some((deployment_id, i));
                i
            }
        };
        self.lists[i].push(claim);
    }

    /// The claims of a deployment, taken out.
    fn take(&mut self, deployment_id: &str) -> Vec<(usize, TenantId, Claim)> {
        self.index
            .get(deployment_id)
            .map_or_else(Vec::new, |&i| std::mem::take(&mut self.lists[i]))
    }
}

/// Findings of the accumulation sorted independently of the order of the rollups.
fn finding_order(f: &Finding) -> (String, String, i64) {
    match f {
        Finding::PolicyBoundaryInsideRollup {
            deployment_id,
            gpu_uuid,
            bucket_start,
            ..
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
                gpu_seconds: r.q.gpu_seconds,
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
            b.per_policy.add(p, &acc);
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
                        for (p, acc) in y.per_policy.iter() {
                            x.per_policy.add(*p, acc);
                        }
                    }
                }
                None => t.owners.push((owner, buckets)),
            }
        }
    }
    a
}

/// Step 3 on `threads` threads (this one included), in deployment order whatever the threads.
fn settle_all(ctx: &Ctx<'_>, deps: &[Dep<'_>], threads: usize) -> Vec<Settled> {
    if threads <= 1 || deps.len() <= 1 {
        return deps.iter().map(|d| settle(ctx, d)).collect();
    }
    // Costliest first (a shared deployment splits every bucket between its claims), each taken by whichever
    // thread is free: one busy core does not hold the others up.
    let mut order: Vec<usize> = (0..deps.len()).collect();
    order.sort_by_key(|&i| {
        let d = &deps[i];
        std::cmp::Reverse(d.owners.len() * ctx.n_buckets + d.events.len())
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Settled)> = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            done.push((i, settle(ctx, &deps[i])));
        }
        done
    };
    let mut done: Vec<(usize, Settled)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for h in helpers {
            done.extend(joined(h));
        }
        done
    });
    // Back in deployment order: the answer does not depend on the threads.
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
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
    let policies = ctx.policies;
    let mut out = Settled::default();
    let (items, rows, daily, findings) = (
        &mut out.items,
        &mut out.rows,
        &mut out.daily,
        &mut out.findings,
    );
    let dep_id = dep.id;
    let mut parts: Vec<((TenantId, usize), Part)> = Vec::new();
    let mut unalloc: Vec<(usize, Part)> = Vec::new();
    let mut days = Days::default();
    let mut orphan_events = 0u64;
    let mut cursor = 0usize;
    for (owner, buckets) in &dep.owners {
        match owner {
            Some(t) => settle_dedicated(ctx, *t, buckets, &mut parts, &mut days),
            None => {
                let shared = settle_shared(ctx, dep, buckets, &mut parts, &mut unalloc, &mut days);
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
fn settle_dedicated(
    ctx: &Ctx<'_>,
    owner: TenantId,
    buckets: &[Bucket],
    parts: &mut Vec<((TenantId, usize), Part)>,
    days: &mut Days,
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
    for ((day, p), acc) in per_day {
        let part = acc.priced(&ctx.rates[p]);
        days.add(ctx, p, day, part.cost);
        add_part(parts, (owner, p), &part);
    }
}

/// What settling the shared buckets of a deployment leaves besides sums.
#[derive(Debug, Default)]
struct Shared {
    /// Claims on buckets without GPU time.
    orphan_events: u64,
    /// How many of the deployment's claims (sorted by bucket) were visited.
    cursor: usize,
    findings: Vec<Finding>,
}

/// The shared buckets of a deployment: each bucket's cost split between the tenants that claimed it, the rest
/// to idle. Buckets are visited in order and every sum is added to in that order (the sums are exact decimals
/// that may round once they grow long, so the order is part of the answer).
fn settle_shared(
    ctx: &Ctx<'_>,
    dep: &Dep<'_>,
    buckets: &[Bucket],
    parts: &mut Vec<((TenantId, usize), Part)>,
    unalloc: &mut Vec<(usize, Part)>,
    days: &mut Days,
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
            continue;
        }
        let measured = from_fixed(b.measured);
        fractions.clear();
        if !claims.is_empty() {
            if let Some(claimed) = split(claims, measured, &mut fractions) {
                out.findings.push(Finding::OverAttribution {
                    deployment_id: dep.id.to_string(),
                    bucket_start: Timestamp(ctx.period.from.0 + bi as i64 * ctx.bucket_ms),
                    claimed_gpu_seconds: claimed,
                    measured_gpu_seconds: measured,
                });
            }
        }
        for (p, acc) in b.per_policy.iter() {
            let whole = acc.priced(&ctx.rates[*p]);
            days.add(ctx, *p, ctx.bucket_day[bi], whole.cost);
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
    }
    out
}

/// Gives each tenant its fraction of a bucket's `whole` under policy `p`, and what is left to `idle`.
///
/// Only a `proportional` policy ever reads the quantities of idle (to spread them over tenants); otherwise the
/// idle cost is all that is read, so only the cost of what is left is worked out (`idle_quantities` false),
/// with the very same decimal operations on it.
fn share(
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
struct Days(Vec<(Currency, Vec<Option<Decimal>>)>);

impl Days {
    /// Adds `cost` under policy `p` to day `day` (an index from the period's first day).
    fn add(&mut self, ctx: &Ctx<'_>, p: usize, day: usize, cost: Decimal) {
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
    fn of<'s>(&'s self, cur: Currency, ctx: &Ctx<'_>) -> impl Iterator<Item = (i64, Decimal)> + 's {
        let day0 = ctx.day0;
        self.0
            .iter()
            .filter(move |(c, _)| *c == cur)
            .flat_map(|(_, d)| d.iter().enumerate())
            .filter_map(move |(i, cost)| cost.map(|c| (day0 + i as i64 * DAY_MS, c)))
    }
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

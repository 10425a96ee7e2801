//! The allocation: rollups + usage events + policies -> exact, reconciled costs per deployment and tenant.
//!
//! Preconditions (never checked by panicking): rollups are cut at `bucket_ms` multiples of the allocation
//! bucket or finer; policies are stored policies. Postconditions, for every (deployment, currency) row:
//! `allocated + unallocated == cost` and the items of the row sum to `allocated`, to the minor unit.

mod accumulate;
mod by_day;
mod claims;
mod explain;
mod parallel;
mod pricing;
mod round;
mod settle;
mod split_cache;
mod trace;

pub use claims::{claim_of, sum_claims, UsageClaim, CLAIM_BUCKET_MS};
pub use explain::{explain, Explanation, PolicyRates};
pub use pricing::price;
pub use split_cache::{SplitCache, DEFAULT_SPLIT_BUCKETS};
pub use trace::{BucketLine, ClaimLine, IdleSpread, Party, PricedLine, Rounding, RoundingLine};
// A period is a span of time (it lives in `time`); its path here stays.
pub use crate::time::Period;

use rust_decimal::Decimal;

use crate::domain::{IdleCapacity, Policy, Sample, UsageEvent};
use crate::report::{Allocation, Gap, Item};
use crate::rollup::Rollup;
use crate::series::{self, SeriesConfig};
use crate::time::Timestamp;

use accumulate::finding_order;
use claims::{gather_claims, merge_claims};
use parallel::{
    accumulate_all, joined, settle_all, PARALLEL_MIN_BUCKETS, PARALLEL_MIN_CLAIMS,
    PARALLEL_MIN_ROLLUPS,
};
use pricing::Rates;
use settle::tenant_rows;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

/// The span of time each day item covers ([`AllocationConfig::item_span`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Span {
    /// A UTC day.
    #[default]
    Day,
    /// A UTC hour (a bucket, where buckets are longer).
    Hour,
}

impl Span {
    pub fn ms(self) -> i64 {
        match self {
            Span::Day => DAY_MS,
            Span::Hour => HOUR_MS,
        }
    }
}

/// How usage is split in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationConfig {
    /// Shared deployments are split per bucket of this length, aligned to UTC. Default 1 hour.
    pub bucket_ms: i64,
    /// Threads to use: 0 = the machine's cores for large inputs, one thread for small ones.
    pub threads: usize,
    /// Also split each item and each unallocated cost per span of time (`Allocation::day_items`, the FOCUS
    /// export's rows). Off by default: it costs a second split of every shared bucket.
    pub day_items: bool,
    /// The span of a day item: a UTC day (default) or hour. A span is never shorter than a bucket.
    pub item_span: Span,
}

impl Default for AllocationConfig {
    fn default() -> Self {
        AllocationConfig {
            bucket_ms: 3_600_000,
            threads: 0,
            day_items: false,
            item_span: Span::Day,
        }
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
    let equal = crate::shares::tally(samples, series_cfg.bucket_ms);
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
    a.findings.extend(crate::shares::findings(&equal, period));
    a
}

fn report_quantity(d: Decimal) -> Decimal {
    d.round_dp(6).normalize()
}

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
    /// Whether items are also split per span ([`AllocationConfig::day_items`]).
    day_items: bool,
    /// The day items' span ([`AllocationConfig::item_span`], at least a bucket), the start of the period's
    /// first one, and per bucket its span, as an index from `span0`.
    span_ms: i64,
    span0: i64,
    bucket_span: Vec<usize>,
    /// The settled splits kept between allocations, when the caller keeps them ([`allocate_cached`]).
    splits: Option<&'a SplitCache>,
    /// The generation of `splits` this allocation began under ([`SplitCache`]).
    split_generation: u64,
}

impl<'a> Ctx<'a> {
    fn new(period: Period, config: AllocationConfig, policies: &'a [Policy]) -> Self {
        let bucket_ms = config.bucket_ms;
        let n_buckets =
            usize::try_from((period.to.0 - period.from.0 + bucket_ms - 1) / bucket_ms).unwrap_or(0);
        let day0 = period.from.floor_to(DAY_MS).0;
        let bucket_day: Vec<usize> = (0..n_buckets)
            .map(|bi| {
                let day = Timestamp(period.from.0 + bi as i64 * bucket_ms).floor_to(DAY_MS);
                usize::try_from((day.0 - day0) / DAY_MS).unwrap_or(0)
            })
            .collect();
        let span_ms = config.item_span.ms().max(bucket_ms);
        let span0 = period.from.floor_to(span_ms).0;
        let bucket_span: Vec<usize> = if !config.day_items {
            Vec::new()
        } else if span_ms == DAY_MS {
            bucket_day.clone()
        } else {
            (0..n_buckets)
                .map(|bi| {
                    let t = period.from.0 + bi as i64 * bucket_ms;
                    usize::try_from((t - span0) / span_ms).unwrap_or(0)
                })
                .collect()
        };
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
            day_items: config.day_items,
            span_ms,
            span0,
            bucket_span,
            splits: None,
            split_generation: 0,
        }
    }
}

/// Allocates a period. Pure: the same input gives the same answer, whatever the order of rollups and events.
/// Large inputs are accumulated and settled on the machine's cores, their usage gathered meanwhile (scoped
/// threads; the result does not depend on how the work was split: sums are exact integers, claims keep their
/// order, and each deployment is settled alone, its sums added to in bucket order).
pub fn allocate(input: &AllocationInput<'_>) -> Allocation {
    allocate_with(input, None)
}

/// [`allocate`], taking the settled split of each shared deployment-bucket from `splits` when it was computed
/// from the same inputs, and keeping those it computes there: the same answer, to the last digit.
pub fn allocate_cached(input: &AllocationInput<'_>, splits: &SplitCache) -> Allocation {
    if !splits.enabled() {
        return allocate(input);
    }
    let a = allocate_with(input, Some(splits));
    splits.end();
    a
}

fn allocate_with(input: &AllocationInput<'_>, splits: Option<&SplitCache>) -> Allocation {
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
    let mut ctx = Ctx::new(period, config, policies);
    if let Some(cache) = splits {
        ctx.split_generation = cache.begin(&ctx);
        ctx.splits = Some(cache);
    }
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
    let mut day_items = Vec::new();
    for s in settled {
        items.extend(s.items);
        rows.extend(s.rows);
        daily.extend(s.daily);
        day_items.extend(s.day_items);
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
    day_items.sort_by(|a, b| {
        (&a.deployment_id, a.tenant_id, &a.policy_id, a.start).cmp(&(
            &b.deployment_id,
            b.tenant_id,
            &b.policy_id,
            b.start,
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
        day_items,
    }
}

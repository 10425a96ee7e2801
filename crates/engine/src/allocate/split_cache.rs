//! The settled split of each shared deployment-bucket, kept between allocations ([`SplitCache`]): what the
//! bucket costs per policy, each tenant's exact (unrounded) part of it and what is left to idle. A period's
//! allocation adds the kept parts in bucket order, as it adds the parts it computes, and rounds once per row.
//!
//! **Exact by construction.** A kept split is a pure function of what it was computed from: the bucket's
//! measured GPU-seconds, its fixed-point sums per policy, its claims (tenant and the decimals claimed, compared
//! digit for digit with their scale) and the policies' rates and idle rules. Each entry keeps those inputs and is
//! used only when the bucket's inputs in this allocation are the same; otherwise it is computed again and
//! replaced. So a late sample, a usage event or a write by another replica (the store reads the bucket's new rows
//! under its change count) gives a new split, and a kept split never answers for inputs it was not computed
//! from. A change of the policies' rates or idle rules empties the cache.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rust_decimal::Decimal;

use super::accumulate::Bucket;
use super::claims::{split, Claim};
use super::pricing::{from_fixed, Part};
use super::Ctx;
use crate::decimal_ops;
use crate::domain::TenantId;

/// The default bound of a [`SplitCache`], in deployment-buckets (a month of 500 shared deployments is 360,000).
pub const DEFAULT_SPLIT_BUCKETS: usize = 500_000;

/// Settled splits of shared deployment-buckets, per deployment and bucket start, shared by the allocations of a
/// process (on any thread). It holds at most its bound of deployment-buckets: an allocation that leaves it
/// over the bound empties it (the next one fills it again).
#[derive(Debug)]
pub struct SplitCache {
    max: usize,
    held: AtomicUsize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Per policy: its rates (digits and scale) and whether idle quantities are spread. Kept splits were
    /// computed under these.
    rates: Vec<RateKey>,
    /// Bumped whenever `rates` change: a split is used only by an allocation of its generation, so one that
    /// began under other rates and is still running can never leave a split the others would take.
    generation: u64,
    deps: HashMap<String, Arc<Mutex<DepSplits>>>,
}

type RateKey = ([u8; 16], [u8; 16], [u8; 16], bool);

/// The kept splits of one deployment, by bucket start (ms).
#[derive(Debug, Default)]
pub(super) struct DepSplits {
    buckets: HashMap<i64, BucketSplit>,
}

/// One shared bucket, settled: the inputs it was computed from, and its split.
#[derive(Debug)]
pub(super) struct BucketSplit {
    /// The cache's generation (its policies' rates) it was computed under.
    generation: u64,
    measured: i128,
    per_policy: Vec<(usize, super::pricing::Acc)>,
    claims: Vec<(TenantId, [u8; 16], [u8; 16])>,
    /// What was claimed, when the claims exceeded what was measured.
    pub(super) over: Option<Decimal>,
    /// Each tenant's fraction of the bucket (what `split` gives).
    pub(super) fractions: Vec<(TenantId, Decimal)>,
    pub(super) policies: Vec<PolicySplit>,
}

/// A bucket's part under one policy.
#[derive(Debug)]
pub(super) struct PolicySplit {
    pub(super) p: usize,
    pub(super) whole: Part,
    pub(super) est: Decimal,
    /// Per tenant of `fractions`, in that order: `whole` times its fraction.
    pub(super) parts: Vec<Part>,
    /// What is left to idle (only its cost is meaningful when the policy does not spread idle quantities).
    pub(super) rest: Part,
}

impl SplitCache {
    /// A cache of at most `max` deployment-buckets; 0 keeps nothing.
    pub fn new(max: usize) -> SplitCache {
        SplitCache {
            max,
            held: AtomicUsize::new(0),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Deployment-buckets held.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Whether it keeps anything.
    pub fn enabled(&self) -> bool {
        self.max > 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before an allocation under `ctx`'s policies: empties the cache if they price differently, and gives the
    /// generation the allocation's splits belong to.
    pub(super) fn begin(&self, ctx: &Ctx<'_>) -> u64 {
        let rates: Vec<RateKey> = ctx
            .rates
            .iter()
            .zip(&ctx.idle_quantities)
            .map(|(r, idle)| {
                (
                    r.gpu.serialize(),
                    r.energy.serialize(),
                    r.storage.serialize(),
                    *idle,
                )
            })
            .collect();
        let mut inner = self.lock();
        if inner.rates != rates {
            inner.deps.clear();
            inner.rates = rates;
            inner.generation += 1;
            self.held.store(0, Ordering::Relaxed);
        }
        inner.generation
    }

    /// After an allocation: empties the cache if it holds more than its bound.
    pub(super) fn end(&self) {
        if self.held() > self.max {
            self.lock().deps.clear();
            self.held.store(0, Ordering::Relaxed);
        }
    }

    /// The kept splits of a deployment (created empty).
    pub(super) fn deployment(&self, id: &str) -> Arc<Mutex<DepSplits>> {
        let mut inner = self.lock();
        if let Some(d) = inner.deps.get(id) {
            return d.clone();
        }
        let d = Arc::new(Mutex::new(DepSplits::default()));
        inner.deps.insert(id.to_string(), d.clone());
        d
    }
}

impl Default for SplitCache {
    fn default() -> Self {
        SplitCache::new(DEFAULT_SPLIT_BUCKETS)
    }
}

impl DepSplits {
    /// The split of the bucket starting at `start` with sums `b` and `claims`: the kept one if it was computed
    /// from the same inputs, else computed now and kept.
    pub(super) fn get(
        &mut self,
        cache: &SplitCache,
        ctx: &Ctx<'_>,
        start: i64,
        b: &Bucket,
        claims: &[(usize, TenantId, Claim)],
    ) -> &BucketSplit {
        match self.buckets.entry(start) {
            Entry::Occupied(o) => {
                let o = o.into_mut();
                if !o.computed_from(ctx.split_generation, b, claims) {
                    *o = BucketSplit::compute(ctx, b, claims);
                }
                o
            }
            Entry::Vacant(v) => {
                cache.held.fetch_add(1, Ordering::Relaxed);
                v.insert(BucketSplit::compute(ctx, b, claims))
            }
        }
    }
}

fn claim_key(
    claims: &[(usize, TenantId, Claim)],
) -> impl Iterator<Item = (TenantId, [u8; 16], [u8; 16])> + '_ {
    claims
        .iter()
        .map(|(_, t, c)| (*t, c.gpu_seconds.serialize(), c.tokens.serialize()))
}

impl BucketSplit {
    fn computed_from(
        &self,
        generation: u64,
        b: &Bucket,
        claims: &[(usize, TenantId, Claim)],
    ) -> bool {
        self.generation == generation
            && self.measured == b.measured
            && self.per_policy.len() == b.per_policy.iter().count()
            && self
                .per_policy
                .iter()
                .zip(b.per_policy.iter())
                .all(|(x, y)| x == y)
            && self.claims.len() == claims.len()
            && self.claims.iter().copied().eq(claim_key(claims))
    }

    /// What `settle_shared` computes for one bucket with GPU time (`b.measured > 0`): the same operations, in
    /// the same order, on the same values.
    fn compute(ctx: &Ctx<'_>, b: &Bucket, claims: &[(usize, TenantId, Claim)]) -> BucketSplit {
        let measured = from_fixed(b.measured);
        let mut fractions = Vec::new();
        let over = if claims.is_empty() {
            None
        } else {
            split(claims, measured, &mut fractions)
        };
        let policies = b
            .per_policy
            .iter()
            .map(|(p, acc)| {
                let whole = acc.priced(&ctx.rates[*p]);
                let mut parts = Vec::with_capacity(fractions.len());
                let mut rest = if ctx.idle_quantities[*p] {
                    whole
                } else {
                    Part {
                        cost: whole.cost,
                        ..Part::default()
                    }
                };
                for (_, f) in &fractions {
                    let part = whole.times(*f);
                    if ctx.idle_quantities[*p] {
                        rest.sub(&part);
                    } else {
                        rest.cost = decimal_ops::sub(rest.cost, part.cost);
                    }
                    parts.push(part);
                }
                PolicySplit {
                    p: *p,
                    whole,
                    est: from_fixed(acc.est),
                    parts,
                    rest,
                }
            })
            .collect();
        BucketSplit {
            generation: ctx.split_generation,
            measured: b.measured,
            per_policy: b.per_policy.iter().copied().collect(),
            claims: claim_key(claims).collect(),
            over,
            fractions,
            policies,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;
    use crate::allocate::{AllocationConfig, Period};
    use crate::domain::{Glob, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, TokenWeight};
    use crate::money::Currency;
    use crate::time::Timestamp;

    fn policy(hourly: &str) -> Policy {
        Policy::new(
            1,
            PolicySpec {
                name: "p".into(),
                deployment_pattern: Glob::any(),
                gpu_model: None,
                currency: Currency::from_str("EUR").unwrap(),
                gpu_hourly_cost: NonNegative::new(Decimal::from_str(hourly).unwrap()).unwrap(),
                overhead_pct: NonNegative::ZERO,
                energy_kwh_price: NonNegative::ZERO,
                pue: Pue::ONE,
                storage_gb_month_price: NonNegative::ZERO,
                idle_capacity: IdleCapacity::Unallocated,
                output_token_weight: TokenWeight::DEFAULT,
                enabled: true,
                effective_from: Timestamp(0),
                effective_to: None,
            },
        )
    }

    /// An allocation that began under other rates and is still running when the rates change must not leave a
    /// split that the allocations under the new rates take: each split belongs to the generation it was
    /// computed under. One GPU-hour (3,600 GPU-seconds) at 2.00 then 3.00 an hour: 2.00 then 3.00.
    #[test]
    fn a_split_left_by_an_allocation_under_old_rates_is_never_taken() {
        let period = Period {
            from: Timestamp(0),
            to: Timestamp(3_600_000),
        };
        let (old, new) = ([policy("2.00")], [policy("3.00")]);
        let cfg = AllocationConfig::default();
        let mut under_old = Ctx::new(period, cfg, &old);
        let mut under_new = Ctx::new(period, cfg, &new);
        let cache = SplitCache::new(10);
        let one_hour = super::super::pricing::to_fixed(Decimal::from(3_600));
        let mut bucket = Bucket {
            measured: one_hour,
            per_policy: Default::default(),
        };
        bucket.per_policy.add(
            0,
            &super::super::pricing::Acc {
                gs: one_hour,
                busy: one_hour,
                ..Default::default()
            },
        );
        // The old allocation begins, then the new one (which empties the cache).
        under_old.split_generation = cache.begin(&under_old);
        under_new.split_generation = cache.begin(&under_new);
        assert_ne!(under_old.split_generation, under_new.split_generation);
        // The old allocation, still running, keeps its split of the hour.
        let dep = cache.deployment("d");
        let cost = |s: &BucketSplit| s.policies[0].whole.cost;
        assert_eq!(
            cost(dep.lock().unwrap().get(&cache, &under_old, 0, &bucket, &[])),
            Decimal::from_str("2.00").unwrap()
        );
        // The new allocation computes its own, at the new rate, and keeps it for the next one.
        for _ in 0..2 {
            assert_eq!(
                cost(dep.lock().unwrap().get(&cache, &under_new, 0, &bucket, &[])),
                Decimal::from_str("3.00").unwrap()
            );
        }
    }
}

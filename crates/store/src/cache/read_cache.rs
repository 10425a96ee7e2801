//! The allocation's read cache: the group rollups and usage claims of each bucket, decoded once and kept while
//! the bucket does not change, so that an allocation of a month reads and decodes only the buckets written
//! since the last one (typically the current hour).
//!
//! **How a change is seen, exactly and across processes.** Every statement that inserts, updates or deletes
//! rows of the group or claim tables adds, in its own transaction (database triggers, so that no write path
//! can forget it), to a *change count* of each bucket it touched: `hour_changes (bucket_ms, n)`, read as
//! `sum(n)` per bucket. The count of a bucket only grows, and a read sees it in the same snapshot as the rows.
//! So an entry decoded at count `c` is the bucket's current content exactly when the count read now is still
//! `c`: a write committed since, by this process or another replica, changed it. A bucket without a count has
//! no rows (the migration that added the counts gave every bucket already written one).
//! - SQLite: one row per bucket, `n` incremented by row triggers (one writer at a time: no contention).
//! - PostgreSQL: a log of `(bucket_ms, n)` rows, one per statement and bucket touched, appended by statement
//!   triggers (no row is updated, so concurrent writers never wait on one another for it); reads sum them, and
//!   [`COMPACT_AFTER`] rows beyond one per bucket in a read call for a compaction that folds each bucket's rows
//!   into one of their sum in one transaction (the sum any snapshot sees is unchanged by it).
//!
//! The cache keys are bucket starts (`bucket_ms` of either table: claims are hourly, groups per rollup
//! bucket). It holds at most `rows` rows (groups and claims) and evicts the buckets used least recently.
//! Nothing here does I/O: the backends read the counts and the missing buckets in one snapshot, and hand them
//! over. [`BucketCache`] is the bookkeeping; [`ReadCache`] is the allocation's cache of it, and
//! [`crate::cache::usage_cache`] the breakdown's (per-GPU rows, under the same counts).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use eai_engine::allocate::UsageClaim;
use eai_engine::rollup::Rollup;

/// Rows of the PostgreSQL change log a read summed beyond one per bucket, past which it asks for a compaction.
pub const COMPACT_AFTER: usize = 4_096;

/// The default budget of the cache, in rows (a month of 1,000 GPUs in 50 deployments is about 120,000 rows,
/// some 30 MiB decoded).
pub const DEFAULT_ROWS: usize = 500_000;

/// What a cache keeps per bucket: its content as decoded at change count `count`.
pub trait Counted {
    fn count(&self) -> i64;
    /// Rows held (what the budget counts).
    fn rows(&self) -> usize;
}

/// One bucket of the allocation's read, as decoded at change count `count`.
#[derive(Debug, Default)]
pub struct Bucket {
    pub count: i64,
    pub rollups: Vec<Rollup>,
    pub claims: Vec<UsageClaim>,
}

impl Counted for Bucket {
    fn count(&self) -> i64 {
        self.count
    }

    fn rows(&self) -> usize {
        self.rollups.len() + self.claims.len()
    }
}

/// Decoded buckets shared by the reads of one store, each kept while its change count stays the one it was
/// decoded at: the allocation's ([`ReadCache`]: group rollups and claims) and the breakdown's
/// ([`crate::cache::usage_cache`]: per-GPU rows).
#[derive(Debug)]
pub struct BucketCache<B> {
    rows: usize,
    inner: Mutex<Inner<B>>,
}

/// The allocation's read cache.
pub type ReadCache = BucketCache<Bucket>;

#[derive(Debug)]
struct Inner<B> {
    buckets: HashMap<i64, (Arc<B>, u64)>,
    tick: u64,
    rows: usize,
}

/// What a read finds for the change counts it read: the buckets to take from the cache, and the ranges of
/// bucket starts to read from the store (each `[from, to)` holds only buckets to read, and every bucket to read
/// lies in one).
#[derive(Debug)]
pub struct Plan<B = Bucket> {
    pub hits: Vec<(i64, Arc<B>)>,
    pub ranges: Vec<(i64, i64)>,
    /// The buckets to read and their counts, by bucket start.
    pub missing: Vec<(i64, i64)>,
}

impl<B: Counted> BucketCache<B> {
    /// A cache of at most `rows` rows; 0 keeps nothing (every read reads every bucket).
    pub fn new(rows: usize) -> BucketCache<B> {
        BucketCache {
            rows,
            inner: Mutex::new(Inner {
                buckets: HashMap::new(),
                tick: 0,
                rows: 0,
            }),
        }
    }

    /// The plan of a read of `[from, to)` given the change counts of its buckets as read in its snapshot
    /// (`(bucket_ms, count)`, sorted by bucket; buckets without rows have none).
    pub fn plan(&self, counts: &[(i64, i64)], to: i64) -> Plan<B> {
        let mut plan = Plan {
            hits: Vec::new(),
            ranges: Vec::new(),
            missing: Vec::new(),
        };
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let mut open: Option<i64> = None;
        for &(bucket, count) in counts {
            let hit = match inner.buckets.get_mut(&bucket) {
                Some((b, used)) if b.count() == count => {
                    *used = tick;
                    Some((bucket, b.clone()))
                }
                _ => None,
            };
            match hit {
                Some(b) => {
                    plan.hits.push(b);
                    if let Some(from) = open.take() {
                        plan.ranges.push((from, bucket));
                    }
                }
                None => {
                    plan.missing.push((bucket, count));
                    open.get_or_insert(bucket);
                }
            }
        }
        if let Some(from) = open {
            plan.ranges.push((from, to));
        }
        plan
    }

    /// Keeps the buckets just read (but those of a negative count: read without one), evicting the buckets used
    /// least recently beyond the budget; returns every bucket of the read, `hits` and `fresh`, by bucket start.
    pub fn keep(&self, hits: Vec<(i64, Arc<B>)>, fresh: Vec<(i64, Arc<B>)>) -> Vec<Arc<B>> {
        if self.rows > 0 {
            let mut inner = self.lock();
            let tick = inner.tick;
            for (key, b) in fresh.iter().filter(|(_, b)| b.count() >= 0) {
                inner.rows += b.rows();
                if let Some((old, _)) = inner.buckets.insert(*key, (b.clone(), tick)) {
                    inner.rows -= old.rows();
                }
            }
            inner.evict(self.rows);
        }
        let mut all = hits;
        all.extend(fresh);
        all.sort_by_key(|(k, _)| *k);
        all.into_iter().map(|(_, b)| b).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<B>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Buckets and rows held.
    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.buckets.len(), inner.rows)
    }
}

impl ReadCache {
    /// Splits what was read for `plan`'s ranges into buckets, keeps them (evicting the buckets used least
    /// recently beyond the budget) and returns every bucket of the read, hits and fresh ones, by bucket start.
    pub fn fill(
        &self,
        plan: Plan,
        rollups: Vec<Rollup>,
        claims: Vec<UsageClaim>,
    ) -> Vec<Arc<Bucket>> {
        let mut fresh: Vec<(i64, Bucket)> = plan
            .missing
            .iter()
            .map(|&(b, count)| {
                (
                    b,
                    Bucket {
                        count,
                        ..Bucket::default()
                    },
                )
            })
            .collect();
        // Rows come grouped by bucket: the slot is looked up when the bucket changes.
        let mut last = 0;
        for r in rollups {
            let i = slot(&mut fresh, &mut last, r.key.bucket_start.0);
            fresh[i].1.rollups.push(r);
        }
        let mut last = 0;
        for c in claims {
            let i = slot(&mut fresh, &mut last, c.bucket_start.0);
            fresh[i].1.claims.push(c);
        }
        let fresh = fresh.into_iter().map(|(k, b)| (k, Arc::new(b))).collect();
        self.keep(plan.hits, fresh)
    }
}

/// The rows of `buckets` (in bucket order) as one read: every claim, and the group rollups but those of the
/// buckets in `exact` (read as raw cells instead; a bucket is in it by its start floored to `bucket_ms`).
pub fn assemble(
    buckets: &[Arc<Bucket>],
    exact: &BTreeSet<i64>,
    bucket_ms: i64,
) -> (Vec<Rollup>, Vec<UsageClaim>) {
    let mut rollups = Vec::with_capacity(buckets.iter().map(|b| b.rollups.len()).sum());
    let mut claims = Vec::with_capacity(buckets.iter().map(|b| b.claims.len()).sum());
    for b in buckets {
        rollups.extend(
            b.rollups
                .iter()
                .filter(|r| !exact.contains(&r.key.bucket_start.floor_to(bucket_ms).0))
                .cloned(),
        );
        claims.extend(b.claims.iter().cloned());
    }
    (rollups, claims)
}

/// The index of bucket `key` in `buckets` (sorted by key), `last` first. A row of a bucket without a count
/// cannot be (the triggers give it one in the row's transaction); it gets a bucket of count -1, which matches
/// no count read: it serves this read and is never kept.
pub(crate) fn slot<B: Uncounted>(buckets: &mut Vec<(i64, B)>, last: &mut usize, key: i64) -> usize {
    if buckets.get(*last).is_some_and(|(k, _)| *k == key) {
        return *last;
    }
    *last = match buckets.binary_search_by_key(&key, |(k, _)| *k) {
        Ok(i) => i,
        Err(i) => {
            buckets.insert(i, (key, B::uncounted()));
            i
        }
    };
    *last
}

/// A bucket read without a change count (count -1: never kept).
pub(crate) trait Uncounted {
    fn uncounted() -> Self;
}

impl Uncounted for Bucket {
    fn uncounted() -> Bucket {
        Bucket {
            count: -1,
            ..Bucket::default()
        }
    }
}

impl<B: Counted> Inner<B> {
    fn evict(&mut self, budget: usize) {
        if self.rows <= budget {
            return;
        }
        let mut by_use: Vec<(u64, i64)> = self.buckets.iter().map(|(k, (_, t))| (*t, *k)).collect();
        by_use.sort_unstable();
        for (_, k) in by_use {
            if self.rows <= budget {
                break;
            }
            if let Some((b, _)) = self.buckets.remove(&k) {
                self.rows -= b.rows();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eai_engine::domain::TenantId;
    use eai_engine::time::Timestamp;
    use rust_decimal::Decimal;

    const H: i64 = 3_600_000;

    fn claim(b: i64) -> UsageClaim {
        UsageClaim {
            deployment_id: "d".into(),
            tenant_id: TenantId(uuid::Uuid::from_u128(7)),
            bucket_start: Timestamp(b),
            gpu_seconds: Decimal::ONE,
            tokens: Decimal::ZERO,
        }
    }

    #[test]
    fn reads_only_the_buckets_whose_count_changed() {
        let cache = ReadCache::new(100);
        let counts = [(0, 1), (H, 1), (2 * H, 1)];
        let plan = cache.plan(&counts, 3 * H);
        assert_eq!(plan.ranges, vec![(0, 3 * H)]);
        let all = cache.fill(plan, vec![], vec![claim(0), claim(H), claim(2 * H)]);
        assert_eq!(all.len(), 3);
        assert_eq!(cache.held(), (3, 3));

        // The middle bucket changed: one range, exactly it.
        let plan = cache.plan(&[(0, 1), (H, 2), (2 * H, 1)], 3 * H);
        assert_eq!(plan.ranges, vec![(H, 2 * H)]);
        assert_eq!(plan.hits.len(), 2);
        let all = cache.fill(plan, vec![], vec![claim(H), claim(H)]);
        assert_eq!(all.iter().map(|b| b.claims.len()).sum::<usize>(), 4);
        assert_eq!(cache.held(), (3, 4));

        // A new bucket at the end, the others unchanged.
        let plan = cache.plan(&[(0, 1), (H, 2), (2 * H, 1), (3 * H, 1)], 4 * H);
        assert_eq!(plan.ranges, vec![(3 * H, 4 * H)]);
        // A bucket whose rows all went: no count change is missed, it is read (and found empty).
        let plan = cache.plan(&[(0, 2), (H, 2), (2 * H, 1)], 4 * H);
        assert_eq!(plan.ranges, vec![(0, H)]);
        let all = cache.fill(plan, vec![], vec![]);
        assert_eq!(all.iter().map(|b| b.claims.len()).sum::<usize>(), 3);
        // ...and kept empty: the next read reads nothing.
        assert!(cache
            .plan(&[(0, 2), (H, 2), (2 * H, 1)], 4 * H)
            .ranges
            .is_empty());
    }

    #[test]
    fn keeps_the_budget_by_evicting_the_least_recently_used() {
        let cache = ReadCache::new(2);
        for (i, b) in [0, H, 2 * H].into_iter().enumerate() {
            let plan = cache.plan(&[(b, 1)], b + H);
            cache.fill(plan, vec![], vec![claim(b)]);
            assert!(cache.held().1 <= 2, "after {i}");
        }
        // The first bucket went; the last two stayed.
        assert_eq!(cache.plan(&[(0, 1)], H).ranges, vec![(0, H)]);
        assert!(cache.plan(&[(2 * H, 1)], 3 * H).ranges.is_empty());
        let off = ReadCache::new(0);
        let plan = off.plan(&[(0, 1)], H);
        off.fill(plan, vec![], vec![claim(0)]);
        assert_eq!(off.held(), (0, 0));
    }
}

//! The breakdown's read cache: the per-GPU rollups of each bucket in the compact form a breakdown reads
//! ([`eai_engine::gpu_usage`]), decoded once and kept while the bucket does not change, so that a breakdown of
//! a month reads only the buckets written since the last one.
//!
//! **How a change is seen.** By the change counts of [`crate::cache::read_cache`] (`hour_changes`), which count the
//! writes of group rollups. That is enough for the per-GPU rows: a group row is the sum of the per-GPU rows of its
//! key (`crate::rollups::groups`), written in the transaction that writes them, and every write of per-GPU rows of
//! a bucket writes (adds a delta into, or rebuilds) a group row of that bucket; so no per-GPU row of a bucket
//! changes without its count changing.
//!
//! Labels and GPUs are interned once for the cache's life (a store's series and GPUs: a few per pod, never
//! forgotten), so a bucket's rows are about 150 bytes each; a read hands the engine the rows of its buckets
//! (shared, not copied) and a copy of the tables. The backend does the I/O: [`UsageCache::plan`], read the
//! missing ranges into [`Names`], [`UsageCache::keep`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use eai_engine::domain::TenantId;
use eai_engine::gpu_usage::{GpuRow, GpuUsage, Interner, UsageLabels};
use eai_engine::rollup::Rollup;

use crate::cache::read_cache::{BucketCache, Counted, Plan, Uncounted};
use crate::{Result, StoreError};

/// The default budget of the cache, in rows (a month of 1,000 GPUs is 720,000 rows, some 110 MiB).
pub const DEFAULT_ROWS: usize = 1_000_000;

/// One bucket's per-GPU rows, as decoded at change count `count`.
#[derive(Debug, Default)]
pub struct UsageBucket {
    pub count: i64,
    pub rows: Arc<[GpuRow]>,
}

impl Counted for UsageBucket {
    fn count(&self) -> i64 {
        self.count
    }

    fn rows(&self) -> usize {
        self.rows.len()
    }
}

/// A bucket being read.
struct Filling {
    count: i64,
    rows: Vec<GpuRow>,
}

impl Uncounted for Filling {
    fn uncounted() -> Filling {
        Filling {
            count: -1,
            rows: Vec::new(),
        }
    }
}

/// How a stored per-GPU row names its labels: by its series (which determines them), or, for a row written
/// before rollups kept their series, by its deployment, owner and model (no placement).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LabelKey {
    Series(i64),
    Unplaced(String, Option<TenantId>, String),
}

/// The interned labels and GPUs, by the store's keys.
#[derive(Debug, Default)]
pub struct Names {
    /// The tables rows index into (no rows).
    pub tables: GpuUsage,
    labels: HashMap<LabelKey, u32>,
    gpus: HashMap<i64, u32>,
}

impl Names {
    /// The index of the labels `key` names, made by `make` (a read of the store) the first time.
    pub fn label(
        &mut self,
        key: LabelKey,
        make: impl FnOnce(&LabelKey) -> Result<UsageLabels>,
    ) -> Result<u32> {
        if let Some(&n) = self.labels.get(&key) {
            return Ok(n);
        }
        let n = self.tables.labels.len() as u32;
        self.tables.labels.push(Some(Arc::new(make(&key)?)));
        self.labels.insert(key, n);
        Ok(n)
    }

    /// The index of the GPU of id `id` (the store's), named by `uuid()` (a read of the store) the first time.
    pub fn gpu(&mut self, id: i64, uuid: impl FnOnce() -> Result<String>) -> Result<u32> {
        if let Some(&n) = self.gpus.get(&id) {
            return Ok(n);
        }
        let n = self.tables.gpus.len() as u32;
        self.tables.gpus.push(Arc::from(uuid()?));
        self.gpus.insert(id, n);
        Ok(n)
    }
}

/// The per-GPU rows of the buckets read, and the names they index into.
#[derive(Debug)]
pub struct UsageCache {
    buckets: BucketCache<UsageBucket>,
    names: Mutex<Names>,
}

impl UsageCache {
    /// A cache of at most `rows` rows; 0 keeps no rows (the names are kept all the same).
    pub fn new(rows: usize) -> UsageCache {
        UsageCache {
            buckets: BucketCache::new(rows),
            names: Mutex::new(Names::default()),
        }
    }

    /// See [`BucketCache::plan`].
    pub fn plan(&self, counts: &[(i64, i64)], to: i64) -> Plan<UsageBucket> {
        self.buckets.plan(counts, to)
    }

    /// The names, to intern the rows being read (held for the read's decoding).
    pub fn names(&self) -> MutexGuard<'_, Names> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Splits the rows read for `plan`'s ranges (`(bucket_ms, row)`, in any order) into buckets, keeps them,
    /// and returns the usage of the whole read: every bucket's rows, one chunk per bucket in bucket order, with
    /// a copy of the tables as they are now.
    pub fn keep(&self, plan: Plan<UsageBucket>, rows: Vec<GpuRow>) -> GpuUsage {
        let mut fresh: Vec<(i64, Filling)> = plan
            .missing
            .iter()
            .map(|&(b, count)| {
                (
                    b,
                    Filling {
                        count,
                        rows: Vec::new(),
                    },
                )
            })
            .collect();
        let mut last = 0;
        for r in rows {
            let i = crate::cache::read_cache::slot(&mut fresh, &mut last, r.bucket_start.0);
            fresh[i].1.rows.push(r);
        }
        let fresh = fresh
            .into_iter()
            .map(|(k, b)| {
                let rows = b.rows.into();
                (
                    k,
                    Arc::new(UsageBucket {
                        count: b.count,
                        rows,
                    }),
                )
            })
            .collect();
        let buckets = self.buckets.keep(plan.hits, fresh);
        let names = self.names();
        GpuUsage {
            labels: names.tables.labels.clone(),
            gpus: names.tables.gpus.clone(),
            chunks: buckets
                .iter()
                .filter(|b| !b.rows.is_empty())
                .map(|b| b.rows.clone())
                .collect(),
        }
    }
}

/// The usage of per-GPU rollups (a backend without the cache), one chunk in bucket order.
pub fn usage_of(rollups: &[Rollup]) -> Result<GpuUsage> {
    GpuUsage::from_rollups(rollups).map_err(|e| StoreError::Internal(e.to_string()))
}

/// Adds the raw cells of exact hours to `usage`, a chunk per hour (`cells`: each hour's), interned into its
/// tables; the chunks stay in bucket order.
pub fn add_cells(usage: &mut GpuUsage, cells: Vec<Vec<Rollup>>) -> Result<()> {
    if cells.iter().all(|c| c.is_empty()) {
        return Ok(());
    }
    let mut interner = Interner::of(usage);
    for hour in cells {
        let mut rows = hour
            .iter()
            .map(|r| interner.row(usage, r))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        rows.sort_by_key(|r| r.bucket_start);
        if !rows.is_empty() {
            usage.chunks.push(rows.into());
        }
    }
    usage
        .chunks
        .sort_by_key(|c| c.first().map(|r| r.bucket_start));
    Ok(())
}

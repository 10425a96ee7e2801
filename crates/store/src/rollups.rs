//! Rollup maintenance at ingest, backend-neutral: which samples of a batch append and which come late, which
//! terms are added to the stored rollups, which GPU-hours must be recomputed from raw samples and from which
//! samples. Pure functions over plain structs; each backend does the reading and writing around them
//! (SQLite in `sqlite::samples`, PostgreSQL in `postgres::samples`), so both keep the same rollups.
//!
//! The rollups of a GPU are always `rollup::aggregate(series::cells(its stored samples))`, bucket by bucket. That
//! sum has two kinds of terms: one per sample (`series::sample_cells`) and one per pair of consecutive samples
//! (`series::fill_between`: estimated cells, or a gap). Ingest keeps it true in two ways, per GPU:
//!
//! - **Fast path** (a sampler appending, the normal case): a sample that ends after every stored sample of its
//!   GPU only adds terms (its cells, and the fill from the previous sample), so they are added into the stored
//!   rollups (read-modify-write of exact decimals, one write per rollup row and batch) and its gap, if any,
//!   is inserted.
//! - **Slow path** (a late sample: a stored one ends after it): it breaks the pair of stored neighbours it falls
//!   between, so the GPU-hours that the old pair's terms and the new terms touch are marked dirty and
//!   recomputed from raw samples: load the samples around the hour ([`context_range`]), keep the cells of the
//!   hour and the gaps that start in it ([`bucket_terms`]), replace the hour's rollup and gap rows.
//!   Dirty buckets, for a run of late samples `s1..sk` that fell between the stored neighbours `P` and `N`: the
//!   buckets each sample's window touches, and for every pair whose term goes (`P, N`) or comes (`P, s1`, …,
//!   `sk, N`): the bucket holding the pair's first end (where its gap lives) and, when the span between them is at
//!   most `max_gap`, every bucket the span touches (its estimated cells). Fast-path terms are written first, so a
//!   recomputed bucket includes them.
//!
//! A batch goes through it in three steps, per GPU: [`split`] (needs the latest stored sample's end), then the
//! backend looks up each late sample (already stored? its stored neighbours), then [`BatchPlan::add_gpu`]; the
//! backend writes [`BatchPlan::rows`], adds [`BatchPlan::deltas`] into its rollups, inserts the plan's gaps and
//! recomputes each dirty bucket that is not frozen.
//!
//! Retention: pruning deletes raw rows but always keeps the latest sample of each GPU ([`prune_cutoff`]: so that
//! the next sample still sees its predecessor, and a long silence is reported as a gap), and records how far it
//! pruned ([`pruned_horizon`]). An hour whose recomputation would need pruned rows is *frozen*
//! ([`frozen_before`]): a sample arriving that late is stored, but its frozen hours keep their rollups (a warning
//! is logged), and reads serve such hours from rollups even when they are asked for exactly.

use std::collections::{BTreeMap, BTreeSet};

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{aggregate, Rollup};
use eai_engine::series::{self, SeriesConfig, SeriesOutput};
use eai_engine::time::Timestamp;

use crate::codec::Labels;
use crate::{DeploymentSeen, Result, StoreError};

/// Longest window a sample may cover (SPEC §2: `window_seconds` <= 3600).
pub const MAX_WINDOW_MS: i64 = 3_600_000;

/// Bookkeeping key: how far raw samples were pruned (milliseconds).
pub const PRUNED_BEFORE: &str = "raw_pruned_before_ms";

/// How samples are turned into rollups. Fixed for the life of a database: the stored rollups embody it, so a
/// backend records it when the database is created and refuses to open it with other values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupConfig {
    /// Missing spans up to this long are interpolated; longer ones are gaps.
    pub max_gap_ms: i64,
    /// Rollup bucket length, aligned to UTC (one hour).
    pub bucket_ms: i64,
    /// Write the replica's rows into the transactional outbox ([`crate::outbox`]) with every change. Not a
    /// recorded setting: a store may be opened with it on or off (`serve` turns it on when
    /// `EAI_CLICKHOUSE_URL` is set); changes made while it was off are never replicated.
    pub outbox: bool,
}

impl Default for RollupConfig {
    fn default() -> Self {
        let s = SeriesConfig::default();
        RollupConfig {
            max_gap_ms: s.max_gap_ms,
            bucket_ms: s.bucket_ms,
            outbox: false,
        }
    }
}

impl RollupConfig {
    pub fn series(&self) -> SeriesConfig {
        SeriesConfig {
            bucket_ms: self.bucket_ms,
            max_gap_ms: self.max_gap_ms,
        }
    }

    /// Refuses settings no rollup can be built with.
    pub fn check(&self) -> Result<()> {
        if self.bucket_ms <= 0 || self.max_gap_ms < 0 {
            return Err(StoreError::Internal(format!(
                "invalid rollup settings {self:?}"
            )));
        }
        Ok(())
    }

    /// The settings as the `(key, value)` pairs a backend records.
    pub fn settings(&self) -> [(&'static str, i64); 2] {
        [
            ("bucket_ms", self.bucket_ms),
            ("max_gap_ms", self.max_gap_ms),
        ]
    }

    /// Compares a recorded setting with ours: `Ok(true)` when it must be recorded (`have` is `None`).
    pub fn check_recorded(key: &str, have: Option<i64>, want: i64) -> Result<bool> {
        match have {
            None => Ok(true),
            Some(h) if h == want => Ok(false),
            Some(h) => Err(StoreError::Internal(format!(
                "the database was built with {key}={h}; it cannot be opened with {key}={want}"
            ))),
        }
    }
}

// --- step 1: split -------------------------------------------------------------------------------------------

/// The samples of a batch per GPU (GPUs in uuid order), each GPU's sorted by end. The sort is stable: among
/// re-sends of one window inside the batch, the first received stays first.
pub fn per_gpu<T>(batch: &[T], sample: impl Fn(&T) -> &Sample) -> Vec<Vec<&T>> {
    let mut order: Vec<&T> = batch.iter().collect();
    order.sort_by(|a, b| {
        let (a, b) = (sample(a), sample(b));
        (a.gpu_uuid.as_str(), a.end).cmp(&(b.gpu_uuid.as_str(), b.end))
    });
    order
        .chunk_by(|a, b| sample(a).gpu_uuid == sample(b).gpu_uuid)
        .map(<[&T]>::to_vec)
        .collect()
}

/// One GPU's batch, split against what is stored.
#[derive(Debug, Clone, Default)]
pub struct Split<'a> {
    /// Samples that end after every stored sample: they only add terms.
    pub appended: Vec<&'a Sample>,
    /// Samples that end at or before the latest stored one: the backend checks whether each is stored
    /// already (then it is a re-send: the first received wins) and reads its stored neighbours.
    pub late: Vec<&'a Sample>,
}

/// Splits one GPU's samples (sorted by end, as [`per_gpu`] gives them) given the end of its latest stored
/// sample. A re-send inside the batch is dropped: the first received wins.
pub fn split<'a>(group: &[&'a Sample], last_end: Option<Timestamp>) -> Split<'a> {
    let mut out = Split::default();
    let mut prev_end = None;
    for &s in group {
        if prev_end == Some(s.end) {
            continue;
        }
        prev_end = Some(s.end);
        match last_end {
            Some(l) if s.end <= l => out.late.push(s),
            _ => out.appended.push(s),
        }
    }
    out
}

// --- step 2: plan --------------------------------------------------------------------------------------------

/// A late sample that is not stored yet, and the stored neighbours it fell between, read before the batch
/// writes anything.
#[derive(Debug, Clone)]
pub struct Late<'a> {
    pub sample: &'a Sample,
    pub before: Option<Sample>,
    pub after: Option<Sample>,
}

/// What a batch writes.
#[derive(Debug, Default)]
pub struct BatchPlan<'a> {
    /// The samples to store, every one new (appended ones of each GPU in order, then its late ones).
    pub rows: Vec<&'a Sample>,
    /// Terms of appended samples: cells to add into the stored rollups, gaps to insert.
    pub terms: SeriesOutput,
    /// Buckets to recompute from raw samples once the rows and terms are written, per GPU uuid.
    pub dirty: BTreeMap<String, BTreeSet<i64>>,
}

impl<'a> BatchPlan<'a> {
    /// Plans one GPU: `last` is its latest stored sample, `appended` and `late` come from [`split`] (late ones
    /// already stored left out, in end order).
    pub fn add_gpu(
        &mut self,
        cfg: &RollupConfig,
        last: Option<&Sample>,
        appended: &[&'a Sample],
        late: &[Late<'a>],
    ) {
        // Fast path: only adds terms.
        let mut prev = last;
        for &s in appended {
            self.rows.push(s);
            if let Some(p) = prev {
                series::fill_between(p, s, &cfg.series(), &mut self.terms);
            }
            series::sample_cells(s, cfg.bucket_ms, &mut self.terms.cells);
            prev = Some(s);
        }

        // Slow path: runs of late samples that fell between the same stored pair replace that pair's term.
        let mut dirty = BTreeSet::new();
        let key = |l: &Late<'_>| {
            (
                l.before.as_ref().map(|s| s.end),
                l.after.as_ref().map(|s| s.end),
            )
        };
        for run in late.chunk_by(|a, b| key(a) == key(b)) {
            let (before, after) = (run[0].before.as_ref(), run[0].after.as_ref());
            if let (Some(a), Some(b)) = (before, after) {
                touch_pair(&mut dirty, a, b, cfg);
            }
            let mut p = before;
            for l in run {
                self.rows.push(l.sample);
                let s = l.sample;
                if let Some(a) = p {
                    touch_pair(&mut dirty, a, s, cfg);
                }
                touch(&mut dirty, s.start().0, s.end.0, cfg.bucket_ms);
                p = Some(s);
            }
            if let (Some(a), Some(b)) = (p, after) {
                touch_pair(&mut dirty, a, b, cfg);
            }
        }
        if let (false, Some(first)) = (dirty.is_empty(), late.first()) {
            self.dirty
                .entry(first.sample.gpu_uuid.clone())
                .or_default()
                .extend(dirty);
        }
    }

    /// The appended samples' cells summed into one delta per rollup key: what to add into the stored rollups.
    pub fn deltas(&mut self) -> Vec<Rollup> {
        aggregate(std::mem::take(&mut self.terms.cells))
    }

    /// Per series: the earliest and latest window end written by the batch.
    pub fn seen(&self) -> BTreeMap<Labels, (i64, i64)> {
        let mut seen: BTreeMap<Labels, (i64, i64)> = BTreeMap::new();
        for s in &self.rows {
            let e = s.end.0;
            let span = seen.entry(Labels::of(s)).or_insert((e, e));
            span.0 = span.0.min(e);
            span.1 = span.1.max(e);
        }
        seen
    }
}

/// A stored rollup with a delta added (or the delta alone when nothing is stored under its key).
pub fn merged(stored: Option<Rollup>, delta: Rollup) -> Rollup {
    match stored {
        Some(mut r) => {
            r.merge(&delta);
            r
        }
        None => delta,
    }
}

/// Adds the buckets that `[from, to)` touches.
fn touch(dirty: &mut BTreeSet<i64>, from: i64, to: i64, bucket_ms: i64) {
    let mut h = Timestamp(from).floor_to(bucket_ms).0;
    while h < to {
        dirty.insert(h);
        h += bucket_ms;
    }
}

/// The buckets that the term of a consecutive pair `(a, b)` can write: the gap record lives in the bucket of
/// `a.end`; estimated cells, only for a span up to `max_gap`, in the buckets of `[a.end, b.start)`.
fn touch_pair(dirty: &mut BTreeSet<i64>, a: &Sample, b: &Sample, cfg: &RollupConfig) {
    let hole = b.start().0 - a.end.0;
    if hole <= 0 {
        return;
    }
    dirty.insert(a.end.floor_to(cfg.bucket_ms).0);
    if hole <= cfg.max_gap_ms {
        touch(dirty, a.end.0, b.start().0, cfg.bucket_ms);
    }
}

// --- step 3: recompute ---------------------------------------------------------------------------------------

/// Every stored sample whose terms can reach bucket `h` ends in `[lo, hi)`; a backend reads those, plus the
/// one just before `lo` and the one at or after `hi`, so that the consecutive pairs near the bucket are the
/// true ones.
pub fn context_range(cfg: &RollupConfig, h: i64) -> (i64, i64) {
    (
        h - cfg.max_gap_ms - MAX_WINDOW_MS,
        h + cfg.bucket_ms + MAX_WINDOW_MS + cfg.max_gap_ms,
    )
}

/// The cells of bucket `h` of one GPU and the gaps that start in it, from its samples of [`context_range`]
/// (oldest first). Aggregate the cells for the bucket's rollups; keep them for an exact read.
pub fn bucket_terms(samples: &[Sample], cfg: &RollupConfig, h: i64) -> (Vec<Rollup>, Vec<Gap>) {
    let out = series::cells(samples, &cfg.series());
    let cells = out
        .cells
        .into_iter()
        .filter(|c| c.key.bucket_start.0 == h)
        .collect();
    let gaps = out
        .gaps
        .into_iter()
        .filter(|g| g.from.floor_to(cfg.bucket_ms).0 == h)
        .collect();
    (cells, gaps)
}

/// Buckets starting before this cannot be recomputed from raw samples (some were pruned): the recomputation
/// of bucket `h` needs every sample ending at or after `h - max_gap`.
pub fn frozen_before(pruned_before: Option<i64>, cfg: &RollupConfig) -> Option<i64> {
    pruned_before.map(|w| w.saturating_add(cfg.max_gap_ms))
}

/// The buckets of `[from, to)` to read as raw cells: those named (by any instant inside them) in `exact`,
/// unless frozen.
pub fn exact_buckets(
    exact: &[Timestamp],
    from: Timestamp,
    to: Timestamp,
    frozen: Option<i64>,
    cfg: &RollupConfig,
) -> BTreeSet<i64> {
    exact
        .iter()
        .map(|t| t.floor_to(cfg.bucket_ms).0)
        .filter(|h| from.0 <= *h && *h < to.0 && frozen.is_none_or(|f| *h >= f))
        .collect()
}

/// The order in which rollups (and exact cells) are returned by `usage_for`.
pub fn sort_for_read(rollups: &mut [Rollup]) {
    rollups.sort_by(|a, b| (&a.key, a.first_window_start).cmp(&(&b.key, b.first_window_start)));
}

// --- retention -----------------------------------------------------------------------------------------------

/// Raw samples of a GPU ending before this are deleted when pruning `before`: its latest sample (ending at
/// `last_end`) is always kept.
pub fn prune_cutoff(before: Timestamp, last_end: i64) -> i64 {
    before.0.min(last_end)
}

/// The pruning horizon to record after pruning `before`, given the one recorded (it never moves back).
pub fn pruned_horizon(recorded: Option<i64>, before: Timestamp) -> i64 {
    recorded.map_or(before.0, |w| w.max(before.0))
}

// --- deployments ---------------------------------------------------------------------------------------------

/// A `series` row as [`deployments_seen`] folds it: deployment, namespace, model, first and last window end.
pub type SeriesSeen = (String, String, String, i64, i64);

/// Folds series rows, ordered by deployment then by when they were seen last, into one entry per deployment
/// carrying the namespace and model seen last and the widest span.
pub fn deployments_seen(rows: impl IntoIterator<Item = SeriesSeen>) -> Vec<DeploymentSeen> {
    let mut out: Vec<DeploymentSeen> = Vec::new();
    for (deployment_id, namespace, model, first, last) in rows {
        match out.last_mut() {
            Some(d) if d.deployment_id == deployment_id => {
                d.first_seen = d.first_seen.min(Timestamp(first));
                d.last_seen = d.last_seen.max(Timestamp(last));
                d.namespace = namespace;
                d.model = model;
            }
            _ => out.push(DeploymentSeen {
                deployment_id,
                namespace,
                model,
                first_seen: Timestamp(first),
                last_seen: Timestamp(last),
            }),
        }
    }
    out
}

//! Rollup maintenance at ingest, backend-neutral: which samples of a batch append and which come late, which
//! terms are added to the stored rollups, which GPU-hours must be recomputed from raw samples and from which
//! samples. Pure functions over plain structs; each backend does the reading and writing around them
//! (SQLite in `sqlite::samples`, PostgreSQL in `postgres::samples`), so both keep the same rollups.
//!
//! This folder holds the rules of rollups, pure, below the plans that apply them ([`crate::plan`]): this module
//! the per-GPU rollups; [`groups`] the group rollups and usage claims an allocation reads; [`pruned`] what pruning
//! keeps of a GPU's history (edges whole, end sets of the others).
//!
//! The rollups of a GPU are always `rollup::aggregate(series::cells(its stored samples))`, bucket by bucket. That
//! sum has two kinds of terms: one per sample (`series::sample_cells`) and one per pair of consecutive samples
//! (`series::fill_between`: estimated cells, or a gap). Ingest keeps it true in two ways, per GPU:
//!
//! - **Fast path** (a sampler appending, the normal case): a sample that ends after every stored sample of its
//!   GPU only adds terms (its cells, and the fill from the previous sample), so they are added into the stored
//!   rollups (read-modify-write of exact decimals, one write per rollup row and batch) and its gap, if any,
//!   is inserted.
//! - **Before everything stored** (a late run with no stored sample of its GPU before it: a backfill, a spool
//!   replayed newest first): it breaks no pair, so its terms (its cells, the fills inside the run and the fill to
//!   the stored sample after it) are added like the fast path's: the cost of the hours it touches.
//! - **Between stored neighbours** (a late sample: a stored one ends after it; a replayed spool, a backfill,
//!   shuffled windows): it breaks the pair of stored neighbours `P`, `N` it falls between, so it is merged by
//!   terms (`BatchPlan::merge_terms`): the pair's term taken out, those of `(P, s)`, `s`, `(s, N)` added into
//!   the per-GPU rollups and their groups, gaps deleted and written, at the cost of the hours the terms touch.
//!   That is exact for sums and counts; a row's earliest and latest window starts are kept unless an added cell
//!   widens them, which is exact unless a removed cell held one and no added cell does ([`moves_inward`]).
//! - **Slow path**: the GPU-hours that the old pair's terms and the new terms touch are marked dirty and
//!   recomputed from raw samples where merging by terms is not known exact: an hour a policy cuts (its rows may
//!   have been written before the cut), a row whose window starts may move inward, a neighbour known only by
//!   its end (`BatchPlan::open_by_terms`). Load the samples around the hour ([`context_range`]), keep the
//!   cells of the hour and the gaps that start in it ([`bucket_terms`]), replace the hour's rollup and gap rows.
//!   Dirty buckets, for a run of late samples `s1..sk` that fell between the stored neighbours `P` and `N`: the
//!   buckets each sample's window touches, and for every pair whose term goes (`P, N`) or comes (`P, s1`, …,
//!   `sk, N`): the bucket holding the pair's first end (where its gap lives) and, when the span between them is at
//!   most `max_gap`, every bucket the span touches (its estimated cells). Fast-path terms are written first, so a
//!   recomputed bucket includes them.
//!
//! A batch goes through it in three steps, per GPU: [`split`] (needs the latest stored sample's end), then the
//! backend looks up each late sample (already stored? its stored neighbours), then [`BatchPlan::add_gpu`]; the
//! backend writes [`BatchPlan::rows`], adds [`BatchPlan::deltas`] into its rollups, inserts the plan's gaps,
//! merges [`BatchPlan::frozen_deltas`] (the terms of late samples, frozen hours or not) and recomputes each
//! dirty bucket that is not frozen.
//!
//! Retention: pruning keeps the latest sample of each GPU ([`prune_cutoff`]: so that the next sample still sees its
//! predecessor, and a long silence is reported as a gap) and every sample next to a hole (an *edge*), and leaves of
//! the others only their end ([`crate::rollups::pruned`]); it records how far it pruned ([`pruned_horizon`]). An
//! hour whose recomputation would need pruned rows is *frozen* ([`frozen_before`]). A late sample whose terms reach
//! frozen hours is merged there by terms always ([`BatchPlan`]: the old pair's term taken out, the new terms
//! added, computed from the neighbours, which are edges whenever a term needs them); there a row's window starts
//! stay as they were (no recomputation can narrow them), and its groups are rebuilt. Reads serve frozen hours
//! from rollups even when they are asked for exactly.
//!
//! Policy boundaries: rollups are cut at the instants where a policy starts or ends inside an hour ([`Cuts`]):
//! each cell goes to the segment that holds its start, so a rollup never spans a boundary known when its cells
//! were written, and an hour priced from its rollups is priced exactly even when its raw samples are gone. A
//! boundary is a cut unless its hour was frozen and already held rollups when the policy was made ([`new_cuts`]:
//! decided by what is rolled up, not by the horizon alone, so a backfill older than the retention that comes
//! after its policies is cut like a live hour); pruning re-cuts an hour from raw samples before freezing it, so
//! every cell of a frozen hour is keyed the same way for good.

pub mod groups;
pub mod pruned;

use std::collections::{BTreeMap, BTreeSet};

use eai_engine::domain::{Sample, TenantId};
use eai_engine::error::FieldError;
use eai_engine::report::Gap;
use eai_engine::rollup::{aggregate, Rollup, RollupKey};
use eai_engine::series::{self, SeriesConfig, SeriesOutput};
use eai_engine::time::Timestamp;

use self::pruned::Known;
use crate::codec::LabelsRef;
use crate::{DeploymentSeen, Result, StoreError};

/// Longest window a sample may cover (SPEC §2: `window_seconds` <= 3600).
pub const MAX_WINDOW_MS: i64 = eai_engine::domain::WindowMs::MAX.get();

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
    /// `EAI_CLICKHOUSE_URL` is set); changes made while it was off reach a replica only through
    /// `eai-gpu replica backfill` ([`crate::clickhouse::backfill`]).
    pub outbox: bool,
    /// Rows (group rollups and claims) the allocation's read cache may hold ([`crate::cache::read_cache`]; 0: none).
    /// Not a recorded setting either.
    pub read_cache_rows: usize,
    /// Per-GPU rows the breakdown's read cache may hold ([`crate::cache::usage_cache`]; 0: none). Not recorded.
    pub usage_cache_rows: usize,
}

impl Default for RollupConfig {
    fn default() -> Self {
        let s = SeriesConfig::default();
        RollupConfig {
            max_gap_ms: s.max_gap_ms,
            bucket_ms: s.bucket_ms,
            outbox: false,
            read_cache_rows: crate::cache::read_cache::DEFAULT_ROWS,
            usage_cache_rows: crate::cache::usage_cache::DEFAULT_ROWS,
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

/// Instants (milliseconds) where a policy starts or ends inside a bucket: rollups are cut there. Sorted, distinct.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cuts(Vec<i64>);

impl Cuts {
    pub fn new(instants: impl IntoIterator<Item = i64>) -> Cuts {
        let mut v: Vec<i64> = instants.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        Cuts(v)
    }

    /// The start of the segment holding instant `t`: the latest cut inside `t`'s bucket at or before `t`, else
    /// the bucket's start.
    pub fn segment(&self, t: Timestamp, bucket_ms: i64) -> Timestamp {
        let h = t.floor_to(bucket_ms);
        let i = self.0.partition_point(|&c| c <= t.0);
        match i.checked_sub(1).map(|i| self.0[i]) {
            Some(c) if c > h.0 => Timestamp(c),
            _ => h,
        }
    }

    /// Keys each cell by the segment that holds its start. Cells only: a rollup of several cells cannot be cut.
    pub fn apply(&self, cells: &mut [Rollup], bucket_ms: i64) {
        if self.0.is_empty() {
            return;
        }
        for c in cells {
            c.key.bucket_start = self.segment(c.first_window_start, bucket_ms);
        }
    }

    /// The cuts in `[from, to)`.
    pub fn within(&self, from: i64, to: i64) -> impl Iterator<Item = i64> + '_ {
        self.0.iter().copied().filter(move |&c| from <= c && c < to)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Which policy instants become cuts when a policy is made: those inside a bucket (not on its start) whose
/// bucket's rollups can still be cut at them. That is every bucket not frozen yet (its raw samples are all
/// there: reads of it go to them, and pruning re-cuts it from them before it freezes), and a frozen bucket that
/// holds no rollup yet (`rolled_up`, the frozen buckets that do, as [`frozen_buckets`] names them for the
/// backend to look up): nothing was summed across the boundary there, so the samples that come later (a
/// backfill of last quarter, a replayed spool) are cut as they arrive. Only a frozen bucket already rolled up is
/// kept whole, its cells keyed as they were for good: the allocation then reports that its raw samples were
/// pruned before the policy existed.
pub fn new_cuts(
    instants: impl IntoIterator<Item = Timestamp>,
    frozen: Option<i64>,
    rolled_up: &BTreeSet<i64>,
    cfg: &RollupConfig,
) -> Vec<i64> {
    instants
        .into_iter()
        .filter(|t| t.0.rem_euclid(cfg.bucket_ms) != 0)
        .filter(|t| {
            let h = t.floor_to(cfg.bucket_ms).0;
            frozen.is_none_or(|f| h >= f) || !rolled_up.contains(&h)
        })
        .map(|t| t.0)
        .collect()
}

/// The frozen buckets that a policy's instants fall inside (not on their start), distinct: the backend looks
/// up which of them hold rollups, for [`new_cuts`].
pub fn frozen_buckets(
    instants: impl IntoIterator<Item = Timestamp>,
    frozen: Option<i64>,
    cfg: &RollupConfig,
) -> BTreeSet<i64> {
    instants
        .into_iter()
        .filter(|t| t.0.rem_euclid(cfg.bucket_ms) != 0)
        .map(|t| t.floor_to(cfg.bucket_ms).0)
        .filter(|h| frozen.is_some_and(|f| *h < f))
        .collect()
}

/// What a backend reads once per batch before planning it: how far raw samples were pruned, where the index of
/// pruned windows starts (a database pruned before it kept one), and the cuts.
#[derive(Debug, Clone, Default)]
pub struct Horizon {
    pub pruned_before: Option<i64>,
    pub indexed_from: Option<i64>,
    pub cuts: Cuts,
}

impl Horizon {
    pub fn frozen(&self, cfg: &RollupConfig) -> Option<i64> {
        frozen_before(self.pruned_before, cfg)
    }

    /// Whether a late sample ending at `end`, whose raw neighbour before it ends at `raw_before`, must be looked
    /// up in the pruned windows' index too: when pruned windows may lie between them.
    pub fn reads_index(&self, end: i64, raw_before: Option<i64>) -> bool {
        self.pruned_before
            .is_some_and(|p| end < p || raw_before.is_none_or(|b| b < p))
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

/// A late sample that is not stored yet, and the stored neighbours it fell between (raw rows, or pruned
/// windows of which only the end is left), read before the batch writes anything.
#[derive(Debug, Clone)]
pub struct Late<'a> {
    pub sample: &'a Sample,
    pub before: Option<Known>,
    pub after: Option<Known>,
}

/// Terms of late samples merged by terms (frozen hours, and open ones per `BatchPlan::open_by_terms`): cells to
/// add and cells to take out of the stored rollups, gaps to write and gaps to delete (by GPU uuid and start).
#[derive(Debug, Default)]
pub struct FrozenTerms {
    pub added: Vec<Rollup>,
    pub removed: Vec<Rollup>,
    pub gaps: Vec<Gap>,
    pub gaps_removed: Vec<(String, i64)>,
}

/// Why a late sample cannot be merged exactly.
pub const CANNOT_MERGE_OVERLAP: &str = "it overlaps a counted window and leaves a hole after another one, in an \
    hour whose raw samples were pruned: it cannot be merged exactly (send the windows as first sent)";
pub const CANNOT_MERGE_LEGACY: &str =
    "its hour was pruned before eai-gpu kept an index of pruned windows: it \
    cannot be told apart from a re-send, so it cannot be counted exactly";

/// What a batch writes.
#[derive(Debug)]
pub struct BatchPlan<'a> {
    cfg: RollupConfig,
    horizon: Horizon,
    /// The samples to store, every one new (appended ones of each GPU in order, then its late ones).
    pub rows: Vec<&'a Sample>,
    /// Terms of appended samples: cells to add into the stored rollups, gaps to insert.
    pub terms: SeriesOutput,
    /// Buckets to recompute from raw samples once the rows and terms are written, per GPU uuid (never frozen).
    pub dirty: BTreeMap<String, BTreeSet<i64>>,
    /// Terms of late samples merged by terms, not recomputed (frozen hours, and open ones between raw rows).
    pub frozen: FrozenTerms,
    /// Late samples that cannot be merged exactly, and why: the batch must be refused.
    pub refused: Vec<(&'a Sample, &'static str)>,
    /// Per GPU uuid: rows written below the pruning horizon start here (with their raw neighbour before): the next
    /// pruning classifies the GPU's raw rows from there.
    pub pending: BTreeMap<String, i64>,
}

impl<'a> BatchPlan<'a> {
    pub fn new(cfg: RollupConfig, horizon: Horizon) -> Self {
        BatchPlan {
            cfg,
            horizon,
            rows: Vec::new(),
            terms: SeriesOutput::default(),
            dirty: BTreeMap::new(),
            frozen: FrozenTerms::default(),
            refused: Vec::new(),
            pending: BTreeMap::new(),
        }
    }

    pub fn horizon(&self) -> &Horizon {
        &self.horizon
    }

    pub fn cfg(&self) -> RollupConfig {
        self.cfg
    }

    /// Notes a row written after a stored neighbour ending at `before` (none: the row itself).
    fn note_written(&mut self, s: &Sample, before: Option<i64>) {
        let from = before.unwrap_or(s.end.0).min(s.end.0);
        if self.horizon.pruned_before.is_some_and(|p| from < p) {
            let e = self.pending.entry(s.gpu_uuid.clone()).or_insert(from);
            *e = (*e).min(from);
        }
    }

    /// A sample's cells into the terms: summed by key as they come when no policy cuts a bucket (they are summed
    /// by key in [`BatchPlan::deltas`] anyway; a cut needs them one by one).
    fn add_cells(&mut self, s: &Sample) {
        match self.horizon.cuts.is_empty() {
            true => series::add_sample_cells(s, self.cfg.bucket_ms, &mut self.terms.cells),
            false => series::sample_cells(s, self.cfg.bucket_ms, &mut self.terms.cells),
        }
    }

    /// Plans one GPU: `last` is its latest stored sample, `appended` and `late` come from [`split`] (late ones
    /// already stored left out, in end order).
    pub fn add_gpu(&mut self, last: Option<&Sample>, appended: &[&'a Sample], late: &[Late<'a>]) {
        let cfg = self.cfg;
        // Fast path: only adds terms.
        let mut prev = last;
        for &s in appended {
            self.rows.push(s);
            self.note_written(s, prev.map(|p| p.end.0));
            if let Some(p) = prev {
                series::fill_between(p, s, &cfg.series(), &mut self.terms);
            }
            self.add_cells(s);
            prev = Some(s);
        }

        // Slow path: runs of late samples that fell between the same stored pair replace that pair's term.
        let frozen = self.horizon.frozen(&cfg);
        let key = |l: &Late<'_>| {
            (
                l.before.as_ref().map(Known::end),
                l.after.as_ref().map(Known::end),
            )
        };
        for run in late.chunk_by(|a, b| key(a) == key(b)) {
            let (before, after) = (run[0].before.as_ref(), run[0].after.as_ref());
            let samples: Vec<&'a Sample> = run.iter().map(|l| l.sample).collect();
            // A run before everything stored of its GPU (a backfill, a spool replayed newest first) breaks no
            // pair: it only adds terms, like the fast path, at the cost of the hours it touches. Not where the
            // database was pruned before it indexed pruned windows: windows it cannot see may precede the run.
            if before.is_none()
                && self.horizon.indexed_from.is_none()
                && matches!(after, None | Some(Known::Raw(_)))
            {
                let mut prev: Option<&Sample> = None;
                for &s in &samples {
                    self.rows.push(s);
                    if let Some(p) = prev {
                        series::fill_between(p, s, &cfg.series(), &mut self.terms);
                    }
                    self.add_cells(s);
                    prev = Some(s);
                }
                if let (Some(p), Some(Known::Raw(n))) = (prev, after) {
                    series::fill_between(p, n, &cfg.series(), &mut self.terms);
                }
                self.note_written(samples[0], None);
                continue;
            }
            let mut dirty = BTreeSet::new();
            // The pair's own term: only two raw rows can have one (a pruned window never has a hole next to it).
            if let (Some(Known::Raw(a)), Some(Known::Raw(b))) = (before, after) {
                touch_pair(&mut dirty, a, b, &cfg);
            }
            let mut p = before.map(|k| (k.end(), k.raw().map(Sample::start)));
            for &s in &samples {
                if let Some((end, _)) = p {
                    touch_span(&mut dirty, end, s.start().0, &cfg);
                }
                touch(&mut dirty, s.start().0, s.end.0, cfg.bucket_ms);
                p = Some((s.end.0, Some(s.start())));
            }
            if let (Some((end, _)), Some(Known::Raw(b))) = (p, after) {
                touch_span(&mut dirty, end, b.start().0, &cfg);
            }
            // Merged by terms: the frozen hours always; the open ones too when both neighbours are raw rows
            // (then they are the true neighbours) and no policy cuts the hour (its stored rows may not be cut
            // at a cut made after they were written: the recomputation re-cuts it).
            let by_terms = self.open_by_terms(before, samples[0], after);
            let b = cfg.bucket_ms;
            let terms_hours: BTreeSet<i64> = dirty
                .iter()
                .copied()
                .filter(|&h| {
                    frozen.is_some_and(|f| h < f)
                        || (by_terms && self.horizon.cuts.within(h, h + b).next().is_none())
                })
                .collect();
            if !terms_hours.is_empty() {
                if let Err(reason) = self.merge_terms(before, &samples, after, &terms_hours) {
                    self.refused.extend(samples.iter().map(|&s| (s, reason)));
                    continue;
                }
            }
            for &s in &samples {
                self.rows.push(s);
            }
            let first = samples[0];
            self.note_written(first, before.and_then(|k| k.raw()).map(|b| b.end.0));
            let open: BTreeSet<i64> = dirty.difference(&terms_hours).copied().collect();
            if !open.is_empty() {
                self.dirty
                    .entry(first.gpu_uuid.clone())
                    .or_default()
                    .extend(open);
            }
        }
    }

    /// Whether a run of late samples starting with `first` between `before` and `after` is merged by terms in the
    /// hours that are not frozen: when both neighbours are raw rows (a run with no stored sample after it has
    /// none) and [`BatchPlan::merge_terms`] cannot refuse it.
    fn open_by_terms(&self, before: Option<&Known>, first: &Sample, after: Option<&Known>) -> bool {
        let raw =
            matches!(before, Some(Known::Raw(_))) && matches!(after, None | Some(Known::Raw(_)));
        let indexed = self
            .horizon
            .indexed_from
            .is_none_or(|x| first.end.0 >= x && before.is_some_and(|b| b.end() >= x));
        raw && indexed
    }

    /// The terms of a run of late samples `run` between `before` and `after`, restricted to the hours `hours`
    /// (frozen ones, and open ones per [`BatchPlan::open_by_terms`]): the pair's old term goes, the run's come. Fails when a term needs a neighbour whose raw row
    /// was pruned (a hole after an end-only window), or where the index of pruned windows does not reach.
    fn merge_terms(
        &mut self,
        before: Option<&Known>,
        run: &[&'a Sample],
        after: Option<&Known>,
        hours: &BTreeSet<i64>,
    ) -> std::result::Result<(), &'static str> {
        let (cfg, sc) = (self.cfg, self.cfg.series());
        let (Some(&first), Some(&last)) = (run.first(), run.last()) else {
            return Ok(());
        };
        if let Some(x) = self.horizon.indexed_from {
            if first.end.0 < x || before.is_none_or(|b| b.end() < x) {
                return Err(CANNOT_MERGE_LEGACY);
            }
        }
        let mut old = SeriesOutput::default();
        if let (Some(Known::Raw(a)), Some(Known::Raw(b))) = (before, after) {
            series::fill_between(a, b, &sc, &mut old);
        }
        let mut new = SeriesOutput::default();
        match before {
            Some(Known::Raw(p)) => series::fill_between(p, first, &sc, &mut new),
            Some(Known::Pruned(end)) if first.start().0 > *end => return Err(CANNOT_MERGE_OVERLAP),
            _ => {}
        }
        for w in run.windows(2) {
            series::fill_between(w[0], w[1], &sc, &mut new);
        }
        for &s in run {
            series::sample_cells(s, cfg.bucket_ms, &mut new.cells);
        }
        if let Some(Known::Raw(n)) = after {
            series::fill_between(last, n, &sc, &mut new);
        }
        let inside = |t: Timestamp| hours.contains(&t.floor_to(cfg.bucket_ms).0);
        let f = &mut self.frozen;
        f.added
            .extend(new.cells.into_iter().filter(|c| inside(c.key.bucket_start)));
        f.removed
            .extend(old.cells.into_iter().filter(|c| inside(c.key.bucket_start)));
        f.gaps
            .extend(new.gaps.into_iter().filter(|g| inside(g.from)));
        f.gaps_removed.extend(
            old.gaps
                .into_iter()
                .filter(|g| inside(g.from))
                .map(|g| (g.gpu_uuid, g.from.0)),
        );
        Ok(())
    }

    /// The appended samples' cells, cut at the policy boundaries and summed into one delta per rollup key: what to
    /// add into the stored rollups.
    pub fn deltas(&mut self) -> Vec<Rollup> {
        let mut cells = std::mem::take(&mut self.terms.cells);
        self.horizon.cuts.apply(&mut cells, self.cfg.bucket_ms);
        aggregate(cells)
    }

    /// The changes of the hours merged by terms, per rollup key: the sum of the cells to add and of the cells to
    /// take out (cut at the policy boundaries, as when they were added). Apply each with [`unmerged`], unless
    /// [`moves_inward`] says it is not exact.
    pub fn frozen_deltas(&mut self) -> Vec<(RollupKey, Option<Rollup>, Option<Rollup>)> {
        let b = self.cfg.bucket_ms;
        let mut added = std::mem::take(&mut self.frozen.added);
        let mut removed = std::mem::take(&mut self.frozen.removed);
        self.horizon.cuts.apply(&mut added, b);
        self.horizon.cuts.apply(&mut removed, b);
        let mut out: BTreeMap<RollupKey, (Option<Rollup>, Option<Rollup>)> = BTreeMap::new();
        for r in aggregate(added) {
            let k = r.key.clone();
            out.entry(k).or_default().0 = Some(r);
        }
        for r in aggregate(removed) {
            let k = r.key.clone();
            out.entry(k).or_default().1 = Some(r);
        }
        out.into_iter().map(|(k, (a, r))| (k, a, r)).collect()
    }

    /// Per series: the earliest and latest window end written by the batch.
    pub fn seen(&self) -> BTreeMap<LabelsRef<'a>, (i64, i64)> {
        let mut seen: BTreeMap<LabelsRef<'a>, (i64, i64)> = BTreeMap::new();
        for &s in &self.rows {
            let e = s.end.0;
            let span = seen.entry(LabelsRef::of(s)).or_insert((e, e));
            span.0 = span.0.min(e);
            span.1 = span.1.max(e);
        }
        seen
    }
}

/// The refusal of a batch whose plan refused samples: each located by its index in `batch` (the first copy of a
/// window re-sent inside the batch).
pub fn refusal(batch: &[Sample], refused: &[(&Sample, &'static str)]) -> StoreError {
    let mut at: std::collections::HashMap<(&str, i64), usize> = std::collections::HashMap::new();
    for (i, s) in batch.iter().enumerate().rev() {
        at.insert((s.gpu_uuid.as_str(), s.end.0), i);
    }
    let mut errors: Vec<FieldError> = refused
        .iter()
        .map(|(s, why)| {
            let e = FieldError::new("timestamp", *why);
            match at.get(&(s.gpu_uuid.as_str(), s.end.0)) {
                Some(&i) => e.at(i),
                None => e,
            }
        })
        .collect();
    errors.sort_by_key(|e| e.index);
    StoreError::Refused(errors)
}

/// A stored rollup with the cells of frozen-hour terms added and taken out: `None` when nothing is left (the
/// row goes). Counts and sums are exact, so taking out what was added leaves exactly zero; anything that would
/// go below zero means the stored rows do not hold what the index says, and is refused.
pub fn unmerged(
    stored: Option<Rollup>,
    added: Option<Rollup>,
    removed: Option<Rollup>,
) -> Result<Option<Rollup>> {
    let mut r = match (stored, added) {
        (Some(s), Some(a)) => merged(Some(s), a),
        (Some(s), None) => s,
        (None, Some(a)) => a,
        (None, None) => {
            return match removed {
                None => Ok(None),
                Some(x) => Err(negative(&x.key)),
            }
        }
    };
    if let Some(x) = removed {
        r.samples = r
            .samples
            .checked_sub(x.samples)
            .ok_or_else(|| negative(&r.key))?;
        r.estimated_samples = r
            .estimated_samples
            .checked_sub(x.estimated_samples)
            .ok_or_else(|| negative(&r.key))?;
        r.q.sub(&x.q);
    }
    let parts = r.q.values();
    if parts.iter().any(|v| v.is_sign_negative() && !v.is_zero()) {
        return Err(negative(&r.key));
    }
    if r.q.gpu_seconds.is_zero() {
        if parts.iter().all(|v| v.is_zero()) && r.samples == 0 && r.estimated_samples == 0 {
            return Ok(None);
        }
        return Err(negative(&r.key));
    }
    Ok(Some(r))
}

/// Whether taking `removed` out of `stored` (and adding `added`) may move the row's earliest or latest window
/// start inward: when a removed cell starts at the row's earliest (latest) start and no added one starts at or
/// before (after) it. [`unmerged`] keeps the stored starts, so where this holds it is not exact: an hour whose
/// raw samples are all there is recomputed instead. The removed cells are the stored row's, so a removed
/// earliest start after the stored one leaves the cell that holds the stored one.
pub fn moves_inward(
    stored: Option<&Rollup>,
    added: Option<&Rollup>,
    removed: Option<&Rollup>,
) -> bool {
    let (Some(s), Some(x)) = (stored, removed) else {
        return false;
    };
    let first = x.first_window_start <= s.first_window_start
        && added.is_none_or(|a| a.first_window_start > s.first_window_start);
    let last = x.last_window_start >= s.last_window_start
        && added.is_none_or(|a| a.last_window_start < s.last_window_start);
    first || last
}

fn negative(key: &RollupKey) -> StoreError {
    StoreError::Internal(format!(
        "merging a late sample into the rollup {key:?} would leave it inconsistent: the stored rollups do not \
         hold the pruned windows' terms"
    ))
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
    touch_span(dirty, a.end.0, b.start().0, cfg);
}

/// [`touch_pair`] of a pair known by the first one's end and the second one's start.
fn touch_span(dirty: &mut BTreeSet<i64>, a_end: i64, b_start: i64, cfg: &RollupConfig) {
    let hole = b_start - a_end;
    if hole <= 0 {
        return;
    }
    dirty.insert(Timestamp(a_end).floor_to(cfg.bucket_ms).0);
    if hole <= cfg.max_gap_ms {
        touch(dirty, a_end, b_start, cfg.bucket_ms);
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

/// The cells of bucket `h` of one GPU (cut at `cuts`) and the gaps that start in it, from its samples of
/// [`context_range`] (oldest first). Aggregate the cells for the bucket's rollups; keep them for an exact read.
pub fn bucket_terms(
    samples: &[Sample],
    cfg: &RollupConfig,
    cuts: &Cuts,
    h: i64,
) -> (Vec<Rollup>, Vec<Gap>) {
    let out = series::cells(samples, &cfg.series());
    let mut cells: Vec<Rollup> = out
        .cells
        .into_iter()
        .filter(|c| c.key.bucket_start.0 == h)
        .collect();
    cuts.apply(&mut cells, cfg.bucket_ms);
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

/// What pruning up to `before` does to the horizon, given the one recorded: the new horizon, and the hours about
/// to freeze that hold a cut (to re-cut from raw samples before their raw rows go).
pub fn refreeze(
    cuts: &Cuts,
    recorded: Option<i64>,
    before: Timestamp,
    cfg: &RollupConfig,
) -> (i64, BTreeSet<i64>) {
    let horizon = pruned_horizon(recorded, before);
    let (old, new) = (
        frozen_before(recorded, cfg),
        frozen_before(Some(horizon), cfg),
    );
    let hours = cuts
        .within(i64::MIN, i64::MAX)
        .map(|c| Timestamp(c).floor_to(cfg.bucket_ms).0)
        .filter(|h| old.is_none_or(|f| *h >= f) && new.is_some_and(|f| *h < f))
        .collect();
    (horizon, hours)
}

/// The order in which rollups (and exact cells) are returned by `usage_for`: hour, deployment, owner, model
/// (the primary key of the group tables, which a period's range scan already follows), then GPU and first
/// window.
pub fn sort_for_read(rollups: &mut [Rollup]) {
    rollups.sort_by(|a, b| read_order(a).cmp(&read_order(b)));
}

fn read_order(r: &Rollup) -> (Timestamp, &str, Option<TenantId>, &str, &str, Timestamp) {
    let k = &r.key;
    (
        k.bucket_start,
        &k.deployment_id,
        k.owner,
        &k.model,
        &k.gpu_uuid,
        r.first_window_start,
    )
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

/// A `series` row as [`deployments_seen`] folds it: deployment, namespace, model, first and last window end,
/// owner.
pub type SeriesSeen = (
    String,
    String,
    String,
    i64,
    i64,
    Option<eai_engine::domain::TenantId>,
);

/// Folds series rows, ordered by deployment then by when they were seen last, into one entry per deployment
/// carrying the namespace and model seen last, the widest span and every owner.
pub fn deployments_seen(rows: impl IntoIterator<Item = SeriesSeen>) -> Vec<DeploymentSeen> {
    let mut out: Vec<DeploymentSeen> = Vec::new();
    for (deployment_id, namespace, model, first, last, owner) in rows {
        match out.last_mut() {
            Some(d) if d.deployment_id == deployment_id => {
                d.first_seen = d.first_seen.min(Timestamp(first));
                d.last_seen = d.last_seen.max(Timestamp(last));
                d.namespace = namespace;
                d.model = model;
                if let Err(i) = d.owners.binary_search(&owner) {
                    d.owners.insert(i, owner);
                }
            }
            _ => out.push(DeploymentSeen {
                deployment_id,
                namespace,
                model,
                first_seen: Timestamp(first),
                last_seen: Timestamp(last),
                owners: vec![owner],
            }),
        }
    }
    out
}

/// The span of [`crate::ReplicaStore::replica_extent`] from each table's least and greatest instant, as the backends
/// read them: rollup buckets (a bucket counts to its end, where its last sample may end), gap starts, event
/// times. `None` when every table is empty.
pub fn replica_extent(
    cfg: &RollupConfig,
    buckets: (Option<i64>, Option<i64>),
    gap_starts: (Option<i64>, Option<i64>),
    events: (Option<i64>, Option<i64>),
) -> Option<(Timestamp, Timestamp)> {
    let from = [buckets.0, gap_starts.0, events.0]
        .into_iter()
        .flatten()
        .min()?;
    let to = [
        buckets.1.map(|b| b.saturating_add(cfg.bucket_ms)),
        gap_starts.1,
        events.1,
    ]
    .into_iter()
    .flatten()
    .max()?;
    Some((Timestamp(from), Timestamp(to.saturating_add(1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(first: i64, last: i64) -> Rollup {
        Rollup {
            key: RollupKey {
                gpu_uuid: "GPU-a".into(),
                deployment_id: "vllm".into(),
                owner: None,
                model: "H100".into(),
                bucket_start: Timestamp(0),
                placement: Default::default(),
            },
            first_window_start: Timestamp(first),
            last_window_start: Timestamp(last),
            samples: 0,
            estimated_samples: 0,
            q: Default::default(),
            gpus: None,
        }
    }

    #[test]
    fn a_window_start_moves_inward_only_when_a_removed_cell_held_it_and_no_added_one_does() {
        let stored = row(0, 45);
        let inward = |added: Option<Rollup>, removed: Option<Rollup>| {
            moves_inward(Some(&stored), added.as_ref(), removed.as_ref())
        };
        assert!(!inward(None, None), "nothing taken out");
        assert!(
            !inward(None, Some(row(15, 30))),
            "the cells at 0 and 45 stay"
        );
        assert!(
            inward(None, Some(row(0, 15))),
            "the cell at 0 may be the only one"
        );
        assert!(
            inward(None, Some(row(30, 45))),
            "the cell at 45 may be the only one"
        );
        assert!(!inward(Some(row(0, 15)), Some(row(0, 15))), "0 added back");
        assert!(
            inward(Some(row(10, 40)), Some(row(30, 45))),
            "45 not added back"
        );
        assert!(
            !inward(Some(row(10, 50)), Some(row(30, 45))),
            "a later one added"
        );
        assert!(
            !moves_inward(None, None, Some(&row(0, 0))),
            "no stored row: unmerged refuses it"
        );
    }
}

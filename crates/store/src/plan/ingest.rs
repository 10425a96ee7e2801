//! One sample batch, planned without I/O: the steps both backends take to ingest a batch, and every decision in
//! them, written once. A backend only performs the reads each step asks for and the writes it returns (bind,
//! send, decode); [`crate::rollups`] holds the rules of the terms themselves.
//!
//! ```text
//!  batch ──► Ingest::new ─────────── encode (exact figures), refuse the reserved tenant, group per GPU
//!              │  reads: GPU ids (interned), horizon + cuts, each GPU's latest sample
//!              ▼
//!            Ingest::split ───────── appended / late samples per GPU
//!              │  reads: per late sample: stored already? raw neighbours; end sets where `needs_index` says
//!              ▼
//!            Ingest::plan ────────── re-sends dropped, runs of late samples planned, refusal (422)
//!              │  = IngestPlan: rows, series spans, fast deltas, gaps, frozen deltas, dirty hours, pending
//!              │  reads: the stored rollups of the deltas' keys (fast, frozen), raw context of dirty hours
//!              ▼
//!            IngestPlan::{merged, frozen, recompute} ─── rollup rows to write / delete, gaps, group deltas,
//!              │                                          stale groups, outbox rows
//!              ▼
//!            IngestPlan::finish ─── outcome, audit event, outbox rows, group deltas + stale keys
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};
use rustc_hash::FxHashMap;

use crate::codec::{decode, Figures, Labels, LabelsRef};
use crate::outbox::OutboxRows;
use crate::plan::recompute::Recompute;
use crate::records::check_owner;
use crate::rollups::groups::{GroupDeltas, GroupKey};
use crate::rollups::pruned::{EndsNear, Known};
use crate::rollups::{self, BatchPlan, Horizon, Late, RollupConfig, Split};
use crate::{AuditDraft, IngestOutcome, Result, StoreError};

/// A late sample as the backend names it to read it: (GPU id, window end).
pub type LateKey = (i64, i64);

/// Late samples of one GPU looked up together: (GPU id, first end, last end) ([`late_runs`]).
pub type LateRun = (i64, i64, i64);

/// What a backend read of a [`LateRun`]: the ends of its GPU's stored raw rows in `[first, last]`, in order, and
/// the nearest stored end before `first` and after `last`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRead {
    pub stored: Vec<i64>,
    pub before: Option<i64>,
    pub after: Option<i64>,
}

/// One late sample as looked up: (stored already, end of the stored sample before, end of the one after).
pub type Lookup = (bool, Option<i64>, Option<i64>);

/// How far apart two late samples of a GPU may end and still be read as one run ([`late_runs`]): a run reads the
/// stored rows between its ends, so the span bounds that read (20 rows at 15 s windows) while a backfill's
/// batch (consecutive windows) stays one run per GPU.
pub const LATE_RUN_SPAN_MS: i64 = 300_000;

/// The runs of `late` (in any order), in GPU id and end order: each GPU's late ends, split where
/// two consecutive ones are more than `span` apart. A run is read with three index probes and one range of the
/// rows between its ends, instead of three probes per sample (a batch of a backfill is one run per GPU); the
/// split bounds the range a run reads to the rows within `span` of its samples (shuffled windows: about one run
/// per sample, as before).
pub fn late_runs(late: &[LateKey], span: i64) -> Vec<LateRun> {
    let mut runs: Vec<LateRun> = Vec::new();
    for (id, end) in sorted(late) {
        match runs.last_mut() {
            Some((g, _, hi)) if *g == id && end - *hi <= span => *hi = end.max(*hi),
            _ => runs.push((id, end, end)),
        }
    }
    runs
}

/// Per late sample, from its run's read (`reads[i]` of `runs[i]`, both from [`late_runs`] of `late`): whether it
/// is stored, and the stored ends on either side of it.
pub fn late_lookups(
    late: &[LateKey],
    runs: &[LateRun],
    reads: &[RunRead],
) -> Result<HashMap<LateKey, Lookup>> {
    if runs.len() != reads.len() {
        return Err(StoreError::Internal(format!(
            "ingest: {} late runs, {} read",
            runs.len(),
            reads.len()
        )));
    }
    let mut out = HashMap::with_capacity(late.len());
    let mut run = runs.iter().zip(reads).peekable();
    for (id, end) in sorted(late) {
        while run
            .peek()
            .is_some_and(|((g, _, hi), _)| (*g, *hi) < (id, end))
        {
            run.next();
        }
        let Some(((g, lo, _), read)) = run.peek() else {
            return Err(StoreError::Internal(
                "ingest: a late sample outside its runs".into(),
            ));
        };
        if *g != id || end < *lo {
            return Err(StoreError::Internal(
                "ingest: a late sample outside its runs".into(),
            ));
        }
        let s = &read.stored;
        let at = s.partition_point(|&x| x < end);
        let stored = s.get(at) == Some(&end);
        let before = at.checked_sub(1).map(|i| s[i]).or(read.before);
        let next = s.partition_point(|&x| x <= end);
        let after = s.get(next).copied().or(read.after);
        out.insert((id, end), (stored, before, after));
    }
    Ok(out)
}

fn sorted(keys: &[LateKey]) -> Vec<LateKey> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys
}

/// What the backend read of one late sample (before writing anything): whether its window is stored already as
/// a raw row, and the raw rows of its GPU just before and just after it.
#[derive(Debug, Clone, Default)]
pub struct LateRead {
    pub stored: bool,
    pub before: Option<Sample>,
    pub after: Option<Sample>,
}

/// A sample of a batch ready to write: its integer columns, and the sample exactly as it will read back
/// (figures decoded from those integers), which is what rollups must be computed from.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub figures: Figures,
    pub sample: Sample,
}

/// Encodes a whole batch; a figure that cannot be stored exactly, or the reserved platform tenant as an owner,
/// rejects the batch before anything is written.
pub fn encode_batch(batch: &[Sample]) -> Result<Vec<Encoded>> {
    batch
        .iter()
        .map(|s| {
            check_owner(s.owner)?;
            let figures = Figures::encode(s)?;
            let sample = decode(&s.gpu_uuid, s.end.0, &figures, Labels::of(s))?;
            Ok(Encoded { figures, sample })
        })
        .collect()
}

/// Step 1: a batch, encoded (a figure that cannot be stored exactly, or the reserved tenant as an owner,
/// refuses it before anything is read) and grouped per GPU.
#[derive(Debug)]
pub struct Ingest<'b> {
    batch: &'b [Sample],
    encoded: Vec<Encoded>,
}

impl<'b> Ingest<'b> {
    pub fn new(batch: &'b [Sample]) -> Result<Self> {
        Ok(Ingest {
            batch,
            encoded: encode_batch(batch)?,
        })
    }

    /// The batch's GPUs, in uuid order: what to intern, lock and read the latest sample of.
    pub fn gpus(&self) -> Vec<&str> {
        let set: BTreeSet<&str> = self
            .encoded
            .iter()
            .map(|e| e.sample.gpu_uuid.as_str())
            .collect();
        set.into_iter().collect()
    }

    /// Step 2: each GPU's samples against its latest stored sample (`latest`, by GPU id; `ids`: uuid -> id).
    pub fn split(
        &self,
        ids: HashMap<String, i64>,
        latest: HashMap<i64, Sample>,
    ) -> Result<Splits<'_>> {
        let mut gpus = Vec::new();
        for group in rollups::per_gpu(&self.encoded, |e: &Encoded| &e.sample) {
            let samples: Vec<&Sample> = group.iter().map(|e| &e.sample).collect();
            let Some(first) = samples.first() else {
                continue;
            };
            let id = id_in(&ids, &first.gpu_uuid)?;
            let last = latest.get(&id).map(|s| s.end);
            gpus.push((id, rollups::split(&samples, last)));
        }
        let figures = self
            .encoded
            .iter()
            .rev() // the first received wins among re-sends inside the batch
            .map(|e| ((e.sample.gpu_uuid.as_str(), e.sample.end.0), &e.figures))
            .collect();
        Ok(Splits {
            batch: self.batch,
            ids,
            latest,
            gpus,
            figures,
        })
    }
}

fn id_in(ids: &HashMap<String, i64>, uuid: &str) -> Result<i64> {
    ids.get(uuid)
        .copied()
        .ok_or_else(|| StoreError::Internal(format!("ingest: unknown gpu {uuid}")))
}

/// The batch split per GPU, waiting for the reads of its late samples.
#[derive(Debug)]
pub struct Splits<'a> {
    batch: &'a [Sample],
    ids: HashMap<String, i64>,
    latest: HashMap<i64, Sample>,
    gpus: Vec<(i64, Split<'a>)>,
    /// Each sample's figures by (GPU, end) (Fx: one lookup a row, on keys of the batch).
    figures: FxHashMap<(&'a str, i64), &'a Figures>,
}

impl<'a> Splits<'a> {
    /// The late samples to read ([`LateRead`]).
    pub fn late(&self) -> Vec<LateKey> {
        self.gpus
            .iter()
            .flat_map(|(id, sp)| sp.late.iter().map(move |s| (*id, s.end.0)))
            .collect()
    }

    /// The late samples (not stored as raw rows) whose end sets must be read too
    /// ([`crate::rollups::pruned::ends_near`]): those that pruned windows may precede or be re-sends of.
    pub fn needs_index(
        &self,
        horizon: &Horizon,
        reads: &HashMap<LateKey, LateRead>,
    ) -> Vec<LateKey> {
        let mut keys: Vec<LateKey> = reads
            .iter()
            .filter(|(&(_, end), r)| {
                !r.stored && horizon.reads_index(end, r.before.as_ref().map(|b| b.end.0))
            })
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Step 3: the plan, from what was read: re-sends (a raw row, or an end in a set) are dropped, and a batch
    /// with a sample that cannot be merged exactly is refused whole ([`StoreError::Refused`]).
    pub fn plan(
        self,
        cfg: RollupConfig,
        horizon: Horizon,
        reads: &HashMap<LateKey, LateRead>,
        near: &HashMap<LateKey, EndsNear>,
    ) -> Result<IngestPlan<'a>> {
        let mut plan = BatchPlan::new(cfg, horizon);
        for (id, split) in &self.gpus {
            let mut late = Vec::with_capacity(split.late.len());
            for &s in &split.late {
                let key = (*id, s.end.0);
                let read = reads.get(&key).ok_or_else(|| {
                    StoreError::Internal("ingest: a late sample was not looked up".into())
                })?;
                if read.stored {
                    continue; // already stored: the first received wins
                }
                let n = near.get(&key).copied().unwrap_or_default();
                if n.contains {
                    continue; // a re-send of a window whose raw row was pruned
                }
                late.push(Late {
                    sample: s,
                    before: Known::nearest(read.before.clone(), n.below, true),
                    after: Known::nearest(read.after.clone(), n.above, false),
                });
            }
            plan.add_gpu(self.latest.get(id), &split.appended, &late);
        }
        if !plan.refused.is_empty() {
            return Err(rollups::refusal(self.batch, &plan.refused));
        }
        Ok(IngestPlan {
            batch_len: self.batch.len(),
            ids: self.ids,
            figures: self.figures,
            plan,
            outbox: cfg.outbox.then(OutboxRows::default),
            groups: GroupDeltas::default(),
            stale: BTreeSet::new(),
        })
    }
}

/// A sample row to write: its GPU id, the sample (as it reads back) and its integer columns.
#[derive(Debug)]
pub struct Row<'a> {
    pub gpu_id: i64,
    pub sample: &'a Sample,
    pub figures: &'a Figures,
}

/// Rows a merge into frozen hours writes and deletes.
#[derive(Debug, Default)]
pub struct FrozenWrites {
    pub write: Vec<(i64, Rollup)>,
    pub delete: Vec<(i64, RollupKey)>,
}

/// What is left to write once the rows and rollups are: the outcome and its audit event, the replica rows, and
/// the group rollups' changes (deltas added into their rows, stale keys rebuilt from the per-GPU rows).
#[derive(Debug)]
pub struct Finish {
    pub outcome: IngestOutcome,
    pub audit: AuditDraft,
    pub outbox: Option<OutboxRows>,
    pub groups: GroupDeltas,
    pub stale: BTreeSet<GroupKey>,
}

/// The writes of a batch (step 4), taken in this order: [`IngestPlan::rows`] with their series
/// ([`IngestPlan::seen`]), [`IngestPlan::merged`] and [`IngestPlan::gaps`] (fast path), [`IngestPlan::frozen`],
/// [`IngestPlan::gaps_taken`] and [`IngestPlan::frozen_gaps`] (late samples in frozen hours), then each of
/// [`IngestPlan::dirty`] through [`IngestPlan::recompute`], [`IngestPlan::pending`], [`IngestPlan::finish`].
#[derive(Debug)]
pub struct IngestPlan<'a> {
    batch_len: usize,
    ids: HashMap<String, i64>,
    /// Each sample's figures by (GPU, end) (Fx: one lookup a row, on keys of the batch).
    figures: FxHashMap<(&'a str, i64), &'a Figures>,
    plan: BatchPlan<'a>,
    outbox: Option<OutboxRows>,
    groups: GroupDeltas,
    stale: BTreeSet<GroupKey>,
}

impl<'a> IngestPlan<'a> {
    /// The id the backend gave a GPU of the batch.
    pub fn gpu_id(&self, uuid: &str) -> Result<i64> {
        id_in(&self.ids, uuid)
    }

    /// The equal shares among the new rows, per hour and deployment: what the backend adds to its tally
    /// ([`eai_engine::shares`]; the raw rows do not keep the method). Re-sends are not new rows: counted once.
    pub fn equal_shares(&self) -> Vec<eai_engine::shares::EqualShares> {
        eai_engine::shares::tally(self.plan.rows.iter().copied(), self.plan.cfg().bucket_ms)
    }

    /// The sample rows to write, every one new (a row already stored means a concurrent writer: an error).
    pub fn rows(&mut self) -> Result<Vec<Row<'a>>> {
        let mut out = Vec::with_capacity(self.plan.rows.len());
        for &s in &self.plan.rows {
            let figures = *self
                .figures
                .get(&(s.gpu_uuid.as_str(), s.end.0))
                .ok_or_else(|| {
                    StoreError::Internal("ingest: a planned sample has no figures".into())
                })?;
            out.push(Row {
                gpu_id: self.gpu_id(&s.gpu_uuid)?,
                sample: s,
                figures,
            });
            if let Some(o) = self.outbox.as_mut() {
                o.sample(s);
            }
        }
        Ok(out)
    }

    /// Per series written (a re-send alone never creates one): the earliest and latest window end.
    pub fn seen(&self) -> BTreeMap<LabelsRef<'a>, (i64, i64)> {
        self.plan.seen()
    }

    /// The fast path's deltas, one per rollup key: the backend reads the stored rollups of these keys.
    pub fn deltas(&mut self) -> Vec<Rollup> {
        self.plan.deltas()
    }

    /// The rollup rows to write: each delta added into the stored row of its key (`current`, read for
    /// [`IngestPlan::deltas`]); the deltas also go into the group rollups.
    pub fn merged(
        &mut self,
        deltas: Vec<Rollup>,
        mut current: HashMap<RollupKey, Rollup>,
    ) -> Result<Vec<(i64, Rollup)>> {
        let mut out = Vec::with_capacity(deltas.len());
        for d in deltas {
            let id = self.gpu_id(&d.key.gpu_uuid)?;
            self.groups.add(id, &d)?;
            let r = rollups::merged(current.remove(&d.key), d);
            if let Some(o) = self.outbox.as_mut() {
                o.rollup(&r);
            }
            out.push((id, r));
        }
        Ok(out)
    }

    /// The fast path's gaps to insert.
    pub fn gaps(&mut self) -> Result<Vec<(i64, Gap)>> {
        let gaps = std::mem::take(&mut self.plan.terms.gaps);
        self.gaps_written(gaps)
    }

    fn gaps_written(&mut self, gaps: Vec<Gap>) -> Result<Vec<(i64, Gap)>> {
        let mut out = Vec::with_capacity(gaps.len());
        for g in gaps {
            if let Some(o) = self.outbox.as_mut() {
                o.gap(&g);
            }
            out.push((self.gpu_id(&g.gpu_uuid)?, g));
        }
        Ok(out)
    }

    /// The rollup keys late samples change in frozen hours (with their changes): the backend reads the stored
    /// rollups of these keys.
    pub fn frozen_deltas(&mut self) -> Vec<(RollupKey, Option<Rollup>, Option<Rollup>)> {
        let d = self.plan.frozen_deltas();
        self.stale.extend(d.iter().map(|(k, _, _)| GroupKey::of(k)));
        d
    }

    /// The frozen hours' rows: each stored row with the terms added and taken out ([`rollups::unmerged`]),
    /// written back, or deleted when nothing is left.
    pub fn frozen(
        &mut self,
        deltas: Vec<(RollupKey, Option<Rollup>, Option<Rollup>)>,
        mut current: HashMap<RollupKey, Rollup>,
    ) -> Result<FrozenWrites> {
        let mut out = FrozenWrites::default();
        for (k, added, removed) in deltas {
            let id = self.gpu_id(&k.gpu_uuid)?;
            let stored = current.remove(&k);
            match rollups::unmerged(stored.clone(), added, removed)? {
                Some(r) => {
                    if let Some(o) = self.outbox.as_mut() {
                        o.rollup(&r);
                    }
                    out.write.push((id, r));
                }
                None => {
                    if let (Some(o), Some(old)) = (self.outbox.as_mut(), stored) {
                        o.rollup_deleted(&old);
                    }
                    out.delete.push((id, k));
                }
            }
        }
        Ok(out)
    }

    /// The gaps of frozen hours that late samples close: (GPU id, start). The backend deletes them and hands the
    /// deleted rows to [`IngestPlan::gaps_taken`].
    pub fn gaps_removed(&self) -> Result<Vec<(i64, i64)>> {
        self.plan
            .frozen
            .gaps_removed
            .iter()
            .map(|(uuid, from)| Ok((self.gpu_id(uuid)?, *from)))
            .collect()
    }

    /// The gap rows deleted for [`IngestPlan::gaps_removed`].
    pub fn gaps_taken(&mut self, gaps: &[Gap]) {
        if let Some(o) = self.outbox.as_mut() {
            for g in gaps {
                o.gap_deleted(g);
            }
        }
    }

    /// The gaps of frozen hours that late samples open.
    pub fn frozen_gaps(&mut self) -> Result<Vec<(i64, Gap)>> {
        let gaps = std::mem::take(&mut self.plan.frozen.gaps);
        self.gaps_written(gaps)
    }

    /// The GPU-hours to recompute from raw samples, after every other term is written (they include them):
    /// (GPU id, uuid, bucket). Never a frozen hour.
    pub fn dirty(&self) -> Result<Vec<(i64, String, i64)>> {
        let frozen = self.plan.horizon().frozen(&self.plan_cfg());
        let mut out = Vec::new();
        for (uuid, hours) in &self.plan.dirty {
            let id = self.gpu_id(uuid)?;
            for &h in hours {
                if frozen.is_some_and(|f| h < f) {
                    return Err(StoreError::Internal(format!(
                        "ingest: the frozen hour {h} of {uuid} was planned for a recomputation"
                    )));
                }
                out.push((id, uuid.clone(), h));
            }
        }
        Ok(out)
    }

    fn plan_cfg(&self) -> RollupConfig {
        self.plan.cfg()
    }

    /// The recomputation of the dirty hours: at the cuts the batch read, into the batch's outbox and stale
    /// groups.
    pub fn recompute(&mut self) -> Recompute<'_> {
        Recompute {
            cfg: self.plan.cfg(),
            cuts: &self.plan.horizon().cuts,
            outbox: self.outbox.as_mut(),
            stale: &mut self.stale,
        }
    }

    /// Per GPU id: rows written below the pruning horizon start here (the next pruning classifies from there).
    pub fn pending(&self) -> Result<Vec<(i64, i64)>> {
        self.plan
            .pending
            .iter()
            .map(|(uuid, from)| Ok((self.gpu_id(uuid)?, *from)))
            .collect()
    }

    /// The outcome and what is left to write: the group rollups, the outbox rows, the audit event (last).
    pub fn finish(self, draft: &AuditDraft) -> Finish {
        let inserted = self.plan.rows.len() as u64;
        let outcome = IngestOutcome {
            inserted,
            duplicates: self.batch_len as u64 - inserted,
        };
        Finish {
            audit: outcome.audited(draft),
            outcome,
            outbox: self.outbox,
            groups: self.groups,
            stale: self.stale,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Runs read as a backend reads them answer, for every late sample, what a probe per sample answers.
        #[test]
        fn runs_answer_what_probes_per_sample_do(
            stored in proptest::collection::btree_set((0i64..3, 0i64..200), 0..120),
            late in proptest::collection::btree_set((0i64..3, 0i64..200), 1..60),
            span in 0i64..40,
            rotate in 0usize..60,
        ) {
            // In any order (a batch's GPUs come in uuid order, not id order).
            let mut late: Vec<LateKey> = late.into_iter().rev().collect();
            let r = rotate % late.len();
            late.rotate_left(r);
            let mut per_gpu: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
            for (g, e) in &stored {
                per_gpu.entry(*g).or_default().insert(*e);
            }
            let none = BTreeSet::new();
            let ends = |g: i64| per_gpu.get(&g).unwrap_or(&none);
            let runs = late_runs(&late, span);
            let reads: Vec<RunRead> = runs
                .iter()
                .map(|&(g, lo, hi)| RunRead {
                    stored: ends(g).range(lo..=hi).copied().collect(),
                    before: ends(g).range(..lo).next_back().copied(),
                    after: ends(g).range(hi + 1..).next().copied(),
                })
                .collect();
            for w in runs.windows(2) {
                prop_assert!((w[0].0, w[0].2) < (w[1].0, w[1].1), "runs in order, apart");
            }
            let got = late_lookups(&late, &runs, &reads).unwrap();
            prop_assert_eq!(got.len(), late.len());
            for (g, e) in &late {
                let want = (
                    ends(*g).contains(e),
                    ends(*g).range(..*e).next_back().copied(),
                    ends(*g).range(e + 1..).next().copied(),
                );
                prop_assert_eq!(got[&(*g, *e)], want, "gpu {} end {}", g, e);
            }
        }
    }
}

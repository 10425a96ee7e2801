//! The decisions of each step of a sample batch, without I/O, in the order [`super::Ingest`] takes them: the batch
//! encoded ([`Batch`]), split per GPU against what is stored ([`Splits`]), planned ([`IngestPlan`]: the rows,
//! the rollup rows merged, the rows merged by terms, the dirty hours, and what is left to write, [`Finish`]).
//! [`crate::rollups`] holds the rules of the terms themselves.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};
use rustc_hash::FxHashMap;

use super::late::{LateKey, LateRead};
use crate::codec::{decode, Figures, Labels, LabelsRef};
use crate::outbox::OutboxRows;
use crate::plan::recompute::Recompute;
use crate::records::check_owner;
use crate::rollups::groups::{GroupDeltas, GroupKey};
use crate::rollups::pruned::{EndsNear, Known};
use crate::rollups::{self, BatchPlan, Horizon, Late, RollupConfig, Split};
use crate::{AuditDraft, IngestOutcome, Result, StoreError};

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

/// A batch, encoded (a figure that cannot be stored exactly, or the reserved tenant as an owner, refuses it
/// before anything is read): what [`super::Ingest`] plans, borrowing it.
#[derive(Debug)]
pub struct Batch<'b> {
    batch: &'b [Sample],
    encoded: Vec<Encoded>,
}

impl<'b> Batch<'b> {
    pub fn encode(batch: &'b [Sample]) -> Result<Self> {
        Ok(Batch {
            batch,
            encoded: encode_batch(batch)?,
        })
    }

    /// The batch's GPUs, in uuid order: what to intern, lock and read the latest sample of.
    pub fn gpus(&self) -> Vec<&'b str> {
        let set: BTreeSet<&'b str> = self.batch.iter().map(|s| s.gpu_uuid.as_str()).collect();
        set.into_iter().collect()
    }

    /// Each GPU's samples against its latest stored sample (`latest`, by GPU id; `ids`: uuid -> id).
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

/// Whether a rollup key lies in an hour that is not frozen.
fn is_open(frozen: Option<i64>, bucket_ms: i64, k: &RollupKey) -> bool {
    let h = k.bucket_start.floor_to(bucket_ms).0;
    frozen.is_none_or(|f| h >= f)
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

    /// The plan, from what was read: re-sends (a raw row, or an end in a set) are dropped, and a batch
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

/// What a merge by terms (late samples, frozen hours or not) writes, in this order: rollup rows written back and deleted, the gaps late
/// samples close deleted ((GPU id, uuid, start); the deleted rows go to [`IngestPlan::frozen_gaps_taken`]), the
/// gaps they open written.
#[derive(Debug, Default)]
pub struct FrozenWrites {
    pub write: Vec<(i64, Rollup)>,
    pub delete: Vec<(i64, RollupKey)>,
    pub take_gaps: Vec<(i64, String, i64)>,
    pub gaps: Vec<(i64, Gap)>,
}

impl FrozenWrites {
    pub fn is_empty(&self) -> bool {
        self.write.is_empty()
            && self.delete.is_empty()
            && self.take_gaps.is_empty()
            && self.gaps.is_empty()
    }
}

/// What is left to write once the rows and rollups are: where pruning must look again, the equal shares' tally,
/// the group rollups' changes (deltas added into their rows, stale keys rebuilt from the per-GPU rows), the
/// replica rows, and the audit event of the outcome.
#[derive(Debug)]
pub struct Finish {
    pub outcome: IngestOutcome,
    /// Per GPU id: rows written below the pruning horizon start here (the next pruning classifies from there).
    pub pending: Vec<(i64, i64)>,
    /// The equal shares among the new rows, per hour and deployment ([`IngestPlan::equal_shares`]).
    pub equal_shares: Vec<eai_engine::shares::EqualShares>,
    pub audit: AuditDraft,
    pub outbox: Option<OutboxRows>,
    pub groups: GroupDeltas,
    pub stale: BTreeSet<GroupKey>,
}

/// The writes of a batch, taken in this order ([`super::Ingest`] takes them): [`IngestPlan::rows`] with their
/// series ([`IngestPlan::seen`]), [`IngestPlan::merged`] and [`IngestPlan::gaps`] (fast path),
/// [`IngestPlan::frozen`] and [`IngestPlan::frozen_gaps_taken`] (late samples merged by terms), then
/// [`IngestPlan::dirty`] through [`IngestPlan::recompute`], and [`IngestPlan::finish`].
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

    /// The rollup keys late samples change by terms, frozen hours or not (with their changes): the backend reads
    /// the stored rollups of these keys.
    pub fn frozen_deltas(&mut self) -> Vec<(RollupKey, Option<Rollup>, Option<Rollup>)> {
        let d = self.plan.frozen_deltas();
        // A frozen hour's groups are rebuilt from their per-GPU rows; an open hour's take the deltas
        // ([`IngestPlan::frozen`]).
        let (frozen, b) = (self.frozen_from(), self.plan.cfg().bucket_ms);
        self.stale.extend(
            d.iter()
                .filter(|(k, _, _)| !is_open(frozen, b, k))
                .map(|(k, _, _)| GroupKey::of(k)),
        );
        d
    }

    fn frozen_from(&self) -> Option<i64> {
        self.plan.horizon().frozen(&self.plan.cfg())
    }

    /// The rows late samples change by terms: each stored row with the terms added and taken out
    /// ([`rollups::unmerged`]), written back, or deleted when nothing is left (its group rebuilt); and the gaps
    /// late samples close and open there. In an hour that is not frozen the terms go into the groups too, unless
    /// a window start may move inward ([`rollups::moves_inward`]): then the hour is recomputed instead.
    pub fn frozen(
        &mut self,
        deltas: Vec<(RollupKey, Option<Rollup>, Option<Rollup>)>,
        mut current: HashMap<RollupKey, Rollup>,
    ) -> Result<FrozenWrites> {
        let mut out = FrozenWrites::default();
        let frozen = self.frozen_from();
        for (k, added, removed) in deltas {
            let id = self.gpu_id(&k.gpu_uuid)?;
            let stored = current.remove(&k);
            let open = is_open(frozen, self.plan.cfg().bucket_ms, &k);
            if open && rollups::moves_inward(stored.as_ref(), added.as_ref(), removed.as_ref()) {
                // Its earliest or latest window start may move inward, to a start the row does not hold: the
                // hour is recomputed from raw samples instead (after these writes), and its groups rebuilt.
                let h = k.bucket_start.floor_to(self.plan.cfg().bucket_ms).0;
                self.plan
                    .dirty
                    .entry(k.gpu_uuid.clone())
                    .or_default()
                    .insert(h);
                self.stale.insert(GroupKey::of(&k));
                continue;
            }
            match rollups::unmerged(stored.clone(), added.clone(), removed.clone())? {
                Some(r) => {
                    if open {
                        // The row stays, so its GPU stays in the group; its window starts did not move inward.
                        if let Some(a) = &added {
                            self.groups.add(id, a)?;
                        }
                        if let Some(x) = &removed {
                            self.groups.take(x)?;
                        }
                    }
                    if let Some(o) = self.outbox.as_mut() {
                        o.rollup(&r);
                    }
                    out.write.push((id, r));
                }
                None => {
                    // The GPU leaves the group (unless another row of it is there): rebuilt.
                    self.stale.insert(GroupKey::of(&k));
                    if let (Some(o), Some(old)) = (self.outbox.as_mut(), stored) {
                        o.rollup_deleted(&old);
                    }
                    out.delete.push((id, k));
                }
            }
        }
        for (uuid, from) in &self.plan.frozen.gaps_removed {
            out.take_gaps
                .push((self.gpu_id(uuid)?, uuid.clone(), *from));
        }
        for g in std::mem::take(&mut self.plan.frozen.gaps) {
            out.gaps.push((self.gpu_id(&g.gpu_uuid)?, g));
        }
        Ok(out)
    }

    /// The gap rows deleted for [`FrozenWrites::take_gaps`], then those [`FrozenWrites::gaps`] wrote: into the
    /// replica rows, in that order.
    pub fn frozen_gaps_taken(&mut self, taken: &[Gap], written: &[(i64, Gap)]) {
        if let Some(o) = self.outbox.as_mut() {
            for g in taken {
                o.gap_deleted(g);
            }
            for (_, g) in written {
                o.gap(g);
            }
        }
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
    fn pending(&self) -> Result<Vec<(i64, i64)>> {
        self.plan
            .pending
            .iter()
            .map(|(uuid, from)| Ok((self.gpu_id(uuid)?, *from)))
            .collect()
    }

    /// The outcome and what is left to write: where pruning must look again, the equal shares, the group
    /// rollups, the outbox rows, the audit event (last).
    pub fn finish(self, draft: &AuditDraft) -> Result<Finish> {
        let inserted = self.plan.rows.len() as u64;
        let outcome = IngestOutcome {
            inserted,
            duplicates: self.batch_len as u64 - inserted,
        };
        Ok(Finish {
            pending: self.pending()?,
            equal_shares: self.equal_shares(),
            audit: outcome.audited(draft),
            outcome,
            outbox: self.outbox,
            groups: self.groups,
            stale: self.stale,
        })
    }
}

//! One sample batch as a state machine without I/O: [`Ingest`] holds the order of the steps both backends take
//! and every decision between them; it yields what it needs ([`Step::Read`], [`Step::Write`]) and is resumed with
//! what the backend read ([`Answer`]), until [`Step::Done`]. A backend's driver is one loop that answers each step
//! with its SQL inside its transaction (bind, send, decode: PostgreSQL may send a step's statements together);
//! [`batch`] holds the decisions of each step, [`late`] the lookups of late samples by runs, and
//! [`crate::rollups`] the rules of the terms themselves.
//!
//! ```text
//!  Batch::encode ─── exact figures, the reserved tenant refused, before the transaction
//!     │
//!  Read::Gpus ────── intern the batch's GPUs (uuid order)                        -> Answer::Gpus
//!  Read::Latest ──── lock them (ascending ids), their latest samples, the horizon -> Answer::Latest
//!     │              split: appended / late samples per GPU
//!  Read::Runs ────── late samples by runs: stored ends in, around                 -> Answer::Runs
//!  Read::Samples ─── the raw neighbours of the late samples not stored yet        -> Answer::Samples
//!  Read::EndSets ─── end sets near those that pruned windows may precede          -> Answer::EndSets
//!     │              plan: re-sends dropped, runs of late samples planned, or the batch refused (422)
//!  Write::Rows ───── series and sample rows; the stored rollups the deltas add to -> Answer::Rollups
//!  Write::Rollups ── the merged rollup rows and the fast path's gaps              -> Answer::Taken
//!  Read::Rollups ─── the stored rollups late samples change (merged by terms)      -> Answer::Rollups
//!  Write::Rollups ── those rows written back or deleted, their gaps taken, written -> Answer::Taken
//!  Write::Recompute  the dirty GPU-hours, from their raw context                  -> Answer::Written
//!  Write::Finish ─── pending prunes, equal shares, groups, outbox, audit event    -> Answer::Written
//!  Done(outcome) ─── commit
//! ```
//!
//! A step with nothing to read or write is left out (no late sample: no `Runs`; no new row: no `Rows`).

pub mod batch;
pub mod late;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};

pub use batch::{encode_batch, Batch, Encoded, Finish, Row};
pub use late::{
    late_lookups, late_runs, LateKey, LateRead, LateRun, Lookup, RunRead, LATE_RUN_SPAN_MS,
};

use crate::codec::LabelsRef;
use crate::plan::recompute::Recompute;
use crate::rollups::pruned::{ends_near, EndSets, EndsNear};
use crate::rollups::{Horizon, RollupConfig};
use crate::{AuditDraft, IngestOutcome, Result, StoreError};
use batch::{FrozenWrites, IngestPlan, Splits};

/// What the batch needs next: a read, a write, or nothing (commit).
#[derive(Debug)]
pub enum Step<'s, 'a> {
    Read(Read<'s, 'a>),
    Write(Write<'s, 'a>),
    /// Everything is written: commit, and answer with the outcome.
    Done(IngestOutcome),
}

/// A read, with the [`Answer`] it takes.
#[derive(Debug)]
pub enum Read<'s, 'a> {
    /// Intern these GPUs (uuid order), making those never seen: [`Answer::Gpus`], uuid -> id.
    Gpus(&'s [&'a str]),
    /// Lock these GPUs (PostgreSQL: advisory locks, in this order, ascending ids) and read each one's latest
    /// stored sample, and the [`Horizon`] (the cuts read under their lock, shared): [`Answer::Latest`].
    Latest(&'s [(i64, &'a str)]),
    /// Per run (GPU id, first end, last end): the ends of its GPU's stored rows in `[first, last]`, in order, and
    /// the nearest stored end before `first` and after `last`: [`Answer::Runs`], one [`RunRead`] a run, in order.
    Runs(&'s [LateRun]),
    /// These stored samples (GPU id, uuid, end), each stored: [`Answer::Samples`], by (GPU id, end).
    Samples(&'s [SampleAt<'a>]),
    /// Per late sample (GPU id, end): the end sets of its GPU in the bucket of `end` and the nearest on each
    /// side: [`Answer::EndSets`], by late sample (none read: left out or empty).
    EndSets(&'s [LateKey]),
    /// The stored rollups of these keys (GPU id, key): [`Answer::Rollups`], those found, by key.
    Rollups(Vec<(i64, &'s RollupKey)>),
}

/// A stored sample to read: its GPU's id and uuid, its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SampleAt<'a> {
    pub gpu_id: i64,
    pub uuid: &'a str,
    pub end: i64,
}

/// A write, with the [`Answer`] it takes.
#[derive(Debug)]
pub enum Write<'s, 'a> {
    /// New series and sample rows, then (or sent together) a read of the stored rollups the rows' deltas add to:
    /// [`Answer::Rollups`].
    Rows(Rows<'s, 'a>),
    /// Rollup and gap rows: [`Answer::Taken`], the gap rows deleted.
    Rollups(RollupWrites<'s>),
    /// Recompute these GPU-hours (GPU id, uuid, bucket) from their raw context with `rc`, replacing their rollup
    /// and gap rows: [`Answer::Written`].
    Recompute {
        hours: &'s [(i64, String, i64)],
        rc: Recompute<'s>,
    },
    /// The last writes, in the order the backend's locks want: [`Answer::Written`].
    Finish(Box<Finish>),
}

/// The sample rows to write, every one new (one already stored means a concurrent writer: an error), with the
/// span each series was seen in (a re-send alone never creates a series), and the rollups to read.
#[derive(Debug)]
pub struct Rows<'s, 'a> {
    pub rows: &'s [Row<'a>],
    pub seen: &'s BTreeMap<LabelsRef<'a>, (i64, i64)>,
    /// The keys the rows' deltas add to (GPU id, key): the stored rollups to answer with.
    pub rollups: Vec<(i64, &'s RollupKey)>,
}

impl Rows<'_, '_> {
    /// Each GPU's latest end among the rows, ascending GPU ids.
    pub fn last_ends(&self) -> Vec<(i64, i64)> {
        let mut last: BTreeMap<i64, i64> = BTreeMap::new();
        for r in self.rows {
            let e = last.entry(r.gpu_id).or_insert(r.sample.end.0);
            *e = (*e).max(r.sample.end.0);
        }
        last.into_iter().collect()
    }
}

/// Rollup and gap rows to write, in this order: rollups upserted (GPU id, row), rollups deleted (GPU id, key),
/// gaps deleted (GPU id, uuid, start; the rows deleted are the answer), gaps upserted (GPU id, gap).
#[derive(Debug)]
pub struct RollupWrites<'s> {
    pub write: &'s [(i64, Rollup)],
    pub delete: &'s [(i64, RollupKey)],
    pub take_gaps: &'s [(i64, String, i64)],
    pub gaps: &'s [(i64, Gap)],
}

/// What the backend read (or wrote) for a step.
#[derive(Debug)]
pub enum Answer {
    Gpus(HashMap<String, i64>),
    Latest {
        latest: HashMap<i64, Sample>,
        horizon: Horizon,
    },
    Runs(Vec<RunRead>),
    Samples(HashMap<LateKey, Sample>),
    EndSets(HashMap<LateKey, EndSets>),
    Rollups(HashMap<RollupKey, Rollup>),
    Taken(Vec<Gap>),
    Written,
}

impl Answer {
    fn name(&self) -> &'static str {
        match self {
            Answer::Gpus(_) => "gpus",
            Answer::Latest { .. } => "latest",
            Answer::Runs(_) => "runs",
            Answer::Samples(_) => "samples",
            Answer::EndSets(_) => "end sets",
            Answer::Rollups(_) => "rollups",
            Answer::Taken(_) => "taken gaps",
            Answer::Written => "written",
        }
    }
}

/// One batch's ingest, step by step: [`Ingest::step`] says what it needs, [`Ingest::resume`] hands it the
/// answer, until [`Step::Done`]. Any error (a refusal included) ends it: the backend rolls back.
#[derive(Debug)]
pub struct Ingest<'a> {
    batch: &'a Batch<'a>,
    cfg: RollupConfig,
    draft: &'a AuditDraft,
    stage: Stage<'a>,
}

/// What the reads of late samples carry along until the plan.
#[derive(Debug)]
struct Split<'a> {
    splits: Splits<'a>,
    horizon: Horizon,
    /// (id, uuid), ascending ids.
    gpus: Vec<(i64, &'a str)>,
}

#[derive(Debug)]
enum Stage<'a> {
    Gpus(Vec<&'a str>),
    Latest {
        ids: HashMap<String, i64>,
        gpus: Vec<(i64, &'a str)>,
    },
    Runs {
        split: Split<'a>,
        late: Vec<LateKey>,
        runs: Vec<LateRun>,
    },
    Samples {
        split: Split<'a>,
        lookups: HashMap<LateKey, Lookup>,
        wanted: Vec<SampleAt<'a>>,
    },
    EndSets {
        split: Split<'a>,
        reads: HashMap<LateKey, LateRead>,
        keys: Vec<LateKey>,
    },
    Rows {
        plan: IngestPlan<'a>,
        rows: Vec<Row<'a>>,
        seen: BTreeMap<LabelsRef<'a>, (i64, i64)>,
        deltas: Vec<(i64, Rollup)>,
    },
    Merged {
        plan: IngestPlan<'a>,
        merged: Vec<(i64, Rollup)>,
        gaps: Vec<(i64, Gap)>,
    },
    FrozenRead {
        plan: IngestPlan<'a>,
        deltas: Vec<(RollupKey, Option<Rollup>, Option<Rollup>)>,
        ids: Vec<i64>,
    },
    Frozen {
        plan: IngestPlan<'a>,
        writes: FrozenWrites,
    },
    Dirty {
        plan: IngestPlan<'a>,
        hours: Vec<(i64, String, i64)>,
    },
    Finish {
        finish: Option<Finish>,
        outcome: IngestOutcome,
    },
    Done(IngestOutcome),
    /// After an error: nothing more.
    Failed,
}

impl<'a> Batch<'a> {
    /// The ingest of this batch under `cfg`, audited as `draft` completed with its counts.
    pub fn ingest(&'a self, cfg: RollupConfig, draft: &'a AuditDraft) -> Ingest<'a> {
        Ingest {
            batch: self,
            cfg,
            draft,
            stage: Stage::Gpus(self.gpus()),
        }
    }
}

impl<'a> Ingest<'a> {
    /// What the batch needs now. Answer it with [`Ingest::resume`] before asking again.
    pub fn step(&mut self) -> Result<Step<'_, 'a>> {
        Ok(match &mut self.stage {
            Stage::Gpus(uuids) => Step::Read(Read::Gpus(uuids)),
            Stage::Latest { gpus, .. } => Step::Read(Read::Latest(gpus)),
            Stage::Runs { runs, .. } => Step::Read(Read::Runs(runs)),
            Stage::Samples { wanted, .. } => Step::Read(Read::Samples(wanted)),
            Stage::EndSets { keys, .. } => Step::Read(Read::EndSets(keys)),
            Stage::Rows {
                rows, seen, deltas, ..
            } => Step::Write(Write::Rows(Rows {
                rows,
                seen,
                rollups: deltas.iter().map(|(id, d)| (*id, &d.key)).collect(),
            })),
            Stage::Merged { merged, gaps, .. } => Step::Write(Write::Rollups(RollupWrites {
                write: merged,
                delete: &[],
                take_gaps: &[],
                gaps,
            })),
            Stage::FrozenRead { deltas, ids, .. } => Step::Read(Read::Rollups(
                ids.iter()
                    .copied()
                    .zip(deltas.iter().map(|d| &d.0))
                    .collect(),
            )),
            Stage::Frozen { writes, .. } => Step::Write(Write::Rollups(RollupWrites {
                write: &writes.write,
                delete: &writes.delete,
                take_gaps: &writes.take_gaps,
                gaps: &writes.gaps,
            })),
            Stage::Dirty { plan, hours } => Step::Write(Write::Recompute {
                hours,
                rc: plan.recompute(),
            }),
            Stage::Finish { finish, .. } => match finish.take() {
                Some(f) => Step::Write(Write::Finish(Box::new(f))),
                None => return Err(internal("the last writes were asked for twice")),
            },
            Stage::Done(outcome) => Step::Done(*outcome),
            Stage::Failed => return Err(internal("a step was asked for after a failure")),
        })
    }

    /// Hands the batch what the backend read or wrote for the step [`Ingest::step`] gave.
    pub fn resume(&mut self, answer: Answer) -> Result<()> {
        let stage = std::mem::replace(&mut self.stage, Stage::Failed);
        self.stage = self.after(stage, answer)?;
        Ok(())
    }

    /// The stage after `stage`, given its answer.
    fn after(&self, stage: Stage<'a>, answer: Answer) -> Result<Stage<'a>> {
        match (stage, answer) {
            (Stage::Gpus(uuids), Answer::Gpus(ids)) => {
                let mut gpus = uuids
                    .iter()
                    .map(|&u| {
                        let id = ids
                            .get(u)
                            .copied()
                            .ok_or_else(|| internal(&format!("unknown gpu {u}")))?;
                        Ok((id, u))
                    })
                    .collect::<Result<Vec<_>>>()?;
                gpus.sort_unstable();
                Ok(Stage::Latest { ids, gpus })
            }
            (Stage::Latest { ids, gpus }, Answer::Latest { latest, horizon }) => {
                let splits = self.batch.split(ids, latest)?;
                let late = splits.late();
                let split = Split {
                    splits,
                    horizon,
                    gpus,
                };
                if late.is_empty() {
                    return self.planned(split, &HashMap::new(), &HashMap::new());
                }
                let runs = late_runs(&late, LATE_RUN_SPAN_MS);
                Ok(Stage::Runs { split, late, runs })
            }
            (Stage::Runs { split, late, runs }, Answer::Runs(read)) => {
                let lookups = late_lookups(&late, &runs, &read)?;
                // The raw neighbours of the samples not stored yet, each read once.
                let mut wanted: BTreeSet<(i64, i64)> = BTreeSet::new();
                for (&(id, _), &(stored, before, after)) in &lookups {
                    if !stored {
                        wanted.extend(before.map(|e| (id, e)));
                        wanted.extend(after.map(|e| (id, e)));
                    }
                }
                let wanted = wanted
                    .into_iter()
                    .map(|(gpu_id, end)| {
                        let at = split.gpus.binary_search_by_key(&gpu_id, |g| g.0);
                        let uuid = at
                            .map(|i| split.gpus[i].1)
                            .map_err(|_| internal(&format!("a late sample of gpu id {gpu_id}")))?;
                        Ok(SampleAt { gpu_id, uuid, end })
                    })
                    .collect::<Result<Vec<_>>>()?;
                if wanted.is_empty() {
                    return self.read_late(split, lookups, &HashMap::new());
                }
                Ok(Stage::Samples {
                    split,
                    lookups,
                    wanted,
                })
            }
            (Stage::Samples { split, lookups, .. }, Answer::Samples(neighbours)) => {
                self.read_late(split, lookups, &neighbours)
            }
            (Stage::EndSets { split, reads, keys }, Answer::EndSets(sets)) => {
                let near: HashMap<LateKey, EndsNear> = keys
                    .iter()
                    .map(|&(id, end)| {
                        let n = sets
                            .get(&(id, end))
                            .map_or_else(EndsNear::default, |s| ends_near(s, end));
                        ((id, end), n)
                    })
                    .collect();
                self.planned(split, &reads, &near)
            }
            (
                Stage::Rows {
                    mut plan, deltas, ..
                },
                Answer::Rollups(current),
            ) => {
                let merged = plan.merged(deltas.into_iter().map(|(_, d)| d).collect(), current)?;
                let gaps = plan.gaps()?;
                if merged.is_empty() && gaps.is_empty() {
                    return self.frozen(plan);
                }
                Ok(Stage::Merged { plan, merged, gaps })
            }
            (Stage::Merged { plan, .. }, Answer::Taken(_)) => self.frozen(plan),
            (Stage::FrozenRead { plan, deltas, .. }, Answer::Rollups(current)) => {
                self.frozen_writes(plan, deltas, current)
            }
            (Stage::Frozen { mut plan, writes }, Answer::Taken(taken)) => {
                plan.frozen_gaps_taken(&taken, &writes.gaps);
                self.dirty(plan)
            }
            (Stage::Dirty { plan, .. }, Answer::Written) => self.finish(plan),
            (
                Stage::Finish {
                    finish: None,
                    outcome,
                },
                Answer::Written,
            ) => Ok(Stage::Done(outcome)),
            (stage, answer) => Err(internal(&format!(
                "{} answered at {}",
                answer.name(),
                stage.name()
            ))),
        }
    }

    /// Each late sample as read (`neighbours`: the stored samples [`Read::Samples`] asked for), then the end sets
    /// to read, if any.
    fn read_late(
        &self,
        split: Split<'a>,
        lookups: HashMap<LateKey, Lookup>,
        neighbours: &HashMap<LateKey, Sample>,
    ) -> Result<Stage<'a>> {
        let find = |id: i64, end: Option<i64>| -> Result<Option<Sample>> {
            end.map(|e| {
                neighbours
                    .get(&(id, e))
                    .cloned()
                    .ok_or_else(|| internal(&format!("the stored sample ({id}, {e}) went missing")))
            })
            .transpose()
        };
        let mut reads: HashMap<LateKey, LateRead> = HashMap::with_capacity(lookups.len());
        for ((id, end), (stored, before, after)) in lookups {
            let read = match stored {
                true => LateRead {
                    stored,
                    ..LateRead::default()
                },
                false => LateRead {
                    stored,
                    before: find(id, before)?,
                    after: find(id, after)?,
                },
            };
            reads.insert((id, end), read);
        }
        let keys = split.splits.needs_index(&split.horizon, &reads);
        if keys.is_empty() {
            return self.planned(split, &reads, &HashMap::new());
        }
        Ok(Stage::EndSets { split, reads, keys })
    }

    /// The plan from what was read (or the batch's refusal), then its rows to write, if any.
    fn planned(
        &self,
        split: Split<'a>,
        reads: &HashMap<LateKey, LateRead>,
        near: &HashMap<LateKey, EndsNear>,
    ) -> Result<Stage<'a>> {
        let mut plan = split.splits.plan(self.cfg, split.horizon, reads, near)?;
        let rows = plan.rows()?;
        if rows.is_empty() {
            // No new row: no appended sample, so no fast-path delta or gap either.
            return self.frozen(plan);
        }
        let seen = plan.seen();
        let deltas = plan
            .deltas()
            .into_iter()
            .map(|d| Ok((plan.gpu_id(&d.key.gpu_uuid)?, d)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Stage::Rows {
            plan,
            rows,
            seen,
            deltas,
        })
    }

    /// Late samples merged by terms (frozen hours, and open ones between raw rows): the stored rollups their
    /// terms change to read, if any.
    fn frozen(&self, mut plan: IngestPlan<'a>) -> Result<Stage<'a>> {
        let deltas = plan.frozen_deltas();
        if deltas.is_empty() {
            return self.frozen_writes(plan, deltas, HashMap::new());
        }
        let ids = deltas
            .iter()
            .map(|(k, _, _)| plan.gpu_id(&k.gpu_uuid))
            .collect::<Result<Vec<_>>>()?;
        Ok(Stage::FrozenRead { plan, deltas, ids })
    }

    fn frozen_writes(
        &self,
        mut plan: IngestPlan<'a>,
        deltas: Vec<(RollupKey, Option<Rollup>, Option<Rollup>)>,
        current: HashMap<RollupKey, Rollup>,
    ) -> Result<Stage<'a>> {
        let writes = plan.frozen(deltas, current)?;
        if writes.is_empty() {
            return self.dirty(plan);
        }
        Ok(Stage::Frozen { plan, writes })
    }

    /// The GPU-hours to recompute, after every other term is written (they include them), if any.
    fn dirty(&self, plan: IngestPlan<'a>) -> Result<Stage<'a>> {
        let hours = plan.dirty()?;
        if hours.is_empty() {
            return self.finish(plan);
        }
        Ok(Stage::Dirty { plan, hours })
    }

    fn finish(&self, plan: IngestPlan<'a>) -> Result<Stage<'a>> {
        let finish = plan.finish(self.draft)?;
        Ok(Stage::Finish {
            outcome: finish.outcome,
            finish: Some(finish),
        })
    }
}

impl Stage<'_> {
    fn name(&self) -> &'static str {
        match self {
            Stage::Gpus(_) => "gpus",
            Stage::Latest { .. } => "latest",
            Stage::Runs { .. } => "runs",
            Stage::Samples { .. } => "samples",
            Stage::EndSets { .. } => "end sets",
            Stage::Rows { .. } => "rows",
            Stage::Merged { .. } => "merged rollups",
            Stage::FrozenRead { .. } => "frozen rollups",
            Stage::Frozen { .. } => "frozen writes",
            Stage::Dirty { .. } => "dirty hours",
            Stage::Finish { .. } => "finish",
            Stage::Done(_) => "done",
            Stage::Failed => "failed",
        }
    }
}

fn internal(what: &str) -> StoreError {
    StoreError::Internal(format!("ingest: {what}"))
}

#[cfg(test)]
mod tests {
    //! The machine fed by hand, as a backend would answer it: no database.

    use eai_engine::domain::{GpuFraction, NonNegative, UnitInterval, WindowMs};
    use eai_engine::time::Timestamp;
    use rust_decimal::Decimal;

    use super::*;
    use crate::rollups::pruned::EndSet;

    const T0: i64 = 1_790_812_800_000; // an hour's start
    const S: i64 = 15_000;

    fn sample(gpu: &str, end_ms: i64) -> Sample {
        Sample {
            node: "gpu-node-1".into(),
            gpu_uuid: gpu.into(),
            model: "H100-80GB".into(),
            namespace: "eai-inference".into(),
            pod: "vllm-0".into(),
            deployment_id: "vllm".into(),
            owner: None,
            window_ms: WindowMs::new(15_000).expect("a window"),
            end: Timestamp(end_ms),
            utilization: UnitInterval::new(Decimal::new(5, 1)).expect("a share"),
            memory_used_gb: NonNegative::new(Decimal::from(40)).expect("a figure"),
            power_w: NonNegative::new(Decimal::from(400)).expect("a figure"),
            storage_gb: NonNegative::ZERO,
            gpu_fraction: GpuFraction::WHOLE,
            share_method: Default::default(),
        }
    }

    fn draft() -> AuditDraft {
        AuditDraft::system("test", "test.ingest", Timestamp(T0), serde_json::json!({}))
    }

    /// A step answered, as a backend would.
    fn answered(ingest: &mut Ingest<'_>, answer: Answer) {
        ingest.resume(answer).expect("a step answered");
    }

    fn gpus(pairs: &[(&str, i64)]) -> Answer {
        Answer::Gpus(pairs.iter().map(|(u, id)| (u.to_string(), *id)).collect())
    }

    fn latest(pairs: Vec<(i64, Sample)>, horizon: Horizon) -> Answer {
        Answer::Latest {
            latest: pairs.into_iter().collect(),
            horizon,
        }
    }

    /// The first two steps of a batch of GPU-a (id 1), answered: its latest stored sample ends at `last`.
    fn stored_up_to(ingest: &mut Ingest<'_>, last: i64, horizon: Horizon) {
        ingest.step().unwrap();
        answered(ingest, gpus(&[("GPU-a", 1)]));
        ingest.step().unwrap();
        answered(ingest, latest(vec![(1, sample("GPU-a", last))], horizon));
    }

    #[test]
    fn new_samples_intern_lock_and_write_rows_then_rollups_then_the_rest() {
        let samples = vec![
            sample("GPU-b", T0 + S),
            sample("GPU-a", T0 + S),
            sample("GPU-b", T0 + 2 * S),
            sample("GPU-a", T0 + S), // a re-send inside the batch: counted once
        ];
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);

        let Step::Read(Read::Gpus(uuids)) = ingest.step().unwrap() else {
            panic!("the GPUs first");
        };
        assert_eq!(uuids, ["GPU-a", "GPU-b"], "in uuid order");
        answered(&mut ingest, gpus(&[("GPU-a", 7), ("GPU-b", 3)]));

        let Step::Read(Read::Latest(locked)) = ingest.step().unwrap() else {
            panic!("then their latest samples");
        };
        assert_eq!(
            locked,
            [(3, "GPU-b"), (7, "GPU-a")],
            "locked in ascending ids"
        );
        answered(&mut ingest, latest(vec![], Horizon::default()));

        // Nothing late: no lookups; the rows and the rollups they add to.
        let Step::Write(Write::Rows(rows)) = ingest.step().unwrap() else {
            panic!("then the rows");
        };
        let written: Vec<(i64, i64)> = rows
            .rows
            .iter()
            .map(|r| (r.gpu_id, r.sample.end.0))
            .collect();
        assert_eq!(written, [(7, T0 + S), (3, T0 + S), (3, T0 + 2 * S)]);
        assert_eq!(rows.seen.len(), 1, "one series");
        assert_eq!(rows.seen.values().next(), Some(&(T0 + S, T0 + 2 * S)));
        assert_eq!(rows.last_ends(), [(3, T0 + 2 * S), (7, T0 + S)]);
        let mut keys: Vec<i64> = rows.rollups.iter().map(|(id, _)| *id).collect();
        keys.sort_unstable();
        assert_eq!(keys, [3, 7], "a delta per GPU-hour");
        answered(&mut ingest, Answer::Rollups(HashMap::new()));

        let Step::Write(Write::Rollups(w)) = ingest.step().unwrap() else {
            panic!("then the merged rollups");
        };
        assert_eq!(w.write.len(), 2);
        assert!(w.delete.is_empty() && w.take_gaps.is_empty() && w.gaps.is_empty());
        let gpu_seconds: Decimal = w.write.iter().map(|(_, r)| r.q.gpu_seconds).sum();
        assert_eq!(gpu_seconds, Decimal::from(45), "three windows of 15 s");
        answered(&mut ingest, Answer::Taken(vec![]));

        let Step::Write(Write::Finish(f)) = ingest.step().unwrap() else {
            panic!("then the last writes");
        };
        let want = IngestOutcome {
            inserted: 3,
            duplicates: 1,
        };
        assert_eq!(f.outcome, want);
        assert!(f.pending.is_empty());
        assert_eq!(f.audit, want.audited(&draft));
        answered(&mut ingest, Answer::Written);

        assert!(matches!(ingest.step().unwrap(), Step::Done(o) if o == want));
    }

    #[test]
    fn a_sample_stored_already_is_a_duplicate_and_writes_nothing() {
        let samples = vec![sample("GPU-a", T0 + S)];
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        stored_up_to(&mut ingest, T0 + S, Horizon::default());
        let Step::Read(Read::Runs(runs)) = ingest.step().unwrap() else {
            panic!("a late sample is looked up");
        };
        assert_eq!(runs, [(1, T0 + S, T0 + S)]);
        answered(
            &mut ingest,
            Answer::Runs(vec![RunRead {
                stored: vec![T0 + S],
                before: None,
                after: None,
            }]),
        );
        // Stored: no neighbours, no rows, nothing to merge or recompute.
        let Step::Write(Write::Finish(f)) = ingest.step().unwrap() else {
            panic!("straight to the last writes");
        };
        assert_eq!(
            f.outcome,
            IngestOutcome {
                inserted: 0,
                duplicates: 1
            }
        );
        assert!(f.groups.rows.is_empty() && f.stale.is_empty());
    }

    /// A late sample between two stored ones: its neighbours, each read once, then its row, and its hour
    /// recomputed.
    fn late_between() -> Vec<Sample> {
        vec![sample("GPU-a", T0 + 2 * S)]
    }

    fn up_to_neighbours<'a>(ingest: &mut Ingest<'a>) -> Vec<SampleAt<'a>> {
        stored_up_to(ingest, T0 + 3 * S, Horizon::default());
        ingest.step().unwrap();
        answered(
            ingest,
            Answer::Runs(vec![RunRead {
                stored: vec![],
                before: Some(T0 + S),
                after: Some(T0 + 3 * S),
            }]),
        );
        let Step::Read(Read::Samples(wanted)) = ingest.step().unwrap() else {
            panic!("the neighbours");
        };
        wanted.to_vec()
    }

    #[test]
    fn a_late_sample_reads_its_neighbours_and_merges_its_terms_into_its_hour() {
        let samples = late_between();
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        let wanted = up_to_neighbours(&mut ingest);
        let at = |end| SampleAt {
            gpu_id: 1,
            uuid: "GPU-a",
            end,
        };
        assert_eq!(wanted, [at(T0 + S), at(T0 + 3 * S)]);
        let stored = [T0 + S, T0 + 3 * S].map(|e| ((1, e), sample("GPU-a", e)));
        answered(&mut ingest, Answer::Samples(stored.into_iter().collect()));

        let Step::Write(Write::Rows(rows)) = ingest.step().unwrap() else {
            panic!("the row");
        };
        assert_eq!(rows.rows.len(), 1);
        assert!(
            rows.rollups.is_empty(),
            "a late sample adds no fast-path delta"
        );
        answered(&mut ingest, Answer::Rollups(HashMap::new()));

        // Its hour's stored row: the two stored windows and the 15 s between them, estimated.
        let Step::Read(Read::Rollups(keys)) = ingest.step().unwrap() else {
            panic!("the stored rollup its terms change");
        };
        assert_eq!(keys.len(), 1);
        let key = keys[0].1.clone();
        assert_eq!((keys[0].0, key.bucket_start), (1, Timestamp(T0)));
        let two = [T0 + S, T0 + 3 * S].map(|e| sample("GPU-a", e));
        let row = eai_engine::rollup::aggregate(
            eai_engine::series::cells(&two, &RollupConfig::default().series()).cells,
        );
        assert_eq!(row.len(), 1);
        assert_eq!(
            (row[0].samples, row[0].estimated_samples),
            (2, 1),
            "one window estimated"
        );
        answered(
            &mut ingest,
            Answer::Rollups([(key, row[0].clone())].into_iter().collect()),
        );

        // The estimated window taken out, the sample's added: three windows of 15 s, none estimated; no
        // recomputation.
        let Step::Write(Write::Rollups(w)) = ingest.step().unwrap() else {
            panic!("the row merged by terms");
        };
        assert_eq!(w.write.len(), 1);
        let r = &w.write[0].1;
        assert_eq!((r.samples, r.estimated_samples), (3, 0));
        assert_eq!(r.q.gpu_seconds, Decimal::from(45));
        assert_eq!(r.q.estimated_gpu_seconds, Decimal::ZERO);
        assert_eq!(
            (r.first_window_start, r.last_window_start),
            (Timestamp(T0), Timestamp(T0 + 2 * S))
        );
        assert!(w.delete.is_empty() && w.take_gaps.is_empty() && w.gaps.is_empty());
        answered(&mut ingest, Answer::Taken(vec![]));

        let Step::Write(Write::Finish(f)) = ingest.step().unwrap() else {
            panic!("the last writes, no recomputation");
        };
        assert_eq!(f.outcome.inserted, 1);
        assert!(f.stale.is_empty(), "its group takes the deltas");
        let g = f.groups.by_key();
        let (added, taken) = g.values().next().expect("its group");
        assert_eq!(
            added.map(|a| (a.samples, a.estimated_samples)),
            Some((1, 0))
        );
        assert_eq!(
            taken.map(|t| (t.samples, t.estimated_samples)),
            Some((0, 1))
        );
    }

    #[test]
    fn a_neighbour_missing_from_the_answer_is_an_error() {
        let samples = late_between();
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        up_to_neighbours(&mut ingest);
        let one = [((1, T0 + S), sample("GPU-a", T0 + S))];
        let err = ingest
            .resume(Answer::Samples(one.into_iter().collect()))
            .unwrap_err();
        assert!(err.to_string().contains("went missing"), "{err}");
        assert!(ingest.step().is_err(), "nothing after a failure");
    }

    #[test]
    fn a_window_whose_raw_row_was_pruned_is_found_in_the_end_sets() {
        let samples = vec![sample("GPU-a", T0 + S)];
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        let kept = T0 + 4 * 3_600_000;
        let horizon = Horizon {
            pruned_before: Some(T0 + 3_600_000),
            indexed_from: Some(T0),
            ..Horizon::default()
        };
        stored_up_to(&mut ingest, kept, horizon);
        ingest.step().unwrap();
        answered(
            &mut ingest,
            Answer::Runs(vec![RunRead {
                stored: vec![],
                before: None,
                after: Some(kept),
            }]),
        );
        ingest.step().unwrap();
        answered(
            &mut ingest,
            Answer::Samples([((1, kept), sample("GPU-a", kept))].into_iter().collect()),
        );
        let Step::Read(Read::EndSets(keys)) = ingest.step().unwrap() else {
            panic!("the end sets: pruned windows may lie before it");
        };
        assert_eq!(keys, [(1, T0 + S)]);
        let mut set = EndSet::default();
        set.insert(T0 + S);
        let sets = [((1, T0 + S), [(T0, set)].into_iter().collect())];
        answered(&mut ingest, Answer::EndSets(sets.into_iter().collect()));
        let Step::Write(Write::Finish(f)) = ingest.step().unwrap() else {
            panic!("a re-send of a pruned window: nothing to write");
        };
        assert_eq!(
            f.outcome,
            IngestOutcome {
                inserted: 0,
                duplicates: 1
            }
        );
    }

    #[test]
    fn an_answer_to_another_step_is_an_error() {
        let samples = vec![sample("GPU-a", T0 + S)];
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        ingest.step().unwrap();
        let err = ingest.resume(Answer::Written).unwrap_err();
        assert!(
            err.to_string().contains("written answered at gpus"),
            "{err}"
        );
        assert!(ingest.step().is_err());
    }

    #[test]
    fn a_gpu_the_backend_did_not_intern_is_an_error() {
        let samples = vec![sample("GPU-a", T0 + S)];
        let batch = Batch::encode(&samples).unwrap();
        let draft = draft();
        let mut ingest = batch.ingest(RollupConfig::default(), &draft);
        ingest.step().unwrap();
        let err = ingest.resume(gpus(&[("GPU-z", 1)])).unwrap_err();
        assert!(err.to_string().contains("unknown gpu GPU-a"), "{err}");
    }
}

//! Ingest: the driver of [`crate::plan::ingest::Ingest`] on SQLite, each step answered with its statements
//! inside one `IMMEDIATE` transaction, and the statements themselves.

use std::collections::HashMap;
use std::sync::LazyLock;

use eai_engine::domain::Sample;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use rustc_hash::FxHashMap;

use super::groups::apply_groups;
use super::meta::{add_equal_shares, end_sets_near, horizon};
use super::rows::{
    delete_rollup, one_sample, recompute, stored_rollup, take_gap, write_gap, write_rollup, Pick,
};
use crate::codec::{Figures, LabelsRef};
use crate::plan::ingest::{
    Answer, Batch, Finish, Ingest, Read, RollupWrites, Rows, RunRead, Step, Write,
};
use crate::sqlite::codec::{owner_text, Ctx};
use crate::sqlite::tx::{append_in, write_outbox};
use crate::sqlite::SqliteConfig;
use crate::{AuditDraft, IngestOutcome, Result, StoreError};

// --- ingest ---------------------------------------------------------------------------------------------------

pub(super) fn intern_gpu(tx: &Connection, uuid: &str) -> Result<i64> {
    let found: Option<i64> = tx
        .prepare_cached("SELECT id FROM gpus WHERE uuid = ?1")
        .and_then(|mut st| st.query_row([uuid], |r| r.get(0)).optional())
        .ctx("read gpus")?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.prepare_cached("INSERT INTO gpus (uuid) VALUES (?1)")
        .and_then(|mut st| st.execute([uuid]))
        .ctx("insert a gpu")?;
    Ok(tx.last_insert_rowid())
}

pub(super) fn intern_series(tx: &Connection, l: LabelsRef<'_>, end_ms: i64) -> Result<i64> {
    let owner = owner_text(l.owner);
    let found: Option<i64> = tx
        .prepare_cached(
            "SELECT id FROM series WHERE deployment_id = ?1 AND owner = ?2 AND model = ?3 AND namespace = ?4 AND pod = ?5 AND node = ?6 AND share = ?7",
        )
        .and_then(|mut st| {
            st.query_row(params![l.deployment_id, owner, l.model, l.namespace, l.pod, l.node, l.share.as_str()], |r| r.get(0)).optional()
        })
        .ctx("read series")?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.prepare_cached(
        "INSERT INTO series (deployment_id, owner, model, namespace, pod, node, share, first_seen_ms, last_seen_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
    )
    .and_then(|mut st| st.execute(params![l.deployment_id, owner, l.model, l.namespace, l.pod, l.node, l.share.as_str(), end_ms]))
    .ctx("insert a series")?;
    Ok(tx.last_insert_rowid())
}

/// The GPUs (id, uuid) with rollup rows in bucket `h` (any segment of it): a GPU has cells in a bucket exactly
/// when it has rows there.
pub(super) fn gpus_of_bucket(
    tx: &Connection,
    cfg: &SqliteConfig,
    h: i64,
) -> Result<Vec<(i64, String)>> {
    tx.prepare_cached(
        "SELECT DISTINCT r.gpu_id, g.uuid FROM rollups r JOIN gpus g ON g.id = r.gpu_id WHERE r.bucket_ms >= ?1 AND r.bucket_ms < ?2",
    )
    .and_then(|mut st| st.query_map(params![h, h + cfg.bucket_ms], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
    .ctx("read the gpus of a bucket")
}

/// Rows one multi-row insert writes (nine parameters a row: far within SQLite's 32,766). One statement for
/// many rows spares SQLite's per-statement work (reset, bind, the statement cache's lookup) most rows: the raw
/// rows were a third of the control plane's CPU at ingest, one statement a row (BENCHMARKS.md "Import from
/// Prometheus").
const ROWS_PER_INSERT: usize = 50;

const INSERT_SAMPLES: &str = "INSERT OR IGNORE INTO gpu_samples \
    (gpu_id, end_ms, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) VALUES ";

/// The insert of `n` rows.
fn insert_sql(n: usize) -> String {
    let mut sql = String::with_capacity(INSERT_SAMPLES.len() + n * 22);
    sql.push_str(INSERT_SAMPLES);
    for i in 0..n {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?,?,?,?,?,?,?,?,?)");
    }
    sql
}

/// A planned sample row: its GPU's and series' ids.
pub(super) struct NewRow<'a> {
    pub gpu_id: i64,
    pub series_id: i64,
    pub sample: &'a Sample,
    pub figures: &'a Figures,
}

/// Writes planned samples, [`ROWS_PER_INSERT`] a statement; every planned row is new, so a row already there
/// is an error.
pub(super) fn insert_rows(tx: &Connection, rows: &[NewRow<'_>]) -> Result<()> {
    static FULL: LazyLock<String> = LazyLock::new(|| insert_sql(ROWS_PER_INSERT));
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let written = match chunk.len() {
            ROWS_PER_INSERT => tx
                .prepare_cached(&FULL)
                .and_then(|mut st| bind_rows(&mut st, chunk)),
            // The batch's last few rows: a statement of their own, not kept (its length is a one-off).
            n => tx
                .prepare(&insert_sql(n))
                .and_then(|mut st| bind_rows(&mut st, chunk)),
        }
        .ctx("insert samples")?;
        if written != chunk.len() {
            let s = chunk[0].sample;
            return Err(StoreError::Internal(format!(
                "ingest: {} of {} samples from {} at {} were planned as new but are stored already",
                chunk.len() - written,
                chunk.len(),
                s.gpu_uuid,
                s.end
            )));
        }
    }
    Ok(())
}

/// Binds the rows to an insert of as many and runs it: the rows written.
fn bind_rows(st: &mut rusqlite::Statement<'_>, rows: &[NewRow<'_>]) -> rusqlite::Result<usize> {
    let mut at = 1;
    for r in rows {
        for v in r.figures.row(r.gpu_id, r.sample.end.0, r.series_id) {
            st.raw_bind_parameter(at, v)?;
            at += 1;
        }
    }
    st.raw_execute()
}

/// The ends of a GPU's stored rows in `[lo, hi]`, in order.
fn ends_between(tx: &Connection, id: i64, lo: i64, hi: i64) -> Result<Vec<i64>> {
    tx.prepare_cached(
        "SELECT end_ms FROM gpu_samples WHERE gpu_id = ?1 AND end_ms >= ?2 AND end_ms <= ?3 ORDER BY end_ms",
    )
    .and_then(|mut st| {
        st.query_map(params![id, lo, hi], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()
    })
    .ctx("read stored ends")
}

/// The end of a GPU's stored row picked from `at` as [`one_sample`] picks its row.
fn end_near(tx: &Connection, pick: Pick, id: i64, at: i64) -> Result<Option<i64>> {
    tx.prepare_cached(&format!(
        "SELECT s.end_ms FROM gpu_samples s WHERE s.gpu_id = ?1{}",
        pick.tail()
    ))
    .and_then(|mut st| st.query_row(params![id, at], |r| r.get(0)).optional())
    .ctx("read a stored end")
}

/// Stores a batch as [`crate::plan::ingest::Ingest`] plans it: this only reads what each step asks for and
/// writes what it returns.
///
/// Foreign keys are not checked while it runs: every GPU and series id it writes is one it read or made in the
/// same transaction ([`intern_gpu`], [`intern_series`]), and nothing deletes GPUs or series; checking them cost
/// two index searches a sample row. (SQLite takes the setting only outside a transaction.)
pub fn insert(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    batch: &[Sample],
    draft: &AuditDraft,
) -> Result<IngestOutcome> {
    let batch = Batch::encode(batch)?;
    let mut ingest = batch.ingest(*cfg, draft);
    conn.pragma_update(None, "foreign_keys", "OFF")
        .ctx("set foreign_keys")?;
    let out = drive(conn, cfg, &mut ingest);
    conn.pragma_update(None, "foreign_keys", "ON")
        .ctx("set foreign_keys")?;
    out
}

/// Answers each step of `ingest` in one `IMMEDIATE` transaction, committed when it is done.
fn drive(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    ingest: &mut Ingest<'_>,
) -> Result<IngestOutcome> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin ingest")?;
    let outcome = loop {
        let answer = match ingest.step()? {
            Step::Read(r) => read(&tx, cfg, r)?,
            Step::Write(w) => write(&tx, cfg, w)?,
            Step::Done(outcome) => break outcome,
        };
        ingest.resume(answer)?;
    };
    tx.commit().ctx("commit ingest")?;
    Ok(outcome)
}

/// Answers a read, a statement a GPU, run or key.
fn read(tx: &Connection, cfg: &SqliteConfig, read: Read<'_, '_>) -> Result<Answer> {
    Ok(match read {
        Read::Gpus(uuids) => Answer::Gpus(
            uuids
                .iter()
                .map(|u| Ok((u.to_string(), intern_gpu(tx, u)?)))
                .collect::<Result<_>>()?,
        ),
        Read::Latest(gpus) => {
            let mut latest = HashMap::with_capacity(gpus.len());
            for &(id, uuid) in gpus {
                latest
                    .extend(one_sample(tx, Pick::AtOrBefore, id, uuid, i64::MAX)?.map(|s| (id, s)));
            }
            Answer::Latest {
                latest,
                horizon: horizon(tx)?,
            }
        }
        Read::Runs(runs) => Answer::Runs(
            runs.iter()
                .map(|&(id, lo, hi)| {
                    Ok(RunRead {
                        stored: ends_between(tx, id, lo, hi)?,
                        before: end_near(tx, Pick::Before, id, lo)?,
                        after: end_near(tx, Pick::After, id, hi)?,
                    })
                })
                .collect::<Result<_>>()?,
        ),
        Read::Samples(keys) => {
            let mut found = HashMap::with_capacity(keys.len());
            for k in keys {
                let s = one_sample(tx, Pick::AtOrAfter, k.gpu_id, k.uuid, k.end)?;
                found.extend(
                    s.filter(|s| s.end.0 == k.end)
                        .map(|s| ((k.gpu_id, k.end), s)),
                );
            }
            Answer::Samples(found)
        }
        Read::EndSets(keys) => Answer::EndSets(
            keys.iter()
                .map(|&(id, end)| Ok(((id, end), end_sets_near(tx, cfg, id, end)?)))
                .collect::<Result<_>>()?,
        ),
        Read::Rollups(keys) => Answer::Rollups(stored_rollups(tx, &keys)?),
    })
}

/// The stored rollups of these keys, those found.
fn stored_rollups(
    tx: &Connection,
    keys: &[(i64, &eai_engine::rollup::RollupKey)],
) -> Result<HashMap<eai_engine::rollup::RollupKey, eai_engine::rollup::Rollup>> {
    let mut found = HashMap::with_capacity(keys.len());
    for &(id, k) in keys {
        found.extend(stored_rollup(tx, id, k)?.map(|r| (k.clone(), r)));
    }
    Ok(found)
}

/// Carries out a write, a statement a row but for the samples ([`insert_rows`]).
fn write(tx: &Connection, cfg: &SqliteConfig, write: Write<'_, '_>) -> Result<Answer> {
    match write {
        Write::Rows(rows) => write_rows(tx, rows),
        Write::Rollups(w) => write_rollups(tx, w),
        Write::Recompute { hours, mut rc } => {
            for (id, uuid, h) in hours {
                recompute(tx, cfg, &mut rc, *id, uuid, *h)?;
            }
            Ok(Answer::Written)
        }
        Write::Finish(f) => {
            finish(tx, *f)?;
            Ok(Answer::Written)
        }
    }
}

/// The rows, each series interned when a sample of it is first written and its span widened to what the batch
/// saw; then the stored rollups the deltas add to.
fn write_rows(tx: &Connection, w: Rows<'_, '_>) -> Result<Answer> {
    let mut series: FxHashMap<LabelsRef<'_>, i64> = FxHashMap::default();
    let mut rows = Vec::with_capacity(w.rows.len());
    for row in w.rows {
        let labels = LabelsRef::of(row.sample);
        let series_id = match series.get(&labels) {
            Some(id) => *id,
            None => {
                let id = intern_series(tx, labels, row.sample.end.0)?;
                series.insert(labels, id);
                id
            }
        };
        rows.push(NewRow {
            gpu_id: row.gpu_id,
            series_id,
            sample: row.sample,
            figures: row.figures,
        });
    }
    insert_rows(tx, &rows)?;
    for (labels, (first, last)) in w.seen {
        let series_id = series
            .get(labels)
            .ok_or_else(|| StoreError::Internal("ingest: a written series has no id".into()))?;
        tx.prepare_cached(
            "UPDATE series SET first_seen_ms = MIN(first_seen_ms, ?2), last_seen_ms = MAX(last_seen_ms, ?3) WHERE id = ?1",
        )
        .and_then(|mut st| st.execute(params![series_id, first, last]))
        .ctx("update series seen")?;
    }
    Ok(Answer::Rollups(stored_rollups(tx, &w.rollups)?))
}

fn write_rollups(tx: &Connection, w: RollupWrites<'_>) -> Result<Answer> {
    for (id, r) in w.write {
        write_rollup(tx, *id, r)?;
    }
    for (id, k) in w.delete {
        delete_rollup(tx, *id, k)?;
    }
    let mut taken = Vec::new();
    for (id, uuid, from) in w.take_gaps {
        taken.extend(take_gap(tx, *id, uuid, *from)?);
    }
    for (id, g) in w.gaps {
        write_gap(tx, *id, g)?;
    }
    Ok(Answer::Taken(taken))
}

/// The last writes: pending prunes, equal shares, the group rollups, the outbox, the audit event.
fn finish(tx: &Connection, f: Finish) -> Result<()> {
    for (id, from) in f.pending {
        tx.prepare_cached(
            "INSERT INTO prune_pending (gpu_id, from_ms) VALUES (?1, ?2) \
             ON CONFLICT (gpu_id) DO UPDATE SET from_ms = MIN(from_ms, excluded.from_ms)",
        )
        .and_then(|mut st| st.execute(params![id, from]))
        .ctx("note rows to prune")?;
    }
    for e in &f.equal_shares {
        add_equal_shares(tx, e)?;
    }
    let mut outbox = f.outbox;
    apply_groups(tx, f.groups, &f.stale, outbox.as_mut())?;
    if let Some(o) = outbox {
        write_outbox(tx, o)?;
    }
    append_in(tx, &f.audit)?;
    Ok(())
}

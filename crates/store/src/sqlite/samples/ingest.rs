//! Ingest: a batch as [`crate::plan::ingest`] plans it.

use std::collections::HashMap;
use std::sync::LazyLock;

use eai_engine::domain::Sample;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use rustc_hash::FxHashMap;

use super::groups::apply_groups;
use super::meta::{end_sets_near, horizon};
use super::rows::{
    delete_rollup, one_sample, recompute, stored_rollup, take_gap, write_gap, write_rollup, Pick,
};
use crate::codec::{Figures, LabelsRef};
use crate::plan::ingest::{
    late_lookups, late_runs, Ingest, LateKey, LateRead, RunRead, LATE_RUN_SPAN_MS,
};
use crate::rollups::pruned;
use crate::sqlite::codec::{owner_text, Ctx};
use crate::sqlite::SqliteConfig;
use crate::{IngestOutcome, Result, StoreError};

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

/// Stores a batch as [`crate::plan::ingest`] plans it: this only reads what each step asks for and writes what it
/// returns.
///
/// Foreign keys are not checked while it runs: every GPU and series id it writes is one it read or made in the
/// same transaction ([`intern_gpu`], [`intern_series`]), and nothing deletes GPUs or series; checking them cost
/// two index searches a sample row. (SQLite takes the setting only outside a transaction.)
pub fn insert(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    batch: &[Sample],
    draft: &crate::AuditDraft,
) -> Result<IngestOutcome> {
    conn.pragma_update(None, "foreign_keys", "OFF")
        .ctx("set foreign_keys")?;
    let out = insert_with_own_ids(conn, cfg, batch, draft);
    conn.pragma_update(None, "foreign_keys", "ON")
        .ctx("set foreign_keys")?;
    out
}

fn insert_with_own_ids(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    batch: &[Sample],
    draft: &crate::AuditDraft,
) -> Result<IngestOutcome> {
    let ingest = Ingest::new(batch)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin ingest")?;

    // Reads, all before any write: the GPUs, the horizon, each GPU's latest sample, then the late samples'.
    let mut ids: HashMap<String, i64> = HashMap::new();
    let mut uuids: HashMap<i64, String> = HashMap::new();
    let mut latest: HashMap<i64, Sample> = HashMap::new();
    for uuid in ingest.gpus() {
        let id = intern_gpu(&tx, uuid)?;
        latest.extend(one_sample(&tx, Pick::AtOrBefore, id, uuid, i64::MAX)?.map(|s| (id, s)));
        ids.insert(uuid.to_string(), id);
        uuids.insert(id, uuid.to_string());
    }
    let horizon = horizon(&tx)?;
    let splits = ingest.split(ids, latest)?;
    // The late samples, looked up by runs (crate::plan::ingest::late_runs), then their neighbours read once each.
    let late = splits.late();
    let runs = late_runs(&late, LATE_RUN_SPAN_MS);
    let mut run_reads = Vec::with_capacity(runs.len());
    for &(id, lo, hi) in &runs {
        run_reads.push(RunRead {
            stored: ends_between(&tx, id, lo, hi)?,
            before: end_near(&tx, Pick::Before, id, lo)?,
            after: end_near(&tx, Pick::After, id, hi)?,
        });
    }
    let mut neighbours: HashMap<LateKey, Sample> = HashMap::new();
    let mut neighbour = |id: i64, end: Option<i64>| -> Result<Option<Sample>> {
        let Some(end) = end else { return Ok(None) };
        if let Some(s) = neighbours.get(&(id, end)) {
            return Ok(Some(s.clone()));
        }
        let uuid = uuids.get(&id).map(String::as_str).unwrap_or_default();
        let s = one_sample(&tx, Pick::AtOrAfter, id, uuid, end)?
            .filter(|s| s.end.0 == end)
            .ok_or_else(|| {
                StoreError::Internal(format!(
                    "ingest: the stored sample ({id}, {end}) went missing"
                ))
            })?;
        neighbours.insert((id, end), s.clone());
        Ok(Some(s))
    };
    let mut reads: HashMap<LateKey, LateRead> = HashMap::new();
    for (key, (stored, before, after)) in late_lookups(&late, &runs, &run_reads)? {
        let read = match stored {
            true => LateRead {
                stored,
                ..LateRead::default()
            },
            false => LateRead {
                stored,
                before: neighbour(key.0, before)?,
                after: neighbour(key.0, after)?,
            },
        };
        reads.insert(key, read);
    }
    let mut near = HashMap::new();
    for (id, end) in splits.needs_index(&horizon, &reads) {
        near.insert(
            (id, end),
            pruned::ends_near(&end_sets_near(&tx, cfg, id, end)?, end),
        );
    }
    let mut plan = splits.plan(*cfg, horizon, &reads, &near)?;

    // Rows: a series is interned when a sample of it is first written.
    let mut series: FxHashMap<LabelsRef<'_>, i64> = FxHashMap::default();
    let planned = plan.rows()?;
    let mut rows = Vec::with_capacity(planned.len());
    for row in planned {
        let labels = LabelsRef::of(row.sample);
        let series_id = match series.get(&labels) {
            Some(id) => *id,
            None => {
                let id = intern_series(&tx, labels, row.sample.end.0)?;
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
    insert_rows(&tx, &rows)?;

    // Fast path: the stored rollups of the deltas' keys, merged.
    let deltas = plan.deltas();
    let mut current = HashMap::new();
    for d in &deltas {
        let id = plan.gpu_id(&d.key.gpu_uuid)?;
        current.extend(stored_rollup(&tx, id, &d.key)?.map(|r| (d.key.clone(), r)));
    }
    for (id, r) in plan.merged(deltas, current)? {
        write_rollup(&tx, id, &r)?;
    }
    for (id, g) in plan.gaps()? {
        write_gap(&tx, id, &g)?;
    }

    // Late samples in frozen hours.
    let deltas = plan.frozen_deltas();
    let mut current = HashMap::new();
    for (k, _, _) in &deltas {
        let id = plan.gpu_id(&k.gpu_uuid)?;
        current.extend(stored_rollup(&tx, id, k)?.map(|r| (k.clone(), r)));
    }
    let frozen = plan.frozen(deltas, current)?;
    for (id, r) in &frozen.write {
        write_rollup(&tx, *id, r)?;
    }
    for (id, k) in &frozen.delete {
        delete_rollup(&tx, *id, k)?;
    }
    let mut taken = Vec::new();
    for (id, from) in plan.gaps_removed()? {
        let uuid = uuids.get(&id).map(String::as_str).unwrap_or_default();
        taken.extend(take_gap(&tx, id, uuid, from)?);
    }
    plan.gaps_taken(&taken);
    for (id, g) in plan.frozen_gaps()? {
        write_gap(&tx, id, &g)?;
    }

    // Dirty hours, recomputed from raw rows.
    let dirty = plan.dirty()?;
    let mut rc = plan.recompute();
    for (id, uuid, h) in dirty {
        recompute(&tx, cfg, &mut rc, id, &uuid, h)?;
    }

    for (labels, (first, last)) in &plan.seen() {
        let series_id = series
            .get(labels)
            .ok_or_else(|| StoreError::Internal("ingest: a written series has no id".into()))?;
        tx.prepare_cached(
            "UPDATE series SET first_seen_ms = MIN(first_seen_ms, ?2), last_seen_ms = MAX(last_seen_ms, ?3) WHERE id = ?1",
        )
        .and_then(|mut st| st.execute(params![series_id, first, last]))
        .ctx("update series seen")?;
    }
    for (id, from) in plan.pending()? {
        tx.prepare_cached(
            "INSERT INTO prune_pending (gpu_id, from_ms) VALUES (?1, ?2) \
             ON CONFLICT (gpu_id) DO UPDATE SET from_ms = MIN(from_ms, excluded.from_ms)",
        )
        .and_then(|mut st| st.execute(params![id, from]))
        .ctx("note rows to prune")?;
    }
    for e in plan.equal_shares() {
        super::meta::add_equal_shares(&tx, &e)?;
    }
    let done = plan.finish(draft);
    apply_groups(&tx, done.groups, &done.stale)?;
    if let Some(o) = done.outbox {
        crate::sqlite::tx::write_outbox(&tx, o)?;
    }
    crate::sqlite::tx::append_in(&tx, &done.audit)?;
    tx.commit().ctx("commit ingest")?;
    Ok(done.outcome)
}

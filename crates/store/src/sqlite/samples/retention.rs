//! Retention: pruning raw samples (see [`crate::rollups::pruned`]).

use std::collections::HashMap;

use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, TransactionBehavior};

use super::groups::apply_groups;
use super::ingest::gpus_of_bucket;
use super::meta::{cuts, end_sets_between, meta_get, meta_set, write_end_set};
use super::rows::recompute;
use crate::plan::prune;
use crate::rollups::groups::GroupDeltas;
use crate::rollups::pruned::{self, Stored};
use crate::rollups::PRUNED_BEFORE;
use crate::sqlite::codec::Ctx;
use crate::sqlite::SqliteConfig;
use crate::Result;

// --- retention ------------------------------------------------------------------------------------------------

/// `(end, window)` of the raw rows of a GPU, by a tail of `WHERE gpu_id = ?1 ...`.
pub(super) fn raw_ends(
    conn: &Connection,
    tail: &str,
    p: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Stored>> {
    conn.prepare_cached(&format!(
        "SELECT end_ms, window_ms FROM gpu_samples WHERE gpu_id = ?1 {tail}"
    ))
    .and_then(|mut st| {
        st.query_map(p, |r| {
            Ok(Stored {
                end: r.get(0)?,
                window: Some(r.get(1)?),
            })
        })?
        .collect()
    })
    .ctx("read raw samples")
}

/// Prunes raw samples that ended before `before` (see [`crate::rollups::pruned`]): the hours about to freeze are
/// first re-cut from raw samples at the policy boundaries recorded; then, per GPU, the raw rows from its pruning
/// start (the last horizon, or earlier where late rows were written below it) to its cutoff are classified: edges
/// and the latest sample stay whole, the others leave their end in the GPU's end sets. Records the horizon.
pub fn prune(conn: &mut Connection, cfg: &SqliteConfig, before: Timestamp) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin prune")?;
    let recorded = meta_get(&tx, PRUNED_BEFORE)?;

    // Hours about to freeze that hold a cut: their rollups are rebuilt at the cuts while raw samples last.
    let cuts = cuts(&tx)?;
    let (mut plan, hours) = prune::Refreeze::new(cuts, recorded, before, cfg);
    let mut rc = plan.recompute();
    for h in hours {
        for (id, uuid) in gpus_of_bucket(&tx, cfg, h)? {
            recompute(&tx, cfg, &mut rc, id, &uuid, h)?;
        }
    }
    let prune::Refreeze {
        horizon,
        mut outbox,
        stale,
        ..
    } = plan;
    apply_groups(&tx, GroupDeltas::default(), &stale, outbox.as_mut())?;

    let pending: HashMap<i64, i64> = tx
        .prepare("SELECT gpu_id, from_ms FROM prune_pending")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .ctx("read rows to prune")?;
    let gpus: Vec<i64> = tx
        .prepare("SELECT id FROM gpus")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .ctx("read gpus")?;
    let mut deleted = 0u64;
    for gpu_id in gpus {
        let last: Option<i64> = tx
            .prepare_cached("SELECT MAX(end_ms) FROM gpu_samples WHERE gpu_id = ?1")
            .and_then(|mut st| st.query_row([gpu_id], |r| r.get(0)))
            .ctx("read the last sample")?;
        let Some(last) = last else { continue };
        let Some((lo, cutoff)) =
            prune::range(before, last, pending.get(&gpu_id).copied(), recorded)
        else {
            continue;
        };
        let mut raw = raw_ends(
            &tx,
            "AND end_ms < ?2 ORDER BY end_ms DESC LIMIT 1",
            &[&gpu_id, &lo],
        )?;
        raw.extend(raw_ends(
            &tx,
            "AND end_ms >= ?2 AND end_ms < ?3",
            &[&gpu_id, &lo, &cutoff],
        )?);
        raw.extend(raw_ends(
            &tx,
            "AND end_ms >= ?2 ORDER BY end_ms ASC LIMIT 1",
            &[&gpu_id, &cutoff],
        )?);
        let sets = end_sets_between(
            &tx,
            gpu_id,
            pruned::bucket_of(lo, cfg.bucket_ms),
            pruned::bucket_of(cutoff, cfg.bucket_ms),
        )?;
        let p = pruned::prune_gpu(raw, sets, lo, cutoff, cfg.bucket_ms);
        for e in &p.delete {
            tx.prepare_cached("DELETE FROM gpu_samples WHERE gpu_id = ?1 AND end_ms = ?2")
                .and_then(|mut st| st.execute(params![gpu_id, e]))
                .ctx("delete samples")?;
        }
        deleted += p.delete.len() as u64;
        for (b, set) in &p.sets {
            write_end_set(&tx, gpu_id, *b, set)?;
        }
    }
    tx.execute("DELETE FROM prune_pending", [])
        .ctx("clear rows to prune")?;
    meta_set(&tx, PRUNED_BEFORE, horizon)?;
    if let Some(o) = outbox {
        crate::sqlite::tx::write_outbox(&tx, o)?;
    }
    tx.commit().ctx("commit prune")?;
    Ok(deleted)
}

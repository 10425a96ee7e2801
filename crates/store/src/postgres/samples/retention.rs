//! Retention: pruning raw samples (see [`crate::rollups::pruned`]).

use std::collections::HashMap;

use eai_engine::time::Timestamp;
use tokio_postgres::types::ToSql;

use super::ingest::{gpus_of_bucket, lock};
use super::meta::{meta_get, meta_set};
use super::rows::{end_set_of, recompute};
use super::sql::{
    CUTS, END_SETS_BETWEEN, END_SETS_WRITE, GPUS_ALL, LAST_ENDS, PENDING, PENDING_CLEAR, PRUNE,
    RAW_AROUND,
};
use crate::plan::prune;
use crate::postgres::derived;
use crate::postgres::pool::PgConn;
use crate::postgres::tx::{begin, write_outbox, Mode};
use crate::postgres::Ctx;
use crate::rollups::groups::GroupDeltas;
use crate::rollups::pruned::{self, EndSets, Stored};
use crate::rollups::{Cuts, RollupConfig, PRUNED_BEFORE};
use crate::{Result, Scope};

/// Prunes raw samples that ended before `before` (see [`crate::rollups::pruned`]): the hours about to freeze are
/// first re-cut from raw samples at the policy boundaries recorded; then, per GPU, the raw rows from its pruning
/// start (the last horizon, or earlier where late rows were written below it) to its cutoff are classified: edges
/// and the latest sample stay whole, the others leave their end in the GPU's end sets. Records the horizon.
pub async fn prune(conn: &mut PgConn, cfg: &RollupConfig, before: Timestamp) -> Result<u64> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, GPUS_ALL).await?;
    let mut gpus: Vec<i64> = tx
        .query(&s, &[])
        .await
        .ctx("read gpus")?
        .iter()
        .map(|r| r.get(0))
        .collect();
    lock(&tx, st, &mut gpus).await?;
    let recorded = meta_get(&tx, st, PRUNED_BEFORE).await?;

    // Hours about to freeze that hold a cut: their rollups are rebuilt at the cuts while raw samples last.
    let s = st.get(&tx, CUTS).await?;
    let cuts = Cuts::new(
        tx.query(&s, &[])
            .await
            .ctx("read rollup cuts")?
            .iter()
            .map(|r| r.get::<_, i64>(0)),
    );
    let (mut plan, hours) = prune::Refreeze::new(cuts, recorded, before, cfg);
    let mut rc = plan.recompute();
    for h in hours {
        for id in gpus_of_bucket(&tx, st, cfg, h).await? {
            recompute(&tx, st, cfg, &mut rc, id, h).await?;
        }
    }
    let prune::Refreeze {
        horizon,
        mut outbox,
        stale,
        ..
    } = plan;
    if !stale.is_empty() {
        derived::write_groups(&tx, st, GroupDeltas::default(), stale, outbox.as_mut()).await?;
    }

    let (pending, last_ends) = (st.get(&tx, PENDING).await?, st.get(&tx, LAST_ENDS).await?);
    let gpu_param: [&(dyn ToSql + Sync); 1] = [&gpus];
    let (pending, last_rows) =
        tokio::try_join!(tx.query(&pending, &[]), tx.query(&last_ends, &gpu_param))
            .ctx("read the latest samples")?;
    let pending: HashMap<i64, i64> = pending.iter().map(|r| (r.get(0), r.get(1))).collect();
    // Per GPU: the range of its raw rows to classify, [lo, cutoff).
    let mut ranges: Vec<(i64, i64, i64)> = Vec::new();
    for r in &last_rows {
        let Some(last) = r.get::<_, Option<i64>>(1) else {
            continue;
        };
        let id: i64 = r.get(0);
        if let Some((lo, cutoff)) = prune::range(before, last, pending.get(&id).copied(), recorded)
        {
            ranges.push((id, lo, cutoff));
        }
    }
    let mut deleted = 0u64;
    if !ranges.is_empty() {
        let ids: Vec<i64> = ranges.iter().map(|r| r.0).collect();
        let los: Vec<i64> = ranges.iter().map(|r| r.1).collect();
        let cutoffs: Vec<i64> = ranges.iter().map(|r| r.2).collect();
        let lo_b: Vec<i64> = los
            .iter()
            .map(|e| pruned::bucket_of(*e, cfg.bucket_ms))
            .collect();
        let hi_b: Vec<i64> = cutoffs
            .iter()
            .map(|e| pruned::bucket_of(*e, cfg.bucket_ms))
            .collect();
        let (raw, sets) = (
            st.get(&tx, RAW_AROUND).await?,
            st.get(&tx, END_SETS_BETWEEN).await?,
        );
        let raw_params: [&(dyn ToSql + Sync); 3] = [&ids, &los, &cutoffs];
        let set_params: [&(dyn ToSql + Sync); 3] = [&ids, &lo_b, &hi_b];
        let (raw_rows, set_rows) =
            tokio::try_join!(tx.query(&raw, &raw_params), tx.query(&sets, &set_params),)
                .ctx("read the raw rows to prune")?;
        let mut raw: HashMap<i64, Vec<Stored>> = HashMap::new();
        for r in &raw_rows {
            raw.entry(r.get(0)).or_default().push(Stored {
                end: r.get(1),
                window: Some(r.get(2)),
            });
        }
        let mut sets: HashMap<i64, EndSets> = HashMap::new();
        for r in &set_rows {
            let (b, set) = end_set_of(r, 1)?;
            sets.entry(r.get(0)).or_default().insert(b, set);
        }
        let (mut del_gpu, mut del_end) = (Vec::new(), Vec::new());
        let (mut set_gpu, mut set_bucket, mut set_bytes) = (Vec::new(), Vec::new(), Vec::new());
        for &(id, lo, cutoff) in &ranges {
            let p = pruned::prune_gpu(
                raw.remove(&id).unwrap_or_default(),
                sets.remove(&id).unwrap_or_default(),
                lo,
                cutoff,
                cfg.bucket_ms,
            );
            for e in p.delete {
                del_gpu.push(id);
                del_end.push(e);
            }
            for (b, set) in p.sets {
                set_gpu.push(id);
                set_bucket.push(b);
                set_bytes.push(set.encode(b));
            }
        }
        let (del, write) = (
            st.get(&tx, PRUNE).await?,
            st.get(&tx, END_SETS_WRITE).await?,
        );
        let del_params: [&(dyn ToSql + Sync); 2] = [&del_gpu, &del_end];
        let write_params: [&(dyn ToSql + Sync); 3] = [&set_gpu, &set_bucket, &set_bytes];
        let (n, _) = tokio::try_join!(
            tx.execute(&del, &del_params),
            tx.execute(&write, &write_params),
        )
        .ctx("prune raw samples")?;
        deleted = n;
    }
    let s = st.get(&tx, PENDING_CLEAR).await?;
    tx.execute(&s, &[]).await.ctx("clear rows to prune")?;
    meta_set(&tx, st, PRUNED_BEFORE, horizon).await?;
    if let Some(o) = outbox {
        write_outbox(&tx, st, o).await?;
    }
    tx.commit().await.ctx("commit prune")?;
    Ok(deleted)
}

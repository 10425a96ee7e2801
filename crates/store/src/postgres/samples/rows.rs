//! Row decoding, multi-row writes of rollups and gaps, raw context reads, the recomputation of one GPU-hour,
//! policy cuts and the pruned windows' end sets.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::{Sample, ShareMethod};
use eai_engine::report::Gap;
use eai_engine::rollup::{Placement, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use tokio_postgres::{Row, Statement, Transaction};
use uuid::Uuid;

use super::meta::frozen_before;
use super::sql::{
    BUCKET_CLEAR_GAPS, BUCKET_CLEAR_ROLLUPS, BUCKET_GAPS, BUCKET_ROLLUPS, CONTEXT, CONTEXTS,
    CUTS_INSERT, CUTS_LOCK, CUTS_LOCK_CLASS, END_SETS_NEAR, FROZEN_ROLLED_UP, GAPS_WRITE,
    ROLLUPS_WRITE,
};
use crate::codec::{count, decode, share_method, to_i64, Figures, Labels};
use crate::plan::recompute::Recompute;
use crate::postgres::pool::Stmts;
use crate::postgres::{owner_of, owner_uuid, Ctx, PLATFORM_TENANT};
use crate::rollups::groups::GroupKey;
use crate::rollups::pruned::{self, EndSet, EndSets};
use crate::rollups::{self, RollupConfig};
use crate::Result;

// --- decoding rows --------------------------------------------------------------------------------------------

/// A sample row of [`sample_cols`]: (gpu id, sample).
pub(super) fn sample_of(r: &Row) -> Result<(i64, Sample)> {
    let gpu_id: i64 = r.get(0);
    let uuid: String = r.get(1);
    let f = Figures {
        window_ms: r.get(3),
        util_e6: r.get(4),
        mem_e10: r.get(5),
        power_e6: r.get(6),
        storage_e6: r.get(7),
        fraction_e6: r.get(8),
    };
    let labels = Labels {
        node: r.get(9),
        model: r.get(10),
        namespace: r.get(11),
        pod: r.get(12),
        deployment_id: r.get(13),
        owner: owner_of(r.get(14)),
        share: share_method(r.get(15))?,
    };
    Ok((gpu_id, decode(&uuid, r.get(2), &f, labels)?))
}

/// A decimal read back, normalized (as the embedded store returns them).
pub(super) fn dec(r: &Row, i: usize) -> Decimal {
    r.get::<_, Decimal>(i).normalize()
}

/// A group key of a stored row, from its columns.
pub(in crate::postgres) fn group_key(
    bucket_ms: i64,
    deployment_id: String,
    tenant: Uuid,
    model: String,
) -> GroupKey {
    GroupKey {
        bucket_ms,
        deployment_id,
        owner: owner_of(tenant),
        model,
    }
}

/// A rollup row of [`rollup_cols`].
pub(in crate::postgres) fn rollup_of(r: &Row) -> Result<Rollup> {
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid: r.get(0),
            bucket_start: Timestamp(r.get(1)),
            deployment_id: r.get(2),
            owner: owner_of(r.get(3)),
            model: r.get(4),
            placement: match r.get::<_, Option<&str>>(15) {
                Some(namespace) => {
                    Placement::new(namespace, r.get(16), r.get(17), share_method(r.get(18))?)
                }
                None => Placement::default(),
            },
        },
        first_window_start: Timestamp(r.get(5)),
        last_window_start: Timestamp(r.get(6)),
        samples: count(r.get(7), "rollups.samples")?,
        estimated_samples: count(r.get(8), "rollups.estimated_samples")?,
        q: Quantities {
            gpu_seconds: dec(r, 9),
            busy_gpu_seconds: dec(r, 10),
            estimated_gpu_seconds: dec(r, 11),
            memory_gb_seconds: dec(r, 12),
            energy_ws: dec(r, 13),
            storage_gb_seconds: dec(r, 14),
        },
        gpus: None,
    })
}

/// A gap row of [`GAPS_IN`] / [`BUCKET_GAPS`].
pub(super) fn gap_of(r: &Row) -> Result<Gap> {
    Ok(Gap {
        gpu_uuid: r.get(0),
        node: r.get(1),
        deployment_id: r.get(2),
        from: Timestamp(r.get(3)),
        to: Timestamp(r.get(4)),
        reason: crate::codec::gap_reason(r.get(5))?,
    })
}

// --- writing rollups and gaps ---------------------------------------------------------------------------------

/// Upserts rollups (each with its GPU id) in one statement ([`ROLLUPS_WRITE`], prepared).
pub(super) async fn write_rollups(
    tx: &Transaction<'_>,
    s: &Statement,
    rows: &[(i64, Rollup)],
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let n = rows.len();
    let (mut gpu, mut bucket, mut dep, mut tenant, mut model) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut first, mut last, mut samples, mut est) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut q: [Vec<Decimal>; 6] = Default::default();
    let mut placement: [Vec<Option<&str>>; 4] = Default::default();
    for (id, r) in rows {
        placement[0].push(r.key.placement.namespace());
        placement[1].push(r.key.placement.pod());
        placement[2].push(r.key.placement.node());
        placement[3].push(r.key.placement.share().map(ShareMethod::as_str));
        gpu.push(*id);
        bucket.push(r.key.bucket_start.0);
        dep.push(r.key.deployment_id.as_str());
        tenant.push(owner_uuid(r.key.owner)?);
        model.push(r.key.model.as_str());
        first.push(r.first_window_start.0);
        last.push(r.last_window_start.0);
        samples.push(to_i64(r.samples, "rollup samples")?);
        est.push(to_i64(r.estimated_samples, "rollup estimated samples")?);
        for (col, v) in q.iter_mut().zip(r.q.values()) {
            col.push(v.normalize());
        }
    }
    tx.execute(
        s,
        &[
            &gpu,
            &bucket,
            &dep,
            &tenant,
            &model,
            &first,
            &last,
            &samples,
            &est,
            &q[0],
            &q[1],
            &q[2],
            &q[3],
            &q[4],
            &q[5],
            &placement[0],
            &placement[1],
            &placement[2],
            &placement[3],
        ],
    )
    .await
    .ctx("write rollups")?;
    Ok(())
}

/// Upserts gaps (each with its GPU id) in one statement ([`GAPS_WRITE`], prepared); a gap's tenant is the owner
/// of the sample it follows.
pub(super) async fn write_gaps(
    tx: &Transaction<'_>,
    s: &Statement,
    rows: &[(i64, &Gap)],
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let gpu: Vec<i64> = rows.iter().map(|(id, _)| *id).collect();
    let from: Vec<i64> = rows.iter().map(|(_, g)| g.from.0).collect();
    let to: Vec<i64> = rows.iter().map(|(_, g)| g.to.0).collect();
    let reason: Vec<&str> = rows.iter().map(|(_, g)| g.reason.as_str()).collect();
    let dep: Vec<&str> = rows.iter().map(|(_, g)| g.deployment_id.as_str()).collect();
    let node: Vec<&str> = rows.iter().map(|(_, g)| g.node.as_str()).collect();
    tx.execute(
        s,
        &[&gpu, &from, &to, &reason, &dep, &node, &PLATFORM_TENANT],
    )
    .await
    .ctx("write gaps")?;
    Ok(())
}

/// The stored samples of a GPU whose terms can reach bucket `h`, oldest first.
pub(super) async fn context(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    gpu_id: i64,
    h: i64,
) -> Result<Vec<Sample>> {
    let (lo, hi) = rollups::context_range(cfg, h);
    let s = st.get(tx, CONTEXT).await?;
    let mut v = tx
        .query(&s, &[&gpu_id, &lo, &hi])
        .await
        .ctx("read samples around an hour")?
        .iter()
        .map(|r| sample_of(r).map(|(_, s)| s))
        .collect::<Result<Vec<_>>>()?;
    v.sort_by_key(|s| s.end);
    Ok(v)
}

/// [`context`] of several GPUs, per GPU id.
pub(super) async fn contexts(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    gpu_ids: &[i64],
    h: i64,
) -> Result<BTreeMap<i64, Vec<Sample>>> {
    let (lo, hi) = rollups::context_range(cfg, h);
    let s = st.get(tx, CONTEXTS).await?;
    let mut out: BTreeMap<i64, Vec<Sample>> = BTreeMap::new();
    for r in tx
        .query(&s, &[&gpu_ids, &lo, &hi])
        .await
        .ctx("read samples around an hour")?
    {
        let (id, sample) = sample_of(&r)?;
        out.entry(id).or_default().push(sample);
    }
    for v in out.values_mut() {
        v.sort_by_key(|s| s.end);
    }
    Ok(out)
}

/// Recomputes bucket `h` of a GPU (every segment of it) from its raw context ([`Recompute::bucket`]) and replaces
/// its rollup and gap rows.
pub(super) async fn recompute(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    rc: &mut Recompute<'_>,
    gpu_id: i64,
    h: i64,
) -> Result<()> {
    let replaced = match rc.wants_replaced() {
        true => {
            let s = st.get(tx, BUCKET_ROLLUPS).await?;
            let rollups = tx
                .query(&s, &[&gpu_id, &h, &(h + cfg.bucket_ms)])
                .await
                .ctx("read a bucket's rollups")?
                .iter()
                .map(rollup_of)
                .collect::<Result<Vec<_>>>()?;
            let s = st.get(tx, BUCKET_GAPS).await?;
            let gaps = tx
                .query(&s, &[&gpu_id, &h, &(h + cfg.bucket_ms)])
                .await
                .ctx("read a bucket's gaps")?
                .iter()
                .map(gap_of)
                .collect::<Result<Vec<_>>>()?;
            Some((rollups, gaps))
        }
        false => None,
    };
    let samples = context(tx, st, cfg, gpu_id, h).await?;
    let s = st.get(tx, BUCKET_CLEAR_ROLLUPS).await?;
    let keys: Vec<GroupKey> = tx
        .query(&s, &[&gpu_id, &h, &(h + cfg.bucket_ms)])
        .await
        .ctx("clear a bucket's rollups")?
        .iter()
        .map(|r| group_key(r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let (fresh, gaps) = rc.bucket(h, &samples, keys, replaced);
    let rows: Vec<(i64, Rollup)> = fresh.into_iter().map(|r| (gpu_id, r)).collect();
    let s = st.get(tx, ROLLUPS_WRITE).await?;
    write_rollups(tx, &s, &rows).await?;
    let s = st.get(tx, BUCKET_CLEAR_GAPS).await?;
    tx.execute(&s, &[&gpu_id, &h, &(h + cfg.bucket_ms)])
        .await
        .ctx("clear a bucket's gaps")?;
    let rows: Vec<(i64, &Gap)> = gaps.iter().map(|g| (gpu_id, g)).collect();
    let s = st.get(tx, GAPS_WRITE).await?;
    write_gaps(tx, &s, &rows).await
}

/// The policy boundaries just made that become rollup cuts (see [`rollups::new_cuts`]).
pub(in crate::postgres) async fn record_cuts(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    instants: &[Timestamp],
) -> Result<()> {
    // Ingests read the cuts under this lock shared (ingest::CUTS_LOCK_SHARED): none is between reading them
    // and writing its rollups while a policy's cuts are decided, and the rollups looked up below are all
    // committed.
    let s = st.get(tx, CUTS_LOCK).await?;
    tx.execute(&s, &[&CUTS_LOCK_CLASS])
        .await
        .ctx("lock the rollup cuts")?;
    let frozen = frozen_before(tx, st, cfg).await?;
    let hours: Vec<i64> = rollups::frozen_buckets(instants.iter().copied(), frozen, cfg)
        .into_iter()
        .collect();
    let rolled_up = if hours.is_empty() {
        BTreeSet::new()
    } else {
        let s = st.get(tx, FROZEN_ROLLED_UP).await?;
        tx.query(&s, &[&hours, &cfg.bucket_ms])
            .await
            .ctx("look for the rollups of frozen hours")?
            .iter()
            .map(|r| r.get::<_, i64>(0))
            .collect()
    };
    let cuts = rollups::new_cuts(instants.iter().copied(), frozen, &rolled_up, cfg);
    if cuts.is_empty() {
        return Ok(());
    }
    let s = st.get(tx, CUTS_INSERT).await?;
    tx.execute(&s, &[&cuts]).await.ctx("record rollup cuts")?;
    Ok(())
}

pub(super) fn end_set_of(r: &Row, b: usize) -> Result<(i64, EndSet)> {
    let bucket: i64 = r.get(b);
    let bytes: Vec<u8> = r.get(b + 1);
    Ok((bucket, EndSet::decode(bucket, &bytes)?))
}

/// The end sets near each late sample `(gpu id, end)`: the set of its bucket and the nearest one on each side
/// (those with none left out).
pub(super) async fn end_sets_near(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    keys: &[(i64, i64)],
) -> Result<HashMap<(i64, i64), EndSets>> {
    let gpu: Vec<i64> = keys.iter().map(|k| k.0).collect();
    let end: Vec<i64> = keys.iter().map(|k| k.1).collect();
    let bucket: Vec<i64> = end
        .iter()
        .map(|e| pruned::bucket_of(*e, cfg.bucket_ms))
        .collect();
    let s = st.get(tx, END_SETS_NEAR).await?;
    let mut sets: HashMap<(i64, i64), EndSets> = HashMap::new();
    for r in tx
        .query(&s, &[&gpu, &end, &bucket])
        .await
        .ctx("read pruned windows")?
    {
        let (b, set) = end_set_of(&r, 2)?;
        sets.entry((r.get(0), r.get(1))).or_default().insert(b, set);
    }
    Ok(sets)
}

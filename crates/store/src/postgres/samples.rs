//! GPU samples in PostgreSQL: raw rows, and hourly rollups and gaps kept up to date in the ingest transaction by
//! the shared algorithm of [`crate::rollups`] (this module only reads what it asks for and writes what it plans).
//!
//! A batch costs a fixed number of round trips whatever its size: the GPUs are interned and locked (transaction
//! advisory locks keyed by GPU id, in ascending order: concurrent batches of one GPU run one after the other), the latest stored sample
//! of each GPU and the stored neighbours of late samples are read with one statement each, and rows, series,
//! rollup deltas and gaps are written as multi-row statements over `unnest` arrays (rows with a plain `INSERT`: they
//! are new by construction, and the primary key on `(gpu, end)` would refuse, and roll back, one that is not). Only
//! dirty buckets (late samples) cost statements of their own. Everything runs on the platform path: samples of
//! shared deployments belong to no tenant. Last, the batch's group rollups are brought up to date
//! ([`super::derived::write_groups`]: the fast path's deltas added, the groups of recomputed GPU-hours rebuilt).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement, Transaction};
use uuid::Uuid;

use super::derived;
use super::pool::{PgConn, Stmts};
use super::{begin, owner_of, owner_uuid, Ctx, Mode, PLATFORM_TENANT};
use crate::codec::{count, decode, to_i64, Figures, Labels};
use crate::groups::{GroupDeltas, GroupKey};
use crate::ingest::{Ingest, IngestPlan, LateKey, LateRead, Recompute};
use crate::outbox::OutboxRows;
use crate::pruned::{self, EndSet, EndSets, Stored, INDEXED_FROM};
use crate::rollups::{self, Cuts, Horizon, RollupConfig, PRUNED_BEFORE};
use crate::{
    DeploymentSeen, IngestOutcome, LatestSamples, NodeSeen, Result, Scope, StoreError, UsageRead,
};

/// Why the statements below join the way they do. Row level security makes the planner believe that few rows
/// of a tenant table are visible: the policies compare columns with `current_setting(…)`, which it cannot
/// evaluate at plan time, so it guesses a fraction of a percent. Joined with a batch's keys (`unnest` of an
/// array) it then picks plans that are cheap for a few rows and ruinous for many: a hash join over a sequential
/// scan of all of `eai.rollups` (measured: 80 ms per 1,000-GPU batch with 72 hours stored, growing with the
/// table), a sequential scan of `eai.gpus` or `eai.series` repeated for every sample read (100 ms per batch;
/// 12 ms per GPU when an exact hour is read). Per-key lookups are therefore written as `LATERAL` subqueries
/// that stay index probes whatever the estimates (`OFFSET 0` keeps the planner from flattening them back into
/// a join), and a GPU's uuid and a sample's series are fetched per row the same way.
///
/// The columns [`sample_of`] reads, from `s` (a sample row) with [`sample_joins`].
macro_rules! sample_only_cols {
    () => {
        "s.gpu_id, g.uuid, s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, s.fraction_e6, \
         se.node, se.model, se.namespace, se.pod, se.deployment_id, se.tenant_id "
    };
}

/// The series (`se`) and GPU (`g`) of each sample row `s`, one index probe each.
macro_rules! sample_joins {
    () => {
        " CROSS JOIN LATERAL (SELECT * FROM eai.series y WHERE y.id = s.series_id OFFSET 0) se \
         CROSS JOIN LATERAL (SELECT uuid FROM eai.gpus y WHERE y.id = s.gpu_id OFFSET 0) g "
    };
}

/// [`sample_only_cols`] and the joins they read from.
macro_rules! sample_cols {
    () => {
        concat!(
            sample_only_cols!(),
            "FROM eai.gpu_samples s",
            sample_joins!()
        )
    };
}

/// The columns [`rollup_of`] reads, from `r` (a rollup row) with [`rollup_gpu`].
macro_rules! rollup_only_cols {
    () => {
        "g.uuid, r.bucket_ms, r.deployment_id, r.tenant_id, r.model, r.first_window_start_ms, \
         r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
         r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds "
    };
}

/// The GPU (`g`) of each rollup row `r`, one index probe each.
macro_rules! rollup_gpu {
    () => {
        " CROSS JOIN LATERAL (SELECT uuid FROM eai.gpus y WHERE y.id = r.gpu_id OFFSET 0) g "
    };
}

/// [`rollup_only_cols`] and the joins they read from.
macro_rules! rollup_cols {
    () => {
        concat!(rollup_only_cols!(), "FROM eai.rollups r", rollup_gpu!())
    };
}

const META_GET: &str = "SELECT value FROM eai.meta WHERE key = $1";
const META_SET: &str = "INSERT INTO eai.meta (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";

const GPUS_INTERN: &str = "INSERT INTO eai.gpus (uuid) SELECT u FROM unnest($1::text[]) AS u \
     WHERE NOT EXISTS (SELECT 1 FROM eai.gpus g WHERE g.uuid = u) ON CONFLICT (uuid) DO NOTHING";
const GPUS_OF: &str = "SELECT id, uuid FROM eai.gpus WHERE uuid = ANY($1::text[])";
const GPUS_ALL: &str = "SELECT id FROM eai.gpus";
/// A GPU's id is the key of its transaction advisory lock; keys are taken in the order given (ascending ids,
/// so that two transactions never wait on each other in a cycle).
const GPUS_LOCK: &str = "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k";

const LAST_ENDS: &str =
    "SELECT g.id, (SELECT max(s.end_ms) FROM eai.gpu_samples s WHERE s.gpu_id = g.id) \
     FROM unnest($1::bigint[]) AS g(id)";

/// The latest stored sample of each GPU named (none for a GPU without samples).
const LAST_SAMPLES: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[]) AS k(id) CROSS JOIN LATERAL \
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id ORDER BY x.end_ms DESC LIMIT 1) s",
    sample_joins!()
);

const LATE_LOOKUP: &str = "SELECT x.gpu_id, x.end_ms, \
     EXISTS (SELECT 1 FROM eai.gpu_samples s WHERE s.gpu_id = x.gpu_id AND s.end_ms = x.end_ms), \
     (SELECT max(s.end_ms) FROM eai.gpu_samples s WHERE s.gpu_id = x.gpu_id AND s.end_ms < x.end_ms), \
     (SELECT min(s.end_ms) FROM eai.gpu_samples s WHERE s.gpu_id = x.gpu_id AND s.end_ms > x.end_ms) \
     FROM unnest($1::bigint[], $2::bigint[]) AS x(gpu_id, end_ms)";

const SAMPLES_AT: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[], $2::bigint[]) AS k(gpu_id, end_ms) CROSS JOIN LATERAL \
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms = k.end_ms OFFSET 0) s",
    sample_joins!()
);

const CONTEXT: &str = concat!(
    "(SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms < $2 ORDER BY s.end_ms DESC LIMIT 1) UNION ALL (SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms >= $2 AND s.end_ms < $3) UNION ALL (SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms >= $3 ORDER BY s.end_ms LIMIT 1)"
);

/// [`CONTEXT`] of many GPUs in one statement (an exact hour of a fleet is one round trip, not one per GPU).
const CONTEXTS: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[]) AS k(id) CROSS JOIN LATERAL (\
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms < $2 ORDER BY x.end_ms DESC LIMIT 1) \
     UNION ALL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms >= $2 AND x.end_ms < $3) \
     UNION ALL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms >= $3 ORDER BY x.end_ms LIMIT 1)\
     ) s",
    sample_joins!()
);

const SERIES_UPSERT: &str = "INSERT INTO eai.series AS se \
     (tenant_id, deployment_id, model, namespace, pod, node, first_seen_ms, last_seen_ms) \
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[]) \
     ON CONFLICT (deployment_id, tenant_id, model, namespace, pod, node) DO UPDATE SET \
     first_seen_ms = LEAST(se.first_seen_ms, EXCLUDED.first_seen_ms), \
     last_seen_ms = GREATEST(se.last_seen_ms, EXCLUDED.last_seen_ms) \
     RETURNING id, tenant_id, deployment_id, model, namespace, pod, node";

/// A plain insert: every row is planned as new under the GPUs' locks, and the primary key refuses (and so rolls
/// the batch back) any row that is not, so a sample can never be counted twice.
const SAMPLES_INSERT: &str = "INSERT INTO eai.gpu_samples \
     (gpu_id, end_ms, tenant_id, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::bigint[], $5::bigint[], $6::bigint[], \
     $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])";

const ROLLUPS_AT: &str = concat!(
    "SELECT ",
    rollup_only_cols!(),
    "FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[]) \
     AS k(gpu_id, bucket_ms, deployment_id, tenant_id, model) CROSS JOIN LATERAL \
     (SELECT * FROM eai.rollups x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms = k.bucket_ms \
     AND x.deployment_id = k.deployment_id AND x.tenant_id = k.tenant_id AND x.model = k.model OFFSET 0) r",
    rollup_gpu!()
);

const ROLLUPS_WRITE: &str = "INSERT INTO eai.rollups (gpu_id, bucket_ms, deployment_id, tenant_id, model, \
     first_window_start_ms, last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, \
     estimated_gpu_seconds, memory_gb_seconds, energy_ws, storage_gb_seconds) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[], $6::bigint[], \
     $7::bigint[], $8::bigint[], $9::bigint[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], \
     $14::numeric[], $15::numeric[]) \
     ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET \
     first_window_start_ms = EXCLUDED.first_window_start_ms, last_window_start_ms = EXCLUDED.last_window_start_ms, \
     samples = EXCLUDED.samples, estimated_samples = EXCLUDED.estimated_samples, \
     gpu_seconds = EXCLUDED.gpu_seconds, busy_gpu_seconds = EXCLUDED.busy_gpu_seconds, \
     estimated_gpu_seconds = EXCLUDED.estimated_gpu_seconds, memory_gb_seconds = EXCLUDED.memory_gb_seconds, \
     energy_ws = EXCLUDED.energy_ws, storage_gb_seconds = EXCLUDED.storage_gb_seconds";

const GAPS_WRITE: &str = "INSERT INTO eai.gaps (gpu_id, from_ms, to_ms, reason, deployment_id, node, tenant_id) \
     SELECT x.gpu_id, x.from_ms, x.to_ms, x.reason, x.deployment_id, x.node, \
     COALESCE((SELECT s.tenant_id FROM eai.gpu_samples s WHERE s.gpu_id = x.gpu_id AND s.end_ms = x.from_ms), $7) \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[]) \
     AS x(gpu_id, from_ms, to_ms, reason, deployment_id, node) \
     ON CONFLICT (gpu_id, from_ms) DO UPDATE SET to_ms = EXCLUDED.to_ms, reason = EXCLUDED.reason, \
     deployment_id = EXCLUDED.deployment_id, node = EXCLUDED.node, tenant_id = EXCLUDED.tenant_id";

const BUCKET_ROLLUPS: &str = concat!(
    "SELECT ",
    rollup_cols!(),
    " WHERE r.gpu_id = $1 AND r.bucket_ms >= $2 AND r.bucket_ms < $3"
);
const BUCKET_GAPS: &str = "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason \
     FROM eai.gaps x JOIN eai.gpus g ON g.id = x.gpu_id WHERE x.gpu_id = $1 AND x.from_ms >= $2 AND x.from_ms < $3";
/// Returns the keys of the rows it deletes: their groups must be rebuilt.
const BUCKET_CLEAR_ROLLUPS: &str = "DELETE FROM eai.rollups WHERE gpu_id = $1 AND bucket_ms >= $2 \
     AND bucket_ms < $3 RETURNING bucket_ms, deployment_id, tenant_id, model";
const BUCKET_CLEAR_GAPS: &str =
    "DELETE FROM eai.gaps WHERE gpu_id = $1 AND from_ms >= $2 AND from_ms < $3";

const GPUS_OF_BUCKET: &str =
    "SELECT DISTINCT gpu_id FROM eai.rollups WHERE bucket_ms >= $1 AND bucket_ms < $2";
const GAPS_IN: &str = "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason \
     FROM eai.gaps x JOIN eai.gpus g ON g.id = x.gpu_id WHERE x.to_ms > $1 AND x.from_ms < $2";

/// Deletes raw rows by (gpu, end).
const PRUNE: &str =
    "DELETE FROM eai.gpu_samples s USING unnest($1::bigint[], $2::bigint[]) AS c(gpu_id, end_ms) \
     WHERE s.gpu_id = c.gpu_id AND s.end_ms = c.end_ms";

const CUTS: &str = "SELECT at_ms FROM eai.rollup_cuts";
const CUTS_INSERT: &str =
    "INSERT INTO eai.rollup_cuts (at_ms) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING";

/// Per late sample (gpu, end, bucket of end): the end sets of its bucket and the nearest one on each side.
const END_SETS_NEAR: &str = "SELECT k.gpu_id, k.end_ms, e.bucket_ms, e.ends \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, end_ms, bucket_ms) CROSS JOIN LATERAL (\
     (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms = k.bucket_ms) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms < k.bucket_ms \
     ORDER BY x.bucket_ms DESC LIMIT 1) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms > k.bucket_ms \
     ORDER BY x.bucket_ms ASC LIMIT 1)) e";

/// Per GPU (id, first bucket, last bucket): its end sets in that range and the nearest one before it.
const END_SETS_BETWEEN: &str = "SELECT k.gpu_id, e.bucket_ms, e.ends \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, lo, hi) CROSS JOIN LATERAL (\
     (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms >= k.lo AND x.bucket_ms <= k.hi) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms < k.lo \
     ORDER BY x.bucket_ms DESC LIMIT 1)) e";

const END_SETS_WRITE: &str = "INSERT INTO eai.pruned_ends (gpu_id, bucket_ms, ends) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]) \
     ON CONFLICT (gpu_id, bucket_ms) DO UPDATE SET ends = EXCLUDED.ends";

/// Per GPU (id, lo, cutoff): the `(end, window)` of its raw rows in `[lo, cutoff)`, of the nearest one before
/// `lo` and of the first at or after `cutoff`.
const RAW_AROUND: &str = "SELECT k.gpu_id, s.end_ms, s.window_ms \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, lo, cutoff) CROSS JOIN LATERAL (\
     (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms < k.lo \
     ORDER BY x.end_ms DESC LIMIT 1) \
     UNION ALL (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms >= k.lo \
     AND x.end_ms < k.cutoff) \
     UNION ALL (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms >= k.cutoff \
     ORDER BY x.end_ms ASC LIMIT 1)) s";

const PENDING: &str = "SELECT gpu_id, from_ms FROM eai.prune_pending";
const PENDING_CLEAR: &str = "DELETE FROM eai.prune_pending";
const PENDING_UPSERT: &str = "INSERT INTO eai.prune_pending AS p (gpu_id, from_ms) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[]) \
     ON CONFLICT (gpu_id) DO UPDATE SET from_ms = LEAST(p.from_ms, EXCLUDED.from_ms)";

const ROLLUPS_DELETE: &str = "DELETE FROM eai.rollups r \
     USING unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[]) \
     AS k(gpu_id, bucket_ms, deployment_id, tenant_id, model) \
     WHERE r.gpu_id = k.gpu_id AND r.bucket_ms = k.bucket_ms AND r.deployment_id = k.deployment_id \
     AND r.tenant_id = k.tenant_id AND r.model = k.model";

/// Deletes gaps by (gpu, from), returning them as [`gap_of`] reads them.
const GAPS_TAKE: &str = "DELETE FROM eai.gaps x USING unnest($1::bigint[], $2::bigint[]) AS k(gpu_id, from_ms) \
     WHERE x.gpu_id = k.gpu_id AND x.from_ms = k.from_ms \
     RETURNING (SELECT g.uuid FROM eai.gpus g WHERE g.id = x.gpu_id), x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason";

/// The latest sample of every GPU seen at or after $1, the newest first, at most $2 (one index probe per GPU).
const LATEST_SAMPLES: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM eai.gpus k CROSS JOIN LATERAL \
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id ORDER BY x.end_ms DESC LIMIT 1) s",
    sample_joins!(),
    "WHERE s.end_ms >= $1 ORDER BY s.end_ms DESC, g.uuid COLLATE \"C\" LIMIT $2"
);
const LATEST_COUNT: &str = "SELECT count(*) FROM eai.gpus k \
     WHERE (SELECT max(x.end_ms) FROM eai.gpu_samples x WHERE x.gpu_id = k.id) >= $1";
const NODES_SEEN: &str = "SELECT node, max(last_seen_ms) FROM eai.series GROUP BY node \
     HAVING max(last_seen_ms) >= $1 ORDER BY node COLLATE \"C\"";

const SERIES_SEEN: &str =
    "SELECT deployment_id, namespace, model, first_seen_ms, last_seen_ms, tenant_id FROM eai.series \
     ORDER BY deployment_id COLLATE \"C\", last_seen_ms, id";

// --- bookkeeping ----------------------------------------------------------------------------------------------

pub(super) async fn meta_get(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    key: &str,
) -> Result<Option<i64>> {
    let s = st.get(tx, META_GET).await?;
    Ok(tx
        .query_opt(&s, &[&key])
        .await
        .ctx("read meta")?
        .map(|r| r.get(0)))
}

pub(super) async fn meta_set(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    key: &str,
    value: i64,
) -> Result<()> {
    let s = st.get(tx, META_SET).await?;
    tx.execute(&s, &[&key, &value]).await.ctx("write meta")?;
    Ok(())
}

async fn frozen_before(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
) -> Result<Option<i64>> {
    Ok(rollups::frozen_before(
        meta_get(tx, st, PRUNED_BEFORE).await?,
        cfg,
    ))
}

// --- decoding rows --------------------------------------------------------------------------------------------

/// A sample row of [`sample_cols`]: (gpu id, sample).
fn sample_of(r: &Row) -> Result<(i64, Sample)> {
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
    };
    Ok((gpu_id, decode(&uuid, r.get(2), &f, labels)?))
}

/// A decimal read back, normalized (as the embedded store returns them).
fn dec(r: &Row, i: usize) -> Decimal {
    r.get::<_, Decimal>(i).normalize()
}

/// A rollup row of [`rollup_cols`].
pub(super) fn rollup_of(r: &Row) -> Result<Rollup> {
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid: r.get(0),
            bucket_start: Timestamp(r.get(1)),
            deployment_id: r.get(2),
            owner: owner_of(r.get(3)),
            model: r.get(4),
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
fn gap_of(r: &Row) -> Result<Gap> {
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
async fn write_rollups(tx: &Transaction<'_>, s: &Statement, rows: &[(i64, Rollup)]) -> Result<()> {
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
    for (id, r) in rows {
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
            &gpu, &bucket, &dep, &tenant, &model, &first, &last, &samples, &est, &q[0], &q[1],
            &q[2], &q[3], &q[4], &q[5],
        ],
    )
    .await
    .ctx("write rollups")?;
    Ok(())
}

/// Upserts gaps (each with its GPU id) in one statement ([`GAPS_WRITE`], prepared); a gap's tenant is the owner
/// of the sample it follows.
async fn write_gaps(tx: &Transaction<'_>, s: &Statement, rows: &[(i64, &Gap)]) -> Result<()> {
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
async fn context(
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
async fn contexts(
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
async fn recompute(
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
        .map(|r| derived::group_key(r.get(0), r.get(1), r.get(2), r.get(3)))
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
pub(super) async fn record_cuts(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    instants: &[Timestamp],
) -> Result<()> {
    let frozen = frozen_before(tx, st, cfg).await?;
    let cuts = rollups::new_cuts(instants.iter().copied(), frozen, cfg);
    if cuts.is_empty() {
        return Ok(());
    }
    let s = st.get(tx, CUTS_INSERT).await?;
    tx.execute(&s, &[&cuts]).await.ctx("record rollup cuts")?;
    Ok(())
}

fn end_set_of(r: &Row, b: usize) -> Result<(i64, EndSet)> {
    let bucket: i64 = r.get(b);
    let bytes: Vec<u8> = r.get(b + 1);
    Ok((bucket, EndSet::decode(bucket, &bytes)?))
}

/// What the end sets say about each late sample `(gpu id, end)` (see [`pruned::ends_near`]).
async fn end_sets_near(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    keys: &[(i64, i64)],
) -> Result<HashMap<(i64, i64), pruned::EndsNear>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
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
    Ok(keys
        .iter()
        .map(|k| {
            let near = sets
                .get(k)
                .map(|s| pruned::ends_near(s, k.1))
                .unwrap_or_default();
            (*k, near)
        })
        .collect())
}

/// Late samples in frozen hours: the rollups their terms change are read, and written back or deleted as the
/// plan says; the gaps they close are deleted, those they open written.
async fn merge_frozen(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    plan: &mut IngestPlan<'_>,
) -> Result<()> {
    let deltas = plan.frozen_deltas();
    if !deltas.is_empty() {
        let mut keys: RollupKeyCols<'_> = Default::default();
        for (k, _, _) in &deltas {
            keys.push(plan.gpu_id(&k.gpu_uuid)?, k)?;
        }
        let s = st.get(tx, ROLLUPS_AT).await?;
        let current: HashMap<RollupKey, Rollup> = tx
            .query(&s, &[&keys.0, &keys.1, &keys.2, &keys.3, &keys.4])
            .await
            .ctx("read rollups")?
            .iter()
            .map(|r| rollup_of(r).map(|r| (r.key.clone(), r)))
            .collect::<Result<_>>()?;
        drop(keys);
        let frozen = plan.frozen(deltas, current)?;
        let s = st.get(tx, ROLLUPS_WRITE).await?;
        write_rollups(tx, &s, &frozen.write).await?;
        if !frozen.delete.is_empty() {
            let mut gone: RollupKeyCols<'_> = Default::default();
            for (id, k) in &frozen.delete {
                gone.push(*id, k)?;
            }
            let s = st.get(tx, ROLLUPS_DELETE).await?;
            tx.execute(&s, &[&gone.0, &gone.1, &gone.2, &gone.3, &gone.4])
                .await
                .ctx("delete rollups")?;
        }
    }
    let removed = plan.gaps_removed()?;
    if !removed.is_empty() {
        let (ids, froms): (Vec<i64>, Vec<i64>) = removed.into_iter().unzip();
        let s = st.get(tx, GAPS_TAKE).await?;
        let taken = tx
            .query(&s, &[&ids, &froms])
            .await
            .ctx("delete gaps")?
            .iter()
            .map(gap_of)
            .collect::<Result<Vec<_>>>()?;
        plan.gaps_taken(&taken);
    }
    let gaps = plan.frozen_gaps()?;
    if !gaps.is_empty() {
        let rows: Vec<(i64, &Gap)> = gaps.iter().map(|(id, g)| (*id, g)).collect();
        let s = st.get(tx, GAPS_WRITE).await?;
        write_gaps(tx, &s, &rows).await?;
    }
    Ok(())
}

// --- ingest ---------------------------------------------------------------------------------------------------

/// Interns the batch's GPUs; returns uuid -> id. (Statements sent together are pipelined: they run in order on
/// the server, without waiting for each answer in between.)
async fn intern_gpus(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    uuids: &[&str],
) -> Result<HashMap<String, i64>> {
    let (intern, of) = (st.get(tx, GPUS_INTERN).await?, st.get(tx, GPUS_OF).await?);
    let params: [&(dyn ToSql + Sync); 1] = [&uuids];
    let (_, rows) = tokio::try_join!(tx.execute(&intern, &params), tx.query(&of, &params))
        .ctx("intern gpus")?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, String>(1), r.get::<_, i64>(0)))
        .collect())
}

/// The GPUs with rollup rows in bucket `h` (any segment of it): a GPU has cells in a bucket exactly when it has
/// rows there.
async fn gpus_of_bucket(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    h: i64,
) -> Result<Vec<i64>> {
    let s = st.get(tx, GPUS_OF_BUCKET).await?;
    Ok(tx
        .query(&s, &[&h, &(h + cfg.bucket_ms)])
        .await
        .ctx("read the gpus of a bucket")?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Takes the advisory locks of these GPU ids, in ascending order.
async fn lock(tx: &Transaction<'_>, st: &mut Stmts, ids: &mut [i64]) -> Result<()> {
    ids.sort_unstable();
    let s = st.get(tx, GPUS_LOCK).await?;
    let ids: &[i64] = ids;
    tx.execute(&s, &[&ids]).await.ctx("lock gpus")?;
    Ok(())
}

/// Stored samples by (gpu id, end).
async fn samples_at(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    keys: &BTreeSet<(i64, i64)>,
) -> Result<HashMap<(i64, i64), Sample>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let gpu: Vec<i64> = keys.iter().map(|k| k.0).collect();
    let end: Vec<i64> = keys.iter().map(|k| k.1).collect();
    let s = st.get(tx, SAMPLES_AT).await?;
    tx.query(&s, &[&gpu, &end])
        .await
        .ctx("read samples")?
        .iter()
        .map(|r| sample_of(r).map(|(id, s)| ((id, s.end.0), s)))
        .collect()
}

/// Columns of a series upsert: tenants; deployment, model, namespace, pod, node; first and last seen.
type SeriesCols<'a> = (Vec<Uuid>, [Vec<&'a str>; 5], Vec<i64>, Vec<i64>);

/// Columns of rollup keys: GPU id, bucket, deployment, tenant, model.
#[derive(Default)]
struct RollupKeyCols<'a>(Vec<i64>, Vec<i64>, Vec<&'a str>, Vec<Uuid>, Vec<&'a str>);

impl<'a> RollupKeyCols<'a> {
    fn push(&mut self, gpu_id: i64, k: &'a RollupKey) -> Result<()> {
        self.0.push(gpu_id);
        self.1.push(k.bucket_start.0);
        self.2.push(k.deployment_id.as_str());
        self.3.push(owner_uuid(k.owner)?);
        self.4.push(k.model.as_str());
        Ok(())
    }
}

/// Stores a batch as [`crate::ingest`] plans it: this only reads what each step asks for (pipelined: a fixed
/// number of round trips whatever the batch's size) and writes what it returns.
pub async fn insert(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    batch: &[Sample],
    draft: &crate::AuditDraft,
) -> Result<IngestOutcome> {
    let ingest = Ingest::new(batch)?;
    let uuids = ingest.gpus();

    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let ids = intern_gpus(&tx, st, &uuids).await?;

    // Lock the GPUs, then read everything the plan needs before writing anything.
    let mut gpu_ids = uuids
        .iter()
        .map(|u| {
            ids.get(*u)
                .copied()
                .ok_or_else(|| StoreError::Internal(format!("ingest: unknown gpu {u}")))
        })
        .collect::<Result<Vec<i64>>>()?;
    gpu_ids.sort_unstable();
    let (lock, last, meta, cuts) = (
        st.get(&tx, GPUS_LOCK).await?,
        st.get(&tx, LAST_SAMPLES).await?,
        st.get(&tx, META_GET).await?,
        st.get(&tx, CUTS).await?,
    );
    let params: [&(dyn ToSql + Sync); 1] = [&gpu_ids];
    let (_, last_rows, pruned_before, indexed_from, cut_rows) = tokio::try_join!(
        tx.execute(&lock, &params),
        tx.query(&last, &params),
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query_opt(&meta, &[&INDEXED_FROM]),
        tx.query(&cuts, &[]),
    )
    .ctx("lock gpus and read their latest samples")?;
    let horizon = Horizon {
        pruned_before: pruned_before.map(|r| r.get(0)),
        indexed_from: indexed_from.map(|r| r.get(0)),
        cuts: Cuts::new(cut_rows.iter().map(|r| r.get::<_, i64>(0))),
    };
    let latest: HashMap<i64, Sample> = last_rows
        .iter()
        .map(sample_of)
        .collect::<Result<_>>()?;
    let splits = ingest.split(ids, latest)?;

    // The late samples: stored already? the ends of their raw neighbours, then those neighbours.
    let late = splits.late();
    let mut lookups: HashMap<LateKey, Lookup> = HashMap::new();
    if !late.is_empty() {
        let (late_gpu, late_end): (Vec<i64>, Vec<i64>) = late.iter().copied().unzip();
        let s = st.get(&tx, LATE_LOOKUP).await?;
        for r in tx
            .query(&s, &[&late_gpu, &late_end])
            .await
            .ctx("look late samples up")?
        {
            lookups.insert((r.get(0), r.get(1)), (r.get(2), r.get(3), r.get(4)));
        }
    }
    let mut wanted: BTreeSet<(i64, i64)> = BTreeSet::new();
    for ((id, _), (is_stored, before, after)) in &lookups {
        if !is_stored {
            wanted.extend(before.map(|e| (*id, e)));
            wanted.extend(after.map(|e| (*id, e)));
        }
    }
    let neighbours = samples_at(&tx, st, &wanted).await?;
    let find = |id: i64, end: Option<i64>| -> Result<Option<Sample>> {
        end.map(|e| {
            neighbours.get(&(id, e)).cloned().ok_or_else(|| {
                StoreError::Internal(format!(
                    "ingest: the stored sample ({id}, {e}) went missing"
                ))
            })
        })
        .transpose()
    };
    let mut reads: HashMap<LateKey, LateRead> = HashMap::with_capacity(lookups.len());
    for (&(id, end), &(stored, before, after)) in &lookups {
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
    let near = end_sets_near(&tx, st, cfg, &splits.needs_index(&horizon, &reads)).await?;
    let mut plan = splits.plan(*cfg, horizon, &reads, &near)?;

    let rows = plan.rows()?;
    if !rows.is_empty() {
        // Series (a re-send alone never creates one), with the span the batch saw.
        let seen = plan.seen();
        let mut cols: SeriesCols<'_> = Default::default();
        for (l, (first, last)) in &seen {
            cols.0.push(owner_uuid(l.owner)?);
            for (c, v) in
                cols.1
                    .iter_mut()
                    .zip([&l.deployment_id, &l.model, &l.namespace, &l.pod, &l.node])
            {
                c.push(v.as_str());
            }
            cols.2.push(*first);
            cols.3.push(*last);
        }
        let s = st.get(&tx, SERIES_UPSERT).await?;
        let [dep, model, ns, pod, node] = &cols.1;
        let series: HashMap<Labels, i64> = tx
            .query(&s, &[&cols.0, dep, model, ns, pod, node, &cols.2, &cols.3])
            .await
            .ctx("write series")?
            .iter()
            .map(|r| {
                (
                    Labels {
                        owner: owner_of(r.get(1)),
                        deployment_id: r.get(2),
                        model: r.get(3),
                        namespace: r.get(4),
                        pod: r.get(5),
                        node: r.get(6),
                    },
                    r.get::<_, i64>(0),
                )
            })
            .collect();

        // Rows, all new by construction (the count written is checked), sent together with the read of the
        // rollups that the appended samples' terms add to; then the merged rollups together with the gaps.
        let n = rows.len();
        let mut ints: [Vec<i64>; 9] = Default::default();
        let mut tenants: Vec<Uuid> = Vec::with_capacity(n);
        for row in &rows {
            let (s, f) = (row.sample, row.figures);
            let series_id = series
                .get(&Labels::of(s))
                .copied()
                .ok_or_else(|| StoreError::Internal("ingest: a written series has no id".into()))?;
            for (c, v) in ints.iter_mut().zip([
                row.gpu_id,
                s.end.0,
                series_id,
                f.window_ms,
                f.util_e6,
                f.mem_e10,
                f.power_e6,
                f.storage_e6,
                f.fraction_e6,
            ]) {
                c.push(v);
            }
            tenants.push(owner_uuid(s.owner)?);
        }
        let deltas = plan.deltas();
        let mut keys: RollupKeyCols<'_> = Default::default();
        for d in &deltas {
            keys.push(plan.gpu_id(&d.key.gpu_uuid)?, &d.key)?;
        }
        let (insert, at) = (
            st.get(&tx, SAMPLES_INSERT).await?,
            st.get(&tx, ROLLUPS_AT).await?,
        );
        let [gpu, end, series_id, window, util, mem, power, storage, fraction] = &ints;
        let rows = async {
            match tx
                .execute(
                    &insert,
                    &[
                        gpu, end, &tenants, series_id, window, util, mem, power, storage, fraction,
                    ],
                )
                .await
            {
                Err(e) if super::sqlstate(&e) == Some("23505") => Err(StoreError::Internal(
                    "ingest: a sample planned as new was stored already: a concurrent writer?"
                        .into(),
                )),
                other => other.ctx("insert samples"),
            }
        };
        let current = async {
            tx.query(&at, &[&keys.0, &keys.1, &keys.2, &keys.3, &keys.4])
                .await
                .ctx("read rollups")
        };
        // Both are pipelined; when the insert fails, the read fails too ("transaction is aborted"): report
        // the insert's error, the cause.
        let (written, current) = tokio::join!(rows, current);
        let (written, current) = (written?, current?);
        if written != n as u64 {
            return Err(StoreError::Internal(format!(
                "ingest: {n} samples planned as new, {written} written: a concurrent writer?"
            )));
        }
        let current: HashMap<RollupKey, Rollup> = current
            .iter()
            .map(|r| rollup_of(r).map(|r| (r.key.clone(), r)))
            .collect::<Result<_>>()?;
        drop(keys);
        let merged = plan.merged(deltas, current)?;
        let gaps = plan.gaps()?;
        let gaps: Vec<(i64, &Gap)> = gaps.iter().map(|(id, g)| (*id, g)).collect();
        let (rw, gw) = (
            st.get(&tx, ROLLUPS_WRITE).await?,
            st.get(&tx, GAPS_WRITE).await?,
        );
        tokio::try_join!(
            write_rollups(&tx, &rw, &merged),
            write_gaps(&tx, &gw, &gaps)
        )?;
    }

    // Late samples in frozen hours: their terms merged into the stored rollups and gaps.
    merge_frozen(&tx, st, &mut plan).await?;

    // Slow-path buckets (never frozen): recomputed after the other terms, which they include.
    let dirty = plan.dirty()?;
    let mut rc = plan.recompute();
    for (id, _, h) in dirty {
        recompute(&tx, st, cfg, &mut rc, id, h).await?;
    }
    let pending = plan.pending()?;
    if !pending.is_empty() {
        let (ids, froms): (Vec<i64>, Vec<i64>) = pending.into_iter().unzip();
        let s = st.get(&tx, PENDING_UPSERT).await?;
        tx.execute(&s, &[&ids, &froms])
            .await
            .ctx("note rows to prune")?;
    }
    let done = plan.finish(draft);
    if let Some(o) = done.outbox {
        super::records::write_outbox(&tx, st, o).await?;
    }
    // Last: the group rows every batch of a deployment-hour adds to are locked until the commit, and so is the
    // audit chain.
    derived::write_groups(&tx, st, done.groups, done.stale).await?;
    super::records::append_in(&tx, st, &done.audit).await?;
    tx.commit().await.ctx("commit ingest")?;
    Ok(done.outcome)
}

/// One late sample as looked up: (stored already, end of the stored sample before, end of the one after).
type Lookup = (bool, Option<i64>, Option<i64>);

// --- reads ----------------------------------------------------------------------------------------------------

/// What the allocation reads for `[from, to)`, from one snapshot: the group rollups of the period, except its
/// exact buckets that are not frozen; for each of those, the cells of each GPU recomputed from raw samples; the
/// claims of the period; the gaps that touch it.
/// The frozen horizon, group rollups, claims and gaps are read in one round trip (pipelined).
pub async fn usage_for(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<UsageRead> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let (meta, groups, claims, gaps) = (
        st.get(&tx, META_GET).await?,
        st.get(&tx, derived::GROUPS_IN).await?,
        st.get(&tx, derived::CLAIMS_IN).await?,
        st.get(&tx, GAPS_IN).await?,
    );
    let period: [&(dyn ToSql + Sync); 2] = [&from.0, &to.0];
    let (pruned, group_rows, claim_rows, gap_rows) = tokio::try_join!(
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query(&groups, &period),
        tx.query(&claims, &period),
        tx.query(&gaps, &period),
    )
    .ctx("read group rollups, claims and gaps")?;
    let pruned: Option<i64> = pruned
        .map(|r| r.try_get(0))
        .transpose()
        .ctx("read the pruning horizon")?;
    let frozen = rollups::frozen_before(pruned, cfg);
    // Named exact and not frozen: read as raw cells. A frozen one (its raw samples were pruned) is served by its
    // group rollups, cut at the policy boundaries known when it froze.
    let exact_cells = rollups::exact_buckets(exact, from, to, frozen, cfg);
    let mut found =
        derived::group_rollups(&tx, st, &group_rows, &exact_cells, cfg.bucket_ms).await?;
    drop(group_rows);
    let whole = Cuts::default();
    for &h in &exact_cells {
        let gpus = gpus_of_bucket(&tx, st, cfg, h).await?;
        for samples in contexts(&tx, st, cfg, &gpus, h).await?.values() {
            found.extend(rollups::bucket_terms(samples, cfg, &whole, h).0);
        }
    }

    let claims = derived::claims_of(&claim_rows)?;
    let gaps = gap_rows.iter().map(gap_of).collect::<Result<Vec<_>>>()?;
    tx.commit().await.ctx("end read")?;
    Ok(UsageRead {
        claims,
        rollups: found,
        gaps,
    }
    .in_order())
}

/// Prunes raw samples that ended before `before` (see [`crate::pruned`]): the hours about to freeze are first
/// re-cut from raw samples at the policy boundaries recorded; then, per GPU, the raw rows from its pruning start
/// (the last horizon, or earlier where late rows were written below it) to its cutoff are classified: edges and
/// the latest sample stay whole, the others leave their end in the GPU's end sets. Records the horizon.
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
    let (horizon, refreeze) = rollups::refreeze(&cuts, recorded, before, cfg);
    let mut outbox = cfg.outbox.then(OutboxRows::default);
    let mut stale: BTreeSet<GroupKey> = BTreeSet::new();
    let mut rc = Recompute {
        cfg: *cfg,
        cuts: &cuts,
        outbox: outbox.as_mut(),
        stale: &mut stale,
    };
    for &h in &refreeze {
        for id in gpus_of_bucket(&tx, st, cfg, h).await? {
            recompute(&tx, st, cfg, &mut rc, id, h).await?;
        }
    }
    if !stale.is_empty() {
        derived::write_groups(&tx, st, GroupDeltas::default(), stale).await?;
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
        let cutoff = rollups::prune_cutoff(before, last);
        let lo = pending
            .get(&id)
            .copied()
            .unwrap_or(i64::MAX)
            .min(recorded.unwrap_or(i64::MIN));
        if lo < cutoff {
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
            let mut gpu_sets = sets.remove(&id).unwrap_or_default();
            let to_index =
                pruned::to_prune(raw.remove(&id).unwrap_or_default(), &gpu_sets, lo, cutoff);
            let touched: BTreeSet<i64> = to_index
                .iter()
                .map(|e| pruned::bucket_of(*e, cfg.bucket_ms))
                .collect();
            for e in &to_index {
                del_gpu.push(id);
                del_end.push(*e);
            }
            pruned::add_ends(&mut gpu_sets, to_index, cfg.bucket_ms);
            for b in touched {
                if let Some(set) = gpu_sets.get(&b) {
                    set_gpu.push(id);
                    set_bucket.push(b);
                    set_bytes.push(set.encode(b));
                }
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
        super::records::write_outbox(&tx, st, o).await?;
    }
    tx.commit().await.ctx("commit prune")?;
    Ok(deleted)
}

/// Deployments seen in samples: the namespace and model of the series seen last.
pub async fn deployments_seen(conn: &mut PgConn) -> Result<Vec<DeploymentSeen>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, SERIES_SEEN).await?;
    let rows: Vec<rollups::SeriesSeen> = tx
        .query(&s, &[])
        .await
        .ctx("read series")?
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                owner_of(r.get(5)),
            )
        })
        .collect();
    tx.commit().await.ctx("end read")?;
    Ok(rollups::deployments_seen(rows))
}

/// The latest sample of each GPU whose latest window ended at or after `since`: the newest first, at most
/// `limit`, and how many GPUs there are in all. One snapshot, on the platform path.
pub async fn latest_samples(conn: &mut PgConn, since: i64, limit: u64) -> Result<LatestSamples> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let (latest, counted) = (
        st.get(&tx, LATEST_SAMPLES).await?,
        st.get(&tx, LATEST_COUNT).await?,
    );
    let limit = to_i64(limit.min(i64::MAX as u64), "limit")?;
    let both: [&(dyn ToSql + Sync); 2] = [&since, &limit];
    let one: [&(dyn ToSql + Sync); 1] = [&since];
    let (rows, n) = tokio::try_join!(tx.query(&latest, &both), tx.query_one(&counted, &one))
        .ctx("read the latest samples")?;
    let samples = rows
        .iter()
        .map(|r| sample_of(r).map(|(_, s)| s))
        .collect::<Result<Vec<_>>>()?;
    tx.commit().await.ctx("end read")?;
    Ok(LatestSamples {
        samples,
        gpus: count(n.get(0), "GPU count")?,
    })
}

/// Per node, the latest window end stored (of any of its series), for nodes seen at or after `since`.
pub async fn nodes_last_seen(conn: &mut PgConn, since: i64) -> Result<Vec<NodeSeen>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, NODES_SEEN).await?;
    let nodes = tx
        .query(&s, &[&since])
        .await
        .ctx("read the nodes last seen")?
        .iter()
        .map(|r| NodeSeen {
            node: r.get(0),
            last_seen: Timestamp(r.get(1)),
        })
        .collect();
    tx.commit().await.ctx("end read")?;
    Ok(nodes)
}

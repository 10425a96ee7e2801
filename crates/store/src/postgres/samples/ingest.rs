//! Ingest: a batch as [`crate::plan::ingest`] plans it, in a fixed number of round trips.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::{Sample, ShareMethod};
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Transaction;
use uuid::Uuid;

use super::rows::{
    end_sets_near, gap_of, recompute, rollup_of, sample_of, write_gaps, write_rollups,
};
use super::sql::{
    CUTS, CUTS_LOCK_CLASS, CUTS_LOCK_SHARED, EQUAL_SHARES_ADD, GAPS_TAKE, GAPS_WRITE, GPUS_INTERN,
    GPUS_LOCK, GPUS_OF, GPUS_OF_BUCKET, LAST_ENDS_WRITE, LAST_SAMPLES, LATE_RUNS, META_GET,
    PENDING_UPSERT, ROLLUPS_AT, ROLLUPS_DELETE, ROLLUPS_WRITE, SAMPLES_AT, SAMPLES_FROM_STAGE,
    SAMPLES_INSERT, SERIES_UPSERT, STAGE_COPY, STAGE_CREATE,
};
use crate::codec::{share_method, Labels, LabelsRef};
use crate::plan::ingest::{
    late_lookups, late_runs, Ingest, IngestPlan, LateKey, LateRead, Lookup, RunRead,
    LATE_RUN_SPAN_MS,
};
use crate::postgres::derived;
use crate::postgres::pool::{PgConn, Staging, Stmts};
use crate::postgres::tx::{append_in, begin, write_outbox, Mode};
use crate::postgres::{owner_of, owner_uuid, Ctx};
use crate::rollups::pruned::INDEXED_FROM;
use crate::rollups::{Cuts, Horizon, RollupConfig, PRUNED_BEFORE};
use crate::{IngestOutcome, Result, Scope, StoreError};

/// Late samples in frozen hours: the rollups their terms change are read, and written back or deleted as the
/// plan says; the gaps they close are deleted, those they open written.
pub(super) async fn merge_frozen(
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
            .query(&s, &keys.params())
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
            tx.execute(&s, &gone.params()).await.ctx("delete rollups")?;
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
pub(super) async fn intern_gpus(
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
pub(super) async fn gpus_of_bucket(
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
pub(super) async fn lock(tx: &Transaction<'_>, st: &mut Stmts, ids: &mut [i64]) -> Result<()> {
    ids.sort_unstable();
    let s = st.get(tx, GPUS_LOCK).await?;
    let ids: &[i64] = ids;
    tx.execute(&s, &[&ids]).await.ctx("lock gpus")?;
    Ok(())
}

/// Stored samples by (gpu id, end).
pub(super) async fn samples_at(
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
pub(super) type SeriesCols<'a> = (Vec<Uuid>, [Vec<&'a str>; 6], Vec<i64>, Vec<i64>);

/// Rollup keys as the columns [`ROLLUPS_AT`] and [`ROLLUPS_DELETE`] take: GPU, bucket, deployment, tenant, model,
/// and the placement's namespace, pod, node and share method (null: none).
#[derive(Default)]
pub(super) struct RollupKeyCols<'a> {
    gpu: Vec<i64>,
    bucket: Vec<i64>,
    deployment: Vec<&'a str>,
    tenant: Vec<Uuid>,
    model: Vec<&'a str>,
    namespace: Vec<Option<&'a str>>,
    pod: Vec<Option<&'a str>>,
    node: Vec<Option<&'a str>>,
    share: Vec<Option<&'static str>>,
}

impl<'a> RollupKeyCols<'a> {
    fn push(&mut self, gpu_id: i64, k: &'a RollupKey) -> Result<()> {
        self.gpu.push(gpu_id);
        self.bucket.push(k.bucket_start.0);
        self.deployment.push(k.deployment_id.as_str());
        self.tenant.push(owner_uuid(k.owner)?);
        self.model.push(k.model.as_str());
        self.namespace.push(k.placement.namespace());
        self.pod.push(k.placement.pod());
        self.node.push(k.placement.node());
        self.share
            .push(k.placement.share().map(ShareMethod::as_str));
        Ok(())
    }

    fn params(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 9] {
        [
            &self.gpu,
            &self.bucket,
            &self.deployment,
            &self.tenant,
            &self.model,
            &self.namespace,
            &self.pod,
            &self.node,
            &self.share,
        ]
    }
}

/// Batches of at least this many rows reach `eai.gpu_samples` through a binary `COPY` into the session's
/// temporary staging table and one `INSERT … SELECT` from it (row level security refuses `COPY` into the table
/// itself); smaller ones through one multi-row `INSERT` over `unnest` arrays, a round trip less. Measured side
/// by side on the same rows (`cargo run --release -p eai-store --example pg_ingest -- 64 1500 30 63 125 250
/// 1250`, BENCHMARKS.md): staging is slower up to about 1,000 rows a batch and 15-20 % faster at 10,000.
pub(in crate::postgres) const STAGE_ROWS: usize = 2_000;

const STAGE_TYPES: [Type; 10] = [
    Type::INT8,
    Type::INT8,
    Type::UUID,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
];

/// Whether this session can stage: creates its staging table on its first large batch. A service role without
/// `TEMPORARY` on the database falls back to multi-row inserts (said once per connection in the log).
async fn stage_ready(conn: &mut PgConn) -> Result<bool> {
    match conn.staging {
        Staging::Ready => return Ok(true),
        Staging::Refused => return Ok(false),
        Staging::Unknown => {}
    }
    match conn.client.batch_execute(STAGE_CREATE).await {
        Ok(()) => {
            conn.staging = Staging::Ready;
            Ok(true)
        }
        Err(e) if crate::postgres::sqlstate(&e) == Some("42501") => {
            let why = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string());
            tracing::warn!(error = %why, "postgres: the service role may not create temporary tables; \
                 large ingest batches use multi-row inserts (grant TEMPORARY on the database to stage them)");
            conn.staging = Staging::Refused;
            Ok(false)
        }
        Err(e) => Err(e).ctx("create the ingest staging table"),
    }
}

/// Copies the batch's rows (columns as [`SAMPLES_INSERT`] takes them) into the staging table.
async fn stage(
    tx: &Transaction<'_>,
    ints: &[Vec<i64>; 9],
    tenants: &[Uuid],
) -> std::result::Result<(), tokio_postgres::Error> {
    let sink = tx.copy_in(STAGE_COPY).await?;
    let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &STAGE_TYPES));
    let [gpu, end, series_id, window, util, mem, power, storage, fraction] = ints;
    for (i, tenant) in tenants.iter().enumerate() {
        writer
            .as_mut()
            .write(&[
                &gpu[i],
                &end[i],
                tenant,
                &series_id[i],
                &window[i],
                &util[i],
                &mem[i],
                &power[i],
                &storage[i],
                &fraction[i],
            ])
            .await?;
    }
    writer.finish().await?;
    Ok(())
}

/// Stores a batch as [`crate::plan::ingest`] plans it: this only reads what each step asks for (pipelined: a fixed
/// number of round trips whatever the batch's size) and writes what it returns.
pub async fn insert(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    batch: &[Sample],
    draft: &crate::AuditDraft,
) -> Result<IngestOutcome> {
    let ingest = Ingest::new(batch)?;
    let uuids = ingest.gpus();
    let staged = batch.len() >= STAGE_ROWS && stage_ready(conn).await?;

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
    let (lock, last, meta, cuts_lock, cuts) = (
        st.get(&tx, GPUS_LOCK).await?,
        st.get(&tx, LAST_SAMPLES).await?,
        st.get(&tx, META_GET).await?,
        st.get(&tx, CUTS_LOCK_SHARED).await?,
        st.get(&tx, CUTS).await?,
    );
    let params: [&(dyn ToSql + Sync); 1] = [&gpu_ids];
    // Pipelined in this order: the cuts are read after their lock is held (shared: see CUTS_LOCK_CLASS).
    let (_, last_rows, pruned_before, indexed_from, _, cut_rows) = tokio::try_join!(
        tx.execute(&lock, &params),
        tx.query(&last, &params),
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query_opt(&meta, &[&INDEXED_FROM]),
        tx.execute(&cuts_lock, &[&CUTS_LOCK_CLASS]),
        tx.query(&cuts, &[]),
    )
    .ctx("lock gpus and read their latest samples")?;
    let horizon = Horizon {
        pruned_before: pruned_before.map(|r| r.get(0)),
        indexed_from: indexed_from.map(|r| r.get(0)),
        cuts: Cuts::new(cut_rows.iter().map(|r| r.get::<_, i64>(0))),
    };
    let latest: HashMap<i64, Sample> = last_rows.iter().map(sample_of).collect::<Result<_>>()?;
    let splits = ingest.split(ids, latest)?;

    // The late samples: stored already? the ends of their raw neighbours, then those neighbours.
    let late = splits.late();
    let mut lookups: HashMap<LateKey, Lookup> = HashMap::new();
    if !late.is_empty() {
        let runs = late_runs(&late, LATE_RUN_SPAN_MS);
        let mut cols: [Vec<i64>; 3] = Default::default();
        for &(id, lo, hi) in &runs {
            for (c, v) in cols.iter_mut().zip([id, lo, hi]) {
                c.push(v);
            }
        }
        let s = st.get(&tx, LATE_RUNS).await?;
        let reads: Vec<RunRead> = tx
            .query(&s, &[&cols[0], &cols[1], &cols[2]])
            .await
            .ctx("look late samples up")?
            .iter()
            .map(|r| RunRead {
                before: r.get(0),
                after: r.get(1),
                stored: r.get(2),
            })
            .collect();
        lookups = late_lookups(&late, &runs, &reads)?;
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
            for (c, v) in cols.1.iter_mut().zip([
                l.deployment_id,
                l.model,
                l.namespace,
                l.pod,
                l.node,
                l.share.as_str(),
            ]) {
                c.push(v);
            }
            cols.2.push(*first);
            cols.3.push(*last);
        }
        let s = st.get(&tx, SERIES_UPSERT).await?;
        let [dep, model, ns, pod, node, share] = &cols.1;
        let stored: HashMap<Labels, i64> = tx
            .query(
                &s,
                &[&cols.0, dep, model, ns, pod, node, share, &cols.2, &cols.3],
            )
            .await
            .ctx("write series")?
            .iter()
            .map(|r| {
                Ok((
                    Labels {
                        owner: owner_of(r.get(1)),
                        deployment_id: r.get(2),
                        model: r.get(3),
                        namespace: r.get(4),
                        pod: r.get(5),
                        node: r.get(6),
                        share: share_method(r.get(7))?,
                    },
                    r.get::<_, i64>(0),
                ))
            })
            .collect::<Result<_>>()?;
        // By borrowed labels: looked up once a row.
        let series: HashMap<LabelsRef<'_>, i64> = seen
            .keys()
            .filter_map(|l| stored.get(&l.to_owned()).map(|id| (*l, *id)))
            .collect();

        // Rows, all new by construction (the count written is checked), sent together with the read of the
        // rollups that the appended samples' terms add to; then the merged rollups together with the gaps.
        let n = rows.len();
        let mut ints: [Vec<i64>; 9] = Default::default();
        let mut tenants: Vec<Uuid> = Vec::with_capacity(n);
        for row in &rows {
            let (s, f) = (row.sample, row.figures);
            let series_id = series
                .get(&LabelsRef::of(s))
                .copied()
                .ok_or_else(|| StoreError::Internal("ingest: a written series has no id".into()))?;
            for (c, v) in ints.iter_mut().zip(f.row(row.gpu_id, s.end.0, series_id)) {
                c.push(v);
            }
            tenants.push(owner_uuid(s.owner)?);
        }
        // Each GPU's latest end, moved forward with the rows (schema 10's `last_end_ms`).
        let mut last_ends: BTreeMap<i64, i64> = BTreeMap::new();
        for (&id, &end) in ints[0].iter().zip(&ints[1]) {
            let e = last_ends.entry(id).or_insert(end);
            *e = (*e).max(end);
        }
        let (last_ids, last_ends): (Vec<i64>, Vec<i64>) = last_ends.into_iter().unzip();
        let deltas = plan.deltas();
        let mut keys: RollupKeyCols<'_> = Default::default();
        for d in &deltas {
            keys.push(plan.gpu_id(&d.key.gpu_uuid)?, &d.key)?;
        }
        let staged = staged && n >= STAGE_ROWS;
        let (insert, at, moved) = (
            st.get(
                &tx,
                if staged {
                    SAMPLES_FROM_STAGE
                } else {
                    SAMPLES_INSERT
                },
            )
            .await?,
            st.get(&tx, ROLLUPS_AT).await?,
            st.get(&tx, LAST_ENDS_WRITE).await?,
        );
        if staged {
            stage(&tx, &ints, &tenants)
                .await
                .ctx("copy samples into the staging table")?;
        }
        let [gpu, end, series_id, window, util, mem, power, storage, fraction] = &ints;
        let rows = async {
            let written = match staged {
                true => tx.execute(&insert, &[]).await,
                false => {
                    tx.execute(
                        &insert,
                        &[
                            gpu, end, &tenants, series_id, window, util, mem, power, storage,
                            fraction,
                        ],
                    )
                    .await
                }
            };
            match written {
                Err(e) if crate::postgres::sqlstate(&e) == Some("23505") => {
                    Err(StoreError::Internal(
                        "ingest: a sample planned as new was stored already: a concurrent writer?"
                            .into(),
                    ))
                }
                other => other.ctx("insert samples"),
            }
        };
        let current = async { tx.query(&at, &keys.params()).await.ctx("read rollups") };
        let moved = async {
            tx.execute(&moved, &[&last_ids, &last_ends])
                .await
                .ctx("move the GPUs' latest ends")
        };
        // All pipelined; when the insert fails, the others fail too ("transaction is aborted"): report the
        // insert's error, the cause.
        let (written, current, moved) = tokio::join!(rows, current, moved);
        let (written, current, _) = (written?, current?, moved?);
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
    let equal = plan.equal_shares();
    if !equal.is_empty() {
        let buckets: Vec<i64> = equal.iter().map(|e| e.bucket_start.0).collect();
        let deployments: Vec<&str> = equal.iter().map(|e| e.deployment_id.as_str()).collect();
        let samples = equal
            .iter()
            .map(|e| crate::codec::to_i64(e.samples, "equal_shares.samples"))
            .collect::<Result<Vec<i64>>>()?;
        let seconds: Vec<rust_decimal::Decimal> = equal.iter().map(|e| e.gpu_seconds).collect();
        let s = st.get(&tx, EQUAL_SHARES_ADD).await?;
        tx.execute(&s, &[&buckets, &deployments, &samples, &seconds])
            .await
            .ctx("add to the equal shares")?;
    }
    let done = plan.finish(draft);
    if let Some(o) = done.outbox {
        write_outbox(&tx, st, o).await?;
    }
    // Last: the group rows every batch of a deployment-hour adds to are locked until the commit, and so is the
    // audit chain.
    derived::write_groups(&tx, st, done.groups, done.stale).await?;
    append_in(&tx, st, &done.audit).await?;
    tx.commit().await.ctx("commit ingest")?;
    Ok(done.outcome)
}

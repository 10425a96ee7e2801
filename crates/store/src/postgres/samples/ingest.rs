//! Ingest: the driver of [`crate::plan::ingest::Ingest`] on PostgreSQL, each step answered with its statements
//! (sent together: a fixed number of round trips whatever the batch's size), and the statements themselves.

use std::collections::HashMap;

use eai_engine::domain::{Sample, ShareMethod};
use eai_engine::report::Gap;
use eai_engine::rollup::{Rollup, RollupKey};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Statement, Transaction};
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
    Answer, Batch, Finish, LateRun, Read, RollupWrites, Rows, RunRead, SampleAt, Step, Write,
};
use crate::postgres::derived;
use crate::postgres::pool::{PgConn, Staging, Stmts};
use crate::postgres::tx::{append_in, begin, write_outbox, Mode};
use crate::postgres::{owner_of, owner_uuid, Ctx};
use crate::rollups::pruned::INDEXED_FROM;
use crate::rollups::{Cuts, Horizon, RollupConfig, PRUNED_BEFORE};
use crate::{IngestOutcome, Result, Scope, StoreError};

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
async fn samples_at(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    keys: &[SampleAt<'_>],
) -> Result<HashMap<(i64, i64), Sample>> {
    let gpu: Vec<i64> = keys.iter().map(|k| k.gpu_id).collect();
    let end: Vec<i64> = keys.iter().map(|k| k.end).collect();
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
    fn of(keys: impl IntoIterator<Item = (i64, &'a RollupKey)>) -> Result<Self> {
        let mut cols = RollupKeyCols::default();
        for (id, k) in keys {
            cols.push(id, k)?;
        }
        Ok(cols)
    }

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

/// Stores a batch as [`crate::plan::ingest::Ingest`] plans it: this only reads what each step asks for and writes
/// what it returns, a fixed number of round trips whatever the batch's size (a step's statements are sent
/// together: pipelined).
pub async fn insert(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    samples: &[Sample],
    draft: &crate::AuditDraft,
) -> Result<IngestOutcome> {
    let batch = Batch::encode(samples)?;
    let staged = samples.len() >= STAGE_ROWS && stage_ready(conn).await?;
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let mut ingest = batch.ingest(*cfg, draft);
    loop {
        let answer = match ingest.step()? {
            Step::Done(outcome) => {
                tx.commit().await.ctx("commit ingest")?;
                return Ok(outcome);
            }
            Step::Read(r) => read(&tx, st, cfg, r).await?,
            Step::Write(w) => write(&tx, st, cfg, staged, w).await?,
        };
        ingest.resume(answer)?;
    }
}

async fn read(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    read: Read<'_, '_>,
) -> Result<Answer> {
    Ok(match read {
        Read::Gpus(uuids) => Answer::Gpus(intern_gpus(tx, st, uuids).await?),
        Read::Latest(gpus) => latest(tx, st, gpus).await?,
        Read::Runs(runs) => Answer::Runs(runs_read(tx, st, runs).await?),
        Read::Samples(keys) => Answer::Samples(samples_at(tx, st, keys).await?),
        Read::EndSets(keys) => Answer::EndSets(end_sets_near(tx, st, cfg, keys).await?),
        Read::Rollups(keys) => {
            let s = st.get(tx, ROLLUPS_AT).await?;
            Answer::Rollups(rollups_at(tx, &s, &RollupKeyCols::of(keys)?).await?)
        }
    })
}

/// Locks the GPUs (advisory locks, in the order given: ascending ids), then reads their latest samples and the
/// horizon, all pipelined in this order: the cuts are read after their lock is held (shared: see
/// CUTS_LOCK_CLASS).
async fn latest(tx: &Transaction<'_>, st: &mut Stmts, gpus: &[(i64, &str)]) -> Result<Answer> {
    let gpu_ids: Vec<i64> = gpus.iter().map(|g| g.0).collect();
    let (lock, last, meta, cuts_lock, cuts) = (
        st.get(tx, GPUS_LOCK).await?,
        st.get(tx, LAST_SAMPLES).await?,
        st.get(tx, META_GET).await?,
        st.get(tx, CUTS_LOCK_SHARED).await?,
        st.get(tx, CUTS).await?,
    );
    let params: [&(dyn ToSql + Sync); 1] = [&gpu_ids];
    let (_, last_rows, pruned_before, indexed_from, _, cut_rows) = tokio::try_join!(
        tx.execute(&lock, &params),
        tx.query(&last, &params),
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query_opt(&meta, &[&INDEXED_FROM]),
        tx.execute(&cuts_lock, &[&CUTS_LOCK_CLASS]),
        tx.query(&cuts, &[]),
    )
    .ctx("lock gpus and read their latest samples")?;
    Ok(Answer::Latest {
        latest: last_rows.iter().map(sample_of).collect::<Result<_>>()?,
        horizon: Horizon {
            pruned_before: pruned_before.map(|r| r.get(0)),
            indexed_from: indexed_from.map(|r| r.get(0)),
            cuts: Cuts::new(cut_rows.iter().map(|r| r.get::<_, i64>(0))),
        },
    })
}

/// The late runs' stored ends ([`LATE_RUNS`]), one statement for all.
async fn runs_read(tx: &Transaction<'_>, st: &mut Stmts, runs: &[LateRun]) -> Result<Vec<RunRead>> {
    let mut cols: [Vec<i64>; 3] = Default::default();
    for &(id, lo, hi) in runs {
        for (c, v) in cols.iter_mut().zip([id, lo, hi]) {
            c.push(v);
        }
    }
    let s = st.get(tx, LATE_RUNS).await?;
    Ok(tx
        .query(&s, &[&cols[0], &cols[1], &cols[2]])
        .await
        .ctx("look late samples up")?
        .iter()
        .map(|r| RunRead {
            before: r.get(0),
            after: r.get(1),
            stored: r.get(2),
        })
        .collect())
}

/// The stored rollups of these keys ([`ROLLUPS_AT`], prepared), by key.
async fn rollups_at(
    tx: &Transaction<'_>,
    s: &Statement,
    keys: &RollupKeyCols<'_>,
) -> Result<HashMap<RollupKey, Rollup>> {
    tx.query(s, &keys.params())
        .await
        .ctx("read rollups")?
        .iter()
        .map(|r| rollup_of(r).map(|r| (r.key.clone(), r)))
        .collect()
}

async fn write(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    staged: bool,
    write: Write<'_, '_>,
) -> Result<Answer> {
    match write {
        Write::Rows(rows) => write_rows(tx, st, rows, staged).await,
        Write::Rollups(w) => write_rollups_gaps(tx, st, w).await,
        Write::Recompute { hours, mut rc } => {
            // Slow-path buckets (never frozen), each with statements of its own.
            for (id, _, h) in hours {
                recompute(tx, st, cfg, &mut rc, *id, *h).await?;
            }
            Ok(Answer::Written)
        }
        Write::Finish(f) => {
            finish(tx, st, *f).await?;
            Ok(Answer::Written)
        }
    }
}

/// Series (with the span the batch saw), then the rows, all new by construction (the count written is checked),
/// sent together with the read of the rollups that their deltas add to and the GPUs' latest ends moved forward
/// (schema 10's `last_end_ms`).
async fn write_rows(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    w: Rows<'_, '_>,
    staged: bool,
) -> Result<Answer> {
    let mut cols: SeriesCols<'_> = Default::default();
    for (l, (first, last)) in w.seen {
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
    let s = st.get(tx, SERIES_UPSERT).await?;
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
    let series: HashMap<LabelsRef<'_>, i64> = w
        .seen
        .keys()
        .filter_map(|l| stored.get(&l.to_owned()).map(|id| (*l, *id)))
        .collect();

    let n = w.rows.len();
    let mut ints: [Vec<i64>; 9] = Default::default();
    let mut tenants: Vec<Uuid> = Vec::with_capacity(n);
    for row in w.rows {
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
    let (last_ids, last_ends): (Vec<i64>, Vec<i64>) = w.last_ends().into_iter().unzip();
    let keys = RollupKeyCols::of(w.rollups)?;
    let staged = staged && n >= STAGE_ROWS;
    let (insert, at, moved) = (
        st.get(
            tx,
            if staged {
                SAMPLES_FROM_STAGE
            } else {
                SAMPLES_INSERT
            },
        )
        .await?,
        st.get(tx, ROLLUPS_AT).await?,
        st.get(tx, LAST_ENDS_WRITE).await?,
    );
    if staged {
        stage(tx, &ints, &tenants)
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
                        gpu, end, &tenants, series_id, window, util, mem, power, storage, fraction,
                    ],
                )
                .await
            }
        };
        match written {
            Err(e) if crate::postgres::sqlstate(&e) == Some("23505") => Err(StoreError::Internal(
                "ingest: a sample planned as new was stored already: a concurrent writer?".into(),
            )),
            other => other.ctx("insert samples"),
        }
    };
    let current = rollups_at(tx, &at, &keys);
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
    Ok(Answer::Rollups(current))
}

/// Rollup and gap rows, sent together in the order the step gives them: rollups upserted, rollups deleted, gaps
/// deleted (the rows deleted are the answer), gaps upserted.
async fn write_rollups_gaps(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    w: RollupWrites<'_>,
) -> Result<Answer> {
    let gone = RollupKeyCols::of(w.delete.iter().map(|(id, k)| (*id, k)))?;
    let (ids, froms): (Vec<i64>, Vec<i64>) =
        w.take_gaps.iter().map(|(id, _, from)| (*id, *from)).unzip();
    let gaps: Vec<(i64, &Gap)> = w.gaps.iter().map(|(id, g)| (*id, g)).collect();
    let (rw, gw) = (
        st.get(tx, ROLLUPS_WRITE).await?,
        st.get(tx, GAPS_WRITE).await?,
    );
    let delete = match w.delete.is_empty() {
        true => None,
        false => Some(st.get(tx, ROLLUPS_DELETE).await?),
    };
    let take = match ids.is_empty() {
        true => None,
        false => Some(st.get(tx, GAPS_TAKE).await?),
    };
    let deleted = async {
        match &delete {
            Some(s) => tx
                .execute(s, &gone.params())
                .await
                .ctx("delete rollups")
                .map(drop),
            None => Ok(()),
        }
    };
    let taken = async {
        match &take {
            Some(s) => tx
                .query(s, &[&ids, &froms])
                .await
                .ctx("delete gaps")?
                .iter()
                .map(gap_of)
                .collect::<Result<Vec<_>>>(),
            None => Ok(Vec::new()),
        }
    };
    let (_, _, taken, _) = tokio::try_join!(
        write_rollups(tx, &rw, w.write),
        deleted,
        taken,
        write_gaps(tx, &gw, &gaps)
    )?;
    Ok(Answer::Taken(taken))
}

/// The last writes: pending prunes, equal shares, the outbox; last, the group rows every batch of a
/// deployment-hour adds to (locked until the commit), and the audit chain.
async fn finish(tx: &Transaction<'_>, st: &mut Stmts, f: Finish) -> Result<()> {
    if !f.pending.is_empty() {
        let (ids, froms): (Vec<i64>, Vec<i64>) = f.pending.into_iter().unzip();
        let s = st.get(tx, PENDING_UPSERT).await?;
        tx.execute(&s, &[&ids, &froms])
            .await
            .ctx("note rows to prune")?;
    }
    let equal = &f.equal_shares;
    if !equal.is_empty() {
        let buckets: Vec<i64> = equal.iter().map(|e| e.bucket_start.0).collect();
        let deployments: Vec<&str> = equal.iter().map(|e| e.deployment_id.as_str()).collect();
        let samples = equal
            .iter()
            .map(|e| crate::codec::to_i64(e.samples, "equal_shares.samples"))
            .collect::<Result<Vec<i64>>>()?;
        let seconds: Vec<rust_decimal::Decimal> = equal.iter().map(|e| e.gpu_seconds).collect();
        let s = st.get(tx, EQUAL_SHARES_ADD).await?;
        tx.execute(&s, &[&buckets, &deployments, &samples, &seconds])
            .await
            .ctx("add to the equal shares")?;
    }
    // The group rows' outbox entry after their locks (written last: see `derived::write_groups`), so that of
    // two batches changing one group the later carries the larger sequence.
    let mut groups_out = f.outbox.is_some().then(crate::outbox::OutboxRows::default);
    if let Some(o) = f.outbox {
        write_outbox(tx, st, o).await?;
    }
    derived::write_groups(tx, st, f.groups, f.stale, groups_out.as_mut()).await?;
    if let Some(o) = groups_out {
        write_outbox(tx, st, o).await?;
    }
    append_in(tx, st, &f.audit).await?;
    Ok(())
}

//! Reads: what an allocation reads for a period, deployments, latest samples, nodes.

use std::collections::BTreeSet;
use std::pin::pin;

use eai_engine::time::Timestamp;
use futures_util::TryStreamExt;
use tokio_postgres::types::ToSql;

use super::ingest::gpus_of_bucket;
use super::rows::{contexts, gap_of, rollup_of, sample_of};
use super::sql::{
    EQUAL_SHARES_READ, GAPS_IN, LATEST_COUNT, LATEST_SAMPLES, META_GET, NODES_SEEN, REPLICA_EXTENT,
    REPLICA_GAPS, REPLICA_ROLLUPS, REPLICA_SAMPLES, SERIES_SEEN,
};
use crate::cache::read_cache::{self, ReadCache};
use crate::codec::{count, to_i64};
use crate::postgres::derived;
use crate::postgres::pool::{PgConn, Stmts};
use crate::postgres::tx::{begin, Mode};
use crate::postgres::{owner_of, Ctx};
use crate::rollups::{self, Cuts, RollupConfig, PRUNED_BEFORE};
use crate::{DeploymentSeen, LatestSamples, NodeSeen, Result, Scope, UsageRead};

// --- reads ----------------------------------------------------------------------------------------------------

/// What the allocation reads for `[from, to)`, from one snapshot: the group rollups of the period, except its
/// exact buckets that are not frozen; for each of those, the cells of each GPU recomputed from raw samples; the
/// claims of the period; the gaps that touch it. Groups and claims of the buckets unchanged since `cache`
/// decoded them come from it; the others are read (see [`crate::cache::read_cache`]). The frozen horizon, the change
/// counts and gaps are read in one round trip (pipelined), then the buckets to read. Also returns how many rows
/// of the change log it summed beyond one per bucket, for the caller to compact it when they are many.
pub async fn usage_for(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    cache: &ReadCache,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<(UsageRead, usize)> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let (meta, counts, gaps) = (
        st.get(&tx, META_GET).await?,
        st.get(&tx, derived::COUNTS_IN).await?,
        st.get(&tx, GAPS_IN).await?,
    );
    let period: [&(dyn ToSql + Sync); 2] = [&from.0, &to.0];
    let (pruned, count_rows, gap_rows) = tokio::try_join!(
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query(&counts, &period),
        tx.query(&gaps, &period),
    )
    .ctx("read change counts and gaps")?;
    let pruned: Option<i64> = pruned
        .map(|r| r.try_get(0))
        .transpose()
        .ctx("read the pruning horizon")?;
    let frozen = rollups::frozen_before(pruned, cfg);
    // Named exact and not frozen: read as raw cells. A frozen one (its raw samples were pruned) is served by its
    // group rollups, cut at the policy boundaries known when it froze.
    let exact_cells = rollups::exact_buckets(exact, from, to, frozen, cfg);
    let mut counts = Vec::with_capacity(count_rows.len());
    let mut log_rows = 0usize;
    for r in &count_rows {
        counts.push((
            r.try_get::<_, i64>(0).ctx("read hour_changes.bucket_ms")?,
            r.try_get::<_, i64>(1).ctx("read hour_changes.n")?,
        ));
        let rows: i64 = r.try_get(2).ctx("read hour_changes rows")?;
        // Beyond the one row a compacted bucket keeps.
        log_rows += usize::try_from(rows - 1).unwrap_or(0);
    }
    let plan = cache.plan(&counts, to.0);
    let (groups_in, claims_in) = (
        st.get(&tx, derived::GROUPS_IN).await?,
        st.get(&tx, derived::CLAIMS_IN).await?,
    );
    // Both statements sent at once; each row decoded as it arrives, while the server still produces the
    // next ones (a month's rows took the sum of the server's time and the decoding's, one after the other).
    // Each stream is drained by its own future: the claims' statement answers only after the last group row,
    // which must be taken off the connection meanwhile (waiting for both answers first would never end).
    let (mut stored, mut claims) = (Vec::new(), Vec::new());
    for (a, b) in &plan.ranges {
        let (g, c) = tokio::try_join!(
            drain(
                &tx,
                &groups_in,
                [a, b],
                "read group rollups",
                derived::stored_of
            ),
            drain(&tx, &claims_in, [a, b], "read claims", derived::claim_of)
        )?;
        stored.extend(g);
        claims.extend(c);
    }
    claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
    let groups = derived::name_groups(&tx, st, stored).await?;
    let buckets = cache.fill(plan, groups, claims);
    let (mut found, claims) = read_cache::assemble(&buckets, &exact_cells, cfg.bucket_ms);
    found.extend(raw_cells(&tx, st, cfg, &exact_cells).await?);

    let gaps = gap_rows.iter().map(gap_of).collect::<Result<Vec<_>>>()?;
    tx.commit().await.ctx("end read")?;
    Ok((
        UsageRead {
            claims,
            rollups: found,
            gaps,
        }
        .in_order(),
        log_rows,
    ))
}

/// The rows of `statement` over `range`, each decoded by `decode` as it arrives.
async fn drain<T>(
    tx: &tokio_postgres::Transaction<'_>,
    statement: &tokio_postgres::Statement,
    range: [&i64; 2],
    what: &str,
    decode: impl Fn(&tokio_postgres::Row) -> Result<T>,
) -> Result<Vec<T>> {
    let rows = tx.query_raw(statement, range).await.ctx(what)?;
    let mut rows = pin!(rows);
    let mut out = Vec::new();
    while let Some(r) = rows.try_next().await.ctx(what)? {
        out.push(decode(&r)?);
    }
    Ok(out)
}

/// Folds the change log's rows of each bucket into one (any snapshot sums the same counts before and after).
pub async fn compact_change_counts(conn: &mut PgConn) -> Result<()> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, derived::COMPACT_COUNTS).await?;
    tx.query_one(&s, &[]).await.ctx("compact hour_changes")?;
    tx.commit().await.ctx("commit the compaction")
}

/// Deployments seen in samples: the namespace and model of the series seen last.
/// The equal shares of the hours in `[from, to)`, by hour and deployment.
pub async fn equal_shares(
    conn: &mut PgConn,
    from: i64,
    to: i64,
) -> Result<Vec<eai_engine::shares::EqualShares>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, EQUAL_SHARES_READ).await?;
    let rows = tx
        .query(&s, &[&from, &to])
        .await
        .ctx("read the equal shares")?;
    tx.commit().await.ctx("end read")?;
    rows.iter()
        .map(|r| {
            Ok(eai_engine::shares::EqualShares {
                bucket_start: Timestamp(r.get(0)),
                deployment_id: r.get(1),
                samples: count(r.get(2), "equal_shares.samples")?,
                gpu_seconds: crate::codec::dec_parse(r.get(3), "equal_shares.gpu_seconds")?,
            })
        })
        .collect()
}

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

/// The least and greatest rollup bucket, gap start and event time ([`rollups::replica_extent`]).
pub async fn replica_extent(
    conn: &mut PgConn,
    cfg: &RollupConfig,
) -> Result<Option<(Timestamp, Timestamp)>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, REPLICA_EXTENT).await?;
    let r = tx
        .query_one(&s, &[])
        .await
        .ctx("read the replica's extent")?;
    tx.commit().await.ctx("end read")?;
    Ok(rollups::replica_extent(
        cfg,
        (r.get(0), r.get(1)),
        (r.get(2), r.get(3)),
        (r.get(4), r.get(5)),
    ))
}

/// The buckets `exact` as raw cells per GPU, whole (not cut at policy boundaries: priced window by window).
async fn raw_cells(
    tx: &tokio_postgres::Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
    exact: &BTreeSet<i64>,
) -> Result<Vec<eai_engine::rollup::Rollup>> {
    let whole = Cuts::default();
    let mut cells = Vec::new();
    for &h in exact {
        let gpus = gpus_of_bucket(tx, st, cfg, h).await?;
        for samples in contexts(tx, st, cfg, &gpus, h).await?.values() {
            cells.extend(rollups::bucket_terms(samples, cfg, &whole, h).0);
        }
    }
    Ok(cells)
}

/// The per-GPU rollups of `[from, to)` that `scope` may see (row level security: a tenant reads its own rows),
/// with their placement; the buckets named in `exact` that are not frozen as raw cells per GPU (see
/// [`usage_for`]). One snapshot. Read and decoded on every call (no cache on this backend: see
/// [`crate::cache::usage_cache`] for SQLite's).
pub async fn gpu_usage(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    scope: Scope,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<eai_engine::gpu_usage::GpuUsage> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let (meta, rollups_in) = (
        st.get(&tx, META_GET).await?,
        st.get(&tx, REPLICA_ROLLUPS).await?,
    );
    let period: [&(dyn ToSql + Sync); 2] = [&from.0, &to.0];
    let (pruned, rows) = tokio::try_join!(
        tx.query_opt(&meta, &[&PRUNED_BEFORE]),
        tx.query(&rollups_in, &period),
    )
    .ctx("read rollups")?;
    let pruned: Option<i64> = pruned
        .map(|r| r.try_get(0))
        .transpose()
        .ctx("read the pruning horizon")?;
    let frozen = rollups::frozen_before(pruned, cfg);
    let exact = rollups::exact_buckets(exact, from, to, frozen, cfg);
    let mut found = Vec::with_capacity(rows.len());
    for r in &rows {
        let r = rollup_of(r)?;
        if !exact.contains(&r.key.bucket_start.floor_to(cfg.bucket_ms).0) {
            found.push(r);
        }
    }
    found.extend(raw_cells(&tx, st, cfg, &exact).await?);
    tx.commit().await.ctx("end read")?;
    if let Scope::Tenant(t) = scope {
        found.retain(|r| r.key.owner == Some(t));
    }
    crate::cache::usage_cache::usage_of(&found)
}

/// What a replica holds of `[from, to)` ([`crate::ReplicaRows`]), from one snapshot on the platform path.
pub async fn replica_rows(conn: &mut PgConn, from: i64, to: i64) -> Result<crate::ReplicaRows> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let (samples, rollups, gaps) = (
        st.get(&tx, REPLICA_SAMPLES).await?,
        st.get(&tx, REPLICA_ROLLUPS).await?,
        st.get(&tx, REPLICA_GAPS).await?,
    );
    let period: [&(dyn ToSql + Sync); 2] = [&from, &to];
    let (samples, rollups, gaps) = tokio::try_join!(
        tx.query(&samples, &period),
        tx.query(&rollups, &period),
        tx.query(&gaps, &period),
    )
    .ctx("read the replica's rows")?;
    let (groups_in, claims_in) = (
        st.get(&tx, derived::GROUPS_IN).await?,
        st.get(&tx, derived::CLAIMS_IN).await?,
    );
    let (group_rows, claim_rows) =
        tokio::try_join!(tx.query(&groups_in, &period), tx.query(&claims_in, &period),)
            .ctx("read the replica's group rollups and claims")?;
    let stored = group_rows
        .iter()
        .map(derived::stored_of)
        .collect::<Result<Vec<_>>>()?;
    let groups = derived::name_groups(&tx, st, stored).await?;
    let claims = claim_rows
        .iter()
        .map(|r| {
            Ok((
                derived::claim_of(r)?,
                r.try_get(5).ctx("read usage_claims.events")?,
            ))
        })
        .collect::<Result<_>>()?;
    tx.commit().await.ctx("end read")?;
    Ok(crate::ReplicaRows {
        samples: samples
            .iter()
            .map(|r| sample_of(r).map(|(_, s)| s))
            .collect::<Result<_>>()?,
        rollups: rollups.iter().map(rollup_of).collect::<Result<_>>()?,
        gaps: gaps.iter().map(gap_of).collect::<Result<_>>()?,
        groups,
        claims,
    })
}

//! Reads: what an allocation reads for a period, deployments, latest samples, nodes.

use eai_engine::time::Timestamp;
use tokio_postgres::types::ToSql;

use super::ingest::*;
use super::rows::*;
use super::sql::*;
use crate::codec::{count, to_i64};
use crate::postgres::derived;
use crate::postgres::pool::PgConn;
use crate::postgres::{begin, owner_of, Ctx, Mode};
use crate::rollups::{self, Cuts, RollupConfig, PRUNED_BEFORE};
use crate::{DeploymentSeen, LatestSamples, NodeSeen, Result, Scope, UsageRead};

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

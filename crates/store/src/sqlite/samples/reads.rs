//! Reads: what an allocation reads for a period, deployments, latest samples, nodes.

use std::collections::BTreeSet;

use eai_engine::report::Gap;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection};

use super::groups::group_rollups_in;
use super::ingest::gpus_of_bucket;
use super::meta::frozen_before;
use super::rows::{
    bucket_from_raw, decode_raw, decode_rollup, gap_of, raw_rollup, raw_sample, RawSample,
    ROLLUP_SELECT,
};
use eai_engine::gpu_usage::{GpuRow, GpuUsage, UsageLabels};
use eai_engine::rollup::{Placement, CELL_DP};

use crate::cache::read_cache::{self, ReadCache};
use crate::cache::usage_cache::{self, LabelKey, Names, UsageCache};
use crate::codec::dec_parse;
use crate::rollups::groups;
use crate::rollups::{self, Cuts};
use crate::sqlite::codec::{count, owner_parse, to_i64, Ctx};
use crate::sqlite::SqliteConfig;
use crate::{DeploymentSeen, LatestSamples, NodeSeen, Result, UsageRead};

// --- reads ----------------------------------------------------------------------------------------------------

/// The buckets `exact` as raw cells per GPU, whole (not cut at policy boundaries: priced window by window), a
/// list per bucket.
fn exact_cells(
    tx: &Connection,
    cfg: &SqliteConfig,
    exact: &BTreeSet<i64>,
) -> Result<Vec<Vec<eai_engine::rollup::Rollup>>> {
    let whole = Cuts::default();
    let mut hours = Vec::new();
    for &h in exact {
        let mut cells = Vec::new();
        for (gpu_id, uuid) in gpus_of_bucket(tx, cfg, h)? {
            cells.extend(bucket_from_raw(tx, cfg, &whole, gpu_id, &uuid, h)?.0);
        }
        hours.push(cells);
    }
    Ok(hours)
}

/// The per-GPU usage of `[from, to)` that `scope` may see, with its placement; the buckets named in `exact`
/// that are not frozen as raw cells per GPU (see [`usage_for`]). One snapshot. The buckets unchanged since
/// `cache` decoded them come from it ([`crate::cache::usage_cache`]); the others are read.
pub fn gpu_usage(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    cache: &UsageCache,
    scope: crate::Scope,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<GpuUsage> {
    let tx = conn.transaction().ctx("begin read")?;
    let frozen = frozen_before(&tx, cfg)?;
    let exact: BTreeSet<i64> = rollups::exact_buckets(exact, from, to, frozen, cfg);
    let counts = change_counts(&tx, from, to)?;
    let plan = cache.plan(&counts, to.0);
    let mut rows = Vec::new();
    {
        let mut names = cache.names();
        for &(a, b) in &plan.ranges {
            gpu_rows_in(&tx, &mut names, a, b, &mut rows)?;
        }
    }
    let mut usage = cache.keep(plan, rows);
    // The exact hours' rows are their raw cells.
    let chunks = std::mem::take(&mut usage.chunks);
    usage.chunks = chunks
        .into_iter()
        .filter(|c| {
            c.first()
                .is_none_or(|r| !exact.contains(&r.bucket_start.floor_to(cfg.bucket_ms).0))
        })
        .collect();
    usage_cache::add_cells(&mut usage, exact_cells(&tx, cfg, &exact)?)?;
    tx.commit().ctx("end read")?;
    if let crate::Scope::Tenant(t) = scope {
        usage.retain_labels(|l| l.owner == Some(t));
    }
    Ok(usage)
}

/// The change counts of the buckets of `[from, to)` ([`crate::cache::read_cache`]), by bucket.
fn change_counts(tx: &Connection, from: Timestamp, to: Timestamp) -> Result<Vec<(i64, i64)>> {
    tx.prepare_cached(
        "SELECT bucket_ms, n FROM hour_changes WHERE bucket_ms >= ?1 AND bucket_ms < ?2 ORDER BY bucket_ms",
    )
    .and_then(|mut st| {
        st.query_map(params![from.0, to.0], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
    })
    .ctx("read change counts")
}

/// Appends the per-GPU rollups of the buckets in `[from, to)` to `out` as compact rows, their labels and GPUs
/// interned into `names` (read from the series and GPU tables the first time they are met).
fn gpu_rows_in(
    tx: &Connection,
    names: &mut Names,
    from: i64,
    to: i64,
    out: &mut Vec<GpuRow>,
) -> Result<()> {
    const W: &str = "rollups";
    let mut st = tx
        .prepare_cached(
            "SELECT bucket_ms, gpu_id, series_id, first_window_start_ms, last_window_start_ms, samples, \
             estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, memory_gb_seconds, energy_ws, \
             storage_gb_seconds, deployment_id, owner, model FROM rollups WHERE bucket_ms >= ?1 AND bucket_ms < ?2",
        )
        .ctx("prepare rollups read")?;
    let mut rows = st.query(params![from, to]).ctx("read rollups")?;
    while let Some(r) = rows.next().ctx("read rollups")? {
        let text = |i: usize| -> Result<&str> {
            r.get_ref(i)
                .and_then(|v| v.as_str().map_err(Into::into))
                .ctx("read rollups")
        };
        let int = |i: usize| -> Result<i64> { r.get(i).ctx("read rollups") };
        let mut q = [0i128; 6];
        for (k, v) in q.iter_mut().enumerate() {
            *v = groups::to_fixed(dec_parse(text(7 + k)?, W)?, CELL_DP, "rollup quantity")?;
        }
        let small = |n: i64, what: &str| -> Result<u32> {
            u32::try_from(count(n, what)?).map_err(|_| crate::codec::corrupt(what, n))
        };
        let (gpu_id, series_id) = (int(1)?, int(2)?);
        let key = if series_id != 0 {
            LabelKey::Series(series_id)
        } else {
            LabelKey::Unplaced(
                text(13)?.to_string(),
                owner_parse(text(14)?, "rollups.owner")?,
                text(15)?.to_string(),
            )
        };
        let labels = names.label(key, |key| labels_of(tx, key))?;
        let gpu = names.gpu(gpu_id, || {
            tx.prepare_cached("SELECT uuid FROM gpus WHERE id = ?1")
                .and_then(|mut st| st.query_row(params![gpu_id], |r| r.get(0)))
                .ctx("read a GPU")
        })?;
        out.push(GpuRow {
            bucket_start: Timestamp(int(0)?),
            first_window_start: Timestamp(int(3)?),
            last_window_start: Timestamp(int(4)?),
            labels,
            gpu,
            samples: small(int(5)?, "rollups.samples")?,
            estimated_samples: small(int(6)?, "rollups.estimated_samples")?,
            q,
        });
    }
    Ok(())
}

/// The labels a stored row's key names.
fn labels_of(tx: &Connection, key: &LabelKey) -> Result<UsageLabels> {
    match key {
        LabelKey::Unplaced(deployment_id, owner, model) => Ok(UsageLabels {
            deployment_id: deployment_id.clone(),
            owner: *owner,
            model: model.clone(),
            placement: Placement::default(),
        }),
        LabelKey::Series(id) => {
            type Row = (String, String, String, String, String, String, String);
            let (d, o, m, ns, pod, node, share): Row = tx
                .prepare_cached(
                    "SELECT deployment_id, owner, model, namespace, pod, node, share FROM series WHERE id = ?1",
                )
                .and_then(|mut st| {
                    st.query_row(params![id], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
                    })
                })
                .ctx("read a rollup's series")?;
            Ok(UsageLabels {
                deployment_id: d,
                owner: owner_parse(&o, "series.owner")?,
                model: m,
                placement: Placement::new(&ns, &pod, &node, crate::codec::share_method(&share)?),
            })
        }
    }
}

/// What an allocation of `[from, to)` reads, in one snapshot: the group rollups, except for the buckets named in
/// `exact` that are not frozen: those come as raw cells per GPU (a frozen one, whose raw samples were pruned, is
/// served by its group rollups, cut at the policy boundaries known when it froze); the usage claims; the gaps that
/// touch the period. Groups and claims of the buckets unchanged since `cache` decoded them come from it; the others
/// are read (see [`crate::cache::read_cache`]). The answer is in [`UsageRead::in_order`]'s order, as on every
/// backend.
pub fn usage_for(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    cache: &ReadCache,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<UsageRead> {
    // One read transaction: one consistent snapshot of the file.
    let tx = conn.transaction().ctx("begin read")?;
    let frozen = frozen_before(&tx, cfg)?;
    let exact: BTreeSet<i64> = rollups::exact_buckets(exact, from, to, frozen, cfg);

    let counts = change_counts(&tx, from, to)?;
    let plan = cache.plan(&counts, to.0);
    let (mut groups, mut claims) = (Vec::new(), Vec::new());
    for &(a, b) in &plan.ranges {
        groups.extend(group_rollups_in(&tx, a, b)?);
        claims.extend(crate::sqlite::claims::claims_in(
            &tx,
            Timestamp(a),
            Timestamp(b),
        )?);
    }
    let buckets = cache.fill(plan, groups, claims);
    let (mut found, claims) = read_cache::assemble(&buckets, &exact, cfg.bucket_ms);
    found.extend(exact_cells(&tx, cfg, &exact)?.into_iter().flatten());

    let mut gaps = Vec::new();
    {
        let mut st = tx
            .prepare_cached(
                "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason FROM gaps x JOIN gpus g ON g.id = x.gpu_id \
                 WHERE x.to_ms > ?1 AND x.from_ms < ?2",
            )
            .ctx("prepare gaps read")?;
        let raws = st
            .query_map(params![from.0, to.0], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .ctx("read gaps")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .ctx("read gaps")?;
        for (gpu_uuid, node, deployment_id, f, t, reason) in raws {
            gaps.push(Gap {
                gpu_uuid,
                node,
                deployment_id,
                from: Timestamp(f),
                to: Timestamp(t),
                reason: crate::codec::gap_reason(&reason)?,
            });
        }
    }
    Ok(UsageRead {
        rollups: found,
        gaps,
        claims,
    }
    .in_order())
}

/// Deployments seen in samples: the namespace and model of the series seen last.
pub fn deployments_seen(conn: &Connection) -> Result<Vec<DeploymentSeen>> {
    let rows: Vec<rollups::SeriesSeen> = conn
        .prepare_cached(
            "SELECT deployment_id, namespace, model, first_seen_ms, last_seen_ms, owner FROM series ORDER BY deployment_id, last_seen_ms, id",
        )
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get::<_, String>(5)?)))?.collect::<rusqlite::Result<Vec<_>>>())
        .ctx("read series")?
        .into_iter()
        .map(|(d, n, m, f, l, o)| Ok((d, n, m, f, l, owner_parse(&o, "series.owner")?)))
        .collect::<Result<_>>()?;
    Ok(rollups::deployments_seen(rows))
}

/// The latest sample of each GPU whose latest window ended at or after `since`: the newest first, at most
/// `limit`, and how many GPUs there are in all. One read transaction.
pub fn latest_samples(conn: &mut Connection, since: i64, limit: u64) -> Result<LatestSamples> {
    let tx = conn.transaction().ctx("begin read")?;
    let gpus: i64 = tx
        .prepare_cached(
            "SELECT COUNT(*) FROM gpus g \
             WHERE (SELECT MAX(x.end_ms) FROM gpu_samples x WHERE x.gpu_id = g.id) >= ?1",
        )
        .and_then(|mut st| st.query_row(params![since], |r| r.get(0)))
        .ctx("count GPUs seen")?;
    let limit = to_i64(limit.min(i64::MAX as u64), "limit")?;
    let rows: Vec<(String, RawSample)> = tx
        .prepare_cached(
            "SELECT s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, \
             s.fraction_e6, se.node, se.model, se.namespace, se.pod, se.deployment_id, se.owner, se.share, g.uuid \
             FROM gpus g \
             JOIN gpu_samples s ON s.gpu_id = g.id \
                 AND s.end_ms = (SELECT MAX(x.end_ms) FROM gpu_samples x WHERE x.gpu_id = g.id) \
             JOIN series se ON se.id = s.series_id \
             WHERE s.end_ms >= ?1 ORDER BY s.end_ms DESC, g.uuid LIMIT ?2",
        )
        .and_then(|mut st| {
            st.query_map(params![since, limit], |r| Ok((r.get::<_, String>(14)?, raw_sample(r)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("read the latest samples")?;
    let samples = rows
        .into_iter()
        .map(|(uuid, raw)| decode_raw(&uuid, raw))
        .collect::<Result<Vec<_>>>()?;
    Ok(LatestSamples {
        samples,
        gpus: count(gpus, "GPU count")?,
    })
}

/// Per node, the latest window end stored (of any of its series), for nodes seen at or after `since`.
pub fn nodes_last_seen(conn: &Connection, since: i64) -> Result<Vec<NodeSeen>> {
    conn.prepare_cached(
        "SELECT node, MAX(last_seen_ms) FROM series GROUP BY node HAVING MAX(last_seen_ms) >= ?1 ORDER BY node",
    )
    .and_then(|mut st| {
        st.query_map(params![since], |r| {
            Ok(NodeSeen {
                node: r.get(0)?,
                last_seen: Timestamp(r.get(1)?),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
    })
    .ctx("read the nodes last seen")
}

/// The least and greatest rollup bucket, gap start and event time ([`rollups::replica_extent`]).
pub fn replica_extent(
    conn: &Connection,
    cfg: &SqliteConfig,
) -> Result<Option<(Timestamp, Timestamp)>> {
    type Span = (Option<i64>, Option<i64>);
    let (b, g, e): (Span, Span, Span) = conn
        .query_row(
            "SELECT (SELECT min(bucket_ms) FROM rollups), (SELECT max(bucket_ms) FROM rollups), \
             (SELECT min(from_ms) FROM gaps), (SELECT max(from_ms) FROM gaps), \
             (SELECT min(occurred_at_ms) FROM usage_events), (SELECT max(occurred_at_ms) FROM usage_events)",
            [],
            |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?), (r.get(4)?, r.get(5)?))),
        )
        .ctx("read the replica's extent")?;
    Ok(rollups::replica_extent(cfg, b, g, e))
}

/// What a replica holds of `[from, to)` ([`crate::ReplicaRows`]), in one read transaction: samples ending in
/// it (GPU by GPU, an index range each), rollups of its buckets, gaps starting in it.
pub fn replica_rows(conn: &mut Connection, from: i64, to: i64) -> Result<crate::ReplicaRows> {
    let tx = conn.transaction().ctx("begin read")?;
    // CROSS JOIN keeps `gpus` the outer loop: one probe of the (gpu_id, end_ms) key per GPU.
    let samples = tx
        .prepare_cached(
            "SELECT s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, s.fraction_e6, \
             se.node, se.model, se.namespace, se.pod, se.deployment_id, se.owner, se.share, g.uuid \
             FROM gpus g CROSS JOIN gpu_samples s ON s.gpu_id = g.id JOIN series se ON se.id = s.series_id \
             WHERE s.end_ms >= ?1 AND s.end_ms < ?2",
        )
        .and_then(|mut st| {
            st.query_map(params![from, to], |r| Ok((r.get::<_, String>(14)?, raw_sample(r)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("read samples")?
        .into_iter()
        .map(|(uuid, raw)| decode_raw(&uuid, raw))
        .collect::<Result<Vec<_>>>()?;
    let rollups = tx
        .prepare_cached(&format!(
            "{ROLLUP_SELECT} WHERE r.bucket_ms >= ?1 AND r.bucket_ms < ?2"
        ))
        .and_then(|mut st| {
            st.query_map(params![from, to], raw_rollup)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("read rollups")?
        .into_iter()
        .map(decode_rollup)
        .collect::<Result<Vec<_>>>()?;
    let gaps = tx
        .prepare_cached(
            "SELECT g.uuid, x.from_ms, x.to_ms, x.reason, x.deployment_id, x.node FROM gaps x \
             JOIN gpus g ON g.id = x.gpu_id WHERE x.from_ms >= ?1 AND x.from_ms < ?2",
        )
        .and_then(|mut st| {
            st.query_map(params![from, to], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("read gaps")?
        .into_iter()
        .map(|(uuid, g)| gap_of(&uuid, g))
        .collect::<Result<Vec<_>>>()?;
    let groups = group_rollups_in(&tx, from, to)?;
    let claims = crate::sqlite::claims::claim_rows_in(&tx, Timestamp(from), Timestamp(to))?;
    tx.commit().ctx("end read")?;
    Ok(crate::ReplicaRows {
        samples,
        rollups,
        gaps,
        groups,
        claims,
    })
}

//! GPU samples in SQLite: compact raw rows, and hourly rollups and gaps kept up to date in the ingest transaction,
//! so that an allocation reads GPU-hours, never raw rows.
//!
//! The maintenance algorithm (fast path for appended samples, dirty GPU-hours recomputed from raw samples for
//! late ones, frozen hours after pruning) is [`crate::rollups`], and the steps of a batch are
//! [`crate::ingest`], shared with PostgreSQL: this module reads what they ask for and writes what they plan,
//! all in one `IMMEDIATE` transaction.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{GpuSets, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::codec::{count, dec_parse, dec_text, owner_parse, owner_text, to_i64, Ctx};
use super::SqliteConfig;
use crate::codec::{decode, Figures, Labels};
use crate::groups::{
    self, fixed_bytes, fixed_from_bytes, ids_bytes, ids_from_bytes, GroupDeltas, GroupKey,
    GroupRow, SetCache,
};
use crate::ingest::{Ingest, LateKey, LateRead, Recompute};
use crate::outbox::OutboxRows;
use crate::pruned::{self, EndSet, EndSets, Stored, INDEXED_FROM};
use crate::rollups::{self, Cuts, Horizon, PRUNED_BEFORE};
use crate::{
    DeploymentSeen, IngestOutcome, LatestSamples, NodeSeen, Result, StoreError, UsageRead,
};

// --- reading raw samples --------------------------------------------------------------------------------------

const SAMPLE_SELECT: &str =
    "SELECT s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, s.fraction_e6, \
     se.node, se.model, se.namespace, se.pod, se.deployment_id, se.owner \
     FROM gpu_samples s JOIN series se ON se.id = s.series_id WHERE s.gpu_id = ?1";

type RawSample = (i64, Figures, [String; 6]);

fn raw_sample(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawSample> {
    Ok((
        r.get(0)?,
        Figures {
            window_ms: r.get(1)?,
            util_e6: r.get(2)?,
            mem_e10: r.get(3)?,
            power_e6: r.get(4)?,
            storage_e6: r.get(5)?,
            fraction_e6: r.get(6)?,
        },
        [
            r.get(7)?,
            r.get(8)?,
            r.get(9)?,
            r.get(10)?,
            r.get(11)?,
            r.get(12)?,
        ],
    ))
}

fn decode_raw(gpu_uuid: &str, (end_ms, f, l): RawSample) -> Result<Sample> {
    let [node, model, namespace, pod, deployment_id, owner] = l;
    let owner = owner_parse(&owner, "series.owner")?;
    decode(
        gpu_uuid,
        end_ms,
        &f,
        Labels {
            node,
            model,
            namespace,
            pod,
            deployment_id,
            owner,
        },
    )
}

/// Which stored sample of a GPU to read, relative to an instant.
#[derive(Debug, Clone, Copy)]
enum Pick {
    AtOrBefore,
    Before,
    After,
    AtOrAfter,
}

fn one_sample(
    conn: &Connection,
    pick: Pick,
    gpu_id: i64,
    gpu_uuid: &str,
    at: i64,
) -> Result<Option<Sample>> {
    let tail = match pick {
        Pick::AtOrBefore => " AND s.end_ms <= ?2 ORDER BY s.end_ms DESC LIMIT 1",
        Pick::Before => " AND s.end_ms < ?2 ORDER BY s.end_ms DESC LIMIT 1",
        Pick::After => " AND s.end_ms > ?2 ORDER BY s.end_ms ASC LIMIT 1",
        Pick::AtOrAfter => " AND s.end_ms >= ?2 ORDER BY s.end_ms ASC LIMIT 1",
    };
    let mut st = conn
        .prepare_cached(&format!("{SAMPLE_SELECT}{tail}"))
        .ctx("prepare sample lookup")?;
    let raw = st
        .query_row(params![gpu_id, at], raw_sample)
        .optional()
        .ctx("read a sample")?;
    raw.map(|r| decode_raw(gpu_uuid, r)).transpose()
}

/// The samples of a GPU ending in `[from, to)`, oldest first.
fn samples_in(
    conn: &Connection,
    gpu_id: i64,
    gpu_uuid: &str,
    from: i64,
    to: i64,
) -> Result<Vec<Sample>> {
    let mut st = conn
        .prepare_cached(&format!(
            "{SAMPLE_SELECT} AND s.end_ms >= ?2 AND s.end_ms < ?3 ORDER BY s.end_ms"
        ))
        .ctx("prepare sample range")?;
    let raws = st
        .query_map(params![gpu_id, from, to], raw_sample)
        .ctx("read samples")?
        .collect::<rusqlite::Result<Vec<_>>>()
        .ctx("read samples")?;
    raws.into_iter().map(|r| decode_raw(gpu_uuid, r)).collect()
}

/// Every stored sample whose terms can reach bucket `h` (see [`rollups::context_range`]), oldest first.
fn context(
    conn: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<Vec<Sample>> {
    let (lo, hi) = rollups::context_range(cfg, h);
    let mut v = Vec::new();
    v.extend(one_sample(conn, Pick::Before, gpu_id, gpu_uuid, lo)?);
    v.extend(samples_in(conn, gpu_id, gpu_uuid, lo, hi)?);
    v.extend(one_sample(conn, Pick::AtOrAfter, gpu_id, gpu_uuid, hi)?);
    Ok(v)
}

/// The cells of bucket `h` of one GPU (cut at `cuts`), and the gaps that start in it, computed from raw samples.
fn bucket_from_raw(
    conn: &Connection,
    cfg: &SqliteConfig,
    cuts: &Cuts,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<(Vec<Rollup>, Vec<Gap>)> {
    let samples = context(conn, cfg, gpu_id, gpu_uuid, h)?;
    Ok(rollups::bucket_terms(&samples, cfg, cuts, h))
}

// --- rollups and gaps rows ------------------------------------------------------------------------------------

const ROLLUP_SELECT: &str =
    "SELECT g.uuid, r.bucket_ms, r.deployment_id, r.owner, r.model, r.first_window_start_ms, \
     r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
     r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds \
     FROM rollups r JOIN gpus g ON g.id = r.gpu_id";

type RawRollup = (
    String,
    i64,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    [String; 6],
);

fn raw_rollup(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRollup> {
    raw_rollup_at(r, 0)
}

/// A rollup whose columns start at column `o` of the row.
fn raw_rollup_at(r: &rusqlite::Row<'_>, o: usize) -> rusqlite::Result<RawRollup> {
    Ok((
        r.get(o)?,
        r.get(o + 1)?,
        r.get(o + 2)?,
        r.get(o + 3)?,
        r.get(o + 4)?,
        r.get(o + 5)?,
        r.get(o + 6)?,
        r.get(o + 7)?,
        r.get(o + 8)?,
        [
            r.get(o + 9)?,
            r.get(o + 10)?,
            r.get(o + 11)?,
            r.get(o + 12)?,
            r.get(o + 13)?,
            r.get(o + 14)?,
        ],
    ))
}

fn decode_rollup(raw: RawRollup) -> Result<Rollup> {
    let (gpu_uuid, bucket, deployment_id, owner, model, first, last, samples, estimated, q) = raw;
    let w = "rollups";
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid,
            deployment_id,
            owner: owner_parse(&owner, "rollups.owner")?,
            model,
            bucket_start: Timestamp(bucket),
        },
        first_window_start: Timestamp(first),
        last_window_start: Timestamp(last),
        samples: count(samples, "rollups.samples")?,
        estimated_samples: count(estimated, "rollups.estimated_samples")?,
        q: Quantities {
            gpu_seconds: dec_parse(&q[0], w)?,
            busy_gpu_seconds: dec_parse(&q[1], w)?,
            estimated_gpu_seconds: dec_parse(&q[2], w)?,
            memory_gb_seconds: dec_parse(&q[3], w)?,
            energy_ws: dec_parse(&q[4], w)?,
            storage_gb_seconds: dec_parse(&q[5], w)?,
        },
        gpus: None,
    })
}

fn stored_rollup(tx: &Connection, gpu_id: i64, key: &RollupKey) -> Result<Option<Rollup>> {
    let mut st = tx
        .prepare_cached(&format!(
            "{ROLLUP_SELECT} WHERE r.gpu_id = ?1 AND r.bucket_ms = ?2 AND r.deployment_id = ?3 AND r.owner = ?4 AND r.model = ?5"
        ))
        .ctx("prepare rollup lookup")?;
    let raw = st
        .query_row(
            params![
                gpu_id,
                key.bucket_start.0,
                key.deployment_id,
                owner_text(key.owner),
                key.model
            ],
            raw_rollup,
        )
        .optional()
        .ctx("read a rollup")?;
    raw.map(decode_rollup).transpose()
}

fn write_rollup(tx: &Connection, gpu_id: i64, r: &Rollup) -> Result<()> {
    let mut st = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO rollups (gpu_id, bucket_ms, deployment_id, owner, model, first_window_start_ms, \
             last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
             memory_gb_seconds, energy_ws, storage_gb_seconds) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )
        .ctx("prepare rollup write")?;
    st.execute(params![
        gpu_id,
        r.key.bucket_start.0,
        r.key.deployment_id,
        owner_text(r.key.owner),
        r.key.model,
        r.first_window_start.0,
        r.last_window_start.0,
        to_i64(r.samples, "rollup samples")?,
        to_i64(r.estimated_samples, "rollup estimated samples")?,
        dec_text(r.q.gpu_seconds),
        dec_text(r.q.busy_gpu_seconds),
        dec_text(r.q.estimated_gpu_seconds),
        dec_text(r.q.memory_gb_seconds),
        dec_text(r.q.energy_ws),
        dec_text(r.q.storage_gb_seconds),
    ])
    .ctx("write a rollup")?;
    Ok(())
}

fn write_gap(tx: &Connection, gpu_id: i64, g: &Gap) -> Result<()> {
    let mut st = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO gaps (gpu_id, from_ms, to_ms, reason, deployment_id, node) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .ctx("prepare gap write")?;
    st.execute(params![
        gpu_id,
        g.from.0,
        g.to.0,
        g.reason.as_str(),
        g.deployment_id,
        g.node
    ])
    .ctx("write a gap")?;
    Ok(())
}

fn delete_rollup(tx: &Connection, gpu_id: i64, key: &RollupKey) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM rollups WHERE gpu_id = ?1 AND bucket_ms = ?2 AND deployment_id = ?3 AND owner = ?4 AND model = ?5",
    )
    .and_then(|mut st| {
        st.execute(params![
            gpu_id,
            key.bucket_start.0,
            key.deployment_id,
            owner_text(key.owner),
            key.model
        ])
    })
    .ctx("delete a rollup")?;
    Ok(())
}

/// Deletes the gap of a GPU that starts at `from`, returning it.
fn take_gap(tx: &Connection, gpu_id: i64, gpu_uuid: &str, from: i64) -> Result<Option<Gap>> {
    let raw: Option<(i64, String, String, String)> = tx
        .prepare_cached(
            "DELETE FROM gaps WHERE gpu_id = ?1 AND from_ms = ?2 RETURNING to_ms, reason, deployment_id, node",
        )
        .and_then(|mut st| {
            st.query_row(params![gpu_id, from], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .ctx("delete a gap")?;
    raw.map(|(to, reason, deployment_id, node)| {
        gap_of(gpu_uuid, (from, to, reason, deployment_id, node))
    })
    .transpose()
}

/// A gap row of a GPU: (from, to, reason, deployment, node).
fn gap_of(
    gpu_uuid: &str,
    (from, to, reason, deployment_id, node): (i64, i64, String, String, String),
) -> Result<Gap> {
    Ok(Gap {
        gpu_uuid: gpu_uuid.to_string(),
        node,
        deployment_id,
        from: Timestamp(from),
        to: Timestamp(to),
        reason: crate::codec::gap_reason(&reason)?,
    })
}

/// The rollup and gap rows of bucket `h` of a GPU as stored (what a recomputation replaces).
fn bucket_rows(
    tx: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<(Vec<Rollup>, Vec<Gap>)> {
    let rollups = tx
        .prepare_cached(&format!(
            "{ROLLUP_SELECT} WHERE r.gpu_id = ?1 AND r.bucket_ms >= ?2 AND r.bucket_ms < ?3"
        ))
        .and_then(|mut st| {
            st.query_map(params![gpu_id, h, h + cfg.bucket_ms], raw_rollup)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .ctx("read a bucket's rollups")?
        .into_iter()
        .map(decode_rollup)
        .collect::<Result<Vec<_>>>()?;
    let raws: Vec<(i64, i64, String, String, String)> = tx
        .prepare_cached(
            "SELECT from_ms, to_ms, reason, deployment_id, node FROM gaps WHERE gpu_id = ?1 AND from_ms >= ?2 AND from_ms < ?3",
        )
        .and_then(|mut st| {
            st.query_map(params![gpu_id, h, h + cfg.bucket_ms], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .ctx("read a bucket's gaps")?;
    let gaps = raws
        .into_iter()
        .map(|raw| gap_of(gpu_uuid, raw))
        .collect::<Result<Vec<_>>>()?;
    Ok((rollups, gaps))
}

/// Recomputes bucket `h` of a GPU (every segment of it) from its raw context ([`Recompute::bucket`]) and replaces
/// its rollup and gap rows.
fn recompute(
    tx: &Connection,
    cfg: &SqliteConfig,
    rc: &mut Recompute<'_>,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<()> {
    let keys = group_keys_of_bucket(tx, cfg, gpu_id, h)?;
    let replaced = match rc.wants_replaced() {
        true => Some(bucket_rows(tx, cfg, gpu_id, gpu_uuid, h)?),
        false => None,
    };
    let context = context(tx, cfg, gpu_id, gpu_uuid, h)?;
    let (fresh, gaps) = rc.bucket(h, &context, keys, replaced);
    tx.prepare_cached(
        "DELETE FROM rollups WHERE gpu_id = ?1 AND bucket_ms >= ?2 AND bucket_ms < ?3",
    )
    .and_then(|mut st| st.execute(params![gpu_id, h, h + cfg.bucket_ms]))
    .ctx("clear a bucket's rollups")?;
    for r in &fresh {
        write_rollup(tx, gpu_id, r)?;
    }
    tx.prepare_cached("DELETE FROM gaps WHERE gpu_id = ?1 AND from_ms >= ?2 AND from_ms < ?3")
        .and_then(|mut st| st.execute(params![gpu_id, h, h + cfg.bucket_ms]))
        .ctx("clear a bucket's gaps")?;
    for g in &gaps {
        write_gap(tx, gpu_id, g)?;
    }
    Ok(())
}

// --- group rollups (crate::groups) ----------------------------------------------------------------------------

const GROUP_SELECT: &str =
    "SELECT bucket_ms, deployment_id, owner, model, first_window_start_ms, last_window_start_ms, \
     samples, estimated_samples, q, gpus FROM deployment_rollups";

type RawGroup = (
    i64,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
    Vec<u8>,
    Vec<u8>,
);

fn raw_group(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawGroup> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
    ))
}

fn decode_group(raw: RawGroup) -> Result<GroupRow> {
    let (bucket_ms, deployment_id, owner, model, first, last, samples, estimated, q, gpus) = raw;
    Ok(GroupRow {
        key: GroupKey {
            bucket_ms,
            deployment_id,
            owner: owner_parse(&owner, "deployment_rollups.owner")?,
            model,
        },
        first_window_start_ms: first,
        last_window_start_ms: last,
        samples: count(samples, "deployment_rollups.samples")?,
        estimated_samples: count(estimated, "deployment_rollups.estimated_samples")?,
        q: fixed_from_bytes::<6>(&q, "deployment_rollups.q")?,
        gpus: ids_from_bytes(&gpus, "deployment_rollups.gpus")?,
    })
}

fn stored_group(tx: &Connection, key: &GroupKey) -> Result<Option<GroupRow>> {
    let raw = tx
        .prepare_cached(&format!(
            "{GROUP_SELECT} WHERE bucket_ms = ?1 AND deployment_id = ?2 AND owner = ?3 AND model = ?4"
        ))
        .and_then(|mut st| {
            st.query_row(
                params![key.bucket_ms, key.deployment_id, owner_text(key.owner), key.model],
                raw_group,
            )
            .optional()
        })
        .ctx("read a group rollup")?;
    raw.map(decode_group).transpose()
}

fn write_group(tx: &Connection, g: &GroupRow) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO deployment_rollups (bucket_ms, deployment_id, owner, model, first_window_start_ms, \
         last_window_start_ms, samples, estimated_samples, q, gpus) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .and_then(|mut st| {
        st.execute(params![
            g.key.bucket_ms,
            g.key.deployment_id,
            owner_text(g.key.owner),
            g.key.model,
            g.first_window_start_ms,
            g.last_window_start_ms,
            to_i64(g.samples, "group samples").map_err(to_sql_err)?,
            to_i64(g.estimated_samples, "group estimated samples").map_err(to_sql_err)?,
            fixed_bytes(&g.q),
            ids_bytes(&g.gpus).map_err(to_sql_err)?,
        ])
    })
    .ctx("write a group rollup")?;
    Ok(())
}

fn to_sql_err(e: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(e.to_string())))
}

/// The keys of the group rows that the per-GPU rows of bucket `h` (every segment of it) of a GPU belong to.
fn group_keys_of_bucket(
    tx: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    h: i64,
) -> Result<Vec<GroupKey>> {
    let raws: Vec<(i64, String, String, String)> = tx
        .prepare_cached(
            "SELECT bucket_ms, deployment_id, owner, model FROM rollups WHERE gpu_id = ?1 AND bucket_ms >= ?2 AND bucket_ms < ?3",
        )
        .and_then(|mut st| {
            st.query_map(params![gpu_id, h, h + cfg.bucket_ms], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .ctx("read a bucket's rollup keys")?;
    raws.into_iter()
        .map(|(bucket_ms, deployment_id, owner, model)| {
            Ok(GroupKey {
                bucket_ms,
                deployment_id,
                owner: owner_parse(&owner, "rollups.owner")?,
                model,
            })
        })
        .collect()
}

/// Rebuilds one group row from the per-GPU rows of its key (deletes it when there are none).
fn rebuild_group(tx: &Connection, key: &GroupKey) -> Result<()> {
    let raws: Vec<(i64, RawRollup)> = tx
        .prepare_cached(&format!(
            "SELECT r.gpu_id, {} WHERE r.bucket_ms = ?1 AND r.deployment_id = ?2 AND r.owner = ?3 AND r.model = ?4",
            &ROLLUP_SELECT["SELECT ".len()..]
        ))
        .and_then(|mut st| {
            st.query_map(
                params![key.bucket_ms, key.deployment_id, owner_text(key.owner), key.model],
                |r| Ok((r.get(0)?, raw_rollup_at(r, 1)?)),
            )?
            .collect()
        })
        .ctx("read a group's rollups")?;
    let rows = raws
        .into_iter()
        .map(|(id, raw)| Ok((id, decode_rollup(raw)?)))
        .collect::<Result<Vec<_>>>()?;
    match groups::rebuild(rows)? {
        Some(g) => write_group(tx, &g),
        None => {
            tx.prepare_cached(
                "DELETE FROM deployment_rollups WHERE bucket_ms = ?1 AND deployment_id = ?2 AND owner = ?3 AND model = ?4",
            )
            .and_then(|mut st| {
                st.execute(params![key.bucket_ms, key.deployment_id, owner_text(key.owner), key.model])
            })
            .ctx("delete a group rollup")?;
            Ok(())
        }
    }
}

/// Brings the group rows up to date after a batch: the fast-path deltas are added into their rows, except
/// where a key is stale (a recomputed GPU-hour held or holds a row of it): those are rebuilt.
fn apply_groups(tx: &Connection, deltas: GroupDeltas, stale: &BTreeSet<GroupKey>) -> Result<()> {
    for (key, delta) in deltas.rows {
        if stale.contains(&key) {
            continue;
        }
        let row = match stored_group(tx, &key)? {
            Some(mut g) => {
                g.add(&delta);
                g
            }
            None => delta,
        };
        write_group(tx, &row)?;
    }
    for key in stale {
        rebuild_group(tx, key)?;
    }
    Ok(())
}

/// Rebuilds every group row from the per-GPU rollups (the migration that introduced them), one bucket at a
/// time in bucket order.
pub fn rebuild_all_groups(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM deployment_rollups", [])
        .ctx("clear group rollups")?;
    let mut st = conn
        .prepare(&format!(
            "SELECT r.gpu_id, {} ORDER BY r.bucket_ms",
            &ROLLUP_SELECT["SELECT ".len()..]
        ))
        .ctx("prepare the rollups scan")?;
    let mut rows = st.query([]).ctx("scan rollups")?;
    let mut bucket: Option<i64> = None;
    let mut pending = GroupDeltas::default();
    while let Some(row) = rows.next().ctx("scan rollups")? {
        let gpu_id: i64 = row.get(0).ctx("scan rollups")?;
        let r = decode_rollup(raw_rollup_at(row, 1).ctx("scan rollups")?)?;
        if bucket.is_some_and(|b| b != r.key.bucket_start.0) {
            for g in std::mem::take(&mut pending).rows.values() {
                write_group(conn, g)?;
            }
        }
        bucket = Some(r.key.bucket_start.0);
        pending.add(gpu_id, &r)?;
    }
    for g in pending.rows.values() {
        write_group(conn, g)?;
    }
    Ok(())
}

/// GPU id -> uuid, shared by the group rollups read.
fn gpu_names(tx: &Connection) -> Result<HashMap<i64, Arc<str>>> {
    tx.prepare_cached("SELECT id, uuid FROM gpus")
        .and_then(|mut st| {
            st.query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    Arc::from(r.get::<_, String>(1)?.as_str()),
                ))
            })?
            .collect()
        })
        .ctx("read gpus")
}

/// The group rollups of buckets in `[from, to)` but those in `skip`, as the engine's rollups.
fn group_rollups_in(
    tx: &Connection,
    cfg: &SqliteConfig,
    from: i64,
    to: i64,
    skip: &BTreeSet<i64>,
) -> Result<Vec<Rollup>> {
    let names = gpu_names(tx)?;
    let mut sets = GpuSets::default();
    let mut cache = SetCache::default();
    let mut out = Vec::new();
    let mut st = tx
        .prepare_cached(&format!(
            "{GROUP_SELECT} WHERE bucket_ms >= ?1 AND bucket_ms < ?2"
        ))
        .ctx("prepare group rollups read")?;
    let mut rows = st.query(params![from, to]).ctx("read group rollups")?;
    while let Some(row) = rows.next().ctx("read group rollups")? {
        let bucket: i64 = row.get(0).ctx("read group rollups")?;
        if skip.contains(&Timestamp(bucket).floor_to(cfg.bucket_ms).0) {
            continue;
        }
        let owner: String = row.get(2).ctx("read group rollups")?;
        let q = row.get_ref(8).ctx("read group rollups")?;
        let q = fixed_from_bytes::<6>(
            q.as_blob().ctx("read group rollups")?,
            "deployment_rollups.q",
        )?;
        let gpus = row.get_ref(9).ctx("read group rollups")?;
        let gpus = cache.get(gpus.as_blob().ctx("read group rollups")?, &names, &mut sets)?;
        out.push(Rollup {
            key: RollupKey {
                gpu_uuid: String::new(),
                deployment_id: row.get(1).ctx("read group rollups")?,
                owner: owner_parse(&owner, "deployment_rollups.owner")?,
                model: row.get(3).ctx("read group rollups")?,
                bucket_start: Timestamp(bucket),
            },
            first_window_start: Timestamp(row.get(4).ctx("read group rollups")?),
            last_window_start: Timestamp(row.get(5).ctx("read group rollups")?),
            samples: count(
                row.get(6).ctx("read group rollups")?,
                "deployment_rollups.samples",
            )?,
            estimated_samples: count(
                row.get(7).ctx("read group rollups")?,
                "deployment_rollups.estimated_samples",
            )?,
            q: groups::quantities_of(&q)?,
            gpus: Some(gpus),
        });
    }
    Ok(out)
}

// --- bookkeeping ----------------------------------------------------------------------------------------------

pub fn meta_get(conn: &Connection, key: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")
        .and_then(|mut st| st.query_row([key], |r| r.get(0)).optional())
        .ctx("read meta")
}

pub fn meta_set(conn: &Connection, key: &str, value: i64) -> Result<()> {
    conn.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", params![key, value])
        .ctx("write meta")?;
    Ok(())
}

fn frozen_before(conn: &Connection, cfg: &SqliteConfig) -> Result<Option<i64>> {
    Ok(rollups::frozen_before(meta_get(conn, PRUNED_BEFORE)?, cfg))
}

/// The policy boundaries rollups are cut at.
pub fn cuts(conn: &Connection) -> Result<Cuts> {
    let v: Vec<i64> = conn
        .prepare_cached("SELECT at_ms FROM rollup_cuts")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .ctx("read rollup cuts")?;
    Ok(Cuts::new(v))
}

/// Records the boundaries of a policy just made as cuts (those [`rollups::new_cuts`] keeps).
pub fn record_cuts(tx: &Connection, cfg: &SqliteConfig, instants: &[Timestamp]) -> Result<()> {
    let frozen = frozen_before(tx, cfg)?;
    for at in rollups::new_cuts(instants.iter().copied(), frozen, cfg) {
        tx.prepare_cached("INSERT OR IGNORE INTO rollup_cuts (at_ms) VALUES (?1)")
            .and_then(|mut st| st.execute([at]))
            .ctx("record a rollup cut")?;
    }
    Ok(())
}

fn horizon(conn: &Connection) -> Result<Horizon> {
    Ok(Horizon {
        pruned_before: meta_get(conn, PRUNED_BEFORE)?,
        indexed_from: meta_get(conn, INDEXED_FROM)?,
        cuts: cuts(conn)?,
    })
}

/// The end sets of a GPU in the bucket of `end` and the nearest stored one on each side.
fn end_sets_near(conn: &Connection, cfg: &SqliteConfig, gpu_id: i64, end: i64) -> Result<EndSets> {
    let b = pruned::bucket_of(end, cfg.bucket_ms);
    let raws: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms = ?2 \
             UNION ALL SELECT * FROM (SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms < ?2 ORDER BY bucket_ms DESC LIMIT 1) \
             UNION ALL SELECT * FROM (SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms > ?2 ORDER BY bucket_ms ASC LIMIT 1)",
        )
        .and_then(|mut st| st.query_map(params![gpu_id, b], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .ctx("read pruned windows")?;
    decode_sets(raws)
}

fn decode_sets(raws: Vec<(i64, Vec<u8>)>) -> Result<EndSets> {
    raws.into_iter()
        .map(|(b, bytes)| Ok((b, EndSet::decode(b, &bytes)?)))
        .collect()
}

/// The end sets of a GPU whose buckets lie in `[from, to]`, and the nearest one before `from`.
fn end_sets_between(conn: &Connection, gpu_id: i64, from: i64, to: i64) -> Result<EndSets> {
    let raws: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms >= ?2 AND bucket_ms <= ?3 \
             UNION ALL SELECT * FROM (SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms < ?2 ORDER BY bucket_ms DESC LIMIT 1)",
        )
        .and_then(|mut st| st.query_map(params![gpu_id, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .ctx("read pruned windows")?;
    decode_sets(raws)
}

fn write_end_set(tx: &Connection, gpu_id: i64, bucket: i64, set: &EndSet) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO pruned_ends (gpu_id, bucket_ms, ends) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut st| st.execute(params![gpu_id, bucket, set.encode(bucket)]))
    .ctx("write pruned windows")?;
    Ok(())
}

// --- ingest ---------------------------------------------------------------------------------------------------

fn intern_gpu(tx: &Connection, uuid: &str) -> Result<i64> {
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

fn intern_series(tx: &Connection, l: &Labels, end_ms: i64) -> Result<i64> {
    let owner = owner_text(l.owner);
    let found: Option<i64> = tx
        .prepare_cached(
            "SELECT id FROM series WHERE deployment_id = ?1 AND owner = ?2 AND model = ?3 AND namespace = ?4 AND pod = ?5 AND node = ?6",
        )
        .and_then(|mut st| {
            st.query_row(params![l.deployment_id, owner, l.model, l.namespace, l.pod, l.node], |r| r.get(0)).optional()
        })
        .ctx("read series")?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.prepare_cached(
        "INSERT INTO series (deployment_id, owner, model, namespace, pod, node, first_seen_ms, last_seen_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
    )
    .and_then(|mut st| st.execute(params![l.deployment_id, owner, l.model, l.namespace, l.pod, l.node, end_ms]))
    .ctx("insert a series")?;
    Ok(tx.last_insert_rowid())
}

/// The GPUs (id, uuid) with rollup rows in bucket `h` (any segment of it): a GPU has cells in a bucket exactly
/// when it has rows there.
fn gpus_of_bucket(tx: &Connection, cfg: &SqliteConfig, h: i64) -> Result<Vec<(i64, String)>> {
    tx.prepare_cached(
        "SELECT DISTINCT r.gpu_id, g.uuid FROM rollups r JOIN gpus g ON g.id = r.gpu_id WHERE r.bucket_ms >= ?1 AND r.bucket_ms < ?2",
    )
    .and_then(|mut st| st.query_map(params![h, h + cfg.bucket_ms], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
    .ctx("read the gpus of a bucket")
}

/// Writes one planned sample; every planned row is new, so a row already there is an error.
fn insert_row(tx: &Connection, gpu_id: i64, series_id: i64, s: &Sample, f: &Figures) -> Result<()> {
    let n = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO gpu_samples (gpu_id, end_ms, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .and_then(|mut st| {
            st.execute(params![
                gpu_id,
                s.end.0,
                series_id,
                f.window_ms,
                f.util_e6,
                f.mem_e10,
                f.power_e6,
                f.storage_e6,
                f.fraction_e6
            ])
        })
        .ctx("insert a sample")?;
    if n == 0 {
        return Err(StoreError::Internal(format!(
            "ingest: the sample of {} at {} was planned as new but is stored already",
            s.gpu_uuid, s.end
        )));
    }
    Ok(())
}

/// Stores a batch as [`crate::ingest`] plans it: this only reads what each step asks for and writes what it
/// returns.
pub fn insert(
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
    let mut reads: HashMap<LateKey, LateRead> = HashMap::new();
    for (id, end) in splits.late() {
        let uuid = uuids.get(&id).map(String::as_str).unwrap_or_default();
        let stored: Option<i64> = tx
            .prepare_cached("SELECT 1 FROM gpu_samples WHERE gpu_id = ?1 AND end_ms = ?2")
            .and_then(|mut st| st.query_row(params![id, end], |r| r.get(0)).optional())
            .ctx("look a sample up")?;
        let read = match stored {
            Some(_) => LateRead {
                stored: true,
                ..LateRead::default()
            },
            None => LateRead {
                stored: false,
                before: one_sample(&tx, Pick::Before, id, uuid, end)?,
                after: one_sample(&tx, Pick::After, id, uuid, end)?,
            },
        };
        reads.insert((id, end), read);
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
    let mut series: HashMap<Labels, i64> = HashMap::new();
    for row in plan.rows()? {
        let labels = Labels::of(row.sample);
        let series_id = match series.get(&labels) {
            Some(id) => *id,
            None => {
                let id = intern_series(&tx, &labels, row.sample.end.0)?;
                series.insert(labels, id);
                id
            }
        };
        insert_row(&tx, row.gpu_id, series_id, row.sample, row.figures)?;
    }

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
    let done = plan.finish(draft);
    apply_groups(&tx, done.groups, &done.stale)?;
    if let Some(o) = done.outbox {
        super::records::write_outbox(&tx, o)?;
    }
    super::records::append_in(&tx, &done.audit)?;
    tx.commit().ctx("commit ingest")?;
    Ok(done.outcome)
}

// --- reads ----------------------------------------------------------------------------------------------------

/// What an allocation of `[from, to)` reads, in one snapshot: the group rollups, except for the buckets named
/// in `exact` that are not frozen: those come as raw cells per GPU (a frozen one, whose raw samples were pruned,
/// is served by its group rollups, cut at the policy boundaries known when it froze); the usage claims; the
/// gaps that touch the period. The answer is in [`UsageRead::in_order`]'s order, as on every backend.
pub fn usage_for(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    from: Timestamp,
    to: Timestamp,
    exact: &[Timestamp],
) -> Result<UsageRead> {
    // One read transaction: one consistent snapshot of the file.
    let tx = conn.transaction().ctx("begin read")?;
    let frozen = frozen_before(&tx, cfg)?;
    let exact: BTreeSet<i64> = rollups::exact_buckets(exact, from, to, frozen, cfg);

    let mut found = group_rollups_in(&tx, cfg, from.0, to.0, &exact)?;
    let whole = Cuts::default();
    for &h in &exact {
        for (gpu_id, uuid) in gpus_of_bucket(&tx, cfg, h)? {
            let (cells, _) = bucket_from_raw(&tx, cfg, &whole, gpu_id, &uuid, h)?;
            found.extend(cells);
        }
    }
    let claims = super::records::claims_in(&tx, from, to)?;

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

// --- retention ------------------------------------------------------------------------------------------------

/// `(end, window)` of the raw rows of a GPU, by a tail of `WHERE gpu_id = ?1 ...`.
fn raw_ends(conn: &Connection, tail: &str, p: &[&dyn rusqlite::ToSql]) -> Result<Vec<Stored>> {
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

/// Prunes raw samples that ended before `before` (see [`crate::pruned`]): the hours about to freeze are first
/// re-cut from raw samples at the policy boundaries recorded; then, per GPU, the raw rows from its pruning start
/// (the last horizon, or earlier where late rows were written below it) to its cutoff are classified: edges and
/// the latest sample stay whole, the others leave their end in the GPU's end sets. Records the horizon.
pub fn prune(conn: &mut Connection, cfg: &SqliteConfig, before: Timestamp) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin prune")?;
    let recorded = meta_get(&tx, PRUNED_BEFORE)?;

    // Hours about to freeze that hold a cut: their rollups are rebuilt at the cuts while raw samples last.
    let cuts = cuts(&tx)?;
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
        for (id, uuid) in gpus_of_bucket(&tx, cfg, h)? {
            recompute(&tx, cfg, &mut rc, id, &uuid, h)?;
        }
    }
    apply_groups(&tx, GroupDeltas::default(), &stale)?;

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
        let cutoff = rollups::prune_cutoff(before, last);
        let lo = pending
            .get(&gpu_id)
            .copied()
            .unwrap_or(i64::MAX)
            .min(recorded.unwrap_or(i64::MIN));
        if lo >= cutoff {
            continue;
        }
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
        let mut sets = end_sets_between(
            &tx,
            gpu_id,
            pruned::bucket_of(lo, cfg.bucket_ms),
            pruned::bucket_of(cutoff, cfg.bucket_ms),
        )?;
        let to_index = pruned::to_prune(raw, &sets, lo, cutoff);
        for e in &to_index {
            tx.prepare_cached("DELETE FROM gpu_samples WHERE gpu_id = ?1 AND end_ms = ?2")
                .and_then(|mut st| st.execute(params![gpu_id, e]))
                .ctx("delete samples")?;
        }
        deleted += to_index.len() as u64;
        let touched: BTreeSet<i64> = to_index
            .iter()
            .map(|e| pruned::bucket_of(*e, cfg.bucket_ms))
            .collect();
        pruned::add_ends(&mut sets, to_index, cfg.bucket_ms);
        for b in touched {
            if let Some(set) = sets.get(&b) {
                write_end_set(&tx, gpu_id, b, set)?;
            }
        }
    }
    tx.execute("DELETE FROM prune_pending", [])
        .ctx("clear rows to prune")?;
    meta_set(&tx, PRUNED_BEFORE, horizon)?;
    if let Some(o) = outbox {
        super::records::write_outbox(&tx, o)?;
    }
    tx.commit().ctx("commit prune")?;
    Ok(deleted)
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
            "SELECT g.uuid, s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, \
             s.fraction_e6, se.node, se.model, se.namespace, se.pod, se.deployment_id, se.owner \
             FROM gpus g \
             JOIN gpu_samples s ON s.gpu_id = g.id \
                 AND s.end_ms = (SELECT MAX(x.end_ms) FROM gpu_samples x WHERE x.gpu_id = g.id) \
             JOIN series se ON se.id = s.series_id \
             WHERE s.end_ms >= ?1 ORDER BY s.end_ms DESC, g.uuid LIMIT ?2",
        )
        .and_then(|mut st| {
            st.query_map(params![since, limit], |r| {
                let uuid: String = r.get(0)?;
                let rest = (
                    r.get(1)?,
                    Figures {
                        window_ms: r.get(2)?,
                        util_e6: r.get(3)?,
                        mem_e10: r.get(4)?,
                        power_e6: r.get(5)?,
                        storage_e6: r.get(6)?,
                        fraction_e6: r.get(7)?,
                    },
                    [
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                        r.get(11)?,
                        r.get(12)?,
                        r.get(13)?,
                    ],
                );
                Ok((uuid, rest))
            })?
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

//! Group rollups (see [`crate::rollups::groups`]): rows, deltas added at ingest, rebuilds, the read of a period.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use eai_engine::rollup::{GpuSets, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

use super::rows::{decode_rollup, raw_rollup_at, RawRollup, ROLLUP_SELECT};
use crate::outbox::OutboxRows;
use crate::rollups::groups::{
    self, fixed_bytes, fixed_from_bytes, ids_bytes, ids_from_bytes, GroupDeltas, GroupKey,
    GroupRow, SetCache,
};
use crate::sqlite::codec::{count, owner_parse, owner_text, to_i64, Ctx};
use crate::{Result, StoreError};

// --- group rollups (crate::rollups::groups) ---------------------------------------------------------------

pub(super) const GROUP_SELECT: &str =
    "SELECT bucket_ms, deployment_id, owner, model, first_window_start_ms, last_window_start_ms, \
     samples, estimated_samples, q, gpus FROM deployment_rollups";

pub(super) type RawGroup = (
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

pub(super) fn raw_group(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawGroup> {
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

pub(super) fn decode_group(raw: RawGroup) -> Result<GroupRow> {
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

pub(super) fn stored_group(tx: &Connection, key: &GroupKey) -> Result<Option<GroupRow>> {
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

pub(super) fn write_group(tx: &Connection, g: &GroupRow) -> Result<()> {
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

pub(super) fn to_sql_err(e: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(e.to_string())))
}

/// The uuids of the GPUs `ids` (backend ids), for the outbox.
fn gpu_uuids(tx: &Connection, ids: &[i64]) -> Result<Vec<Arc<str>>> {
    ids.iter()
        .map(|id| {
            tx.prepare_cached("SELECT uuid FROM gpus WHERE id = ?1")
                .and_then(|mut st| st.query_row([id], |r| r.get::<_, String>(0)))
                .map(|u| Arc::from(u.as_str()))
                .ctx("read a gpu's uuid")
        })
        .collect()
}

/// The outbox row of a group row written (`Some`) or deleted.
fn outbox_group(
    tx: &Connection,
    outbox: Option<&mut OutboxRows>,
    key: &GroupKey,
    row: Option<&GroupRow>,
) -> Result<()> {
    let Some(o) = outbox else { return Ok(()) };
    match row {
        Some(g) => {
            o.group(&crate::outbox::group_rollup(g, gpu_uuids(tx, &g.gpus)?)?);
            Ok(())
        }
        None => o.group_deleted(key),
    }
}

/// Rebuilds one group row from the per-GPU rows of its key (deletes it when there are none).
pub(super) fn rebuild_group(
    tx: &Connection,
    key: &GroupKey,
    outbox: Option<&mut OutboxRows>,
) -> Result<()> {
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
    let rebuilt = groups::rebuild(rows)?;
    outbox_group(tx, outbox, key, rebuilt.as_ref())?;
    match rebuilt {
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
/// where a key is stale (a recomputed GPU-hour held or holds a row of it): those are rebuilt. Each row written
/// or deleted goes to `outbox` too when there is one.
pub(super) fn apply_groups(
    tx: &Connection,
    deltas: GroupDeltas,
    stale: &BTreeSet<GroupKey>,
    mut outbox: Option<&mut OutboxRows>,
) -> Result<()> {
    for (key, (delta, taken)) in deltas.by_key() {
        if stale.contains(key) {
            continue;
        }
        let mut row = match (stored_group(tx, key)?, delta) {
            (Some(mut g), Some(d)) => {
                g.add(d);
                g
            }
            (Some(g), None) => g,
            (None, Some(d)) => d.clone(),
            (None, None) => continue,
        };
        if let Some(t) = taken {
            row.take(t)?;
        }
        outbox_group(tx, outbox.as_deref_mut(), key, Some(&row))?;
        write_group(tx, &row)?;
    }
    for key in stale {
        rebuild_group(tx, key, outbox.as_deref_mut())?;
    }
    Ok(())
}

/// Rebuilds every group row from the per-GPU rollups (the migration that introduced them), one bucket at a
/// time in bucket order.
pub fn rebuild_all_groups(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM deployment_rollups", [])
        .ctx("clear group rollups")?;
    // Without the placement (groups have none): this also runs as the backfill of schema 4, before rollups had
    // a series (schema 11).
    let mut st = conn
        .prepare(
            "SELECT r.gpu_id, g.uuid, r.bucket_ms, r.deployment_id, r.owner, r.model, r.first_window_start_ms, \
             r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
             r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds, NULL, NULL, NULL \
             FROM rollups r JOIN gpus g ON g.id = r.gpu_id ORDER BY r.bucket_ms",
        )
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
pub(super) fn gpu_names(tx: &Connection) -> Result<HashMap<i64, Arc<str>>> {
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

/// The group rollups of buckets in `[from, to)`, as the engine's rollups, in the primary key's order.
pub(super) fn group_rollups_in(tx: &Connection, from: i64, to: i64) -> Result<Vec<Rollup>> {
    let names = gpu_names(tx)?;
    let mut sets = GpuSets::default();
    let mut cache = SetCache::default();
    let mut out = Vec::new();
    let mut st = tx
        .prepare_cached(&format!(
            "{GROUP_SELECT} WHERE bucket_ms >= ?1 AND bucket_ms < ?2 ORDER BY bucket_ms, deployment_id, owner, model"
        ))
        .ctx("prepare group rollups read")?;
    let mut rows = st.query(params![from, to]).ctx("read group rollups")?;
    while let Some(row) = rows.next().ctx("read group rollups")? {
        let bucket: i64 = row.get(0).ctx("read group rollups")?;
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
                placement: Default::default(),
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

//! Row decoding and the statements of single rows: raw samples, rollups, gaps, and the recomputation of one
//! GPU-hour from its raw rows.

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{Placement, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

use crate::codec::{decode, share_method, Figures, Labels};
use crate::plan::recompute::Recompute;
use crate::rollups::groups::GroupKey;
use crate::rollups::{self, Cuts};
use crate::sqlite::codec::{count, dec_parse, dec_text, owner_parse, owner_text, to_i64, Ctx};
use crate::sqlite::SqliteConfig;
use crate::Result;

// --- reading raw samples --------------------------------------------------------------------------------------

pub(super) const SAMPLE_SELECT: &str =
    "SELECT s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, s.fraction_e6, \
     se.node, se.model, se.namespace, se.pod, se.deployment_id, se.owner, se.share \
     FROM gpu_samples s JOIN series se ON se.id = s.series_id WHERE s.gpu_id = ?1";

/// A raw sample's end, figures, and its series' labels (node, model, namespace, pod, deployment, owner, share).
pub(super) type RawSample = (i64, Figures, [String; 7]);

pub(super) fn raw_sample(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawSample> {
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
            r.get(13)?,
        ],
    ))
}

pub(super) fn decode_raw(gpu_uuid: &str, (end_ms, f, l): RawSample) -> Result<Sample> {
    let [node, model, namespace, pod, deployment_id, owner, share] = l;
    let owner = owner_parse(&owner, "series.owner")?;
    let share = share_method(&share)?;
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
            share,
        },
    )
}

/// Which stored sample of a GPU to read, relative to an instant.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pick {
    AtOrBefore,
    Before,
    After,
    AtOrAfter,
}

impl Pick {
    /// The clause that picks the row from `?2`, after `… WHERE s.gpu_id = ?1` over `gpu_samples s`.
    pub(super) fn tail(self) -> &'static str {
        match self {
            Pick::AtOrBefore => " AND s.end_ms <= ?2 ORDER BY s.end_ms DESC LIMIT 1",
            Pick::Before => " AND s.end_ms < ?2 ORDER BY s.end_ms DESC LIMIT 1",
            Pick::After => " AND s.end_ms > ?2 ORDER BY s.end_ms ASC LIMIT 1",
            Pick::AtOrAfter => " AND s.end_ms >= ?2 ORDER BY s.end_ms ASC LIMIT 1",
        }
    }
}

pub(super) fn one_sample(
    conn: &Connection,
    pick: Pick,
    gpu_id: i64,
    gpu_uuid: &str,
    at: i64,
) -> Result<Option<Sample>> {
    let mut st = conn
        .prepare_cached(&format!("{SAMPLE_SELECT}{}", pick.tail()))
        .ctx("prepare sample lookup")?;
    let raw = st
        .query_row(params![gpu_id, at], raw_sample)
        .optional()
        .ctx("read a sample")?;
    raw.map(|r| decode_raw(gpu_uuid, r)).transpose()
}

/// The samples of a GPU ending in `[from, to)`, oldest first.
pub(super) fn samples_in(
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
pub(super) fn context(
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
pub(super) fn bucket_from_raw(
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

pub(super) const ROLLUP_SELECT: &str =
    "SELECT g.uuid, r.bucket_ms, r.deployment_id, r.owner, r.model, r.first_window_start_ms, \
     r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
     r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds, \
     se.namespace, se.pod, se.node, se.share \
     FROM rollups r JOIN gpus g ON g.id = r.gpu_id LEFT JOIN series se ON se.id = r.series_id";

pub(super) type RawRollup = (
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
    Option<[String; 4]>,
);

pub(super) fn raw_rollup(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRollup> {
    raw_rollup_at(r, 0)
}

/// A rollup whose columns start at column `o` of the row.
pub(super) fn raw_rollup_at(r: &rusqlite::Row<'_>, o: usize) -> rusqlite::Result<RawRollup> {
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
        match r.get::<_, Option<String>>(o + 15)? {
            Some(namespace) => Some([namespace, r.get(o + 16)?, r.get(o + 17)?, r.get(o + 18)?]),
            None => None,
        },
    ))
}

pub(super) fn decode_rollup(raw: RawRollup) -> Result<Rollup> {
    let (gpu_uuid, bucket, deployment_id, owner, model, first, last, samples, estimated, q, placed) =
        raw;
    let w = "rollups";
    Ok(Rollup {
        key: RollupKey {
            gpu_uuid,
            deployment_id,
            owner: owner_parse(&owner, "rollups.owner")?,
            model,
            bucket_start: Timestamp(bucket),
            placement: match placed {
                Some([namespace, pod, node, share]) => {
                    Placement::new(&namespace, &pod, &node, share_method(&share)?)
                }
                None => Placement::default(),
            },
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

/// The series row of a rollup key's placement: 0 for none (a row written before placements were kept), `None`
/// when no series has it (so no rollup row either).
fn series_of(tx: &Connection, key: &RollupKey) -> Result<Option<i64>> {
    let Some(l) = key.placement.0.as_deref() else {
        return Ok(Some(0));
    };
    tx.prepare_cached(
        "SELECT id FROM series WHERE deployment_id = ?1 AND owner = ?2 AND model = ?3 AND namespace = ?4 AND pod = ?5 AND node = ?6 AND share = ?7",
    )
    .and_then(|mut st| {
        st.query_row(
            params![key.deployment_id, owner_text(key.owner), key.model, l.namespace, l.pod, l.node, l.share.as_str()],
            |r| r.get(0),
        )
        .optional()
    })
    .ctx("read a rollup's series")
}

pub(super) fn stored_rollup(
    tx: &Connection,
    gpu_id: i64,
    key: &RollupKey,
) -> Result<Option<Rollup>> {
    let Some(series) = series_of(tx, key)? else {
        return Ok(None);
    };
    let mut st = tx
        .prepare_cached(&format!(
            "{ROLLUP_SELECT} WHERE r.gpu_id = ?1 AND r.bucket_ms = ?2 AND r.deployment_id = ?3 AND r.owner = ?4 AND r.model = ?5 AND r.series_id = ?6"
        ))
        .ctx("prepare rollup lookup")?;
    let raw = st
        .query_row(
            params![
                gpu_id,
                key.bucket_start.0,
                key.deployment_id,
                owner_text(key.owner),
                key.model,
                series
            ],
            raw_rollup,
        )
        .optional()
        .ctx("read a rollup")?;
    raw.map(decode_rollup).transpose()
}

pub(super) fn write_rollup(tx: &Connection, gpu_id: i64, r: &Rollup) -> Result<()> {
    let series = series_of(tx, &r.key)?.ok_or_else(|| {
        crate::StoreError::Internal(format!(
            "a rollup of {} names a series never stored",
            r.key.deployment_id
        ))
    })?;
    let mut st = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO rollups (gpu_id, bucket_ms, deployment_id, owner, model, first_window_start_ms, \
             last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
             memory_gb_seconds, energy_ws, storage_gb_seconds, series_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
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
        series,
    ])
    .ctx("write a rollup")?;
    Ok(())
}

pub(super) fn write_gap(tx: &Connection, gpu_id: i64, g: &Gap) -> Result<()> {
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

pub(super) fn delete_rollup(tx: &Connection, gpu_id: i64, key: &RollupKey) -> Result<()> {
    let Some(series) = series_of(tx, key)? else {
        return Ok(());
    };
    tx.prepare_cached(
        "DELETE FROM rollups WHERE gpu_id = ?1 AND bucket_ms = ?2 AND deployment_id = ?3 AND owner = ?4 AND model = ?5 AND series_id = ?6",
    )
    .and_then(|mut st| {
        st.execute(params![
            gpu_id,
            key.bucket_start.0,
            key.deployment_id,
            owner_text(key.owner),
            key.model,
            series
        ])
    })
    .ctx("delete a rollup")?;
    Ok(())
}

/// Deletes the gap of a GPU that starts at `from`, returning it.
pub(super) fn take_gap(
    tx: &Connection,
    gpu_id: i64,
    gpu_uuid: &str,
    from: i64,
) -> Result<Option<Gap>> {
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
pub(super) fn gap_of(
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
pub(super) fn bucket_rows(
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

/// The keys of the group rows that the per-GPU rows of bucket `h` (every segment of it) of a GPU belong to.
fn group_keys_of_bucket(
    tx: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    h: i64,
) -> Result<Vec<GroupKey>> {
    let raws: Vec<(i64, String, String, String)> = tx
        .prepare_cached(
            "SELECT DISTINCT bucket_ms, deployment_id, owner, model FROM rollups WHERE gpu_id = ?1 AND bucket_ms >= ?2 AND bucket_ms < ?3",
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

/// Recomputes bucket `h` of a GPU (every segment of it) from its raw context ([`Recompute::bucket`]) and replaces
/// its rollup and gap rows.
pub(super) fn recompute(
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

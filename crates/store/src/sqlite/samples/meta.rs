//! Bookkeeping: settings and horizons (`meta`), policy cuts, the pruned windows' end sets.

use std::collections::BTreeSet;

use eai_engine::shares::EqualShares;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

use crate::codec::{count, dec_parse, to_i64};
use crate::rollups::pruned::{self, EndSet, EndSets, INDEXED_FROM};
use crate::rollups::{self, Cuts, Horizon, PRUNED_BEFORE};
use crate::sqlite::codec::Ctx;
use crate::sqlite::SqliteConfig;
use crate::Result;

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

pub(super) fn frozen_before(conn: &Connection, cfg: &SqliteConfig) -> Result<Option<i64>> {
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
    let mut rolled_up = BTreeSet::new();
    for h in rollups::frozen_buckets(instants.iter().copied(), frozen, cfg) {
        // Group rollups are written with the GPUs' in the same transaction, and their key starts with the
        // bucket (or a cut's segment inside it).
        let any: bool = tx
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM deployment_rollups WHERE bucket_ms >= ?1 AND bucket_ms < ?2)",
            )
            .and_then(|mut st| st.query_row(params![h, h + cfg.bucket_ms], |r| r.get(0)))
            .ctx("look for the rollups of a frozen hour")?;
        if any {
            rolled_up.insert(h);
        }
    }
    for at in rollups::new_cuts(instants.iter().copied(), frozen, &rolled_up, cfg) {
        tx.prepare_cached("INSERT OR IGNORE INTO rollup_cuts (at_ms) VALUES (?1)")
            .and_then(|mut st| st.execute([at]))
            .ctx("record a rollup cut")?;
    }
    Ok(())
}

pub(super) fn horizon(conn: &Connection) -> Result<Horizon> {
    Ok(Horizon {
        pruned_before: meta_get(conn, PRUNED_BEFORE)?,
        indexed_from: meta_get(conn, INDEXED_FROM)?,
        cuts: cuts(conn)?,
    })
}

/// The end sets of a GPU in the bucket of `end` and the nearest stored one on each side.
pub(super) fn end_sets_near(
    conn: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    end: i64,
) -> Result<EndSets> {
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

pub(super) fn decode_sets(raws: Vec<(i64, Vec<u8>)>) -> Result<EndSets> {
    raws.into_iter()
        .map(|(b, bytes)| Ok((b, EndSet::decode(b, &bytes)?)))
        .collect()
}

/// The end sets of a GPU whose buckets lie in `[from, to]`, and the nearest one before `from`.
pub(super) fn end_sets_between(
    conn: &Connection,
    gpu_id: i64,
    from: i64,
    to: i64,
) -> Result<EndSets> {
    let raws: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms >= ?2 AND bucket_ms <= ?3 \
             UNION ALL SELECT * FROM (SELECT bucket_ms, ends FROM pruned_ends WHERE gpu_id = ?1 AND bucket_ms < ?2 ORDER BY bucket_ms DESC LIMIT 1)",
        )
        .and_then(|mut st| st.query_map(params![gpu_id, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .ctx("read pruned windows")?;
    decode_sets(raws)
}

pub(super) fn write_end_set(tx: &Connection, gpu_id: i64, bucket: i64, set: &EndSet) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO pruned_ends (gpu_id, bucket_ms, ends) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut st| st.execute(params![gpu_id, bucket, set.encode(bucket)]))
    .ctx("write pruned windows")?;
    Ok(())
}

// --- equal shares (eai_engine::shares) -----------------------------------------------------------------------

/// Adds one hour's equal shares of a deployment to the tally.
pub(super) fn add_equal_shares(tx: &Connection, e: &EqualShares) -> Result<()> {
    let have: Option<(i64, String)> = tx
        .prepare_cached(
            "SELECT samples, gpu_seconds FROM equal_shares WHERE bucket_ms = ?1 AND deployment_id = ?2",
        )
        .and_then(|mut st| {
            st.query_row(params![e.bucket_start.0, e.deployment_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
        })
        .ctx("read the equal shares")?;
    let (samples, seconds) = match have {
        Some((n, text)) => (
            n.saturating_add(to_i64(e.samples, "equal_shares.samples")?),
            dec_parse(&text, "equal_shares.gpu_seconds")? + e.gpu_seconds,
        ),
        None => (to_i64(e.samples, "equal_shares.samples")?, e.gpu_seconds),
    };
    tx.prepare_cached(
        "INSERT INTO equal_shares (bucket_ms, deployment_id, samples, gpu_seconds) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (bucket_ms, deployment_id) DO UPDATE SET samples = excluded.samples, gpu_seconds = excluded.gpu_seconds",
    )
    .and_then(|mut st| {
        st.execute(params![
            e.bucket_start.0,
            e.deployment_id,
            samples,
            seconds.normalize().to_string()
        ])
    })
    .ctx("write the equal shares")?;
    Ok(())
}

/// The equal shares of the hours in `[from, to)`, by hour and deployment.
pub fn equal_shares(conn: &Connection, from: i64, to: i64) -> Result<Vec<EqualShares>> {
    let rows: Vec<(i64, String, i64, String)> = conn
        .prepare_cached(
            "SELECT bucket_ms, deployment_id, samples, gpu_seconds FROM equal_shares \
             WHERE bucket_ms >= ?1 AND bucket_ms < ?2 ORDER BY bucket_ms, deployment_id",
        )
        .and_then(|mut st| {
            st.query_map(params![from, to], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .ctx("read the equal shares")?;
    rows.into_iter()
        .map(|(b, d, n, g)| {
            Ok(EqualShares {
                bucket_start: Timestamp(b),
                deployment_id: d,
                samples: count(n, "equal_shares.samples")?,
                gpu_seconds: dec_parse(&g, "equal_shares.gpu_seconds")?,
            })
        })
        .collect()
}

//! GPU samples in SQLite: compact raw rows, and hourly rollups and gaps kept up to date in the ingest transaction,
//! so that an allocation reads GPU-hours, never raw rows.
//!
//! The rollups of a GPU are always `rollup::aggregate(series::cells(its stored samples))`, bucket by bucket. That
//! sum has two kinds of terms: one per sample (`series::sample_cells`) and one per pair of consecutive samples
//! (`series::fill_between`: estimated cells, or a gap). Ingest keeps it true in two ways, per GPU:
//!
//! - **Fast path** (a sampler appending, the normal case): a sample that ends after every stored sample of its
//!   GPU only adds terms (its cells, and the fill from the previous sample), so they are added into the stored
//!   rollups (read-modify-write of exact decimals, one write per rollup row and batch) and its gap, if any,
//!   is inserted.
//! - **Slow path** (a late sample: a stored one ends after it): it breaks the pair of stored neighbours it falls
//!   between, so the GPU-hours that the old pair's terms and the new terms touch are marked dirty and
//!   recomputed from raw samples: load the samples around the hour, run `series::cells`, keep the cells of the
//!   hour and the gaps that start in it, replace the hour's rollup and gap rows.
//!   Dirty buckets, for a run of late samples `s1..sk` that fell between the stored neighbours `P` and `N`: the
//!   buckets each sample's window touches, and for every pair whose term goes (`P, N`) or comes (`P, s1`, …,
//!   `sk, N`): the bucket holding the pair's first end (where its gap lives) and, when the span between them is at
//!   most `max_gap`, every bucket the span touches (its estimated cells). Fast-path terms are written first, so a
//!   recomputed bucket includes them.
//!
//! Retention: [`prune`] deletes raw rows but always keeps the latest sample of each GPU (so that the next sample
//! still sees its predecessor, and a long silence is reported as a gap), and records how far it pruned. An hour
//! whose recomputation would need pruned rows is *frozen*: a sample arriving that late is stored, but its
//! frozen hours keep their rollups (a warning is logged), and `usage_for` serves such hours from rollups even when
//! they are asked for exactly.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use eai_engine::domain::{GpuFraction, NonNegative, Sample, TenantId, UnitInterval};
use eai_engine::report::{Gap, GapReason};
use eai_engine::rollup::{aggregate, Quantities, Rollup, RollupKey};
use eai_engine::series::{self, SeriesOutput};
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::codec::{
    corrupt, count, dec_parse, dec_text, from_scaled, owner_parse, owner_text, to_i64, to_scaled,
    Ctx, FRACTION_DP, MEMORY_DP, POWER_DP, STORAGE_DP, UTIL_DP,
};
use super::SqliteConfig;
use crate::{DeploymentSeen, IngestOutcome, Result, StoreError, UsageRead};

/// Longest window a sample may cover (SPEC §2: `window_seconds` <= 3600).
pub const MAX_WINDOW_MS: i64 = 3_600_000;

const PRUNED_BEFORE: &str = "raw_pruned_before_ms";

/// The integer columns of one sample.
#[derive(Debug, Clone, Copy)]
struct Figures {
    window_ms: i64,
    util_e6: i64,
    mem_e10: i64,
    power_e6: i64,
    storage_e6: i64,
    fraction_e6: i64,
}

impl Figures {
    /// Exactly what will be stored, or an error if a figure cannot be stored without loss.
    fn encode(s: &Sample) -> Result<Figures> {
        if s.window_ms <= 0 || s.window_ms > MAX_WINDOW_MS {
            return Err(StoreError::Internal(format!(
                "sample of {} at {} has a window of {} ms: must be above 0 and at most {MAX_WINDOW_MS}",
                s.gpu_uuid, s.end, s.window_ms
            )));
        }
        Ok(Figures {
            window_ms: s.window_ms,
            util_e6: to_scaled(s.utilization.get(), UTIL_DP, "utilization")?,
            mem_e10: to_scaled(s.memory_used_gb.get(), MEMORY_DP, "memory_used_gb")?,
            power_e6: to_scaled(s.power_w.get(), POWER_DP, "power_w")?,
            storage_e6: to_scaled(s.storage_gb.get(), STORAGE_DP, "storage_gb")?,
            fraction_e6: to_scaled(s.gpu_fraction.get(), FRACTION_DP, "gpu_fraction")?,
        })
    }
}

/// The labels of a sample, as the `series` table interns them.
#[derive(Debug, Clone)]
struct Labels {
    node: String,
    model: String,
    namespace: String,
    pod: String,
    deployment_id: String,
    owner: Option<TenantId>,
}

fn decode(gpu_uuid: &str, end_ms: i64, f: &Figures, l: Labels) -> Result<Sample> {
    let what = "gpu_samples";
    if f.window_ms <= 0 || f.window_ms > MAX_WINDOW_MS {
        return Err(corrupt("gpu_samples.window_ms", f.window_ms));
    }
    Ok(Sample {
        node: l.node,
        gpu_uuid: gpu_uuid.to_string(),
        model: l.model,
        namespace: l.namespace,
        pod: l.pod,
        deployment_id: l.deployment_id,
        owner: l.owner,
        window_ms: f.window_ms,
        end: Timestamp(end_ms),
        utilization: UnitInterval::new(from_scaled(f.util_e6, UTIL_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.util_e6", f.util_e6))?,
        memory_used_gb: NonNegative::new(from_scaled(f.mem_e10, MEMORY_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.mem_e10", f.mem_e10))?,
        power_w: NonNegative::new(from_scaled(f.power_e6, POWER_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.power_e6", f.power_e6))?,
        storage_gb: NonNegative::new(from_scaled(f.storage_e6, STORAGE_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.storage_e6", f.storage_e6))?,
        gpu_fraction: GpuFraction::new(from_scaled(f.fraction_e6, FRACTION_DP, what)?)
            .ok_or_else(|| corrupt("gpu_samples.fraction_e6", f.fraction_e6))?,
    })
}

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

/// Every stored sample whose terms can reach bucket `h`: those ending in `[h - max_gap - max window,
/// h + bucket + max window + max_gap)`, plus the one just before and the one just after, so that the
/// consecutive pairs near the bucket are the true ones.
fn context(
    conn: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<Vec<Sample>> {
    let lo = h - cfg.max_gap_ms - MAX_WINDOW_MS;
    let hi = h + cfg.bucket_ms + MAX_WINDOW_MS + cfg.max_gap_ms;
    let mut v = Vec::new();
    v.extend(one_sample(conn, Pick::Before, gpu_id, gpu_uuid, lo)?);
    v.extend(samples_in(conn, gpu_id, gpu_uuid, lo, hi)?);
    v.extend(one_sample(conn, Pick::AtOrAfter, gpu_id, gpu_uuid, hi)?);
    Ok(v)
}

/// The cells of bucket `h` of one GPU, and the gaps that start in it, computed from raw samples.
fn bucket_from_raw(
    conn: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<(Vec<Rollup>, Vec<Gap>)> {
    let samples = context(conn, cfg, gpu_id, gpu_uuid, h)?;
    let out = series::cells(&samples, &cfg.series());
    let cells = out
        .cells
        .into_iter()
        .filter(|c| c.key.bucket_start.0 == h)
        .collect();
    let gaps = out
        .gaps
        .into_iter()
        .filter(|g| g.from.floor_to(cfg.bucket_ms).0 == h)
        .collect();
    Ok((cells, gaps))
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
        [
            r.get(9)?,
            r.get(10)?,
            r.get(11)?,
            r.get(12)?,
            r.get(13)?,
            r.get(14)?,
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

fn parse_reason(s: &str) -> Result<GapReason> {
    match s {
        "too_long" => Ok(GapReason::TooLong),
        "series_changed" => Ok(GapReason::SeriesChanged),
        other => Err(corrupt("gaps.reason", other)),
    }
}

/// Replaces the rollup and gap rows of bucket `h` of a GPU with what its raw samples give.
fn recompute(
    tx: &Connection,
    cfg: &SqliteConfig,
    gpu_id: i64,
    gpu_uuid: &str,
    h: i64,
) -> Result<()> {
    let (cells, gaps) = bucket_from_raw(tx, cfg, gpu_id, gpu_uuid, h)?;
    tx.prepare_cached("DELETE FROM rollups WHERE gpu_id = ?1 AND bucket_ms = ?2")
        .and_then(|mut st| st.execute(params![gpu_id, h]))
        .ctx("clear a bucket's rollups")?;
    for r in aggregate(cells) {
        write_rollup(tx, gpu_id, &r)?;
    }
    tx.prepare_cached("DELETE FROM gaps WHERE gpu_id = ?1 AND from_ms >= ?2 AND from_ms < ?3")
        .and_then(|mut st| st.execute(params![gpu_id, h, h + cfg.bucket_ms]))
        .ctx("clear a bucket's gaps")?;
    for g in &gaps {
        write_gap(tx, gpu_id, g)?;
    }
    Ok(())
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

/// Buckets starting before this cannot be recomputed from raw samples (some were pruned): the recomputation
/// of bucket `h` needs every sample ending at or after `h - max_gap`.
fn frozen_before(conn: &Connection, cfg: &SqliteConfig) -> Result<Option<i64>> {
    Ok(meta_get(conn, PRUNED_BEFORE)?.map(|w| w.saturating_add(cfg.max_gap_ms)))
}

/// Adds the buckets that `[from, to)` touches.
fn touch(dirty: &mut BTreeSet<i64>, from: i64, to: i64, bucket_ms: i64) {
    let mut h = Timestamp(from).floor_to(bucket_ms).0;
    while h < to {
        dirty.insert(h);
        h += bucket_ms;
    }
}

/// The buckets that the term of a consecutive pair `(a, b)` can write: the gap record lives in the bucket of
/// `a.end`; estimated cells, only for a span up to `max_gap`, in the buckets of `[a.end, b.start)`.
fn touch_pair(dirty: &mut BTreeSet<i64>, a: &Sample, b: &Sample, cfg: &SqliteConfig) {
    let hole = b.start().0 - a.end.0;
    if hole <= 0 {
        return;
    }
    dirty.insert(a.end.floor_to(cfg.bucket_ms).0);
    if hole <= cfg.max_gap_ms {
        touch(dirty, a.end.0, b.start().0, cfg.bucket_ms);
    }
}

// --- ingest ---------------------------------------------------------------------------------------------------

/// The labels a `series` row is unique on: deployment, owner, model, namespace, pod, node.
type SeriesKey<'a> = (
    &'a str,
    Option<TenantId>,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
);

/// One sample of the batch, ready to write.
#[derive(Debug)]
struct Item {
    /// The sample as it will read back (figures decoded from the integers written).
    sample: Sample,
    figures: Figures,
    gpu_id: i64,
}

impl Item {
    fn series_key(&self) -> SeriesKey<'_> {
        let s = &self.sample;
        (
            s.deployment_id.as_str(),
            s.owner,
            s.model.as_str(),
            s.namespace.as_str(),
            s.pod.as_str(),
            s.node.as_str(),
        )
    }
}

/// A late sample and the stored neighbours it fell between before the batch.
#[derive(Debug)]
struct Late<'a> {
    item: &'a Item,
    before: Option<Sample>,
    after: Option<Sample>,
}

#[derive(Debug, Default)]
struct Work<'a> {
    /// Series ids of the batch, interned when a sample of the series is first written (a re-send alone never
    /// creates a series: it would show a deployment that was never stored).
    series: HashMap<SeriesKey<'a>, i64>,
    /// Terms of fast-path samples, added to the stored rollups at the end of the batch.
    fast: SeriesOutput,
    /// Buckets to recompute, per GPU id.
    dirty: BTreeMap<i64, BTreeSet<i64>>,
    /// Per series id: earliest and latest window end written.
    seen: HashMap<i64, (i64, i64)>,
    inserted: u64,
}

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

fn intern_series(tx: &Connection, s: &Sample) -> Result<i64> {
    let owner = owner_text(s.owner);
    let found: Option<i64> = tx
        .prepare_cached(
            "SELECT id FROM series WHERE deployment_id = ?1 AND owner = ?2 AND model = ?3 AND namespace = ?4 AND pod = ?5 AND node = ?6",
        )
        .and_then(|mut st| {
            st.query_row(params![s.deployment_id, owner, s.model, s.namespace, s.pod, s.node], |r| r.get(0)).optional()
        })
        .ctx("read series")?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.prepare_cached(
        "INSERT INTO series (deployment_id, owner, model, namespace, pod, node, first_seen_ms, last_seen_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
    )
    .and_then(|mut st| st.execute(params![s.deployment_id, owner, s.model, s.namespace, s.pod, s.node, s.end.0]))
    .ctx("insert a series")?;
    Ok(tx.last_insert_rowid())
}

/// Writes one sample; false when `(gpu, end)` was already stored.
fn insert_row<'a>(tx: &Connection, it: &'a Item, work: &mut Work<'a>) -> Result<bool> {
    let f = &it.figures;
    let series_id = match work.series.get(&it.series_key()) {
        Some(id) => *id,
        None => {
            let id = intern_series(tx, &it.sample)?;
            work.series.insert(it.series_key(), id);
            id
        }
    };
    let n = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO gpu_samples (gpu_id, end_ms, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .and_then(|mut st| {
            st.execute(params![
                it.gpu_id,
                it.sample.end.0,
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
        return Ok(false);
    }
    work.inserted += 1;
    let e = it.sample.end.0;
    let seen = work.seen.entry(series_id).or_insert((e, e));
    seen.0 = seen.0.min(e);
    seen.1 = seen.1.max(e);
    Ok(true)
}

/// Ingests the batch's samples of one GPU (sorted by end, first received first among equal ends).
fn ingest_gpu<'a>(
    tx: &Connection,
    cfg: &SqliteConfig,
    items: &[&'a Item],
    work: &mut Work<'a>,
) -> Result<()> {
    let Some(first) = items.first() else {
        return Ok(());
    };
    let (gpu_id, uuid) = (first.gpu_id, first.sample.gpu_uuid.as_str());
    let last = one_sample(tx, Pick::AtOrBefore, gpu_id, uuid, i64::MAX)?;
    let last_end = last.as_ref().map(|s| s.end);

    // Classify before writing anything, so that the neighbours of late samples are those stored before the batch.
    let mut fast: Vec<&Item> = Vec::new();
    let mut late: Vec<Late<'_>> = Vec::new();
    let mut prev_end = None;
    for &it in items {
        let end = it.sample.end;
        if prev_end == Some(end) {
            continue; // a re-send inside the batch: the first received wins
        }
        prev_end = Some(end);
        match last_end {
            Some(l) if end <= l => {
                let stored: Option<i64> = tx
                    .prepare_cached("SELECT 1 FROM gpu_samples WHERE gpu_id = ?1 AND end_ms = ?2")
                    .and_then(|mut st| {
                        st.query_row(params![gpu_id, end.0], |r| r.get(0))
                            .optional()
                    })
                    .ctx("look a sample up")?;
                if stored.is_some() {
                    continue; // already stored: the first received wins
                }
                let before = one_sample(tx, Pick::Before, gpu_id, uuid, end.0)?;
                let after = one_sample(tx, Pick::After, gpu_id, uuid, end.0)?;
                late.push(Late {
                    item: it,
                    before,
                    after,
                });
            }
            _ => fast.push(it),
        }
    }

    // Fast path: only adds terms.
    let mut prev = last.as_ref();
    for it in fast {
        if !insert_row(tx, it, work)? {
            continue;
        }
        if let Some(p) = prev {
            series::fill_between(p, &it.sample, &cfg.series(), &mut work.fast);
        }
        series::sample_cells(&it.sample, cfg.bucket_ms, &mut work.fast.cells);
        prev = Some(&it.sample);
    }

    // Slow path: runs of late samples that fell between the same stored pair replace that pair's term.
    let mut dirty = BTreeSet::new();
    let mut i = 0;
    while i < late.len() {
        let key = |l: &Late<'_>| {
            (
                l.before.as_ref().map(|s| s.end),
                l.after.as_ref().map(|s| s.end),
            )
        };
        let j = i + late[i..]
            .iter()
            .take_while(|l| key(l) == key(&late[i]))
            .count();
        let (before, after) = (late[i].before.as_ref(), late[i].after.as_ref());
        if let (Some(a), Some(b)) = (before, after) {
            touch_pair(&mut dirty, a, b, cfg);
        }
        let mut p = before;
        for l in &late[i..j] {
            if !insert_row(tx, l.item, work)? {
                continue;
            }
            let s = &l.item.sample;
            if let Some(a) = p {
                touch_pair(&mut dirty, a, s, cfg);
            }
            touch(&mut dirty, s.start().0, s.end.0, cfg.bucket_ms);
            p = Some(s);
        }
        if let (Some(a), Some(b)) = (p, after) {
            touch_pair(&mut dirty, a, b, cfg);
        }
        i = j;
    }
    if !dirty.is_empty() {
        work.dirty.entry(gpu_id).or_default().extend(dirty);
    }
    Ok(())
}

/// See the module documentation.
pub fn insert(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    batch: &[Sample],
) -> Result<IngestOutcome> {
    if batch.is_empty() {
        return Ok(IngestOutcome::default());
    }
    // A figure that cannot be stored exactly rejects the batch before anything is written.
    let encoded: Vec<(Figures, Sample)> = batch
        .iter()
        .map(|s| {
            let f = Figures::encode(s)?;
            let labels = Labels {
                node: s.node.clone(),
                model: s.model.clone(),
                namespace: s.namespace.clone(),
                pod: s.pod.clone(),
                deployment_id: s.deployment_id.clone(),
                owner: s.owner,
            };
            Ok((f, decode(&s.gpu_uuid, s.end.0, &f, labels)?))
        })
        .collect::<Result<_>>()?;

    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin ingest")?;
    let mut gpu_ids: HashMap<String, i64> = HashMap::new();
    let mut items = Vec::with_capacity(encoded.len());
    for (figures, sample) in encoded {
        let gpu_id = match gpu_ids.get(&sample.gpu_uuid) {
            Some(id) => *id,
            None => {
                let id = intern_gpu(&tx, &sample.gpu_uuid)?;
                gpu_ids.insert(sample.gpu_uuid.clone(), id);
                id
            }
        };
        items.push(Item {
            sample,
            figures,
            gpu_id,
        });
    }
    // Stable: among re-sends of one window inside the batch, the first received stays first.
    let mut order: Vec<&Item> = items.iter().collect();
    order.sort_by_key(|it| (it.gpu_id, it.sample.end));

    let mut work = Work::default();
    for group in order.chunk_by(|a, b| a.gpu_id == b.gpu_id) {
        ingest_gpu(&tx, cfg, group, &mut work)?;
    }

    // Fast-path terms: added into the stored rollups, one read-modify-write per row.
    for delta in aggregate(std::mem::take(&mut work.fast.cells)) {
        let gpu_id = gpu_ids.get(&delta.key.gpu_uuid).copied().ok_or_else(|| {
            StoreError::Internal(format!("ingest: unknown gpu {}", delta.key.gpu_uuid))
        })?;
        let merged = match stored_rollup(&tx, gpu_id, &delta.key)? {
            Some(mut r) => {
                r.merge(&delta);
                r
            }
            None => delta,
        };
        write_rollup(&tx, gpu_id, &merged)?;
    }
    for g in &work.fast.gaps {
        let gpu_id = gpu_ids
            .get(&g.gpu_uuid)
            .copied()
            .ok_or_else(|| StoreError::Internal("ingest: unknown gpu".into()))?;
        write_gap(&tx, gpu_id, g)?;
    }

    // Slow-path buckets: recomputed after the fast-path terms, which they include.
    let frozen = frozen_before(&tx, cfg)?;
    let uuids: HashMap<i64, &str> = gpu_ids.iter().map(|(u, id)| (*id, u.as_str())).collect();
    let mut skipped = 0u64;
    for (gpu_id, hours) in &work.dirty {
        let uuid = uuids.get(gpu_id).copied().unwrap_or_default();
        for &h in hours {
            if frozen.is_some_and(|f| h < f) {
                skipped += 1;
                continue;
            }
            recompute(&tx, cfg, *gpu_id, uuid, h)?;
        }
    }
    if skipped > 0 {
        tracing::warn!(buckets = skipped, "late samples fell in GPU-hours whose raw samples were pruned: their rollups were kept as they were");
    }

    for (series_id, (first, last)) in &work.seen {
        tx.prepare_cached(
            "UPDATE series SET first_seen_ms = MIN(first_seen_ms, ?2), last_seen_ms = MAX(last_seen_ms, ?3) WHERE id = ?1",
        )
        .and_then(|mut st| st.execute(params![series_id, first, last]))
        .ctx("update series seen")?;
    }
    tx.commit().ctx("commit ingest")?;
    let total = batch.len() as u64;
    Ok(IngestOutcome {
        inserted: work.inserted,
        duplicates: total - work.inserted,
    })
}

// --- reads ----------------------------------------------------------------------------------------------------

/// Rollups of buckets in `[from, to)`, exact buckets as raw cells, and the gaps that touch the period.
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
    let exact: BTreeSet<i64> = exact
        .iter()
        .map(|t| t.floor_to(cfg.bucket_ms).0)
        .filter(|h| from.0 <= *h && *h < to.0 && frozen.is_none_or(|f| *h >= f))
        .collect();

    let mut rollups = Vec::new();
    {
        let mut st = tx
            .prepare_cached(&format!(
                "{ROLLUP_SELECT} WHERE r.bucket_ms >= ?1 AND r.bucket_ms < ?2"
            ))
            .ctx("prepare rollups read")?;
        let mut rows = st.query(params![from.0, to.0]).ctx("read rollups")?;
        while let Some(row) = rows.next().ctx("read rollups")? {
            let r = decode_rollup(raw_rollup(row).ctx("read rollups")?)?;
            if !exact.contains(&r.key.bucket_start.0) {
                rollups.push(r);
            }
        }
    }
    for &h in &exact {
        // A GPU has cells in a bucket exactly when it has rollup rows there.
        let gpus: Vec<(i64, String)> = tx
            .prepare_cached("SELECT DISTINCT r.gpu_id, g.uuid FROM rollups r JOIN gpus g ON g.id = r.gpu_id WHERE r.bucket_ms = ?1")
            .and_then(|mut st| st.query_map([h], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .ctx("read the gpus of a bucket")?;
        for (gpu_id, uuid) in gpus {
            let (cells, _) = bucket_from_raw(&tx, cfg, gpu_id, &uuid, h)?;
            rollups.extend(cells);
        }
    }
    rollups.sort_by(|a, b| (&a.key, a.first_window_start).cmp(&(&b.key, b.first_window_start)));

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
                reason: parse_reason(&reason)?,
            });
        }
    }
    gaps.sort();
    Ok(UsageRead { rollups, gaps })
}

/// Deletes raw samples that ended before `before`, except the latest sample of each GPU; records the horizon.
pub fn prune(conn: &mut Connection, before: Timestamp) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin prune")?;
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
        let n = tx
            .prepare_cached("DELETE FROM gpu_samples WHERE gpu_id = ?1 AND end_ms < ?2")
            .and_then(|mut st| st.execute(params![gpu_id, before.0.min(last)]))
            .ctx("delete samples")?;
        deleted += n as u64;
    }
    let horizon = meta_get(&tx, PRUNED_BEFORE)?.map_or(before.0, |w| w.max(before.0));
    meta_set(&tx, PRUNED_BEFORE, horizon)?;
    tx.commit().ctx("commit prune")?;
    Ok(deleted)
}

/// Deployments seen in samples: the namespace and model of the series seen last.
pub fn deployments_seen(conn: &Connection) -> Result<Vec<DeploymentSeen>> {
    let rows: Vec<(String, String, String, i64, i64)> = conn
        .prepare_cached(
            "SELECT deployment_id, namespace, model, first_seen_ms, last_seen_ms FROM series ORDER BY deployment_id, last_seen_ms, id",
        )
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?.collect())
        .ctx("read series")?;
    let mut out: Vec<DeploymentSeen> = Vec::new();
    for (deployment_id, namespace, model, first, last) in rows {
        match out.last_mut() {
            Some(d) if d.deployment_id == deployment_id => {
                d.first_seen = d.first_seen.min(Timestamp(first));
                d.last_seen = d.last_seen.max(Timestamp(last));
                d.namespace = namespace;
                d.model = model;
            }
            _ => out.push(DeploymentSeen {
                deployment_id,
                namespace,
                model,
                first_seen: Timestamp(first),
                last_seen: Timestamp(last),
            }),
        }
    }
    Ok(out)
}

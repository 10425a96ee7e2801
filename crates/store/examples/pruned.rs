//! What pruning keeps of hours past the raw retention, and how fast late samples merge into them.
//!
//! 1. Bytes: a fleet's day of 15 s windows (a window in 500 missing) goes in, in order; the raw sample table's
//!    size per sample is measured; then everything is pruned, and what is kept for the pruned hours (the end
//!    sets, and the raw rows kept whole: edges and each GPU's latest) is measured per pruned sample.
//! 2. Rate: the same samples into fresh stores, in order (the reference, measured in the same run), and out of
//!    order into hours already past the retention: batches newest first (a backfill or a replayed spool racing
//!    live data), and shuffled batches (windows in random order); also newest first inside the retention (late
//!    samples recomputed from raw rows), for comparison. Last, four concurrent streams of disjoint GPUs: in time
//!    order, then each stream newest first (the same GPUs, batches newest first, 4 concurrent).
//!
//! Run: `cargo run --release -p eai-store --example pruned [-- GPUS HOURS [postgres://...]]` (defaults 50 GPUs,
//! 24 hours, SQLite only; with a PostgreSQL URL, the rates are measured there too, in scratch databases).

use eai_store::SampleStore;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, UnitInterval};
use eai_engine::time::Timestamp;
use eai_store::postgres::scratch::ScratchDb;
use eai_store::postgres::PgStore;
use eai_store::sqlite::SqliteStore;
use eai_store::Store;
use rust_decimal::Decimal;

const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z
const H: i64 = 3_600_000;

fn sample(g: i64, k: i64) -> anyhow::Result<Sample> {
    Ok(Sample {
        node: format!("gpu-node-{}", g / 8),
        gpu_uuid: format!("GPU-5e1f0c2a-4b7d-4c55-9a51-{g:012}"),
        model: "NVIDIA H100 80GB HBM3".into(),
        namespace: "eai-inference".into(),
        pod: format!("vllm-{}-7d9f8c6b5-x2k4q", g % 10),
        deployment_id: format!("vllm-{}", g % 10),
        owner: None,
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(T0 + k * 15_000),
        utilization: UnitInterval::new(Decimal::new((k * 7 + g) % 1000, 3))
            .context("utilization")?,
        memory_used_gb: NonNegative::new(Decimal::new(61_200 + (k * 13 + g) % 8_000, 3))
            .context("memory")?,
        power_w: NonNegative::new(Decimal::new(4_000 + (k * 31 + g) % 3_000, 1))
            .context("power")?,
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    })
}

/// The fleet's windows, batched as samplers send them: per batch, every GPU x 20 windows, in time order.
fn fleet(gpus: i64, hours: i64) -> anyhow::Result<Vec<Vec<Sample>>> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut batches = Vec::new();
    let windows = hours * 240;
    for start in (1..=windows).step_by(20) {
        let mut b = Vec::new();
        for k in start..(start + 20).min(windows + 1) {
            for g in 0..gpus {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if !x.is_multiple_of(500) {
                    b.push(sample(g, k)?);
                }
            }
        }
        batches.push(b);
    }
    Ok(batches)
}

async fn ingest(store: &dyn Store, batches: &[Vec<Sample>]) -> anyhow::Result<(u64, f64)> {
    let started = Instant::now();
    let mut n = 0;
    for b in batches {
        n += store.insert_samples(b.to_vec(), &audit()).await?.inserted;
    }
    Ok((n, started.elapsed().as_secs_f64()))
}

/// The fleet's batches split into `n` streams of disjoint GPUs (GPU `g` in stream `g % n`), each in the
/// batches' order: `n` samplers, or `n` clients of one replay.
fn streams(batches: &[Vec<Sample>], n: usize) -> anyhow::Result<Vec<Vec<Vec<Sample>>>> {
    let mut out = vec![Vec::with_capacity(batches.len()); n];
    for b in batches {
        let mut parts = vec![Vec::new(); n];
        for s in b {
            let g: usize = s.gpu_uuid.rsplit('-').next().unwrap_or("0").parse()?;
            parts[g % n].push(s.clone());
        }
        for (stream, part) in out.iter_mut().zip(parts) {
            stream.push(part);
        }
    }
    Ok(out)
}

/// Every stream on a task of its own, all at once; (samples stored, seconds until the last one finished).
async fn ingest_streams(
    store: &Arc<dyn Store>,
    streams: Vec<Vec<Vec<Sample>>>,
) -> anyhow::Result<(u64, f64)> {
    let started = Instant::now();
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let store = Arc::clone(store);
            tokio::spawn(async move { ingest(&*store, &stream).await })
        })
        .collect();
    let mut n = 0;
    for t in tasks {
        n += t.await??.0;
    }
    Ok((n, started.elapsed().as_secs_f64()))
}

fn shuffled(batches: &[Vec<Sample>], size: usize) -> Vec<Vec<Sample>> {
    let mut all: Vec<Sample> = batches.concat();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..all.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        all.swap(i, (x % (i as u64 + 1)) as usize);
    }
    all.chunks(size).map(<[Sample]>::to_vec).collect()
}

fn table_bytes(c: &rusqlite::Connection, table: &str) -> anyhow::Result<i64> {
    Ok(c.query_row(
        "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = ?1",
        [table],
        |r| r.get(0),
    )?)
}

/// Fresh stores of one backend, for the rate runs.
enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Backend {
    async fn fresh(&self, name: &str) -> anyhow::Result<(Arc<dyn Store>, Option<ScratchDb>)> {
        Ok(match self {
            Backend::Sqlite(dir) => (
                Arc::new(SqliteStore::open(&dir.path().join(format!("{name}.db")))?),
                None,
            ),
            Backend::Postgres(url) => {
                let db = ScratchDb::create(url).await?;
                let store = PgStore::open(db.url()).await?;
                (Arc::new(store), Some(db))
            }
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}

async fn rates(backend: &Backend, batches: &[Vec<Sample>], hours: i64) -> anyhow::Result<()> {
    let name = backend.name();
    let past = Timestamp(T0 + (hours + 24) * H);
    let (store, _db) = backend.fresh("in_order").await?;
    let (n, secs) = ingest(&*store, batches).await?;
    let reference = n as f64 / secs;
    println!("{name}.in_order_samples_per_second={reference:.0}");

    let mut newest_first = batches.to_vec();
    newest_first.reverse();
    let runs = [
        ("pruned_newest_first", newest_first.clone(), true),
        ("pruned_shuffled", shuffled(batches, 1_000), true),
        ("retained_newest_first", newest_first, false),
    ];
    for (what, sent, prune_first) in runs {
        let (store, _db) = backend.fresh(what).await?;
        if prune_first {
            // The retention has passed over every hour of the fleet before any of it arrives.
            store.prune_raw_samples(past).await?;
        }
        let (m, secs) = ingest(&*store, &sent).await?;
        anyhow::ensure!(m == n, "{what}: {m} samples stored, {n} expected");
        let rate = m as f64 / secs;
        println!(
            "{name}.{what}_samples_per_second={rate:.0} ({:.2} x in order)",
            rate / reference
        );
    }

    // Four streams of disjoint GPUs at once (issue #18's case): in time order (the reference of this pair),
    // then each stream's batches newest first, into hours still within the retention.
    let (store, _db) = backend.fresh("streams_in_order").await?;
    let (n4, secs) = ingest_streams(&store, streams(batches, 4)?).await?;
    anyhow::ensure!(
        n4 == n,
        "4 streams in order: {n4} samples stored, {n} expected"
    );
    let reference4 = n4 as f64 / secs;
    println!("{name}.in_order_4_streams_samples_per_second={reference4:.0}");
    let mut newest_first = streams(batches, 4)?;
    for s in &mut newest_first {
        s.reverse();
    }
    let (store, _db) = backend.fresh("streams_newest_first").await?;
    let (m, secs) = ingest_streams(&store, newest_first).await?;
    anyhow::ensure!(
        m == n,
        "4 streams newest first: {m} samples stored, {n} expected"
    );
    let rate = m as f64 / secs;
    println!(
        "{name}.newest_first_4_streams_samples_per_second={rate:.0} ({:.2} x 4 streams in order)",
        rate / reference4
    );
    Ok(())
}

/// The audit event of the measurement's changes.
fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("bench", "bench.load", Timestamp(T0), serde_json::json!({}))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpus: i64 = args.first().map_or(Ok(50), |a| a.parse())?;
    let hours: i64 = args.get(1).map_or(Ok(24), |a| a.parse())?;
    let pg = args.get(2).cloned();
    let batches = fleet(gpus, hours)?;
    let total: usize = batches.iter().map(Vec::len).sum();
    println!(
        "fleet: {gpus} GPUs x {hours} h of 15 s windows, a window in 500 missing: {total} samples"
    );

    // 1. Bytes.
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(&dir.path().join("bytes.db"))?;
    ingest(&store, &batches).await?;
    let c = rusqlite::Connection::open(store.path())?;
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let raw = table_bytes(&c, "gpu_samples")?;
    println!(
        "sqlite.raw_bytes_per_sample={:.1} (gpu_samples table)",
        raw as f64 / total as f64
    );
    store
        .prune_raw_samples(Timestamp(T0 + (hours + 24) * H))
        .await?;
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let kept_rows: i64 = c.query_row("SELECT COUNT(*) FROM gpu_samples", [], |r| r.get(0))?;
    let sets: i64 = c.query_row("SELECT COUNT(*) FROM pruned_ends", [], |r| r.get(0))?;
    let (ends, rows) = (
        table_bytes(&c, "pruned_ends")?,
        table_bytes(&c, "gpu_samples")?,
    );
    println!(
        "sqlite.pruned_kept_bytes_per_sample={:.2} (end sets {ends} bytes in {sets} rows, {kept_rows} raw rows kept whole in {rows} bytes: {:.1} % of the raw cost)",
        (ends + rows) as f64 / total as f64,
        100.0 * (ends + rows) as f64 / raw as f64
    );
    drop(c);

    // 2. Rates.
    rates(&Backend::Sqlite(tempfile::tempdir()?), &batches, hours).await?;
    if let Some(url) = pg {
        rates(&Backend::Postgres(url), &batches, hours).await?;
    }
    Ok(())
}

//! Measures what a raw sample costs on disk: 100,000 samples of 8 GPUs every 15 s written into a fresh SQLite
//! file the way a sampler pushes them (batches of 8 GPUs x 30 windows), the WAL checkpointed, the file size
//! divided by the rows. Run: `cargo run --release -p eai-store --example bytes_per_sample`.

use eai_store::SampleStore;
use std::time::Instant;

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, UnitInterval};
use eai_engine::time::Timestamp;
use eai_store::sqlite::SqliteStore;
use rust_decimal::Decimal;

const GPUS: i64 = 8;
const SAMPLES: i64 = 100_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

fn sample(g: i64, k: i64) -> anyhow::Result<Sample> {
    Ok(Sample {
        node: format!("gpu-node-{}", g / 4),
        gpu_uuid: format!("GPU-5e1f0c2a-4b7d-4c55-9a51-2f3e6d7c9b1{g}"),
        model: "NVIDIA H100 80GB HBM3".into(),
        namespace: "eai-inference".into(),
        pod: "vllm-llama-70b-7d9f8c6b5-x2k4q".into(),
        deployment_id: "vllm-llama-70b".into(),
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

/// The audit event of the measurement's changes.
fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("bench", "bench.load", Timestamp(T0), serde_json::json!({}))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(&dir.path().join("eai.db"))?;
    let mut all = Vec::with_capacity(SAMPLES as usize);
    for k in 1..=SAMPLES / GPUS {
        for g in 0..GPUS {
            all.push(sample(g, k)?);
        }
    }
    let started = Instant::now();
    for batch in all.chunks(8 * 30) {
        store.insert_samples(batch.to_vec(), &audit()).await?;
    }
    let elapsed = started.elapsed();

    let c = rusqlite::Connection::open(store.path())?;
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let rows: i64 = c.query_row("SELECT COUNT(*) FROM gpu_samples", [], |r| r.get(0))?;
    let rollups: i64 = c.query_row("SELECT COUNT(*) FROM rollups", [], |r| r.get(0))?;
    let file = std::fs::metadata(store.path())?.len();
    let table: Option<i64> = c
        .query_row(
            "SELECT SUM(pgsize) FROM dbstat WHERE name = 'gpu_samples'",
            [],
            |r| r.get(0),
        )
        .ok();
    println!(
        "raw samples:        {rows} ({GPUS} GPUs every 15 s, {} hours)",
        SAMPLES / GPUS * 15 / 3600
    );
    println!("rollup rows:        {rollups}");
    println!("file after checkpoint: {file} bytes");
    println!(
        "bytes per raw sample:  {:.1} (whole file)",
        file as f64 / rows as f64
    );
    if let Some(t) = table {
        println!(
            "bytes per raw sample:  {:.1} (gpu_samples table alone)",
            t as f64 / rows as f64
        );
    }
    println!(
        "ingest: {:.2} s, {:.0} samples/s",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

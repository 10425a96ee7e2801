//! Ingest throughput of the PostgreSQL store, side by side with a plain binary `COPY` of the same rows into a
//! scratch table of the same shape (same columns, same primary key) in the same database and run.
//!
//! ```sh
//! cargo run --release -p eai-store --example pg_ingest            # server: EAI_TEST_POSTGRES_URL or local
//! cargo run --release -p eai-store --example pg_ingest -- 64 1500 # GPUs, 15 s windows per GPU
//! ```
//!
//! The store's figure includes everything an acknowledged batch costs: encoding, interning GPUs and series,
//! locking the GPUs, reading the latest samples, writing the rows, adding the rollup deltas, committing. The
//! `COPY` figure is the floor: the rows alone, already encoded, one `COPY` per batch.

use std::time::{Duration, Instant};

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, UnitInterval};
use eai_engine::time::Timestamp;
use eai_store::codec::Figures;
use eai_store::postgres::scratch::{test_server_url, ScratchDb};
use eai_store::postgres::PgStore;
use eai_store::Store;
use rust_decimal::Decimal;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;
use tokio_postgres::NoTls;

const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

/// The audit event of the measurement's changes.
fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("bench", "bench.load", Timestamp(T0), serde_json::json!({}))
}

/// `gpus` GPUs, 8 to a node, sampled every 15 s for `windows` windows; in batches of one node's `per_batch`
/// windows (a sampler's spool), in time order.
fn batches(gpus: usize, windows: i64, per_batch: i64) -> anyhow::Result<Vec<Vec<Sample>>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < windows {
        for node in 0..gpus.div_ceil(8) {
            let mut b = Vec::new();
            for k in start..(start + per_batch).min(windows) {
                for g in (node * 8)..((node + 1) * 8).min(gpus) {
                    b.push(sample(g, k)?);
                }
            }
            out.push(b);
        }
        start += per_batch;
    }
    Ok(out)
}

fn sample(g: usize, k: i64) -> anyhow::Result<Sample> {
    let gi = i64::try_from(g)?;
    Ok(Sample {
        node: format!("gpu-node-{}", g / 8),
        gpu_uuid: format!("GPU-5e1f0c2a-4b7d-4c55-9a51-{g:012}"),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("vllm-{}-0", g / 16),
        deployment_id: format!("vllm-{}", g / 16),
        owner: None,
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(T0 + (k + 1) * 15_000),
        utilization: UnitInterval::new(Decimal::new((k * 7 + gi) % 1000, 3))
            .context("utilization")?,
        memory_used_gb: NonNegative::new(Decimal::new(612 + (k % 50), 1)).context("memory")?,
        power_w: NonNegative::new(Decimal::new(4000 + (k % 1200), 1)).context("power")?,
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
    })
}

/// One COPY per batch, each in its own transaction, of the encoded rows into a table shaped like
/// `eai.gpu_samples`.
async fn copy_baseline(url: &str, batches: &[Vec<Sample>]) -> anyhow::Result<Duration> {
    let (mut c, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    c.batch_execute(
        "CREATE TABLE public.copy_baseline (gpu_id bigint NOT NULL, end_ms bigint NOT NULL, tenant_id uuid NOT NULL, \
         series_id bigint NOT NULL, window_ms bigint NOT NULL, util_e6 bigint NOT NULL, mem_e10 bigint NOT NULL, \
         power_e6 bigint NOT NULL, storage_e6 bigint NOT NULL, fraction_e6 bigint NOT NULL, PRIMARY KEY (gpu_id, end_ms))",
    )
    .await?;
    // Encoded up front: the baseline measures the database, not the encoding.
    let mut encoded: Vec<Vec<(i64, i64, Figures)>> = Vec::with_capacity(batches.len());
    for b in batches {
        let mut rows = Vec::with_capacity(b.len());
        for s in b {
            let gpu: i64 = s.gpu_uuid.rsplit('-').next().unwrap_or("0").parse()?;
            rows.push((gpu + 1, s.end.0, Figures::encode(s)?));
        }
        encoded.push(rows);
    }
    let types = [
        Type::INT8,
        Type::INT8,
        Type::UUID,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
        Type::INT8,
    ];
    let tenant = uuid::Uuid::nil();
    let started = Instant::now();
    for rows in &encoded {
        let tx = c.transaction().await?;
        let sink = tx
            .copy_in("COPY public.copy_baseline FROM STDIN (FORMAT binary)")
            .await?;
        let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &types));
        for (gpu, end, f) in rows {
            writer
                .as_mut()
                .write(&[
                    gpu,
                    end,
                    &tenant,
                    &1i64,
                    &f.window_ms,
                    &f.util_e6,
                    &f.mem_e10,
                    &f.power_e6,
                    &f.storage_e6,
                    &f.fraction_e6,
                ])
                .await?;
        }
        writer.finish().await?;
        tx.commit().await?;
    }
    Ok(started.elapsed())
}

async fn store_ingest(url: &str, batches: &[Vec<Sample>]) -> anyhow::Result<Duration> {
    let store = PgStore::open(url).await?;
    let started = Instant::now();
    for b in batches {
        store.insert_samples(b, &audit()).await?;
    }
    Ok(started.elapsed())
}

async fn run(gpus: usize, windows: i64, per_batch: i64) -> anyhow::Result<()> {
    let server = test_server_url();
    let bs = batches(gpus, windows, per_batch)?;
    let rows: usize = bs.iter().map(Vec::len).sum();
    let batch_size = bs.first().map_or(0, Vec::len);

    let db = ScratchDb::create(&server).await?;
    let store = store_ingest(db.url(), &bs).await.context("store ingest")?;
    let copy = copy_baseline(db.url(), &bs)
        .await
        .context("COPY baseline")?;
    drop(db);

    let rate = |d: Duration| rows as f64 / d.as_secs_f64();
    println!(
        "{rows} samples ({gpus} GPUs x {windows} windows) in {} batches of {batch_size}:",
        bs.len()
    );
    println!(
        "  PgStore::insert_samples  {:>8.3} s  {:>10.0} samples/s",
        store.as_secs_f64(),
        rate(store)
    );
    println!(
        "  plain binary COPY        {:>8.3} s  {:>10.0} samples/s",
        copy.as_secs_f64(),
        rate(copy)
    );
    println!(
        "  store / COPY throughput  {:>8.2}",
        rate(store) / rate(copy)
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpus: usize = args.first().map_or(Ok(64), |a| a.parse())?;
    let windows: i64 = args.get(1).map_or(Ok(1500), |a| a.parse())?;
    // A sampler's spool (8 GPUs x 30 windows = 240 samples), then the largest batch the API accepts.
    run(gpus, windows, 30).await?;
    run(gpus, windows, 1250).await?;
    Ok(())
}

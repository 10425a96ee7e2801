//! Ingest throughput of the PostgreSQL store, side by side with a plain binary `COPY` of the same rows into a
//! scratch table of the same shape (same columns, same primary key) in the same database and run.
//!
//! ```sh
//! cargo run --release -p eai-store --example pg_ingest            # server: EAI_TEST_POSTGRES_URL or local
//! cargo run --release -p eai-store --example pg_ingest -- 64 1500 # GPUs, 15 s windows per GPU
//! cargo run --release -p eai-store --example pg_ingest -- 64 1500 30 125 1250 # and windows per batch
//! ```
//!
//! The store's figure includes everything an acknowledged batch costs: encoding, interning GPUs and series,
//! locking the GPUs, reading the latest samples, writing the rows, adding the rollup deltas, committing. The
//! `COPY` figure is the floor: the rows alone, already encoded, one `COPY` per batch.

use eai_store::SampleStore;
use std::time::{Duration, Instant};

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, UnitInterval};
use eai_engine::time::Timestamp;
use eai_store::codec::Figures;
use eai_store::postgres::scratch::{test_server_url, ScratchDb};
use eai_store::postgres::PgStore;
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
        share_method: Default::default(),
    })
}

/// The encoded rows of a batch: (GPU id, end, figures).
type Encoded = Vec<(i64, i64, Figures)>;

fn encode(batches: &[Vec<Sample>]) -> anyhow::Result<Vec<Encoded>> {
    let mut encoded = Vec::with_capacity(batches.len());
    for b in batches {
        let mut rows = Vec::with_capacity(b.len());
        for s in b {
            let gpu: i64 = s.gpu_uuid.rsplit('-').next().unwrap_or("0").parse()?;
            rows.push((gpu + 1, s.end.0, Figures::encode(s)?));
        }
        encoded.push(rows);
    }
    Ok(encoded)
}

const COLS: &str = "(gpu_id bigint NOT NULL, end_ms bigint NOT NULL, tenant_id uuid NOT NULL, \
     series_id bigint NOT NULL, window_ms bigint NOT NULL, util_e6 bigint NOT NULL, mem_e10 bigint NOT NULL, \
     power_e6 bigint NOT NULL, storage_e6 bigint NOT NULL, fraction_e6 bigint NOT NULL";

/// The types of [`COLS`]: all `bigint` but the tenant.
fn types() -> Vec<Type> {
    let mut t = vec![Type::INT8; 10];
    t[2] = Type::UUID;
    t
}

/// How the rows of a batch reach a table shaped like `eai.gpu_samples` (same columns, same primary key).
#[derive(Clone, Copy)]
enum Way {
    /// One binary `COPY` into the table: the floor.
    Copy,
    /// One `INSERT … SELECT FROM unnest($1 … $10)` of ten arrays: what the store sends.
    Unnest,
    /// A binary `COPY` into a session-private temporary table, then one `INSERT … SELECT` from it (what row level
    /// security allows in place of `COPY`, which it refuses).
    Staged,
}

async fn copy_rows(
    tx: &tokio_postgres::Transaction<'_>,
    table: &str,
    rows: &Encoded,
) -> anyhow::Result<()> {
    let tenant = uuid::Uuid::nil();
    let sink = tx
        .copy_in(&format!("COPY {table} FROM STDIN (FORMAT binary)"))
        .await?;
    let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &types()));
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
    Ok(())
}

/// Each batch in its own transaction, the rows encoded up front (this measures the database, not the encoding).
async fn baseline(url: &str, encoded: &[Encoded], way: Way) -> anyhow::Result<Duration> {
    let (mut c, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS public.copy_baseline; CREATE TABLE public.copy_baseline {COLS}, PRIMARY KEY (gpu_id, end_ms)); \
         CREATE TEMP TABLE stage {COLS}) ON COMMIT DELETE ROWS"
    ))
    .await?;
    let unnest = c
        .prepare(
            "INSERT INTO public.copy_baseline SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], \
             $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])",
        )
        .await?;
    let staged = c
        .prepare("INSERT INTO public.copy_baseline SELECT * FROM pg_temp.stage")
        .await?;
    let started = Instant::now();
    for rows in encoded {
        let tx = c.transaction().await?;
        match way {
            Way::Copy => copy_rows(&tx, "public.copy_baseline", rows).await?,
            Way::Staged => {
                copy_rows(&tx, "pg_temp.stage", rows).await?;
                tx.execute(&staged, &[]).await?;
            }
            Way::Unnest => {
                let mut ints: [Vec<i64>; 9] = Default::default();
                for (gpu, end, f) in rows {
                    for (c, v) in ints.iter_mut().zip(f.row(*gpu, *end, 1)) {
                        c.push(v);
                    }
                }
                let tenants = vec![uuid::Uuid::nil(); rows.len()];
                let [a, b, d, e, f, g, h, i, j] = &ints;
                tx.execute(&unnest, &[a, b, &tenants, d, e, f, g, h, i, j])
                    .await?;
            }
        }
        tx.commit().await?;
    }
    Ok(started.elapsed())
}

async fn store_ingest(url: &str, batches: &[Vec<Sample>]) -> anyhow::Result<Duration> {
    let store = PgStore::open(url).await?;
    let started = Instant::now();
    for b in batches {
        store.insert_samples(b.to_vec(), &audit()).await?;
    }
    Ok(started.elapsed())
}

async fn run(gpus: usize, windows: i64, per_batch: i64) -> anyhow::Result<()> {
    let server = test_server_url();
    let bs = batches(gpus, windows, per_batch)?;
    let rows: usize = bs.iter().map(Vec::len).sum();
    let batch_size = bs.first().map_or(0, Vec::len);

    // The store twice: as it runs (large batches staged), and on a database where the service role may not
    // create temporary tables (every batch a multi-row insert).
    let plain = ScratchDb::create(&server).await?;
    let (c, connection) = tokio_postgres::connect(plain.url(), NoTls).await?;
    tokio::spawn(connection);
    c.batch_execute(&format!(
        "REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC",
        plain.name()
    ))
    .await?;
    let unstaged = store_ingest(plain.url(), &bs)
        .await
        .context("store ingest, unstaged")?;
    drop(plain);
    let db = ScratchDb::create(&server).await?;
    let store = store_ingest(db.url(), &bs).await.context("store ingest")?;
    let encoded = encode(&bs)?;
    let mut ways = Vec::new();
    for (name, way) in [
        ("plain binary COPY", Way::Copy),
        ("INSERT ... unnest (store's)", Way::Unnest),
        ("COPY to temp + INSERT SELECT", Way::Staged),
    ] {
        let took = baseline(db.url(), &encoded, way)
            .await
            .with_context(|| format!("baseline {name}"))?;
        ways.push((name, took));
    }
    drop(db);

    let rate = |d: Duration| rows as f64 / d.as_secs_f64();
    println!(
        "{rows} samples ({gpus} GPUs x {windows} windows) in {} batches of {batch_size}:",
        bs.len()
    );
    let copy = ways[0].1;
    println!(
        "  PgStore::insert_samples       {:>8.3} s  {:>10.0} samples/s  {:>5.2} x COPY",
        store.as_secs_f64(),
        rate(store),
        rate(store) / rate(copy)
    );
    println!(
        "  ... without temporary tables  {:>8.3} s  {:>10.0} samples/s  {:>5.2} x COPY",
        unstaged.as_secs_f64(),
        rate(unstaged),
        rate(unstaged) / rate(copy)
    );
    for (name, took) in &ways {
        println!(
            "  {name:<29} {:>8.3} s  {:>10.0} rows/s     {:>5.2} x COPY",
            took.as_secs_f64(),
            rate(*took),
            rate(*took) / rate(copy)
        );
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpus: usize = args.first().map_or(Ok(64), |a| a.parse())?;
    let windows: i64 = args.get(1).map_or(Ok(1500), |a| a.parse())?;
    // Windows per batch: a sampler's spool (8 GPUs x 30 windows = 240 samples), then the largest batch the API
    // accepts (10,000); or as given.
    let per_batch: Vec<i64> = match args.get(2..) {
        Some(more) if !more.is_empty() => {
            more.iter().map(|a| a.parse()).collect::<Result<_, _>>()?
        }
        _ => vec![30, 1250],
    };
    for p in per_batch {
        run(gpus, windows, p).await?;
    }
    Ok(())
}

//! What a fleet costs each store, for SCALING.md: a fleet's hours of 15 s windows go in the way samplers push them
//! (every GPU x 20 windows a batch, one writer: about one core of the store's work), into a fresh SQLite file, a
//! fresh PostgreSQL database (with a URL) and, copied by the replica backfill, a throwaway ClickHouse server (with
//! `ch`). Each store's bytes are then read table by table (SQLite `dbstat`, PostgreSQL `pg_total_relation_size`
//! with indexes and TOAST, ClickHouse `system.parts` after `OPTIMIZE … FINAL`) and divided by the raw samples and
//! the per-GPU hourly rollup rows.
//!
//! Run: `cargo run --release -p eai-store --features test-support --example sizing -- [GPUS HOURS [postgres://… | -] [ch]]`
//! (defaults 400 GPUs, 6 hours, SQLite only).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, UnitInterval};
use eai_engine::time::Timestamp;
use eai_store::clickhouse::scratch::ScratchClickHouse;
use eai_store::clickhouse::{backfill, ClickHouse};
use eai_store::postgres::scratch::ScratchDb;
use eai_store::postgres::PgStore;
use eai_store::sqlite::SqliteStore;
use eai_store::Store;
use rust_decimal::Decimal;

const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z
const H: i64 = 3_600_000;
/// GPUs per deployment (a node of 8).
const PER_DEPLOYMENT: i64 = 8;

fn sample(g: i64, k: i64) -> anyhow::Result<Sample> {
    let d = g / PER_DEPLOYMENT;
    Ok(Sample {
        node: format!("gpu-node-{d:04}"),
        gpu_uuid: format!("GPU-5e1f0c2a-4b7d-4c55-9a51-{g:012}"),
        model: "NVIDIA H100 80GB HBM3".into(),
        namespace: "eai-inference".into(),
        pod: format!("vllm-{d:04}-7d9f8c6b5-x2k4q"),
        deployment_id: format!("vllm-{d:04}"),
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

/// Every GPU x 20 windows a batch, in time order.
fn fleet(gpus: i64, hours: i64) -> anyhow::Result<Vec<Vec<Sample>>> {
    let windows = hours * 240;
    let mut batches = Vec::new();
    for start in (1..=windows).step_by(20) {
        let mut b = Vec::new();
        for k in start..(start + 20).min(windows + 1) {
            for g in 0..gpus {
                b.push(sample(g, k)?);
            }
        }
        batches.push(b);
    }
    Ok(batches)
}

fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("bench", "bench.load", Timestamp(T0), serde_json::json!({}))
}

/// Samples stored and seconds taken, one writer.
async fn ingest(store: &dyn Store, batches: &[Vec<Sample>]) -> anyhow::Result<(u64, f64)> {
    let started = Instant::now();
    let mut n = 0;
    for b in batches {
        n += store.insert_samples(b.to_vec(), &audit()).await?.inserted;
    }
    Ok((n, started.elapsed().as_secs_f64()))
}

/// Prints one store's tables (bytes, share) and its bytes per sample and per rollup row.
fn report(store: &str, tables: &BTreeMap<String, i64>, samples: u64, rollups: u64) {
    let total: i64 = tables.values().sum();
    println!("\n{store}: {total} bytes in all");
    for (t, b) in tables.iter().filter(|(_, b)| **b > 0) {
        println!("  {t:<28} {b:>12} bytes");
    }
    let per = |t: &str, n: u64| tables.get(t).map_or(0.0, |b| *b as f64 / n.max(1) as f64);
    println!(
        "  per raw sample: {:.1} bytes (all tables) / {:.1} (samples table); per rollup row: {:.1} bytes",
        total as f64 / samples.max(1) as f64,
        per("gpu_samples", samples),
        per(rollups_table(store), rollups),
    );
}

/// The per-GPU hourly rollups' table on each store.
fn rollups_table(store: &str) -> &'static str {
    if store == "clickhouse" {
        "gpu_rollups"
    } else {
        "rollups"
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpus: i64 = args.first().map_or(Ok(400), |a| a.parse())?;
    let hours: i64 = args.get(1).map_or(Ok(6), |a| a.parse())?;
    let pg = args.get(2).filter(|u| u.starts_with("postgres"));
    let with_ch = args.iter().any(|a| a == "ch");
    let batches = fleet(gpus, hours)?;
    let samples: u64 = batches.iter().map(|b| b.len() as u64).sum();
    let rollups = (gpus * hours) as u64;
    println!(
        "fleet: {gpus} GPUs in {} deployments, {hours} h of 15 s windows: {samples} samples, {rollups} GPU-hour rollups",
        gpus / PER_DEPLOYMENT
    );

    // SQLite.
    let dir = tempfile::tempdir()?;
    let sqlite = SqliteStore::open(&dir.path().join("sizing.db"))?;
    let (n, secs) = ingest(&sqlite, &batches).await?;
    println!(
        "sqlite: {n} samples in {secs:.2} s, {:.0} samples/s (one writer)",
        n as f64 / secs
    );
    let c = rusqlite::Connection::open(sqlite.path())?;
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let mut tables = BTreeMap::new();
    let mut q = c.prepare(
        "SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name GROUP BY m.tbl_name",
    )?;
    for row in q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (t, b) = row?;
        tables.insert(t, b);
    }
    report("sqlite", &tables, samples, rollups);

    // PostgreSQL.
    if let Some(url) = pg {
        let db = ScratchDb::create(url).await?;
        let store = PgStore::open(db.url()).await?;
        let (n, secs) = ingest(&store, &batches).await?;
        println!(
            "\npostgres: {n} samples in {secs:.2} s, {:.0} samples/s (one writer)",
            n as f64 / secs
        );
        let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        // As ingested (dead row versions of the rollups updated batch after batch included, as autovacuum
        // leaves them), then compacted (VACUUM FULL): the live rows alone.
        for (label, vacuum) in [
            ("postgres", "VACUUM ANALYZE"),
            ("postgres, compacted", "VACUUM FULL"),
        ] {
            client.batch_execute(vacuum).await?;
            client.batch_execute("CHECKPOINT").await?;
            let mut tables = BTreeMap::new();
            for r in client
                .query(
                    "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c \
                     JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')",
                    &[],
                )
                .await?
            {
                tables.insert(r.get::<_, String>(0), r.get::<_, i64>(1));
            }
            report(label, &tables, samples, rollups);
        }
        drop(store);
    }

    // ClickHouse: the SQLite store copied by the replica backfill, merged, then measured.
    if with_ch {
        let server = ScratchClickHouse::start()
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let ch = ClickHouse::from_url(&server.url("eai"))?;
        ch.migrate().await?;
        let started = Instant::now();
        let done = backfill(
            &sqlite,
            &ch,
            Timestamp(T0),
            Timestamp(T0 + (hours + 1) * H),
            6 * H,
            |_| {},
        )
        .await?;
        println!(
            "\nclickhouse: backfilled {} rows in {:.2} s",
            done.rows(),
            started.elapsed().as_secs_f64()
        );
        let db = ch.database().to_string();
        let mut tables = BTreeMap::new();
        for t in ["gpu_samples", "gpu_rollups", "gpu_gaps", "usage_events"] {
            // Tables by their physical names where they differ (the events' table).
            let physical = eai_store::clickhouse::physical(t);
            ch.exec(&format!("OPTIMIZE TABLE {db}.{physical} FINAL"))
                .await
                .ok();
        }
        for r in ch
            .select(&format!(
                "SELECT table, toString(sum(bytes_on_disk)) AS bytes FROM system.parts \
                 WHERE database = '{db}' AND active GROUP BY table"
            ))
            .await?
        {
            let t = r["table"].as_str().unwrap_or_default().to_string();
            let b: i64 = r["bytes"].as_str().unwrap_or("0").parse()?;
            tables.insert(t, b);
        }
        report("clickhouse", &tables, samples, rollups);
    }
    Ok(())
}

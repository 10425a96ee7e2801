//! What an allocation of a month costs to read from the PostgreSQL store: `PgStore::usage_for` over a synthetic
//! month of a fleet, written through the store API into a scratch database, next to the rows the read would
//! have to move without group rollups and claims (the per-GPU rollups and the usage events of the month,
//! fetched with plain SQL on the same server).
//!
//! ```sh
//! cargo run --release -p eai-store --example pg_read                 # 1,000 GPUs, 720 hours
//! cargo run --release -p eai-store --example pg_read -- 100 48       # GPUs, hours
//! ```
//!
//! The fleet: GPUs in deployments of 20 (a fifth of them dedicated to a tenant, the rest shared), one sample per
//! GPU and hour (a one-hour window, the longest there is: the same rollup rows as 240 samples of 15 s, for a
//! 240th of the ingest). Three tenants post one usage event per shared deployment and hour. At 1,000 GPUs and
//! 720 hours: 720,000 per-GPU rollups, 36,000 group rollups, 86,400 events and claims.

use eai_store::{SampleStore, UsageStore};
use std::time::{Duration, Instant};

use anyhow::Context;
use eai_engine::domain::{GpuFraction, NonNegative, Sample, TenantId, UnitInterval, UsageEvent};
use eai_engine::time::Timestamp;
use eai_store::postgres::scratch::{test_server_url, ScratchDb};
use eai_store::postgres::PgStore;
use rust_decimal::Decimal;
use tokio_postgres::NoTls;
use uuid::Uuid;

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z

/// The audit event of the measurement's changes.
fn audit() -> eai_store::AuditDraft {
    eai_store::AuditDraft::system("bench", "bench.load", Timestamp(T0), serde_json::json!({}))
}
const PER_DEPLOYMENT: usize = 20;

fn tenant(n: u8) -> TenantId {
    TenantId(Uuid::from_bytes([n; 16]))
}

fn sample(g: usize, hour: i64) -> anyhow::Result<Sample> {
    let dep = g / PER_DEPLOYMENT;
    Ok(Sample {
        node: format!("gpu-node-{}", g / 8),
        gpu_uuid: format!("GPU-5e1f0c2a-4b7d-4c55-9a51-{g:012}"),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("vllm-{dep}-0"),
        deployment_id: format!("vllm-{dep}"),
        // One deployment in five is dedicated.
        owner: dep
            .is_multiple_of(5)
            .then(|| tenant(10 + u8::try_from(dep % 200).unwrap_or(0))),
        window_ms: eai_engine::domain::WindowMs::new(H).expect("a window"),
        end: Timestamp(T0 + (hour + 1) * H),
        utilization: UnitInterval::new(Decimal::new(i64::try_from((g * 7 + 3) % 1000)?, 3))
            .context("utilization")?,
        memory_used_gb: NonNegative::new(Decimal::new(612 + hour % 50, 1)).context("memory")?,
        power_w: NonNegative::new(Decimal::new(4000 + hour % 1200, 1)).context("power")?,
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    })
}

fn event(t: u8, dep: usize, hour: i64) -> anyhow::Result<UsageEvent> {
    let mut units = std::collections::BTreeMap::new();
    let n = Decimal::from(1000 + (hour * 37 + i64::from(t)) % 5000);
    units.insert(
        "tokens_in".to_string(),
        NonNegative::new(n).context("tokens")?,
    );
    Ok(UsageEvent {
        event_id: Uuid::new_v4(),
        tenant_id: tenant(t),
        usage_type: "llm_tokens".into(),
        source: "gateway".into(),
        occurred_at: Timestamp(T0 + hour * H + 60_000 * i64::from(t)),
        deployment_id: Some(format!("vllm-{dep}")),
        model: None,
        units,
        cost: None,
        allocation_policy_id: None,
        project: None,
        agent_id: None,
        run_id: None,
    })
}

/// Fills the store; returns the time ingest and the usage upserts took.
async fn fill(store: &PgStore, gpus: usize, hours: i64) -> anyhow::Result<(Duration, Duration)> {
    let started = Instant::now();
    let mut last = Instant::now();
    for hour in 0..hours {
        let batch = (0..gpus)
            .map(|g| sample(g, hour))
            .collect::<anyhow::Result<Vec<_>>>()?;
        store.insert_samples(batch.to_vec(), &audit()).await?;
        if (hour + 1) % 24 == 0 {
            eprintln!(
                "  hour {}: {:.0} ms per batch",
                hour + 1,
                ms(last.elapsed()) / 24.0
            );
            last = Instant::now();
        }
    }
    let ingest = started.elapsed();
    let started = Instant::now();
    let mut events = Vec::new();
    for hour in 0..hours {
        for dep in (0..gpus.div_ceil(PER_DEPLOYMENT)).filter(|d| !d.is_multiple_of(5)) {
            for t in 1..=3 {
                events.push(event(t, dep, hour)?);
            }
        }
    }
    for chunk in events.chunks(1000) {
        store.upsert_usage_events(chunk, &audit()).await?;
    }
    Ok((ingest, started.elapsed()))
}

/// The rows a read without group rollups and claims moves: every per-GPU rollup (decimals decoded) and every
/// usage event body of the period, with plain SQL on the platform path.
async fn per_gpu_baseline(
    url: &str,
    from: i64,
    to: i64,
) -> anyhow::Result<(Duration, usize, usize)> {
    let (mut c, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    c.batch_execute("SET ROLE eai_app").await?;
    let started = Instant::now();
    let tx = c.build_transaction().read_only(true).start().await?;
    tx.execute("SELECT set_config('app.platform', 'on', true)", &[])
        .await?;
    let rollups = tx
        .query(
            "SELECT g.uuid, r.bucket_ms, r.deployment_id, r.tenant_id, r.model, r.first_window_start_ms, \
             r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
             r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds \
             FROM eai.rollups r JOIN eai.gpus g ON g.id = r.gpu_id WHERE r.bucket_ms >= $1 AND r.bucket_ms < $2",
            &[&from, &to],
        )
        .await?;
    let mut sum = Decimal::ZERO;
    for r in &rollups {
        for i in 9..15 {
            sum += r.try_get::<_, Decimal>(i)?;
        }
    }
    let events = tx
        .query(
            "SELECT body::text FROM eai.usage_events WHERE occurred_at_ms >= $1 AND occurred_at_ms < $2",
            &[&from, &to],
        )
        .await?;
    tx.commit().await?;
    std::hint::black_box(sum);
    Ok((started.elapsed(), rollups.len(), events.len()))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn run(gpus: usize, hours: i64) -> anyhow::Result<()> {
    let db = ScratchDb::create(&test_server_url()).await?;
    let store = PgStore::open(db.url()).await?;
    let (ingest, usage) = fill(&store, gpus, hours).await?;
    let samples = gpus as f64 * hours as f64;
    println!(
        "filled {gpus} GPUs x {hours} hours: ingest {:.1} s ({:.0} samples/s, batches of {gpus}), usage events {:.1} s",
        ingest.as_secs_f64(),
        samples / ingest.as_secs_f64(),
        usage.as_secs_f64()
    );
    let (from, to) = (Timestamp(T0), Timestamp(T0 + hours * H));

    let mut times = Vec::new();
    let mut rows = (0, 0, 0);
    for _ in 0..7 {
        let started = Instant::now();
        let read = store.allocation_usage(from, to, &[]).await?;
        times.push(started.elapsed());
        rows = (read.rollups.len(), read.claims.len(), read.gaps.len());
    }
    times.sort();
    let med = times[times.len() / 2];
    println!(
        "usage_for({hours} h): {} group rollups, {} claims, {} gaps; min {:.1} ms, median {:.1} ms, max {:.1} ms \
         ({:.0} rows/s at the median)",
        rows.0,
        rows.1,
        rows.2,
        ms(times[0]),
        ms(med),
        ms(times[times.len() - 1]),
        (rows.0 + rows.1) as f64 / med.as_secs_f64()
    );

    let started = Instant::now();
    let read = store
        .allocation_usage(from, to, &[Timestamp(T0 + hours / 2 * H + 1)])
        .await?;
    println!(
        "usage_for({hours} h) with one exact hour: {} rollups and cells, {:.1} ms",
        read.rollups.len(),
        ms(started.elapsed())
    );

    let mut base = Vec::new();
    let mut base_rows = (0, 0);
    for _ in 0..3 {
        let (d, r, e) = per_gpu_baseline(db.url(), from.0, to.0).await?;
        base.push(d);
        base_rows = (r, e);
    }
    base.sort();
    println!(
        "without groups and claims, the same period is {} per-GPU rollups and {} events: plain SQL fetch \
         (decimals decoded, nothing else) median {:.1} ms",
        base_rows.0,
        base_rows.1,
        ms(base[1])
    );
    drop(store);
    if std::env::var_os("EAI_KEEP_DB").is_some() {
        println!("kept {} (EAI_KEEP_DB)", db.url());
        std::mem::forget(db);
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gpus: usize = args.first().map_or(Ok(1000), |a| a.parse())?;
    let hours: i64 = args.get(1).map_or(Ok(720), |a| a.parse())?;
    run(gpus, hours).await
}

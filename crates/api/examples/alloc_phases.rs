//! Where the time of an allocation goes: each read of the store and the engine, timed separately, on an
//! existing database (what `eai-gpu bench load` filled); then the breakdown by pod's own read (the per-GPU
//! rollups) and its engine step.
//!
//!     cargo run --release -p eai-api --example alloc_phases -- sqlite:///tmp/x/eai-gpu.db 30 [END]
//!
//! `EAI_READ_CACHE_ROWS` sizes the read cache as it does for `serve` (runs after the first read cached rows).
//! The engine is timed twice per run: computing every split (`allocate`) and with the settled splits kept
//! (`allocate_cached`, warm after run 0), alternated; both answers are compared.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use eai_app::allocation::exact_hours;
use eai_engine::allocate::{
    allocate, allocate_cached, AllocationConfig, AllocationInput, Period, SplitCache,
};
use eai_engine::time::Timestamp;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let url = args.get(1).cloned().unwrap_or_default();
    let days: i64 = args.get(2).map_or(30, |d| d.parse().unwrap());
    let end = match args.get(3) {
        Some(s) => Timestamp::parse_rfc3339(s).unwrap(),
        None => eai_app::clock::now().floor_to(3_600_000),
    };
    let config = eai_api::Config {
        database_url: Some(url.into()),
        read_cache_rows: std::env::var("EAI_READ_CACHE_ROWS")
            .ok()
            .map_or(eai_store::read_cache::DEFAULT_ROWS, |v| v.parse().unwrap()),
        ..eai_api::Config::default()
    };
    let store = eai_api::startup::open_store(&config).await?;
    let period = Period::new(Timestamp(end.0 - days * 86_400_000), end, 3_600_000).unwrap();
    let splits = SplitCache::default();
    for run in 0..3 {
        let t = Instant::now();
        let policies = store.policies().await?;
        let exact = exact_hours(&policies, period);
        let t_pol = t.elapsed();
        let t = Instant::now();
        let read = store
            .allocation_usage(period.from, period.to, &exact)
            .await?;
        let t_read = t.elapsed();
        let t = Instant::now();
        let input = AllocationInput {
            period,
            claims: &read.claims,
            rollups: &read.rollups,
            usage: &[],
            policies: &policies,
            gaps: &read.gaps,
            config: AllocationConfig::default(),
        };
        let a = allocate(&input);
        let t_engine = t.elapsed();
        let t = Instant::now();
        let kept = allocate_cached(&input, &splits);
        let t_kept = t.elapsed();
        assert_eq!(a, kept, "kept splits give the computed answer");
        println!(
            "run {run}: engine with kept splits {t_kept:?} ({} deployment-hours kept) vs {t_engine:?} computed",
            splits.held()
        );
        let t = Instant::now();
        let per_gpu = store
            .gpu_usage(eai_store::Scope::Platform, period.from, period.to, &exact)
            .await?;
        let t_gpu = t.elapsed();
        let t = Instant::now();
        let b = eai_engine::breakdown::breakdown(
            period,
            3_600_000,
            &policies,
            &a,
            &per_gpu,
            &[eai_engine::breakdown::Dimension::Pod],
            &[],
        );
        println!(
            "run {run}: breakdown by pod: gpu_usage {t_gpu:?} ({} rows), engine {:?} ({} rows)",
            per_gpu.len(),
            t.elapsed(),
            b.rows.len()
        );
        println!(
            "run {run}: policies {:?}, usage_for {:?} ({} rollups, {} claims), engine {:?} ({} items)",
            t_pol,
            t_read,
            read.rollups.len(),
            read.claims.len(),
            t_engine,
            a.items.len()
        );
    }
    Ok(())
}

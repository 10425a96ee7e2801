//! Engine throughput: a month of 1,000 GPUs at 15 s as hourly rollups (what the service reads), and a sample of
//! the raw path. Prints figures and ratios to a reference measured in the same run; asserts nothing.
//!
//! Run: `cargo bench -p eai-engine --bench allocate` (optionally `-- GPUS DAYS`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::str::FromStr;
use std::time::{Duration, Instant};

use eai_engine::allocate::{
    allocate, allocate_cached, allocate_samples, sum_claims, AllocationConfig, AllocationInput,
    Period, SplitCache,
};
use eai_engine::domain::{
    GpuFraction, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, Sample, TenantId,
    UnitInterval, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::rollup::{aggregate, group, Quantities, Rollup, RollupKey};
use eai_engine::series::{cells, SeriesConfig};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use uuid::Uuid;

const H: i64 = 3_600_000;
const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z
const DEPLOYMENTS: usize = 50;
const TENANTS: u8 = 20;

fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap_or_default()
}

fn tenant(n: u8) -> TenantId {
    TenantId(Uuid::from_bytes([n + 1; 16]))
}

fn sample(g: usize, end: i64, i: i64) -> Sample {
    let dep = g % DEPLOYMENTS;
    Sample {
        node: format!("gpu-node-{}", g / 8),
        gpu_uuid: format!("GPU-{g:05}"),
        model: "H100-80GB".into(),
        namespace: "eai-inference".into(),
        pod: format!("vllm-{dep}-0"),
        deployment_id: format!("vllm-{dep}"),
        owner: (dep < 10).then(|| tenant(dep as u8)),
        window_ms: eai_engine::domain::WindowMs::new(15_000).expect("a window"),
        end: Timestamp(end),
        utilization: UnitInterval::new(Decimal::new(30 + (i % 60), 2))
            .unwrap_or(UnitInterval::new(Decimal::ONE).unwrap_or_else(|| unreachable!())),
        memory_used_gb: NonNegative::new(Decimal::new(600_000 + i % 1000, 4)).unwrap_or_default(),
        power_w: NonNegative::new(Decimal::new(350_000 + (i % 200) * 100, 3)).unwrap_or_default(),
        storage_gb: NonNegative::new(d("120")).unwrap_or_default(),
        gpu_fraction: GpuFraction::WHOLE,
        share_method: Default::default(),
    }
}

fn policies() -> Vec<Policy> {
    let spec = |name: &str, pattern: &str, hourly: &str, idle| PolicySpec {
        name: name.into(),
        deployment_pattern: Glob::new(pattern).unwrap_or_else(Glob::any),
        gpu_model: None,
        currency: Currency::EUR,
        gpu_hourly_cost: NonNegative::new(d(hourly)).unwrap_or_default(),
        overhead_pct: NonNegative::new(d("18")).unwrap_or_default(),
        energy_kwh_price: NonNegative::new(d("0.21")).unwrap_or_default(),
        pue: Pue::new(d("1.4")).unwrap_or(Pue::ONE),
        storage_gb_month_price: NonNegative::new(d("0.02")).unwrap_or_default(),
        idle_capacity: idle,
        output_token_weight: Default::default(),
        enabled: true,
        effective_from: Timestamp(0),
        effective_to: None,
    };
    vec![
        Policy::new(1, spec("default", "*", "2.10", IdleCapacity::Unallocated)),
        Policy::new(
            2,
            spec("vllm-1x", "vllm-1?", "2.50", IdleCapacity::Proportional),
        ),
        Policy::new(
            3,
            spec("vllm-2x", "vllm-2*", "1.90", IdleCapacity::Unallocated),
        ),
    ]
}

fn usage(hours: i64) -> Vec<UsageEvent> {
    let mut v = Vec::new();
    for dep in 10..DEPLOYMENTS {
        for h in 0..hours {
            // Three tenants per shared deployment and hour, some hours idle.
            if (h + dep as i64) % 7 == 0 {
                continue;
            }
            for k in 0..3u8 {
                let mut units = BTreeMap::new();
                units.insert(
                    "tokens_in".to_string(),
                    NonNegative::new(Decimal::from(1000 + h * 7 + i64::from(k) * 13))
                        .unwrap_or_default(),
                );
                v.push(UsageEvent {
                    event_id: Uuid::new_v4(),
                    tenant_id: tenant((dep as u8 + k) % TENANTS),
                    usage_type: "llm_tokens".into(),
                    source: "gateway".into(),
                    occurred_at: Timestamp(T0 + h * H + 60_000 * i64::from(k)),
                    deployment_id: Some(format!("vllm-{dep}")),
                    model: None,
                    units,
                    cost: None,
                    allocation_policy_id: None,
                    project: None,
                    agent_id: None,
                    run_id: None,
                });
            }
        }
    }
    v
}

/// One real GPU-hour rollup (240 samples through the series), copied to every GPU and hour.
fn month_of_rollups(gpus: usize, hours: i64) -> Vec<Rollup> {
    let hour: Vec<Sample> = (1..=240).map(|i| sample(0, T0 + i * 15_000, i)).collect();
    let template = aggregate(cells(&hour, &SeriesConfig::default()).cells);
    let q: Quantities = template[0].q;
    let mut v = Vec::with_capacity(gpus * hours as usize);
    for g in 0..gpus {
        let dep = g % DEPLOYMENTS;
        for h in 0..hours {
            v.push(Rollup {
                key: RollupKey {
                    gpu_uuid: format!("GPU-{g:05}"),
                    deployment_id: format!("vllm-{dep}"),
                    owner: (dep < 10).then(|| tenant(dep as u8)),
                    model: "H100-80GB".into(),
                    bucket_start: Timestamp(T0 + h * H),
                    placement: Default::default(),
                },
                first_window_start: Timestamp(T0 + h * H),
                last_window_start: Timestamp(T0 + h * H + 3_585_000),
                samples: 240,
                estimated_samples: 0,
                q,
                gpus: None,
            });
        }
    }
    v
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect();
    v.sort();
    v
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with('-')).collect();
    let gpus: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let days: i64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    let hours = days * 24;
    let policies = policies();
    let events = usage(hours);
    let period = Period {
        from: Timestamp(T0),
        to: Timestamp(T0 + hours * H),
    };

    println!("# eai-engine allocation benchmark");
    println!("fleet: {gpus} GPUs, {DEPLOYMENTS} deployments (10 dedicated), {TENANTS} tenants, {days} days at 15 s");
    println!(
        "samples represented: {:.1} M; usage events: {}",
        (gpus as f64) * (hours as f64) * 240.0 / 1e6,
        events.len()
    );

    let rollups = month_of_rollups(gpus, hours);
    println!("rollups (GPU-hours): {}", rollups.len());

    // Reference: one pass summing the six decimals of every rollup, the floor of any work that reads them.
    let reference = time(7, || {
        let mut q = Quantities::default();
        for r in &rollups {
            q.add(&r.q);
        }
        q
    });
    let input = AllocationInput {
        period,
        rollups: &rollups,
        usage: &events,
        policies: &policies,
        claims: &[],
        gaps: &[],
        config: AllocationConfig::default(),
    };
    let runs = time(7, || allocate(&input));
    let a = allocate(&input);
    // What the store hands the engine: one group rollup per deployment-hour, usage as hourly claims.
    let groups = group(rollups.clone());
    let claims = sum_claims(&events);
    let grouped_input = AllocationInput {
        rollups: &groups,
        usage: &[],
        claims: &claims,
        ..input
    };
    let grouped_runs = time(7, || allocate(&grouped_input));
    assert_eq!(
        a,
        allocate(&grouped_input),
        "groups and claims give the same answer"
    );
    let (p50, r50) = (runs[runs.len() / 2], reference[reference.len() / 2]);
    println!();
    println!("| path | figure |");
    println!("|---|---|");
    println!(
        "| reference: sum 6 decimals over all rollups (p50 of 7) | {} |",
        ms(r50)
    );
    println!(
        "| allocate a month from rollups: min / p50 / max of 7 | {} / {} / {} |",
        ms(runs[0]),
        ms(p50),
        ms(runs[runs.len() - 1])
    );
    println!(
        "| ratio allocate / reference (p50) | {:.1}x |",
        p50.as_secs_f64() / r50.as_secs_f64()
    );
    println!(
        "| rollups per second | {:.2} M/s |",
        rollups.len() as f64 / p50.as_secs_f64() / 1e6
    );
    println!(
        "| samples represented per second | {:.0} M/s |",
        (rollups.len() as f64 * 240.0) / p50.as_secs_f64() / 1e6
    );
    let g50 = grouped_runs[grouped_runs.len() / 2];
    println!(
        "| allocate the month from {} deployment-hour groups + {} hourly claims: min / p50 / max of 7 | {} / {} / {} |",
        groups.len(),
        claims.len(),
        ms(grouped_runs[0]),
        ms(g50),
        ms(grouped_runs[grouped_runs.len() - 1])
    );
    println!(
        "| ratio groups / GPU-hour rollups (p50) | {:.2} |",
        g50.as_secs_f64() / p50.as_secs_f64()
    );
    // The same groups with the settled splits kept (a warm server's cache, filled by one allocation first),
    // alternated with the reference (the splits computed now) so that both see the same machine.
    let cache = SplitCache::default();
    assert_eq!(
        allocate_cached(&grouped_input, &cache),
        allocate(&grouped_input)
    );
    let (mut computed, mut kept) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        computed.extend(time(1, || allocate(&grouped_input)));
        kept.extend(time(1, || allocate_cached(&grouped_input, &cache)));
    }
    computed.sort();
    kept.sort();
    let (c50, k50) = (computed[computed.len() / 2], kept[kept.len() / 2]);
    println!(
        "| the same groups, settled splits kept ({} deployment-hours) vs computed, p50 of 7 alternated | {} vs {} ({:.2}x) |",
        cache.held(),
        ms(k50),
        ms(c50),
        k50.as_secs_f64() / c50.as_secs_f64()
    );
    println!(
        "| deployments / tenants / items in the answer | {} / {} / {} |",
        a.deployments.len(),
        a.tenants.len(),
        a.items.len()
    );

    // Recommendations (SPEC §13) read every GPU-hour of the month, as the breakdown does: timed beside the
    // allocation of the same rollups.
    let per_gpu = eai_engine::gpu_usage::GpuUsage::from_rollups(&rollups).expect("compact rows");
    let rec_period = Period::new(period.from, period.to, H).expect("whole hours");
    let thresholds = eai_engine::recommend::Thresholds::default();
    let rec_runs = time(7, || {
        eai_engine::recommend::recommend(rec_period, &policies, &per_gpu, &thresholds)
    });
    let rec50 = rec_runs[rec_runs.len() / 2];
    println!(
        "| recommendations of the month from {} GPU-hours: min / p50 / max of 7 | {} / {} / {} |",
        per_gpu.len(),
        ms(rec_runs[0]),
        ms(rec50),
        ms(rec_runs[rec_runs.len() - 1])
    );
    println!(
        "| ratio recommendations / allocate from GPU-hour rollups (p50) | {:.2} |",
        rec50.as_secs_f64() / p50.as_secs_f64()
    );

    // Raw path on a sample: 100 GPUs for one day through series + allocation.
    let raw_gpus = 100usize;
    let raw: Vec<Sample> = (0..raw_gpus)
        .flat_map(|g| (1..=5760).map(move |i| sample(g, T0 + i * 15_000, i)))
        .collect();
    let raw_events = usage(24);
    let day = Period {
        from: Timestamp(T0),
        to: Timestamp(T0 + 24 * H),
    };
    let raw_runs = time(3, || {
        allocate_samples(
            &raw,
            &raw_events,
            &policies,
            day,
            &SeriesConfig::default(),
            AllocationConfig::default(),
        )
    });
    let raw_p50 = raw_runs[1];
    let rate = raw.len() as f64 / raw_p50.as_secs_f64();
    println!(
        "| raw path: {} samples (100 GPUs x 1 day), p50 of 3 | {} |",
        raw.len(),
        ms(raw_p50)
    );
    println!("| raw path throughput | {:.2} M samples/s |", rate / 1e6);
    println!(
        "| raw path extrapolated to the month above ({:.1} M samples) | {:.0} s |",
        (gpus as f64) * (hours as f64) * 240.0 / 1e6,
        (gpus as f64) * (hours as f64) * 240.0 / rate
    );
    println!(
        "| speed-up of rollups over raw for the month | {:.0}x |",
        ((gpus as f64) * (hours as f64) * 240.0 / rate) / p50.as_secs_f64()
    );
}

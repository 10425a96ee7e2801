//! A month of a big fleet allocated from a single ClickHouse, without loading it over HTTP first (14 min + a
//! 3.5 min backfill for 10,000 GPUs): the replica's tables are filled by ClickHouse itself (`INSERT … SELECT`
//! from `system.numbers`) with the rows `eai-gpu bench load` would leave there: 10,000 GPUs in 500 deployments
//! (the first fifth dedicated to one of 100 tenants, the others shared), one hourly window per GPU-hour (so one
//! per-GPU rollup row each: 7.2 M for 30 days), and each hour three tenants' token events on every shared
//! deployment (864,000 events).
//!
//! The primary's group rows and claims (what the outbox replicates into `gpu_groups`, `gpu_sets` and
//! `usage_claims`) are filled from those rows by ClickHouse too (`GROUP BY`), and marked complete.
//!
//! 1. Exact: the same rows are built in Rust, hour by hour, and grouped by the engine (`eai_engine::rollup::group`)
//!    and summed into claims (`claim_of`): `ClickHouse::group_rollups` and `ClickHouse::claims` over the month
//!    (the replicated rows) and their summed fallbacks must equal them row for row, and the allocation of the
//!    month from either must be the same to the cent.
//! 2. Time, p50 over RUNS: what the allocation from ClickHouse does (`group_rollups`, `gaps`, `claims` in turn,
//!    then the engine), phase by phase, and the same three reads run concurrently. References, in the same run:
//!    the summed path (`summed_group_rollups`, `summed_claims`: a replica without the marker), and the same rows
//!    in the layout of older binaries (quantities as `String`) read as those binaries did (sums of
//!    `toDecimal128(text, 15)`, `JSONEachRow` out).
//!
//! Run: `cargo run --release -p eai-store --example clickhouse_month [-- GPUS DAYS RUNS]` (defaults 10000 30 3).
//! `EAI_BENCH_CLICKHOUSE_URL=http://127.0.0.1:8123` names a running server (scripts/bench.sh passes its own), and
//! `EAI_BENCH_CLICKHOUSE_CLUSTER` the cluster it belongs to (`ONLY=chcluster scripts/bench.sh` starts one);
//! without it a scratch server is started (`clickhouse::scratch`; its 2 GB query limit is tight for the fleet).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{bail, Context};
use eai_engine::allocate::{
    allocate, claim_of, AllocationConfig, AllocationInput, Period, UsageClaim,
};
use eai_engine::domain::{
    IdleCapacity, NonNegative, Policy, PolicySpec, Pue, ShareMethod, TenantId, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::rollup::{group, Placement, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use eai_store::clickhouse::scratch::ScratchClickHouse;
use eai_store::clickhouse::{ClickHouse, ROLLUP_QUANTITIES};
use rust_decimal::Decimal;

const T0: i64 = 1_790_812_800_000; // 2026-10-01T00:00:00Z
const H: i64 = 3_600_000;
const MODEL: &str = "NVIDIA H100 80GB HBM3";

/// The fleet's shape, as `eai-gpu bench load` makes it.
#[derive(Clone, Copy)]
struct Fleet {
    gpus: i64,
    deployments: i64,
    tenants: i64,
    hours: i64,
}

impl Fleet {
    fn shared_from(&self) -> i64 {
        self.deployments / 5
    }
}

fn tenant(i: i64) -> String {
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        0xbe00_0000u32 + i as u32,
        i
    )
}

/// Hundredths of utilization of a GPU-hour (the same expression in SQL below).
fn util_pct(gpu: i64, hour: i64) -> i64 {
    (gpu * 7 + hour * 13) % 100
}

/// The per-GPU rollups of one hour, as the SQL below writes them.
fn hour_rollups(f: Fleet, hour: i64) -> anyhow::Result<Vec<Rollup>> {
    let bucket = Timestamp(T0 + hour * H);
    (0..f.gpus)
        .map(|gpu| {
            let dep = gpu % f.deployments;
            let u = util_pct(gpu, hour);
            Ok(Rollup {
                key: RollupKey {
                    gpu_uuid: format!("GPU-bench-{gpu}"),
                    deployment_id: format!("vllm-{dep}"),
                    owner: if dep < f.shared_from() {
                        Some(TenantId::from_str(&tenant(dep % f.tenants)).context("tenant")?)
                    } else {
                        None
                    },
                    model: MODEL.into(),
                    bucket_start: bucket,
                    placement: Placement::new(
                        "eai-inference",
                        &format!("vllm-{dep}-{}", gpu / f.deployments / 2),
                        &format!("gpu-node-{}", gpu / 8),
                        ShareMethod::Exclusive,
                    ),
                },
                first_window_start: bucket,
                last_window_start: bucket,
                samples: 1,
                estimated_samples: 0,
                q: Quantities {
                    gpu_seconds: Decimal::from(3600),
                    busy_gpu_seconds: Decimal::from(36 * u),
                    estimated_gpu_seconds: Decimal::ZERO,
                    memory_gb_seconds: Decimal::from(217_800),
                    energy_ws: Decimal::from((70 + 6 * u) * 3600),
                    storage_gb_seconds: Decimal::ZERO,
                },
                gpus: None,
            })
        })
        .collect()
}

/// The token events of one hour: on each shared deployment, three tenants.
fn hour_events(f: Fleet, hour: i64) -> anyhow::Result<Vec<UsageEvent>> {
    let mut out = Vec::new();
    for dep in f.shared_from()..f.deployments {
        for k in 0..3 {
            let mut units = BTreeMap::new();
            units.insert(
                "tokens_in".into(),
                NonNegative::new(Decimal::from(1000 + k * 100)).context("units")?,
            );
            units.insert(
                "tokens_out".into(),
                NonNegative::new(Decimal::from(200)).context("units")?,
            );
            out.push(UsageEvent {
                event_id: uuid::Uuid::from_u128((hour * 1_000_000 + dep * 3 + k) as u128),
                tenant_id: TenantId::from_str(&tenant((dep + k) % f.tenants)).context("tenant")?,
                usage_type: "llm_tokens".into(),
                source: "gateway".into(),
                occurred_at: Timestamp(T0 + hour * H + 60_000 * k),
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
    Ok(out)
}

/// `tenant(i)` in SQL (hex of a `UInt64` prints whole bytes: 2^48 added keeps 12 digits after its `01`).
fn tenant_sql(i: &str) -> String {
    format!(
        "concat(lower(hex(toUInt32(3187671040 + {i}))), '-0000-4000-8000-', \
         substring(lower(hex(toUInt64({i}) + 281474976710656)), 3, 12))"
    )
}

/// Fills `db`'s (current layout) rollups and events with the fleet's month.
async fn fill(ch: &ClickHouse, f: Fleet) -> anyhow::Result<()> {
    let db = ch.database();
    let (g, d) = (f.gpus, f.deployments);
    ch.exec(&format!(
        "INSERT INTO {db}.gpu_rollups SELECT {T0} + intDiv(n, {g}) * {H} AS bucket_ms, \
         concat('GPU-bench-', toString(n % {g})) AS gpu_uuid, concat('vllm-', toString(n % {g} % {d})) AS deployment_id, \
         if(n % {g} % {d} < {s}, {owner}, '') AS owner, '{MODEL}' AS model, 1 AS placed, 'eai-inference' AS namespace, \
         concat('vllm-', toString(n % {g} % {d}), '-', toString(intDiv(intDiv(n % {g}, {d}), 2))) AS pod, \
         concat('gpu-node-', toString(intDiv(n % {g}, 8))) AS node, 'exclusive' AS share, \
         bucket_ms AS first_window_start_ms, bucket_ms AS last_window_start_ms, 1 AS samples, 0 AS estimated_samples, \
         toDecimal128(3600, 15) AS gpu_seconds, \
         toDecimal128(36 * (((n % {g}) * 7 + intDiv(n, {g}) * 13) % 100), 15) AS busy_gpu_seconds, \
         toDecimal128(0, 15) AS estimated_gpu_seconds, toDecimal128(217800, 15) AS memory_gb_seconds, \
         toDecimal128((70 + 6 * (((n % {g}) * 7 + intDiv(n, {g}) * 13) % 100)) * 3600, 15) AS energy_ws, \
         toDecimal128(0, 15) AS storage_gb_seconds, 0 AS deleted, 1 AS version \
         FROM (SELECT number AS n FROM system.numbers LIMIT {rows})",
        s = f.shared_from(),
        owner = tenant_sql(&format!("(n % {g} % {d} % {})", f.tenants)),
        rows = g * f.hours,
    ))
    .await
    .context("filling the rollups")?;
    let per_hour = (d - f.shared_from()) * 3;
    ch.exec(&format!(
        "INSERT INTO {db}.usage_events_by_tenant SELECT toString(n) AS event_id, {tenant} AS tenant_id, \
         'llm_tokens' AS usage_type, 'gateway' AS source, toDateTime(intDiv(occurred_at_ms, 1000), 'UTC') AS occurred_at, \
         {T0} + intDiv(n, {per_hour}) * {H} + 60000 * (n % 3) AS occurred_at_ms, concat('vllm-', toString(dep)) AS deployment_id, \
         '' AS model_provider, '' AS model_name, \
         concat('{{\"tokens_in\":\"', toString(1000 + 100 * (n % 3)), '\",\"tokens_out\":\"200\"}}') AS units, \
         toDecimal128(1000 + 100 * (n % 3), 15) AS tokens_in, toDecimal128(200, 15) AS tokens_out, \
         toDecimal128(0, 15) AS gpu_seconds, toDecimal128(0, 15) AS gpu_memory_gb_seconds, \
         toDecimal128(0, 15) AS energy_wh, toDecimal128(0, 15) AS cost_amount, '' AS cost_currency, \
         '' AS allocation_policy_id, '' AS project, '' AS agent_id, '' AS run_id, 1 AS version \
         FROM (SELECT number AS n, {s} + intDiv(n % {per_hour}, 3) AS dep FROM system.numbers LIMIT {rows})",
        s = f.shared_from(),
        tenant = tenant_sql(&format!("((dep + n % 3) % {})", f.tenants)),
        rows = per_hour * f.hours,
    ))
    .await
    .context("filling the events")?;
    Ok(())
}

/// Fills `db`'s replicated group rows, GPU sets and claims with what the primary would hold of the rows
/// [`fill`] wrote (the sums of the per-GPU rows and of the events, as the outbox carries them), and marks them
/// complete.
async fn fill_groups(ch: &ClickHouse) -> anyhow::Result<()> {
    let db = ch.database();
    let set = "lower(hex(SHA256(arrayStringConcat(arraySort(groupArray(gpu_uuid)), '\\n'))))";
    let by_group =
        "FROM gpu_rollups FINAL WHERE deleted = 0 GROUP BY bucket_ms, deployment_id, owner, model";
    ch.exec(&format!(
        "INSERT INTO {db}.gpu_groups SELECT bucket_ms, deployment_id, owner, model, \
         min(first_window_start_ms) AS first_window_start_ms, max(last_window_start_ms) AS last_window_start_ms, \
         sum(samples) AS samples, sum(estimated_samples) AS estimated_samples, {sums}, {set} AS gpu_set, \
         0 AS deleted, 1 AS version {by_group}",
        sums = ROLLUP_QUANTITIES.map(|c| format!("sum({c}) AS {c}")).join(", ")
    ).replace("FROM gpu_rollups", &format!("FROM {db}.gpu_rollups")))
    .await
    .context("filling the groups")?;
    ch.exec(&format!(
        "INSERT INTO {db}.gpu_sets SELECT gpu_set, any(gpus) AS gpus, 1 AS version FROM \
         (SELECT {set} AS gpu_set, arraySort(groupArray(gpu_uuid)) AS gpus FROM {db}.gpu_rollups FINAL \
         WHERE deleted = 0 GROUP BY bucket_ms, deployment_id, owner, model) GROUP BY gpu_set"
    ))
    .await
    .context("filling the GPU sets")?;
    ch.exec(&format!(
        "INSERT INTO {db}.usage_claims SELECT intDiv(occurred_at_ms, {H}) * {H} AS bucket_ms, deployment_id, \
         tenant_id, sum(gpu_seconds) AS gpu_seconds, sum(tokens_in + tokens_out) AS tokens, count() AS events, \
         0 AS deleted, 1 AS version FROM {db}.usage_events_by_tenant FINAL \
         GROUP BY bucket_ms, deployment_id, tenant_id"
    ))
    .await
    .context("filling the claims")?;
    ch.mark_groups_complete().await?;
    Ok(())
}

/// The same rows in the layout of older binaries (quantities as text), in `text_db`.
async fn fill_text_layout(ch: &ClickHouse, text_db: &str) -> anyhow::Result<()> {
    let db = ch.database();
    ch.exec(&format!("DROP DATABASE IF EXISTS {text_db}"))
        .await?;
    ch.exec(&format!("CREATE DATABASE {text_db}")).await?;
    ch.exec(&format!(
        "CREATE TABLE {text_db}.gpu_rollups (bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, \
         model String, placed UInt8, namespace String, pod String, node String, share String, \
         first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, \
         gpu_seconds String, busy_gpu_seconds String, estimated_gpu_seconds String, memory_gb_seconds String, \
         energy_ws String, storage_gb_seconds String, deleted UInt8, version UInt64) \
         ENGINE = ReplacingMergeTree(version) ORDER BY (bucket_ms, gpu_uuid, deployment_id, owner, model, \
         placed, namespace, pod, node, share)"
    ))
    .await?;
    ch.exec(&format!(
        "CREATE TABLE {text_db}.usage_events_by_tenant (event_id String, tenant_id String, usage_type String, \
         source String, occurred_at DateTime('UTC'), occurred_at_ms Int64, deployment_id String, \
         model_provider String, model_name String, units String, tokens_in String, tokens_out String, \
         gpu_seconds String, gpu_memory_gb_seconds String, energy_wh String, cost_amount String, \
         cost_currency String, allocation_policy_id String, project String, agent_id String, run_id String, \
         version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (tenant_id, event_id)"
    ))
    .await?;
    // As older binaries wrote them: normalized text ('3600', not '3600.000000000000000').
    let t = |c: &str| {
        format!("replaceRegexpOne(replaceRegexpOne(toString({c}), '0+$', ''), '\\\\.$', '') AS {c}")
    };
    ch.exec(&format!(
        "INSERT INTO {text_db}.gpu_rollups SELECT bucket_ms, gpu_uuid, deployment_id, owner, model, placed, \
         namespace, pod, node, share, first_window_start_ms, last_window_start_ms, samples, estimated_samples, \
         {}, deleted, version FROM {db}.gpu_rollups",
        ROLLUP_QUANTITIES.map(t).join(", ")
    ))
    .await?;
    ch.exec(&format!(
        "INSERT INTO {text_db}.usage_events_by_tenant SELECT event_id, tenant_id, usage_type, source, occurred_at, \
         occurred_at_ms, deployment_id, model_provider, model_name, units, {}, '' AS gpu_seconds, \
         '' AS gpu_memory_gb_seconds, '' AS energy_wh, '' AS cost_amount, cost_currency, allocation_policy_id, \
         project, agent_id, run_id, version FROM {db}.usage_events_by_tenant",
        ["tokens_in", "tokens_out"].map(t).join(", ")
    ))
    .await?;
    Ok(())
}

/// The reads of older binaries on the text layout (their group and claim queries, `JSONEachRow` decoded with
/// exact decimals): the reference. Returns the rows read.
async fn text_layout_reads(
    ch: &ClickHouse,
    text_db: &str,
    p: Period,
) -> anyhow::Result<(usize, usize)> {
    let (from, to) = (p.from.0, p.to.0);
    let grouped = format!(
        "FROM {text_db}.gpu_rollups FINAL WHERE bucket_ms >= {from} AND bucket_ms < {to} AND deleted = 0 \
         GROUP BY bucket_ms, deployment_id, owner, model"
    );
    let quantities = ROLLUP_QUANTITIES;
    let sums = quantities
        .map(|c| format!("toString(sum(toDecimal128({c}, 15))) AS {c}"))
        .join(", ");
    let rows_sql = format!(
        "SELECT bucket_ms, deployment_id, owner, model, min(first_window_start_ms) AS first_window_start_ms, \
         max(last_window_start_ms) AS last_window_start_ms, sum(samples) AS samples, \
         sum(estimated_samples) AS estimated_samples, {sums}, \
         toString(cityHash64(arraySort(groupArray(gpu_uuid)))) AS gpu_set {grouped} \
         ORDER BY bucket_ms, deployment_id, owner, model"
    );
    let sets_sql = format!(
        "SELECT toString(cityHash64(gpus)) AS gpu_set, gpus FROM \
         (SELECT arraySort(groupArray(gpu_uuid)) AS gpus {grouped}) GROUP BY gpus"
    );
    let (rows, _sets) = tokio::try_join!(ch.select(&rows_sql), ch.select(&sets_sql))?;
    for r in &rows {
        for c in quantities {
            Decimal::from_str(r[c].as_str().context("a decimal")?)?;
        }
    }
    let dec = |c: &str| format!("toDecimal128(if({c} = '', '0', {c}), 6)");
    let claims = ch
        .select(&format!(
            "SELECT intDiv(occurred_at_ms, {H}) * {H} AS bucket_ms, deployment_id, tenant_id, \
             toString(sum(if(gpu_seconds = '', toDecimal128(0, 6), {gs}))) AS claimed_gpu_seconds, \
             toString(sum(if(gpu_seconds = '', {tin} + {tout}, toDecimal128(0, 6)))) AS claimed_tokens \
             FROM {text_db}.usage_events_by_tenant FINAL \
             WHERE occurred_at_ms >= {from} AND occurred_at_ms < {to} AND deployment_id != '' \
             GROUP BY bucket_ms, deployment_id, tenant_id",
            gs = dec("gpu_seconds"),
            tin = dec("tokens_in"),
            tout = dec("tokens_out"),
        ))
        .await?;
    for r in &claims {
        Decimal::from_str(r["claimed_tokens"].as_str().context("a decimal")?)?;
    }
    Ok((rows.len(), claims.len()))
}

fn policy() -> anyhow::Result<Policy> {
    let d = |s: &str| Decimal::from_str(s).context("decimal");
    Ok(Policy {
        id: "alp_1".into(),
        seq: 1,
        spec: PolicySpec {
            name: "bench-h100".into(),
            deployment_pattern: Glob::any(),
            gpu_model: None,
            currency: Currency::EUR,
            gpu_hourly_cost: NonNegative::new(d("2.10")?).context("cost")?,
            overhead_pct: NonNegative::new(d("18")?).context("overhead")?,
            energy_kwh_price: NonNegative::new(d("0.21")?).context("kwh")?,
            pue: Pue::new(d("1.4")?).context("pue")?,
            storage_gb_month_price: NonNegative::ZERO,
            idle_capacity: IdleCapacity::Unallocated,
            output_token_weight: Default::default(),
            enabled: true,
            effective_from: Timestamp(0),
            effective_to: None,
        },
    })
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<i64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().context("GPUS DAYS RUNS are numbers"))
        .collect::<anyhow::Result<_>>()?;
    let gpus = args.first().copied().unwrap_or(10_000);
    let days = args.get(1).copied().unwrap_or(30);
    let runs = args.get(2).copied().unwrap_or(3).max(1);
    let f = Fleet {
        gpus,
        deployments: (gpus / 20).max(5),
        tenants: (gpus / 100).max(3),
        hours: days * 24,
    };
    let mut _scratch = None;
    let base = match std::env::var("EAI_BENCH_CLICKHOUSE_URL") {
        Ok(u) if !u.is_empty() => u.trim_end_matches('/').to_string(),
        _ => {
            let s = ScratchClickHouse::start()
                .await
                .map_err(anyhow::Error::msg)?;
            let u = s.url("x");
            _scratch = Some(s);
            u.trim_end_matches("/x").to_string()
        }
    };
    // On a cluster (`EAI_BENCH_CLICKHOUSE_CLUSTER`, a name of the servers' `remote_servers`): the replica's
    // tables as `serve` makes them there (replicated, behind `Distributed` tables), filled through them.
    let cluster = std::env::var("EAI_BENCH_CLICKHOUSE_CLUSTER")
        .ok()
        .filter(|c| !c.is_empty());
    let ch =
        ClickHouse::from_url(&format!("{base}/eai_month"))?.with_cluster(cluster.as_deref())?;
    let on = cluster
        .as_deref()
        .map_or_else(String::new, |c| format!(" ON CLUSTER {c}"));
    ch.exec(&format!("DROP DATABASE IF EXISTS eai_month{on}"))
        .await?;
    ch.migrate().await?;
    println!(
        "fleet: {} GPUs, {} deployments, {} tenants, {} days ({} rollup rows, {} events)",
        f.gpus,
        f.deployments,
        f.tenants,
        days,
        f.gpus * f.hours,
        (f.deployments - f.shared_from()) * 3 * f.hours
    );
    let t = Instant::now();
    fill(&ch, f).await?;
    println!("fill_seconds={:.1}", t.elapsed().as_secs_f64());
    if std::env::var_os("EAI_BENCH_FILL_ONLY").is_some() {
        // For profiling queries by hand: the database `eai_month` is kept.
        return Ok(());
    }
    let t = Instant::now();
    fill_groups(&ch).await?;
    println!("fill_groups_seconds={:.1}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    fill_text_layout(&ch, "eai_month_text").await?;
    println!("fill_text_layout_seconds={:.1}", t.elapsed().as_secs_f64());

    let period = Period::new(Timestamp(T0), Timestamp(T0 + f.hours * H), H).context("period")?;
    let policies = vec![policy()?];
    let config = AllocationConfig::default();

    // 1. Exact: the engine's groups and claims of the same rows, built in Rust.
    let t = Instant::now();
    let mut expected_groups = Vec::new();
    let mut expected_claims: BTreeMap<(Timestamp, String, TenantId), UsageClaim> = BTreeMap::new();
    for hour in 0..f.hours {
        expected_groups.extend(group(hour_rollups(f, hour)?));
        for e in hour_events(f, hour)? {
            if let Some(c) = claim_of(&e) {
                let k = (c.bucket_start, c.deployment_id.clone(), c.tenant_id);
                match expected_claims.get_mut(&k) {
                    Some(x) => {
                        x.gpu_seconds += c.gpu_seconds;
                        x.tokens += c.tokens;
                    }
                    None => {
                        expected_claims.insert(k, c);
                    }
                }
            }
        }
    }
    eai_store::rollups::sort_for_read(&mut expected_groups);
    let mut expected_claims: Vec<UsageClaim> = expected_claims.into_values().collect();
    expected_claims.sort_by(|a, b| a.read_order().cmp(&b.read_order()));
    println!("expected_built_seconds={:.1}", t.elapsed().as_secs_f64());
    if !ch.groups_complete().await? {
        bail!("the replicated groups are not marked complete");
    }
    // The reference (the per-GPU rollups and the events summed) first, then what the allocation reads.
    let mut summed = ch.summed_group_rollups(period.from, period.to).await?;
    eai_store::rollups::sort_for_read(&mut summed);
    if summed != expected_groups {
        bail!("ClickHouse's summed groups differ from the engine's");
    }
    if ch.summed_claims(period.from, period.to).await? != expected_claims {
        bail!("ClickHouse's summed claims differ from the engine's");
    }
    drop(summed);
    let mut groups = ch.group_rollups(period.from, period.to).await?;
    eai_store::rollups::sort_for_read(&mut groups);
    let claims = ch.claims(period.from, period.to).await?;
    if groups != expected_groups {
        let diff = groups.iter().zip(&expected_groups).find(|(a, b)| a != b);
        bail!(
            "ClickHouse's groups differ from the engine's ({} vs {} rows); first difference: {diff:?}",
            groups.len(),
            expected_groups.len()
        );
    }
    if claims != expected_claims {
        bail!(
            "ClickHouse's claims differ from the engine's ({} vs {} rows)",
            claims.len(),
            expected_claims.len()
        );
    }
    let input = |rollups, claims| AllocationInput {
        period,
        rollups,
        usage: &[],
        policies: &policies,
        claims,
        gaps: &[],
        config,
    };
    let from_clickhouse = allocate(&input(&groups, &claims));
    let from_engine = allocate(&input(&expected_groups, &expected_claims));
    if from_clickhouse != from_engine {
        bail!("the allocation from ClickHouse differs from the engine's on the same rows");
    }
    let cost: Decimal = from_clickhouse
        .items
        .iter()
        .map(|i| i.allocated.amount)
        .sum();
    println!(
        "exact: {} group rows, {} claims, {} allocation items, {cost} EUR allocated: equal to the engine's",
        groups.len(),
        claims.len(),
        from_clickhouse.items.len()
    );
    drop((groups, claims, expected_groups, expected_claims));

    // 2. Time: the reads the allocation from ClickHouse does, then the engine; the text layout's reads beside.
    let (mut g_t, mut gap_t, mut c_t, mut e_t, mut total_t, mut ref_t) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut conc_t, mut sg_t, mut sc_t, mut summed_t) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        // The replicated groups, gaps and claims read concurrently, then the engine.
        let t0 = Instant::now();
        let (mut groups, gaps, claims) = tokio::try_join!(
            ch.group_rollups(period.from, period.to),
            ch.gaps(period.from, period.to),
            ch.claims(period.from, period.to)
        )?;
        eai_store::rollups::sort_for_read(&mut groups);
        std::hint::black_box(allocate(&AllocationInput {
            period,
            rollups: &groups,
            usage: &[],
            policies: &policies,
            claims: &claims,
            gaps: &gaps,
            config,
        }));
        conc_t.push(t0.elapsed().as_secs_f64());
        drop((groups, gaps, claims));
        // The reference: the per-GPU rollups and the events summed (what a replica without the marker reads).
        let t0 = Instant::now();
        let mut groups = ch.summed_group_rollups(period.from, period.to).await?;
        eai_store::rollups::sort_for_read(&mut groups);
        let t1 = Instant::now();
        let gaps = ch.gaps(period.from, period.to).await?;
        let t2 = Instant::now();
        let claims = ch.summed_claims(period.from, period.to).await?;
        let t3 = Instant::now();
        std::hint::black_box(allocate(&AllocationInput {
            period,
            rollups: &groups,
            usage: &[],
            policies: &policies,
            claims: &claims,
            gaps: &gaps,
            config,
        }));
        sg_t.push((t1 - t0).as_secs_f64());
        sc_t.push((t3 - t2).as_secs_f64());
        summed_t.push(t0.elapsed().as_secs_f64());
        drop((groups, gaps, claims));
        let t0 = Instant::now();
        let mut groups = ch.group_rollups(period.from, period.to).await?;
        eai_store::rollups::sort_for_read(&mut groups);
        let t1 = Instant::now();
        let gaps = ch.gaps(period.from, period.to).await?;
        let t2 = Instant::now();
        let claims = ch.claims(period.from, period.to).await?;
        let t3 = Instant::now();
        let a = allocate(&AllocationInput {
            period,
            rollups: &groups,
            usage: &[],
            policies: &policies,
            claims: &claims,
            gaps: &gaps,
            config,
        });
        let t4 = Instant::now();
        std::hint::black_box(a);
        g_t.push((t1 - t0).as_secs_f64());
        gap_t.push((t2 - t1).as_secs_f64());
        c_t.push((t3 - t2).as_secs_f64());
        e_t.push((t4 - t3).as_secs_f64());
        total_t.push((t4 - t0).as_secs_f64());
        let r0 = Instant::now();
        text_layout_reads(&ch, "eai_month_text", period).await?;
        ref_t.push(r0.elapsed().as_secs_f64() + (t4 - t3).as_secs_f64());
    }
    let (total, reference) = (p50(total_t), p50(ref_t));
    println!("clickhouse_month_group_rollups_p50_s={:.3}", p50(g_t));
    println!("clickhouse_month_gaps_p50_s={:.3}", p50(gap_t));
    println!("clickhouse_month_claims_p50_s={:.3}", p50(c_t));
    println!("clickhouse_month_engine_p50_s={:.3}", p50(e_t));
    println!("clickhouse_month_total_p50_s={total:.3}");
    println!("clickhouse_month_concurrent_total_p50_s={:.3}", p50(conc_t));
    let summed = p50(summed_t);
    println!("summed_group_rollups_p50_s={:.3}", p50(sg_t));
    println!("summed_claims_p50_s={:.3}", p50(sc_t));
    println!("summed_month_total_p50_s={summed:.3}");
    println!("speedup_vs_summed={:.1}", summed / total);
    println!("reference_text_layout_month_p50_s={reference:.3}");
    println!("speedup_vs_text_layout={:.1}", reference / total);
    ch.exec("DROP DATABASE IF EXISTS eai_month_text").await?;
    if std::env::var_os("EAI_BENCH_KEEP").is_none() {
        ch.exec("DROP DATABASE IF EXISTS eai_month").await?;
    }
    Ok(())
}

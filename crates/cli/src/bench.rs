//! `eai-gpu bench`: a load generator that synthesises a realistic fleet (N GPUs, D deployments, T tenants,
//! 15 s windows, usage events) and drives a running control plane over HTTP, printing figures. Used by
//! `scripts/bench.sh`, which runs the whole suite and prints one table.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use eai_engine::time::Timestamp;
use serde_json::{json, Value};

mod replay;
mod soak;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Control plane base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080", global = true)]
    pub url: String,
    /// A platform_admin key (EAI_API_KEY).
    #[arg(long, env = "EAI_API_KEY", global = true, hide_env_values = true)]
    pub key: Option<String>,
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Clone, Args)]
pub struct Fleet {
    /// GPUs in the fleet.
    #[arg(long, default_value_t = 1000)]
    pub gpus: usize,
    /// Deployments (the first 20 % are dedicated to a tenant).
    #[arg(long, default_value_t = 50)]
    pub deployments: usize,
    /// Tenants.
    #[arg(long, default_value_t = 20)]
    pub tenants: usize,
    /// Window of each sample, seconds.
    #[arg(long, default_value_t = 15)]
    pub window_seconds: i64,
    /// End of the synthesised history (RFC 3339); default: the current hour.
    #[arg(long)]
    pub end: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Ingest throughput: concurrent batches of consecutive windows, HTTP end to end (durable, deduplicated).
    Ingest {
        #[command(flatten)]
        fleet: Fleet,
        /// Samples to send.
        #[arg(long, default_value_t = 2_000_000)]
        samples: usize,
        #[arg(long, default_value_t = 5000)]
        batch: usize,
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Also write the same rows as CSV here (for a reference `COPY` of the same data).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Send each batch with an `Idempotency-Key` of its own, as the SDKs do (what keeping keys costs).
        #[arg(long)]
        idempotency_keys: bool,
    },
    /// Load `days` of history for the fleet (with `--window-seconds 3600` a month loads in seconds and has the
    /// same rollups, one per GPU-hour, as 15 s windows), plus hourly usage events and a policy.
    Load {
        #[command(flatten)]
        fleet: Fleet,
        #[arg(long, default_value_t = 30)]
        days: i64,
        /// Concurrent streams of batches. Each stream owns whole deployments (deployment d: stream d mod N), so
        /// no two streams write the same GPU or the same deployment-hour's group rows, and sends its GPUs'
        /// windows in time order, as one sampler per node would.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// How the GPUs are split among the streams: `deployment` (whole deployments, the default) or `gpu`
        /// (GPU g: stream g mod N, so a deployment's GPUs are in every stream and their batches add to the same
        /// deployment-hours' group rows: the split to compare with).
        #[arg(long, default_value = "deployment", value_parser = ["deployment", "gpu"])]
        split: String,
    },
    /// Allocation latency over the last `days`: p50 / p99 of `runs` requests.
    Allocation {
        #[arg(long, default_value_t = 30)]
        days: i64,
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// End of the period (RFC 3339); default: the current hour.
        #[arg(long)]
        end: Option<String>,
    },
    /// Breakdown latency over the last `days` (`GET /v1/finops/gpu/usage?group_by=…`): p50 / p99 of `runs`
    /// requests, each beside an allocation request of the same period (the reference, same run).
    Usage {
        #[arg(long, default_value_t = 30)]
        days: i64,
        #[arg(long, default_value_t = 20)]
        runs: usize,
        #[arg(long, default_value = "pod")]
        group_by: String,
        /// End of the period (RFC 3339); default: the current hour.
        #[arg(long)]
        end: Option<String>,
    },
    /// SPEC §13's reads over the last `days` (recommendations; the forecast of the month `end` falls in, which
    /// allocates 28 days before it day by day; the anomalies recorded): p50 / p99 of `runs` requests each,
    /// beside an allocation request of the same `days` (the reference, same run).
    Advice {
        #[arg(long, default_value_t = 30)]
        days: i64,
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// End of the period (RFC 3339); default: the current hour.
        #[arg(long)]
        end: Option<String>,
    },
    /// Mixed load: ingest at `rate` samples/s while the allocation is queried every second.
    Mixed {
        #[command(flatten)]
        fleet: Fleet,
        #[arg(long, default_value_t = 6700)]
        rate: usize,
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        /// The server's pid, to sample its resident memory.
        #[arg(long)]
        server_pid: Option<u32>,
    },
    /// The gateway path (issue 42): `callers` concurrent callers from one usage_reporter key, each reserving
    /// `estimate` then committing `actual`, `pairs` times, against one tenant's enforcing budget whose limit is
    /// exactly every estimate (callers x pairs x estimate). Prints pairs/s, p50 / p99 of a pair and of each
    /// call, errors and refusals, then checks the budget: spent = the sum of the committed amounts, nothing held,
    /// spent within the limit.
    Gateway {
        #[arg(long, default_value_t = 64)]
        callers: usize,
        /// Reserve + commit pairs per caller.
        #[arg(long, default_value_t = 200)]
        pairs: usize,
        /// Cost of each reservation's estimate, USD (a decimal string).
        #[arg(long, default_value = "0.50")]
        estimate: String,
        /// Cost each commit records, USD (a decimal string, at most the estimate).
        #[arg(long, default_value = "0.37")]
        actual: String,
        /// Tenants the callers are spread over (caller i: tenant i mod N), each with its own budget (exactly
        /// its callers' estimates) and its own usage_reporter key: one gateway key per tenant.
        #[arg(long, default_value_t = 1)]
        tenants: usize,
    },
    /// Samples between stored neighbours (issue 42, part 2): two holes left out of in-order history, one
    /// replayed newest first (a sampler's spool after an outage), one in shuffled windows, each timed beside
    /// the same number of samples appended in order (before and after them, same run).
    Replay(replay::ReplayArgs),
    /// Soak: hours of a compressed month with allocation queries, key churn and policy changes; a line of
    /// figures a minute (scripts/soak.sh).
    Soak(soak::SoakArgs),
    /// Write the DCGM history Prometheus would hold after scraping the fleet's exporters every
    /// `--window-seconds` for `days`, as OpenMetrics for `promtool tsdb create-blocks-from openmetrics`
    /// (scripts/bench-import.sh). No server needed.
    PromHistory {
        #[command(flatten)]
        fleet: Fleet,
        #[arg(long, default_value_t = 30)]
        days: i64,
        #[arg(long)]
        out: PathBuf,
    },
}

fn now_hour() -> Timestamp {
    eai_app::clock::now().floor_to(3_600_000)
}

fn end_of(s: &Option<String>) -> anyhow::Result<Timestamp> {
    match s {
        Some(s) => Timestamp::parse_rfc3339(s).map_err(|e| anyhow::anyhow!("--end: {}", e.reason)),
        None => Ok(now_hour()),
    }
}

fn tenant(i: usize) -> String {
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        0xbe00_0000u32 + i as u32,
        i
    )
}

impl Fleet {
    fn deployment(&self, gpu: usize) -> usize {
        gpu % self.deployments
    }

    fn owner(&self, dep: usize) -> Option<String> {
        (dep < self.deployments / 5).then(|| tenant(dep % self.tenants))
    }

    /// The sample of `gpu` for the window ending at `end`, as JSON.
    fn sample(&self, gpu: usize, end: Timestamp, salt: u64) -> Value {
        let dep = self.deployment(gpu);
        let util = ((salt.wrapping_mul(2_654_435_761) >> 7) % 100) as f64 / 100.0;
        let mut v = json!({
            "node": format!("gpu-node-{}", gpu / 8),
            "gpu_uuid": format!("GPU-bench-{gpu:06}"),
            "model": "NVIDIA H100 80GB HBM3",
            "namespace": "eai-inference",
            // Pods of two GPUs (tensor parallel 2): 500 pods for 1,000 GPUs in 50 deployments.
            "pod": format!("vllm-{dep}-{}", gpu / self.deployments / 2),
            "deployment_id": format!("vllm-{dep}"),
            "window_seconds": self.window_seconds,
            "utilization": util,
            "memory_used_gb": 60.5,
            "power_w": 70.0 + 600.0 * util,
            "timestamp": end.to_string(),
        });
        if let Some(t) = self.owner(dep) {
            v["tenant_id"] = Value::String(t);
        }
        v
    }

    /// Batches of `batch` samples covering consecutive windows of the whole fleet, oldest first, ending at
    /// `end`: `count` samples in all.
    fn batches(&self, end: Timestamp, count: usize, batch: usize) -> Vec<Vec<Value>> {
        let windows = count.div_ceil(self.gpus) as i64;
        let w = self.window_seconds * 1000;
        let first_end = end.0 - (windows - 1) * w;
        let mut all = Vec::with_capacity(count);
        'outer: for k in 0..windows {
            for g in 0..self.gpus {
                if all.len() == count {
                    break 'outer;
                }
                all.push(self.sample(g, Timestamp(first_end + k * w), (g as u64) << 20 ^ k as u64));
            }
        }
        all.chunks(batch).map(<[Value]>::to_vec).collect()
    }
}

struct Http {
    client: reqwest::Client,
    url: String,
    key: String,
    /// A fresh `Idempotency-Key` on every `POST`.
    idempotency_keys: bool,
}

impl Http {
    async fn post(&self, path: &str, body: Vec<u8>) -> anyhow::Result<Value> {
        let mut req = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.key)
            .header("content-type", "application/json");
        if self.idempotency_keys {
            req = req.header("idempotency-key", uuid::Uuid::new_v4().to_string());
        }
        let r = req.body(body).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {v}");
        }
        Ok(v)
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.key)
            .send()
            .await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {v}");
        }
        Ok(v)
    }
}

impl Http {
    async fn delete(&self, path: &str) -> anyhow::Result<()> {
        let r = self
            .client
            .delete(format!("{}{path}", self.url))
            .bearer_auth(&self.key)
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("{path}: {}", r.status());
        }
        Ok(())
    }
}

/// Creates the fleet's policy (2.10 EUR an H100-hour, the SPEC's example) in effect from `start`.
async fn policy(http: &Http, name: &str, start: Timestamp) -> anyhow::Result<Value> {
    http.post(
        "/v1/finops/allocation-policies",
        serde_json::to_vec(&json!({
            "name": name, "currency": "EUR", "gpu_hourly_cost": "2.10", "overhead_pct": "18",
            "energy_kwh_price": "0.21", "pue": "1.4", "effective_from": start.to_string()
        }))?,
    )
    .await
    .with_context(|| format!("cannot create the policy {name}"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if let BenchCommand::PromHistory { fleet, days, out } = &args.command {
        return prom_history(fleet, *days, out);
    }
    let key = args
        .key
        .clone()
        .context("a platform_admin key is needed: --key or EAI_API_KEY")?;
    let http = Arc::new(Http {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()?,
        url: args.url.trim_end_matches('/').to_string(),
        key,
        idempotency_keys: matches!(
            args.command,
            BenchCommand::Ingest {
                idempotency_keys: true,
                ..
            }
        ),
    });
    match args.command {
        BenchCommand::Ingest {
            fleet,
            samples,
            batch,
            concurrency,
            csv,
            idempotency_keys: _,
        } => ingest(http, &fleet, samples, batch, concurrency, csv).await,
        BenchCommand::Load {
            fleet,
            days,
            concurrency,
            split,
        } => load(http, &fleet, days, concurrency, split == "gpu").await,
        BenchCommand::Allocation { days, runs, end } => {
            allocation(http, days, runs, end_of(&end)?).await
        }
        BenchCommand::Usage {
            days,
            runs,
            group_by,
            end,
        } => usage(http, days, runs, &group_by, end_of(&end)?).await,
        BenchCommand::Advice { days, runs, end } => advice(http, days, runs, end_of(&end)?).await,
        BenchCommand::Mixed {
            fleet,
            rate,
            seconds,
            server_pid,
        } => mixed(http, &fleet, rate, seconds, server_pid).await,
        BenchCommand::Gateway {
            callers,
            pairs,
            estimate,
            actual,
            tenants,
        } => gateway(http, callers, pairs, &estimate, &actual, tenants).await,
        BenchCommand::Replay(args) => replay::replay(http, args).await,
        BenchCommand::Soak(args) => soak::soak(http, args).await,
        BenchCommand::PromHistory { .. } => unreachable!("handled above"),
    }
}

async fn ingest(
    http: Arc<Http>,
    fleet: &Fleet,
    samples: usize,
    batch: usize,
    concurrency: usize,
    csv: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let end = end_of(&fleet.end)?;
    // Each stream owns a disjoint set of GPUs and sends them in time order, as one sampler per node does:
    // concurrent streams never race on a GPU (a late sample would be a recompute, not the normal path).
    let streams = concurrency.max(1);
    let all = fleet.batches(end, samples, samples.max(1));
    let mut per_stream: Vec<Vec<Value>> = vec![Vec::new(); streams];
    for s in all.into_iter().flatten() {
        let gpu: usize = s["gpu_uuid"]
            .as_str()
            .and_then(|u| u.rsplit('-').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        per_stream[gpu % streams].push(s);
    }
    let batches: Vec<Vec<Vec<Value>>> = per_stream
        .iter()
        .map(|v| v.chunks(batch).map(<[Value]>::to_vec).collect())
        .collect();
    let bodies: Vec<Vec<Vec<u8>>> = batches
        .iter()
        .map(|st| {
            st.iter()
                .map(|b| serde_json::to_vec(&json!({ "samples": b })))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<_, _>>()?;
    let bytes: usize = bodies.iter().flatten().map(Vec::len).sum();

    // Reference measured in the same run: parsing the same bodies with serde_json (one core).
    let t = Instant::now();
    for b in bodies.iter().flatten() {
        let v: Value = serde_json::from_slice(b)?;
        std::hint::black_box(v);
    }
    let parse_rate = samples as f64 / t.elapsed().as_secs_f64();

    if let Some(path) = csv {
        let mut out = String::with_capacity(samples * 120);
        for s in batches.iter().flatten().flatten() {
            out.push_str(&format!(
                "{},{},{},{},{},{}\n",
                s["gpu_uuid"].as_str().unwrap_or_default(),
                Timestamp::parse_rfc3339(s["timestamp"].as_str().unwrap_or_default())
                    .map(|t| t.0)
                    .unwrap_or_default(),
                s["deployment_id"].as_str().unwrap_or_default(),
                s["utilization"],
                s["memory_used_gb"],
                s["power_w"],
            ));
        }
        std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    }

    let t = Instant::now();
    let mut tasks = Vec::new();
    for stream in bodies {
        let http = http.clone();
        tasks.push(tokio::spawn(async move {
            let mut dup = 0u64;
            for body in stream {
                let v = http.post("/v1/finops/gpu/samples", body).await?;
                dup += v["duplicates"].as_u64().unwrap_or(0);
            }
            anyhow::Ok(dup)
        }));
    }
    let mut duplicates = 0;
    for task in tasks {
        duplicates += task.await??;
    }
    let secs = t.elapsed().as_secs_f64();
    let rate = samples as f64 / secs;
    println!("ingest_samples={samples}");
    println!("ingest_seconds={secs:.2}");
    println!("ingest_samples_per_second={rate:.0}");
    println!("ingest_duplicates={duplicates}");
    println!("ingest_body_mib={:.1}", bytes as f64 / 1048576.0);
    println!("reference_serde_json_parse_samples_per_second={parse_rate:.0}");
    println!("ratio_ingest_to_json_parse={:.3}", rate / parse_rate);
    Ok(ExitCode::SUCCESS)
}

async fn load(
    http: Arc<Http>,
    fleet: &Fleet,
    days: i64,
    concurrency: usize,
    split_by_gpu: bool,
) -> anyhow::Result<ExitCode> {
    let end = end_of(&fleet.end)?;
    let start = Timestamp(end.0 - days * 86_400_000);
    policy(&http, "bench-h100", start).await?;
    let windows = days * 86_400 / fleet.window_seconds;
    let count = windows as usize * fleet.gpus;
    let streams = if split_by_gpu {
        concurrency.clamp(1, fleet.gpus.max(1))
    } else {
        concurrency.clamp(1, fleet.deployments.max(1))
    };
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(streams);
    for stream in 0..streams {
        let gpus: Vec<usize> = (0..fleet.gpus)
            .filter(|&g| {
                let owner = if split_by_gpu { g } else { fleet.deployment(g) };
                owner % streams == stream
            })
            .collect();
        let (http, fleet) = (http.clone(), fleet.clone());
        // The bodies are built as they are sent (a month of 10,000 GPUs does not fit in memory as JSON values):
        // a few ms a batch of 5,000, beside the server's hundreds.
        tasks.push(tokio::spawn(async move {
            let w = fleet.window_seconds * 1000;
            let first_end = end.0 - (windows - 1) * w;
            let mut batch = Vec::with_capacity(5000);
            for k in 0..windows {
                for &g in &gpus {
                    let salt = (g as u64) << 20 ^ k as u64;
                    batch.push(fleet.sample(g, Timestamp(first_end + k * w), salt));
                    if batch.len() == 5000 || (k == windows - 1 && g == *gpus.last().unwrap_or(&g))
                    {
                        let body = serde_json::to_vec(&json!({ "samples": batch }))?;
                        http.post("/v1/finops/gpu/samples", body).await?;
                        batch.clear();
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let load_secs = t.elapsed().as_secs_f64();
    // Usage: each shared deployment, every hour, three tenants by tokens.
    let mut events = Vec::new();
    let mut hour = start.0;
    while hour < end.0 {
        for dep in fleet.deployments / 5..fleet.deployments {
            for k in 0..3 {
                let t = (dep + k) % fleet.tenants;
                events.push(json!({
                    "event_id": uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, format!("bench/{hour}/{dep}/{k}").as_bytes()).to_string(),
                    "schema_version": "1.0", "tenant_id": tenant(t), "usage_type": "llm_tokens", "source": "gateway",
                    "occurred_at": Timestamp(hour + 60_000 * k as i64).to_string(), "deployment_id": format!("vllm-{dep}"),
                    "units": {"tokens_in": 1000 + k * 100, "tokens_out": 200}
                }));
            }
        }
        hour += 3_600_000;
    }
    for b in events.chunks(5000) {
        http.post(
            "/v1/usage/events",
            serde_json::to_vec(&json!({ "events": b }))?,
        )
        .await?;
    }
    println!("load_samples={count}");
    println!("load_concurrency={streams}");
    println!(
        "load_split={}",
        if split_by_gpu { "gpu" } else { "deployment" }
    );
    println!("load_seconds={load_secs:.1}");
    println!("load_samples_per_second={:.0}", count as f64 / load_secs);
    println!("load_events={}", events.len());
    Ok(ExitCode::SUCCESS)
}

async fn allocation(
    http: Arc<Http>,
    days: i64,
    runs: usize,
    end: Timestamp,
) -> anyhow::Result<ExitCode> {
    let from = Timestamp(end.0 - days * 86_400_000);
    let path = format!("/v1/finops/gpu/allocation?from={from}&to={end}");
    // The first request also warms the server (its read cache starts empty): timed apart.
    let t = Instant::now();
    let first = http.get(&path).await?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let rollups_hint = first["deployments"].as_array().map_or(0, |d| {
        d.iter()
            .map(|x| x["gpus"].as_u64().unwrap_or(0))
            .sum::<u64>()
    });
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        http.get(&path).await?;
        times.push(t.elapsed());
    }
    times.sort();
    println!("allocation_days={days}");
    println!("allocation_gpus={rollups_hint}");
    println!("allocation_first_ms={first_ms:.1}");
    println!(
        "allocation_p50_ms={:.1}",
        percentile(&times, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "allocation_p99_ms={:.1}",
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

fn money_of(v: &Value) -> anyhow::Result<rust_decimal::Decimal> {
    v["amount"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("not an amount: {v}"))
}

fn print_latency(name: &str, sorted: &[Duration]) {
    for (p, q) in [("p50", 0.5), ("p99", 0.99)] {
        println!(
            "{name}_{p}_ms={:.2}",
            percentile(sorted, q).as_secs_f64() * 1e3
        );
    }
}

async fn gateway(
    http: Arc<Http>,
    callers: usize,
    pairs: usize,
    estimate: &str,
    actual: &str,
    tenants: usize,
) -> anyhow::Result<ExitCode> {
    use rust_decimal::Decimal;
    let estimate_d: Decimal = estimate.parse().context("--estimate")?;
    let actual_d: Decimal = actual.parse().context("--actual")?;
    let tenants = tenants.clamp(1, callers.max(1));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(callers)
        .build()?;
    // Per tenant: its budget (exactly its callers' estimates), its gateway key, its reservation body.
    let mut sides = Vec::with_capacity(tenants);
    for i in 0..tenants {
        let its_callers = (i..callers).step_by(tenants).count();
        let limit = estimate_d * Decimal::from(its_callers * pairs);
        let slug = format!("gw-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let tenant = http
            .post(
                "/v1/tenants",
                serde_json::to_vec(&json!({ "slug": slug, "name": "gateway bench" }))?,
            )
            .await?;
        let tenant_id = tenant["id"].as_str().context("tenant id")?.to_string();
        let budget = http
            .post(
                "/v1/finops/budgets",
                serde_json::to_vec(&json!({
                    "tenant_id": tenant_id, "name": "gateway bench", "enforce": true,
                    "limit": { "amount": limit.to_string(), "currency": "USD" },
                }))?,
            )
            .await?;
        let budget_id = budget["id"].as_str().context("budget id")?.to_string();
        let created = http
            .post(
                "/v1/auth/api-keys",
                serde_json::to_vec(&json!({ "role": "usage_reporter", "name": "gateway bench" }))?,
            )
            .await?;
        let gw = Arc::new(Http {
            client: client.clone(),
            url: http.url.clone(),
            key: created["key"].as_str().context("key")?.to_string(),
            idempotency_keys: false,
        });
        let reserve_body = serde_json::to_vec(&json!({
            "tenant_id": tenant_id, "action": "llm.invoke",
            "estimate": { "cost": estimate, "currency": "USD" },
        }))?;
        sides.push((gw, reserve_body, budget_id, limit));
    }
    let commit_body =
        serde_json::to_vec(&json!({ "actual": { "cost": actual, "currency": "USD" } }))?;

    let refused = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(callers);
    for caller in 0..callers {
        let (gw, reserve_body, _, _) = &sides[caller % tenants];
        let (gw, reserve_body, commit_body) =
            (gw.clone(), reserve_body.clone(), commit_body.clone());
        let (refused, errors) = (refused.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..pairs {
                let t0 = Instant::now();
                let r = gw
                    .client
                    .post(format!("{}/v1/finops/reservations", gw.url))
                    .bearer_auth(&gw.key)
                    .header("content-type", "application/json")
                    .body(reserve_body.clone())
                    .send()
                    .await;
                let res = match r {
                    Ok(r) if r.status().as_u16() == 402 => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
                    _ => None,
                };
                let Some(id) = res.as_ref().and_then(|v| v["id"].as_str()) else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let t1 = Instant::now();
                let path = format!("/v1/finops/reservations/{id}/commit");
                if gw.post(&path, commit_body.clone()).await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let t2 = Instant::now();
                times.0.push(t2 - t0);
                times.1.push(t1 - t0);
                times.2.push(t2 - t1);
            }
            times
        }));
    }
    let (mut pair, mut reserve, mut commit) = (Vec::new(), Vec::new(), Vec::new());
    let mut committed_of = vec![0usize; tenants];
    for (caller, task) in tasks.into_iter().enumerate() {
        let (p, r, c) = task.await?;
        committed_of[caller % tenants] += p.len();
        pair.extend(p);
        reserve.extend(r);
        commit.extend(c);
    }
    let secs = t.elapsed().as_secs_f64();
    for v in [&mut pair, &mut reserve, &mut commit] {
        v.sort();
    }
    let committed = pair.len();
    let errors = errors.load(Ordering::Relaxed);
    let refused = refused.load(Ordering::Relaxed);
    println!("gateway_callers={callers}");
    println!("gateway_tenants={tenants}");
    println!("gateway_pairs={committed}");
    println!("gateway_seconds={secs:.2}");
    println!("gateway_pairs_per_second={:.0}", committed as f64 / secs);
    print_latency("gateway_pair", &pair);
    print_latency("gateway_reserve", &reserve);
    print_latency("gateway_commit", &commit);
    println!("gateway_refused={refused}");
    println!("gateway_errors={errors}");

    // Each budget after the run: exactly what was committed, nothing left held, within the limit.
    let (mut limits, mut spents, mut expecteds, mut helds, mut overs): (
        Decimal,
        Decimal,
        Decimal,
        Decimal,
        Decimal,
    ) = Default::default();
    for ((_, _, budget_id, limit), committed) in sides.iter().zip(committed_of) {
        let b = http.get(&format!("/v1/finops/budgets/{budget_id}")).await?;
        let spent = money_of(&b["current"]["spent"])?;
        let held = money_of(&b["current"]["held"])?;
        let expected = actual_d * Decimal::from(committed);
        let over = (spent + held - limit).max(Decimal::ZERO);
        if spent != expected || !held.is_zero() || !over.is_zero() {
            bail!("budget {budget_id} is not exact: spent {spent} (committed {expected}), held {held}, over {over}");
        }
        limits += limit;
        spents += spent;
        expecteds += expected;
        helds += held;
        overs += over;
    }
    println!("gateway_budget_limit={limits}");
    println!("gateway_budget_spent={spents}");
    println!("gateway_budget_expected={expecteds}");
    println!("gateway_budget_held={helds}");
    println!("gateway_over_budget={overs}");
    Ok(ExitCode::SUCCESS)
}

async fn advice(
    http: Arc<Http>,
    days: i64,
    runs: usize,
    end: Timestamp,
) -> anyhow::Result<ExitCode> {
    let from = Timestamp(end.0 - days * 86_400_000);
    let month = &end.to_string()[..7];
    let reads = [
        (
            "recommendations",
            format!("/v1/finops/gpu/recommendations?from={from}&to={end}"),
        ),
        (
            "forecast",
            format!("/v1/finops/gpu/forecast?period={month}"),
        ),
        (
            "anomalies",
            format!("/v1/finops/gpu/anomalies?from={from}&to={end}"),
        ),
        (
            "allocation",
            format!("/v1/finops/gpu/allocation?from={from}&to={end}"),
        ),
    ];
    println!("advice_days={days}");
    for (name, path) in &reads {
        // The first request also warms the server's read cache: timed apart.
        let t = Instant::now();
        let first = http.get(path).await?;
        println!("{name}_first_ms={:.1}", t.elapsed().as_secs_f64() * 1e3);
        if *name == "recommendations" {
            println!(
                "recommendations_items={}",
                first["items"].as_array().map_or(0, Vec::len)
            );
        }
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            http.get(path).await?;
            times.push(t.elapsed());
        }
        times.sort();
        for (q, p) in [("p50", 0.5), ("p99", 0.99)] {
            println!(
                "{name}_{q}_ms={:.1}",
                percentile(&times, p).as_secs_f64() * 1e3
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn usage(
    http: Arc<Http>,
    days: i64,
    runs: usize,
    group_by: &str,
    end: Timestamp,
) -> anyhow::Result<ExitCode> {
    let from = Timestamp(end.0 - days * 86_400_000);
    let path = format!("/v1/finops/gpu/usage?from={from}&to={end}&group_by={group_by}");
    let reference = format!("/v1/finops/gpu/allocation?from={from}&to={end}");
    // The first requests warm the server (its read cache starts empty): timed apart.
    let t = Instant::now();
    let first = http.get(&path).await?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    http.get(&reference).await?;
    let rows = first["rows"].as_array().map_or(0, Vec::len);
    let (mut times, mut refs) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let t = Instant::now();
        http.get(&path).await?;
        times.push(t.elapsed());
        let t = Instant::now();
        http.get(&reference).await?;
        refs.push(t.elapsed());
    }
    times.sort();
    refs.sort();
    let ms = |v: &[Duration], q: f64| percentile(v, q).as_secs_f64() * 1e3;
    println!("usage_days={days}");
    println!("usage_group_by={group_by}");
    println!("usage_rows={rows}");
    println!("usage_first_ms={first_ms:.1}");
    println!("usage_p50_ms={:.1}", ms(&times, 0.5));
    println!("usage_p99_ms={:.1}", ms(&times, 0.99));
    println!("usage_reference_allocation_p50_ms={:.1}", ms(&refs, 0.5));
    println!(
        "usage_ratio_to_allocation={:.2}",
        ms(&times, 0.5) / ms(&refs, 0.5).max(0.001)
    );
    Ok(ExitCode::SUCCESS)
}

async fn mixed(
    http: Arc<Http>,
    fleet: &Fleet,
    rate: usize,
    seconds: u64,
    pid: Option<u32>,
) -> anyhow::Result<ExitCode> {
    let end = end_of(&fleet.end)?;
    // One batch per 100 ms tick holding rate/10 samples of consecutive windows, ending `seconds` from now.
    let per_tick = (rate / 10).max(1);
    let ticks = (seconds * 10) as usize;
    let batches = fleet.batches(Timestamp(end.0), per_tick * ticks, per_tick);
    let errors = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The allocation reader: every second, the last 30 days.
    let reader = {
        let (http, errors, stop) = (http.clone(), errors.clone(), stop.clone());
        tokio::spawn(async move {
            let mut times = Vec::new();
            let from = Timestamp(end.0 - 30 * 86_400_000);
            let path = format!(
                "/v1/finops/gpu/allocation?from={from}&to={}",
                Timestamp(end.0 + 86_400_000)
            );
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                if http.get(&path).await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                times.push(t.elapsed());
                tokio::time::sleep(Duration::from_secs(1).saturating_sub(t.elapsed())).await;
            }
            times
        })
    };
    let mut ingest_times = Vec::with_capacity(ticks);
    let mut rss = Vec::new();
    let mut interval = tokio::time::interval(Duration::from_millis(100));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    for (i, b) in batches.into_iter().enumerate() {
        interval.tick().await;
        let body = serde_json::to_vec(&json!({ "samples": b }))?;
        let t = Instant::now();
        if http.post("/v1/finops/gpu/samples", body).await.is_err() {
            errors.fetch_add(1, Ordering::Relaxed);
        }
        ingest_times.push(t.elapsed());
        if i % 100 == 0 {
            if let Some(kib) = pid.and_then(rss_kib) {
                rss.push(kib);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut reads = reader.await?;
    ingest_times.sort();
    reads.sort();
    println!("mixed_seconds={elapsed:.0}");
    println!(
        "mixed_samples_per_second={:.0}",
        (per_tick * ingest_times.len()) as f64 / elapsed
    );
    println!(
        "mixed_ingest_p50_ms={:.1}",
        percentile(&ingest_times, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "mixed_ingest_p99_ms={:.1}",
        percentile(&ingest_times, 0.99).as_secs_f64() * 1e3
    );
    println!("mixed_allocation_queries={}", reads.len());
    println!(
        "mixed_allocation_p50_ms={:.1}",
        percentile(&reads, 0.5).as_secs_f64() * 1e3
    );
    println!(
        "mixed_allocation_p99_ms={:.1}",
        percentile(&reads, 0.99).as_secs_f64() * 1e3
    );
    println!("mixed_errors={}", errors.load(Ordering::Relaxed));
    if let (Some(first), Some(last)) = (rss.first(), rss.last()) {
        let max = rss.iter().max().copied().unwrap_or_default();
        println!("mixed_server_rss_mib_first={:.0}", *first as f64 / 1024.0);
        println!("mixed_server_rss_mib_last={:.0}", *last as f64 / 1024.0);
        println!("mixed_server_rss_mib_max={:.0}", max as f64 / 1024.0);
        // Flat memory: the second half of the run peaks no higher than the first.
        let (a, b) = rss.split_at(rss.len() / 2);
        let peak = |v: &[u64]| v.iter().max().copied().unwrap_or_default() as f64 / 1024.0;
        println!("mixed_server_rss_mib_max_first_half={:.0}", peak(a));
        println!("mixed_server_rss_mib_max_second_half={:.0}", peak(b));
    }
    Ok(ExitCode::SUCCESS)
}

/// The fleet's DCGM series over the `days` before its end, one scrape every window (a second before each
/// window's end), each series in time order; GPUs on nodes of eight, pods of two GPUs per deployment.
fn prom_history(fleet: &Fleet, days: i64, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let end = end_of(&fleet.end)?;
    let w = fleet.window_seconds * 1000;
    let start = end.0 - days * 86_400_000;
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    let labels: Vec<String> = (0..fleet.gpus)
        .map(|g| {
            let dep = g * fleet.deployments.max(1) / fleet.gpus.max(1);
            format!(
                "gpu=\"{}\",UUID=\"GPU-{g:08x}-0000-4000-8000-000000000000\",modelName=\"NVIDIA H100 80GB HBM3\",\
                 Hostname=\"node-{}\",namespace=\"team-{dep}\",pod=\"deploy-{dep}-7d9f8b6c5d-p{:04}\",container=\"main\"",
                g % 8,
                g / 8,
                g / 2
            )
        })
        .collect();
    let steps = (end.0 - start) / w;
    let mut lines = 0u64;
    for family in [
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ] {
        writeln!(f, "# TYPE {family} gauge")?;
        for (g, l) in labels.iter().enumerate() {
            let g = g as i64;
            for k in 1..=steps {
                let t = (start + k * w) / 1000 - 1;
                let power = 100 + (k * 7 + g * 13) % 500;
                match family {
                    "DCGM_FI_DEV_FB_USED" => {
                        writeln!(f, "{family}{{{l}}} {} {t}", 1_000 + (k * 31 + g) % 70_000)?
                    }
                    "DCGM_FI_DEV_GPU_UTIL" => {
                        writeln!(f, "{family}{{{l}}} {} {t}", (k * 3 + g) % 101)?
                    }
                    "DCGM_FI_DEV_POWER_USAGE" => writeln!(f, "{family}{{{l}}} {power}.25 {t}")?,
                    _ => writeln!(f, "{family}{{{l}}} {} {t}", 1_000_000 + k * 350 * w + g)?,
                }
                lines += 1;
            }
        }
    }
    writeln!(f, "# EOF")?;
    f.flush()?;
    println!("prom_history_series={}", labels.len() * 4);
    println!("prom_history_points={lines}");
    println!("prom_history_samples={}", fleet.gpus as i64 * steps);
    Ok(ExitCode::SUCCESS)
}

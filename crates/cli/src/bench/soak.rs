//! `eai-gpu bench soak`: hours of a fleet's month, compressed, against a running control plane, with one line of
//! figures a minute (scripts/soak.sh plots them). The fleet's clock starts `days` before the current hour and
//! runs as fast as the rate makes it: each 100 ms tick posts the next `rate / 10` samples of consecutive windows
//! (every GPU's window, then the next), and each fleet hour the usage events of the shared deployments. Beside
//! it: the allocation of the last fleet day every second and of the last fleet week every five seconds, a tenant
//! key created, used and revoked every ten seconds, and the policy superseded at the fleet's clock every five
//! minutes. At the end the month's allocation must count every sample acknowledged, once.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use eai_engine::time::Timestamp;
use serde_json::json;

use super::{percentile, rss_kib, tenant, Fleet, Http};

#[derive(Debug, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    pub fleet: Fleet,
    /// Samples per second (2,000: 10,000 GPUs' 30-minute windows take a month in two hours).
    #[arg(long, default_value_t = 2000)]
    pub rate: usize,
    /// Wall-clock length of the soak.
    #[arg(long, default_value_t = 7200)]
    pub seconds: u64,
    /// Fleet days to cover, ending at the current hour (the fleet's clock starts there).
    #[arg(long, default_value_t = 30)]
    pub days: i64,
    /// The server's pid: its resident memory and open file descriptors are recorded.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Files or folders whose size is the store's (the SQLite file and its WAL, or the data folder).
    #[arg(long)]
    pub db_path: Vec<PathBuf>,
    /// Where the figures of each minute go (tab-separated, a header first).
    #[arg(long)]
    pub out: PathBuf,
}

/// What happened since the last minute's line.
#[derive(Default)]
struct Minute {
    ingest: Vec<Duration>,
    day: Vec<Duration>,
    week: Vec<Duration>,
    errors: u64,
    /// Allocation requests answered 429 (every computing slot busy) and retried.
    busy: u64,
}

struct Shared {
    http: Arc<Http>,
    minute: Mutex<Minute>,
    /// The fleet's clock: the end of the last window posted, in ms.
    fleet_ms: AtomicU64,
    stop: AtomicBool,
    samples: AtomicU64,
    events: AtomicU64,
    keys: AtomicU64,
    policies: AtomicU64,
}

impl Shared {
    fn record(&self, what: impl FnOnce(&mut Minute)) {
        if let Ok(mut m) = self.minute.lock() {
            what(&mut m);
        }
    }

    fn error(&self, e: &anyhow::Error) {
        let n = self.minute.lock().map(|mut m| {
            m.errors += 1;
            m.errors
        });
        if n.is_ok_and(|n| n <= 3) {
            eprintln!("soak: {e:#}");
        }
    }

    /// GET `path` as the admin (or as `key`), retrying a 429 (every allocation slot busy: the server's
    /// backpressure, which a client honours) after its Retry-After, up to ten times.
    async fn get(&self, path: &str, key: Option<&str>) -> anyhow::Result<()> {
        for _ in 0..10 {
            let r = self
                .http
                .client
                .get(format!("{}{path}", self.http.url))
                .bearer_auth(key.unwrap_or(&self.http.key))
                .send()
                .await?;
            let status = r.status();
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(1);
                self.record(|m| m.busy += 1);
                tokio::time::sleep(Duration::from_millis(200).min(Duration::from_secs(wait))).await;
                continue;
            }
            let _ = r.bytes().await?;
            anyhow::ensure!(status.is_success(), "{path}: {status}");
            return Ok(());
        }
        anyhow::bail!("{path}: still 429 after ten tries")
    }

    fn fleet_now(&self) -> Timestamp {
        Timestamp(self.fleet_ms.load(Ordering::Relaxed) as i64)
    }

    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
}

pub async fn soak(http: Arc<Http>, args: SoakArgs) -> anyhow::Result<ExitCode> {
    let fleet = args.fleet.clone();
    let end = super::end_of(&fleet.end)?;
    let start = Timestamp(end.0 - args.days * 86_400_000);
    let w = fleet.window_seconds * 1000;
    let policy = super::policy(&http, "soak-h100", start).await?;
    let policy_id = policy["id"]
        .as_str()
        .context("the policy has no id")?
        .to_string();
    let shared = Arc::new(Shared {
        http,
        minute: Mutex::new(Minute::default()),
        fleet_ms: AtomicU64::new(start.0 as u64),
        stop: AtomicBool::new(false),
        samples: AtomicU64::new(0),
        events: AtomicU64::new(0),
        keys: AtomicU64::new(0),
        policies: AtomicU64::new(1),
    });
    let mut tasks = vec![
        tokio::spawn(allocation_reader(shared.clone(), 1, 86_400_000, true)),
        tokio::spawn(allocation_reader(shared.clone(), 5, 7 * 86_400_000, false)),
        tokio::spawn(key_churn(shared.clone(), fleet.tenants)),
        tokio::spawn(policy_changes(shared.clone(), policy_id)),
    ];
    let recorder = tokio::spawn(recorder(
        shared.clone(),
        args.server_pid,
        args.db_path.clone(),
        args.out.clone(),
    ));

    let per_tick = (args.rate / 10).max(1);
    let ticks = args.seconds * 10;
    let mut interval = tokio::time::interval(Duration::from_millis(100));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    // The next sample to post: window k (ending at start + (k + 1) * w), GPU g.
    let (mut k, mut g) = (0i64, 0usize);
    let mut hour_posted = start.0;
    let mut sent = 0u64;
    for _ in 0..ticks {
        interval.tick().await;
        let mut batch = Vec::with_capacity(per_tick);
        while batch.len() < per_tick {
            let window_end = Timestamp(start.0 + (k + 1) * w);
            if window_end > end {
                break;
            }
            batch.push(fleet.sample(g, window_end, (g as u64) << 20 ^ k as u64));
            g += 1;
            if g == fleet.gpus {
                g = 0;
                k += 1;
            }
        }
        if batch.is_empty() {
            break; // the month is all sent
        }
        let n = batch.len() as u64;
        let body = serde_json::to_vec(&json!({ "samples": batch }))?;
        let t = Instant::now();
        match shared.http.post("/v1/finops/gpu/samples", body).await {
            Ok(_) => {
                sent += n;
                shared.samples.store(sent, Ordering::Relaxed);
            }
            Err(e) => shared.error(&e),
        }
        let took = t.elapsed();
        shared.record(|m| m.ingest.push(took));
        let clock = start.0 + k * w;
        shared.fleet_ms.store(clock as u64, Ordering::Relaxed);
        // The usage events of each fleet hour the windows have closed.
        while hour_posted + 3_600_000 <= clock {
            if let Err(e) = post_usage(&shared, &fleet, Timestamp(hour_posted)).await {
                shared.error(&e);
            }
            hour_posted += 3_600_000;
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    for t in tasks.drain(..) {
        t.await?;
    }
    recorder.await??;

    // Nothing acknowledged lost, nothing counted twice: the month counts exactly the samples sent.
    let a = shared
        .http
        .get(&format!("/v1/finops/gpu/allocation?from={start}&to={end}"))
        .await?;
    let counted: u64 = a["deployments"]
        .as_array()
        .map(|d| d.iter().map(|x| x["samples"].as_u64().unwrap_or(0)).sum())
        .unwrap_or(0);
    println!("soak_samples_sent={sent}");
    println!("soak_samples_counted={counted}");
    println!("soak_events_sent={}", shared.events.load(Ordering::Relaxed));
    println!("soak_keys_churned={}", shared.keys.load(Ordering::Relaxed));
    println!(
        "soak_policy_versions={}",
        shared.policies.load(Ordering::Relaxed)
    );
    println!("soak_fleet_reached={}", shared.fleet_now());
    if counted != sent {
        eprintln!("soak: the month counts {counted} samples, {sent} were acknowledged");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Each shared deployment's hour: three tenants by tokens (as `bench load` does).
async fn post_usage(shared: &Shared, fleet: &Fleet, hour: Timestamp) -> anyhow::Result<()> {
    let mut events = Vec::new();
    for dep in fleet.deployments / 5..fleet.deployments {
        for k in 0..3 {
            events.push(json!({
                "event_id": uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, format!("soak/{}/{dep}/{k}", hour.0).as_bytes()).to_string(),
                "schema_version": "1.0", "tenant_id": tenant((dep + k) % fleet.tenants), "usage_type": "llm_tokens",
                "source": "gateway", "occurred_at": Timestamp(hour.0 + 60_000 * k as i64).to_string(),
                "deployment_id": format!("vllm-{dep}"), "units": {"tokens_in": 1000 + k * 100, "tokens_out": 200}
            }));
        }
    }
    for b in events.chunks(5000) {
        shared
            .http
            .post(
                "/v1/usage/events",
                serde_json::to_vec(&json!({ "events": b }))?,
            )
            .await?;
        shared.events.fetch_add(b.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Every `every_s` seconds, the allocation of the `span_ms` before the fleet's clock (whole hours).
async fn allocation_reader(shared: Arc<Shared>, every_s: u64, span_ms: i64, day: bool) {
    while shared.running() {
        let t = Instant::now();
        let to = shared.fleet_now().floor_to(3_600_000);
        let from = Timestamp(to.0 - span_ms);
        if let Err(e) = shared
            .get(
                &format!("/v1/finops/gpu/allocation?from={from}&to={to}"),
                None,
            )
            .await
        {
            shared.error(&e);
        }
        let took = t.elapsed();
        shared.record(|m| {
            if day {
                m.day.push(took)
            } else {
                m.week.push(took)
            }
        });
        tokio::time::sleep(Duration::from_secs(every_s).saturating_sub(took)).await;
    }
}

/// Every ten seconds a viewer key of a tenant is created, reads its tenant's allocation, and is revoked.
async fn key_churn(shared: Arc<Shared>, tenants: usize) {
    let mut i = 0usize;
    while shared.running() {
        let r: anyhow::Result<()> = async {
            let key = shared
                .http
                .post(
                    "/v1/auth/api-keys",
                    serde_json::to_vec(&json!({
                        "role": "viewer", "tenant_id": tenant(i % tenants.max(1)), "name": format!("soak-{i}")
                    }))?,
                )
                .await?;
            let id = key["id"].as_str().context("no key id")?;
            let secret = key["key"].as_str().context("no key secret")?;
            let to = shared.fleet_now().floor_to(3_600_000);
            let from = Timestamp(to.0 - 86_400_000);
            shared
                .get(&format!("/v1/finops/gpu/allocation?from={from}&to={to}"), Some(secret))
                .await
                .context("the tenant key's read")?;
            shared.http.delete(&format!("/v1/auth/api-keys/{id}")).await?;
            Ok(())
        }
        .await;
        match r {
            Ok(()) => {
                shared.keys.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => shared.error(&e),
        }
        i += 1;
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// Every five minutes the policy is superseded at the fleet's clock with another hourly price.
async fn policy_changes(shared: Arc<Shared>, mut id: String) {
    let mut i = 0u32;
    loop {
        for _ in 0..300 {
            if !shared.running() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        i += 1;
        let at = shared.fleet_now().floor_to(3_600_000);
        let body = json!({ "effective_at": at.to_string(), "gpu_hourly_cost": format!("2.{:02}", 10 + i % 20) });
        let r = match serde_json::to_vec(&body) {
            Ok(b) => {
                shared
                    .http
                    .post(&format!("/v1/finops/allocation-policies/{id}/supersede"), b)
                    .await
            }
            Err(e) => Err(e.into()),
        };
        match r.and_then(|v| {
            v["opened"]["id"]
                .as_str()
                .map(str::to_string)
                .context("the supersede answered no id")
        }) {
            Ok(next) => {
                id = next;
                shared.policies.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => shared.error(&e),
        }
    }
}

fn fds(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(Iterator::count)
}

fn size_bytes(paths: &[PathBuf]) -> u64 {
    fn walk(p: &std::path::Path) -> u64 {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(p)
                .map(|d| d.flatten().map(|e| walk(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    paths.iter().map(|p| walk(p)).sum()
}

/// One line a minute until the soak stops (and one for the last part minute).
async fn recorder(
    shared: Arc<Shared>,
    pid: Option<u32>,
    db: Vec<PathBuf>,
    out: PathBuf,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f =
        std::fs::File::create(&out).with_context(|| format!("cannot write {}", out.display()))?;
    writeln!(
        f,
        "minute\tfleet_time\tsamples\tsamples_per_s\tingest_p50_ms\tingest_p99_ms\tday_p50_ms\tday_p99_ms\tweek_p50_ms\tweek_p99_ms\terrors\tbusy_retries\trss_mib\tfds\tdb_mib\tevents\tkeys\tpolicies"
    )?;
    let started = Instant::now();
    let mut last_samples = 0u64;
    let mut minute = 0u64;
    loop {
        let next = Duration::from_secs(60 * (minute + 1));
        while started.elapsed() < next && shared.running() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        minute += 1;
        let m = shared
            .minute
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        let ms = |v: &mut Vec<Duration>, p: f64| {
            v.sort();
            percentile(v, p).as_secs_f64() * 1e3
        };
        let (mut ingest, mut day, mut week) = (m.ingest, m.day, m.week);
        let samples = shared.samples.load(Ordering::Relaxed);
        let secs = (started.elapsed().as_secs_f64() - 60.0 * (minute - 1) as f64).clamp(1.0, 60.0);
        writeln!(
            f,
            "{minute}\t{}\t{samples}\t{:.0}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{}\t{}\t{:.1}\t{}\t{:.1}\t{}\t{}\t{}",
            shared.fleet_now(),
            (samples - last_samples) as f64 / secs,
            ms(&mut ingest, 0.5),
            ms(&mut ingest, 0.99),
            ms(&mut day, 0.5),
            ms(&mut day, 0.99),
            ms(&mut week, 0.5),
            ms(&mut week, 0.99),
            m.errors,
            m.busy,
            pid.and_then(rss_kib).unwrap_or(0) as f64 / 1024.0,
            pid.and_then(fds).unwrap_or(0),
            size_bytes(&db) as f64 / 1_048_576.0,
            shared.events.load(Ordering::Relaxed),
            shared.keys.load(Ordering::Relaxed),
            shared.policies.load(Ordering::Relaxed),
        )?;
        f.flush()?;
        last_samples = samples;
        if !shared.running() {
            return Ok(());
        }
    }
}

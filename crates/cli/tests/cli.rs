//! The binary as a user runs it: `eai-gpu allocate` on files, `serve` as a process (its crashes, backups,
//! replicas, traces and faults) and the commands run on a store. One test binary: the shared helpers are here,
//! the tests in `cli/`, by command.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eai-gpu"))
}

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A throwaway database on the test PostgreSQL server (`EAI_TEST_POSTGRES_URL`, default
/// `postgres://postgres@127.0.0.1:5432/postgres`; unreachable, the test fails saying how to start it).
fn scratch_pg() -> eai_store::postgres::scratch::ScratchDb {
    eai_store::postgres::scratch::ScratchDb::create_blocking(
        &eai_store::postgres::scratch::test_server_url(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("eai-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A store the demo filled with two days of its fleet (its server stopped once loaded), in a fresh folder of
/// `name`: what the reports that read a store directly are tested on.
fn demo_store(name: &str) -> PathBuf {
    let data = temp_dir(name).join("demo");
    let out = bin()
        .args([
            "demo",
            "--listen",
            "127.0.0.1:0",
            "--days",
            "2",
            "--exit-after-load",
            "--data-dir",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_healthy(base: &str, within: Duration) {
    let start = Instant::now();
    let http = reqwest::blocking::Client::new();
    while start.elapsed() < within {
        if http
            .get(format!("{base}/healthz"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{base} did not become healthy within {within:?}");
}

fn rfc3339(unix_secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// Start of the crash test's samples: two days ago at midnight UTC (inside the raw retention). Read once per
/// test: a run that crosses midnight UTC would otherwise re-send other windows than it sent.
/// Midnight UTC ten days ago: the crash tests' samples start there, 750 s of windows a batch of 200, so that
/// the 1,100 batches or so a fast machine sends in a test stay in the past (from two days back, a run at 02:00
/// UTC reached the future at batch 240 and was refused as a sender with a wrong clock). Well inside the raw
/// retention (35 days).
fn crash_t0() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    (now / 86_400 - 10) * 86_400
}

fn crash_batch(t0: i64, b: usize, n: usize) -> serde_json::Value {
    let samples: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let k = (b * n + i) as i64;
            let end = t0 + 15 * (k / 4 + 1);
            serde_json::json!({
                "node": "gpu-node-1", "gpu_uuid": format!("GPU-crash-{}", k % 4), "model": "H100-80GB",
                "namespace": "ns", "pod": "vllm-crash-0", "deployment_id": "vllm-crash", "window_seconds": 15,
                "utilization": 0.5, "memory_used_gb": 40, "power_w": 400,
                "timestamp": rfc3339(end),
            })
        })
        .collect();
    serde_json::json!({ "samples": samples })
}

/// Sends each of `batches` (of `n` crash samples from `t0`) again: each must be stored already, whole. As a
/// client should, a 429 (the key's rate limit, met when a fast run acknowledged hundreds of batches) is waited
/// out for its `Retry-After` and the same batch sent again.
fn assert_stored_once(
    base: &str,
    key: &str,
    t0: i64,
    batches: impl IntoIterator<Item = usize>,
    n: usize,
) {
    let http = reqwest::blocking::Client::new();
    for b in batches {
        let r: serde_json::Value = loop {
            let resp = http
                .post(format!("{base}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, b, n))
                .send()
                .unwrap();
            if resp.status().as_u16() == 429 {
                let wait = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("a 429 carries Retry-After");
                std::thread::sleep(Duration::from_secs(wait.max(1)));
                continue;
            }
            break resp.json().unwrap();
        };
        assert_eq!(r["accepted"], n as u64, "batch {b}: {r}");
        assert_eq!(
            r["duplicates"], n as u64,
            "batch {b} was acknowledged but lost: {r}"
        );
    }
}

/// The samples the allocation counts for the crash samples' deployment (from `t0`, ten days back, to the end of
/// today).
fn stored_samples(base: &str, key: &str, t0: i64) -> u64 {
    let a: serde_json::Value = reqwest::blocking::Client::new()
        .get(format!(
            "{base}/v1/finops/gpu/allocation?from={}&to={}",
            rfc3339(t0),
            rfc3339(t0 + 11 * 86_400)
        ))
        .bearer_auth(key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    a["deployments"][0]["samples"]
        .as_u64()
        .unwrap_or_else(|| panic!("no samples in {a}"))
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every audit event, oldest first, read page by page.
fn audit_events(http: &reqwest::blocking::Client, base: &str, key: &str) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    let mut after = 0u64;
    loop {
        let page: serde_json::Value = http
            .get(format!("{base}/v1/audit/events?after={after}&limit=1000"))
            .bearer_auth(key)
            .send()
            .unwrap()
            .json()
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        let Some(last) = items.last() else {
            return all;
        };
        after = last["seq"].as_u64().unwrap();
        all.extend(items);
    }
}

/// The value of an unlabelled or labelled series in a `/metrics` text, if present.
fn metric(text: &str, series: &str) -> Option<String> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')
            .map(str::to_string)
    })
}

/// Samples of `gpus` GPUs of deployment `vllm-ha` (GPU uuids prefixed by `prefix`) over `hours` closed hours
/// from `t0`, in batches of 240.
fn ha_batches(prefix: &str, gpus: usize, t0: i64, hours: i64) -> Vec<serde_json::Value> {
    let mut samples = Vec::new();
    for g in 0..gpus {
        for k in 0..(hours * 240) {
            samples.push(serde_json::json!({
                "node": format!("node-{prefix}"), "gpu_uuid": format!("GPU-{prefix}-{g}"), "model": "H100-80GB",
                "namespace": "ns", "pod": format!("vllm-ha-{prefix}"), "deployment_id": "vllm-ha",
                "window_seconds": 15, "utilization": 0.5, "memory_used_gb": 40, "power_w": 400,
                "timestamp": rfc3339(t0 + 15 * (k + 1)),
            }));
        }
    }
    samples
        .chunks(240)
        .map(|c| serde_json::json!({ "samples": c }))
        .collect()
}

/// The allocation's non-zero items over `[from, to)`, by (tenant, deployment): what the batch must record.
fn allocation_items(
    http: &reqwest::blocking::Client,
    base: &str,
    key: &str,
    from: &str,
    to: &str,
) -> std::collections::BTreeMap<(String, String), rust_decimal::Decimal> {
    let a: serde_json::Value = http
        .get(format!(
            "{base}/v1/finops/gpu/allocation?from={from}&to={to}"
        ))
        .bearer_auth(key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let mut expected: std::collections::BTreeMap<(String, String), rust_decimal::Decimal> =
        Default::default();
    for i in a["items"].as_array().unwrap() {
        let amount: rust_decimal::Decimal =
            i["allocated"]["amount"].as_str().unwrap().parse().unwrap();
        if amount.is_zero() {
            continue;
        }
        let k = (
            i["tenant_id"].as_str().unwrap().to_string(),
            i["deployment_id"].as_str().unwrap().to_string(),
        );
        assert!(
            expected.insert(k, amount).is_none(),
            "one item per tenant and deployment here: {a}"
        );
    }
    expected
}

/// Where a test's store is, to read it after (or without) its server.
enum StoreAt<'a> {
    Sqlite(&'a std::path::Path),
    Postgres(&'a str),
}

/// The non-zero `gpu_local` events the batch stored for `period`, by (tenant, deployment); none twice.
fn gpu_local_events(
    at: &StoreAt,
    period: &str,
) -> std::collections::BTreeMap<(String, String), rust_decimal::Decimal> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let events = rt.block_on(async {
        let store: Box<dyn eai_store::Store> = match at {
            StoreAt::Sqlite(path) => Box::new(eai_store::sqlite::SqliteStore::open(path).unwrap()),
            StoreAt::Postgres(url) => {
                Box::new(eai_store::postgres::PgStore::open(url).await.unwrap())
            }
        };
        let (start, end) = eai_engine::batch::month(period).unwrap();
        store
            .usage_events(eai_store::Scope::Platform, start, end)
            .await
            .unwrap()
    });
    let mut got: std::collections::BTreeMap<(String, String), rust_decimal::Decimal> =
        Default::default();
    let mut ids = std::collections::BTreeSet::new();
    for e in events.iter().filter(|e| {
        e.usage_type == eai_engine::batch::GPU_LOCAL && e.run_id.as_deref() == Some(period)
    }) {
        assert!(ids.insert(e.event_id), "event {} twice", e.event_id);
        let amount = e.cost.as_ref().unwrap().0.get();
        if amount.is_zero() {
            continue;
        }
        let k = (e.tenant_id.to_string(), e.deployment_id.clone().unwrap());
        assert!(
            got.insert(k, amount).is_none(),
            "two events for one tenant and deployment"
        );
    }
    got
}

/// The command of `serve` on 127.0.0.1:`port` and a data folder (and `database_url` when given), with `key` as
/// its first admin key: the tests add their settings and spawn it.
fn serve_cmd(dir: &std::path::Path, port: u16, key: &str, database_url: Option<&str>) -> Command {
    let mut cmd = bin();
    cmd.args([
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data-dir",
    ])
    .arg(dir);
    if let Some(url) = database_url {
        cmd.args(["--database-url", url]);
    }
    cmd.env("EAI_BOOTSTRAP_ADMIN_KEY", key);
    cmd
}

/// `serve` on a data folder (and `database_url` when given), with `key` as its first admin key, once healthy.
fn serve_on(dir: &std::path::Path, port: u16, key: &str, database_url: Option<&str>) -> Server {
    let mut cmd = serve_cmd(dir, port, key, database_url);
    // The log, for a failing test's reader: eai-serve-<port>.log in the temp folder.
    let log =
        std::fs::File::create(std::env::temp_dir().join(format!("eai-serve-{port}.log"))).unwrap();
    let s = Server(
        cmd.env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    wait_healthy(&format!("http://127.0.0.1:{port}"), Duration::from_secs(30));
    s
}

fn post_policy(http: &reqwest::blocking::Client, base: &str, key: &str) {
    let r = http
        .post(format!("{base}/v1/finops/allocation-policies"))
        .bearer_auth(key)
        .json(
            &serde_json::json!({ "name": "flat", "currency": "EUR", "gpu_hourly_cost": "2.50",
            "effective_from": "2020-01-01" }),
        )
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
}

#[path = "cli/allocate.rs"]
mod allocate;

#[path = "cli/demo.rs"]
mod demo;

#[path = "cli/crash.rs"]
mod crash;

#[path = "cli/explain.rs"]
mod explain;

#[path = "cli/anomalies.rs"]
mod anomalies;
#[path = "cli/forecast.rs"]
mod forecast;
#[path = "cli/statement.rs"]
mod statement;

#[path = "cli/keys.rs"]
mod keys;

#[path = "cli/replicas.rs"]
mod replicas;

#[path = "cli/traces.rs"]
mod traces;

#[path = "cli/export.rs"]
mod export;

#[path = "cli/focus_conformance.rs"]
mod focus_conformance;

#[path = "cli/backup.rs"]
mod backup;

#[path = "cli/sampler.rs"]
mod sampler;

#[path = "cli/import.rs"]
mod import;

#[path = "cli/slurm.rs"]
mod slurm;

#[path = "cli/failover.rs"]
mod failover;

//! The binary as a user runs it: `eai-gpu allocate` on files.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eai-gpu"))
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/worked")
        .join(name)
}

/// The load generator is the cargo feature `bench` (scripts/bench.sh builds it): the shipped binary has none.
#[test]
fn bench_is_in_the_binary_only_with_the_bench_feature() {
    let out = bin().args(["bench", "--help"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "bench") {
        assert!(out.status.success(), "{stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("ingest"));
    } else {
        assert!(
            !out.status.success(),
            "`eai-gpu bench` ran without the bench feature"
        );
        assert!(
            stderr.contains("unrecognized subcommand 'bench'"),
            "{stderr}"
        );
    }
}

#[test]
fn allocate_prints_the_worked_example() {
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(example("samples.json"))
        .arg("--usage")
        .arg(example("usage.json"))
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("vllm-llama-70b"))
        .expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "vllm-llama-70b",
            "480",
            "0",
            "2",
            "2",
            "1.64",
            "0.8",
            "5.19",
            "5.19",
            "0.00",
            "0",
            "EUR"
        ]
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10") && l.contains(" 3.63 ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21") && l.contains(" 1.56 ")),
        "{text}"
    );
}

#[test]
fn allocate_json_has_the_api_shape() {
    let out = bin()
        .args([
            "allocate",
            "--json",
            "--from",
            "2026-10-01",
            "--to",
            "2026-10-02",
            "--samples",
        ])
        .arg(example("samples.json"))
        .arg("--usage")
        .arg(example("usage.json"))
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["from"], "2026-10-01T00:00:00Z");
    assert_eq!(v["to"], "2026-10-02T00:00:00Z");
    assert_eq!(v["deployments"][0]["cost"], "5.19");
    assert_eq!(v["items"][0]["allocated"]["currency"], "EUR");
    assert_eq!(v["items"][0]["policy_id"], "alp_1");
    let amounts: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["allocated"]["amount"].as_str().unwrap())
        .collect();
    assert_eq!(amounts, ["1.56", "3.63"]);
}

#[test]
fn a_bad_file_names_the_file_the_record_and_the_field() {
    let dir = std::env::temp_dir().join(format!("eai-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad-samples.json");
    std::fs::write(
        &bad,
        r#"{"samples":[{"node":"n","gpu_uuid":"GPU-1","model":"H100","namespace":"ns","pod":"p","deployment_id":"d",
             "window_seconds":15,"utilization":0.5,"memory_used_gb":1,"power_w":300,"timestamp":"2026-10-01T00:00:15Z"},
            {"node":"n","gpu_uuid":"GPU-1","model":"H100","namespace":"ns","pod":"p","deployment_id":"d",
             "window_seconds":15,"utilization":1.5,"memory_used_gb":1,"power_w":-3,"timestamp":"2026-10-01T00:00:30Z"}]}"#,
    )
    .unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(&bad)
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "bad-samples.json: sample 1, field `utilization`: must be at least 0 and at most 1"
        ),
        "{err}"
    );
    assert!(
        err.contains("bad-samples.json: sample 1, field `power_w`: must not be negative"),
        "{err}"
    );

    let not_json = dir.join("broken.json");
    std::fs::write(&not_json, "{ nope").unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(&not_json)
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.json is not valid JSON"));

    let bad_policy = dir.join("policy.json");
    std::fs::write(
        &bad_policy,
        r#"{"name":"p","gpu_hourly_cost":"2","pue":"0.9","currency":"eur"}"#,
    )
    .unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(example("samples.json"))
        .arg("--policies")
        .arg(&bad_policy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policy 0, field `currency`: must be three capital letters"),
        "{err}"
    );
    assert!(err.contains("policy 0, field `pue`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------------------
// The server as a process: the demo answers at the URL it prints; a crash loses no acknowledged batch.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

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

#[test]
fn the_demo_answers_at_the_url_it_prints() {
    let dir = temp_dir("demo");
    let mut child = bin()
        .args([
            "demo",
            "--listen",
            "127.0.0.1:0",
            "--days",
            "2",
            "--data-dir",
        ])
        .arg(dir.join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut base = None;
    let mut admin_key = None;
    let mut printed = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if let Some(rest) = line.strip_prefix("eai-gpu demo is running at ") {
            base = Some(rest.trim().to_string());
        }
        if line.contains(" platform_admin ") {
            admin_key = line.split_whitespace().next().map(str::to_string);
        }
        if line.starts_with("Data: ") {
            break;
        }
    }
    let (base, key) = (base.expect(&printed), admin_key.expect(&printed));
    // The tenants' table and the keys' table show a registered tenant's slug beside its id; a tenant seen in
    // data but never registered (initech) shows `-`.
    let row_with = |id: &str, what: &str| {
        printed
            .lines()
            .filter(|l| l.contains(id))
            .filter(|l| l.split_whitespace().any(|w| w == what))
            .count()
    };
    for (slug, id) in [
        ("acme", "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"),
        ("globex", "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21"),
        ("-", "6b9e1f0a-3c2d-4e5f-8a7b-9c0d1e2f3a4b"),
    ] {
        assert_eq!(
            row_with(id, slug),
            2,
            "{slug} beside {id}, in both tables:\n{printed}"
        );
    }
    for dep in [
        "vllm-llama-70b",
        "vllm-mixtral",
        "vllm-small",
        "experimental-sd",
        "idle",
    ] {
        assert!(
            printed.lines().any(|l| l.starts_with(dep)),
            "{dep} missing from\n{printed}"
        );
    }
    let http = reqwest::blocking::Client::new();
    assert!(http
        .get(format!("{base}/healthz"))
        .send()
        .unwrap()
        .status()
        .is_success());
    let a: serde_json::Value = http
        .get(format!("{base}/v1/finops/gpu/allocation"))
        .bearer_auth(&key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let deps = a["deployments"].as_array().unwrap();
    assert!(deps.len() >= 5, "{a}");
    let unpriced = deps
        .iter()
        .find(|d| d["deployment_id"] == "experimental-sd")
        .unwrap();
    assert!(unpriced["unpriced_samples"].as_u64().unwrap() > 0);
    assert_eq!(a["tenants"].as_array().unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
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

#[test]
fn a_kill_9_loses_no_acknowledged_batch_and_counts_none_twice() {
    kill_9_during_ingest("crash", None);
}

/// The same crash on PostgreSQL (a scratch database on the server at `EAI_TEST_POSTGRES_URL`, default
/// `postgres://postgres@127.0.0.1:5432/postgres`; unreachable, the test fails saying how to start it).
#[test]
fn a_kill_9_loses_no_acknowledged_batch_and_counts_none_twice_on_postgres() {
    let db = scratch_pg();
    kill_9_during_ingest("crash-pg", Some(db.url()));
}

/// Streams batches to `eai-gpu serve`, kills it -9 mid-stream, restarts it on the same store (`database_url`,
/// or the SQLite file of its data folder) and checks every acknowledged batch is there, once.
fn kill_9_during_ingest(name: &str, database_url: Option<&str>) {
    let dir = temp_dir(name);
    let key = "eai_live_crashtestcrashtestcrashtestcrashtestcrashtest0001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let start = || {
        Server(
            serve_cmd(&dir.join("data"), port, key, database_url)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let mut server = start();
    wait_healthy(&base, Duration::from_secs(30));

    // A client streams batches on another thread; the server is killed -9 while it does.
    let n = 500;
    let t0 = crash_t0();
    let stream_base = base.clone();
    let acked = std::thread::spawn(move || {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let mut acked = Vec::new();
        for b in 0..400 {
            match http
                .post(format!("{stream_base}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, b, n))
                .send()
            {
                Ok(r) if r.status().is_success() => acked.push(b),
                Ok(r) => panic!("batch {b}: {}", r.status()),
                Err(_) => break, // the server is gone
            }
        }
        acked
    });
    std::thread::sleep(Duration::from_millis(1500));
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    let acked = acked.join().unwrap();
    assert!(
        !acked.is_empty(),
        "no batch was acknowledged before the kill"
    );
    assert!(
        acked.len() < 400,
        "the server was killed after the stream ended: the test proves nothing"
    );

    let _server = start();
    wait_healthy(&base, Duration::from_secs(30));
    // Every acknowledged batch is there: re-sending it finds every sample already stored.
    assert_stored_once(&base, key, t0, acked.iter().copied(), n);
    // Exactly once: the stored samples are the acknowledged ones plus at most the batch in flight.
    let stored = stored_samples(&base, key, t0);
    let acked_samples = (acked.len() * n) as u64;
    assert!(
        stored >= acked_samples && stored <= acked_samples + n as u64,
        "stored {stored}, acknowledged {acked_samples}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_kill_9_during_the_allocation_batch_leaves_its_month_whole_or_untouched() {
    kill_9_during_the_batch("batch-crash", None);
}

#[test]
fn a_kill_9_during_the_allocation_batch_leaves_its_month_whole_or_untouched_on_postgres() {
    let db = scratch_pg();
    kill_9_during_the_batch("batch-crash-pg", Some(db.url()));
}

/// `serve` killed -9 at growing delays after its allocation batch logs that a run started, restarted each
/// time on the same store: after every kill the month's `gpu_local` events are none or exactly the
/// allocation's items (a run's transaction is whole or absent, and once whole never undone), at least two kills
/// land inside a run (started, never finished), and the first run after the last restart records the month.
fn kill_9_during_the_batch(name: &str, database_url: Option<&str>) {
    let dir = temp_dir(name);
    let key = "eai_live_batchcrashbatchcrashbatchcrashbatchcrash00001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let db_file = dir.join("data").join("eai-gpu.db");
    let store = match database_url {
        Some(url) => StoreAt::Postgres(url),
        None => StoreAt::Sqlite(&db_file),
    };
    // A server whose batch (when on) runs a second after start and every second; its log lines on a channel.
    let start = |batch: bool| {
        let mut child = serve_cmd(&dir.join("data"), port, key, database_url)
            .env("EAI_ALLOCATION_BATCH", if batch { "on" } else { "off" })
            .env("EAI_ALLOCATION_BATCH_INTERVAL_SECONDS", "1")
            .env("EAI_LEADER_POLL_SECONDS", "1")
            .env("EAI_RATE_LIMIT_PER_KEY", "0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        (Server(child), rx)
    };

    // Two closed hours of samples of a shared deployment (four GPUs).
    let (seed, _log) = start(false);
    wait_healthy(&base, Duration::from_secs(30));
    let http = reqwest::blocking::Client::new();
    let post = |path: &str, body: &serde_json::Value| {
        let r = http
            .post(format!("{base}{path}"))
            .bearer_auth(key)
            .json(body)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.text().unwrap());
    };
    post(
        "/v1/finops/allocation-policies",
        &serde_json::json!({
            "name": "crash", "deployment_pattern": "*", "currency": "EUR", "gpu_hourly_cost": "2.10",
            "energy_kwh_price": "0.21", "pue": "1.4", "effective_from": "2026-01-01T00:00:00Z"
        }),
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = (now / 3600 - 2) * 3600;
    for batch in ha_batches("k", 4, t0, 2) {
        post("/v1/finops/gpu/samples", &batch);
    }
    // Eight tenants' token claims: eight items, so a run's write is eight events (one transaction).
    for n in 0..8u32 {
        post(
            "/v1/usage/events",
            &serde_json::json!({ "events": [{
                "event_id": uuid::Uuid::new_v4().to_string(), "schema_version": "1.0",
                "tenant_id": format!("{n:08x}-0000-4000-8000-00000000c0de"),
                "usage_type": "llm_tokens", "source": "gateway", "occurred_at": rfc3339(t0 + 600 + i64::from(n)),
                "deployment_id": "vllm-ha", "units": { "tokens_in": 1000 * (n + 1), "tokens_out": 100 }
            }]}),
        );
    }
    let period = eai_engine::batch::month_of(eai_engine::Timestamp(t0 * 1000));
    let (month_start, _) = eai_engine::batch::month(&period).unwrap();
    // Hours after the samples hold nothing: the items are the same whatever closed hour a run ends at.
    let expected = allocation_items(
        &http,
        &base,
        key,
        &month_start.to_string(),
        &rfc3339(t0 + 2 * 3600),
    );
    assert_eq!(expected.len(), 8, "every tenant is charged: {expected:?}");
    drop(seed);

    let started = format!("allocation batch started period={period}");
    // A line with each of `what` (in the first three days of a month the batch also runs the month before).
    let wait_for = |log: &std::sync::mpsc::Receiver<String>, what: &[&str]| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) if what.iter().all(|w| line.contains(w)) => return,
                Ok(_) => {}
                Err(e) => panic!("no log line with {what:?} within 30 s: {e}"),
            }
        }
    };
    let mut landed = Vec::new();
    let mut whole_since = None;
    for (i, delay_ms) in [0u64, 1, 2, 3, 5, 8, 13, 21, 34].into_iter().enumerate() {
        let (mut server, log) = start(true);
        wait_for(&log, &[&started]);
        std::thread::sleep(Duration::from_millis(delay_ms));
        server.0.kill().unwrap(); // SIGKILL
        server.0.wait().unwrap();
        // Everything it logged before it died: did the run that started finish?
        let rest: Vec<String> = log.iter().collect();
        let finished = rest.iter().any(|l| {
            l.contains("recorded gpu_local events") && l.contains(&format!("period={period}"))
        });
        if !finished {
            landed.push(delay_ms);
        }
        let got = gpu_local_events(&store, &period);
        match whole_since {
            Some(k) => assert_eq!(
                got, expected,
                "kill {i} ({delay_ms} ms into a run) undid or cut the month recorded by run {k}"
            ),
            None if got.is_empty() => {}
            None => {
                assert_eq!(
                    got, expected,
                    "kill {i} ({delay_ms} ms into a run) left a part month"
                );
                whole_since = Some(i);
            }
        }
    }
    eprintln!(
        "kills inside a run at {landed:?} ms; the month first whole after kill {whole_since:?}"
    );
    assert!(
        landed.len() >= 2,
        "only {landed:?} of the kills landed inside a run: the test proves nothing"
    );

    // Restarted, the batch records the month at once: the allocation's items, once each.
    let (server, log) = start(true);
    wait_for(
        &log,
        &["recorded gpu_local events", &format!("period={period}")],
    );
    drop(server);
    assert_eq!(gpu_local_events(&store, &period), expected);
    // And the audit chain of every run, finished or not, verifies.
    let mut verify = bin();
    verify
        .args(["audit", "verify", "--data-dir"])
        .arg(dir.join("data"));
    if let Some(url) = database_url {
        verify.args(["--database-url", url]);
    }
    let out = verify.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `eai-gpu explain` on the demo's store: the tables and the API's JSON; its rounded lines sum to the row's
/// cost; `--tenant` shows one tenant and sums the others; a deployment without GPU time exits 1 saying so.
#[test]
fn explain_and_usage_show_a_deployments_charge_and_its_pods_from_the_store() {
    let dir = temp_dir("explain");
    let data = dir.join("demo");
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let (from, to) = (
        rfc3339(now / 3600 * 3600 - 24 * 3600),
        rfc3339(now / 3600 * 3600),
    );
    let explain = |extra: &[&str]| {
        let out = bin()
            .args([
                "explain",
                "--deployment",
                "vllm-llama-70b",
                "--from",
                &from,
                "--to",
                &to,
                "--data-dir",
            ])
            .arg(&data)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, table, err) = explain(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table.contains("vllm-llama-70b: ") && table.contains("rounding (EUR): exact"),
        "{table}"
    );
    // Where its time ran: each pod on its GPU, the whole GPU its own.
    assert!(
        table.contains("where its time ran")
            && table
                .lines()
                .any(|l| l.contains("vllm-llama-70b-0") && l.contains("exclusive")),
        "{table}"
    );
    let (code, json, err) = explain(&["--json"]);
    assert_eq!(code, Some(0), "{err}");
    let e: serde_json::Value = serde_json::from_str(&json).unwrap();
    let pods = e["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2, "two GPUs, one pod: {e}");
    for p in pods {
        assert_eq!(p["group"]["pod"], "vllm-llama-70b-0", "{p}");
        assert_eq!(p["group"]["share"], "exclusive", "{p}");
        assert_eq!(p["gpu_share"], serde_json::json!(1), "{p}");
    }
    let r = &e["rounding"][0];
    let sum: rust_decimal::Decimal = r["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["amount"]
                .as_str()
                .unwrap()
                .parse::<rust_decimal::Decimal>()
                .unwrap()
        })
        .sum();
    assert_eq!(sum.to_string(), r["cost"].as_str().unwrap(), "{e}");
    let tenants: std::collections::BTreeSet<String> = r["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["party"]["tenant_id"].as_str().map(str::to_string))
        .collect();
    assert!(
        tenants.len() >= 2,
        "a shared deployment of several tenants: {e}"
    );
    let one = tenants.iter().next().unwrap().clone();
    let (code, json, err) = explain(&["--json", "--tenant", &one]);
    assert_eq!(code, Some(0), "{err}");
    for other in tenants.iter().filter(|t| **t != one) {
        assert!(
            !json.contains(other.as_str()),
            "{other} shown to {one}: {json}"
        );
    }
    assert!(json.contains("other_tenants"), "{json}");
    // A registered tenant by its slug is the same view as by its id; an unknown slug is an error, not an empty
    // report.
    let acme = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
    assert!(tenants.contains(acme), "{e}");
    let (code, by_id, err) = explain(&["--json", "--tenant", acme]);
    assert_eq!(code, Some(0), "{err}");
    let (code, by_slug, err) = explain(&["--json", "--tenant", "acme"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(by_slug, by_id);
    let (code, _, err) = explain(&["--json", "--tenant", "umbrella"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("--tenant umbrella: no tenant is registered with this slug"),
        "{err}"
    );
    let (code, _, err) = bin()
        .args([
            "explain",
            "--deployment",
            "nothing-here",
            "--from",
            &from,
            "--to",
            &to,
            "--data-dir",
        ])
        .arg(&data)
        .output()
        .map(|o| {
            (
                o.status.code(),
                (),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .unwrap();
    assert_eq!(code, Some(1));
    assert!(err.contains("nothing to explain"), "{err}");

    // `usage`: the same store per pod, its rows summing to the deployment's cost in the allocation.
    let usage = |extra: &[&str]| {
        let out = bin()
            .args(["usage", "--from", &from, "--to", &to, "--data-dir"])
            .arg(&data)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, table, err) = usage(&["--group-by", "pod", "--filter", "deployment:vllm-llama-70b"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table.contains("by pod") && table.contains("total ("),
        "{table}"
    );
    let (code, json, err) = usage(&[
        "--group-by",
        "namespace,pod",
        "--filter",
        "deployment:vllm-llama-70b",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let b: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = b["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{b}");
    let sum: rust_decimal::Decimal = rows
        .iter()
        .map(|r| {
            r["cost"][0]["amount"]
                .as_str()
                .unwrap()
                .parse::<rust_decimal::Decimal>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        sum.to_string(),
        e["rounding"][0]["cost"].as_str().unwrap(),
        "{b}"
    );
    let (code, by_slug, err) = usage(&["--group-by", "deployment", "--tenant", "globex", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, by_id, err) = usage(&[
        "--group-by",
        "deployment",
        "--tenant",
        "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(by_slug, by_id);
    let (code, _, err) = usage(&["--group-by", "rack"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--group-by: `rack` is not a dimension"),
        "{err}"
    );
    // A folder with no store in it (a mistyped --data-dir): said, and no empty store made there.
    let elsewhere = dir.join("not-the-data-dir");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = bin()
        .args(["usage", "--from", &from, "--to", &to, "--data-dir"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("no store at"), "{err}");
    assert!(!elsewhere.join("eai-gpu.db").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Keys and the audit chain offline, as an operator does on the store: create (bound to a node, with an expiry),
/// list (never a secret), rotate, revoke; anchor the chain's head, and `audit verify --expect-head` exits 1 once
/// the tail is cut.
#[test]
fn keys_and_the_anchored_audit_head_from_the_command_line() {
    let dir = temp_dir("keys-audit");
    let d = dir.display().to_string();
    let (ok, out, err) = run(&[
        "keys",
        "create",
        "--role",
        "sampler",
        "--node",
        "gpu-node-3",
        "--expires-at",
        "2099-01-01",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("nodes:  gpu-node-3") && out.contains("key:    eai_live_"),
        "{out}"
    );
    let secret = out
        .lines()
        .find_map(|l| l.strip_prefix("key:    "))
        .unwrap()
        .to_string();
    let (ok, out, err) = run(&["keys", "create", "--role", "viewer", "--data-dir", &d]);
    assert!(
        !ok && err.contains("--tenant is required"),
        "a viewer needs a tenant: {out}{err}"
    );

    let (ok, list, _) = run(&["keys", "list", "--data-dir", &d]);
    assert!(
        ok && list.contains("key_1") && list.contains("sampler") && list.contains("active"),
        "{list}"
    );
    assert!(
        !list.contains(&secret) && !list.contains("eai_live_"),
        "{list}"
    );
    let (ok, out, _) = run(&[
        "keys",
        "rotate",
        "key_1",
        "--grace",
        "10m",
        "--data-dir",
        &d,
    ]);
    assert!(ok && out.contains("the old secret works until"), "{out}");
    let (ok, out, _) = run(&["keys", "revoke", "key_1", "--data-dir", &d]);
    assert!(ok && out.contains("key_1 revoked"), "{out}");
    let (_, list, _) = run(&["keys", "list", "--json", "--data-dir", &d]);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["items"][0]["status"], "revoked", "{v}");

    let (ok, head, _) = run(&["audit", "head", "--data-dir", &d]);
    assert!(ok, "{head}");
    let head = head.trim().to_string();
    assert!(head.starts_with("3:"), "three changes audited: {head}");
    let (ok, out, _) = run(&["audit", "verify", "--expect-head", &head, "--data-dir", &d]);
    assert!(ok && out.contains("still holds the anchored head"), "{out}");

    // The tail cut by someone with the file: the anchored head is no longer there.
    let c = rusqlite::Connection::open(dir.join("eai-gpu.db")).unwrap();
    c.execute("DELETE FROM audit_events WHERE seq >= 3", [])
        .unwrap();
    drop(c);
    let (ok, out, _) = run(&["audit", "verify", "--data-dir", &d]);
    assert!(
        ok,
        "without an anchor the shorter chain holds by itself: {out}"
    );
    let out = bin()
        .args(["audit", "verify", "--expect-head", &head, "--data-dir", &d])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("BROKEN at event 3") && text.contains("tail was cut"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------------------
// Several replicas on one PostgreSQL database: one runs each job, another takes over when it dies.

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

fn leads_batch(http: &reqwest::blocking::Client, base: &str) -> Option<bool> {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .ok()?
        .text()
        .ok()?;
    metric(&text, "eai_leader{task=\"allocation_batch\"}").map(|v| v == "1")
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

/// The `gpu_local` events of `period` the batch wrote, checked against the allocation of the period its last run
/// covered: one event per item of that allocation, each with the item's cost, none twice.
fn check_gpu_local_events(
    http: &reqwest::blocking::Client,
    base: &str,
    key: &str,
    url: &str,
    last_run: &serde_json::Value,
) -> usize {
    let (from, to) = (
        last_run["details"]["from"].as_str().unwrap(),
        last_run["details"]["to"].as_str().unwrap(),
    );
    let period = last_run["resource"]
        .as_str()
        .unwrap()
        .trim_start_matches("gpu_local/")
        .to_string();
    let expected = allocation_items(http, base, key, from, to);
    let got = gpu_local_events(&StoreAt::Postgres(url), &period);
    assert_eq!(
        got, expected,
        "the gpu_local events are the allocation's items, once each"
    );
    got.len()
}

/// The last of `runs` (audit events, in order) for `resource` that began after the audit event `seq`. A run's
/// audit event is written when it ends, so the first one recorded after `seq` may have read its data before it:
/// the second one recorded after `seq` began after the first ended, and so after `seq`.
fn run_begun_after<'a>(
    runs: &'a [serde_json::Value],
    seq: u64,
    resource: &str,
) -> Option<&'a serde_json::Value> {
    let after: Vec<_> = runs
        .iter()
        .filter(|r| r["seq"].as_u64().unwrap() > seq && r["resource"] == resource)
        .collect();
    after.get(1).and(after.last().copied())
}

#[test]
fn several_replicas_run_each_job_once_and_a_survivor_takes_over_after_a_kill_9() {
    let db = scratch_pg();
    let url = db.url().to_string();
    let dir = temp_dir("replicas");
    let key = "eai_live_replicatestreplicatestreplicatestreplicatest01";
    let start = |name: &str| {
        let port = free_port();
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        let child = serve_cmd(&dir.join(name), port, key, Some(&url))
            .env("EAI_INSTANCE", name)
            .env("EAI_ALLOCATION_BATCH_INTERVAL_SECONDS", "2")
            .env("EAI_LEADER_POLL_SECONDS", "1")
            .env("EAI_BUDGET_CHECK_SECONDS", "1")
            .env("EAI_RATE_LIMIT_PER_KEY", "0")
            .env("EAI_RATE_LIMIT_PER_ADDRESS", "0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        (Server(child), base)
    };
    let (mut a, base_a) = start("replica-a");
    wait_healthy(&base_a, Duration::from_secs(30));
    let (mut b, base_b) = start("replica-b");
    wait_healthy(&base_b, Duration::from_secs(30));
    let http = reqwest::blocking::Client::new();
    let post = |base: &str, path: &str, body: &serde_json::Value| {
        let r = http
            .post(format!("{base}{path}"))
            .bearer_auth(key)
            .json(body)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.text().unwrap());
    };
    post(
        &base_a,
        "/v1/finops/allocation-policies",
        &serde_json::json!({
            "name": "ha", "deployment_pattern": "*", "currency": "EUR", "gpu_hourly_cost": "2.10",
            "energy_kwh_price": "0.21", "pue": "1.4", "effective_from": "2026-01-01T00:00:00Z"
        }),
    );
    // Two closed hours of this month (or the last, which the batch also runs in a month's first days).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = (now / 3600 - 2) * 3600;
    let tenants = [
        "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10",
        "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21",
    ];
    let usage = |n: usize, tenant: &str, tokens: u64| {
        serde_json::json!({ "events": [{
            "event_id": uuid::Uuid::new_v4().to_string(), "schema_version": "1.0", "tenant_id": tenant,
            "usage_type": "llm_tokens", "source": "gateway", "occurred_at": rfc3339(t0 + 600 * n as i64 + 60),
            "deployment_id": "vllm-ha", "model": { "provider": "local", "name": "llama" },
            "units": { "tokens_in": tokens, "tokens_out": tokens / 2 }
        }]})
    };

    // Both replicas ingest at once: samples of different GPUs, and usage events of both tenants.
    std::thread::scope(|s| {
        for (prefix, base) in [("a", &base_a), ("b", &base_b)] {
            let post = &post;
            let usage = &usage;
            s.spawn(move || {
                for (i, batch) in ha_batches(prefix, 2, t0, 2).iter().enumerate() {
                    post(base, "/v1/finops/gpu/samples", batch);
                    if i % 2 == 0 {
                        let tenant = tenants[(i / 2) % 2];
                        post(
                            base,
                            "/v1/usage/events",
                            &usage(i / 2, tenant, 1000 + i as u64),
                        );
                    }
                }
            });
        }
    });
    let ingested_through = audit_events(&http, &base_a, key).last().unwrap()["seq"]
        .as_u64()
        .unwrap();

    // Exactly one replica leads the batch; it alone runs it, every 2 s.
    let leaders = || (leads_batch(&http, &base_a), leads_batch(&http, &base_b));
    let deadline = Instant::now() + Duration::from_secs(30);
    let (leader, follower) = loop {
        match leaders() {
            (Some(true), Some(false)) => break ("replica-a", "replica-b"),
            (Some(false), Some(true)) => break ("replica-b", "replica-a"),
            other => {
                assert!(Instant::now() < deadline, "no single leader: {other:?}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    std::thread::sleep(Duration::from_secs(7));
    // Each job has one leader (not necessarily the same replica for every job).
    for job in ["allocation_batch", "pruner", "budget_chores"] {
        let series = format!("eai_leader{{task=\"{job}\"}}");
        let leading: Vec<&String> = [&base_a, &base_b]
            .into_iter()
            .filter(|b| {
                let text = http
                    .get(format!("{b}/metrics"))
                    .send()
                    .unwrap()
                    .text()
                    .unwrap();
                metric(&text, &series).as_deref() == Some("1")
            })
            .collect();
        assert_eq!(leading.len(), 1, "{job}: {leading:?}");
    }
    let runs = |events: &[serde_json::Value]| -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| e["action"] == "allocation_batch.run")
            .cloned()
            .collect()
    };
    let events = audit_events(&http, &base_a, key);
    let before_kill = runs(&events);
    assert!(
        before_kill.len() >= 2,
        "the leader ran the batch: {before_kill:?}"
    );
    for r in &before_kill {
        assert_eq!(
            r["details"]["instance"], leader,
            "only the leader runs the batch: {r}"
        );
    }
    // Once per interval: a month's runs are at least (nearly) the interval apart.
    let times = |rs: &[serde_json::Value], period: &str| -> Vec<i64> {
        rs.iter()
            .filter(|r| r["resource"] == format!("gpu_local/{period}"))
            .map(|r| {
                time::OffsetDateTime::parse(
                    r["occurred_at"].as_str().unwrap(),
                    &time::format_description::well_known::Rfc3339,
                )
                .unwrap()
                .unix_timestamp()
            })
            .collect()
    };
    let period = before_kill.last().unwrap()["resource"]
        .as_str()
        .unwrap()
        .trim_start_matches("gpu_local/")
        .to_string();
    let t = times(&before_kill, &period);
    for w in t.windows(2) {
        assert!(
            w[1] - w[0] >= 1,
            "two runs of {period} within a second: {t:?}"
        );
    }
    let month = format!("gpu_local/{}", &rfc3339(t0)[..7]);
    let last =
        run_begun_after(&before_kill, ingested_through, &month).expect("a run after the ingest");
    let n = check_gpu_local_events(&http, &base_a, key, &url, last);
    assert!(n >= 2, "both tenants are charged: {n}");

    // kill -9 the leader: the survivor takes the lease within the poll (well within a minute) and runs the batch.
    let (dead, survivor_base) = if leader == "replica-a" {
        (&mut a, base_b.clone())
    } else {
        (&mut b, base_a.clone())
    };
    dead.0.kill().unwrap(); // SIGKILL
    dead.0.wait().unwrap();
    let killed = Instant::now();
    while leads_batch(&http, &survivor_base) != Some(true) {
        assert!(
            killed.elapsed() < Duration::from_secs(60),
            "no takeover within a minute"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let takeover = killed.elapsed();
    // The other one-replica jobs move too.
    for job in ["pruner", "budget_chores"] {
        let series = format!("eai_leader{{task=\"{job}\"}}");
        loop {
            let text = http
                .get(format!("{survivor_base}/metrics"))
                .send()
                .unwrap()
                .text()
                .unwrap();
            if metric(&text, &series).as_deref() == Some("1") {
                break;
            }
            assert!(
                killed.elapsed() < Duration::from_secs(60),
                "{job}: no takeover within a minute"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // More usage after the kill, sent to the survivor: the next run charges it, nothing lost or doubled.
    post(
        &survivor_base,
        "/v1/usage/events",
        &usage(5, tenants[0], 7777),
    );
    let sent = audit_events(&http, &survivor_base, key).last().unwrap()["seq"]
        .as_u64()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        let events = audit_events(&http, &survivor_base, key);
        if let Some(r) = run_begun_after(&runs(&events), sent, &month) {
            break r.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the survivor never ran the batch"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(after["details"]["instance"], follower, "{after}");
    check_gpu_local_events(&http, &survivor_base, key, &url, &after);
    eprintln!("takeover after kill -9: {takeover:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------------------
// Traces: OTLP/HTTP export, decoded by a receiver as a collector would, and the trace of a sample from the
// sampler to the database.

/// A span as the receiver decoded it.
#[derive(Debug, Clone)]
struct ReceivedSpan {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: std::collections::BTreeMap<String, String>,
}

/// An OTLP/HTTP receiver on a free port: decodes every `POST /v1/traces` (protobuf) and keeps its spans.
fn otlp_receiver() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<ReceivedSpan>>>) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
    use prost::Message as _;
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = spans.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head_end, content_length) = loop {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (None, 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap_or(0));
                    break (Some(i + 4), len);
                }
            };
            let Some(start) = head_end else { continue };
            while buf.len() < start + content_length {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buf[..start]).to_string();
            assert!(
                head.starts_with("POST /v1/traces "),
                "unexpected request: {head}"
            );
            assert!(
                head.to_ascii_lowercase()
                    .contains("content-type: application/x-protobuf"),
                "{head}"
            );
            let req = ExportTraceServiceRequest::decode(&buf[start..start + content_length])
                .expect("an OTLP protobuf body");
            let text = |v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>| match v
                .as_ref()
                .and_then(|v| v.value.clone())
            {
                Some(AnyValue::StringValue(s)) => s,
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                _ => String::new(),
            };
            let mut got = Vec::new();
            for rs in req.resource_spans {
                let service = rs
                    .resource
                    .iter()
                    .flat_map(|r| r.attributes.iter())
                    .find(|kv| kv.key == "service.name")
                    .map(|kv| text(&kv.value))
                    .unwrap_or_default();
                for ss in rs.scope_spans {
                    for s in ss.spans {
                        got.push(ReceivedSpan {
                            service: service.clone(),
                            name: s.name.clone(),
                            trace_id: hex(&s.trace_id),
                            span_id: hex(&s.span_id),
                            parent_span_id: hex(&s.parent_span_id),
                            attributes: s
                                .attributes
                                .iter()
                                .map(|kv| (kv.key.clone(), text(&kv.value)))
                                .collect(),
                        });
                    }
                }
            }
            keep.lock().unwrap().extend(got);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (port, spans)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Waits until `pred` holds of the spans received.
fn wait_spans(
    spans: &std::sync::Mutex<Vec<ReceivedSpan>>,
    what: &str,
    pred: impl Fn(&[ReceivedSpan]) -> bool,
) -> Vec<ReceivedSpan> {
    let start = Instant::now();
    loop {
        let got = spans.lock().unwrap().clone();
        if pred(&got) {
            return got;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: not received; got {:#?}",
            got.iter()
                .map(|s| (&s.service, &s.name, &s.trace_id))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn spans_are_exported_over_otlp_and_a_samples_trace_goes_from_the_sampler_to_the_database() {
    let (otlp_port, spans) = otlp_receiver();
    let otlp = format!("http://127.0.0.1:{otlp_port}");
    let dir = temp_dir("otlp");
    let key = "eai_live_otlptestotlptestotlptestotlptestotlptestotlptest01";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = Server(
        serve_cmd(&dir.join("data"), port, key, None)
            .env("EAI_ALLOCATION_BATCH", "off")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&base, Duration::from_secs(30));

    // 1. A caller's trace continues in the server: the request's span is a child of the caller's, its store
    //    call a child of it, with the eai.* attributes.
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let resp = reqwest::blocking::Client::new()
        .post(format!("{base}/v1/finops/gpu/samples"))
        .bearer_auth(key)
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .header("x-eai-project", "alpha")
        .header("baggage", "eai.run_id=run-7,eai.agent_id=agent-3")
        .json(&crash_batch(crash_t0(), 0, 4))
        .send()
        .unwrap();
    assert!(resp.status().is_success());
    let answered = resp.headers()["traceparent"].to_str().unwrap().to_string();
    assert!(answered.starts_with(&format!("00-{trace}-")), "{answered}");
    let got = wait_spans(&spans, "the request's spans", |s| {
        s.iter()
            .any(|x| x.trace_id == trace && x.name == "store.insert_samples")
    });
    let request = got
        .iter()
        .find(|s| s.trace_id == trace && s.name == "POST /v1/finops/gpu/samples")
        .expect("the request's span");
    assert_eq!(request.service, "eai-gpu");
    assert_eq!(request.parent_span_id, parent);
    assert_eq!(
        answered,
        format!("00-{trace}-{}-01", request.span_id),
        "the answered traceparent names the exported span"
    );
    assert_eq!(request.attributes["eai.project"], "alpha");
    assert_eq!(request.attributes["eai.run_id"], "run-7");
    assert_eq!(request.attributes["eai.agent_id"], "agent-3");
    assert_eq!(request.attributes["eai.key_id"], "key_1");
    let store = got
        .iter()
        .find(|s| s.trace_id == trace && s.name == "store.insert_samples")
        .unwrap();
    assert_eq!(
        store.parent_span_id, request.span_id,
        "the store call is a child of the request"
    );
    assert_eq!(store.attributes["db.system"], "sqlite");

    // 2. The sampler's trace: its tick and delivery, its POST continued by the server, down to the store.
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/dcgm_h100x8_k8s_gpu_operator_sampled.prom")
        .canonicalize()
        .unwrap();
    let out = bin()
        .args(["sampler", "--once", "--node", "gpu-node-7", "--dcgm-url"])
        .arg(format!("file://{}", fixture.display()))
        .args(["--control-plane", &base, "--spool-dir"])
        .arg(dir.join("spool"))
        .env("EAI_API_KEY", key)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = wait_spans(&spans, "the sampler's trace down to the store", |s| {
        s.iter()
            .filter(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.deliver")
            .any(|d| {
                s.iter().any(|x| {
                    x.service == "eai-gpu"
                        && x.trace_id == d.trace_id
                        && x.name == "store.insert_samples"
                })
            })
    });
    let deliver = got
        .iter()
        .find(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.deliver")
        .unwrap();
    let tick = got
        .iter()
        .find(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.tick")
        .unwrap();
    assert_eq!(deliver.trace_id, tick.trace_id);
    assert_eq!(deliver.parent_span_id, tick.span_id);
    let server = got
        .iter()
        .find(|x| {
            x.service == "eai-gpu"
                && x.trace_id == deliver.trace_id
                && x.name == "POST /v1/finops/gpu/samples"
        })
        .expect("the server continued the sampler's trace");
    assert_eq!(
        server.parent_span_id, deliver.span_id,
        "the POST carries the delivery's traceparent"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `export focus` on the store: the header of every FOCUS column to stdout for a month without usage, a Parquet
/// file with `--format parquet`, and clear errors for a bad month or format.
#[test]
fn export_focus_writes_the_month_to_a_file_or_stdout() {
    let dir = temp_dir("focus");
    let d = dir.join("data").display().to_string();
    // Not a store yet: said, and none made.
    let (ok, _, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--out",
        "-",
        "--data-dir",
        &d,
    ]);
    assert!(!ok && err.contains("no store at"), "{err}");
    let (ok, _, err) = run(&["migrate", "--data-dir", &d]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--out",
        "-",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{err}");
    assert!(out.starts_with("BilledCost,BillingAccountId,"), "{out}");
    assert_eq!(out.lines().count(), 1, "no usage, no rows: {out}");
    let file = dir.join("october.parquet");
    let (ok, _, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--format",
        "parquet",
        "--out",
        &file.display().to_string(),
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("0 FOCUS row(s)"), "{err}");
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    for (args, says) in [
        (["--period", "2026-13", "--format", "csv"], "YYYY-MM"),
        (
            ["--period", "2026-10", "--format", "xlsx"],
            "`csv` or `parquet`",
        ),
    ] {
        let mut all = vec!["export", "focus", "--out", "-", "--data-dir", &d];
        all.extend(args);
        let (ok, _, err) = run(&all);
        assert!(!ok && err.contains(says), "{err}");
    }
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

/// The lines of a check that must agree between a store and its copy: the audit head and every month's.
fn check_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("audit chain:") || l.starts_with("month "))
        .map(str::to_string)
        .collect()
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

/// `eai-gpu backup` copies the embedded store while a client streams batches into it: the copy holds every
/// batch acknowledged before the backup began, passes its checks (integrity, audit chain), and restores into a
/// store that serves; a restore refuses a store in use; a backup of the idle store restores to the same audit
/// head and the same allocation of every month (digests of the API's JSON) as the store it came from.
#[test]
fn a_backup_taken_under_load_restores_every_acknowledged_batch_and_the_same_bills() {
    let dir = temp_dir("backup");
    let data = dir.join("data");
    let key = "eai_live_backuptestbackuptestbackuptestbackuptest00001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = serve_on(&data, port, key, None);
    let http = reqwest::blocking::Client::new();
    post_policy(&http, &base, key);

    let n = 500;
    let t0 = crash_t0();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stream = {
        let (stop, acked, base) = (stop.clone(), acked.clone(), base.clone());
        std::thread::spawn(move || {
            let http = reqwest::blocking::Client::new();
            let mut b = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let r = http
                    .post(format!("{base}/v1/finops/gpu/samples"))
                    .bearer_auth(key)
                    .json(&crash_batch(t0, b, n))
                    .send()
                    .unwrap();
                assert!(r.status().is_success(), "batch {b}: {}", r.status());
                acked.lock().unwrap().push(b);
                b += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    let before: Vec<usize> = acked.lock().unwrap().clone();
    let out = dir.join("under-load.db");
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    std::thread::sleep(Duration::from_millis(500));
    let during = acked.lock().unwrap().len();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    stream.join().unwrap();
    assert!(ok, "{o}{e}");
    assert!(
        o.contains("integrity ok") && o.contains("audit chain: verified"),
        "{o}"
    );
    assert!(
        !before.is_empty(),
        "no batch was acknowledged before the backup"
    );
    assert!(
        during > before.len(),
        "no batch was acknowledged while the backup ran: the test proves nothing"
    );
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(!ok && e.contains("exists already"), "{o}{e}");

    // A restore into the folder the server holds open is refused; into a new folder it serves.
    let (ok, o, e) = run(&[
        "restore",
        &out.display().to_string(),
        "--data-dir",
        &data.display().to_string(),
        "--replace",
    ]);
    assert!(!ok && e.contains("in use"), "{o}{e}");
    let restored = dir.join("restored");
    let (ok, o, e) = run(&[
        "restore",
        &out.display().to_string(),
        "--data-dir",
        &restored.display().to_string(),
    ]);
    assert!(
        ok && o.contains("audit chain: verified") && o.contains("month "),
        "{o}{e}"
    );
    let (ok, o, e) = run(&[
        "audit",
        "verify",
        "--data-dir",
        &restored.display().to_string(),
    ]);
    assert!(ok, "{o}{e}");
    {
        let port2 = free_port();
        let base2 = format!("http://127.0.0.1:{port2}");
        let _copy = serve_on(&restored, port2, key, None);
        for b in &before {
            let r: serde_json::Value = http
                .post(format!("{base2}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, *b, n))
                .send()
                .unwrap()
                .json()
                .unwrap();
            assert_eq!(
                r["duplicates"], n as u64,
                "batch {b} was acknowledged before the backup began but is not in it: {r}"
            );
        }
    }

    // Idle: the copy's check prints what the source's does, line for line.
    let (ok, src, e) = run(&["backup", "check", "--data-dir", &data.display().to_string()]);
    assert!(ok, "{src}{e}");
    let idle = dir.join("idle.db");
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &idle.display().to_string(),
    ]);
    assert!(ok, "{o}{e}");
    let (ok, o, e) = run(&[
        "restore",
        &idle.display().to_string(),
        "--data-dir",
        &restored.display().to_string(),
        "--replace",
    ]);
    assert!(ok && o.contains("kept as"), "{o}{e}");
    let src = check_lines(&src);
    assert!(
        src.iter().any(|l| l.contains(" EUR (allocated")),
        "the source's months carry no cost: {src:?}"
    );
    assert_eq!(check_lines(&o), src);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PostgreSQL is backed up with `pg_dump` as `eai-gpu backup` says; the dump restored with `pg_restore` into an
/// empty database checks (audit chain, every month's allocation) exactly as the source does, and serves.
#[test]
fn a_pg_dump_restored_with_pg_restore_checks_as_its_source() {
    use eai_store::postgres::scratch::{test_server_url, ScratchDb};
    let src = ScratchDb::create_blocking(&test_server_url()).unwrap_or_else(|e| panic!("{e}"));
    let dst = ScratchDb::create_blocking(&test_server_url()).unwrap_or_else(|e| panic!("{e}"));
    let dir = temp_dir("pg-backup");
    let key = "eai_live_pgbackuptestpgbackuptestpgbackuptestpgback0001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::blocking::Client::new();
    {
        let _server = serve_on(&dir, port, key, Some(src.url()));
        post_policy(&http, &base, key);
        let t0 = crash_t0();
        for b in 0..6 {
            let r = http
                .post(format!("{base}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, b, 400))
                .send()
                .unwrap();
            assert!(r.status().is_success());
        }
    }
    let (ok, o, e) = run(&[
        "backup",
        "--database-url",
        src.url(),
        "--out",
        &dir.join("x").display().to_string(),
    ]);
    assert!(
        !ok && e.contains("pg_dump --format=custom --schema=eai"),
        "{o}{e}"
    );

    let dump = dir.join("eai.dump");
    let st = Command::new("pg_dump")
        .args(["--format=custom", "--schema=eai", "--file"])
        .arg(&dump)
        .arg(src.url())
        .status()
        .expect("pg_dump (Debian: postgresql-client) must be installed");
    assert!(st.success());
    let st = Command::new("pg_restore")
        .args(["--exit-on-error", "--dbname", dst.url()])
        .arg(&dump)
        .status()
        .expect("pg_restore");
    assert!(st.success());
    let (ok, a, e) = run(&["backup", "check", "--database-url", src.url()]);
    assert!(ok, "{a}{e}");
    let (ok, b, e) = run(&["backup", "check", "--database-url", dst.url()]);
    assert!(ok, "{b}{e}");
    let a = check_lines(&a);
    assert!(a.iter().any(|l| l.contains(" EUR (allocated")), "{a:?}");
    assert_eq!(check_lines(&b), a);
    // The restored database serves (its service role's grants and row level security came with the dump).
    let _restored = serve_on(&dir, port, key, Some(dst.url()));
    let r = http
        .get(format!("{base}/v1/finops/allocation-policies"))
        .bearer_auth(key)
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PostgreSQL restarted under a streaming client, fast then immediate (a crash, recovered from the WAL at the next
/// start): requests that meet the outage get 503 `unavailable` with `Retry-After` (never a 500), `/readyz` says
/// the store is unreachable, `serve` reconnects by itself, and the client that retries as told loses nothing and
/// doubles nothing. On a cluster of the test's own (the shared test server stays up for the other tests).
#[test]
fn postgres_restarted_during_ingest_answers_503_then_serves_and_loses_nothing() {
    use eai_store::testing::{ScratchCluster, Shutdown};
    let cluster = ScratchCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let db = cluster.url("");
    let dir = temp_dir("pg-restart");
    let key = "eai_live_pgrestarttestpgrestarttestpgrestarttestpgre0001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = serve_on(&dir, port, key, Some(&db));

    let n = 200;
    let t0 = crash_t0();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stream = {
        let (stop, base) = (stop.clone(), base.clone());
        std::thread::spawn(move || {
            let http = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap();
            let (mut acked, mut unavailable) = (0usize, 0usize);
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                // A client as the SDKs and the sampler are: the same batch again after a 503, as told.
                loop {
                    let r = http
                        .post(format!("{base}/v1/finops/gpu/samples"))
                        .bearer_auth(key)
                        .json(&crash_batch(t0, acked, n))
                        .send()
                        .expect("serve stays up while PostgreSQL restarts");
                    let status = r.status().as_u16();
                    if status == 429 {
                        // The key's rate limit (a fast machine): waited out, as any client does.
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                    if status == 503 {
                        let retry = r.headers().get("retry-after").cloned();
                        let body: serde_json::Value = r.json().unwrap();
                        assert_eq!(body["error"]["code"], "unavailable", "{body}");
                        assert!(retry.is_some(), "a 503 without Retry-After: {body}");
                        unavailable += 1;
                        std::thread::sleep(Duration::from_millis(200));
                        continue;
                    }
                    assert_eq!(status, 200, "batch {acked}: {}", r.text().unwrap());
                    break;
                }
                acked += 1;
            }
            (acked, unavailable)
        })
    };
    let http = reqwest::blocking::Client::new();
    let readyz = || {
        http.get(format!("{base}/readyz"))
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    let wait_ready = |what: &str| {
        let start = Instant::now();
        while readyz() != 200 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "not ready 30 s after PostgreSQL came back ({what})"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    for how in [Shutdown::Fast, Shutdown::Immediate] {
        std::thread::sleep(Duration::from_millis(1500));
        cluster.stop(how).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(readyz(), 503, "/readyz while PostgreSQL is down ({how:?})");
        std::thread::sleep(Duration::from_millis(1500));
        cluster.start_server().unwrap_or_else(|e| panic!("{e}"));
        wait_ready(&format!("{how:?}"));
    }
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (acked, unavailable) = stream.join().unwrap();
    assert!(
        unavailable > 0,
        "no request met the outage: the test proves nothing"
    );
    // Every acknowledged batch is stored, once.
    assert_stored_once(&base, key, t0, 0..acked, n);
    assert_eq!(stored_samples(&base, key, t0), (acked * n) as u64);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The embedded store's disk fills up under ingest (a 3 MiB tmpfs): the batch that does not fit answers 503
/// `unavailable` ("disk is full", `Retry-After`), never a 500, and nothing of it is stored; once the file system
/// grows, the same batch is taken, every acknowledged batch is there once, and SQLite's `integrity_check` finds
/// the file sound.
#[test]
fn a_full_disk_answers_503_loses_nothing_and_recovers_when_space_returns() {
    let dir = temp_dir("disk-full");
    let data = dir.join("data");
    let fs = eai_store::testing::Tmpfs::mount(&data, "3m");
    let key = "eai_live_diskfulltestdiskfulltestdiskfulltestdiskfu0001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let server = serve_on(&data, port, key, None);
    let http = reqwest::blocking::Client::new();
    let (n, t0) = (300, crash_t0());
    let post = |b: usize| {
        http.post(format!("{base}/v1/finops/gpu/samples"))
            .bearer_auth(key)
            .json(&crash_batch(t0, b, n))
            .send()
            .unwrap()
    };
    let mut b = 0;
    let refused = loop {
        let r = post(b);
        if r.status().as_u16() != 200 {
            break r;
        }
        b += 1;
        assert!(b < 2000, "3 MiB never filled up");
    };
    let acked = b;
    assert!(
        acked > 0,
        "the first batch was refused: the tmpfs is too small to test anything"
    );
    assert_eq!(refused.status().as_u16(), 503);
    assert!(refused.headers().get("retry-after").is_some());
    let body: serde_json::Value = refused.json().unwrap();
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk is full"),
        "{body}"
    );
    // Still full: refused again, the same way.
    assert_eq!(post(acked).status().as_u16(), 503);

    fs.resize("64m");
    for b in acked..acked + 3 {
        let r = post(b);
        assert_eq!(
            r.status().as_u16(),
            200,
            "batch {b} once space returned: {}",
            r.text().unwrap()
        );
    }
    assert_stored_once(&base, key, t0, 0..acked + 3, n);
    assert_eq!(stored_samples(&base, key, t0), ((acked + 3) * n) as u64);
    drop(server);
    let conn = rusqlite::Connection::open(data.join("eai-gpu.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    drop(fs);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A network namespace joined to this one by a veth pair (10.231.N.1 here, 10.231.N.2 there), to put `serve`
/// behind a link a test can cut and slow down. Needs root (CI runs as root); removed when dropped.
struct NetNs {
    name: String,
    host_if: String,
    there: String,
}

impl NetNs {
    fn create() -> NetNs {
        let id = std::process::id() % 100_000;
        let net = id % 250;
        let ns = NetNs {
            name: format!("eai-net-{id}"),
            host_if: format!("eaih{id}"),
            there: format!("10.231.{net}.2"),
        };
        let peer = format!("eain{id}");
        let here = format!("10.231.{net}.1/30");
        let there = format!("{}/30", ns.there);
        let steps: [&[&str]; 8] = [
            &["netns", "add", &ns.name],
            &[
                "link",
                "add",
                &ns.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &peer,
            ],
            &["link", "set", &peer, "netns", &ns.name],
            &["addr", "add", &here, "dev", &ns.host_if],
            &["link", "set", &ns.host_if, "up"],
            &[
                "netns", "exec", &ns.name, "ip", "addr", "add", &there, "dev", &peer,
            ],
            &["netns", "exec", &ns.name, "ip", "link", "set", &peer, "up"],
            &["netns", "exec", &ns.name, "ip", "link", "set", "lo", "up"],
        ];
        for step in steps {
            let out = Command::new("ip").args(step).output().unwrap();
            assert!(
                out.status.success(),
                "ip {step:?} (the network test needs root and iproute2, as CI has): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ns
    }

    /// The link up (`true`) or cut.
    fn link(&self, up: bool) {
        let st = Command::new("ip")
            .args(["link", "set", &self.host_if, if up { "up" } else { "down" }])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Limits what the host sends to the namespace to `rate` (a token bucket), or lifts the limit.
    fn shape(&self, rate: Option<&str>) {
        let mut cmd = Command::new("tc");
        match rate {
            Some(r) => cmd.args([
                "qdisc",
                "add",
                "dev",
                &self.host_if,
                "root",
                "tbf",
                "rate",
                r,
                "burst",
                "4kbit",
                "latency",
                "2s",
            ]),
            None => cmd.args(["qdisc", "del", "dev", &self.host_if, "root"]),
        };
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "tc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Drops `percent` of the packets entering and leaving the namespace, at random (nftables' `numgen`; this
    /// kernel has no `tc netem`).
    fn lossy(&self, percent: u32) {
        self.nft(&format!(
            "table inet eai_loss {{\n\
               chain in {{ type filter hook input priority 0; numgen random mod 100 < {percent} counter drop; }}\n\
               chain out {{ type filter hook output priority 0; numgen random mod 100 < {percent} counter drop; }}\n\
             }}\n"
        ));
    }

    /// Lets every packet through again; answers how many were dropped.
    fn lossless(&self) -> u64 {
        let listed = self.nft("list table inet eai_loss\n");
        self.nft("delete table inet eai_loss\n");
        listed
            .split("packets ")
            .skip(1)
            .filter_map(|t| t.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    }

    fn nft(&self, script: &str) -> String {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nft (Debian's nftables; scripts/test.sh installs it)");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), script.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "nft: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// One of the sampler's own metrics, as a number (`None` while its listener is not up).
fn sampler_metric(http: &reqwest::blocking::Client, url: &str, name: &str) -> Option<u64> {
    let text = http.get(url).send().ok()?.text().ok()?;
    metric(&text, name)?.parse::<f64>().ok().map(|v| v as u64)
}

/// A real sampler (the DCGM fixture of 8 GPUs as its source, a window a second) pushes to a `serve` behind a
/// link that is cut for 5 s, then throttled to 64 kbit/s for 5 s, then drops a third of its packets for 8 s: the
/// sampler keeps reading into its spool, delivers everything once the link is back, and the control plane stores exactly the samples the sampler spooled, none
/// twice and none invented.
#[test]
fn a_cut_slow_then_lossy_link_between_sampler_and_control_plane_delivers_every_window_once() {
    let ns = NetNs::create();
    let dir = temp_dir("netcut");
    let key = "eai_live_netcuttestnetcuttestnetcuttestnetcuttestne0001";
    let port = free_port();
    let base = format!("http://{}:{port}", ns.there);
    let _server = Server(
        Command::new("ip")
            .args(["netns", "exec", &ns.name])
            .arg(env!("CARGO_BIN_EXE_eai-gpu"))
            .args([
                "serve",
                "--listen",
                &format!("{}:{port}", ns.there),
                "--data-dir",
            ])
            .arg(dir.join("data"))
            .env("EAI_BOOTSTRAP_ADMIN_KEY", key)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&base, Duration::from_secs(30));
    let http = reqwest::blocking::Client::new();
    let created: serde_json::Value = http
        .post(format!("{base}/v1/auth/api-keys"))
        .bearer_auth(key)
        .json(&serde_json::json!({ "role": "sampler", "name": "netcut" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let sampler_key = created["key"].as_str().unwrap().to_string();
    // A copy of the exporter's capture: removed at the end, so that the sampler stops making windows.
    let fixture = dir.join("capture.prom");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/dcgm_h100x8_k8s_gpu_operator_sampled.prom"),
        &fixture,
    )
    .unwrap();
    let metrics_port = free_port();
    let metrics = format!("http://127.0.0.1:{metrics_port}/metrics");
    let sampler = Server(
        bin()
            .args([
                "sampler",
                "--dcgm-url",
                &format!("file://{}", fixture.display()),
            ])
            .args(["--control-plane", &base, "--interval", "1s", "--spool-dir"])
            .arg(dir.join("spool"))
            .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
            .env("EAI_API_KEY", &sampler_key)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let m = |name: &str| {
        sampler_metric(&http, &metrics, name).unwrap_or_else(|| panic!("{name} not in {metrics}"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while sampler_metric(&http, &metrics, "eai_sampler_samples_sent_total").unwrap_or(0) < 16 {
        assert!(Instant::now() < deadline, "the sampler delivered nothing");
        std::thread::sleep(Duration::from_millis(200));
    }

    ns.link(false);
    std::thread::sleep(Duration::from_secs(5));
    // The sampler kept reading a window a second while its request hung on the cut link.
    let queued = m("eai_sampler_spool_batches");
    assert!(
        queued >= 4,
        "windows were not read while the link was cut: {queued} batches queued in 5 s"
    );
    ns.link(true);
    ns.shape(Some("64kbit"));
    std::thread::sleep(Duration::from_secs(5));
    ns.shape(None);
    // Then lossy: a third of the packets each way dropped for 8 s (TCP retransmits, requests time out and are
    // sent again).
    ns.lossy(33);
    std::thread::sleep(Duration::from_secs(8));
    let dropped = ns.lossless();
    assert!(
        dropped > 0,
        "no packet was dropped: the loss proves nothing"
    );
    eprintln!("{dropped} packets dropped in the lossy phase");
    // No more windows from here (each read fails: a scrape error, no sample), then everything spooled is sent.
    std::fs::remove_file(&fixture).unwrap();
    let before = m("eai_sampler_scrape_errors_total");
    let deadline = Instant::now() + Duration::from_secs(60);
    let spooled = loop {
        let (spooled, sent, queued) = (
            m("eai_sampler_samples_spooled_total"),
            m("eai_sampler_samples_sent_total"),
            m("eai_sampler_spool_batches"),
        );
        if queued == 0 && sent >= spooled && m("eai_sampler_scrape_errors_total") > before {
            break spooled;
        }
        assert!(
            Instant::now() < deadline,
            "not delivered 60 s after the link came back: {spooled} spooled, {sent} sent, {queued} queued"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        m("eai_sampler_samples_spooled_total"),
        spooled,
        "a window after the capture went"
    );
    drop(sampler);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let a: serde_json::Value = http
        .get(format!(
            "{base}/v1/finops/gpu/allocation?from={}&to={}",
            rfc3339(now - 2 * 3600),
            rfc3339(now + 3600)
        ))
        .bearer_auth(key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let stored: u64 = a["deployments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(
        stored, spooled,
        "the control plane holds {stored} samples, the sampler spooled {spooled}: {a}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `eai-gpu import` on a real Prometheus: two days of generated DCGM series for three GPUs (one busy whose pod
/// changes half way and that misses an hour of scrapes, one idle, one busy in another namespace), written as
/// OpenMetrics, turned into TSDB blocks by Debian's `promtool tsdb create-blocks-from openmetrics`, served by
/// `prometheus`; the history ends three days ago, past the control plane's raw retention (one day). The import
/// reads sample for sample what a live sampler reading the exporter at each window's end would have sent
/// (`--dry-run` compared with the sampler's own conversion of each window's exposition); imported into a
/// `serve`, the allocation equals that of the live samples posted to another; a second run adds nothing; a run
/// killed -9 half way carries on from its checkpoint to the same allocation; the missing hour is reported as a
/// gap, by the import and by the control plane.
#[test]
fn import_reads_prometheus_history_as_a_live_sampler_would() {
    use eai_engine::Timestamp;
    use eai_sampler::convert::{Converter, Window};
    const W: i64 = 60_000;
    const HOUR: i64 = 3_600_000;
    let dir = temp_dir("import");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let end = (now - 3 * 86_400_000).div_euclid(HOUR) * HOUR;
    let start = end - 2 * 86_400_000;
    let hole = (start + 10 * HOUR, start + 11 * HOUR);
    let gpus = [
        (
            "GPU-0a000000-0000-4000-8000-000000000001",
            Some("acme-prod"),
        ),
        ("GPU-0a000000-0000-4000-8000-000000000002", None),
        (
            "GPU-0a000000-0000-4000-8000-000000000003",
            Some("beta-train"),
        ),
    ];
    // One scrape a minute, a second before each window's end; what each GPU reports at scrape `k`.
    let scrapes: Vec<i64> = (1..=(end - start) / W)
        .map(|k| start + k * W - 1_000)
        .collect();
    let labels = |g: usize, t: i64| -> String {
        let (uuid, ns) = gpus[g];
        let mut l = format!(
            "gpu=\"{g}\",UUID=\"{uuid}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-1\""
        );
        if let Some(ns) = ns {
            let pod = if g == 0 && t >= start + 86_400_000 {
                "vllm-llama-7d9f8-fghij"
            } else if g == 0 {
                "vllm-llama-7d9f8-abcde"
            } else {
                "trainer-0"
            };
            l.push_str(&format!(
                ",namespace=\"{ns}\",pod=\"{pod}\",container=\"main\""
            ));
        }
        l
    };
    let present = |g: usize, t: i64| !(g == 0 && hole.0 <= t && t < hole.1);
    let value = |family: &str, g: usize, k: i64| -> String {
        let power = 100 + (k * 7 + g as i64 * 13) % 250;
        match family {
            "DCGM_FI_DEV_FB_USED" => format!("{}", 1_000 + (k * 31 + g as i64) % 70_000),
            "DCGM_FI_DEV_GPU_UTIL" if g == 1 => "0".to_string(),
            "DCGM_FI_DEV_GPU_UTIL" => format!("{}", (k * 3 + g as i64) % 101),
            "DCGM_FI_DEV_POWER_USAGE" => format!("{power}.5"),
            // mJ since boot: a minute at each scrape's power.
            _ => format!("{}", 1_000_000 + k * (k + 1) / 2 * 60_000 + g as i64),
        }
    };
    let families = [
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ];
    // The history, as OpenMetrics (each series in time order, integer seconds), and the blocks.
    let mut om = String::new();
    for f in families {
        om.push_str(&format!("# TYPE {f} gauge\n"));
        for g in 0..gpus.len() {
            for (k, &t) in scrapes.iter().enumerate() {
                if present(g, t) {
                    om.push_str(&format!(
                        "{f}{{{}}} {} {}\n",
                        labels(g, t),
                        value(f, g, k as i64),
                        t / 1000
                    ));
                }
            }
        }
    }
    // vLLM's counters of GPU 0's pods (the sampler's --vllm-discover series): tokens since each pod started.
    let vllm_at = |k: i64, t: i64| -> (String, [(&'static str, i64); 2]) {
        let pod_start = if t >= start + 86_400_000 {
            86_400_000 / W
        } else {
            0
        };
        let pod = labels(0, t);
        let pod = pod
            .split("pod=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        let n = k - pod_start;
        (
            pod,
            [
                ("vllm:prompt_tokens_total", 1_000 * n),
                ("vllm:generation_tokens_total", 250 * n + n % 7),
            ],
        )
    };
    for name in ["vllm:generation_tokens_total", "vllm:prompt_tokens_total"] {
        for (k, &t) in scrapes.iter().enumerate() {
            let (pod, values) = vllm_at(k as i64, t);
            let v = values.iter().find(|(n, _)| *n == name).unwrap().1;
            om.push_str(&format!(
                "{name}{{namespace=\"acme-prod\",pod=\"{pod}\",model_name=\"llama-70b\",engine=\"0\"}} {v} {}\n",
                t / 1000
            ));
        }
    }
    om.push_str("# EOF\n");
    std::fs::write(dir.join("history.om"), om).unwrap();
    let data = dir.join("tsdb");
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(dir.join("history.om"))
        .arg(&data)
        .output()
        .expect("promtool is missing: the import test needs Debian's `prometheus` package (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  scrape_interval: 15s\n",
    )
    .unwrap();
    let prom_port = free_port();
    let _prometheus = Server(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .args(["--storage.tsdb.retention.time=10y", "--log.level=warn"])
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let prom = format!("http://127.0.0.1:{prom_port}");
    let http = reqwest::blocking::Client::new();
    let t0 = Instant::now();
    loop {
        let n = http
            .get(format!("{prom}/api/v1/query"))
            .query(&[
                ("query", "count(DCGM_FI_DEV_POWER_USAGE)".to_string()),
                ("time", format!("{}", (start + HOUR) / 1000)),
            ])
            .send()
            .ok()
            .and_then(|r| r.json::<serde_json::Value>().ok())
            .and_then(|v| {
                v["data"]["result"][0]["value"][1]
                    .as_str()
                    .map(str::to_string)
            });
        if n.as_deref() == Some("3") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "prometheus did not serve the history: {n:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // What a live sampler would have sent: each window's exposition (the scrape a second before its end),
    // through the sampler's own parser and converter.
    let mut converter = Converter::new(eai_sampler::attribution::Attribution::default(), None);
    let mut live: Vec<eai_client::GpuSample> = Vec::new();
    let mut tracker = eai_sampler::vllm::Tracker::default();
    let mut live_events: Vec<eai_sampler::vllm::UsageEvent> = Vec::new();
    for (k, &t) in scrapes.iter().enumerate() {
        let mut text = String::new();
        for f in families {
            for g in 0..gpus.len() {
                if present(g, t) {
                    text.push_str(&format!(
                        "{f}{{{}}} {}\n",
                        labels(g, t),
                        value(f, g, k as i64)
                    ));
                }
            }
        }
        let e = Timestamp(t + 1_000);
        let readings = eai_sampler::dcgm::from_text(&text, e);
        live.extend(
            converter
                .convert(&readings, Window { end: e, ms: W })
                .samples,
        );
        // The discovery query's answer at the window's end, through the sampler's own reading of it.
        let (pod, values) = vllm_at(k as i64, t);
        let result: Vec<serde_json::Value> = values
            .iter()
            .map(|(name, v)| {
                serde_json::json!({ "metric": { "__name__": name, "namespace": "acme-prod", "pod": pod,
                    "model_name": "llama-70b" }, "value": [e.0 / 1000, v.to_string()] })
            })
            .collect();
        let body = serde_json::json!({ "status": "success",
            "data": { "resultType": "vector", "result": result } });
        let (series, _) = eai_sampler::source::vllm::series_from_query(
            &body.to_string(),
            &eai_sampler::attribution::Attribution::default(),
        )
        .unwrap();
        live_events.extend(tracker.observe(e, &series).events);
    }
    let key = "eai_live_importtestadminkey000000000000000";
    let rfc = |ms: i64| Timestamp(ms).to_string();
    let import = |extra: &[&str]| {
        let mut c = bin();
        c.args([
            "import",
            "--prometheus-url",
            &prom,
            "--from",
            &rfc(start),
            "--to",
            &rfc(end),
        ])
        .args(["--interval", "1m", "--vllm"])
        .args(extra)
        .env("RUST_LOG", "warn");
        c
    };

    // 1. Sample for sample.
    let out = import(&["--dry-run"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |key: &str| -> Vec<serde_json::Value> {
        printed
            .iter()
            .filter_map(|v| v[key].as_array())
            .flatten()
            .cloned()
            .collect()
    };
    let mut got = of("samples");
    let mut got_events = of("events");
    let mut want_events: Vec<serde_json::Value> = live_events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let by_id = |v: &serde_json::Value| v["event_id"].to_string();
    got_events.sort_by_key(by_id);
    want_events.sort_by_key(by_id);
    assert!(want_events.len() > 2_000, "{} events", want_events.len());
    assert!(
        got_events == want_events,
        "vLLM events: {} read, {} live",
        got_events.len(),
        want_events.len()
    );
    let mut want: Vec<serde_json::Value> = live
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    let order = |v: &serde_json::Value| (v["timestamp"].to_string(), v["gpu_uuid"].to_string());
    got.sort_by_key(order);
    want.sort_by_key(order);
    assert_eq!(got.len(), want.len(), "samples read");
    assert!(
        got == want,
        "the first difference: {:?}",
        got.iter().zip(&want).find(|(a, b)| a != b)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scrape interval 60 s"), "{stderr}");
    assert!(
        stderr.contains("gaps: 1 spans, 60 GPU-windows missing"),
        "{stderr}"
    );

    // 2. The control planes: the live samples posted to one, the history imported into another.
    let serve = |name: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let port = free_port();
        let mut cmd = serve_cmd(&d, port, key, None);
        let s = Server(
            cmd.env("EAI_RAW_RETENTION_DAYS", "1")
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(d.join("serve.log")).unwrap())
                .spawn()
                .unwrap(),
        );
        let base = format!("http://127.0.0.1:{port}");
        wait_healthy(&base, Duration::from_secs(30));
        post_policy(&http, &base, key);
        let created: serde_json::Value = http
            .post(format!("{base}/v1/auth/api-keys"))
            .bearer_auth(key)
            .json(&serde_json::json!({ "role": "sampler", "name": "import" }))
            .send()
            .unwrap()
            .json()
            .unwrap();
        (s, base, created["key"].as_str().unwrap().to_string())
    };
    let allocation = |base: &str| -> serde_json::Value {
        let mut v: serde_json::Value = http
            .get(format!("{base}/v1/finops/gpu/allocation"))
            .query(&[("from", rfc(start)), ("to", rfc(end))])
            .bearer_auth(key)
            .send()
            .unwrap()
            .json()
            .unwrap();
        v.as_object_mut()
            .unwrap()
            .retain(|k, _| k != "generated_at" && k != "computed_at");
        v
    };
    let (_a, live_base, live_key) = serve("live");
    for batch in live.chunks(5_000) {
        let r = http
            .post(format!("{live_base}/v1/finops/gpu/samples"))
            .bearer_auth(&live_key)
            .json(&serde_json::json!({ "samples": batch }))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    for batch in live_events.chunks(5_000) {
        let r = http
            .post(format!("{live_base}/v1/usage/events"))
            .bearer_auth(&live_key)
            .json(&serde_json::json!({ "events": batch }))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    let want = allocation(&live_base);
    let tokens = |base: &str| -> serde_json::Value {
        let r = http
            .get(format!("{base}/v1/finops/gpu/token-costs"))
            .query(&[("from", rfc(start)), ("to", rfc(end))])
            .bearer_auth(key)
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
        r.json().unwrap()
    };
    let want_tokens = tokens(&live_base);
    assert!(
        want_tokens.to_string().contains("llama-70b"),
        "{want_tokens}"
    );
    assert!(
        want["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["gpu_uuid"] == gpus[0].0),
        "the live samples' hole is a gap: {}",
        want["gaps"]
    );
    let (_b, base, sampler_key) = serve("imported");
    let checkpoint = dir.join("b.checkpoint.json");
    let run = |base: &str, key: &str, checkpoint: &std::path::Path, extra: &[&str]| {
        let out = import(&["--control-plane", base, "--batch-size", "2000"])
            .arg("--checkpoint")
            .arg(checkpoint)
            .args(extra)
            .env("EAI_API_KEY", key)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        err
    };
    let n = live.len();
    let first = run(&base, &sampler_key, &checkpoint, &[]);
    assert!(
        first.contains(&format!("{n} samples: {n} added, 0 already stored")),
        "{first}"
    );
    assert_eq!(allocation(&base), want, "imported vs live");
    assert_eq!(tokens(&base), want_tokens, "token costs, imported vs live");
    // 3. Again: nothing left (the checkpoint), and from the start, nothing added.
    let again = run(&base, &sampler_key, &checkpoint, &[]);
    assert!(again.contains("this run: 0 samples"), "{again}");
    let over = run(&base, &sampler_key, &checkpoint, &["--restart"]);
    assert!(
        over.contains(&format!("{n} samples: 0 added, {n} already stored")),
        "{over}"
    );
    assert_eq!(allocation(&base), want, "after a second import");

    // 4. Killed half way, then run again: it carries on from the checkpoint.
    let (_c, base_c, key_c) = serve("killed");
    let cp_c = dir.join("c.checkpoint.json");
    let mut child = import(&[
        "--control-plane",
        &base_c,
        "--batch-size",
        "300",
        "--concurrency",
        "1",
    ])
    .arg("--checkpoint")
    .arg(&cp_c)
    .env("EAI_API_KEY", &key_c)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    loop {
        let done = std::fs::read_to_string(&cp_c)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["done_through_ms"].as_i64());
        if done.is_some_and(|d| d > start + 12 * HOUR) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no progress: {done:?}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let resumed = run(&base_c, &key_c, &cp_c, &[]);
    assert!(resumed.contains("resumed after"), "{resumed}");
    assert_eq!(allocation(&base_c), want, "killed and resumed vs live");
    assert_eq!(
        tokens(&base_c),
        want_tokens,
        "token costs, killed and resumed vs live"
    );
}

/// `eai-gpu slurm-reconcile` on a store that measured nothing of Slurm's jobs (sacct's output as Debian's Slurm
/// 22.05 printed it for two jobs): each job with Slurm's allocated GPU-seconds, `not_measured`, in a table and in
/// the API's JSON; a bad threshold and a file that is not sacct's JSON are errors that say so.
#[test]
fn slurm_reconcile_puts_sacct_beside_the_store() {
    let dir = temp_dir("slurm");
    let made = bin()
        .args(["migrate", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let sacct = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sampler/tests/fixtures/slurm/sacct.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sacct).unwrap()).unwrap();
    let start = doc["jobs"][0]["time"]["start"].as_i64().unwrap();
    let day = rfc3339(start / 86_400 * 86_400);
    let next = rfc3339(start / 86_400 * 86_400 + 86_400);
    let run = |extra: &[&str]| {
        let out = bin()
            .args([
                "slurm-reconcile",
                "--from",
                &day,
                "--to",
                &next,
                "--data-dir",
            ])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = sacct.to_str().unwrap();
    let (code, table, err) = run(&["--sacct", file]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table
            .lines()
            .any(|l| l.contains("physics") && l.contains("not_measured")),
        "{table}"
    );
    assert!(
        table.contains("Slurm allocated 0.017 GPU-h, measured 0 GPU-h"),
        "60 GPU-seconds: {table}"
    );
    let (code, json, err) = run(&["--sacct", file, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    let got: Vec<(String, serde_json::Value, String)> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_str().unwrap().to_string(),
                j["allocated_gpu_seconds"].clone(),
                j["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("1".into(), serde_json::json!(40), "not_measured".into()),
            ("2".into(), serde_json::json!(20), "not_measured".into()),
        ]
    );
    let (code, _, err) = run(&["--sacct", file, "--idle-below", "1.5"]);
    assert_eq!(code, Some(2), "a user's error");
    assert!(err.contains("--idle-below"), "{err}");
    let not_json = dir.join("sacct.txt");
    std::fs::write(&not_json, "Slurm accounting storage is disabled\n").unwrap();
    let (code, _, err) = run(&["--sacct", not_json.to_str().unwrap()]);
    assert_eq!(code, Some(2), "a user's error");
    assert!(err.contains("not its JSON"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

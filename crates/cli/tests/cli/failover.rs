//! PostgreSQL failover: `serve` on a Patroni cluster (scripts/pg-ha.sh: etcd, two nodes, synchronous
//! replication) given the multi-host URL with `target_session_attrs=read-write`, under ingest, reservations
//! and the scheduled allocation batch, while the primary's postmaster is killed (-9) and Patroni promotes the
//! standby. Without Patroni, etcd or PostgreSQL's binaries the test fails, saying which is missing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::*;

/// The cluster of scripts/pg-ha.sh in a folder of its own, stopped (every process killed, the folder removed)
/// when dropped.
struct HaCluster {
    script: PathBuf,
    dir: PathBuf,
    env: BTreeMap<String, String>,
}

impl HaCluster {
    fn start() -> HaCluster {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-ha.sh");
        let dir = std::env::temp_dir().join(format!("eai-pg-ha-test-{}", std::process::id()));
        let out = Command::new(&script)
            .arg("start")
            .env("EAI_PG_HA_DIR", &dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/pg-ha.sh start failed (it needs patroni, etcd and PostgreSQL's server binaries: scripts/test.sh \
             installs them):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let env = std::fs::read_to_string(dir.join("env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        HaCluster { script, dir, env }
    }

    fn get(&self, k: &str) -> &str {
        self.env
            .get(k)
            .unwrap_or_else(|| panic!("{k} not in {}", self.dir.display()))
    }

    /// The node (1 or 2) whose Patroni says it is the primary (its REST API's `/primary` answers 200).
    fn leader(&self) -> Option<u8> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        [1u8, 2].into_iter().find(|n| {
            let rest = self.get(&format!("EAI_PG_HA_NODE{n}_REST"));
            http.get(format!("http://127.0.0.1:{rest}/primary"))
                .send()
                .is_ok_and(|r| r.status().is_success())
        })
    }

    /// Kills (-9) node `n`'s postmaster (its pid is the first line of `postmaster.pid`).
    fn kill_postmaster(&self, n: u8) {
        let pidfile =
            PathBuf::from(self.get(&format!("EAI_PG_HA_NODE{n}_DATA"))).join("postmaster.pid");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let pid = pid.lines().next().unwrap().trim();
        let ok = Command::new("kill")
            .args(["-9", pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -9 {pid}");
    }

    /// psql on the current primary: one row per line, fields separated by `|`.
    fn psql(&self, url: &str, sql: &str) -> String {
        let out = Command::new(PathBuf::from(self.get("EAI_PG_HA_BINDIR")).join("psql"))
            .args(["-w", "-Atq", url, "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for HaCluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .arg("stop")
            .env("EAI_PG_HA_DIR", &self.dir)
            .status();
    }
}

/// The tenant whose usage the batch allocates GPU hours by.
const TENANT: &str = "5b8e2c1a-7d3f-4e69-a0b4-c2d1e8f7a635";
/// The tenant that reserves against its budget: no usage of its own, so that nothing but its holds counts
/// against the budget during the run.
const RESERVER: &str = "c3a7d915-2e4b-4f08-9b6c-71d5e0a8f243";
/// GPUs per ingest thread, windows per GPU in a batch, and batches per thread: 3 hours of 15 s windows.
const GPUS: usize = 6;
const WINDOWS: usize = 4;
const BATCHES: usize = 720 / WINDOWS;
/// Reservations of 1.00 against a budget of 60.00: fewer than are asked for.
const BUDGET: u32 = 60;

/// Batch `b` of ingest thread `t`: `WINDOWS` windows of each of its GPUs, from `t0`; power varies, so that the
/// stored sums check more than the counts.
fn batch(prefix: &str, t: usize, b: usize, t0: i64) -> (serde_json::Value, Vec<(String, u64)>) {
    let mut samples = Vec::new();
    let mut sent = Vec::new();
    for g in 0..GPUS {
        for w in 0..WINDOWS {
            let k = b * WINDOWS + w;
            let power = 300 + (k % 97) as u64;
            let gpu = format!("GPU-{prefix}-{t}-{g}");
            samples.push(serde_json::json!({
                "node": format!("node-fo-{t}"), "gpu_uuid": gpu, "model": "H100-80GB",
                "namespace": "ns", "pod": format!("vllm-fo-{t}"), "deployment_id": "vllm-fo",
                "window_seconds": 15, "utilization": 0.5, "memory_used_gb": 40, "power_w": power,
                "timestamp": rfc3339(t0 + 15 * (k as i64 + 1)),
            }));
            sent.push((gpu, power));
        }
    }
    (serde_json::json!({ "samples": samples }), sent)
}

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Per GPU: samples acknowledged, and the sum of their power (W).
    acked: BTreeMap<String, (u64, u64)>,
    /// 503 answers (each with `Retry-After`), and requests whose connection was dropped.
    unavailable: u64,
    dropped: u64,
    /// Anything else (a 500...): must stay empty.
    wrong: Vec<String>,
    /// When a write sent after the kill was first acknowledged.
    first_after_kill: Option<Instant>,
    granted: u64,
    refused: u64,
    in_flight_409: u64,
}

/// What an answer means to a client that retries: `Ok(Some(status))` final, `Ok(None)` to retry after the
/// wait, recorded in `seen`.
fn classify(
    r: reqwest::Result<reqwest::blocking::Response>,
    seen: &Mutex<Seen>,
    what: &str,
) -> Option<(u16, serde_json::Value)> {
    let r = match r {
        Ok(r) => r,
        Err(_) => {
            seen.lock().unwrap().dropped += 1;
            return None;
        }
    };
    let status = r.status().as_u16();
    let retry_after = r.headers().get("retry-after").is_some();
    let body: serde_json::Value = r.json().unwrap_or(serde_json::Value::Null);
    let mut s = seen.lock().unwrap();
    match status {
        503 if retry_after => {
            s.unavailable += 1;
            None
        }
        409 if body["error"]["code"] == "idempotency_key_in_flight" && retry_after => {
            s.in_flight_409 += 1;
            None
        }
        200..=299 | 402 => Some((status, body)),
        _ => {
            s.wrong.push(format!("{what}: {status} {body}"));
            None
        }
    }
}

#[test]
fn postgres_failover_a_killed_primary_loses_no_acknowledged_write_and_serve_recovers_by_itself() {
    let cluster = HaCluster::start();
    let db = eai_store::postgres::scratch::ScratchDb::create_blocking(cluster.get("EAI_PG_HA_URL"))
        .unwrap_or_else(|e| panic!("{e}"));
    let url = db.url().to_string();
    assert!(
        url.contains(',') && url.contains("target_session_attrs=read-write"),
        "{url}"
    );

    let dir = temp_dir("failover");
    let key = "eai_live_failovertestfailovertestfailovertestfailover01";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log_path = dir.join("serve.log");
    let mut server = Server(
        serve_cmd(&dir.join("data"), port, key, Some(&url))
            .env("EAI_ALLOCATION_BATCH_INTERVAL_SECONDS", "1")
            .env("EAI_LEADER_POLL_SECONDS", "1")
            .env("EAI_RATE_LIMIT_PER_KEY", "0")
            .env("EAI_RATE_LIMIT_PER_ADDRESS", "0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&base, Duration::from_secs(30));
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    post_policy(&http, &base, key);
    let b = http
        .post(format!("{base}/v1/finops/budgets"))
        .bearer_auth(key)
        .json(&serde_json::json!({
            "tenant_id": RESERVER, "name": "failover", "limit": { "amount": format!("{BUDGET}.00"), "currency": "EUR" },
            "thresholds_pct": [100], "enforce": true,
        }))
        .send()
        .unwrap();
    assert_eq!(b.status().as_u16(), 201, "{}", b.text().unwrap());
    let budget: serde_json::Value = b.json().unwrap();
    let budget_id = budget["id"].as_str().unwrap().to_string();

    // Three closed hours of samples ending an hour ago (the batch allocates closed hours).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = (now / 3600 - 4) * 3600;
    // The tenant's usage of the deployment, which the batch allocates its GPU hours by.
    for h in 0..3 {
        let r = http
            .post(format!("{base}/v1/usage/events"))
            .bearer_auth(key)
            .json(&serde_json::json!({ "events": [{
                "event_id": uuid::Uuid::new_v4().to_string(), "schema_version": "1.0", "tenant_id": TENANT,
                "usage_type": "llm_tokens", "source": "gateway", "occurred_at": rfc3339(t0 + 3600 * h + 60),
                "deployment_id": "vllm-fo", "model": { "provider": "local", "name": "llama" },
                "units": { "tokens_in": 1000, "tokens_out": 500 }
            }]}))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    let seen = Mutex::new(Seen::default());
    let killed_at: Mutex<Option<Instant>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let sent_batches = AtomicU64::new(0);
    let first_leader = cluster.leader().expect("a leader before the kill");

    std::thread::scope(|s| {
        // Ingest: every batch re-sent until acknowledged, as a client does.
        for t in 0..2 {
            let (http, seen, killed_at, sent_batches) = (&http, &seen, &killed_at, &sent_batches);
            let base = &base;
            s.spawn(move || {
                for b in 0..BATCHES {
                    let (body, samples) = batch("fo", t, b, t0);
                    loop {
                        let sent_at = Instant::now();
                        let r = http
                            .post(format!("{base}/v1/finops/gpu/samples"))
                            .bearer_auth(key)
                            .json(&body)
                            .send();
                        if let Some((status, v)) = classify(r, seen, "ingest") {
                            assert_eq!(status, 200, "ingest: {v}");
                            let mut s = seen.lock().unwrap();
                            for (gpu, power) in &samples {
                                let e = s.acked.entry(gpu.clone()).or_default();
                                e.0 += 1;
                                e.1 += power;
                            }
                            let kill = *killed_at.lock().unwrap();
                            if kill.is_some_and(|k| sent_at > k) && s.first_after_kill.is_none() {
                                s.first_after_kill = Some(Instant::now());
                            }
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    sent_batches.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(15));
                }
            });
        }
        // Reservations of 1.00, each with an Idempotency-Key, re-sent with it until answered 201 or 402.
        {
            let (http, seen, stop) = (&http, &seen, &stop);
            let base = &base;
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let idem = uuid::Uuid::new_v4().to_string();
                    let answer = loop {
                        let r = http
                            .post(format!("{base}/v1/finops/reservations"))
                            .bearer_auth(key)
                            .header("X-EAI-Tenant", RESERVER)
                            .header("Idempotency-Key", &idem)
                            .json(&serde_json::json!({ "action": "llm.invoke", "estimate": { "cost": "1.00" },
                                "deployment_id": "vllm-fo" }))
                            .send();
                        if let Some(a) = classify(r, seen, "reserve") {
                            break a;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    };
                    let mut s = seen.lock().unwrap();
                    match answer.0 {
                        201 => s.granted += 1,
                        402 => s.refused += 1,
                        other => s.wrong.push(format!("reserve: {other} {}", answer.1)),
                    }
                    drop(s);
                    std::thread::sleep(Duration::from_millis(60));
                }
            });
        }
        // The kill, once a third of the ingest is acknowledged.
        while sent_batches.load(Ordering::Relaxed) < (2 * BATCHES / 3) as u64 {
            std::thread::sleep(Duration::from_millis(10));
        }
        cluster.kill_postmaster(first_leader);
        *killed_at.lock().unwrap() = Some(Instant::now());
        while sent_batches.load(Ordering::Relaxed) < (2 * BATCHES) as u64 {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let killed_at = killed_at.lock().unwrap().unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(
        seen.wrong.is_empty(),
        "answers other than 2xx, 402, 503 with Retry-After or a dropped connection: {:?}\n(serve's log: {})",
        seen.wrong,
        log_path.display()
    );
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "serve exited during the failover"
    );
    let new_leader = cluster.leader().expect("a leader after the failover");
    assert_ne!(
        new_leader, first_leader,
        "Patroni promoted the standby (node {first_leader} was killed)"
    );
    let recovery = seen
        .first_after_kill
        .expect("a write sent after the kill was acknowledged")
        .duration_since(killed_at);

    // Every acknowledged sample stored once, with its power: per GPU, the count and the sum.
    let stored: BTreeMap<String, (u64, u64)> = cluster
        .psql(
            &url,
            "SELECT g.uuid, count(*), (sum(s.power_e6) / 1000000)::bigint FROM eai.gpu_samples s \
             JOIN eai.gpus g ON g.id = s.gpu_id WHERE g.uuid LIKE 'GPU-fo-%' GROUP BY g.uuid ORDER BY g.uuid",
        )
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f[0].to_string(), (f[1].parse().unwrap(), f[2].parse().unwrap()))
        })
        .collect();
    assert_eq!(
        stored, seen.acked,
        "stored (count, power sum) per GPU = acknowledged"
    );
    assert_eq!(stored.len(), 2 * GPUS);

    // No reservation beyond the budget: what is held never exceeds the limit, and each granted one is held.
    let b: serde_json::Value = http
        .get(format!("{base}/v1/finops/budgets/{budget_id}"))
        .bearer_auth(key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let held: rust_decimal::Decimal = b["current"]["held"]["amount"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let left: rust_decimal::Decimal = b["current"]["left"]["amount"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Reservations went on after the budget was used up (some were refused): exactly the budget is held, and
    // every grant the client saw is among the holds (a grant whose answer was lost to the switch is a hold the
    // client does not know of, still within the budget).
    assert!(seen.refused > 0, "the budget ran out during the run: {b}");
    assert_eq!(held, rust_decimal::Decimal::from(BUDGET), "{b}");
    assert!(left.is_zero(), "{b}");
    assert!(
        rust_decimal::Decimal::from(seen.granted) <= held,
        "{} granted, {held} held: {b}",
        seen.granted
    );

    // An Idempotency-Key across a second failover: a batch held in its handler (a lock taken on the samples'
    // table) when the new primary is killed in turn answers 503; its claim, which the layer could not release
    // while no node took writes, is released once one does (within seconds, not the claim's 5-minute lease),
    // and the same request with the same key is then run and stored once.
    let primary = cluster.leader().expect("a leader");
    let primary_url = format!(
        "postgres://postgres@127.0.0.1:{}/{}",
        cluster.get(&format!("EAI_PG_HA_NODE{primary}_PORT")),
        url.rsplit_once('/').unwrap().1.split('?').next().unwrap()
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while cluster
        .psql(
            &primary_url,
            "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'",
        )
        .trim()
        != "1"
    {
        assert!(
            Instant::now() < deadline,
            "the killed node did not come back as a synchronous standby"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut locker = Server(
        Command::new(PathBuf::from(cluster.get("EAI_PG_HA_BINDIR")).join("psql"))
            .args(["-w", "-q", &primary_url, "-c"])
            .arg("BEGIN; LOCK TABLE eai.gpu_samples IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster
        .psql(&primary_url, "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND granted AND relation = 'eai.gpu_samples'::regclass")
        .trim()
        != "1"
    {
        assert!(Instant::now() < deadline, "the lock was not taken");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (held_batch, held_samples) = batch("fi", 0, 0, t0);
    let idem = uuid::Uuid::new_v4().to_string();
    let send = || {
        http.post(format!("{base}/v1/finops/gpu/samples"))
            .bearer_auth(key)
            .header("Idempotency-Key", &idem)
            .json(&held_batch)
            .send()
    };
    let (first, second_kill) = std::thread::scope(|s| {
        let first = s.spawn(send);
        // Until the request waits on the lock, then the kill.
        let deadline = Instant::now() + Duration::from_secs(30);
        while cluster
            .psql(&primary_url, "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'eai.gpu_samples'::regclass")
            .trim()
            == "0"
        {
            assert!(Instant::now() < deadline, "the request never waited on the lock");
            std::thread::sleep(Duration::from_millis(20));
        }
        cluster.kill_postmaster(primary);
        let killed = Instant::now();
        (first.join().unwrap(), killed)
    });
    let _ = locker.0.kill();
    let first = first.expect("an answer, not a dropped connection");
    assert_eq!(
        first.status().as_u16(),
        503,
        "the held request met the switch: {}",
        first.text().unwrap()
    );
    assert!(first.headers().get("retry-after").is_some());
    let (mut in_flight, mut unavailable) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    let replayed = loop {
        assert!(
            Instant::now() < deadline,
            "the key stayed claimed 30 s after the switch ({in_flight} answers 409 in flight, {unavailable} 503)"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(r) = send() else { continue };
        match r.status().as_u16() {
            200 => break r.json::<serde_json::Value>().unwrap(),
            503 => unavailable += 1,
            409 => {
                let v: serde_json::Value = r.json().unwrap();
                assert_eq!(v["error"]["code"], "idempotency_key_in_flight", "{v}");
                in_flight += 1;
            }
            other => panic!("{other}: {}", r.text().unwrap()),
        }
    };
    let released_after = second_kill.elapsed();
    let n = held_samples.len() as u64;
    assert_eq!(replayed["accepted"], n, "{replayed}");
    let stored = cluster.psql(
        &url,
        "SELECT count(*) FROM eai.gpu_samples s JOIN eai.gpus g ON g.id = s.gpu_id WHERE g.uuid LIKE 'GPU-fi-%'",
    );
    assert_eq!(stored.trim(), n.to_string(), "the held batch stored once");
    println!(
        "failover: an Idempotency-Key whose request met a second failover ran again {} ms after the kill \
         ({in_flight} answers 409 idempotency_key_in_flight, {unavailable} answers 503 before)",
        released_after.as_millis()
    );

    // The batch: a run begun after the ingest ended, and its month's gpu_local events once each.
    let runs = |events: &[serde_json::Value]| -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| e["action"] == "allocation_batch.run")
            .cloned()
            .collect()
    };
    let before = runs(&audit_events(&http, &base, key)).len();
    let deadline = Instant::now() + Duration::from_secs(60);
    let last_run = loop {
        let all = runs(&audit_events(&http, &base, key));
        // The second run recorded after this point began after it.
        if all.len() >= before + 2 {
            break all.last().unwrap().clone();
        }
        assert!(
            Instant::now() < deadline,
            "the batch did not run again after the failover"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let items = super::replicas::check_gpu_local_events(&http, &base, key, &url, &last_run);
    assert!(items > 0, "the allocation of the batch's period has items");

    println!(
        "failover: recovery {} ms from kill -9 of the primary's postmaster to the first acknowledged write; \
         {} answers 503 with Retry-After, {} dropped connections, {} 409 idempotency_key_in_flight; \
         {} samples acknowledged and stored once; {} reservations granted, {} refused (budget {BUDGET}.00, {held} held)",
        recovery.as_millis(),
        seen.unavailable,
        seen.dropped,
        seen.in_flight_409,
        seen.acked.values().map(|v| v.0).sum::<u64>(),
        seen.granted,
        seen.refused
    );
    drop(server);
    drop(db);
}

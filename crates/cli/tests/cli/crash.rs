//! `serve` as a process under faults: killed (-9) during ingest or during its allocation batch, its PostgreSQL
//! restarted under ingest, its disk full. No acknowledged batch is lost or counted twice.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

use super::*;

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
    let streamed = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = streamed.clone();
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
                Ok(r) if r.status().is_success() => {
                    acked.push(b);
                    counted.store(acked.len(), SeqCst);
                }
                Ok(r) => panic!("batch {b}: {}", r.status()),
                Err(_) => break, // the server is gone
            }
        }
        acked
    });
    // Until batches are being acknowledged, then the kill in the middle of the stream.
    let deadline = Instant::now() + Duration::from_secs(30);
    while streamed.load(SeqCst) < 5 {
        assert!(Instant::now() < deadline, "no batch acknowledged in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    // (acknowledged, answered 503) so far, for the test to wait on.
    let seen = std::sync::Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let stream = {
        let (stop, base, seen) = (stop.clone(), base.clone(), seen.clone());
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
                        seen[1].store(unavailable, SeqCst);
                        std::thread::sleep(Duration::from_millis(200));
                        continue;
                    }
                    assert_eq!(status, 200, "batch {acked}: {}", r.text().unwrap());
                    break;
                }
                acked += 1;
                seen[0].store(acked, SeqCst);
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
    // Until `count` (acknowledged or 503s) has grown by `by`: at most `within`, then `must` says whether that
    // fails the test.
    let grows = |count: &AtomicUsize, by: usize, within: Duration, must: &str| {
        let (from, start) = (count.load(SeqCst), Instant::now());
        while count.load(SeqCst) < from + by {
            if start.elapsed() >= within {
                assert!(must.is_empty(), "{must} within {within:?}");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let ingesting = "no batch acknowledged";
    for how in [Shutdown::Fast, Shutdown::Immediate] {
        grows(&seen[0], 3, Duration::from_secs(30), ingesting);
        cluster.stop(how).unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        while readyz() != 503 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "/readyz while PostgreSQL is down ({how:?})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Requests meet the outage (some answered 503), for a few seconds at most.
        grows(&seen[1], 2, Duration::from_secs(5), "");
        cluster.start_server().unwrap_or_else(|e| panic!("{e}"));
        wait_ready(&format!("{how:?}"));
    }
    grows(&seen[0], 3, Duration::from_secs(30), ingesting);
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

//! Several replicas on one PostgreSQL database: one runs each job, another takes over when it dies.

use super::*;

fn leads_batch(http: &reqwest::blocking::Client, base: &str) -> Option<bool> {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .ok()?
        .text()
        .ok()?;
    metric(&text, "eai_leader{task=\"allocation_batch\"}").map(|v| v == "1")
}

/// The `gpu_local` events of `period` the batch wrote, checked against the allocation of the period its last run
/// covered: one event per item of that allocation, each with the item's cost, none twice.
pub(super) fn check_gpu_local_events(
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
            .env("EAI_ANOMALY_CHECK_SECONDS", "1")
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
    // Each job has one leader (not necessarily the same replica for every job).
    let leading = |job: &str| -> Vec<&String> {
        let series = format!("eai_leader{{task=\"{job}\"}}");
        [&base_a, &base_b]
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
            .collect()
    };
    let runs = |events: &[serde_json::Value]| -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| e["action"] == "allocation_batch.run")
            .cloned()
            .collect()
    };
    // Until the leader has run the batch twice (every 2 s) and every job has its leader.
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let events = audit_events(&http, &base_a, key);
        let jobs =
            ["allocation_batch", "pruner", "budget_chores", "anomalies"].map(|j| leading(j).len());
        if runs(&events).len() >= 2 && jobs == [1, 1, 1, 1] {
            break events;
        }
        assert!(
            Instant::now() < deadline,
            "after 60 s: {} runs of the batch, leaders per job {jobs:?}",
            runs(&events).len()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for job in ["allocation_batch", "pruner", "budget_chores", "anomalies"] {
        let leading = leading(job);
        assert_eq!(leading.len(), 1, "{job}: {leading:?}");
    }
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
    for job in ["pruner", "budget_chores", "anomalies"] {
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

//! `/metrics` for a dashboard (docs/METRICS.md): the figures read from the store (each GPU's latest sample, each
//! node's latest window, the month to date's cost per deployment and tenant, the last hour's idle ratio and
//! unpriced samples, the gaps, the audit chain's verification), refreshed in the background and the same on
//! every replica of one store, whichever received the samples.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use rust_decimal::Decimal;

use super::*;

/// A second control plane on the test's store (another replica behind the Service), with the same settings.
struct Replica {
    base: String,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Replica {
    async fn start(app: &TestApp) -> Replica {
        let replica = Application::build(app.config.clone())
            .await
            .expect("a second replica builds on the same store");
        let base = format!("http://127.0.0.1:{}", replica.port());
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(replica.run_until_stopped(async {
            let _ = rx.await;
        }));
        Replica {
            base,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.base))
            .await
            .expect("scrape")
            .text()
            .await
            .expect("body")
    }

    async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            s.await.expect("replica task").expect("replica ran cleanly");
        }
    }
}

/// The value of the one series `name{labels}` (exactly), or `None`, as the shortest decimal (the exposition
/// writes float64 samples: `3600.0` for 3600).
fn value(text: &str, series: &str) -> Option<String> {
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .collect();
    assert!(found.len() <= 1, "{series} twice in:\n{text}");
    found.first().map(|v| {
        let v = v.trim();
        Decimal::from_str(v)
            .or_else(|_| Decimal::from_scientific(v))
            .map_or_else(|_| v.to_string(), |d| d.normalize().to_string())
    })
}

/// Polls `/metrics` until `ok` holds (the refresher runs every second here), or fails after 30 s.
async fn wait_for(
    scrape: impl AsyncFn() -> String,
    what: &str,
    ok: impl Fn(&str) -> bool,
) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = scrape().await;
        if ok(&text) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not in /metrics after 30 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The series of the store-derived families (the same on every replica; this process's counters are not).
fn store_derived(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| {
            let name = l.split(['{', ' ']).next().unwrap_or_default();
            [
                "eai_gpu_",
                "eai_gpus_seen",
                "eai_node_",
                "eai_deployment_",
                "eai_tenant_",
            ]
            .iter()
            .any(|p| name.starts_with(p))
                && !name.ends_with("_total")
        })
        .map(str::to_string)
        .collect()
}

/// Breaks the audit chain the way someone with the database could: event 2's body edited in place.
async fn tamper_with_the_audit_chain(app: &TestApp) {
    let url = secrecy::ExposeSecret::expose_secret(app.config.database_url.as_ref().expect("url"))
        .to_owned();
    match url.strip_prefix("sqlite://") {
        Some(path) => {
            rusqlite::Connection::open(path)
                .expect("open")
                .execute(
                    "UPDATE audit_events SET body = replace(body, '\"allow\"', '\"deny\"') WHERE seq = 2",
                    [],
                )
                .expect("update");
        }
        None => {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect as the owner");
            tokio::spawn(conn);
            c.execute(
                "UPDATE eai.audit_events SET body = replace(body, '\"allow\"', '\"deny\"') WHERE seq = 2",
                &[],
            )
            .await
            .expect("update");
        }
    }
}

pub async fn metrics_show_the_fleet_and_its_cost_from_the_store_on_every_replica() {
    let app = spawn_app_with(|c| {
        c.metrics_refresh_seconds = 1;
        c.metrics_tenant_cost = true;
        c.metrics_max_gpu_series = 3;
    })
    .await;
    let replica = Replica::start(&app).await;
    let (s, v) = app
        .post(
            "/v1/tenants",
            &app.admin_key,
            &json!({ "slug": "acme", "name": "Acme Corp", "id": TENANT_A }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let mut policy = worked_example_policy();
    policy["deployment_pattern"] = json!("vllm-*");
    app.create_policy(policy).await;

    // The last closed hour: vllm-llama-70b busy at 82 % on gpu-node-1 (priced, used by acme); legacy-train at
    // 2 % on gpu-node-2 (no policy prices it), with a 20-minute hole (a gap). Two more GPUs on gpu-node-3 were
    // last seen two hours ago: with at most 3 GPU series, the oldest is left out.
    let now = eai_api::state::now();
    let hour = Timestamp(now.floor_to(HOUR_MS).0 - HOUR_MS);
    let mut samples: Vec<Value> = hour_of_samples("GPU-aaaa", "vllm-llama-70b", hour, 400)
        .into_iter()
        .map(|mut s| {
            s["node"] = json!("gpu-node-1");
            s
        })
        .collect();
    let mut idle: Vec<Value> = hour_of_samples("GPU-bbbb", "legacy-train", hour, 90)
        .into_iter()
        .enumerate()
        .filter(|(k, _)| !(80..160).contains(k))
        .map(|(_, mut s)| {
            s["node"] = json!("gpu-node-2");
            s["utilization"] = json!(0.02);
            s
        })
        .collect();
    samples.append(&mut idle);
    for gpu in ["GPU-cccc", "GPU-dddd"] {
        for k in 1..=4 {
            let mut s = sample(
                gpu,
                "vllm-llama-70b",
                Timestamp(hour.0 - HOUR_MS + k * 15_000),
                300,
            );
            s["node"] = json!("gpu-node-3");
            samples.push(s);
        }
    }
    app.ingest(samples).await;
    let (key_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (s, v) = app
        .post(
            "/v1/usage/events",
            &key_a,
            &json!({ "events": [usage_event("vllm-llama-70b", Timestamp(hour.0 + 60_000), json!({"tokens_in": 7000}))] }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");

    let scrape = async || app.get_text("/metrics", "").await.1;
    let text = wait_for(scrape, "the last hour's figures", |t| {
        value(
            t,
            r#"eai_deployment_idle_ratio_last_hour{deployment="legacy-train"}"#,
        )
        .is_some()
            && t.contains(r#"tenant="acme""#)
    })
    .await;

    // Each GPU's latest sample, exactly as stored.
    let a = r#"{node="gpu-node-1",gpu="GPU-aaaa",model="H100-80GB",deployment="vllm-llama-70b"}"#;
    let end = Decimal::new(hour.0 + HOUR_MS, 3).normalize().to_string();
    for (family, want) in [
        ("eai_gpu_utilization_ratio", "0.82"),
        ("eai_gpu_memory_used_bytes", "65712999628.8"), // 61.2 GiB
        ("eai_gpu_power_watts", "400"),
        ("eai_gpu_last_sample_timestamp_seconds", end.as_str()),
    ] {
        assert_eq!(
            value(&text, &format!("{family}{a}")).as_deref(),
            Some(want),
            "{family}:\n{text}"
        );
    }
    assert_eq!(value(&text, "eai_gpus_seen").as_deref(), Some("4"));
    assert_eq!(
        value(&text, "eai_metrics_gpu_series_omitted").as_deref(),
        Some("1")
    );
    assert!(text.contains(r#"gpu="GPU-cccc""#), "{text}");
    assert!(
        !text.contains(r#"gpu="GPU-dddd""#),
        "the oldest is left out:\n{text}"
    );
    // Each node's latest window: gpu-node-2 stopped with its GPU; gpu-node-3 two hours ago.
    assert_eq!(
        value(
            &text,
            r#"eai_node_last_sample_timestamp_seconds{node="gpu-node-1"}"#
        ),
        Some(end.clone())
    );
    let node3 = Decimal::new(hour.0 - HOUR_MS + 60_000, 3)
        .normalize()
        .to_string();
    assert_eq!(
        value(
            &text,
            r#"eai_node_last_sample_timestamp_seconds{node="gpu-node-3"}"#
        ),
        Some(node3)
    );

    // The last closed hour: idle ratio and unpriced samples per deployment.
    let legacy = r#"{deployment="legacy-train"}"#;
    assert_eq!(
        value(
            &text,
            &format!("eai_deployment_idle_ratio_last_hour{legacy}")
        )
        .as_deref(),
        Some("0.98")
    );
    assert_eq!(
        value(
            &text,
            r#"eai_deployment_idle_ratio_last_hour{deployment="vllm-llama-70b"}"#
        )
        .as_deref(),
        Some("0.18")
    );
    assert_eq!(
        value(
            &text,
            &format!("eai_deployment_unpriced_samples_last_hour{legacy}")
        )
        .as_deref(),
        Some("160")
    );
    assert_eq!(
        value(
            &text,
            r#"eai_deployment_unpriced_samples_last_hour{deployment="vllm-llama-70b"}"#
        )
        .as_deref(),
        Some("0")
    );

    // The month to date is the allocation the API answers for it, figure for figure.
    let month_start =
        Timestamp::parse_date(&format!("{}-01", &now.to_string()[..7])).expect("date");
    let (s, alloc) = app.allocation(&app.admin_key, month_start, now).await;
    assert_eq!(s, StatusCode::OK, "{alloc}");
    let mut rows = 0;
    for d in alloc["deployments"].as_array().expect("deployments") {
        let dep = d["deployment_id"].as_str().expect("id");
        let labels = format!(r#"{{deployment="{dep}"}}"#);
        assert_eq!(
            value(
                &text,
                &format!("eai_deployment_unpriced_samples_month_to_date{labels}")
            ),
            Some(d["unpriced_samples"].to_string()),
            "{dep}"
        );
        if let Some(cur) = d["currency"].as_str() {
            let labels = format!(r#"{{deployment="{dep}",currency="{cur}"}}"#);
            for f in ["cost", "allocated", "unallocated"] {
                let shown = value(&text, &format!("eai_deployment_{f}_month_to_date{labels}"))
                    .and_then(|v| Decimal::from_str(&v).ok());
                let answered = d[f].as_str().and_then(|v| Decimal::from_str(v).ok());
                assert!(shown.is_some(), "{f} of {dep}:\n{text}");
                assert_eq!(shown, answered, "{f} of {dep}:\n{text}");
            }
            rows += 1;
        }
    }
    if hour >= month_start {
        assert_eq!(rows, 1, "vllm-llama-70b is priced this month:\n{alloc}");
        assert_eq!(
            value(
                &text,
                r#"eai_deployment_gaps_month_to_date{deployment="legacy-train",reason="too_long"}"#
            )
            .as_deref(),
            Some("1"),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                r#"eai_deployment_gap_seconds_month_to_date{deployment="legacy-train",reason="too_long"}"#
            )
            .as_deref(),
            Some("1200")
        );
        let acme = tenant_row(&alloc, TENANT_A)["cost"]["amount"]
            .as_str()
            .expect("acme's cost");
        let acme = Decimal::from_str(acme)
            .expect("a decimal")
            .normalize()
            .to_string();
        assert_eq!(
            value(
                &text,
                &format!(
                    r#"eai_tenant_cost_month_to_date{{tenant_id="{TENANT_A}",tenant="acme",currency="EUR"}}"#
                )
            ),
            Some(acme),
            "{text}"
        );
    }

    // The audit chain was verified at start; the refresher and this process's counters are there too.
    assert_eq!(
        value(&text, "eai_audit_chain_verified").as_deref(),
        Some("1")
    );
    assert!(
        value(&text, "eai_audit_chain_verified_timestamp_seconds").is_some(),
        "{text}"
    );
    assert!(
        value(&text, "eai_metrics_refresh_timestamp_seconds").is_some(),
        "{text}"
    );
    assert_eq!(
        value(&text, "eai_metrics_refresh_failures_total").as_deref(),
        Some("0")
    );
    assert!(
        value(&text, "eai_gpu_samples_ingested_total").is_some_and(|v| v != "0"),
        "{text}"
    );

    // The other replica received nothing, and shows the same store-derived figures.
    let want = store_derived(&text);
    let theirs = wait_for(
        async || replica.metrics().await,
        "the same figures on the other replica",
        |t| store_derived(t) == want,
    )
    .await;
    assert_eq!(
        value(&theirs, "eai_gpu_samples_ingested_total").as_deref(),
        Some("0"),
        "each replica counts only what it received"
    );
    replica.stop().await;

    // Someone with the database edits an audit event: the next verification (at a replica's start) says so.
    tamper_with_the_audit_chain(&app).await;
    let replica = Replica::start(&app).await;
    wait_for(
        async || replica.metrics().await,
        "the broken chain",
        |t| value(t, "eai_audit_chain_verified").as_deref() == Some("0"),
    )
    .await;
    replica.stop().await;
}

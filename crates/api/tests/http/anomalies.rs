//! Spend anomalies (SPEC §13) over HTTP on both backends: a deployment steady for three weeks with one planted
//! spike hour gives exactly one anomaly per metric the spike trips, recorded once whatever the rounds, counted
//! in /metrics, posted once each to a real local receiver with a valid signature, and seen by its tenant only.

use std::collections::BTreeSet;
use std::time::Duration;

use eai_app::clock::Clock;

use super::*;

const SECRET: &str = "whsec_anomaly_test_0123456789";
const DAY_H: i64 = 24;
/// The hours of history: three weeks.
const HOURS: i64 = 21 * DAY_H;

/// One sample covering the whole hour `hour` (a window of 3,600 s ending at its end).
fn hour_sample(gpu: &str, deployment: &str, tenant: &str, hour: Timestamp, power_w: i64) -> Value {
    json!({
        "node": "gpu-node-7",
        "gpu_uuid": gpu,
        "model": "H100-80GB",
        "namespace": "inference",
        "pod": format!("{deployment}-0"),
        "tenant_id": tenant,
        "deployment_id": deployment,
        "window_seconds": 3600,
        "utilization": 0.5,
        "memory_used_gb": 40,
        "power_w": power_w,
        "timestamp": Timestamp(hour.0 + HOUR_MS).to_string(),
    })
}

async fn wait_for<F: std::future::Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    for _ in 0..240 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Three weeks of `llm-a` (tenant A): 4 GPUs every hour at 300, 310, 320, 330, 340 W in turn, but for one hour
/// 10 hours before the current one with 16 GPUs; `llm-b` (tenant B) steady on 1 GPU at 300 W.
pub async fn a_planted_spike_is_found_once_per_metric_posted_once_and_seen_by_its_tenant() {
    let (url, got) = webhook_receiver(0).await;
    let app = spawn_app_with(|c| {
        c.rate_limit_per_key = 0;
        c.anomalies.every = Duration::from_secs(1);
        c.anomalies.webhook = Some(eai_app::anomalies::Webhook {
            url: url.clone(),
            secret: SECRET.into(),
        });
    })
    .await;
    // Per GPU-hour 2.00 EUR, per kWh 0.25 EUR (PUE 1, no overhead): an hour of 4 GPUs at P W costs
    // 4 x 2.00 + 4 x P / 1000 kWh x 0.25 = 8 + P / 1000 EUR (8.300 .. 8.340).
    app.create_policy(json!({
        "name": "h100",
        "deployment_pattern": "*",
        "currency": "EUR",
        "gpu_hourly_cost": "2.00",
        "overhead_pct": "0",
        "energy_kwh_price": "0.25",
        "pue": "1",
        "effective_from": "2020-01-01",
    }))
    .await;
    let now = app.clock.now();
    let base = now.floor_to(HOUR_MS);
    let first = Timestamp(base.0 - HOURS * HOUR_MS);
    // The deployments run every hour k = 0 .. HOURS - 3 (the last ends two hours before `base`: settled).
    let hour = |k: i64| Timestamp(first.0 + k * HOUR_MS);
    let spike_k = HOURS - 10;
    let spike = hour(spike_k);
    for day in 0..21 {
        let mut batch = Vec::new();
        for k in day * DAY_H..((day + 1) * DAY_H).min(HOURS - 2) {
            let power = 300 + 10 * (k % 5);
            let gpus = if k == spike_k { 16 } else { 4 };
            for g in 0..gpus {
                batch.push(hour_sample(
                    &format!("GPU-a{g}"),
                    "llm-a",
                    TENANT_A,
                    hour(k),
                    power,
                ));
            }
            batch.push(hour_sample("GPU-b0", "llm-b", TENANT_B, hour(k), 300));
        }
        app.ingest(batch).await;
    }

    // The server's own rounds (every second) find the spike: one anomaly per metric, nothing else.
    let path = format!("/v1/finops/gpu/anomalies?from={first}&to={base}");
    wait_for("two anomalies", || async {
        let (_, v) = app.get(&path, &app.admin_key).await;
        v["items"].as_array().is_some_and(|i| i.len() >= 2)
    })
    .await;
    // More rounds, an hour later and two: the spike is still among the hours checked, and found again.
    for _ in 0..2 {
        app.clock.advance(HOUR_MS);
        tokio::time::sleep(Duration::from_millis(2_500)).await;
    }
    // And rounds run by hand on a second handle on the store: nothing new.
    let store = app.second_store().await;
    let http = eai_app::budget_alerts::http_client().expect("client");
    let by_hand = eai_app::anomalies::AnomalyConfig {
        webhook: None,
        ..eai_app::anomalies::AnomalyConfig::default()
    };
    for _ in 0..2 {
        let round = eai_app::anomalies::check_once(
            store.as_ref(),
            &eai_app::metrics::Metrics::new(),
            &http,
            &by_hand,
            app.clock.now(),
        )
        .await
        .expect("a round");
        assert!(round.from <= spike && spike < round.to, "{round:?}");
        assert!(round.recorded.is_empty(), "found again, not new: {round:?}");
    }

    let (status, v) = app.get(&path, &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["from"], first.to_string());
    assert_eq!(v["to"], base.to_string());
    let items = v["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "the steady hours give none: {v}");
    let of = |metric: &str| {
        items
            .iter()
            .find(|i| i["metric"] == metric)
            .unwrap_or_else(|| panic!("a {metric} anomaly: {v}"))
            .clone()
    };
    // The spike's baseline: the 494 hours before it (k = 0 .. 493; fewer than 28 days, all of them), at
    // 8.300, 8.310, 8.320, 8.330 EUR 99 times each and 8.340 98 times. Sorted, the 247th and 248th are both
    // 8.320 (ranks 199 .. 297): median 8.32. Deviations: 0 x 99, 0.01 x 198, 0.02 x 197: MAD 0.01.
    // The spike (k = 494, 494 mod 5 = 4: 340 W) on 16 GPUs: 16 x 2.00 + 16 x 0.340 x 0.25 = 33.36 EUR;
    // |33.36 - 8.32| = 25.04 > 5 x 1.4826 x 0.01 = 0.07413 and > 0.5 x 8.32 = 4.16: 25.04 / 0.014826 =
    // 1688.924… -> 1688.92 scaled MADs.
    let cost = of("cost");
    assert_eq!(cost["deployment_id"], "llm-a", "{v}");
    assert_eq!(cost["hour"], spike.to_string(), "{v}");
    assert_eq!(cost["currency"], "EUR", "{v}");
    assert_eq!(cost["value"], "33.36", "{v}");
    assert_eq!(cost["baseline_median"], "8.32", "{v}");
    assert_eq!(cost["baseline_mad"], "0.01", "{v}");
    assert_eq!(cost["deviation_mads"], "1688.92", "{v}");
    assert_eq!(cost["direction"], "above", "{v}");
    assert_eq!(cost["baseline_hours"], 494, "{v}");
    assert!(
        cost["message"]
            .as_str()
            .is_some_and(|m| m.contains("llm-a")),
        "{v}"
    );
    // GPU-seconds: 4 x 3,600 = 14,400 every hour (MAD 0), the spike 16 x 3,600 = 57,600: 43,200 away, more
    // than 0 scaled MADs and more than 0.5 x 14,400 = 7,200. No deviation in MADs.
    let gpu = of("gpu_seconds");
    assert_eq!(gpu["hour"], spike.to_string(), "{v}");
    assert_eq!(gpu["currency"], Value::Null, "{v}");
    assert_eq!(gpu["value"], "57600", "{v}");
    assert_eq!(gpu["baseline_median"], "14400", "{v}");
    assert_eq!(gpu["baseline_mad"], "0", "{v}");
    assert_eq!(gpu["deviation_mads"], Value::Null, "{v}");
    assert_eq!(gpu["baseline_hours"], 494, "{v}");
    let ids: BTreeSet<String> = items
        .iter()
        .map(|i| i["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|i| i.starts_with("anm_")), "{ids:?}");

    // Audited once each, as the platform's event of the deployment's tenant.
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    let detected: Vec<&Value> = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["action"] == "gpu.anomaly_detected")
        .collect();
    assert_eq!(detected.len(), 2, "{audit}");
    assert!(
        detected.iter().all(|e| e["tenant_id"] == TENANT_A),
        "{audit}"
    );

    // Counted once each in /metrics.
    let (status, metrics) = app.get_text("/metrics", "unused").await;
    assert_eq!(status, StatusCode::OK);
    for metric in ["cost", "gpu_seconds"] {
        assert!(
            metrics.contains(&format!(
                "eai_gpu_spend_anomalies_total{{metric=\"{metric}\"}} 1\n"
            )),
            "{metrics}"
        );
    }

    // Posted once each, signed with the secret, the body the anomaly as listed.
    wait_for("two deliveries", || async {
        got.lock().expect("lock").len() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let got = got.lock().expect("lock").clone();
    assert_eq!(got.len(), 2, "each anomaly posted once: {got:?}");
    let mut posted = BTreeSet::new();
    for (headers, body) in &got {
        let b = signed_body(headers, body, SECRET);
        assert_eq!(b["type"], "gpu.anomaly");
        let id = b["id"].as_str().expect("id");
        let listed = items.iter().find(|i| i["id"] == id).expect("listed");
        for field in [
            "deployment_id",
            "hour",
            "metric",
            "value",
            "baseline_median",
            "deviation_mads",
        ] {
            assert_eq!(b[field], listed[field], "{field}: {b}");
        }
        assert_eq!(b["tenant_id"], TENANT_A);
        posted.insert(id.to_string());
    }
    assert_eq!(posted, ids);

    // Tenant A's readers see both, tenant B's none (its steady deployment has none, and A's are not its own).
    let (key_a, _) = app.key("viewer", Some(TENANT_A)).await;
    let (key_b, _) = app.key("viewer", Some(TENANT_B)).await;
    let (status, v) = app.get(&path, &key_a).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2), "{v}");
    let (status, v) = app.get(&path, &key_b).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["items"], json!([]), "{v}");
    // A period without the spike lists nothing.
    let later = Timestamp(spike.0 + HOUR_MS);
    let (_, v) = app
        .get(
            &format!("/v1/finops/gpu/anomalies?from={later}&to={base}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(v["items"], json!([]), "{v}");

    // Bad periods: the envelope, the field named.
    let (status, v) = app
        .get("/v1/finops/gpu/anomalies?from=yesterday", &app.admin_key)
        .await;
    assert_invalid(status, &v, &["from"]);
    let (status, v) = app
        .get(
            &format!("/v1/finops/gpu/anomalies?from={base}&to={first}"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["to"]);
}

//! Recommendations over HTTP (`GET /v1/finops/gpu/recommendations`, SPEC §13) on issue 40's fleet, November 2026
//! (720 hours) in hourly samples: `train-a` (tenant A's, 6 H100s: 4 idle for 504 of the 720 hours and 0.8 busy
//! the other 216, 2 at 0.9 all month), `infer-b` (shared, 4 H100s at 0.15 all month) and `dev-c` (1 L4 no policy
//! prices). The savings computed by hand; who sees what; the query's thresholds; a bad one.

use rust_decimal::Decimal;

use super::*;

const NOV: &str = "2026-11-01T00:00:00Z";
const H100: &str = "NVIDIA H100 80GB HBM3";

/// The sample of `gpu` for hour `h` of November: the whole hour (window 3600 s, ending at the hour's end),
/// `utilization` busy; 100 W when idle (utilization 0), 400 W otherwise.
fn hourly(gpu: &str, deployment: &str, model: &str, h: i64, utilization: &str) -> Value {
    let nov = Timestamp::parse_rfc3339(NOV).expect("November");
    let power = if utilization == "0" { 100 } else { 400 };
    json!({
        "node": "gpu-node-1",
        "gpu_uuid": gpu,
        "model": model,
        "namespace": "ml",
        "pod": format!("{deployment}-0"),
        "deployment_id": deployment,
        "window_seconds": 3600,
        "utilization": utilization.parse::<f64>().expect("a number"),
        "memory_used_gb": 40,
        "power_w": power,
        "timestamp": Timestamp(nov.0 + (h + 1) * HOUR_MS).to_string(),
    })
}

fn fleet() -> Vec<Value> {
    let mut s = Vec::new();
    for h in 0..720 {
        for g in 0..4 {
            let u = if h < 504 { "0" } else { "0.8" };
            let mut x = hourly(&format!("GPU-a{g}"), "train-a", H100, h, u);
            x["tenant_id"] = json!(TENANT_A);
            s.push(x);
        }
        for g in 4..6 {
            let mut x = hourly(&format!("GPU-a{g}"), "train-a", H100, h, "0.9");
            x["tenant_id"] = json!(TENANT_A);
            s.push(x);
        }
        for g in 0..4 {
            s.push(hourly(&format!("GPU-b{g}"), "infer-b", H100, h, "0.15"));
        }
        s.push(hourly("GPU-c0", "dev-c", "NVIDIA L4", h, "0.5"));
    }
    s
}

fn amount(v: &Value) -> Decimal {
    v["amount"]
        .as_str()
        .expect("an amount")
        .parse()
        .expect("a decimal")
}

pub async fn issue_40s_fleet_gets_its_idle_gpus_and_its_oversized_deployment_to_the_cent() {
    // Raw samples kept whatever today is (November's are past the default 35 days some day).
    let app = spawn_app_with(|c| c.raw_retention_days = 0).await;
    app.create_policy(json!({
        "name": "h100",
        "deployment_pattern": "*",
        "gpu_model": "H100",
        "currency": "EUR",
        "gpu_hourly_cost": "2.50",
        "energy_kwh_price": "0.20",
        "pue": "1.5",
        "effective_from": "2026-01-01",
    }))
    .await;
    for batch in fleet().chunks(4000) {
        app.ingest(batch.to_vec()).await;
    }
    let path = |q: &str| format!("/v1/finops/gpu/recommendations?from=2026-11-01&to=2026-11-30{q}");

    let (status, v) = app.get(&path(""), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["from"], NOV);
    assert_eq!(v["to"], "2026-12-01T00:00:00Z");
    assert_eq!(
        v["thresholds"],
        json!({"idle_utilization": "0.05", "idle_share": "0.5", "low_utilization": "0.3"})
    );
    let items = v["items"].as_array().expect("items");
    let kinds: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|i| {
            (
                i["deployment_id"].as_str().expect("id"),
                i["kind"].as_str().expect("kind"),
                i["action"].as_str().expect("action"),
            )
        })
        .collect();
    // By monthly savings (5,659.20 then 5,100.48), the unpriced last; none for train-a's two busy GPUs.
    assert_eq!(
        kinds,
        vec![
            ("infer-b", "low_utilization", "fewer_gpus"),
            ("train-a", "idle_gpus", "remove_gpus"),
            ("dev-c", "unpriced", "add_policy"),
        ],
        "{v}"
    );

    // A GPU-hour's price: 2.50 EUR + energy at 0.20 EUR/kWh x PUE 1.5: idle (100 W for 3600 s = 0.1 kWh) 0.03,
    // so 2.53; busy (400 W: 0.4 kWh) 0.12, so 2.62.
    // train-a: 4 GPUs idle 504 of 720 h (0.7 >= 0.5). Savings: their idle hours, 4 x 504 x 2.53 = 5,100.48 EUR;
    // a calendar month, so a month's too. Cost: all their hours, 4 x (504 x 2.53 + 216 x 2.62) = 4 x 1,841.04
    // = 7,364.16 EUR.
    let idle = &items[1];
    assert_eq!(
        (idle["current_gpus"].as_u64(), idle["gpus"].as_u64()),
        (Some(6), Some(4))
    );
    assert_eq!(idle["model"], H100);
    assert_eq!(amount(&idle["savings"]), Decimal::new(510_048, 2), "{idle}");
    assert_eq!(amount(&idle["monthly_savings"]), Decimal::new(510_048, 2));
    assert_eq!(amount(&idle["cost"]), Decimal::new(736_416, 2));
    assert_eq!(idle["savings"]["currency"], "EUR");
    let named: Vec<Value> = idle["evidence"]["idle_gpus"]
        .as_array()
        .expect("idle GPUs")
        .clone();
    assert_eq!(
        named,
        (0..4)
            .map(|g| json!({"gpu_uuid": format!("GPU-a{g}"), "hours": 720, "idle_hours": 504}))
            .collect::<Vec<_>>()
    );
    // Their evidence: 4 x 720 = 2,880 GPU-hours, 4 x 216 x 0.8 = 691.2 busy (0.24); the median hour idle, the
    // 95th percentile 0.8; at the busiest hour 3.2 GPUs busy at once; 40 GB of memory.
    let e = &idle["evidence"];
    assert_eq!(e["hours"], 720);
    assert_eq!(e["gpu_hours"], json!(2880));
    assert_eq!(e["busy_gpu_hours"].to_string(), "691.2");
    assert_eq!(e["utilization"].to_string(), "0.24");
    assert_eq!(e["utilization_p50"], json!(0));
    assert_eq!(e["utilization_p95"].to_string(), "0.8");
    assert_eq!(e["peak_busy_gpus"].to_string(), "3.2");
    assert_eq!(e["memory_peak_gb"], json!(40));
    assert_eq!(e["profile_memory_gb"], Value::Null);
    assert_eq!(
        idle["message"],
        "4 of 6 GPUs of train-a were idle 70.0 % of the hours they ran: 5,100.48 EUR a month."
    );

    // infer-b: 4 GPUs at 0.15 (under 0.3); the busiest hour 4 x 0.15 = 0.6 GPUs busy at once: one GPU would
    // do. Cost 4 x 720 x 2.62 = 7,545.60 EUR; savings 3/4 of it, 5,659.20 EUR.
    let low = &items[0];
    assert_eq!(
        (low["current_gpus"].as_u64(), low["gpus"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(low["evidence"]["peak_busy_gpus"].to_string(), "0.6");
    assert_eq!(low["evidence"]["utilization"].to_string(), "0.15");
    assert_eq!(amount(&low["cost"]), Decimal::new(754_560, 2));
    assert_eq!(amount(&low["savings"]), Decimal::new(565_920, 2));
    assert_eq!(amount(&low["monthly_savings"]), Decimal::new(565_920, 2));
    assert_eq!(
        low["message"],
        "4 GPUs of infer-b were 15.0 % busy, 0.6 GPUs busy at once at the peak: 1 GPU would hold its \
         load, 5,659.20 EUR a month."
    );
    assert_eq!(low["mig_profile"], Value::Null);
    assert_eq!(low["gpu_fraction"], Value::Null);

    // dev-c: 720 GPU-hours of an L4 no policy prices: no money.
    let unpriced = &items[2];
    assert_eq!(unpriced["gpus"], 1);
    assert_eq!(unpriced["evidence"]["unpriced_gpu_hours"], json!(720));
    for k in ["cost", "savings", "monthly_savings"] {
        assert_eq!(unpriced[k], Value::Null, "{unpriced}");
    }

    // Tenant A's key: its dedicated deployment's item only; tenant B's: none.
    let (key_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, a) = app.get(&path(""), &key_a).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    let ids: Vec<&Value> = a["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["deployment_id"])
        .collect();
    assert_eq!(ids, vec!["train-a"], "{a}");
    assert_eq!(a["items"][0], items[1]);
    let (key_b, _) = app.key("finops", Some(TENANT_B)).await;
    let (status, b) = app.get(&path(""), &key_b).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["items"], json!([]), "{b}");

    // The query's thresholds: a GPU must be idle 80 % of its hours: train-a's are idle 70 %, so none could go
    // (and its six GPUs, 0.46 busy, are not oversized).
    let (status, v) = app.get(&path("&idle_share=0.8"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["thresholds"]["idle_share"], "0.8");
    let deployments: Vec<&Value> = v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["deployment_id"])
        .collect();
    assert_eq!(deployments, vec!["infer-b", "dev-c"], "{v}");
    // Under 0.1 is oversized: infer-b, at 0.15, is not.
    let (status, v) = app.get(&path("&low_utilization=0.1"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert!(
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["deployment_id"] != "infer-b"),
        "{v}"
    );

    // Bad thresholds: 422, each named.
    let (status, e) = app
        .get(
            &path("&idle_share=1.5&low_utilization=0.1234567"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &e, &["idle_share", "low_utilization"]);
}

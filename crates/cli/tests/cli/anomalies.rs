//! `eai-gpu anomalies` on a store with one planted spike: `--check` records it once per metric, a second
//! `--check` adds nothing, `--tenant` keeps a tenant's own.

use super::*;

use eai_engine::domain::{
    Glob, GpuFraction, IdleCapacity, NonNegative, PolicySpec, Pue, Sample, ShareMethod, TenantId,
    UnitInterval, WindowMs,
};
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use eai_store::sqlite::SqliteStore;
use eai_store::{AuditDraft, PolicyStore, SampleStore};
use rust_decimal::Decimal;

const HOUR_MS: i64 = 3_600_000;

fn hour_sample(gpu: &str, owner: TenantId, hour: i64) -> Sample {
    Sample {
        node: "n1".into(),
        gpu_uuid: gpu.into(),
        model: "H100".into(),
        namespace: "ns".into(),
        pod: "llm-0".into(),
        deployment_id: "llm".into(),
        owner: Some(owner),
        window_ms: WindowMs::new(HOUR_MS).unwrap(),
        end: Timestamp(hour + HOUR_MS),
        utilization: UnitInterval::new(Decimal::ONE).unwrap(),
        memory_used_gb: NonNegative::ZERO,
        power_w: NonNegative::ZERO,
        storage_gb: NonNegative::ZERO,
        gpu_fraction: GpuFraction::WHOLE,
        share_method: ShareMethod::Exclusive,
    }
}

/// 48 hours of 2 GPUs and one hour, five before the current one, of 8: at 2.00 EUR a GPU-hour the steady
/// hours cost 4.00 EUR and 7,200 GPU-s (MAD 0), the spike 16.00 EUR and 28,800 GPU-s: 12 EUR > 0.5 x 4 away,
/// 21,600 GPU-s > 0.5 x 7,200 away. One anomaly per metric, found once.
#[test]
fn anomalies_check_records_a_spike_once_and_lists_it_in_scope() {
    let dir = temp_dir("anomalies");
    let owner = TenantId(uuid::Uuid::from_u128(0xa11));
    let base = eai_app::clock::now().floor_to(HOUR_MS).0;
    let first = base - 50 * HOUR_MS;
    let spike = base - 5 * HOUR_MS;
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = SqliteStore::open(&dir.join("eai-gpu.db")).unwrap();
        let audit = AuditDraft::system("test", "test", Timestamp(base), serde_json::json!({}));
        let spec = PolicySpec {
            name: "h100".into(),
            deployment_pattern: Glob::any(),
            gpu_model: None,
            currency: Currency::EUR,
            gpu_hourly_cost: NonNegative::new(Decimal::TWO).unwrap(),
            overhead_pct: NonNegative::ZERO,
            energy_kwh_price: NonNegative::ZERO,
            pue: Pue::ONE,
            storage_gb_month_price: NonNegative::ZERO,
            idle_capacity: IdleCapacity::Unallocated,
            output_token_weight: Default::default(),
            enabled: true,
            effective_from: Timestamp(0),
            effective_to: None,
        };
        store.create_policy(&spec, &audit).await.unwrap();
        let mut samples = Vec::new();
        for h in (first..base - 2 * HOUR_MS).step_by(HOUR_MS as usize) {
            let gpus = if h == spike { 8 } else { 2 };
            for g in 0..gpus {
                samples.push(hour_sample(&format!("GPU-{g}"), owner, h));
            }
        }
        store.insert_samples(samples, &audit).await.unwrap();
    });
    let (from, to) = (rfc3339(first / 1000), rfc3339(base / 1000));
    let run = |extra: &[&str]| {
        let out = bin()
            .args([
                "anomalies",
                "--json",
                "--from",
                &from,
                "--to",
                &to,
                "--data-dir",
            ])
            .arg(&dir)
            .args(extra)
            .env_remove("EAI_ANOMALY_WEBHOOK_URL")
            .env_remove("EAI_DATABASE_URL")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (v, _) = run(&[]);
    assert_eq!(v["items"], serde_json::json!([]), "none before a check");
    let (v, err) = run(&["--check"]);
    assert!(err.contains(": 2 new anomalies"), "{err}");
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{v}");
    let spike_at = rfc3339(spike / 1000);
    for (metric, value, median) in [("cost", "16", "4"), ("gpu_seconds", "28800", "7200")] {
        let a = items.iter().find(|i| i["metric"] == metric).unwrap();
        assert_eq!(a["hour"], spike_at.as_str(), "{a}");
        assert_eq!(a["value"], value, "{a}");
        assert_eq!(a["baseline_median"], median, "{a}");
        assert_eq!(a["deviation_mads"], serde_json::Value::Null, "{a}");
        // The 45 hours before it (first .. spike).
        assert_eq!(a["baseline_hours"], 45, "{a}");
    }
    let (again, err) = run(&["--check"]);
    assert!(err.contains(": 0 new anomalies"), "{err}");
    assert_eq!(again["items"], v["items"], "recorded once");
    let (mine, _) = run(&["--tenant", &owner.to_string()]);
    assert_eq!(mine["items"], v["items"]);
    let (other, _) = run(&["--tenant", "0b7c4d0e-0000-4000-8000-000000000001"]);
    assert_eq!(other["items"], serde_json::json!([]));
}

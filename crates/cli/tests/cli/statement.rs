//! `eai-gpu statement` on a store: no statement yet is an error that says to pass `--issue`; `--issue` issues it
//! (by `cli`, audited) and prints the API's JSON; then the same as CSV; a month not over is refused.

use super::*;

use eai_engine::domain::{
    GpuFraction, IdleCapacity, NonNegative, PolicySpec, Pue, Sample, Tenant, TenantId,
    UnitInterval, WindowMs,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::time::Timestamp;
use eai_store::{AuditDraft, AuditStore, PolicyStore, SampleStore, Scope, Store, TenantStore};

const HOUR: i64 = 3_600_000;
const ACME: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";

fn dec(s: &str) -> rust_decimal::Decimal {
    s.parse().unwrap()
}

/// One GPU-hour of acme's dedicated `team-train` at 400 W, at 09:00 on the first day of `from`'s month.
fn an_hour(acme: TenantId, from: Timestamp) -> Vec<Sample> {
    (1..=240)
        .map(|k| Sample {
            node: "gpu-node-1".into(),
            gpu_uuid: "GPU-train-0".into(),
            model: "H100-80GB".into(),
            namespace: "team".into(),
            pod: "team-train-0".into(),
            deployment_id: "team-train".into(),
            owner: Some(acme),
            window_ms: WindowMs::new(15_000).unwrap(),
            end: Timestamp(from.0 + 9 * HOUR + k * 15_000),
            utilization: UnitInterval::new(dec("0.5")).unwrap(),
            memory_used_gb: NonNegative::new(dec("40")).unwrap(),
            power_w: NonNegative::new(dec("400")).unwrap(),
            storage_gb: NonNegative::ZERO,
            gpu_fraction: GpuFraction::WHOLE,
            share_method: Default::default(),
        })
        .collect()
}

fn policy() -> PolicySpec {
    PolicySpec {
        name: "gpu-hours".into(),
        deployment_pattern: Glob::any(),
        gpu_model: None,
        currency: Currency::EUR,
        gpu_hourly_cost: NonNegative::new(dec("2.00")).unwrap(),
        overhead_pct: NonNegative::ZERO,
        energy_kwh_price: NonNegative::ZERO,
        pue: Pue::new(dec("1")).unwrap(),
        storage_gb_month_price: NonNegative::ZERO,
        idle_capacity: IdleCapacity::Unallocated,
        output_token_weight: Default::default(),
        enabled: true,
        effective_from: Timestamp(0),
        effective_to: None,
    }
}

#[test]
fn a_statement_is_issued_once_from_the_store_and_printed_as_json_or_csv() {
    let dir = temp_dir("statement");
    let d = dir.join("data").display().to_string();
    let (ok, _, err) = run(&["migrate", "--data-dir", &d]);
    assert!(ok, "{err}");
    // A month well over: the one 40 days ago.
    let now = eai_app::clock::now();
    let period = eai_engine::batch::month_of(Timestamp(now.0 - 40 * 24 * HOUR));
    let (from, _) = eai_engine::batch::month(&period).unwrap();
    let acme: TenantId = ACME.parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let file = dir.join("data").join("eai-gpu.db");
    let audit = || AuditDraft::system("test", "test.change", now, serde_json::json!({}));
    rt.block_on(async {
        let s = eai_store::sqlite::SqliteStore::open(&file).unwrap();
        s.create_policy(&policy(), &audit()).await.unwrap();
        let t = Tenant {
            id: acme,
            slug: "acme".parse().unwrap(),
            name: "Acme, Inc.".into(),
        };
        s.create_tenant(&t, &audit()).await.unwrap();
        s.insert_samples(an_hour(acme, from), &audit())
            .await
            .unwrap();
    });

    let statement = |extra: &[&str]| {
        let mut args = vec!["statement", "--tenant", "acme", "--period", &period];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--data-dir", &d]);
        run(&args)
    };
    let (ok, _, err) = statement(&[]);
    assert!(!ok && err.contains("pass --issue"), "{err}");

    let (ok, out, err) = statement(&["--issue"]);
    assert!(ok, "{err}");
    let number = format!("ST-{period}-0001");
    assert!(err.contains(&format!("issued {number}")), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["number"], number.as_str());
    assert_eq!(v["tenant_id"], ACME);
    assert_eq!(v["tenant_name"], "Acme, Inc.");
    assert_eq!(v["issued_by"], "cli");
    // One GPU-hour at 2.00 EUR; 400 W x 1 h = 0.4 kWh.
    assert_eq!(v["lines"][0]["gpu_hours"], "1.000000");
    assert_eq!(v["lines"][0]["energy_kwh"], "0.400000");
    assert_eq!(
        v["totals"],
        serde_json::json!([{ "amount": "2.00", "currency": "EUR" }])
    );
    assert_eq!(v["adjustments"], serde_json::json!([]));

    // Issued: read again, as CSV, without --issue; --issue again issues nothing new.
    let (ok, csv, err) = statement(&["--format", "csv"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines,
        [
            "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency",
            "charge,team-train,alp_1,1.000000,0.400000,2.00,EUR",
            "total,,,,,2.00,EUR",
            "adjusted_total,,,,,2.00,EUR",
        ]
    );
    let (ok, again, err) = statement(&["--issue"]);
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&again).unwrap()["number"],
        number.as_str()
    );
    rt.block_on(async {
        let s = eai_store::sqlite::SqliteStore::open(&file).unwrap();
        let issued: Vec<_> = s
            .audit_events(Scope::Platform, 0, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.draft.action == "gpu_statement.issue")
            .collect();
        assert_eq!(issued.len(), 1, "issued once, audited once");
        assert_eq!(issued[0].draft.actor, "cli");
        assert_eq!(issued[0].draft.resource.as_deref(), Some(number.as_str()));
        assert_eq!(s.backend(), "sqlite");
    });

    // The current month is not over.
    let current = eai_engine::batch::month_of(now);
    let (ok, _, err) = run(&[
        "statement",
        "--tenant",
        "acme",
        "--period",
        &current,
        "--issue",
        "--data-dir",
        &d,
    ]);
    assert!(!ok && err.contains("--period is not over yet"), "{err}");
    let (ok, _, err) = statement(&["--format", "xml"]);
    assert!(!ok && err.contains("xml"), "{err}");
}

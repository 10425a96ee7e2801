//! `eai-gpu forecast` on the demo's store.

use super::*;

fn amount(v: &serde_json::Value) -> rust_decimal::Decimal {
    v["amount"].as_str().unwrap().parse().unwrap()
}

/// `eai-gpu forecast` on the demo's store: the API's JSON (each tenant's totals the sums of its lines, the band
/// around the expectation), the tables, `--tenant` keeping one tenant's lines, and a bad `--period` refused.
#[test]
fn forecast_shows_the_months_lines_and_budgets_from_the_store() {
    let data = demo_store("forecast");
    let forecast = |extra: &[&str]| {
        let out = bin()
            .args(["forecast", "--data-dir"])
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
    let (code, json, err) = forecast(&["--json"]);
    assert_eq!(code, Some(0), "{err}");
    let f: serde_json::Value = serde_json::from_str(&json).unwrap();
    let lines = f["lines"].as_array().unwrap();
    assert!(!lines.is_empty(), "{f}");
    for l in lines {
        let (spent, low, expected, high) = (
            amount(&l["spent"]),
            amount(&l["low"]),
            amount(&l["expected"]),
            amount(&l["high"]),
        );
        assert!(spent <= low && low <= expected && expected <= high, "{l}");
    }
    for t in f["tenants"].as_array().unwrap() {
        let sum: rust_decimal::Decimal = lines
            .iter()
            .filter(|l| l["tenant_id"] == t["tenant_id"])
            .map(|l| amount(&l["expected"]))
            .sum();
        assert_eq!(amount(&t["expected"]), sum, "{f}");
    }
    let (code, table, err) = forecast(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table.contains("Forecast of") && table.contains("Per tenant") && table.contains("Budgets"),
        "{table}"
    );
    let one = lines
        .iter()
        .find_map(|l| l["tenant_id"].as_str())
        .expect("a tenant's line")
        .to_string();
    let (code, json, err) = forecast(&["--json", "--tenant", &one]);
    assert_eq!(code, Some(0), "{err}");
    let mine: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(mine["lines"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["tenant_id"] == one.as_str()));
    let (code, _, err) = forecast(&["--period", "2026-13"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--period"), "{err}");
}

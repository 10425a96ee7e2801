//! `eai-gpu explain` and `eai-gpu usage` on the demo's store.

use super::*;

/// `eai-gpu explain` on the demo's store: the tables and the API's JSON; its rounded lines sum to the row's
/// cost; `--tenant` shows one tenant and sums the others; a deployment without GPU time exits 1 saying so.
#[test]
fn explain_and_usage_show_a_deployments_charge_and_its_pods_from_the_store() {
    let data = demo_store("explain");
    let dir = data.parent().unwrap().to_path_buf();
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

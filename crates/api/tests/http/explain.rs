//! The explanation of a charge over HTTP (`GET /v1/finops/gpu/allocation/explain`): the SPEC's worked example
//! line by line, its rounded lines equal to the allocation's figures, and who may see what: a tenant reader its
//! own share with every other tenant summed, nothing of a deployment it is not charged on, never another
//! tenant's view.

use super::*;

const TENANT_C: &str = "6b9e1f0a-3c2d-4e5f-8a7b-9c0d1e2f3a4b";

pub async fn the_worked_example_is_explained_line_by_line_and_scoped_to_its_reader() {
    let app = spawn_app().await;
    let hour = recent_hour();
    app.create_policy(worked_example_policy()).await;
    let mut samples = hour_of_samples("GPU-aaaa", "vllm-llama-70b", hour, 400);
    samples.extend(hour_of_samples("GPU-bbbb", "vllm-llama-70b", hour, 400));
    app.ingest(samples).await;
    let mid = Timestamp(hour.0 + HOUR_MS / 2);
    for (tenant, tokens) in [(TENANT_A, 7000), (TENANT_B, 3000)] {
        let (key, _) = app.key("developer", Some(tenant)).await;
        let (s, v) = app
            .post(
                "/v1/usage/events",
                &key,
                &json!({ "events": [usage_event("vllm-llama-70b", mid, json!({"tokens_in": tokens}))] }),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let to = Timestamp(hour.0 + HOUR_MS);
    let path = |extra: &str| {
        format!("/v1/finops/gpu/allocation/explain?deployment_id=vllm-llama-70b&from={hour}&to={to}{extra}")
    };

    // The platform's view: both tenants, every step.
    let (status, e) = app.get(&path(""), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{e}");
    assert_eq!(e["deployment_id"], "vllm-llama-70b");
    assert_eq!(e["bucket_seconds"], 3600);
    assert_eq!(e["policies"][0]["gpu_hourly_cost"], "2.1", "{e}");
    let b = &e["buckets"][0];
    assert_eq!(b["start"], hour.to_string());
    assert_eq!(b["gpu_seconds"].to_string(), "7200", "{e}");
    let claims: Vec<(String, String, String)> = b["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            (
                c["party"]["tenant_id"].as_str().unwrap_or("").to_string(),
                c["tokens"].to_string(),
                c["share"].to_string(),
            )
        })
        .collect();
    let mut want = vec![
        (TENANT_A.to_string(), "7000".to_string(), "0.7".to_string()),
        (TENANT_B.to_string(), "3000".to_string(), "0.3".to_string()),
    ];
    want.sort();
    let mut got = claims.clone();
    got.sort();
    assert_eq!(got, want, "{e}");
    let p = &b["priced"][0];
    assert_eq!(
        (
            &p["gpu_time_cost"],
            &p["energy_cost"],
            &p["cost"],
            &p["idle"]
        ),
        (
            &json!("4.956"),
            &json!("0.2352"),
            &json!("5.1912"),
            &json!("0")
        ),
        "{e}"
    );
    let r = &e["rounding"][0];
    assert_eq!(
        (&r["exact"], &r["cost"]),
        (&json!("5.1912"), &json!("5.19"))
    );
    // The rounded lines are the allocation's items.
    let (status, a) = app.allocation(&app.admin_key, hour, to).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    for item in a["items"].as_array().expect("items") {
        let line = r["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .find(|l| l["party"]["tenant_id"] == item["tenant_id"])
            .unwrap_or_else(|| panic!("no line for {item}: {e}"));
        assert_eq!(line["amount"], item["allocated"]["amount"], "{e}");
    }
    let amounts: Vec<(&str, &str, &str)> = r["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            (
                l["party"]["kind"].as_str().unwrap_or(""),
                l["floor"].as_str().unwrap_or(""),
                l["amount"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(amounts.contains(&("unallocated", "0.00", "0.00")), "{e}");

    // Tenant A's reader: its own claim and charge, tenant B summed into "other tenants", B's id nowhere.
    let (viewer_a, _) = app.key("viewer", Some(TENANT_A)).await;
    let (status, text) = app.get_text(&path(""), &viewer_a).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_B), "tenant A sees tenant B: {text}");
    let mine: Value = serde_json::from_str(&text).expect("json");
    let kinds: Vec<&str> = mine["buckets"][0]["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| c["party"]["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, vec!["tenant", "other_tenants"], "{mine}");
    assert_eq!(mine["rounding"][0]["cost"], "5.19", "{mine}");
    // The same view, asked for by the platform as tenant B: A becomes the other tenants.
    let (status, text) = app
        .get_text(&path(&format!("&tenant_id={TENANT_B}")), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_A), "{text}");
    assert!(text.contains(TENANT_B), "{text}");

    // A tenant reader may not ask for another tenant's view; a tenant with no charge on it finds nothing.
    let (status, v) = app
        .get(&path(&format!("&tenant_id={TENANT_B}")), &viewer_a)
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let (viewer_c, _) = app.key("viewer", Some(TENANT_C)).await;
    let (status, v) = app.get(&path(""), &viewer_c).await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app
        .get(
            &format!(
                "/v1/finops/gpu/allocation/explain?deployment_id=nothing-here&from={hour}&to={to}"
            ),
            &app.admin_key,
        )
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    // Bad requests name their fields.
    let (status, v) = app
        .get(
            &format!("/v1/finops/gpu/allocation/explain?from={hour}&to={to}&tenant_id=not-a-uuid"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["deployment_id", "tenant_id"]);
}

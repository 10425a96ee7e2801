//! Snapshots (insta) of what clients read byte for byte: the error envelope of a few representative errors in
//! both locales, and the allocation JSON of the worked example (`examples/worked/`) through the API. The
//! snapshots are committed beside this file (`snapshots/`); a change to a message, a field or a figure shows as
//! a diff to review (`cargo insta review`, or INSTA_UPDATE=always then `git diff`). scripts/test.sh runs them
//! with INSTA_UPDATE=no: a missing or different snapshot fails, nothing is written.

use std::path::Path;

use reqwest::Method;
use serde_json::{json, Value};

use super::{spawn_app, TestApp};

/// The example's file, as `eai-gpu allocate` reads it.
fn worked(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/worked")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The JSON as the server wrote it (numbers keep their digits: serde_json has `arbitrary_precision`), with the
/// request id (new on every request) replaced.
fn pretty(mut v: Value) -> String {
    if let Some(id) = v.pointer_mut("/body/error/request_id") {
        assert!(
            id.as_str().is_some_and(|s| !s.is_empty()),
            "a request id: {id}"
        );
        *id = json!("[request id]");
    }
    serde_json::to_string_pretty(&v).expect("JSON")
}

/// `{status, body}` of one request in one locale.
async fn answer(
    app: &TestApp,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
    locale: &str,
) -> Value {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("Accept-Language", locale);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let (status, body) = app.send(req).await;
    json!({ "status": status.as_u16(), "body": body })
}

/// A request that fails: (name, method, path, key, body).
type Case<'a> = (&'a str, Method, &'a str, Option<&'a str>, Option<Value>);

#[tokio::test]
async fn the_error_envelope_in_english_and_in_french() {
    let app = spawn_app().await;
    let (developer, _) = app.key("developer", Some(super::TENANT_A)).await;
    let bad_samples = json!({ "samples": [{
        "node": "gpu-node-3",
        "gpu_uuid": "",
        "model": "H100-80GB",
        "namespace": "eai-inference",
        "pod": "vllm-llama-70b-0",
        "deployment_id": "vllm-llama-70b",
        "window_seconds": 15,
        "utilization": 1.5,
        "memory_used_gb": 61.2,
        "power_w": -1,
        "timestamp": "2026-10-01T00:00:15Z",
    }]});
    let cases: Vec<Case> = vec![
        (
            "unauthorized",
            Method::GET,
            "/v1/finops/gpu/allocation",
            None,
            None,
        ),
        (
            "forbidden",
            Method::POST,
            "/v1/finops/allocation-policies",
            Some(&developer),
            Some(json!({ "name": "x" })),
        ),
        (
            "validation_error",
            Method::POST,
            "/v1/finops/gpu/samples",
            Some(&app.admin_key),
            Some(bad_samples),
        ),
        (
            "not_found",
            Method::GET,
            "/v1/finops/allocation-policies/alp_999",
            Some(&app.admin_key),
            None,
        ),
        ("route_not_found", Method::GET, "/v1/nowhere", None, None),
        (
            "method_not_allowed",
            Method::DELETE,
            "/v1/tenants",
            None,
            None,
        ),
    ];
    for (name, method, path, key, body) in cases {
        for locale in ["en", "fr"] {
            let v = answer(&app, method.clone(), path, key, body.clone(), locale).await;
            insta::assert_snapshot!(format!("error_{name}_{locale}"), pretty(v));
        }
    }
}

#[tokio::test]
async fn the_worked_example_allocation_json() {
    let app = spawn_app().await;
    let mut policy = worked("policy.json");
    // The example's samples are of 2026-10-01; a policy made now would start now.
    policy["effective_from"] = json!("2026-10-01T00:00:00Z");
    let (status, v) = app
        .post("/v1/finops/allocation-policies", &app.admin_key, &policy)
        .await;
    assert_eq!(status.as_u16(), 201, "{v}");
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &app.admin_key,
            &worked("samples.json"),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{v}");
    let (status, v) = app
        .post("/v1/usage/events", &app.admin_key, &worked("usage.json"))
        .await;
    assert_eq!(status.as_u16(), 200, "{v}");
    let (status, allocation) = app
        .get(
            "/v1/finops/gpu/allocation?from=2026-10-01T00:00:00Z&to=2026-10-01T01:00:00Z",
            &app.admin_key,
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{allocation}");
    insta::assert_snapshot!("worked_example_allocation", pretty(allocation));
}

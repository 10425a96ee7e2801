//! The Slurm reconciliation over HTTP (`POST /v1/finops/gpu/slurm/reconciliation`): `sacct --json` as Debian's
//! Slurm 22.05 wrote it for two jobs (`sacct.json`, captured from a real slurmctld/slurmdbd: job 1 of account
//! physics holding 2 GPUs for 20 s, job 2 of account bio holding 1 GPU for the same 20 s) beside the samples the
//! sampler sent for them; the errors of a bad request; a tenant's reader sees its own jobs only.

use rust_decimal::Decimal;

use super::*;

const SACCT: &str = include_str!("sacct.json");

/// The samples of a job's GPU: 5 s windows over its 20 s, busy `util`.
fn job_samples(
    gpu: &str,
    job: &str,
    account: &str,
    tenant: &str,
    start: i64,
    util: &str,
) -> Vec<Value> {
    (1..=4)
        .map(|k| {
            json!({
                "node": "gpu-node-1",
                "gpu_uuid": gpu,
                "model": "H100-80GB",
                "namespace": account,
                "pod": format!("job-{job}"),
                "deployment_id": "slurm/gpu",
                "tenant_id": tenant,
                "window_seconds": 5,
                "utilization": util,
                "memory_used_gb": 10,
                "power_w": 300,
                "timestamp": Timestamp(start + k * 5_000).to_string(),
            })
        })
        .collect()
}

pub async fn slurms_jobs_are_reconciled_with_what_was_measured_and_scoped_to_their_tenant() {
    let app = spawn_app().await;
    app.create_policy(worked_example_policy()).await;
    let doc: Value = serde_json::from_str(SACCT).expect("sacct.json");
    let start = doc["jobs"][0]["time"]["start"].as_i64().expect("start") * 1000;
    let mut samples = Vec::new();
    for gpu in ["GPU-0", "GPU-1"] {
        samples.extend(job_samples(gpu, "1", "physics", TENANT_A, start, "0.9"));
    }
    samples.extend(job_samples("GPU-2", "2", "bio", TENANT_B, start, "0.02"));
    app.ingest(samples).await;
    let hour = Timestamp(start).floor_to(HOUR_MS);
    let to = Timestamp(hour.0 + HOUR_MS);
    let path = |q: &str| format!("/v1/finops/gpu/slurm/reconciliation?from={hour}&to={to}{q}");

    let (status, r) = app.post(&path(""), &app.admin_key, &doc).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let jobs: Vec<(&str, &str, u64, String, String, &str)> = r["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["job_id"].as_str().expect("id"),
                j["account"].as_str().expect("account"),
                j["gpus"].as_u64().expect("gpus"),
                j["allocated_gpu_seconds"].to_string(),
                j["measured_gpu_seconds"].to_string(),
                j["status"].as_str().expect("status"),
            )
        })
        .collect();
    // Slurm: 2 GPUs x 20 s and 1 GPU x 20 s; measured: four windows of 5 s on each GPU.
    assert_eq!(
        jobs,
        vec![
            ("1", "physics", 2, "40".into(), "40".into(), "ok"),
            ("2", "bio", 1, "20".into(), "20".into(), "idle"),
        ],
        "{r}"
    );
    assert_eq!(r["jobs"][0]["tenant_id"], TENANT_A, "{r}");
    assert_eq!(r["jobs"][0]["deployment_id"], "slurm/gpu", "{r}");
    assert_eq!(r["jobs"][1]["busy_share"], json!(0.02), "{r}");
    // The idle job's cost is the idle cost, and each job's cost is its part of the allocation.
    let (status, alloc) = app.allocation(&app.admin_key, hour, to).await;
    assert_eq!(status, StatusCode::OK, "{alloc}");
    let total: Decimal = alloc["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .map(|d| {
            d["cost"]
                .as_str()
                .expect("cost")
                .parse::<Decimal>()
                .expect("decimal")
        })
        .sum();
    let job_cost = |i: usize| -> Decimal {
        r["jobs"][i]["cost"][0]["amount"]
            .as_str()
            .expect("amount")
            .parse()
            .expect("decimal")
    };
    assert_eq!(job_cost(0) + job_cost(1), total, "{r}");
    assert_eq!(
        r["idle_cost"][0]["amount"], r["jobs"][1]["cost"][0]["amount"],
        "{r}"
    );
    assert_eq!(r["allocated_gpu_seconds"], json!(60), "{r}");

    // A stricter threshold: job 1 (busy 90 %) is idle under 0.95.
    let (status, strict) = app
        .post(&path("&idle_below=0.95"), &app.admin_key, &doc)
        .await;
    assert_eq!(status, StatusCode::OK, "{strict}");
    assert_eq!(strict["jobs"][0]["status"], "idle", "{strict}");

    // Tenant A's reader: its job only, never bio's.
    let (key_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, mine) = app.post(&path(""), &key_a, &doc).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    let ids: Vec<&str> = mine["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["job_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec!["1"], "{mine}");

    // A bad request: every bad field named, in the envelope.
    let (status, e) = app
        .post(
            &format!("/v1/finops/gpu/slurm/reconciliation?from={hour}&to=soon&idle_below=2"),
            &app.admin_key,
            &json!({"meta": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
    let fields: Vec<&str> = e["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().expect("field"))
        .collect();
    assert_eq!(fields, vec!["idle_below", "to", "body"], "{e}");
    // A sampler key reads no costs.
    let (sampler_key, _) = app.key("sampler", None).await;
    let (status, e) = app.post(&path(""), &sampler_key, &doc).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
}

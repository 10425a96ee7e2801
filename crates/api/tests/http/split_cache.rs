//! The settled splits the allocation keeps between requests (`EAI_SPLIT_CACHE_BUCKETS`): a late usage event or
//! late samples in a closed hour, written through one server, change the answer of a second handle on the same
//! store (another replica) that had its splits kept, to the cent and to the answer computed from scratch.

use eai_app::allocation::{compute, read_inputs, split_cache, Source};
use eai_engine::allocate::{allocate, AllocationConfig, Period};

use super::*;

/// The allocation of `[from, to)` on `store` computed from scratch: read, then every split computed now.
async fn from_scratch(store: &dyn Store, period: Period) -> eai_engine::report::Allocation {
    let inputs = read_inputs(&Source::Primary, store, period)
        .await
        .expect("read");
    let mut a = allocate(&inputs.engine_input(period, AllocationConfig::default()));
    a.findings
        .extend(eai_engine::shares::findings(&inputs.equal_shares, period));
    a
}

fn cost_of(a: &eai_engine::report::Allocation, tenant: &str) -> String {
    let t = eai_engine::domain::TenantId(Uuid::parse_str(tenant).expect("uuid"));
    a.tenants
        .iter()
        .find(|r| r.tenant_id == t)
        .map(|r| r.cost.to_string())
        .unwrap_or_default()
}

pub async fn kept_splits_follow_late_writes_in_closed_hours_on_every_replica() {
    let app = spawn_app().await;
    // Two closed hours of one GPU on a shared deployment at 10 an hour; tokens 700 (A) : 300 (B) in each.
    let (from, to) = shared_deployment_of_two_tenants(&app).await;
    let period = Period::new(from, to, HOUR_MS).expect("period");
    let replica = app.second_store().await;
    let config = AllocationConfig::default();
    let first = compute(replica.as_ref(), period, config)
        .await
        .expect("allocate");
    assert_eq!(cost_of(&first, TENANT_A), "14.00");
    assert_eq!(cost_of(&first, TENANT_B), "6.00");
    assert!(split_cache().held() >= 2, "the two shared hours kept");
    // Again from the kept splits: the same.
    let again = compute(replica.as_ref(), period, config)
        .await
        .expect("allocate");
    assert_eq!(again, first);

    // A late usage event of B (700 tokens) in the first hour, through the server: that hour is now 700 : 1,000.
    // A: 10 x 700/1,700 + 7 = 11.1176... -> 11.12; B: 10 x 1,000/1,700 + 3 = 8.8823... -> 8.88.
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    let late = usage_event(
        "vllm-shared",
        Timestamp(from.0 + 50 * 60_000),
        json!({ "tokens_in": 700 }),
    );
    let (status, body) = app
        .post("/v1/usage/events", &dev_b, &json!({ "events": [late] }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after_event = compute(replica.as_ref(), period, config)
        .await
        .expect("allocate");
    assert_eq!(cost_of(&after_event, TENANT_A), "11.12");
    assert_eq!(cost_of(&after_event, TENANT_B), "8.88");
    let fresh = app.second_store().await;
    assert_eq!(after_event, from_scratch(fresh.as_ref(), period).await);

    // Late samples: a second GPU's hour in the first hour, posted to the server. That hour costs 20:
    // A: 20 x 700/1,700 + 7 = 15.2352... -> 15.24; B: 20 x 1,000/1,700 + 3 = 14.7647... -> 14.76.
    app.ingest(hour_of_samples("GPU-dddd", "vllm-shared", from, 300))
        .await;
    let after_samples = compute(replica.as_ref(), period, config)
        .await
        .expect("allocate");
    assert_eq!(cost_of(&after_samples, TENANT_A), "15.24");
    assert_eq!(cost_of(&after_samples, TENANT_B), "14.76");
    assert_eq!(after_samples.deployments[0].cost.to_string(), "30.00");
    assert_eq!(after_samples, from_scratch(fresh.as_ref(), period).await);
    // And the server itself (its own read cache, the same process's kept splits) says the same.
    let (status, v) = app.allocation(&app.admin_key, from, to).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(tenant_row(&v, TENANT_A)["cost"]["amount"], "15.24", "{v}");
    assert_eq!(tenant_row(&v, TENANT_B)["cost"]["amount"], "14.76", "{v}");
}

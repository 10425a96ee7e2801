//! The `security` suite (issue: trust): each attack a tenant, a service key or someone with the database could
//! try, over HTTP against a real server, on both backends. Every test names the attack it tries.

use eai_app::allocation::Source;
use eai_engine::allocate::AllocationConfig;
use eai_store::audit::{link_stored, GENESIS_HASH};
use eai_store::{AuditHead, Scope};

use super::*;

/// The month of an instant, `YYYY-MM`.
fn month_of(t: Timestamp) -> String {
    t.to_string()[..7].to_string()
}

/// A tenant's usage on a shared deployment, a platform sample hour, a policy: what a batch allocates.
async fn billable_hour(app: &TestApp, hour: Timestamp) {
    app.create_policy(worked_example_policy()).await;
    app.ingest(hour_of_samples("GPU-sec-1", "vllm-shared", hour, 400))
        .await;
    let (key, _) = app.key("developer", Some(TENANT_A)).await;
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &key,
            &json!({ "events": [usage_event("vllm-shared", Timestamp(hour.0 + 60_000), json!({"tokens_in": 7000}))] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

async fn audit_actions(app: &TestApp) -> Vec<Value> {
    let (status, v) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["items"].as_array().cloned().unwrap_or_default()
}

/// Attack: a tenant forges or overwrites the allocation batch's record of its own charge, or blocks the batch by
/// pre-creating its event id.
pub async fn the_allocation_record_belongs_to_the_platform() {
    let app = spawn_app().await;
    let hour = recent_hour();
    billable_hour(&app, hour).await;
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;

    // A forged record: refused and audited as a denial.
    let mut forged = usage_event("vllm-shared", hour, json!({"gpu_seconds": 0}));
    forged["source"] = json!("allocation");
    forged["usage_type"] = json!("gpu_local");
    forged["cost"] = json!({"amount": "0.00", "currency": "EUR"});
    let (status, v) = app
        .post("/v1/usage/events", &dev_a, &json!({ "events": [forged] }))
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let denied = audit_actions(&app).await;
    assert!(
        denied.iter().any(|e| e["action"] == "usage_events.ingest"
            && e["decision"] == "deny"
            && e["details"]["outcome"] == "forbidden"),
        "{denied:?}"
    );

    // The batch records A's charge.
    let store = app.second_store().await;
    let config = AllocationConfig::default();
    let now = eai_api::state::now();
    eai_app::batch::run_month_from(
        &Source::Primary,
        store.as_ref(),
        &month_of(hour),
        now,
        config,
    )
    .await
    .expect("the batch runs");
    let records =
        |events: Vec<eai_engine::domain::UsageEvent>| -> Vec<eai_engine::domain::UsageEvent> {
            events
                .into_iter()
                .filter(|e| e.source == eai_engine::domain::ALLOCATION_SOURCE)
                .collect()
        };
    let a: eai_engine::domain::TenantId = TENANT_A.parse().expect("uuid");
    let charged = records(
        store
            .usage_events(Scope::Tenant(a), Timestamp(0), Timestamp(i64::MAX / 2))
            .await
            .expect("events"),
    );
    assert_eq!(charged.len(), 1, "{charged:?}");
    let record = &charged[0];

    // A overwrites it with its own event of the same id: refused, the record stays.
    let mut overwrite = usage_event("vllm-shared", hour, json!({"tokens_in": 1}));
    overwrite["event_id"] = json!(record.event_id.to_string());
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &dev_a,
            &json!({ "events": [overwrite.clone()] }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    // B uses the same id (it could compute A's next ids): its own event, under its own tenant, blocks nothing.
    let mut same_id = overwrite;
    same_id["deployment_id"] = json!("vllm-elsewhere");
    let (status, v) = app
        .post("/v1/usage/events", &dev_b, &json!({ "events": [same_id] }))
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    eai_app::batch::run_month_from(
        &Source::Primary,
        store.as_ref(),
        &month_of(hour),
        now,
        config,
    )
    .await
    .expect("the batch runs again");
    let again = records(
        store
            .usage_events(Scope::Tenant(a), Timestamp(0), Timestamp(i64::MAX / 2))
            .await
            .expect("events"),
    );
    assert_eq!(&again, &charged, "A's record is the batch's, unchanged");
}

/// Attack: service keys doing more than their job (a sampler posting usage, a gateway posting samples), a
/// sampler posting another node's samples, a sample dated in the future, a tenant reading another's catalog.
pub async fn every_role_holds_the_least_it_needs() {
    let app = spawn_app().await;
    let hour = recent_hour();
    let (sampler, _) = app.key("sampler", None).await;
    let event = usage_event("vllm-shared", hour, json!({"tokens_in": 1_000_000}));
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &sampler,
            &json!({ "events": [event.clone()] }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    // The gateway's role: usage for any tenant (named in the body), nothing else.
    let (reporter, _) = app.key("usage_reporter", None).await;
    let mut for_a = event.clone();
    for_a["tenant_id"] = json!(TENANT_A);
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &reporter,
            &json!({ "events": [for_a.clone()] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &reporter,
            &json!({ "samples": [sample("GPU-x", "d", hour, 100)] }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let mut forged = for_a;
    forged["source"] = json!("allocation");
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &reporter,
            &json!({ "events": [forged] }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let (status, v) = app.get("/v1/finops/gpu/allocation", &reporter).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    // A sampler bound to gpu-node-3: another node's sample refuses the batch, by index.
    let (status, v) = app
        .post(
            "/v1/auth/api-keys",
            &app.admin_key,
            &json!({ "role": "sampler", "nodes": ["gpu-node-3"] }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    assert_eq!(v["nodes"], json!(["gpu-node-3"]));
    let bound = v["key"].as_str().expect("key").to_string();
    let mut elsewhere = sample("GPU-y", "d", Timestamp(hour.0 + 30_000), 100);
    elsewhere["node"] = json!("gpu-node-4");
    let here = sample("GPU-y", "d", Timestamp(hour.0 + 15_000), 100);
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &bound,
            &json!({ "samples": [here.clone(), elsewhere] }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(v["error"]["details"][0]["index"], 1, "{v}");
    assert_eq!(detail_fields(&v), vec!["node"]);
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &bound,
            &json!({ "samples": [here] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");

    // From the future: 2099, and ten minutes ahead, are refused; a minute ahead is within the skew.
    let now = eai_api::state::now();
    for (end, ok) in [
        (
            Timestamp::parse_rfc3339("2099-01-01T00:00:00Z").expect("date"),
            false,
        ),
        (Timestamp(now.0 + 600_000), false),
        (Timestamp(now.0 + 60_000), true),
    ] {
        let (status, v) = app
            .post(
                "/v1/finops/gpu/samples",
                &app.admin_key,
                &json!({ "samples": [sample("GPU-z", "d", end, 100)] }),
            )
            .await;
        if ok {
            assert_eq!(status, StatusCode::OK, "{v}");
        } else {
            assert_error(
                status,
                &v,
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_error",
            );
            assert_eq!(detail_fields(&v), vec!["timestamp"]);
        }
    }

    // The catalog: shared deployments for everyone, a dedicated one for its tenant only.
    let mut dedicated = sample("GPU-b", "vllm-acme-private", hour, 100);
    dedicated["tenant_id"] = json!(TENANT_B);
    app.ingest(vec![dedicated, sample("GPU-s", "vllm-shared", hour, 100)])
        .await;
    let names = |v: &Value| -> Vec<String> {
        let mut n: Vec<String> = v["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i["base_url"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        n.sort();
        n
    };
    let (viewer_a, _) = app.key("viewer", Some(TENANT_A)).await;
    let (viewer_b, _) = app.key("viewer", Some(TENANT_B)).await;
    let (_, a) = app.get("/v1/providers/catalog", &viewer_a).await;
    let (_, b) = app.get("/v1/providers/catalog", &viewer_b).await;
    let (_, all) = app.get("/v1/providers/catalog", &app.admin_key).await;
    assert!(
        !names(&a).iter().any(|u| u.contains("vllm-acme-private")),
        "{a}"
    );
    assert!(names(&a).iter().any(|u| u.contains("vllm-shared")), "{a}");
    assert!(
        names(&b).iter().any(|u| u.contains("vllm-acme-private")),
        "{b}"
    );
    assert!(names(&all).len() > names(&a).len(), "{all}");
    let (status, v) = app.get("/v1/providers/catalog", &sampler).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
}

/// Attack: a leaked key used after it was revoked, after it expired, or after it was rotated; a tenant admin
/// touching another tenant's keys.
pub async fn keys_are_listed_revoked_expired_and_rotated() {
    let app = spawn_app().await;
    let (admin_a, _) = app.key("tenant_admin", Some(TENANT_A)).await;
    let (viewer_a, viewer_a_id) = app.key("viewer", Some(TENANT_A)).await;
    let (viewer_b, viewer_b_id) = app.key("viewer", Some(TENANT_B)).await;

    // Lists: everything for the platform, one tenant's for its admin; never a secret or a hash.
    let (status, all) = app.get("/v1/auth/api-keys", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    let (status, mine) = app.get("/v1/auth/api-keys", &admin_a).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    let ids = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|k| k["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(ids(&all).contains(&viewer_b_id));
    assert!(
        ids(&mine).contains(&viewer_a_id) && !ids(&mine).contains(&viewer_b_id),
        "{mine}"
    );
    let text = all.to_string();
    assert!(
        !text.contains(&viewer_a) && !text.contains("eai_live_") && !text.contains("hash"),
        "{text}"
    );
    let (status, v) = app.get("/v1/auth/api-keys", &viewer_a).await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    // Revocation: A's admin revokes A's viewer; B's viewer is not found for it.
    let (status, v) = app
        .send(
            app.client
                .delete(app.url(&format!("/v1/auth/api-keys/{viewer_b_id}")))
                .bearer_auth(&admin_a),
        )
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app
        .send(
            app.client
                .delete(app.url(&format!("/v1/auth/api-keys/{viewer_a_id}")))
                .bearer_auth(&admin_a),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "revoked");
    let (status, v) = app.get("/v1/auth/whoami", &viewer_a).await;
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");
    let (status, _) = app.get("/v1/auth/whoami", &viewer_b).await;
    assert_eq!(status, StatusCode::OK);

    // Expiry: the key works until its time, and not once the server's clock is past it (stepped, not waited
    // for).
    let expires = Timestamp(eai_api::state::now().0 + 60_000);
    let (status, v) = app
        .post(
            "/v1/auth/api-keys",
            &app.admin_key,
            &json!({ "role": "viewer", "tenant_id": TENANT_A, "expires_at": expires.to_string() }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let short = v["key"].as_str().expect("key").to_string();
    let (status, _) = app.get("/v1/auth/whoami", &short).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(61_000);
    let (status, v) = app.get("/v1/auth/whoami", &short).await;
    assert_error(status, &v, StatusCode::UNAUTHORIZED, "unauthorized");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expired"),
        "{v}"
    );

    // Rotation without grace: the old secret stops at once.
    let rotate = |id: String, grace: u64| {
        let app = &app;
        async move {
            app.post(
                &format!("/v1/auth/api-keys/{id}/rotate"),
                &app.admin_key,
                &json!({ "grace_seconds": grace }),
            )
            .await
        }
    };
    let (status, v) = rotate(viewer_b_id.clone(), 0).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let new_b = v["key"].as_str().expect("new secret").to_string();
    assert_ne!(new_b, viewer_b);
    assert_eq!(
        app.get("/v1/auth/whoami", &viewer_b).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/v1/auth/whoami", &new_b).await.0, StatusCode::OK);
    // With grace: both work until it ends.
    let (status, v) = rotate(viewer_b_id.clone(), 600).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert!(v["previous_secret_valid_until"].is_string(), "{v}");
    let newer_b = v["key"].as_str().expect("new secret").to_string();
    assert_eq!(app.get("/v1/auth/whoami", &new_b).await.0, StatusCode::OK);
    assert_eq!(app.get("/v1/auth/whoami", &newer_b).await.0, StatusCode::OK);
    // A revoked key cannot be rotated back to life: 409.
    let (status, v) = rotate(viewer_a_id, 0).await;
    assert_error(status, &v, StatusCode::CONFLICT, "conflict");

    let actions: Vec<String> = audit_actions(&app)
        .await
        .iter()
        .filter(|e| e["decision"] == "allow")
        .filter_map(|e| e["action"].as_str().map(str::to_string))
        .collect();
    for a in ["api_key.create", "api_key.revoke", "api_key.rotate"] {
        assert!(actions.iter().any(|x| x == a), "{a} audited: {actions:?}");
    }
}

/// Attack: flooding the server, with a key or without one; allocations hogging every core.
pub async fn requests_are_rate_limited() {
    let app = spawn_app_with(|c| {
        c.rate_limit_per_key = 2;
        c.rate_limit_per_address = 3;
        c.max_concurrent_allocations = 1;
    })
    .await;
    let (viewer, _) = app.key("viewer", Some(TENANT_A)).await;
    let mut limited = None;
    for _ in 0..10 {
        let resp = app
            .client
            .get(app.url("/v1/auth/whoami"))
            .bearer_auth(&viewer)
            .send()
            .await
            .expect("sent");
        if resp.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(resp);
            break;
        }
    }
    let resp = limited.expect("a burst of 4 then 429");
    assert_rate_limited(resp).await;
    // Another key has its own bucket.
    let (other, _) = app.key("viewer", Some(TENANT_B)).await;
    assert_eq!(app.get("/v1/auth/whoami", &other).await.0, StatusCode::OK);

    // Without a key: per client address.
    let mut codes = Vec::new();
    for _ in 0..12 {
        codes.push(app.get_text("/healthz", "").await.0);
    }
    assert!(codes.contains(&StatusCode::TOO_MANY_REQUESTS), "{codes:?}");

    // Allocations: the one slot is taken, the next is refused with Retry-After (the buckets refilled first:
    // the limits run on the server's clock, stepped here instead of waiting).
    app.clock.advance(1_100);
    let slot = app.limits.allocation_slot().expect("the slot");
    let resp = app
        .client
        .get(app.url("/v1/finops/gpu/allocation"))
        .bearer_auth(&other)
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()[reqwest::header::RETRY_AFTER], "1");
    drop(slot);
    app.clock.advance(1_100);
    assert_eq!(
        app.allocation(&other, recent_hour(), eai_api::state::now())
            .await
            .0,
        StatusCode::OK
    );
    let (_, metrics) = app.get_text("/metrics", "").await;
    assert!(metrics.contains("eai_rate_limited_total"), "{metrics}");
}

/// A gateway's key (`usage_reporter`) has a rate of its own (5,000/s by default), so that a gateway's
/// reserve + commit pairs fit; other roles keep the per-key rate (`EAI_RATE_LIMIT_PER_KEY`, here 2/s so that
/// the viewer's burst of 4 is spent before its bucket refills, however slow the machine).
pub async fn a_gateway_key_is_not_limited_where_a_viewer_key_is() {
    let app = spawn_app_with(|c| {
        c.rate_limit_per_key = 2;
        c.rate_limit_per_address = 0;
    })
    .await;
    let (gateway, _) = app.key("usage_reporter", None).await;
    let (viewer, _) = app.key("viewer", Some(TENANT_A)).await;
    // 150 requests each, one after the other: far more than the viewer's burst of 4, far less than the
    // gateway's 10,000 (a bucket refills at its rate: the gateway's at 5,000/s, the viewer's at 2/s).
    let mut gateway_codes = Vec::new();
    let mut viewer_limited = None;
    for _ in 0..150 {
        gateway_codes.push(app.get("/v1/auth/whoami", &gateway).await.0);
        let resp = app
            .client
            .get(app.url("/v1/auth/whoami"))
            .bearer_auth(&viewer)
            .send()
            .await
            .expect("sent");
        if resp.status() == StatusCode::TOO_MANY_REQUESTS && viewer_limited.is_none() {
            viewer_limited = Some(resp);
        }
    }
    assert!(
        gateway_codes.iter().all(|c| *c == StatusCode::OK),
        "the gateway key is never limited: {gateway_codes:?}"
    );
    let resp = viewer_limited.expect("the viewer key is limited after its burst of 4");
    assert_rate_limited(resp).await;
}

/// A 429 in the error envelope (`rate_limited`, with its request id) that says when to retry.
async fn assert_rate_limited(resp: reqwest::Response) {
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp.headers()[reqwest::header::RETRY_AFTER]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!(retry >= 1);
    let v: Value = resp.json().await.expect("envelope");
    assert_eq!(v["error"]["code"], "rate_limited", "{v}");
    assert!(v["error"]["request_id"].is_string(), "the envelope: {v}");
}

/// Attack: probing another tenant's data through conflicts. Event ids are per tenant (nothing to probe), and
/// the conflicts that remain are one documented 409 that names only what the caller sent.
pub async fn conflicts_reveal_nothing() {
    let app = spawn_app().await;
    let hour = recent_hour();
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    let e = usage_event("vllm-shared", hour, json!({"tokens_in": 5}));
    for key in [&dev_a, &dev_b] {
        let (status, v) = app
            .post("/v1/usage/events", key, &json!({ "events": [e.clone()] }))
            .await;
        assert_eq!(status, StatusCode::OK, "the same id for two tenants: {v}");
    }
    let id = app.create_policy(worked_example_policy()).await;
    let disable = |id: String| {
        let app = &app;
        async move {
            app.post(
                &format!("/v1/finops/allocation-policies/{id}/disable"),
                &app.admin_key,
                &json!({}),
            )
            .await
        }
    };
    let (status, v) = disable(id).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let opened = v["opened"]["id"].as_str().expect("copy").to_string();
    let (status, v) = disable(opened).await;
    assert_error(status, &v, StatusCode::CONFLICT, "conflict");
    assert!(
        v["error"]["message_i18n"]["fr"]
            .as_str()
            .unwrap_or_default()
            .contains("Conflit"),
        "{v}"
    );
}

/// Attack: someone who can write the database cuts the audit chain's tail, recomputes the chain after changing
/// an event, or moves an event to another tenant. An anchored head catches the first two; the hash covers the
/// tenant column.
pub async fn the_audit_trail_cannot_be_cut_or_rewritten_unnoticed() {
    let app = spawn_app().await;
    app.create_policy(worked_example_policy()).await;
    app.key("viewer", Some(TENANT_A)).await;
    app.ingest(hour_of_samples("GPU-a", "d", recent_hour(), 100))
        .await;
    let (status, head) = app.get("/v1/audit/head", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{head}");
    let head = AuditHead {
        seq: head["seq"].as_u64().expect("seq"),
        hash: head["hash"].as_str().expect("hash").to_string(),
    };
    assert!(head.seq >= 4, "{head:?}");
    let (viewer, _) = app.key("viewer", Some(TENANT_A)).await;
    assert_error_code(
        app.get("/v1/audit/head", &viewer).await,
        StatusCode::FORBIDDEN,
    );
    let store = app.second_store().await;
    assert_eq!(
        store.verify_audit_chain(Some(&head)).await.expect("verify"),
        None
    );
    let (_, metrics) = app.get_text("/metrics", "").await;
    assert!(metrics.contains("eai_audit_head_seq"), "{metrics}");

    let db = Db::of(&app).await;
    // A row moved to another tenant, its hash recomputed: caught.
    let row = db.event(2).await;
    db.set_event(
        2,
        &row.prev,
        &link_stored(&row.prev, 2, TENANT_B, &row.body),
        Some(TENANT_B),
        &row.body,
    )
    .await;
    let b = store
        .verify_audit_chain(None)
        .await
        .expect("verify")
        .expect("broken");
    assert_eq!(b.seq, 2);
    assert!(b.reason.contains("tenant"), "{}", b.reason);
    db.set_event(2, &row.prev, &row.hash, row.tenant.as_deref(), &row.body)
        .await;
    assert_eq!(
        store.verify_audit_chain(Some(&head)).await.expect("verify"),
        None
    );

    // The whole chain recomputed after a change to event 2: it holds by itself, not against the anchor.
    let mut prev = GENESIS_HASH.to_string();
    let last = db.last_seq().await;
    for seq in 1..=last {
        let r = db.event(seq).await;
        let body = if seq == 2 {
            r.body.replace("\"allow\"", "\"deny\"")
        } else {
            r.body.clone()
        };
        let hash = link_stored(&prev, seq, r.tenant.as_deref().unwrap_or(""), &body);
        db.set_event(seq, &prev, &hash, r.tenant.as_deref(), &body)
            .await;
        prev = hash;
    }
    assert_eq!(
        store.verify_audit_chain(None).await.expect("verify"),
        None,
        "self-consistent"
    );
    let b = store
        .verify_audit_chain(Some(&head))
        .await
        .expect("verify")
        .expect("caught");
    assert_eq!(b.seq, head.seq);
    assert!(b.reason.contains("rewritten"), "{}", b.reason);

    // The tail cut: the anchored head is past the end.
    db.delete_from(head.seq - 1).await;
    let b = store
        .verify_audit_chain(Some(&head))
        .await
        .expect("verify")
        .expect("caught");
    assert!(b.reason.contains("tail was cut"), "{}", b.reason);
}

/// Attack: a crash (or a refused write) between a change and its audit event. The event is written in the
/// change's transaction: when it cannot be written, the change is not stored either.
pub async fn a_change_and_its_audit_event_are_stored_together() {
    let app = spawn_app().await;
    let db = Db::of(&app).await;
    db.refuse_audit_of("gpu_samples.ingest").await;
    let hour = recent_hour();
    let (status, v) = app
        .post(
            "/v1/finops/gpu/samples",
            &app.admin_key,
            &json!({ "samples": hour_of_samples("GPU-t", "d", hour, 100) }),
        )
        .await;
    assert_error(status, &v, StatusCode::INTERNAL_SERVER_ERROR, "internal");
    let store = app.second_store().await;
    let read = store
        .allocation_usage(hour, Timestamp(hour.0 + HOUR_MS), &[])
        .await
        .expect("read");
    assert!(
        read.rollups.is_empty(),
        "no sample stored without its audit event"
    );
    // The failed attempt itself is audited (its own event, outcome internal).
    let events = audit_actions(&app).await;
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "gpu_samples.ingest" && e["details"]["outcome"] == "internal"),
        "{events:?}"
    );
    assert_eq!(store.verify_audit_chain(None).await.expect("verify"), None);
}

/// Attack: guessing keys. Failures are counted by reason, and a burst from one address is audited (without the
/// key); `/metrics` can ask for its own token.
pub async fn failed_sign_ins_are_counted_and_audited_without_the_key() {
    let app = spawn_app_with(|c| c.metrics_token = Some("metrics-token-0123456789".into())).await;
    let guess = "eai_live_0000000000000000000000000000guess";
    for _ in 0..12 {
        assert_eq!(
            app.get("/v1/auth/whoami", guess).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    let (status, _) = app.get_text("/metrics", "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, metrics) = app.get_text("/metrics", "metrics-token-0123456789").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("eai_auth_failures_total{reason=\"unknown\"} 12"),
        "{metrics}"
    );
    let events = audit_actions(&app).await;
    let burst: Vec<&Value> = events
        .iter()
        .filter(|e| e["action"] == "auth.repeated_failures")
        .collect();
    assert_eq!(burst.len(), 1, "{events:?}");
    assert_eq!(burst[0]["details"]["address"], "127.0.0.1");
    assert!(
        !serde_json::to_string(&events)
            .expect("json")
            .contains("guess"),
        "the key is never audited"
    );
}

fn assert_error_code((status, v): (StatusCode, Value), want: StatusCode) {
    assert_eq!(status, want, "{v}");
}

/// The database of a test app, reached directly: what an attacker with write access could do.
enum Db {
    Sqlite(std::path::PathBuf),
    Postgres(tokio_postgres::Client),
}

struct Row {
    prev: String,
    hash: String,
    tenant: Option<String>,
    body: String,
}

impl Db {
    async fn of(app: &TestApp) -> Db {
        let url =
            secrecy::ExposeSecret::expose_secret(app.config.database_url.as_ref().expect("url"))
                .to_owned();
        match url.strip_prefix("sqlite://") {
            Some(path) => Db::Sqlite(path.into()),
            None => {
                let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .expect("connect as the owner");
                tokio::spawn(conn);
                Db::Postgres(c)
            }
        }
    }

    async fn event(&self, seq: u64) -> Row {
        let seq = seq as i64;
        match self {
            Db::Sqlite(p) => {
                let c = rusqlite::Connection::open(p).expect("open");
                c.query_row(
                    "SELECT prev_hash, hash, tenant_id, body FROM audit_events WHERE seq = ?1",
                    [seq],
                    |r| {
                        Ok(Row {
                            prev: r.get(0)?,
                            hash: r.get(1)?,
                            tenant: r.get(2)?,
                            body: r.get(3)?,
                        })
                    },
                )
                .expect("row")
            }
            Db::Postgres(c) => {
                let r = c
                    .query_one(
                        "SELECT prev_hash, hash, tenant_id::text, body FROM eai.audit_events WHERE seq = $1",
                        &[&seq],
                    )
                    .await
                    .expect("row");
                let t: String = r.get(2);
                Row {
                    prev: r.get(0),
                    hash: r.get(1),
                    tenant: (t != "00000000-0000-0000-0000-000000000000").then_some(t),
                    body: r.get(3),
                }
            }
        }
    }

    async fn set_event(&self, seq: u64, prev: &str, hash: &str, tenant: Option<&str>, body: &str) {
        let seq = seq as i64;
        match self {
            Db::Sqlite(p) => {
                let c = rusqlite::Connection::open(p).expect("open");
                c.execute(
                    "UPDATE audit_events SET prev_hash = ?2, hash = ?3, tenant_id = ?4, body = ?5 WHERE seq = ?1",
                    rusqlite::params![seq, prev, hash, tenant, body],
                )
                .expect("update");
            }
            Db::Postgres(c) => {
                let t = tenant.unwrap_or("00000000-0000-0000-0000-000000000000");
                c.execute(
                    "UPDATE eai.audit_events SET prev_hash = $2, hash = $3, tenant_id = $4::text::uuid, body = $5 WHERE seq = $1",
                    &[&seq, &prev, &hash, &t, &body],
                )
                .await
                .expect("update");
            }
        }
    }

    async fn last_seq(&self) -> u64 {
        let n: i64 = match self {
            Db::Sqlite(p) => rusqlite::Connection::open(p)
                .expect("open")
                .query_row("SELECT MAX(seq) FROM audit_events", [], |r| r.get(0))
                .expect("max"),
            Db::Postgres(c) => c
                .query_one("SELECT max(seq) FROM eai.audit_events", &[])
                .await
                .expect("max")
                .get(0),
        };
        n as u64
    }

    async fn delete_from(&self, seq: u64) {
        let seq = seq as i64;
        match self {
            Db::Sqlite(p) => {
                rusqlite::Connection::open(p)
                    .expect("open")
                    .execute("DELETE FROM audit_events WHERE seq >= ?1", [seq])
                    .expect("delete");
            }
            Db::Postgres(c) => {
                c.execute("DELETE FROM eai.audit_events WHERE seq >= $1", &[&seq])
                    .await
                    .expect("delete");
            }
        }
    }

    /// Makes the database refuse the audit event of a successful `action` (a fault between change and audit).
    async fn refuse_audit_of(&self, action: &str) {
        match self {
            Db::Sqlite(p) => {
                rusqlite::Connection::open(p)
                    .expect("open")
                    .execute_batch(&format!(
                        "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events \
                         WHEN NEW.body LIKE '%\"action\":\"{action}\"%' AND NEW.body LIKE '%\"outcome\":\"ok\"%' \
                         BEGIN SELECT RAISE(ABORT, 'audit refused by test'); END;"
                    ))
                    .expect("trigger");
            }
            Db::Postgres(c) => {
                c.batch_execute(&format!(
                    "CREATE FUNCTION eai.refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                     IF NEW.body LIKE '%\"action\":\"{action}\"%' AND NEW.body LIKE '%\"outcome\":\"ok\"%' THEN \
                     RAISE EXCEPTION 'audit refused by test'; END IF; RETURN NEW; END $$; \
                     CREATE TRIGGER refuse_audit BEFORE INSERT ON eai.audit_events \
                     FOR EACH ROW EXECUTE FUNCTION eai.refuse_audit();"
                ))
                .await
                .expect("trigger");
            }
        }
    }
}

/// The server speaks HTTPS with the certificate it is given (a private CA here), and plain HTTP no more.
#[tokio::test]
async fn the_server_speaks_https_only_with_its_certificate() {
    let dir = tempfile::tempdir().expect("dir");
    let ca = eai_store::testing::TestCa::new(&["localhost", "127.0.0.1"]).expect("ca");
    let files = ca.write(dir.path()).expect("files");
    let mut app = spawn_app_with(|c| {
        c.tls = Some(eai_api::config::Tls {
            cert: files.cert.clone(),
            key: files.key.clone(),
        })
    })
    .await;
    assert!(app.base.starts_with("https://localhost:"), "{}", app.base);
    let plain = app.base.replace("https://", "http://");
    app.client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.ca_pem.as_bytes()).expect("pem"))
        .build()
        .expect("client");
    let (status, v) = app.get("/v1/auth/whoami", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    app.ingest(hour_of_samples("GPU-tls", "d", recent_hour(), 100))
        .await;
    // Without the CA the certificate is refused; in plain HTTP nothing answers.
    assert!(reqwest::Client::new()
        .get(app.url("/healthz"))
        .send()
        .await
        .is_err());
    let r = reqwest::Client::new()
        .get(format!("{plain}/healthz"))
        .send()
        .await;
    assert!(
        r.map_or(true, |r| !r.status().is_success()),
        "plain HTTP must not be served"
    );
}

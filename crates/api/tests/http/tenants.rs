//! Tenants by name (SPEC §7): registration, and `X-EAI-Tenant` on any call, over HTTP on both backends.

use super::*;

/// A request with the tenant header (and a language).
async fn as_tenant(
    app: &TestApp,
    path: &str,
    key: &str,
    tenant: &str,
    lang: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = app
        .client
        .get(app.url(path))
        .bearer_auth(key)
        .header("X-EAI-Tenant", tenant);
    if let Some(l) = lang {
        req = req.header("Accept-Language", l);
    }
    app.send(req).await
}

/// A shared deployment used 70/30 by tenant A and tenant B over two hours: what the header scopes.
async fn shared_hours(app: &TestApp) -> (Timestamp, Timestamp) {
    let hour = recent_hour();
    app.create_policy(
        json!({ "name": "flat", "currency": "USD", "gpu_hourly_cost": 10, "effective_from": "2020-01-01" }),
    )
    .await;
    let mut samples = hour_of_samples("GPU-tttt", "vllm-shared", hour, 300);
    samples.extend(hour_of_samples(
        "GPU-tttt",
        "vllm-shared",
        Timestamp(hour.0 + HOUR_MS),
        300,
    ));
    app.ingest(samples).await;
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    for h in [hour.0, hour.0 + HOUR_MS] {
        let at = Timestamp(h + 10 * 60_000);
        for (key, tokens) in [(&dev_a, 700), (&dev_b, 300)] {
            let ev = usage_event("vllm-shared", at, json!({ "tokens_in": tokens }));
            let (status, v) = app
                .post("/v1/usage/events", key, &json!({ "events": [ev] }))
                .await;
            assert_eq!(status, StatusCode::OK, "{v}");
        }
    }
    (hour, Timestamp(hour.0 + 2 * HOUR_MS))
}

/// Registration: a slug once, a name, an id; by slug or id; a tenant's key sees its own only; audited.
pub async fn tenants_are_registered_by_slug_and_read_by_slug_or_id() {
    let app = spawn_app().await;
    let admin = app.admin_key.clone();
    let (status, acme) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "acme", "name": "Acme Corp", "id": TENANT_A }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{acme}");
    assert_eq!(
        acme,
        json!({ "id": TENANT_A, "slug": "acme", "name": "Acme Corp" })
    );
    let (status, globex) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "globex", "name": "  Globex  " }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{globex}");
    assert_eq!(globex["name"], "Globex", "names are trimmed");
    let globex_id = globex["id"].as_str().expect("a new id").to_string();
    assert!(Uuid::parse_str(&globex_id).is_ok(), "{globex}");

    // Slugs and ids are unique; bad input is named field by field; only the platform registers.
    for (body, what) in [
        (json!({ "slug": "acme", "name": "Other" }), "slug taken"),
        (
            json!({ "slug": "acme-2", "name": "Other", "id": TENANT_A }),
            "id taken",
        ),
    ] {
        let (status, v) = app.post("/v1/tenants", &admin, &body).await;
        assert_error(status, &v, StatusCode::CONFLICT, "conflict");
        // The envelope names the field in conflict (the store cannot tell a taken id from a taken slug).
        assert_eq!(v["error"]["details"][0]["field"], "slug", "{what}: {v}");
        assert!(v["error"]["details"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("registered already")));
    }
    let (status, v) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "Acme Corp", "id": "nope" }),
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    let fields: Vec<&str> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    assert_eq!(fields, vec!["slug", "name", "id"], "{v}");
    let (tenant_admin, _) = app.key("tenant_admin", Some(TENANT_A)).await;
    let (status, v) = app
        .post(
            "/v1/tenants",
            &tenant_admin,
            &json!({ "slug": "mine", "name": "Mine" }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");

    // Reads: all for the platform, by slug; by slug or id; a tenant's key its own only.
    let (status, list) = app.get("/v1/tenants", &admin).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let slugs: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["slug"].as_str())
        .collect();
    assert_eq!(slugs, vec!["acme", "globex"]);
    for key in ["acme", TENANT_A] {
        let (status, v) = app.get(&format!("/v1/tenants/{key}"), &admin).await;
        assert_eq!((status, &v), (StatusCode::OK, &acme));
    }
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, mine) = app.get("/v1/tenants", &finops_a).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!(mine, json!({ "items": [acme] }));
    for other in ["globex", globex_id.as_str(), "nobody"] {
        let (status, v) = app.get(&format!("/v1/tenants/{other}"), &finops_a).await;
        assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    }

    // Audited, with the slug and the name.
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &admin).await;
    let created: Vec<&Value> = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["action"] == "tenant.create" && e["details"]["outcome"] == "ok")
        .collect();
    assert_eq!(created.len(), 2, "{audit}");
    assert_eq!(created[0]["details"]["slug"], "acme", "{audit}");
}

/// The header: a platform key signed in to a tenant reads exactly what that tenant's readers read, and still
/// does platform work; a tenant's key may only name its own; an unknown tenant is 404, in the caller's language.
pub async fn the_tenant_header_scopes_a_platform_key_and_binds_a_tenant_key() {
    let app = spawn_app().await;
    let admin = app.admin_key.clone();
    let (status, v) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "acme", "name": "Acme Corp", "id": TENANT_A }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (status, v) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "globex", "name": "Globex" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (from, to) = shared_hours(&app).await;
    let path = format!("/v1/finops/gpu/allocation?from={from}&to={to}");

    // Signed in to acme (by slug or by id): exactly acme's finops view, nothing of B.
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, theirs) = app.get(&path, &finops_a).await;
    assert_eq!(status, StatusCode::OK, "{theirs}");
    for name in ["acme", TENANT_A] {
        let (status, as_acme) = as_tenant(&app, &path, &admin, name, None).await;
        assert_eq!(status, StatusCode::OK, "{as_acme}");
        assert_eq!(as_acme, theirs, "signed in to {name}");
        assert!(!as_acme.to_string().contains(TENANT_B), "{as_acme}");
    }
    assert_eq!(tenant_row(&theirs, TENANT_A)["cost"]["amount"], "14.00");
    // A tenant seen in data but never registered works by id.
    let (finops_b, _) = app.key("finops", Some(TENANT_B)).await;
    let (status, as_b) = as_tenant(&app, &path, &admin, TENANT_B, None).await;
    assert_eq!(status, StatusCode::OK, "{as_b}");
    assert_eq!(as_b, app.get(&path, &finops_b).await.1);
    let (status, audit_as_b) =
        as_tenant(&app, "/v1/audit/events?limit=1000", &admin, TENANT_B, None).await;
    assert_eq!(status, StatusCode::OK, "{audit_as_b}");
    assert!(
        !audit_as_b.to_string().contains(TENANT_A),
        "B's trail has nothing of A"
    );

    // Who am I, signed in.
    let (status, who) = as_tenant(&app, "/v1/auth/whoami", &admin, "acme", None).await;
    assert_eq!(status, StatusCode::OK, "{who}");
    assert_eq!(who["tenant"], Value::Null);
    assert_eq!(
        who["acting_tenant"],
        json!({ "id": TENANT_A, "slug": "acme", "name": "Acme Corp" })
    );

    // Platform actions keep working signed in to a tenant; their audit is not the tenant's.
    let hour = Timestamp(from.0 - HOUR_MS);
    let (status, v) = app
        .send(
            app.client
                .post(app.url("/v1/finops/gpu/samples"))
                .bearer_auth(&admin)
                .header("X-EAI-Tenant", "acme")
                .json(&json!({ "samples": hour_of_samples("GPU-tttt", "vllm-shared", hour, 300) })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = app
        .send(
            app.client
                .post(app.url("/v1/finops/allocation-policies"))
                .bearer_auth(&admin)
                .header("X-EAI-Tenant", "acme")
                .json(&json!({ "name": "as-acme", "deployment_pattern": "none-*", "gpu_hourly_cost": "1", "currency": "USD" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &admin).await;
    let created = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|e| e["action"] == "allocation_policy.create" && e["details"]["name"] == "as-acme")
        .unwrap_or_else(|| panic!("the policy's audit event: {audit}"));
    assert_eq!(created["tenant_id"], Value::Null, "{created}");

    // A tenant's key: its own tenant only (by slug or id); any other name is 403, registered or not.
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    for own in ["acme", TENANT_A] {
        let (status, v) = as_tenant(&app, "/v1/auth/whoami", &dev_a, own, None).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["tenant"]["slug"], "acme", "{v}");
    }
    for other in ["globex", TENANT_B, "nobody"] {
        let (status, v) = as_tenant(&app, &path, &finops_a, other, None).await;
        assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    }

    // An unknown tenant: 404 for the platform, in French when asked; a malformed name: 422.
    let (status, v) = as_tenant(&app, &path, &admin, "nobody", Some("fr-FR,fr;q=0.9")).await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(
        v["error"]["message"], v["error"]["message_i18n"]["fr"],
        "{v}"
    );
    assert_ne!(
        v["error"]["message"], v["error"]["message_i18n"]["en"],
        "{v}"
    );
    let (status, v) = as_tenant(&app, &path, &admin, "Not A Slug!", None).await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    assert_eq!(v["error"]["details"][0]["field"], "X-EAI-Tenant", "{v}");
}

/// Quantities are JSON numbers with the decimal's digits; money stays a decimal string.
pub async fn allocation_quantities_are_exact_json_numbers() {
    let app = spawn_app().await;
    let (from, to) = shared_hours(&app).await;
    let (status, text) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation?from={from}&to={to}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    // Two hours of one GPU: 7200 GPU-seconds, 70/30 by tokens, at 300 W.
    assert!(text.contains(r#""gpu_seconds":5040,"#), "{text}");
    assert!(text.contains(r#""gpu_seconds":2160,"#), "{text}");
    assert!(text.contains(r#""gpu_hours":2,"#), "{text}");
    assert!(text.contains(r#""share":0.7,"#), "{text}");
    assert!(text.contains(r#""amount":"14.00""#), "{text}");
    let a: Value = serde_json::from_str(&text).expect("json");
    for item in a["items"].as_array().expect("items") {
        for q in ["gpu_seconds", "gpu_memory_gb_seconds", "energy_wh"] {
            assert!(item[q].is_number(), "{q}: {item}");
        }
        assert!(item["allocated"]["amount"].is_string(), "{item}");
    }
}

/// The reserved platform tenant (the nil uuid, the id of rows that belong to no tenant) is refused wherever a
/// request names a tenant, on both backends alike, as a validation error on the field that names it.
pub async fn the_platform_tenant_id_is_refused_wherever_a_request_names_it() {
    let app = spawn_app().await;
    let admin = app.admin_key.clone();
    let nil = "00000000-0000-0000-0000-000000000000";
    let refused = |status: StatusCode, v: &Value, field: &str| {
        assert_error(
            status,
            v,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
        );
        assert_eq!(detail_fields(v), vec![field.to_string()], "{v}");
        assert!(v.to_string().contains("reserved"), "{v}");
    };
    let (status, v) = app
        .post(
            "/v1/tenants",
            &admin,
            &json!({ "slug": "platform", "name": "Platform", "id": nil }),
        )
        .await;
    refused(status, &v, "id");
    let (status, v) = app
        .post(
            "/v1/auth/api-keys",
            &admin,
            &json!({ "role": "viewer", "name": "v", "tenant_id": nil }),
        )
        .await;
    refused(status, &v, "tenant_id");
    let mut ev = usage_event("vllm-shared", recent_hour(), json!({ "tokens_in": 1 }));
    ev["tenant_id"] = json!(nil);
    let (status, v) = app
        .post("/v1/usage/events", &admin, &json!({ "events": [ev] }))
        .await;
    refused(status, &v, "tenant_id");
    let mut s = sample("GPU-nil", "vllm-dedicated", recent_hour(), 300);
    s["tenant_id"] = json!(nil);
    let (status, v) = app
        .post("/v1/finops/gpu/samples", &admin, &json!({ "samples": [s] }))
        .await;
    refused(status, &v, "tenant_id");
    // Nothing of it was stored: no tenant, no key, no sample, no event.
    let (status, v) = app.get("/v1/tenants", &admin).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["items"], json!([]), "{v}");
    // As the tenant a platform key signs in to, it is not a slug either.
    let (status, v) = as_tenant(&app, "/v1/tenants", &admin, nil, None).await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
}

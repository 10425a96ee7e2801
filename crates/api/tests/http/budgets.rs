//! Budgets and reservations (SPEC §9) over HTTP on both backends: decisions atomic under concurrency, 402 with
//! the budget and what is left, commits idempotent, thresholds once each with a signed webhook received by a real
//! local HTTP receiver (which fails its first delivery, to see the retry).

use super::*;

async fn budgets_app() -> TestApp {
    spawn_app_with(|c| {
        // Two hundred requests at once: the per-key bucket would answer 429 (it has its own tests).
        c.rate_limit_per_key = 0;
        c.budget_check_seconds = 1;
    })
    .await
}

async fn post_json(app: &TestApp, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    app.post(path, key, &body).await
}

fn budget_body(tenant: &str, limit: &str, webhook: Option<&str>) -> Value {
    let mut b = json!({
        "tenant_id": tenant,
        "name": "monthly LLM spend",
        "limit": { "amount": limit, "currency": "EUR" },
        "thresholds_pct": [50, 100],
        "enforce": true,
    });
    if let Some(w) = webhook {
        b["webhook_url"] = json!(w);
    }
    b
}

fn reservation_body(cost: &str) -> Value {
    json!({ "action": "llm.invoke", "estimate": { "cost": cost, "tokens": 400 }, "deployment_id": "vllm-shared" })
}

/// A budget that fits 50 reservations grants exactly 50 of 200 sent at once; the rest get 402 naming the budget.
pub async fn concurrent_reservations_grant_exactly_what_the_budget_fits() {
    let app = budgets_app().await;
    let (status, b) = post_json(
        &app,
        "/v1/finops/budgets",
        &app.admin_key,
        budget_body(TENANT_A, "50.00", None),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    assert_eq!(b["limit"], json!({ "amount": "50.00", "currency": "EUR" }));
    assert_eq!(b["current"]["left"]["amount"], "50.00", "{b}");
    assert!(b.get("webhook_secret").is_none(), "no webhook, no secret");
    let (dev, _) = app.key("developer", Some(TENANT_A)).await;
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let (client, url, key) = (
            app.client.clone(),
            app.url("/v1/finops/reservations"),
            dev.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&reservation_body("1.00"))
                .send()
                .await
                .expect("sent");
            let status = r.status();
            (status, r.json::<Value>().await.expect("json"))
        }));
    }
    let mut granted = 0;
    let mut refused = None;
    for t in tasks {
        let (status, v) = t.await.expect("task");
        match status {
            StatusCode::CREATED => {
                assert_eq!(v["status"], "held", "{v}");
                granted += 1;
            }
            StatusCode::PAYMENT_REQUIRED => refused = Some(v),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert_eq!(granted, 50, "a budget that fits 50 grants exactly 50");
    let refused = refused.expect("150 refusals");
    assert_error(
        StatusCode::PAYMENT_REQUIRED,
        &refused,
        StatusCode::PAYMENT_REQUIRED,
        "budget_exceeded",
    );
    assert_eq!(
        refused["error"]["details"][0]["field"], "estimate.cost",
        "{refused}"
    );
    let msg = refused["error"]["message"].as_str().expect("message");
    assert!(
        msg.contains("bud_1") && msg.contains("0.00 EUR left"),
        "{msg}"
    );

    // The month's standing: 50 held, nothing spent, nothing left.
    let (finops, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, list) = app.get("/v1/finops/budgets", &finops).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let cur = &list["items"][0]["current"];
    assert_eq!(
        (
            cur["held"]["amount"].as_str(),
            cur["spent"]["amount"].as_str()
        ),
        (Some("50.00"), Some("0.00"))
    );
    // Every grant and refusal is audited.
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    let of = |outcome: &str| {
        audit["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|e| e["action"] == "reservation.create" && e["details"]["outcome"] == outcome)
            .count()
    };
    assert_eq!((of("ok"), of("budget_exceeded")), (50, 150));
}

/// Commit records one usage event and is idempotent; release frees a hold; scopes and roles hold.
pub async fn reservations_commit_once_release_and_stay_in_their_tenant() {
    let app = budgets_app().await;
    let (status, v) = post_json(
        &app,
        "/v1/finops/budgets",
        &app.admin_key,
        budget_body(TENANT_A, "10", None),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (dev, _) = app.key("developer", Some(TENANT_A)).await;
    let (status, r) = post_json(
        &app,
        "/v1/finops/reservations",
        &dev,
        reservation_body("2.50"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    let id = r["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("res_"));
    assert_eq!(
        r["estimate"],
        json!({ "cost": "2.50", "tokens": 400, "currency": "EUR" })
    );
    let commit = |cost: &str| json!({ "actual": { "cost": cost, "tokens": 310 } });
    let path = format!("/v1/finops/reservations/{id}/commit");
    let (status, c) = post_json(&app, &path, &dev, commit("2.10")).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    assert_eq!(
        (c["status"].as_str(), c["actual"]["cost"].as_str()),
        (Some("committed"), Some("2.10"))
    );
    let (status, again) = post_json(&app, &path, &dev, commit("9.99")).await;
    assert_eq!(
        (status, &again),
        (StatusCode::OK, &c),
        "a re-commit changes nothing"
    );
    // One usage event, of the tenant, with the actual cost; its spend counts.
    let hour = eai_api::state::now();
    let (status, list) = app.get("/v1/finops/budgets", &dev).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(
        list["items"][0]["current"]["spent"]["amount"], "2.10",
        "{list}"
    );
    assert_eq!(list["items"][0]["current"]["spent_tokens"], 310, "{list}");
    let store = app.second_store().await;
    let events = store
        .usage_events(
            eai_store::Scope::Platform,
            Timestamp(hour.0 - HOUR_MS),
            Timestamp(hour.0 + HOUR_MS),
        )
        .await
        .expect("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].tenant_id.to_string(), TENANT_A);
    assert_eq!(events[0].source, "reservation");
    assert_eq!(
        events[0].event_id.to_string(),
        c["usage_event_id"].as_str().expect("event id")
    );
    // A committed reservation cannot be released; a held one can; release twice is a no-op.
    let (status, v) = post_json(
        &app,
        &format!("/v1/finops/reservations/{id}/release"),
        &dev,
        json!({}),
    )
    .await;
    assert_error(status, &v, StatusCode::CONFLICT, "conflict");
    let (_, r2) = post_json(&app, "/v1/finops/reservations", &dev, reservation_body("1")).await;
    let release = format!(
        "/v1/finops/reservations/{}/release",
        r2["id"].as_str().expect("id")
    );
    let (status, rel) = post_json(&app, &release, &dev, json!({})).await;
    assert_eq!(
        (status, rel["status"].as_str()),
        (StatusCode::OK, Some("released")),
        "{rel}"
    );
    let (status, rel2) = post_json(&app, &release, &dev, json!({})).await;
    assert_eq!((status, &rel2), (StatusCode::OK, &rel));

    // Another tenant sees none of it; a reader may not reserve; the gateway names the tenant.
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    let (status, v) = app
        .get(&format!("/v1/finops/reservations/{id}"), &dev_b)
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = post_json(&app, &path, &dev_b, commit("0")).await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app.get("/v1/finops/budgets", &dev_b).await;
    assert_eq!(
        (status, v["items"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(0)),
        "{v}"
    );
    let (viewer, _) = app.key("viewer", Some(TENANT_A)).await;
    let (status, v) = post_json(
        &app,
        "/v1/finops/reservations",
        &viewer,
        reservation_body("1"),
    )
    .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let (gateway, _) = app.key("usage_reporter", None).await;
    let (status, v) = post_json(
        &app,
        "/v1/finops/reservations",
        &gateway,
        reservation_body("1"),
    )
    .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
    let (status, v) = app
        .send(
            app.client
                .post(app.url("/v1/finops/reservations"))
                .bearer_auth(&gateway)
                .header("X-EAI-Tenant", TENANT_A)
                .json(&reservation_body("1")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    assert_eq!(v["tenant_id"], TENANT_A);
    // A budget closed by supersede: its successor carries the new limit.
    let (status, v) = post_json(
        &app,
        "/v1/finops/budgets/bud_1/supersede",
        &app.admin_key,
        json!({ "limit": { "amount": "20", "currency": "EUR" } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (
            v["closed"]["status"].as_str(),
            v["opened"]["limit"]["amount"].as_str()
        ),
        (Some("closed"), Some("20.00"))
    );
    assert!(
        v["opened"]["current"].is_object(),
        "the successor's standing: {v}"
    );
}

/// Thresholds fire once each: audited, counted in /metrics, and POSTed to the webhook with a valid signature,
/// retried after the receiver's failure.
pub async fn thresholds_fire_once_with_a_signed_webhook() {
    let app = budgets_app().await;
    let (url, got) = webhook_receiver(1).await;
    let (status, b) = post_json(
        &app,
        "/v1/finops/budgets",
        &app.admin_key,
        // Alerting only: spend may pass the limit, and each threshold still fires once.
        {
            let mut b = budget_body(TENANT_A, "10.00", Some(&url));
            b["enforce"] = json!(false);
            b
        },
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let secret = b["webhook_secret"]
        .as_str()
        .expect("secret, shown once")
        .to_string();
    assert!(secret.starts_with("whsec_"));
    let (status, listed) = app.get("/v1/finops/budgets/bud_1", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!listed.to_string().contains(&secret), "never shown again");
    let (dev, _) = app.key("developer", Some(TENANT_A)).await;
    let spend = |cost: &'static str| {
        let (app, dev) = (&app, dev.clone());
        async move {
            let (status, r) =
                post_json(app, "/v1/finops/reservations", &dev, reservation_body(cost)).await;
            assert_eq!(status, StatusCode::CREATED, "{r}");
            let path = format!(
                "/v1/finops/reservations/{}/commit",
                r["id"].as_str().expect("id")
            );
            let (status, c) =
                post_json(app, &path, &dev, json!({ "actual": { "cost": cost } })).await;
            assert_eq!(status, StatusCode::OK, "{c}");
        }
    };
    spend("6").await;
    let deliveries = |n: usize| {
        let got = got.clone();
        async move {
            for _ in 0..100 {
                if got.lock().expect("lock").len() >= n {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            panic!("fewer than {n} deliveries: {:?}", got.lock().expect("lock"));
        }
    };
    // The 50 % crossing: refused once by the receiver, delivered again (same id, a fresh signature).
    deliveries(2).await;
    spend("5").await;
    deliveries(3).await;
    // Nothing is left to deliver, even hours later, past every backoff: a round of the chores at that time (on
    // a second handle of the store) sends nothing more.
    use eai_app::clock::Clock as _;
    let store = eai_api::open_store(&app.config).await.expect("the store");
    let later = eai_engine::time::Timestamp(app.clock.now().0 + 2 * 3_600_000);
    eai_app::budget_alerts::check_once(
        store.as_ref(),
        &eai_app::metrics::Metrics::new(),
        &reqwest::Client::new(),
        later,
    )
    .await
    .expect("a round of the chores");
    let got = got.lock().expect("lock").clone();
    assert_eq!(
        got.len(),
        3,
        "one retry, then one delivery per threshold: {got:?}"
    );
    let mut thresholds = Vec::new();
    for (headers, body) in &got {
        let v = signed_body(headers, body, &secret);
        assert_eq!(v["type"], "budget.threshold_crossed");
        assert_eq!(v["budget_id"], "bud_1");
        thresholds.push(v["threshold_pct"].as_u64().expect("pct"));
    }
    assert_eq!(thresholds, vec![50, 50, 100], "the first one retried");
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    let crossed = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["action"] == "budget.threshold_crossed")
        .count();
    assert_eq!(crossed, 2, "each threshold audited once");
    let (status, metrics) = app.get_text("/metrics", "unused").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("eai_budget_threshold_crossings_total 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "eai_budget_spent_ratio{{budget_id=\"bud_1\",tenant_id=\"{TENANT_A}\"}} 1.1"
        )),
        "{metrics}"
    );
}

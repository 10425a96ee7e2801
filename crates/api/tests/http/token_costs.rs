//! Cost per token and cost over time through the API: the split by weight and by measured compute time, the
//! tenant's share, vLLM counters that measure but never weigh a split, and series that sum to the period.

use super::*;

fn vllm_event(deployment: &str, at: Timestamp, units: Value) -> Value {
    json!({
        "event_id": Uuid::new_v4().to_string(),
        "schema_version": "1.0",
        "usage_type": "llm_tokens",
        "source": "vllm",
        "occurred_at": at.to_string(),
        "deployment_id": deployment,
        "model": { "provider": "vllm", "name": "meta-llama/Llama-3.1-8B-Instruct" },
        "units": units,
    })
}

fn item<'a>(v: &'a Value, key: &str, value: &str) -> &'a Value {
    v["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i[key] == value))
        .unwrap_or(&Value::Null)
}

pub async fn a_token_costs_what_its_share_of_the_allocation_costs() {
    let app = spawn_app().await;
    let (from, to) = shared_deployment_of_two_tenants(&app).await;
    let url = |q: &str| format!("/v1/finops/gpu/token-costs?from={from}&to={to}{q}");

    // The deployment: 20.00 over 1,600 in and 400 out; no measured time, so an output token weighs 2.5 input
    // tokens: input 20 x 1600 / 2600 = 12.307.. -> 12.31, output the rest.
    let (status, v) = app.get(&url(""), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["basis"], &v["aggregate"]),
        (&json!("allocation"), &json!("deployment"))
    );
    let d = item(&v, "deployment_id", "vllm-shared");
    assert_eq!(d["cost"], "20.00", "{v}");
    assert_eq!(d["tokens_in"].to_string(), "1600");
    assert_eq!(d["tokens_out"].to_string(), "400");
    assert_eq!(d["token_source"], "usage_events");
    assert_eq!(d["allocation_method"], "weight");
    assert_eq!(d["output_token_weight"], "2.5");
    assert_eq!(
        (&d["input_cost"], &d["output_cost"]),
        (&json!("12.31"), &json!("7.69"))
    );
    assert_eq!(d["cost_per_mtok"], "10000.0000");
    assert_eq!(d["input_cost_per_mtok"], "7693.7500"); // 12.31 / 1600 x 1M
    assert_eq!(d["output_cost_per_mtok"], "19225.0000"); // 7.69 / 400 x 1M

    // Per tenant: each one's allocated cost over its own tokens; the tenants sum to the allocated cost.
    let (status, v) = app.get(&url("&aggregate=tenant"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (a, b) = (
        item(&v, "tenant_id", TENANT_A),
        item(&v, "tenant_id", TENANT_B),
    );
    assert_eq!(
        (&a["cost"], &b["cost"]),
        (&json!("14.00"), &json!("6.00")),
        "{v}"
    );
    assert_eq!(a["cost_per_mtok"], "10000.0000"); // 14.00 / 1,400 tokens
    assert_eq!(b["cost_per_mtok"], "10000.0000"); // 6.00 / 600 tokens
    assert_eq!(
        (&a["input_cost"], &a["output_cost"]),
        (&json!("7.00"), &json!("7.00"))
    );
    assert_eq!(
        (&b["input_cost"], &b["output_cost"]),
        (&json!("6.00"), &json!("0.00"))
    );
    assert_eq!(
        b["output_cost_per_mtok"],
        Value::Null,
        "no output token: no rate"
    );
    assert_eq!(a["deployments"][0]["deployment_id"], "vllm-shared");

    // The usage basis keeps the busy GPU-seconds only: 82 % of 20.00.
    let (status, v) = app.get(&url("&basis=usage"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        item(&v, "deployment_id", "vllm-shared")["cost"],
        "16.40",
        "{v}"
    );

    // A tenant's readers see their share, whatever the aggregate, and nothing of the other tenant.
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    for q in ["", "&aggregate=tenant", "&aggregate=model"] {
        let (status, text) = app.get_text(&url(q), &finops_a).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(!text.contains(TENANT_B), "tenant A sees tenant B: {text}");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["items"][0]["cost"], "14.00", "{q}: {v}");
    }

    // Bad parameters: the envelope, field by field.
    let (status, v) = app
        .get(&url("&basis=list&aggregate=pod"), &app.admin_key)
        .await;
    assert_invalid(status, &v, &["basis", "aggregate"]);
}

pub async fn vllm_counters_measure_the_split_but_never_weigh_the_tenants() {
    let app = spawn_app().await;
    let (from, to) = shared_deployment_of_two_tenants(&app).await;
    let (sampler, _) = app.key("sampler", None).await;
    let counters = vllm_event(
        "vllm-shared",
        Timestamp(from.0 + 30 * 60_000),
        json!({ "tokens_in": 10000, "tokens_out": 2000, "cached_tokens_in": 4000,
                "prefill_seconds": 30, "decode_seconds": 90, "requests": 40 }),
    );
    let (status, body) = app
        .post(
            "/v1/usage/events",
            &sampler,
            &json!({ "events": [counters.clone()] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Re-sent: counted once.
    let (status, body) = app
        .post(
            "/v1/usage/events",
            &sampler,
            &json!({ "events": [counters] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The tenants' split is still 70/30.
    let (status, a) = app.allocation(&app.admin_key, from, to).await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(tenant_row(&a, TENANT_A)["cost"]["amount"], "14.00", "{a}");
    assert_eq!(a["tenants"].as_array().map(Vec::len), Some(2), "{a}");

    // The deployment's tokens are vLLM's; 6,000 of 10,000 input tokens needed compute. An effective input token
    // took 30 / 6000 s, an output token 90 / 2000 s: input 20 x 30 / 120 = 5.00.
    let url = format!("/v1/finops/gpu/token-costs?from={from}&to={to}");
    let (status, v) = app.get(&url, &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let d = item(&v, "deployment_id", "vllm-shared");
    assert_eq!(d["token_source"], "vllm", "{v}");
    assert_eq!(d["allocation_method"], "compute_time");
    assert_eq!(d["model"], "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(d["tokens"].to_string(), "12000");
    assert_eq!(d["effective_tokens_in"].to_string(), "6000");
    assert_eq!(
        (&d["input_cost"], &d["output_cost"]),
        (&json!("5.00"), &json!("15.00"))
    );
    assert_eq!(d["cost_per_mtok"], "1666.6667");
    assert_eq!(d["input_cost_per_mtok"], "833.3333");
    assert_eq!(d["output_cost_per_mtok"], "7500.0000");
    assert_eq!(d["output_token_weight"], "9");

    // Tenant A's share split on the deployment's measured mix: 600 effective input tokens weigh 3, its 400
    // output tokens 18: input 14 x 3 / 21 = 2.00.
    let (status, v) = app
        .get(&format!("{url}&aggregate=tenant"), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let a = item(&v, "tenant_id", TENANT_A);
    assert_eq!(
        (&a["input_cost"], &a["output_cost"]),
        (&json!("2.00"), &json!("12.00")),
        "{v}"
    );
    assert_eq!(a["allocation_method"], "compute_time");
    // Per model: the deployment's figures under the model vLLM serves.
    let (status, v) = app
        .get(&format!("{url}&aggregate=model"), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        item(&v, "model", "meta-llama/Llama-3.1-8B-Instruct")["cost"],
        "20.00",
        "{v}"
    );

    // Only a sampler (or a platform admin) posts vLLM counters, without a tenant; a sampler posts nothing else.
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let mine = vllm_event("vllm-shared", from, json!({ "tokens_in": 1 }));
    let (status, v) = app
        .post("/v1/usage/events", &dev_a, &json!({ "events": [mine] }))
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let gateway = usage_event("vllm-shared", from, json!({ "tokens_in": 1 }));
    let mut gateway = gateway;
    gateway["tenant_id"] = json!(TENANT_A);
    let (status, v) = app
        .post(
            "/v1/usage/events",
            &sampler,
            &json!({ "events": [gateway] }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let mut named = vllm_event("vllm-shared", from, json!({ "tokens_in": 1 }));
    named["tenant_id"] = json!(TENANT_A);
    let (status, v) = app
        .post("/v1/usage/events", &sampler, &json!({ "events": [named] }))
        .await;
    assert_invalid(status, &v, &["tenant_id"]);
}

fn cents(v: &Value) -> i64 {
    let s = v.as_str().unwrap_or_else(|| panic!("an amount: {v}"));
    let d: rust_decimal::Decimal = s.parse().expect("decimal");
    (d * rust_decimal::Decimal::from(100))
        .to_string()
        .split('.')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("cents")
}

pub async fn the_steps_of_a_series_sum_to_the_period_exactly() {
    let app = spawn_app().await;
    let (from, to) = shared_deployment_of_two_tenants(&app).await;
    let (_, whole) = app.allocation(&app.admin_key, from, to).await;
    for step in ["hour", "day", "week", "month"] {
        let (status, v) = app
            .get(
                &format!("/v1/finops/gpu/allocation/series?from={from}&to={to}&step={step}"),
                &app.admin_key,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        let steps = v["steps"].as_array().expect("steps");
        if step == "hour" {
            assert_eq!(steps.len(), 2, "{v}");
            assert_eq!(steps[0]["totals"][0]["cost"], "10.00", "{v}");
            assert_eq!(steps[0]["tokens"].to_string(), "1000");
            assert_eq!(steps[0]["deployments"][0]["cost_per_mtok"], "10000.0000");
        }
        for col in ["cost", "allocated", "unallocated"] {
            let sum: i64 = steps
                .iter()
                .flat_map(|s| s["totals"].as_array().cloned().unwrap_or_default())
                .map(|t| cents(&t[col]))
                .sum();
            assert_eq!(
                sum,
                cents(&whole["deployments"][0][col]),
                "{step} {col}: {v}"
            );
            assert_eq!(cents(&v["totals"][0][col]), sum, "{step} {col}");
        }
        assert_eq!(v["tokens"].to_string(), "2000", "{v}");
    }

    // A tenant's readers: their share in every step, their own tokens.
    let (viewer_b, _) = app.key("viewer", Some(TENANT_B)).await;
    let (status, text) = app
        .get_text(
            &format!("/v1/finops/gpu/allocation/series?from={from}&to={to}&step=hour"),
            &viewer_b,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TENANT_A), "{text}");
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["totals"][0]["cost"], "6.00", "{v}");
    assert_eq!(v["steps"][1]["deployments"][0]["allocated"], "3.00", "{v}");
    assert_eq!(v["tokens"].to_string(), "600", "{v}");

    let (status, v) = app
        .get(
            &format!("/v1/finops/gpu/allocation/series?from={from}&to={to}&step=minute"),
            &app.admin_key,
        )
        .await;
    assert_invalid(status, &v, &["step"]);
    let (status, v) = app
        .get(
            "/v1/finops/gpu/allocation/series?from=2026-01-01&to=2026-03-31&step=hour",
            &app.admin_key,
        )
        .await;
    assert_error(
        status,
        &v,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_error",
    );
}

/// A vLLM server's OpenAI-compatible model list, as `GET /v1/models` answers it, on a port of its own.
async fn fake_vllm(models: Value) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route(
        "/v1/models",
        axum::routing::get(move || {
            let models = models.clone();
            async move { axum::Json(models) }
        }),
    );
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, server)
}

pub async fn providers_are_registered_confirmed_and_priced_by_last_month() {
    let app = spawn_app().await;
    // Last month: two hours of a shared deployment at 10 USD per GPU-hour, 2,000 tokens (1,600 in, 400 out).
    let this_month = eai_engine::batch::month_of(eai_api::state::now());
    let (start, _) = eai_engine::batch::month(&this_month).expect("month");
    let hour = Timestamp(start.0 - 10 * 24 * HOUR_MS);
    app.create_policy(json!({ "name": "flat", "currency": "USD", "gpu_hourly_cost": 10, "effective_from": "2020-01-01" }))
        .await;
    let mut samples = hour_of_samples("GPU-dddd", "vllm-llama-70b", hour, 300);
    samples.extend(hour_of_samples(
        "GPU-dddd",
        "vllm-llama-70b",
        Timestamp(hour.0 + HOUR_MS),
        300,
    ));
    app.ingest(samples).await;
    let mut ev = usage_event(
        "vllm-llama-70b",
        Timestamp(hour.0 + 60_000),
        json!({ "tokens_in": 1600, "tokens_out": 400 }),
    );
    ev["tenant_id"] = json!(TENANT_A);
    let (status, body) = app
        .post(
            "/v1/usage/events",
            &app.admin_key,
            &json!({ "events": [ev] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Seen in samples only: the in-cluster URL, discovery `samples`, last month's price.
    let (status, c) = app.get("/v1/providers/catalog", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    let p = &c["items"][0];
    assert_eq!(p["discovery"], "samples", "{c}");
    assert_eq!(p["deployment_id"], "vllm-llama-70b");
    let last = eai_engine::batch::month_of(Timestamp(start.0 - 1));
    assert_eq!(
        p["pricing"],
        json!({ "per_mtok": "10000.0000", "input_per_mtok": "7693.7500", "output_per_mtok": "19225.0000",
                "currency": "USD", "period": last, "basis": "allocation", "allocation_method": "weight" }),
        "{c}"
    );

    // Registered: the control plane lists its models first.
    let (base, _server) =
        fake_vllm(json!({ "object": "list", "data": [{ "id": "meta-llama/Llama-3.1-70B-Instruct", "object": "model" }] }))
            .await;
    let (status, r) = app
        .post(
            "/v1/providers",
            &app.admin_key,
            &json!({ "deployment_id": "vllm-llama-70b", "base_url": format!("{base}/"), "label": "Llama 70B" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["discovery"], "api");
    assert_eq!(r["base_url"], base);
    assert_eq!(r["models"], json!(["meta-llama/Llama-3.1-70B-Instruct"]));
    let (_, c) = app.get("/v1/providers/catalog", &app.admin_key).await;
    let p = &c["items"][0];
    assert_eq!(
        (&p["discovery"], &p["base_url"]),
        (&json!("api"), &json!(base)),
        "{c}"
    );
    assert_eq!(p["label"], "Llama 70B");
    assert_eq!(p["model"], "meta-llama/Llama-3.1-70B-Instruct");
    assert_eq!(p["pricing"]["per_mtok"], "10000.0000", "{c}");

    // A URL that answers no model list is refused, field by field; `verify: false` registers it unconfirmed.
    let (status, v) = app
        .post(
            "/v1/providers",
            &app.admin_key,
            &json!({ "deployment_id": "vllm-mistral", "base_url": "http://127.0.0.1:9/v1" }),
        )
        .await;
    assert_invalid(status, &v, &["base_url"]);
    let (status, r) = app
        .post(
            "/v1/providers",
            &app.admin_key,
            &json!({ "deployment_id": "vllm-mistral", "base_url": "http://vllm-mistral.ai:8000/v1", "verify": false }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{r}");
    assert_eq!(r["discovery"], "config");
    let (_, c) = app.get("/v1/providers/catalog", &app.admin_key).await;
    assert_eq!(c["items"].as_array().map(Vec::len), Some(2), "{c}");
    assert_eq!(c["items"][1]["pricing"], Value::Null, "never priced: {c}");

    // Only a platform admin registers; a gateway reads the catalog.
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, v) = app
        .post(
            "/v1/providers",
            &finops_a,
            &json!({ "deployment_id": "x", "base_url": "http://x:8000/v1", "verify": false }),
        )
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let (gateway, _) = app.key("usage_reporter", None).await;
    let (status, c) = app.get("/v1/providers/catalog", &gateway).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    assert_eq!(c["items"][0]["base_url"], base);
}

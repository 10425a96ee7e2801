//! Statements (issue 41) over HTTP on both backends: a month that is over issued once per tenant with cost and
//! once for the unallocated capacity, numbered in order, each equal to the allocation of the month to the cent;
//! issued again, nothing new; a tenant's key sees its own only and cannot issue; a month not over is refused; a
//! sample arriving after issue leaves the statement as issued and shows as an adjustment; CSV; the audit event.
//!
//! The fleet, on the last day D of a month two months ahead (the server's clock stepped past its end), priced
//! 2.00 EUR a GPU-hour and nothing else:
//! - `vllm-shared` (shared), GPU-shared-0 at 09:00 (one GPU-hour, 2.00) with tokens A 3000, B 1000 that hour:
//!   A 3/4 x 2.00 = 1.50, B 1/4 x 2.00 = 0.50; and at 10:00 (one GPU-hour) with no usage: 2.00 unallocated;
//! - `team-b-train` (dedicated to B), GPU-train-0 at 11:00: one GPU-hour, 2.00 to B.
//!
//! A = 1.50; B = 0.50 + 2.00 = 2.50; unallocated 2.00.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::*;

const DAY_MS: i64 = 24 * HOUR_MS;
const NIL: &str = "00000000-0000-0000-0000-000000000000";
const TENANT_C: &str = "5a7b9c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d";

/// The month two months ahead of now: (`YYYY-MM`, from, to).
fn a_month_ahead() -> (String, Timestamp, Timestamp) {
    let t = Timestamp(eai_api::state::now().0 + 62 * DAY_MS);
    let month = eai_engine::batch::month_of(t);
    let (from, to) = eai_engine::batch::month(&month).expect("month");
    (month, from, to)
}

fn owned(gpu: &str, deployment: &str, hour: Timestamp, tenant: &str) -> Vec<Value> {
    let mut samples = hour_of_samples(gpu, deployment, hour, 650);
    for s in &mut samples {
        s["tenant_id"] = json!(tenant);
    }
    samples
}

struct Fleet {
    app: TestApp,
    period: String,
    from: Timestamp,
    to: Timestamp,
    day: Timestamp,
    reader_a: String,
    reader_b: String,
}

async fn fleet() -> Fleet {
    let app = spawn_app_with(|c| c.rate_limit_per_key = 0).await;
    let (period, from, to) = a_month_ahead();
    use eai_app::clock::Clock as _;
    // Just past the month's end: the month is over, its samples all before the clock.
    app.clock.advance(to.0 + HOUR_MS - app.clock.now().0);
    app.create_policy(json!({
        "name": "gpu-hours",
        "deployment_pattern": "*",
        "currency": "EUR",
        "gpu_hourly_cost": "2.00",
        "effective_from": "2020-01-01",
    }))
    .await;
    let (status, v) = app
        .post(
            "/v1/tenants",
            &app.admin_key,
            &json!({ "slug": "acme", "name": "Acme, Inc.", "id": TENANT_A }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let day = Timestamp(to.0 - DAY_MS);
    let at = |h: i64| Timestamp(day.0 + h * HOUR_MS);
    let mut samples = hour_of_samples("GPU-shared-0", "vllm-shared", at(9), 400);
    samples.extend(hour_of_samples("GPU-shared-0", "vllm-shared", at(10), 400));
    samples.extend(owned("GPU-train-0", "team-b-train", at(11), TENANT_B));
    app.ingest(samples).await;
    let (dev_a, _) = app.key("developer", Some(TENANT_A)).await;
    let (dev_b, _) = app.key("developer", Some(TENANT_B)).await;
    let when = Timestamp(at(9).0 + 10 * 60_000);
    for (key, tokens) in [(&dev_a, 3000), (&dev_b, 1000)] {
        let ev = usage_event("vllm-shared", when, json!({ "tokens_in": tokens }));
        let (status, v) = app
            .post("/v1/usage/events", key, &json!({ "events": [ev] }))
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
    }
    let (reader_a, _) = app.key("viewer", Some(TENANT_A)).await;
    let (reader_b, _) = app.key("viewer", Some(TENANT_B)).await;
    Fleet {
        app,
        period,
        from,
        to,
        day,
        reader_a,
        reader_b,
    }
}

fn money(s: &str) -> Value {
    json!({ "amount": s, "currency": "EUR" })
}

/// Each tenant's allocated cost in the allocation, summed over its items.
fn allocated(allocation: &Value) -> BTreeMap<String, Decimal> {
    let mut out = BTreeMap::new();
    for i in allocation["items"].as_array().expect("items") {
        let amount: Decimal = i["allocated"]["amount"]
            .as_str()
            .expect("amount")
            .parse()
            .expect("decimal");
        *out.entry(i["tenant_id"].as_str().expect("tenant").to_string())
            .or_insert(Decimal::ZERO) += amount;
    }
    out
}

fn by_tenant(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .expect("statements")
        .iter()
        .map(|s| {
            (
                s["tenant_id"].as_str().expect("tenant").to_string(),
                s.clone(),
            )
        })
        .collect()
}

pub(super) async fn a_closed_month_is_issued_once_per_tenant_and_reconciles_to_the_cent() {
    let f = fleet().await;
    let app = &f.app;
    let path = "/v1/finops/gpu/statements";

    // A tenant's key cannot issue; a month not over is refused on `period`.
    let (status, v) = app
        .post(path, &f.reader_a, &json!({ "period": f.period }))
        .await;
    assert_error(status, &v, StatusCode::FORBIDDEN, "forbidden");
    let next = eai_engine::batch::month_of(Timestamp(f.to.0 + DAY_MS));
    let (status, v) = app
        .post(path, &app.admin_key, &json!({ "period": next }))
        .await;
    assert_invalid(status, &v, &["period"]);
    let (status, v) = app
        .post(path, &app.admin_key, &json!({ "period": "2026-13" }))
        .await;
    assert_invalid(status, &v, &["period"]);

    let (status, issued) = app
        .post(path, &app.admin_key, &json!({ "period": f.period }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    assert_eq!(issued["already_issued"], json!([]), "{issued}");
    let first = by_tenant(&issued["issued"]);
    assert_eq!(
        first.len(),
        3,
        "A, B and the unallocated capacity: {issued}"
    );
    // Numbered in the order issued: the tenants in id order (B's uuid sorts before A's), then the platform's.
    let number = |t: &str| first[t]["number"].as_str().expect("number").to_string();
    assert_eq!(number(TENANT_B), format!("ST-{}-0001", f.period));
    assert_eq!(number(TENANT_A), format!("ST-{}-0002", f.period));
    assert_eq!(number(NIL), format!("ST-{}-0003", f.period));
    assert!(
        !first.contains_key(TENANT_C),
        "a tenant with no cost gets none"
    );
    // By hand (the module's comment): A 1.50, B 0.50 + 2.00 = 2.50, idle 2.00.
    assert_eq!(first[TENANT_A]["totals"], json!([money("1.50")]));
    assert_eq!(first[TENANT_B]["totals"], json!([money("2.50")]));
    assert_eq!(first[NIL]["totals"], json!([money("2.00")]));
    assert_eq!(first[TENANT_A]["tenant_name"], "Acme, Inc.");
    assert_eq!(first[NIL]["tenant_name"], Value::Null);
    assert_eq!(first[TENANT_A]["period"], json!(f.period));

    // Each total equals the tenant's allocated cost in GET /v1/finops/gpu/allocation, to the cent.
    let (status, allocation) = app.allocation(&app.admin_key, f.from, f.to).await;
    assert_eq!(status, StatusCode::OK, "{allocation}");
    let cost = allocated(&allocation);
    for t in [TENANT_A, TENANT_B] {
        assert_eq!(
            first[t]["totals"][0]["amount"].as_str().map(str::to_string),
            Some(cost[t].to_string()),
            "{t}"
        );
    }
    let unallocated: Decimal = allocation["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .map(|d| {
            d["unallocated"]
                .as_str()
                .expect("unallocated")
                .parse::<Decimal>()
                .expect("decimal")
        })
        .sum();
    assert_eq!(unallocated.to_string(), "2.00");

    // Issued again: nothing new, the same numbers.
    let (status, again) = app
        .post(path, &app.admin_key, &json!({ "period": f.period }))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["issued"], json!([]));
    assert_eq!(by_tenant(&again["already_issued"]), first);
    let (status, one) = app
        .post(
            path,
            &app.admin_key,
            &json!({ "period": f.period, "tenant_id": TENANT_A }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["already_issued"][0]["number"], json!(number(TENANT_A)));

    // One statement: A's lines, as issued.
    let (status, a) = app
        .get(&format!("{path}/{}", number(TENANT_A)), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["tenant_id"], TENANT_A);
    assert_eq!(a["from"], json!(f.from.to_string()));
    assert_eq!(a["to"], json!(f.to.to_string()));
    assert_eq!(a["issued_by"], "key_1", "the bootstrap key: {a}");
    assert_eq!(a["lines"].as_array().map(Vec::len), Some(1), "{a}");
    let line = &a["lines"][0];
    assert_eq!(line["kind"], "charge");
    assert_eq!(line["deployment_id"], "vllm-shared");
    // 3/4 of one GPU-hour; 3/4 x 400 W x 1 h = 300 Wh.
    assert_eq!(line["gpu_hours"], "0.750000");
    assert_eq!(line["energy_kwh"], "0.300000");
    assert_eq!(line["amount"], money("1.50"));
    assert_eq!(a["adjustments"], json!([]));
    assert_eq!(a["adjusted_totals"], json!([money("1.50")]));

    // The platform's own: the idle hour at 10:00 on vllm-shared, one GPU-hour, 2.00.
    let (status, idle) = app
        .get(&format!("{path}/{}", number(NIL)), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{idle}");
    assert_eq!(idle["tenant_name"], Value::Null);
    assert_eq!(idle["lines"].as_array().map(Vec::len), Some(1), "{idle}");
    assert_eq!(idle["lines"][0]["deployment_id"], "vllm-shared");
    assert_eq!(idle["lines"][0]["gpu_hours"], "1.000000");
    assert_eq!(idle["lines"][0]["amount"], money("2.00"));

    // A tenant's key: its own statements only; another's number is 404.
    let (status, mine) = app.get(path, &f.reader_a).await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    let mine = by_tenant(&mine["statements"]);
    assert_eq!(mine.keys().collect::<Vec<_>>(), vec![TENANT_A]);
    let (status, v) = app
        .get(&format!("{path}/{}", number(TENANT_B)), &f.reader_a)
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app
        .get(&format!("{path}/{}", number(NIL)), &f.reader_b)
        .await;
    assert_error(status, &v, StatusCode::NOT_FOUND, "not_found");
    let (status, v) = app
        .get(&format!("{path}/{}", number(TENANT_B)), &f.reader_b)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = app
        .get(&format!("{path}?tenant_id={TENANT_B}"), &f.reader_a)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["statements"], json!([]));

    // The platform's list, filtered; bad filters are located.
    let (status, all) = app
        .get(&format!("{path}?period={}", f.period), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::OK, "{all}");
    let numbers: Vec<&str> = all["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .map(|s| s["number"].as_str().expect("number"))
        .collect();
    assert_eq!(numbers.len(), 3);
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    let (status, v) = app
        .get(&format!("{path}?period=2026-1&tenant_id=x"), &app.admin_key)
        .await;
    assert_invalid(status, &v, &["period", "tenant_id"]);

    // Audited, once per statement issued (the refusals above too, each with its outcome).
    let (status, events) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let issues: Vec<&Value> = events["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["action"] == "gpu_statement.issue" && e["details"]["outcome"] == "ok")
        .collect();
    assert_eq!(issues.len(), 3, "{events}");
    assert!(issues
        .iter()
        .any(|e| e["resource"] == json!(number(TENANT_A))
            && e["tenant_id"] == TENANT_A
            && e["details"]["totals"] == json!([money("1.50")])));
}

pub(super) async fn a_late_sample_shows_as_an_adjustment_and_the_csv_says_the_same() {
    let f = fleet().await;
    let app = &f.app;
    // Issued with an Idempotency-Key: a retry of the request is answered again (201 as first), not run again.
    let send = || async {
        let resp = app
            .client
            .post(app.url("/v1/finops/gpu/statements"))
            .bearer_auth(&app.admin_key)
            .header("Idempotency-Key", "issue-b")
            .json(&json!({ "period": f.period, "tenant_id": TENANT_B }))
            .send()
            .await
            .expect("sent");
        let replayed = resp
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        let status = resp.status();
        let body: Value = resp.json().await.expect("JSON");
        (status, replayed, body)
    };
    let (status, replayed, issued) = send().await;
    assert_eq!((status, replayed), (StatusCode::CREATED, false), "{issued}");
    let (status, replayed, again) = send().await;
    assert_eq!((status, replayed), (StatusCode::CREATED, true), "{again}");
    assert_eq!(again, issued);
    assert_eq!(
        issued["issued"].as_array().map(Vec::len),
        Some(1),
        "only B's"
    );
    let number = issued["issued"][0]["number"]
        .as_str()
        .expect("number")
        .to_string();
    assert_eq!(number, format!("ST-{}-0001", f.period));
    let url = format!("/v1/finops/gpu/statements/{number}");
    let (_, before) = app.get(&url, &f.reader_b).await;
    assert_eq!(before["totals"], json!([money("2.50")]), "{before}");

    // One more GPU-hour of B's dedicated training arrives after issue: + 2.00.
    app.ingest(owned(
        "GPU-train-0",
        "team-b-train",
        Timestamp(f.day.0 + 13 * HOUR_MS),
        TENANT_B,
    ))
    .await;
    let (status, after) = app.get(&url, &f.reader_b).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(
        after["lines"], before["lines"],
        "the issued lines never change"
    );
    assert_eq!(after["totals"], json!([money("2.50")]));
    assert_eq!(
        after["adjustments"].as_array().map(Vec::len),
        Some(1),
        "{after}"
    );
    let adj = &after["adjustments"][0];
    assert_eq!(adj["kind"], "adjustment");
    assert_eq!(adj["deployment_id"], "team-b-train");
    // One GPU-hour at 650 W: 1.000000 GPU-hour, 0.650000 kWh, 2.00 EUR.
    assert_eq!(adj["gpu_hours"], "1.000000");
    assert_eq!(adj["energy_kwh"], "0.650000");
    assert_eq!(adj["amount"], money("2.00"));
    // 2.50 + 2.00 = 4.50: B's allocated cost now.
    assert_eq!(after["adjusted_totals"], json!([money("4.50")]));
    let (_, allocation) = app.allocation(&app.admin_key, f.from, f.to).await;
    assert_eq!(allocated(&allocation)[TENANT_B].to_string(), "4.50");

    // The same as CSV.
    let resp = app
        .client
        .get(app.url(&format!("{url}?format=csv")))
        .bearer_auth(&f.reader_b)
        .send()
        .await
        .expect("sent");
    assert_eq!(resp.status(), StatusCode::OK);
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(header("content-type"), "text/csv; charset=utf-8");
    assert_eq!(
        header("content-disposition"),
        format!("attachment; filename=\"statement-{number}.csv\"")
    );
    let text = resp.text().await.expect("body");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency"
    );
    assert_eq!(lines.len(), 1 + 2 + 1 + 1 + 1, "{text}");
    assert!(
        lines[1].starts_with("charge,team-b-train,") || lines[1].starts_with("charge,vllm-shared,")
    );
    assert_eq!(lines[3], "total,,,,,2.50,EUR");
    assert!(lines[4].starts_with("adjustment,team-b-train,"), "{text}");
    assert!(lines[4].ends_with(",1.000000,0.650000,2.00,EUR"), "{text}");
    assert_eq!(lines[5], "adjusted_total,,,,,4.50,EUR");
    let (status, v) = app.get(&format!("{url}?format=xml"), &f.reader_b).await;
    assert_invalid(status, &v, &["format"]);
}

/// Issued statements are the FOCUS `InvoiceId`: null on every row before issue; after it, each row carries its
/// tenant's number for the month (the idle rows the platform's statement of unallocated capacity), in 1.2 and
/// 1.3, and a tenant's export its own. The official validator then fails only `InvoiceId-C-004-C` ("null when not
/// invoiced", checked by the 1.2.0.1 model over the whole column without its condition), no other rule.
pub(super) async fn issued_statements_are_the_focus_invoice_ids() {
    let f = fleet().await;
    let app = &f.app;
    let export = |key: String, version: &'static str| {
        let path = format!(
            "/v1/finops/gpu/allocation/focus?from={}&to={}&version={version}",
            f.from, f.to
        );
        async move {
            let (status, text) = app.get_text(&path, &key).await;
            assert_eq!(status, StatusCode::OK, "{text}");
            text
        }
    };
    // (SubAccountId, InvoiceId) of each row.
    let invoice_ids = |text: &str| -> Vec<(String, Option<String>)> {
        let mut rows = super::focus::parse_csv(text);
        let header = rows.remove(0);
        let at = |name: &str| {
            header
                .iter()
                .position(|h| h.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("{name} in {header:?}"))
        };
        let (sub, invoice) = (at("SubAccountId"), at("InvoiceId"));
        rows.into_iter()
            .map(|r| (r[sub].clone().expect("SubAccountId"), r[invoice].clone()))
            .collect()
    };

    let before = invoice_ids(&export(app.admin_key.clone(), "1.3").await);
    assert!(!before.is_empty());
    assert!(before.iter().all(|(_, i)| i.is_none()), "{before:?}");

    let (status, issued) = app
        .post(
            "/v1/finops/gpu/statements",
            &app.admin_key,
            &json!({ "period": f.period }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let numbers: BTreeMap<String, String> = by_tenant(&issued["issued"])
        .into_iter()
        .map(|(t, s)| (t, s["number"].as_str().expect("number").to_string()))
        .collect();
    assert_eq!(numbers.len(), 3, "A, B and the unallocated: {issued}");

    for version in ["1.2", "1.3"] {
        let text = export(app.admin_key.clone(), version).await;
        let rows = invoice_ids(&text);
        // A's, B's and the idle rows, each with its statement's number.
        for t in [TENANT_A, TENANT_B, NIL] {
            assert!(rows.iter().any(|(s, _)| s == t), "{t} has rows: {text}");
        }
        for (tenant, invoice) in &rows {
            assert_eq!(invoice.as_ref(), Some(&numbers[tenant]), "{text}");
        }
        let file = app.dir.path().join(format!("focus-issued-{version}.csv"));
        std::fs::write(&file, &text).expect("written");
        super::focus_validator::assert_the_validator_passes(&file, version, "InvoiceId-C-004-C");
    }

    // A tenant's export: its own rows, its own number.
    let mine = invoice_ids(&export(f.reader_a.clone(), "1.3").await);
    assert!(!mine.is_empty());
    assert!(
        mine.iter()
            .all(|(t, i)| t == TENANT_A && i.as_ref() == Some(&numbers[TENANT_A])),
        "{mine:?}"
    );
}

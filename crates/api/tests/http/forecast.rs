//! The month's forecast (SPEC §13) over HTTP on both backends, on a fleet with known answers: a tenant on a steady
//! weekday pattern whose month lands inside its band, a perfectly steady tenant whose budget runs out on a
//! hand-computed day (one signed `budget.forecast_exceeded` webhook, however many rounds of the chores), a
//! tenant's key that sees only its own, a month over, and a bad `period`.
//!
//! The server's clock is stepped forward to the middle of a month some months ahead (the samples may not end
//! after the clock), then to that month's end for the rest of its samples.

use rust_decimal::Decimal;

use super::*;

const DAY_MS: i64 = 86_400_000;

/// Days since the epoch of a midnight, and its weekday (0 Monday .. 6 Sunday; 1970-01-01 was a Thursday).
fn day_number(t: Timestamp) -> i64 {
    t.0.div_euclid(DAY_MS)
}

fn weekday(t: Timestamp) -> i64 {
    (day_number(t) + 3).rem_euclid(7)
}

/// One GPU busy for the hour ending at `end`: one sample of 3,600 s, the deployment dedicated to `tenant`.
fn gpu_hour(gpu: &str, deployment: &str, tenant: &str, end: Timestamp) -> Value {
    let mut s = sample(gpu, deployment, end, 400);
    s["window_seconds"] = json!(3600);
    s["tenant_id"] = json!(tenant);
    s
}

/// Tenant A's day (a steady weekday pattern): on weekdays 8 GPUs busy 09:00-17:00, and GPU 0 one hour more on
/// every third day (the wobble); on weekends GPU 0 busy 10:00-12:00.
fn pattern_day(day: Timestamp) -> Vec<Value> {
    let h = |hour: i64| Timestamp(day.0 + hour * HOUR_MS);
    let mut out = Vec::new();
    if weekday(day) < 5 {
        for g in 0..8 {
            for end in 10..=17 {
                out.push(gpu_hour(&format!("GPU-a{g}"), "infer-a", TENANT_A, h(end)));
            }
        }
        if day_number(day) % 3 == 1 {
            out.push(gpu_hour("GPU-a0", "infer-a", TENANT_A, h(18)));
        }
    } else {
        for end in [11, 12] {
            out.push(gpu_hour("GPU-a0", "infer-a", TENANT_A, h(end)));
        }
    }
    out
}

/// Tenant A's cost of a day at 2.00 EUR a GPU-hour: 8 x 8 = 64 GPU-hours (128.00), 130.00 with the wobble's hour;
/// a weekend day 2 GPU-hours (4.00).
fn pattern_cost(day: Timestamp) -> Decimal {
    let hours = match (weekday(day) < 5, day_number(day) % 3 == 1) {
        (true, true) => 65,
        (true, false) => 64,
        (false, _) => 2,
    };
    Decimal::from(hours * 2)
}

/// Tenant B's day, the same every day: 2 GPUs busy 20:00-23:00, 6 GPU-hours, 12.00 EUR.
fn steady_day(day: Timestamp) -> Vec<Value> {
    let mut out = Vec::new();
    for g in 0..2 {
        for end in 21..=23 {
            out.push(gpu_hour(
                &format!("GPU-b{g}"),
                "train-b",
                TENANT_B,
                Timestamp(day.0 + end * HOUR_MS),
            ));
        }
    }
    out
}

/// Both tenants' samples of the days `[from, to)`, a week per request.
async fn ingest_days(app: &TestApp, from: Timestamp, to: Timestamp) {
    let days: Vec<Timestamp> = (0..(to.0 - from.0) / DAY_MS)
        .map(|i| Timestamp(from.0 + i * DAY_MS))
        .collect();
    for week in days.chunks(7) {
        let samples: Vec<Value> = week
            .iter()
            .flat_map(|d| pattern_day(*d).into_iter().chain(steady_day(*d)))
            .collect();
        app.ingest(samples).await;
    }
}

/// The first month at least two months ahead that starts on a Sunday. Its history (28 days before it) and its
/// first 14 days are then six whole weeks, Sunday to Saturday: the model's straight line cannot take the weekly
/// pattern's phase for a trend there (with a weekend day at each end the pattern is symmetric about the middle).
/// A line fitted over weeks that start on a Monday would see the weekend at the end of each week as a slope, a
/// limit of the model the contract specifies (reported with this work).
fn sunday_month() -> (String, Timestamp, Timestamp) {
    let mut t = Timestamp(eai_api::state::now().0 + 62 * DAY_MS);
    loop {
        let month = eai_engine::batch::month_of(t);
        let (from, to) = eai_engine::batch::month(&month).expect("month");
        if weekday(from) == 6 {
            return (month, from, to);
        }
        t = to;
    }
}

fn amount(v: &Value) -> Decimal {
    v["amount"]
        .as_str()
        .expect("amount")
        .parse()
        .expect("decimal")
}

fn line<'a>(f: &'a Value, tenant: &str, deployment: &str) -> &'a Value {
    f["lines"]
        .as_array()
        .and_then(|ls| {
            ls.iter()
                .find(|l| l["tenant_id"] == tenant && l["deployment_id"] == deployment)
        })
        .unwrap_or_else(|| panic!("no line of {tenant} on {deployment}: {f}"))
}

fn money(s: &str) -> Value {
    json!({ "amount": s, "currency": "EUR" })
}

pub async fn a_forecast_lands_in_its_band_and_a_budget_alert_fires_once() {
    let app = spawn_app_with(|c| {
        c.rate_limit_per_key = 0;
        c.budget_check_seconds = 1;
    })
    .await;
    let (period, from, to) = sunday_month();
    let dim = (to.0 - from.0) / DAY_MS;
    let as_of = Timestamp(from.0 + 14 * DAY_MS);
    let history_from = Timestamp(from.0 - 28 * DAY_MS);
    use eai_app::clock::Clock as _;
    app.clock
        .advance(as_of.0 + 12 * HOUR_MS - app.clock.now().0);
    app.create_policy(json!({
        "name": "gpu-hours",
        "deployment_pattern": "*",
        "currency": "EUR",
        "gpu_hourly_cost": "2.00",
        "effective_from": "2020-01-01",
    }))
    .await;
    ingest_days(&app, history_from, as_of).await;
    let (url, got) = webhook_receiver(0).await;
    let (status, b) = app
        .post(
            "/v1/finops/budgets",
            &app.admin_key,
            &json!({
                "tenant_id": TENANT_B,
                "name": "training",
                "limit": { "amount": "100.00", "currency": "EUR" },
                "thresholds_pct": [50, 100],
                "enforce": false,
                "webhook_url": url,
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{b}");
    let (bud_b, secret) = (
        b["id"].as_str().expect("id").to_string(),
        b["webhook_secret"].as_str().expect("secret").to_string(),
    );
    let (status, a) = app
        .post(
            "/v1/finops/budgets",
            &app.admin_key,
            &json!({
                "tenant_id": TENANT_A,
                "name": "inference",
                "limit": { "amount": "10000.00", "currency": "EUR" },
                "enforce": false,
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{a}");

    let (status, f) = app
        .get(
            &format!("/v1/finops/gpu/forecast?period={period}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{f}");
    assert_eq!(f["period"], period);
    assert_eq!(f["from"], from.to_string());
    assert_eq!(f["to"], to.to_string());
    assert_eq!(f["as_of"], as_of.to_string());
    assert_eq!(f["history_from"], history_from.to_string());
    assert_eq!(f["days_left"], dim - 14);
    // Dedicated deployments: everything allocated, no line of unallocated capacity.
    assert_eq!(f["lines"].as_array().expect("lines").len(), 2, "{f}");

    // B, perfectly steady at 12.00 a day: the line is flat at 12.00, every factor 1, every residual 0. Spent: 14
    // days x 12.00 = 168.00; expected = low = high = 12.00 x the month's days.
    let b_line = line(&f, TENANT_B, "train-b");
    let month_b = format!("{}.00", 12 * dim);
    assert_eq!(b_line["spent"], money("168.00"), "{f}");
    for k in ["expected", "low", "high"] {
        assert_eq!(b_line[k], money(&month_b), "{k}: {f}");
    }
    // B's budget: nothing spent on it (no allocation batch ran: its spend is the usage it was charged, 0.00).
    // Its spend counts to now, noon of the 15th, so of the 15th only the afternoon is added (6.00), then 12.00
    // a day: 6 + 12 x 7 = 90.00 < 100.00 <= 6 + 12 x 8 = 102.00, so the limit is reached on the ninth day left,
    // the 23rd; the band has no width, so at the high too. Expected: 12.00 x the days left less the morning.
    let day_23 = Timestamp(from.0 + 22 * DAY_MS).date_string();
    let budgets = f["budgets"].as_array().expect("budgets");
    assert_eq!(budgets.len(), 2, "{f}");
    let fb = budgets
        .iter()
        .find(|x| x["budget_id"] == bud_b.as_str())
        .expect("B's budget");
    assert_eq!(fb["tenant_id"], TENANT_B);
    assert_eq!(fb["name"], "training");
    assert_eq!(fb["limit"], money("100.00"));
    assert_eq!(fb["spent"], money("0.00"));
    assert_eq!(
        fb["expected"],
        money(&format!("{}.00", 12 * (dim - 14) - 6))
    );
    assert_eq!(fb["exhausted_on"], day_23.as_str(), "{f}");
    assert_eq!(fb["exhausted_on_high"], day_23.as_str(), "{f}");
    // A's budget, far above its month: not this month.
    let fa = budgets
        .iter()
        .find(|x| x["tenant_id"] == TENANT_A)
        .expect("A's budget");
    assert_eq!(fa["exhausted_on"], Value::Null, "{f}");

    // A: spent is the sum of its days so far, by hand from the pattern (128.00 a weekday, 130.00 on a wobble
    // day, 4.00 a weekend day); the band holds the expectation.
    let a_line = line(&f, TENANT_A, "infer-a");
    let spent_a: Decimal = (0..14)
        .map(|i| pattern_cost(Timestamp(from.0 + i * DAY_MS)))
        .sum();
    assert_eq!(amount(&a_line["spent"]), spent_a, "{f}");
    let (expected, low, high) = (
        amount(&a_line["expected"]),
        amount(&a_line["low"]),
        amount(&a_line["high"]),
    );
    assert!(spent_a <= low && low <= expected && expected <= high, "{f}");
    // Each tenant's totals are its lines' sums.
    for t in f["tenants"].as_array().expect("tenants") {
        let mine: Vec<&Value> = f["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .filter(|l| l["tenant_id"] == t["tenant_id"])
            .collect();
        for k in ["spent", "expected", "low", "high"] {
            let sum: Decimal = mine.iter().map(|l| amount(&l[k])).sum();
            assert_eq!(amount(&t[k]), sum, "{k}: {f}");
        }
    }

    // The chores computed the forecast when the clock reached the month (no budget yet); an hour later they
    // compute it again and B's budget gets its alert, once, however many rounds follow (hours apart, each
    // computing the forecast again).
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
    app.clock.advance(HOUR_MS + 1_000);
    deliveries(1).await;
    for _ in 0..3 {
        app.clock.advance(HOUR_MS + 1_000);
        tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    }
    let received = got.lock().expect("lock").clone();
    assert_eq!(received.len(), 1, "one alert a month: {received:?}");
    let (headers, body) = &received[0];
    let v = signed_body(headers, body, &secret);
    assert_eq!(v["type"], "budget.forecast_exceeded");
    assert_eq!(v["budget_id"], bud_b.as_str());
    assert_eq!(v["tenant_id"], TENANT_B);
    assert_eq!(v["month"], period);
    assert_eq!(v["limit"], money("100.00"));
    assert_eq!(v["spent"], money("0.00"));
    assert_eq!(v["exhausted_on"], day_23.as_str());
    assert_eq!(v["message"], format!("expected to exceed on {day_23}"));
    let (_, audit) = app.get("/v1/audit/events?limit=1000", &app.admin_key).await;
    let audited = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["action"] == "budget.forecast_exceeded")
        .count();
    assert_eq!(audited, 1, "audited once");

    // B's key sees B's line, totals and budget only.
    let (viewer_b, _) = app.key("viewer", Some(TENANT_B)).await;
    let (status, fv) = app
        .get(
            &format!("/v1/finops/gpu/forecast?period={period}"),
            &viewer_b,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{fv}");
    assert_eq!(fv["lines"].as_array().expect("lines").len(), 1, "{fv}");
    assert_eq!(line(&fv, TENANT_B, "train-b")["expected"], money(&month_b));
    assert!(fv["tenants"]
        .as_array()
        .expect("tenants")
        .iter()
        .all(|t| t["tenant_id"] == TENANT_B));
    let vb = fv["budgets"].as_array().expect("budgets");
    assert_eq!(vb.len(), 1, "{fv}");
    assert_eq!(vb[0]["budget_id"], bud_b.as_str());
    assert!(!fv.to_string().contains(TENANT_A), "{fv}");

    // The month before is over: its figures, the band equal to them. B had data on its last 28 days (the history
    // starts there): 28 x 12.00 = 336.00.
    let before = eai_engine::batch::month_of(Timestamp(from.0 - 1));
    let (status, fo) = app
        .get(
            &format!("/v1/finops/gpu/forecast?period={before}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{fo}");
    assert_eq!(
        (fo["as_of"].clone(), fo["days_left"].clone()),
        (json!(from.to_string()), json!(0))
    );
    for l in fo["lines"].as_array().expect("lines") {
        for k in ["expected", "low", "high"] {
            assert_eq!(l[k], l["spent"], "{k}: {fo}");
        }
    }
    assert_eq!(line(&fo, TENANT_B, "train-b")["spent"], money("336.00"));

    // A bad period: 422 on `period`.
    for bad in ["2026-13", "november", "2026-1"] {
        let (status, e) = app
            .get(
                &format!("/v1/finops/gpu/forecast?period={bad}"),
                &app.admin_key,
            )
            .await;
        assert_invalid(status, &e, &["period"]);
    }

    // The rest of the month happens: its real cost for A, by hand from the pattern and as the allocation has it.
    app.clock.advance(to.0 + HOUR_MS - app.clock.now().0);
    ingest_days(&app, as_of, to).await;
    let real: Decimal = (0..dim)
        .map(|i| pattern_cost(Timestamp(from.0 + i * DAY_MS)))
        .sum();
    let (status, alloc) = app.allocation(&app.admin_key, from, to).await;
    assert_eq!(status, StatusCode::OK, "{alloc}");
    assert_eq!(
        amount(&tenant_row(&alloc, TENANT_A)["cost"]),
        real,
        "{alloc}"
    );
    assert!(low <= real && real <= high, "{low} <= {real} <= {high}");
    // The weekday factors carry the pattern (128.67 a weekday on average, 4.00 a weekend day): the only miss is
    // the wobble, 2.00 on a third of the weekdays, so at most 2.00 x the days left (34.00 of a month near
    // 2,800.00, 1.2 %). Allow 2 %.
    let miss = (expected - real).abs();
    assert!(
        miss <= real * Decimal::new(2, 2),
        "expected {expected}, real {real}: {miss} off"
    );
}

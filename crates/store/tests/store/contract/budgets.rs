//! Budgets and reservations: scoped and superseded, spend from `gpu_local` charges, reservations held, committed
//! once, released and expired, never over-granted, and thresholds recorded once and delivered until acknowledged.

use super::*;

fn eur() -> Currency {
    Currency::from_str("EUR").unwrap()
}

pub fn budget_spec(t: TenantId, limit: &str, enforce: bool) -> eai_engine::budget::BudgetSpec {
    eai_engine::budget::BudgetSpec {
        tenant_id: t,
        name: format!("{t} monthly"),
        limit: d(limit),
        currency: eur(),
        tokens_limit: None,
        thresholds_pct: vec![50, 80, 100],
        enforce,
        webhook_url: Some("https://hooks.example.com/eai".into()),
        effective_from: ts(T0),
        effective_to: None,
    }
}

pub fn new_budget(spec: eai_engine::budget::BudgetSpec) -> eai_store::budgets::NewBudget {
    eai_store::budgets::NewBudget {
        spec,
        webhook_secret: Some("whsec_test".into()),
    }
}

fn reservation(t: TenantId, cost: &str, at: i64) -> eai_store::budgets::NewReservation {
    eai_store::budgets::NewReservation::new(
        eai_engine::budget::ReservationRequest {
            tenant_id: t,
            action: "llm.invoke".into(),
            estimate: eai_engine::budget::Amounts {
                cost: d(cost),
                tokens: Decimal::from(100),
            },
            currency: None,
            deployment_id: Some("vllm-a".into()),
            ttl_ms: 60_000,
        },
        ts(at),
    )
}

fn amounts(cost: &str, tokens: i64) -> eai_engine::budget::Amounts {
    eai_engine::budget::Amounts {
        cost: d(cost),
        tokens: Decimal::from(tokens),
    }
}

/// The allocation batch's `gpu_local` charge of a tenant for October.
fn gpu_local(t: TenantId, cost: &str) -> UsageEvent {
    let mut e = tokens(t, "vllm-a", T0, 0);
    e.event_id = eai_engine::batch::event_id("2026-10", &t.to_string(), "vllm-a", "alp_1");
    e.source = eai_engine::domain::ALLOCATION_SOURCE.into();
    e.usage_type = eai_engine::batch::GPU_LOCAL.into();
    e.units = BTreeMap::new();
    e.cost = Some((NonNegative::new(d(cost)).unwrap(), eur()));
    e
}

fn granted(o: eai_store::budgets::ReserveOutcome) -> Option<eai_store::budgets::Reservation> {
    match o {
        eai_store::budgets::ReserveOutcome::Granted(r) => Some(r),
        eai_store::budgets::ReserveOutcome::Refused(_) => None,
    }
}

async fn standing(s: &dyn Store, t: TenantId, at: i64) -> eai_engine::budget::Standing {
    let all = s.budget_standings(Scope::Tenant(t), ts(at)).await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    all.into_iter().next().unwrap()
}

pub async fn budgets_are_scoped_and_superseded_never_edited(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    let ba = s
        .create_budget(&new_budget(budget_spec(a, "100", true)), &audit())
        .await
        .unwrap();
    s.create_budget(&new_budget(budget_spec(b, "50", false)), &audit())
        .await
        .unwrap();
    assert_eq!(ba.budget.id, "bud_1");
    assert_eq!(s.budgets(Scope::Platform).await.unwrap().len(), 2);
    let mine = s.budgets(Scope::Tenant(a)).await.unwrap();
    assert_eq!(mine, vec![ba.clone()]);
    assert_eq!(mine[0].webhook_secret.as_deref(), Some("whsec_test"));

    // Another tenant's budget is not found; closing at its start is a conflict.
    let r = s
        .supersede_budget(Scope::Tenant(b), "bud_1", ts(T0 + H), None, &audit())
        .await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let r = s
        .supersede_budget(Scope::Platform, "bud_1", ts(T0), None, &audit())
        .await;
    assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
    let mut raised = budget_spec(a, "150", true);
    raised.effective_from = ts(T0 + H);
    let (closed, opened) = s
        .supersede_budget(
            Scope::Tenant(a),
            "bud_1",
            ts(T0 + H),
            Some(&raised),
            &audit(),
        )
        .await
        .unwrap();
    assert_eq!(closed.budget.spec.effective_to, Some(ts(T0 + H)));
    let opened = opened.unwrap();
    assert_eq!(opened.budget.id, "bud_3");
    assert_eq!(
        opened.webhook_secret.as_deref(),
        Some("whsec_test"),
        "carried over"
    );
    let mut other = budget_spec(b, "1", true);
    other.effective_from = ts(T0 + 2 * H);
    let r = s
        .supersede_budget(
            Scope::Platform,
            "bud_3",
            ts(T0 + 2 * H),
            Some(&other),
            &audit(),
        )
        .await;
    assert!(
        matches!(r, Err(StoreError::Conflict { .. })),
        "a successor of another tenant: {r:?}"
    );
    // In force: the successor only.
    let now = s
        .budget_standings(Scope::Tenant(a), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].budget.id, "bud_3");
}

pub async fn spend_is_gpu_local_cost_and_commits_and_follows_replacements(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    s.create_budget(&new_budget(budget_spec(a, "100", true)), &audit())
        .await
        .unwrap();
    s.create_budget(&new_budget(budget_spec(b, "100", true)), &audit())
        .await
        .unwrap();
    let mut gateway = tokens(a, "vllm-a", T0 + 60_000, 10);
    gateway.cost = Some((NonNegative::new(d("99")).unwrap(), eur()));
    s.upsert_usage_events(
        &[gpu_local(a, "10.25"), gpu_local(b, "1"), gateway],
        &audit(),
    )
    .await
    .unwrap();
    let at = T0 + 10 * H;
    assert_eq!(
        standing(s, a, at).await.spent.cost,
        d("10.25"),
        "gpu_local only"
    );
    // The batch re-runs with a corrected charge: replaced, never added.
    s.upsert_usage_events(&[gpu_local(a, "12.50")], &audit())
        .await
        .unwrap();
    assert_eq!(standing(s, a, at).await.spent.cost, d("12.5"));
    assert_eq!(standing(s, b, at).await.spent.cost, d("1"));
    // The next month starts from nothing.
    assert_eq!(
        standing(s, a, T0 + 32 * 24 * H).await.spent.cost,
        Decimal::ZERO
    );
    // A commit counts at once, with its tokens.
    let r = granted(s.reserve(&reservation(a, "5", at), &audit()).await.unwrap()).unwrap();
    assert_eq!(standing(s, a, at).await.held.cost, d("5"));
    s.commit_reservation(
        Scope::Tenant(a),
        &r.id,
        amounts("4.10", 321),
        ts(at + 1),
        &audit(),
    )
    .await
    .unwrap();
    let after = standing(s, a, at + 2).await;
    assert_eq!(
        (after.spent.cost, after.spent.tokens),
        (d("16.6"), Decimal::from(321))
    );
    assert_eq!(after.held.cost, Decimal::ZERO);
}

pub async fn reservations_hold_commit_once_release_and_expire(s: &dyn Store) {
    let a = tenant(1);
    s.create_budget(&new_budget(budget_spec(a, "1.00", true)), &audit())
        .await
        .unwrap();
    let at = T0 + H;
    let first = granted(
        s.reserve(&reservation(a, "0.50", at), &audit())
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first.currency, eur(), "the budget's currency");
    let second = granted(
        s.reserve(&reservation(a, "0.50", at), &audit())
            .await
            .unwrap(),
    )
    .unwrap();
    let refused = s
        .reserve(&reservation(a, "0.01", at), &audit())
        .await
        .unwrap();
    let eai_store::budgets::ReserveOutcome::Refused(why) = refused else {
        panic!("a full budget grants nothing: {refused:?}");
    };
    assert_eq!((why.by, why.standing.left()), ("cost", Decimal::ZERO));
    assert_eq!(why.standing.held.cost, d("1"));

    // Releasing frees the hold; a second release changes nothing.
    let released = s
        .release_reservation(Scope::Tenant(a), &first.id, ts(at + 1), &audit())
        .await
        .unwrap();
    assert_eq!(released.status.as_str(), "released");
    let again = s
        .release_reservation(Scope::Tenant(a), &first.id, ts(at + 2), &audit())
        .await
        .unwrap();
    assert_eq!(again, released);
    let third = granted(
        s.reserve(&reservation(a, "0.30", at + 3), &audit())
            .await
            .unwrap(),
    )
    .unwrap();

    // A commit records one event; a re-commit changes nothing, whatever it says.
    let c = s
        .commit_reservation(
            Scope::Tenant(a),
            &second.id,
            amounts("0.40", 90),
            ts(at + 4),
            &audit(),
        )
        .await
        .unwrap();
    assert_eq!(
        (c.status.as_str(), c.actual),
        ("committed", Some(amounts("0.40", 90)))
    );
    let c2 = s
        .commit_reservation(
            Scope::Tenant(a),
            &second.id,
            amounts("9.99", 1),
            ts(at + 5),
            &audit(),
        )
        .await
        .unwrap();
    assert_eq!(c2, c);
    let events = s
        .usage_events(Scope::Tenant(a), ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    let recorded: Vec<_> = events
        .iter()
        .filter(|e| e.source == eai_engine::domain::RESERVATION_SOURCE)
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].event_id, c.event_id.unwrap());
    assert_eq!(
        recorded[0].cost,
        Some((NonNegative::new(d("0.40")).unwrap(), eur()))
    );
    assert_eq!(recorded[0].usage_type, "llm.invoke");
    let s_now = standing(s, a, at + 6).await;
    assert_eq!((s_now.spent.cost, s_now.held.cost), (d("0.4"), d("0.3")));
    // Committed cannot be released; released cannot be committed; another tenant's is not found.
    let r = s
        .release_reservation(Scope::Tenant(a), &second.id, ts(at + 7), &audit())
        .await;
    assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
    let r = s
        .commit_reservation(
            Scope::Tenant(a),
            &first.id,
            amounts("0.1", 0),
            ts(at + 7),
            &audit(),
        )
        .await;
    assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
    let r = s
        .reservation(Scope::Tenant(tenant(2)), &second.id)
        .await
        .unwrap();
    assert_eq!(r, None);
    let r = s
        .commit_reservation(
            Scope::Tenant(tenant(2)),
            &second.id,
            amounts("0", 0),
            ts(at + 7),
            &audit(),
        )
        .await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");

    // A hold past its expiry stops counting at once; housekeeping marks it; a late commit still records.
    let late = at + 120_000;
    assert_eq!(standing(s, a, late).await.held.cost, Decimal::ZERO);
    assert_eq!(s.expire_reservations(ts(late)).await.unwrap(), 1);
    let expired = s
        .reservation(Scope::Tenant(a), &third.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(expired.status.as_str(), "expired");
    assert_eq!(s.expire_reservations(ts(late)).await.unwrap(), 0);
    let c = s
        .commit_reservation(
            Scope::Tenant(a),
            &third.id,
            amounts("0.25", 5),
            ts(late + 1),
            &audit(),
        )
        .await
        .unwrap();
    assert_eq!(
        c.status.as_str(),
        "committed",
        "what was spent is recorded, expired hold or not"
    );
    assert_eq!(standing(s, a, late + 2).await.spent.cost, d("0.65"));
}

pub async fn concurrent_reservations_never_over_grant(s: &dyn Store) {
    let a = tenant(1);
    s.create_budget(&new_budget(budget_spec(a, "50", true)), &audit())
        .await
        .unwrap();
    let at = T0 + H;
    let futs = (0..200).map(|_| async move {
        let r = s.reserve(&reservation(a, "1", at), &audit()).await.unwrap();
        u64::from(granted(r).is_some())
    });
    let granted: u64 = futures_join_all(futs).await.into_iter().sum();
    assert_eq!(granted, 50, "a budget that fits 50 grants exactly 50");
    assert_eq!(standing(s, a, at).await.held.cost, d("50"));
}

/// A gateway's path under concurrency: 40 callers each reserve 1.00 and commit 0.75 as fast as they can, racing
/// for a budget of 10.00 each, two tenants' callers interleaved. By hand: after n commits and h holds of a
/// tenant, a reservation is granted iff 0.75 n + h + 1 <= 10, so at most 13 commits fit (0.75 x 12 + 1 = 10,
/// then 9.75 + 1 > 10). Whatever the order, no tenant goes over, nothing stays held, the spend is exactly the
/// committed sum, one more reservation is granted exactly when the rule says, and the audit chain is unforked.
pub async fn concurrent_reserves_and_commits_race_for_the_last_of_a_budget(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    for t in [a, b] {
        s.create_budget(&new_budget(budget_spec(t, "10", true)), &audit())
            .await
            .unwrap();
    }
    let at = T0 + H;
    let futs = (0..40).map(|i| async move {
        let t = if i % 2 == 0 { a } else { b };
        let mut done = 0u32;
        for _ in 0..5 {
            let Some(r) = granted(s.reserve(&reservation(t, "1", at), &audit()).await.unwrap())
            else {
                continue;
            };
            let c = s
                .commit_reservation(
                    Scope::Tenant(t),
                    &r.id,
                    amounts("0.75", 50),
                    ts(at + 1),
                    &audit(),
                )
                .await
                .unwrap();
            assert_eq!(c.status.as_str(), "committed");
            done += 1;
        }
        (t, done)
    });
    let results = futures_join_all(futs).await;
    for t in [a, b] {
        let n: u32 = results
            .iter()
            .filter(|(x, _)| *x == t)
            .map(|(_, d)| d)
            .sum();
        let st = standing(s, t, at + 2).await;
        assert_eq!(st.held.cost, Decimal::ZERO, "nothing stays held");
        assert_eq!(
            st.spent.cost,
            d("0.75") * Decimal::from(n),
            "spent = what was committed"
        );
        assert!(st.spent.cost <= d("10"), "never over: {}", st.spent.cost);
        assert!((1..=13).contains(&n), "{n} commits of {t}");
        let last = s
            .reserve(&reservation(t, "1", at + 2), &audit())
            .await
            .unwrap();
        assert_eq!(granted(last).is_some(), n <= 12, "after {n} commits");
    }
    assert_eq!(
        s.verify_audit_chain(None).await.unwrap(),
        None,
        "the chain is intact"
    );
}

pub async fn thresholds_are_recorded_once_and_delivered_until_acknowledged(s: &dyn Store) {
    let (a, b) = (tenant(1), tenant(2));
    s.create_budget(&new_budget(budget_spec(a, "100", false)), &audit())
        .await
        .unwrap();
    let mut quiet = budget_spec(b, "100", false);
    quiet.webhook_url = None;
    s.create_budget(
        &eai_store::budgets::NewBudget {
            spec: quiet,
            webhook_secret: None,
        },
        &audit(),
    )
    .await
    .unwrap();
    let at = T0 + 10 * H;
    assert!(s.record_crossings(ts(at)).await.unwrap().is_empty());
    s.upsert_usage_events(&[gpu_local(a, "60"), gpu_local(b, "100")], &audit())
        .await
        .unwrap();
    let head = s.audit_head().await.unwrap().map_or(0, |h| h.seq);
    let first = s.record_crossings(ts(at)).await.unwrap();
    let mut seen: Vec<(String, u32)> = first
        .iter()
        .map(|x| (x.budget_id.clone(), x.threshold_pct))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("bud_1".into(), 50),
            ("bud_2".into(), 50),
            ("bud_2".into(), 80),
            ("bud_2".into(), 100)
        ]
    );
    assert_eq!(
        s.audit_head().await.unwrap().map_or(0, |h| h.seq),
        head + 4,
        "each crossing audited"
    );
    let crossed = s.audit_events(Scope::Tenant(b), 0, 100).await.unwrap();
    assert_eq!(
        crossed
            .iter()
            .filter(|e| e.draft.action == "budget.threshold_crossed")
            .count(),
        3,
        "on the tenant's own trail"
    );
    assert!(
        s.record_crossings(ts(at + 1)).await.unwrap().is_empty(),
        "once each"
    );
    s.upsert_usage_events(&[gpu_local(a, "100")], &audit())
        .await
        .unwrap();
    let more = s.record_crossings(ts(at + 2)).await.unwrap();
    assert_eq!(
        more.iter().map(|x| x.threshold_pct).collect::<Vec<_>>(),
        vec![80, 100]
    );

    // Deliveries: only the budget with a webhook; until acknowledged; retried later after a failure.
    let due = s.due_deliveries(ts(at + 3), 100).await.unwrap();
    assert_eq!(due.len(), 3);
    assert!(due
        .iter()
        .all(|x| x.url == "https://hooks.example.com/eai" && x.secret == "whsec_test"));
    s.delivery_attempted(due[0].alert.id, ts(at + 4), Ok(()), None)
        .await
        .unwrap();
    s.delivery_attempted(
        due[1].alert.id,
        ts(at + 4),
        Err("503".into()),
        Some(ts(at + 60_000)),
    )
    .await
    .unwrap();
    let now = s.due_deliveries(ts(at + 5), 100).await.unwrap();
    assert_eq!(now.len(), 1, "delivered and backing-off ones wait");
    let later = s.due_deliveries(ts(at + 60_000), 100).await.unwrap();
    assert_eq!(later.len(), 2);
    let retried = later
        .iter()
        .find(|x| x.alert.id == due[1].alert.id)
        .unwrap();
    assert_eq!(retried.alert.attempts, 1);
    s.delivery_attempted(due[2].alert.id, ts(at + 60_001), Err("gone".into()), None)
        .await
        .unwrap();
    let left = s.due_deliveries(ts(at + 120_000), 100).await.unwrap();
    assert_eq!(left.len(), 1, "an abandoned delivery is not tried again");
    let trail = s.audit_events(Scope::Platform, 0, 1000).await.unwrap();
    assert!(trail
        .iter()
        .any(|e| e.draft.action == "budget.webhook_abandoned"));
}

/// A forecast alert is recorded once per budget and month beside the thresholds (threshold 0 is no threshold of
/// the same month), audited, and delivered with its kind and figures.
pub async fn forecast_alerts_are_recorded_once_a_month_and_delivered(s: &dyn Store) {
    use eai_store::budgets::{Alert, AlertKind};
    let a = tenant(1);
    let rec = s
        .create_budget(&new_budget(budget_spec(a, "100", false)), &audit())
        .await
        .unwrap();
    let at = T0 + 10 * H;
    // A threshold crossed first: the forecast alert is another row.
    s.upsert_usage_events(&[gpu_local(a, "60")], &audit())
        .await
        .unwrap();
    assert_eq!(s.record_crossings(ts(at)).await.unwrap().len(), 1);
    let day = ts(T0 + 20 * 24 * H);
    let alert = |id, at| Alert::forecast(id, &rec.budget, d("60"), d("130.5"), day, ts(at));
    let head = s.audit_head().await.unwrap().map_or(0, |h| h.seq);
    assert!(s
        .record_forecast_alert(&alert(uuid::Uuid::new_v4(), at + 1))
        .await
        .unwrap());
    assert!(
        !s.record_forecast_alert(&alert(uuid::Uuid::new_v4(), at + 2))
            .await
            .unwrap(),
        "once a month"
    );
    assert_eq!(
        s.audit_head().await.unwrap().map_or(0, |h| h.seq),
        head + 1,
        "audited once"
    );
    let trail = s.audit_events(Scope::Tenant(a), 0, 100).await.unwrap();
    assert!(trail
        .iter()
        .any(|e| e.draft.action == "budget.forecast_exceeded"));
    let due = s.due_deliveries(ts(at + 3), 100).await.unwrap();
    assert_eq!(due.len(), 2, "{due:?}");
    let f = due
        .iter()
        .find(|x| matches!(x.alert.kind, AlertKind::Forecast { .. }))
        .unwrap();
    assert_eq!(
        f.alert.kind,
        AlertKind::Forecast {
            expected: d("130.5"),
            exhausted_on: day
        }
    );
    assert_eq!(
        (f.alert.spent, f.alert.limit, f.alert.threshold_pct),
        (d("60"), d("100"), 0)
    );
    let t = due
        .iter()
        .find(|x| x.alert.kind == AlertKind::Threshold)
        .unwrap();
    assert_eq!(t.alert.threshold_pct, 50);
}

/// A budget with a webhook whose 50 % threshold is crossed: one alert due (for the tests of schema 16, which
/// keep the alerts recorded before it).
pub async fn a_threshold_alert_recorded(s: &dyn Store) {
    let a = tenant(1);
    s.create_budget(&new_budget(budget_spec(a, "100", false)), &audit())
        .await
        .unwrap();
    s.upsert_usage_events(&[gpu_local(a, "60")], &audit())
        .await
        .unwrap();
    assert_eq!(s.record_crossings(ts(T0 + H)).await.unwrap().len(), 1);
}

/// After schema 16 the alert of [`a_threshold_alert_recorded`] is still due, a threshold, and still recorded
/// once; its budget may get a forecast alert beside it.
pub async fn the_threshold_alert_is_kept(s: &dyn Store) {
    use eai_store::budgets::{Alert, AlertKind};
    let due = s.due_deliveries(ts(T0 + 2 * H), 100).await.unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    assert_eq!(
        (
            due[0].alert.kind,
            due[0].alert.threshold_pct,
            due[0].alert.spent
        ),
        (AlertKind::Threshold, 50, d("60"))
    );
    assert!(s.record_crossings(ts(T0 + 3 * H)).await.unwrap().is_empty());
    let budget = s.budgets(Scope::Platform).await.unwrap().remove(0).budget;
    let f = Alert::forecast(
        uuid::Uuid::new_v4(),
        &budget,
        d("60"),
        d("120"),
        ts(T0 + 24 * H),
        ts(T0 + 3 * H),
    );
    assert!(s.record_forecast_alert(&f).await.unwrap());
    assert_eq!(
        s.due_deliveries(ts(T0 + 4 * H), 100).await.unwrap().len(),
        2
    );
}

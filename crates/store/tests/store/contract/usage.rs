//! Usage events: upserted by id, replaced only by their source, and read in scope.

use super::*;

pub async fn usage_events_upsert_and_scope(s: &dyn Store) {
    let mut e1 = tokens(tenant(1), "vllm-a", T0 + 1000, 100);
    e1.model = Some(ModelRef {
        provider: "vllm".into(),
        name: "llama-3-70b".into(),
    });
    e1.cost = Some((NonNegative::new(d("0.0123")).unwrap(), Currency::EUR));
    e1.project = Some("p".into());
    e1.agent_id = Some("a".into());
    e1.run_id = Some("r".into());
    e1.allocation_policy_id = Some("alp_1".into());
    e1.units.insert(
        "gpu_seconds".into(),
        NonNegative::new(d("1.500001")).unwrap(),
    );
    let e2 = tokens(tenant(2), "vllm-a", T0 + 2000, 200);
    let mut e3 = tokens(tenant(1), "vllm-a", T0 + H, 300);
    e3.deployment_id = None;
    assert_eq!(
        s.upsert_usage_events(&[e1.clone(), e2.clone(), e3.clone()], &audit())
            .await
            .unwrap(),
        3
    );

    let all = s
        .usage_events(Scope::Platform, ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![e1.clone(), e2.clone(), e3.clone()],
        "every field round-trips, oldest first"
    );
    let mine = s
        .usage_events(Scope::Tenant(tenant(2)), ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(mine, vec![e2.clone()], "a tenant sees only its own events");
    let window = s
        .usage_events(Scope::Platform, ts(T0 + 1000), ts(T0 + 2000))
        .await
        .unwrap();
    assert_eq!(window, vec![e1.clone()], "[from, to)");

    // A re-sent event replaces, never doubles.
    let mut e1b = e1.clone();
    e1b.units
        .insert("tokens_in".into(), NonNegative::new(d("150")).unwrap());
    e1b.occurred_at = ts(T0 + 3000);
    assert_eq!(
        s.upsert_usage_events(&[e1b.clone()], &audit())
            .await
            .unwrap(),
        1
    );
    let all = s
        .usage_events(Scope::Platform, ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(all, vec![e2.clone(), e1b.clone(), e3.clone()]);

    // Another tenant using the same event id writes an event of its own: ids are per tenant, so nothing of
    // tenant 1 is touched or told.
    let mut same_id = e1.clone();
    same_id.tenant_id = tenant(2);
    same_id.units.insert(
        "tokens_in".into(),
        NonNegative::new(Decimal::from(9)).unwrap(),
    );
    s.upsert_usage_events(std::slice::from_ref(&same_id), &audit())
        .await
        .unwrap();
    let mine = s
        .usage_events(Scope::Tenant(tenant(2)), ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(mine, vec![same_id, e2], "in time order");
    let theirs = s
        .usage_events(Scope::Tenant(tenant(1)), ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(theirs, vec![e1b.clone(), e3.clone()]);

    // The allocation batch's record of a charge is replaced only by the batch.
    let mut charge = tokens(tenant(1), "vllm-a", T0 + 5000, 0);
    charge.source = eai_engine::domain::ALLOCATION_SOURCE.into();
    charge.usage_type = "gpu_local".into();
    s.upsert_usage_events(std::slice::from_ref(&charge), &audit())
        .await
        .unwrap();
    let mut forged = charge.clone();
    forged.source = "gateway".into();
    let fresh = tokens(tenant(1), "vllm-a", T0 + 6000, 1);
    let err = s
        .upsert_usage_events(&[fresh, forged], &audit())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Forbidden(_)), "{err}");
    let after = s
        .usage_events(Scope::Tenant(tenant(1)), ts(T0), ts(T0 + 2 * H))
        .await
        .unwrap();
    assert_eq!(after, vec![e1b, charge.clone(), e3], "nothing of the batch");
    let mut again = charge;
    again.units.insert("gpu_seconds".into(), NonNegative::ZERO);
    s.upsert_usage_events(&[again], &audit()).await.unwrap();
}

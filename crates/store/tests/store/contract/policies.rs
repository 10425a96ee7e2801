//! Allocation policies: superseded, never edited.

use super::*;

pub async fn policies_are_superseded_never_edited(s: &dyn Store) {
    let mut a = spec("default");
    a.effective_from = ts(T0);
    let p1 = s.create_policy(&a, &audit()).await.unwrap();
    assert_eq!((p1.id.as_str(), p1.seq), ("alp_1", 1));
    let mut b = spec("l40s");
    b.gpu_model = Some("L40S".into());
    b.deployment_pattern = Glob::new("vllm-*").unwrap();
    b.gpu_hourly_cost = NonNegative::new(d("1.2345678901")).unwrap();
    b.idle_capacity = IdleCapacity::Proportional;
    b.currency = "JPY".parse().unwrap();
    b.effective_from = ts(T0);
    b.effective_to = Some(ts(T0 + 10 * H));
    let p2 = s.create_policy(&b, &audit()).await.unwrap();
    assert_eq!(p2.id, "alp_2");

    let mut c = a.clone();
    c.gpu_hourly_cost = NonNegative::new(d("2.50")).unwrap();
    c.effective_from = ts(T0 + H);
    let (closed, opened) = s
        .supersede_policy("alp_1", ts(T0 + H), Some(&c), &audit())
        .await
        .unwrap();
    assert_eq!(closed.spec.effective_to, Some(ts(T0 + H)));
    assert_eq!(
        closed.spec.gpu_hourly_cost, a.gpu_hourly_cost,
        "pricing is never edited"
    );
    let opened = opened.unwrap();
    assert_eq!(opened.id, "alp_3");
    assert_eq!(
        s.policies().await.unwrap(),
        vec![closed.clone(), p2.clone(), opened.clone()],
        "oldest first, every field"
    );

    // Closed already, closing before its start, unknown ids.
    let conflict = |r: Result<_, StoreError>| matches!(r, Err(StoreError::Conflict { .. }));
    assert!(conflict(
        s.supersede_policy("alp_1", ts(T0 + 2 * H), None, &audit())
            .await
    ));
    assert!(conflict(
        s.supersede_policy("alp_1", ts(T0 + H), None, &audit())
            .await
    ));
    assert!(conflict(
        s.supersede_policy("alp_3", ts(T0 + H), None, &audit())
            .await
    ));
    assert!(conflict(
        s.supersede_policy("alp_2", ts(T0 + 11 * H), None, &audit())
            .await
    ));
    assert!(matches!(
        s.supersede_policy("alp_9", ts(T0 + 2 * H), None, &audit())
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.supersede_policy("nope", ts(T0 + 2 * H), None, &audit())
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        s.policies().await.unwrap().len(),
        3,
        "a refused supersede writes nothing"
    );

    // Closing earlier than a scheduled end, without a replacement.
    let (closed2, none) = s
        .supersede_policy("alp_2", ts(T0 + 5 * H), None, &audit())
        .await
        .unwrap();
    assert!(none.is_none());
    assert_eq!(closed2.spec.effective_to, Some(ts(T0 + 5 * H)));
    assert_eq!(s.policies().await.unwrap()[1], closed2);
}

//! Tenants: registered once and read in scope; the reserved platform tenant id is refused in every change, and
//! a read scoped to it finds nothing.

use super::*;

/// No change may name the reserved platform tenant (the id of rows that belong to no tenant): as a sample's
/// owner, an event's tenant, a key's, a budget's, or a registered tenant's. Nothing is stored or audited.
pub async fn the_platform_tenant_id_is_reserved(s: &dyn Store) {
    use eai_engine::domain::Tenant;
    let nil = TenantId(eai_store::PLATFORM_TENANT_ID);
    let conflict = |r: eai_store::Result<()>, what: &str| {
        assert!(
            matches!(r, Err(StoreError::Conflict { .. })),
            "{what}: {r:?}"
        );
    };
    let mut owned = sample("GPU-0", "vllm-a", T0 + 15_000);
    owned.owner = Some(nil);
    conflict(
        s.insert_samples(vec![owned], &audit()).await.map(drop),
        "a sample owned by it",
    );
    conflict(
        s.upsert_usage_events(&[tokens(nil, "vllm-a", T0, 1)], &audit())
            .await
            .map(drop),
        "a usage event of it",
    );
    conflict(
        s.create_api_key(
            &new_key("h", Role::Viewer, Some(nil), None, ts(T0)),
            &audit(),
        )
        .await
        .map(drop),
        "a key of it",
    );
    let t = Tenant {
        id: nil,
        slug: "platform".parse().unwrap(),
        name: "Platform".into(),
    };
    conflict(
        s.create_tenant(&t, &audit()).await.map(drop),
        "its registration",
    );
    assert_eq!(s.audit_head().await.unwrap(), None, "nothing audited");
    assert!(all_usage(s).await.rollups.is_empty());
    assert_eq!(s.api_key_count().await.unwrap(), 0);
}

/// A read scoped to the reserved platform tenant finds nothing, on every backend alike: no error, and never
/// the platform's rows (its keys, its audit events) nor a tenant's.
pub async fn reads_scoped_to_the_platform_tenant_find_nothing(s: &dyn Store) {
    let nil = Scope::Tenant(TenantId(eai_store::PLATFORM_TENANT_ID));
    s.create_api_key(
        &new_key("h0", Role::PlatformAdmin, None, None, ts(T0)),
        &audit(),
    )
    .await
    .unwrap();
    s.upsert_usage_events(&[tokens(tenant(1), "vllm-a", T0, 5)], &audit())
        .await
        .unwrap();
    assert!(s.api_keys(Scope::Platform).await.unwrap().len() == 1);
    assert!(!s
        .audit_events(Scope::Platform, 0, 100)
        .await
        .unwrap()
        .is_empty());
    assert!(s
        .usage_events(nil, ts(0), ts(T0 + H))
        .await
        .unwrap()
        .is_empty());
    assert!(s.api_keys(nil).await.unwrap().is_empty());
    assert!(s.tenants(nil).await.unwrap().is_empty());
    assert!(s.audit_events(nil, 0, 100).await.unwrap().is_empty());
    assert!(s.budgets(nil).await.unwrap().is_empty());
    assert!(s.budget_standings(nil, ts(T0)).await.unwrap().is_empty());
    assert_eq!(s.reservation(nil, "res_x").await.unwrap(), None);
    // Nor does a change find anything to change.
    let r = s.revoke_api_key(nil, "key_1", ts(T0), &audit()).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    let r = s.release_reservation(nil, "res_x", ts(T0), &audit()).await;
    assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
}

pub async fn tenants_are_registered_once_and_read_in_scope(s: &dyn Store) {
    use eai_engine::domain::Tenant;
    use eai_store::TenantRef;
    let reg = |n: u8, slug: &str, name: &str| Tenant {
        id: tenant(n),
        slug: slug.parse().unwrap(),
        name: name.to_string(),
    };
    let acme = reg(1, "acme", "Acme Corp");
    let globex = reg(2, "globex", "Globex");
    assert_eq!(s.tenants(Scope::Platform).await.unwrap(), vec![]);
    let before = s.audit_head().await.unwrap().map_or(0, |h| h.seq);
    assert_eq!(
        s.create_tenant(&globex, &draft("tenant.create", None))
            .await
            .unwrap(),
        globex
    );
    assert_eq!(
        s.create_tenant(&acme, &draft("tenant.create", None))
            .await
            .unwrap(),
        acme
    );
    assert_eq!(
        s.audit_head().await.unwrap().map_or(0, |h| h.seq),
        before + 2,
        "each registration is audited with it"
    );
    // The slug and the id are each registered once; a refused registration writes no audit event.
    for dup in [reg(3, "acme", "Other"), reg(1, "acme-2", "Other")] {
        let r = s.create_tenant(&dup, &draft("tenant.create", None)).await;
        assert!(matches!(r, Err(StoreError::Conflict { .. })), "{r:?}");
    }
    assert_eq!(
        s.audit_head().await.unwrap().map_or(0, |h| h.seq),
        before + 2
    );
    assert_eq!(
        s.tenants(Scope::Platform).await.unwrap(),
        vec![acme.clone(), globex.clone()],
        "by slug"
    );
    assert_eq!(
        s.tenants(Scope::Tenant(tenant(1))).await.unwrap(),
        vec![acme.clone()]
    );
    assert_eq!(
        s.tenants(Scope::Tenant(tenant(9))).await.unwrap(),
        vec![],
        "a tenant only seen in data has no registration"
    );
    for key in [
        TenantRef::Id(tenant(1)),
        TenantRef::Slug("acme".parse().unwrap()),
    ] {
        assert_eq!(s.tenant(&key).await.unwrap(), Some(acme.clone()));
    }
    assert_eq!(
        s.tenant(&TenantRef::Slug("nobody".parse().unwrap()))
            .await
            .unwrap(),
        None
    );
    assert_eq!(s.tenant(&TenantRef::Id(tenant(9))).await.unwrap(), None);
}

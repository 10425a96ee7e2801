//! API keys: found by hash (the current secret first, then a rotated key's previous one).

use super::*;

pub async fn api_keys_are_found_by_hash(s: &dyn Store) {
    assert_eq!(s.api_key_count().await.unwrap(), 0);
    let k1 = s
        .create_api_key(
            &new_key("h1", Role::PlatformAdmin, None, Some("bootstrap"), ts(T0)),
            &audit(),
        )
        .await
        .unwrap();
    let k2 = s
        .create_api_key(
            &new_key("h2", Role::Auditor, Some(tenant(3)), None, ts(T0 + 1)),
            &audit(),
        )
        .await
        .unwrap();
    assert_eq!((k1.id.as_str(), k2.id.as_str()), ("key_1", "key_2"));
    assert_eq!(
        s.api_key_by_hash("h2").await.unwrap().map(|m| m.key),
        Some(k2.clone())
    );
    assert_eq!(
        s.api_key_by_hash("h1").await.unwrap().map(|m| m.key),
        Some(k1)
    );
    assert_eq!(s.api_key_by_hash("h3").await.unwrap().map(|m| m.key), None);
    assert_eq!(s.api_key_count().await.unwrap(), 2);
    let dup = s
        .create_api_key(&new_key("h2", Role::Viewer, None, None, ts(T0)), &audit())
        .await;
    assert!(matches!(dup, Err(StoreError::Conflict { .. })));
    assert_eq!(s.api_key_count().await.unwrap(), 2);
    for role in Role::ALL {
        let k = s
            .create_api_key(&new_key(role.as_str(), role, None, None, ts(T0)), &audit())
            .await
            .unwrap();
        assert_eq!(
            s.api_key_by_hash(role.as_str())
                .await
                .unwrap()
                .unwrap()
                .key
                .role,
            k.role
        );
    }
}

//! The audit chain: linked and verified, never forked by concurrent appends.

use super::*;

pub async fn the_audit_chain_links_and_verifies(s: &dyn Store) {
    assert_eq!(
        s.verify_audit_chain(None).await.unwrap(),
        None,
        "an empty chain is intact"
    );
    let mut events = Vec::new();
    for i in 0..6u8 {
        let t = (i % 2 == 1).then(|| tenant(1));
        events.push(
            s.append_audit(&draft(&format!("action.{i}"), t))
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(events[0].prev_hash, eai_store::audit::GENESIS_HASH);
    assert!(events.windows(2).all(|w| w[1].prev_hash == w[0].hash));
    assert_eq!(eai_store::audit::verify(&events), None);
    assert_eq!(
        s.audit_events(Scope::Platform, 0, 100).await.unwrap(),
        events,
        "read back as written"
    );
    assert_eq!(
        s.audit_events(Scope::Platform, 2, 3).await.unwrap(),
        events[2..5].to_vec(),
        "after, limit"
    );
    let mine = s
        .audit_events(Scope::Tenant(tenant(1)), 0, 100)
        .await
        .unwrap();
    assert_eq!(
        mine.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![2, 4, 6]
    );
    assert!(s
        .audit_events(Scope::Tenant(tenant(2)), 0, 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(s.verify_audit_chain(None).await.unwrap(), None);
}

pub async fn concurrent_appends_never_fork_the_chain(s: &dyn Store) {
    let futs = (0..16).map(|i| {
        let d = draft(&format!("concurrent.{i}"), None);
        async move { s.append_audit(&d).await.unwrap().seq }
    });
    let mut seqs: Vec<u64> = futures_join_all(futs).await;
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=16).collect::<Vec<_>>());
    assert_eq!(s.verify_audit_chain(None).await.unwrap(), None);
}

//! Idempotency keys: claimed once per (caller, key), replayed once completed, released on failure, taken over
//! when abandoned, pruned by age.

use super::*;
use eai_store::idempotency::{Claim, Claimed, StoredAnswer};

fn claim(caller: &str, tenant: Option<TenantId>, key: &str, fp: &str, at: i64) -> Claim {
    Claim {
        caller: caller.into(),
        tenant,
        key: key.into(),
        fingerprint: fp.into(),
        token: Uuid::new_v4(),
        at: ts(at),
        stale_before: ts(at - 300_000),
    }
}

fn answer(body: &str) -> StoredAnswer {
    StoredAnswer {
        status: 201,
        content_type: Some("application/json".into()),
        location: Some("/v1/finops/budgets/bud_1".into()),
        body: body.as_bytes().to_vec(),
    }
}

/// The first claim runs; the same request again is in flight until it completes, then replayed byte for
/// byte; another request with the key is refused; another caller (of another tenant too) has its own keys.
pub async fn idempotency_keys_are_claimed_once_and_replayed(s: &dyn Store) {
    let first = claim("key_1", None, "k-1", "aaa", T0);
    assert_eq!(s.claim_idempotency_key(&first).await.unwrap(), Claimed::Run);
    let again = claim("key_1", None, "k-1", "aaa", T0 + 1_000);
    assert_eq!(
        s.claim_idempotency_key(&again).await.unwrap(),
        Claimed::InFlight
    );
    let other = claim("key_1", None, "k-1", "bbb", T0 + 1_000);
    assert_eq!(
        s.claim_idempotency_key(&other).await.unwrap(),
        Claimed::Reused
    );
    // Only the holder completes it.
    assert!(!s
        .complete_idempotency_key(&again, &answer("{\"x\":0}"))
        .await
        .unwrap());
    let body = "{\"id\":\"bud_1\",\"amount\":\"10.00\"}";
    assert!(s
        .complete_idempotency_key(&first, &answer(body))
        .await
        .unwrap());
    assert_eq!(
        s.claim_idempotency_key(&again).await.unwrap(),
        Claimed::Replay(answer(body))
    );
    assert_eq!(
        s.claim_idempotency_key(&other).await.unwrap(),
        Claimed::Reused
    );
    // A completed row is never released nor taken over, however old.
    assert!(!s.release_idempotency_key(&first).await.unwrap());
    let late = claim("key_1", None, "k-1", "aaa", T0 + 10 * H);
    assert_eq!(
        s.claim_idempotency_key(&late).await.unwrap(),
        Claimed::Replay(answer(body))
    );
    // Another caller, a tenant's key: the same key is its own.
    let theirs = claim("key_2", Some(tenant(1)), "k-1", "bbb", T0);
    assert_eq!(
        s.claim_idempotency_key(&theirs).await.unwrap(),
        Claimed::Run
    );
    assert!(s
        .complete_idempotency_key(&theirs, &answer("{}"))
        .await
        .unwrap());
    assert_eq!(
        s.claim_idempotency_key(&claim("key_2", Some(tenant(1)), "k-1", "bbb", T0))
            .await
            .unwrap(),
        Claimed::Replay(answer("{}"))
    );
}

/// A released claim (the request failed) lets the next one run; a claim abandoned past its lease is taken
/// over by the same request, and its first holder can then neither complete nor release it.
pub async fn idempotency_keys_are_released_and_taken_over(s: &dyn Store) {
    let first = claim("key_1", Some(tenant(2)), "k", "aaa", T0);
    assert_eq!(s.claim_idempotency_key(&first).await.unwrap(), Claimed::Run);
    assert!(s.release_idempotency_key(&first).await.unwrap());
    assert!(!s.release_idempotency_key(&first).await.unwrap(), "gone");
    let fixed = claim("key_1", Some(tenant(2)), "k", "fixed", T0 + 1_000);
    assert_eq!(s.claim_idempotency_key(&fixed).await.unwrap(), Claimed::Run);
    // Abandoned: a claim made more than the lease before is taken over by the same request only.
    let reused = claim("key_1", Some(tenant(2)), "k", "other", T0 + 3_600_000);
    assert_eq!(
        s.claim_idempotency_key(&reused).await.unwrap(),
        Claimed::Reused
    );
    let within = claim("key_1", Some(tenant(2)), "k", "fixed", T0 + 1_000 + 300_000);
    assert_eq!(
        s.claim_idempotency_key(&within).await.unwrap(),
        Claimed::InFlight,
        "a lease is not over at its very end"
    );
    let taker = claim("key_1", Some(tenant(2)), "k", "fixed", T0 + 1_001 + 300_000);
    assert_eq!(s.claim_idempotency_key(&taker).await.unwrap(), Claimed::Run);
    assert!(!s
        .complete_idempotency_key(&fixed, &answer("{\"old\":1}"))
        .await
        .unwrap());
    assert!(!s.release_idempotency_key(&fixed).await.unwrap());
    assert!(s
        .complete_idempotency_key(&taker, &answer("{\"new\":1}"))
        .await
        .unwrap());
    assert_eq!(
        s.claim_idempotency_key(&fixed).await.unwrap(),
        Claimed::Replay(answer("{\"new\":1}"))
    );
}

/// Keys claimed before the horizon go, completed or not; younger ones stay and still replay.
pub async fn idempotency_keys_are_pruned_by_age(s: &dyn Store) {
    let old = claim("key_1", None, "old", "a", T0);
    let stuck = claim("key_1", Some(tenant(3)), "stuck", "a", T0 + 1);
    let young = claim("key_1", None, "young", "a", T0 + 24 * H);
    for c in [&old, &stuck, &young] {
        assert_eq!(s.claim_idempotency_key(c).await.unwrap(), Claimed::Run);
    }
    assert!(s
        .complete_idempotency_key(&old, &answer("1"))
        .await
        .unwrap());
    assert!(s
        .complete_idempotency_key(&young, &answer("2"))
        .await
        .unwrap());
    assert_eq!(s.prune_idempotency_keys(ts(T0 + H)).await.unwrap(), 2);
    assert_eq!(s.prune_idempotency_keys(ts(T0 + H)).await.unwrap(), 0);
    let old_again = claim("key_1", None, "old", "a", T0 + 25 * H);
    assert_eq!(
        s.claim_idempotency_key(&old_again).await.unwrap(),
        Claimed::Run,
        "pruned: the key is free again"
    );
    assert_eq!(
        s.claim_idempotency_key(&claim("key_1", None, "young", "a", T0 + 25 * H))
            .await
            .unwrap(),
        Claimed::Replay(answer("2"))
    );
}

/// Claims of one key at once: exactly one runs, the others find it in flight.
pub async fn concurrent_claims_of_one_key_run_once(s: &dyn Store) {
    let claims: Vec<Claim> = (0..8)
        .map(|_| claim("key_9", Some(tenant(4)), "same", "fp", T0))
        .collect();
    let outcomes = futures_join_all(claims.iter().map(|c| async move {
        match s.claim_idempotency_key(c).await.unwrap() {
            Claimed::Run => 1,
            Claimed::InFlight => 0,
            other => panic!("{other:?}"),
        }
    }))
    .await;
    assert_eq!(outcomes.iter().sum::<u64>(), 1, "{outcomes:?}");
}

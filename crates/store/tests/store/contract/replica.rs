//! The replica outbox: each change queues its rows in its own transaction when the outbox is on, nothing when it
//! is off.

use super::*;

/// With the outbox on: each change queues its replica rows (inserted samples, rollups with their new
/// full value, events), re-sends queue nothing, and acknowledged entries are gone.
pub async fn the_outbox_carries_each_change_and_acked_entries_go(s: &dyn Store) {
    use eai_store::clickhouse;
    let mut batch = fleet("vllm-a", 1, T0, T0 + H);
    let late = batch.remove(100);
    s.insert_samples(batch.to_vec(), &audit()).await.unwrap();
    let e = tokens(tenant(1), "vllm-a", T0 + 60_000, 10);
    s.upsert_usage_events(std::slice::from_ref(&e), &audit())
        .await
        .unwrap();
    s.insert_samples(vec![late.clone()], &audit())
        .await
        .unwrap();
    let o = s
        .insert_samples(batch[..10].to_vec(), &audit())
        .await
        .unwrap();
    assert_eq!(o.inserted, 0);

    let pending = s.outbox_pending(1000).await.unwrap();
    assert!(pending.windows(2).all(|w| w[0].seq < w[1].seq));
    let rows = |t: &str| -> Vec<serde_json::Value> {
        pending
            .iter()
            .filter(|x| x.table == t)
            .flat_map(|x| x.rows.clone())
            .collect()
    };
    assert_eq!(rows("gpu_samples").len(), 240, "every inserted sample once");
    assert_eq!(rows("usage_events"), vec![clickhouse::event_row(&e)]);
    batch.push(late);
    // The replica holds per-GPU rollups.
    let want = aggregate(cells(&batch, &SeriesConfig::default()).cells);
    assert_eq!(want.len(), 1);
    assert_eq!(
        rows("gpu_rollups").last().unwrap(),
        &clickhouse::rollup_row(&want[0], false),
        "the last rollup row queued is the hour's full value after the late sample"
    );
    // And the group row of that hour (its GPU set beside it) and the claim of the event.
    let group = eai_engine::rollup::group(want.clone());
    assert_eq!(
        rows("gpu_groups").last().unwrap(),
        &clickhouse::group_row(&group[0], false)
    );
    let set = group[0].gpus.clone().unwrap();
    assert!(rows("gpu_sets").contains(&clickhouse::gpu_set_row(&set)));
    let claim = eai_engine::allocate::claim_of(&e).unwrap();
    assert_eq!(
        rows("usage_claims"),
        vec![clickhouse::claim_row(&claim, 1, false)]
    );
    let stats = s.outbox_stats().await.unwrap();
    assert_eq!(stats.pending, pending.len() as u64);
    assert!(stats.oldest_ms.is_some());

    let last = pending.last().unwrap().seq;
    assert_eq!(s.outbox_ack(last).await.unwrap(), pending.len() as u64);
    assert!(s.outbox_pending(1000).await.unwrap().is_empty());
    assert_eq!(
        s.outbox_stats().await.unwrap(),
        eai_store::OutboxStats::default()
    );
    // Sequences go on after an acknowledgement (they are the replica's row versions).
    s.upsert_usage_events(&[e], &audit()).await.unwrap();
    let next = s.outbox_pending(10).await.unwrap();
    assert_eq!(next.len(), 1);
    assert!(next[0].seq > last);
}

/// With the outbox off (no replica configured), nothing is queued.
pub async fn without_the_outbox_nothing_is_queued(s: &dyn Store) {
    s.insert_samples(fleet("vllm-a", 1, T0, T0 + H), &audit())
        .await
        .unwrap();
    s.upsert_usage_events(&[tokens(tenant(1), "vllm-a", T0, 1)], &audit())
        .await
        .unwrap();
    assert!(s.outbox_pending(10).await.unwrap().is_empty());
    assert_eq!(s.outbox_stats().await.unwrap().pending, 0);
}

//! The ClickHouse replicator, on the replica that holds its lease: creates the replica's schema, then delivers
//! the outbox for as long as it leads, retrying with [`BACKOFF`] while ClickHouse is down (ingest never waits
//! for it: the outbox keeps the rows). A delivery cut short is redelivered by the next leader: the replica
//! dedups on its keys.

use std::sync::Arc;
use std::time::Duration;

use eai_engine::backoff::Backoff;
use eai_store::clickhouse::{replicate_once, ClickHouse};
use eai_store::lease::LeaderJob;
use eai_store::Store;

use crate::clock::Clock;
use crate::leader::Lease;
use crate::metrics::Metrics;

/// Outbox entries one delivery takes.
pub const BATCH: u64 = 50;
/// How often the replicator looks for new outbox entries when it has caught up.
pub const POLL: Duration = Duration::from_millis(500);
/// After a failure talking to ClickHouse: 0.5 s doubling to 30 s, no jitter (one replicator).
pub const BACKOFF: Backoff = Backoff::new(500, 30_000);

/// Replicates forever: delivers while this replica leads, checking the lease every `poll`.
pub async fn run(
    store: Arc<dyn Store>,
    ch: ClickHouse,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    poll: Duration,
) {
    let mut lease = Lease::new(store.clone(), LeaderJob::Replicator, metrics.clone());
    let poll = crate::leader::poll(poll);
    let poll_ms = i64::try_from(poll.as_millis()).unwrap_or(i64::MAX);
    loop {
        while !lease.check().await {
            clock.sleep(poll).await;
        }
        // Leading: deliver until a lease check fails.
        let checked = clock.now();
        tokio::select! {
            _ = deliver_while_leading(&store, &ch, &metrics, clock.as_ref()) => {}
            _ = async {
                let mut at = checked;
                loop {
                    at.0 += poll_ms;
                    clock.sleep_until(at).await;
                    if !lease.check().await {
                        break;
                    }
                }
            } => {}
        }
    }
}

/// Delivers the outbox forever (the caller stops it when the lease is lost).
async fn deliver_while_leading(
    store: &Arc<dyn Store>,
    ch: &ClickHouse,
    metrics: &Metrics,
    clock: &dyn Clock,
) {
    let r = &metrics.replica;
    let mut failures: u32 = 0;
    while let Err(e) = ch.migrate().await {
        failures = failures.saturating_add(1);
        Metrics::add(&r.failures, 1);
        let wait = BACKOFF.delay(failures, 0);
        tracing::warn!(error = %e, retry_in_ms = wait, "cannot create the ClickHouse schema; will retry");
        clock.sleep(BACKOFF.delay_duration(failures, 0)).await;
    }
    failures = 0;
    loop {
        match store.outbox_stats().await {
            Ok(stats) => {
                Metrics::set(&r.outbox_pending, stats.pending);
                let age = stats
                    .oldest_ms
                    .map_or(0, |t| (clock.now().0 - t).max(0) / 1000);
                Metrics::set(
                    &r.outbox_oldest_age_seconds,
                    u64::try_from(age).unwrap_or(0),
                );
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the outbox size"),
        }
        match replicate_once(store.as_ref(), ch, BATCH).await {
            Ok(d) => {
                failures = 0;
                Metrics::add(&r.delivered_rows, d.rows as u64);
                Metrics::set(
                    &r.last_success_timestamp_seconds,
                    u64::try_from(clock.now().0 / 1000).unwrap_or(0),
                );
                if (d.entries as u64) < BATCH {
                    clock.sleep(POLL).await;
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                Metrics::add(&r.failures, 1);
                let wait = BACKOFF.delay(failures, 0);
                tracing::warn!(error = %e, retry_in_ms = wait, "replication to ClickHouse failed; the outbox keeps the rows, will retry");
                clock.sleep(BACKOFF.delay_duration(failures, 0)).await;
            }
        }
    }
}

//! The server's background jobs, on an injected [`Clock`]: each one's work is a function of `now` (`*_once`)
//! behind a small loop that sleeps on the clock, so a test steps the clock instead of waiting. [`Jobs::spawn`]
//! starts those the configuration asks for:
//! - the pruner, hourly: raw samples past their retention ([`prune_once`]) and idempotency keys past theirs
//!   ([`prune_idempotency_once`]);
//! - the ClickHouse replicator ([`replicator`]: the schema, then the outbox, with backoff while it is down);
//! - the allocation batch ([`crate::batch::schedule`]);
//! - the budget chores ([`crate::budget_alerts::run`]: holds expired, thresholds crossed, webhooks delivered);
//! - the spend anomalies ([`crate::anomalies::run`]: settled hours judged, anomalies recorded once and posted);
//! - the `/metrics` refresher ([`crate::store_metrics::run`]);
//! - the audit chain's head, logged at start and daily ([`log_audit_head`]): an anchor outside the database.
//!
//! The pruner, the replicator, the batch, the budget chores and the anomalies run on one replica only (a lease
//! each).

use std::sync::Arc;
use std::time::Duration;

use eai_engine::allocate::AllocationConfig;
use eai_engine::time::Timestamp;
use eai_store::clickhouse::ClickHouse;
use eai_store::lease::LeaderJob;
use eai_store::{IdempotencyStore, SampleStore, Store};
use tokio::task::JoinHandle;

use crate::allocation::Source;
use crate::clock::{Clock, Ticker};
use crate::leader::Lease;
use crate::metrics::Metrics;

pub mod replicator;

/// How often raw samples and idempotency keys past their retention are pruned.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How often the audit chain's head is logged (an anchor outside the database; also in `/metrics`).
pub const AUDIT_HEAD_EVERY: Duration = Duration::from_secs(24 * 3600);

/// The jobs of one server, as configured.
pub struct Jobs {
    pub store: Arc<dyn Store>,
    pub metrics: Arc<Metrics>,
    pub clock: Arc<dyn Clock>,
    /// Between two lease checks (`EAI_LEADER_POLL_SECONDS`).
    pub leader_poll: Duration,
    /// `EAI_RAW_RETENTION_DAYS` (0: raw samples are kept).
    pub raw_retention_days: u32,
    /// `EAI_IDEMPOTENCY_RETENTION`: how long an idempotency key is kept after its claim.
    pub idempotency_retention: Duration,
    /// The replica to deliver the outbox to, if any.
    pub clickhouse: Option<ClickHouse>,
    /// The allocation batch (`EAI_ALLOCATION_BATCH`): where it reads, its buckets, its schedule.
    pub batch: Option<(Source, AllocationConfig, crate::batch::Schedule)>,
    /// `EAI_BUDGET_CHECK_SECONDS`.
    pub budget_check: Duration,
    /// `EAI_ANOMALY_*`: the spend anomalies' job.
    pub anomalies: crate::anomalies::AnomalyConfig,
    /// The `/metrics` refresher.
    pub refresher: crate::store_metrics::Refresher,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("store", &self.store.backend())
            .field("raw_retention_days", &self.raw_retention_days)
            .field("idempotency_retention", &self.idempotency_retention)
            .field(
                "clickhouse",
                &self.clickhouse.as_ref().map(|c| c.database()),
            )
            .field("batch", &self.batch.is_some())
            .field("budget_check", &self.budget_check)
            .field("anomalies", &self.anomalies)
            .finish_non_exhaustive()
    }
}

impl Jobs {
    /// Starts every configured job; they run until their handles are aborted.
    pub fn spawn(self) -> Vec<JoinHandle<()>> {
        let Jobs {
            store,
            metrics,
            clock,
            leader_poll,
            raw_retention_days,
            idempotency_retention,
            clickhouse,
            batch,
            budget_check,
            anomalies,
            refresher,
        } = self;
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn(prune(
            store.clone(),
            raw_retention_days,
            idempotency_retention,
            metrics.clone(),
            clock.clone(),
            leader_poll,
        )));
        if let Some(ch) = clickhouse {
            tracing::info!(database = ch.database(), "replicating to ClickHouse");
            tasks.push(tokio::spawn(replicator::run(
                store.clone(),
                ch,
                metrics.clone(),
                clock.clone(),
                leader_poll,
            )));
        }
        if let Some((source, config, schedule)) = batch {
            tasks.push(tokio::spawn(crate::batch::schedule(
                store.clone(),
                source,
                config,
                schedule,
                metrics.clone(),
                clock.clone(),
            )));
        }
        tasks.push(tokio::spawn(log_audit_head(
            store.clone(),
            metrics.clone(),
            clock.clone(),
        )));
        // The budget chores' forecast reads the allocation where the `/metrics` refresher does.
        let forecasts = crate::budget_alerts::Forecasts {
            source: refresher.source.clone(),
            config: AllocationConfig {
                bucket_ms: refresher.bucket_ms,
                ..AllocationConfig::default()
            },
        };
        tasks.push(tokio::spawn(crate::store_metrics::run(refresher)));
        tasks.push(tokio::spawn(crate::anomalies::run(
            store.clone(),
            metrics.clone(),
            anomalies,
            clock.clone(),
        )));
        tasks.push(tokio::spawn(crate::budget_alerts::run(
            store,
            metrics,
            budget_check,
            clock,
            forecasts,
        )));
        tracing::info!(instance = crate::leader::instance(), "one replica runs each of the batch, the pruner, the replicator, the budget chores and the anomalies (a lease each)");
        tasks
    }
}

/// Deletes raw samples past their retention (`days`; 0 keeps them; rollups stay) and idempotency keys past
/// theirs, hourly, on the replica that holds the pruner's lease.
pub async fn prune(
    store: Arc<dyn Store>,
    days: u32,
    idempotency_retention: Duration,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    poll: Duration,
) {
    let lease = Lease::new(store.clone(), LeaderJob::Pruner, metrics);
    let store = store.as_ref();
    crate::leader::every_while_leading(lease, clock, PRUNE_EVERY, poll, |now| async move {
        if days > 0 {
            prune_once(store, days, now).await;
        }
        prune_idempotency_once(store, idempotency_retention, now).await;
    })
    .await;
}

/// One prune of idempotency keys at `now`: keys claimed more than `retention` before go; returns how many.
pub async fn prune_idempotency_once(
    store: &dyn IdempotencyStore,
    retention: Duration,
    now: Timestamp,
) -> u64 {
    let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    let before = Timestamp(now.0.saturating_sub(ms));
    match store.prune_idempotency_keys(before).await {
        Ok(0) => 0,
        Ok(n) => {
            tracing::info!(rows = n, before = %before, "pruned idempotency keys past their retention");
            n
        }
        Err(e) => {
            tracing::warn!(error = %e, "pruning idempotency keys failed; will retry");
            0
        }
    }
}

/// One prune at `now`: raw samples older than `days` days go; returns how many.
pub async fn prune_once(store: &dyn SampleStore, days: u32, now: Timestamp) -> u64 {
    let before = Timestamp(now.0 - i64::from(days) * 86_400_000);
    match store.prune_raw_samples(before).await {
        Ok(0) => 0,
        Ok(n) => {
            tracing::info!(rows = n, before = %before, "pruned raw samples past their retention");
            n
        }
        Err(e) => {
            tracing::warn!(error = %e, "pruning raw samples failed; will retry");
            0
        }
    }
}

/// Logs the audit chain's head at start and every [`AUDIT_HEAD_EVERY`], so that the logs anchor it outside
/// the database.
pub async fn log_audit_head(store: Arc<dyn Store>, metrics: Arc<Metrics>, clock: Arc<dyn Clock>) {
    let mut day = Ticker::new(clock, AUDIT_HEAD_EVERY);
    loop {
        day.tick().await;
        match store.audit_head().await {
            Ok(Some(h)) => {
                metrics.set_audit_head(h.seq, &h.hash);
                tracing::info!(seq = h.seq, hash = %h.hash, "audit chain head (anchor it: eai-gpu audit verify --expect-head SEQ:HASH)");
            }
            Ok(None) => tracing::info!("audit chain head: the chain is empty"),
            Err(e) => tracing::warn!(error = %e, "cannot read the audit chain's head"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::Mutex;

    /// Waits (real time, bounded) until `done`: the job runs on its own task.
    async fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_leading_job_runs_at_once_then_every_period_of_the_clock() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(
            eai_store::sqlite::SqliteStore::open(&dir.path().join("jobs.db")).expect("store"),
        );
        let clock = ManualClock::new(Timestamp(1_800_000_000_000));
        let runs: Arc<Mutex<Vec<Timestamp>>> = Arc::default();
        let lease = Lease::new(store, LeaderJob::Pruner, Arc::new(Metrics::new()));
        let seen = runs.clone();
        let job = tokio::spawn(crate::leader::every_while_leading(
            lease,
            Arc::new(clock.clone()),
            PRUNE_EVERY,
            Duration::from_secs(60),
            move |now| {
                seen.lock().expect("lock").push(now);
                async {}
            },
        ));
        let count = || runs.lock().expect("lock").len();
        until("the first run, at once", || count() == 1).await;
        // 59 minutes on: the next lease check, no run yet.
        clock.advance(59 * 60_000);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(count(), 1, "not before the hour");
        clock.advance(60_000);
        until("the second run, an hour of the clock later", || {
            count() == 2
        })
        .await;
        assert_eq!(
            runs.lock().expect("lock").clone(),
            vec![Timestamp(1_800_000_000_000), Timestamp(1_800_003_600_000)]
        );
        job.abort();
    }

    #[tokio::test]
    async fn idempotency_keys_are_pruned_past_their_retention_only() {
        use eai_store::idempotency::{Claim, Claimed};
        let dir = tempfile::tempdir().expect("temp dir");
        let store = eai_store::sqlite::SqliteStore::open(&dir.path().join("i.db")).expect("store");
        let now = Timestamp(1_800_000_000_000);
        let day = 86_400_000;
        let claim = |key: &str, at: i64| Claim {
            caller: "key_1".into(),
            tenant: None,
            key: key.into(),
            fingerprint: "f".into(),
            token: uuid::Uuid::new_v4(),
            at: Timestamp(at),
            stale_before: Timestamp(at - 300_000),
        };
        for (key, at) in [("old", now.0 - day - 1), ("kept", now.0 - day)] {
            let c = claim(key, at);
            assert_eq!(
                store.claim_idempotency_key(&c).await.expect("claim"),
                Claimed::Run
            );
        }
        let retention = Duration::from_secs(24 * 3600);
        assert_eq!(prune_idempotency_once(&store, retention, now).await, 1);
        assert_eq!(prune_idempotency_once(&store, retention, now).await, 0);
        let other = Claim {
            fingerprint: "another request".into(),
            ..claim("kept", now.0)
        };
        assert_eq!(
            store.claim_idempotency_key(&other).await.expect("claim"),
            Claimed::Reused,
            "a key exactly at the retention is kept"
        );
        assert_eq!(
            store
                .claim_idempotency_key(&claim("old", now.0))
                .await
                .expect("claim"),
            Claimed::Run,
            "the pruned key is free again"
        );
    }

    #[tokio::test]
    async fn a_prune_keeps_the_retention_before_now() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = eai_store::sqlite::SqliteStore::open(&dir.path().join("p.db")).expect("store");
        assert_eq!(
            prune_once(&store, 30, Timestamp(1_800_000_000_000)).await,
            0
        );
    }
}

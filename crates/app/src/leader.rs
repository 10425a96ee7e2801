//! The jobs that run on one replica only (see [`eai_store::lease`]): each loop asks its [`Lease`] before it
//! works, and the lease's holder shows in `/metrics` as `eai_leader{task}` = 1. With the embedded SQLite store
//! the one process always leads.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use eai_engine::time::Timestamp;
use eai_store::lease::LeaderJob;
use eai_store::Store;

use crate::clock::Clock;
use crate::metrics::Metrics;

/// This process among the replicas, in logs and audit events: `<host>/<pid>` (`EAI_INSTANCE` overrides it).
pub fn instance() -> &'static str {
    static INSTANCE: OnceLock<String> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        if let Some(i) = std::env::var("EAI_INSTANCE")
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
        {
            return i;
        }
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{host}/{}", std::process::id())
    })
}

/// One job's lease, as seen by this process.
pub struct Lease {
    store: Arc<dyn Store>,
    job: LeaderJob,
    metrics: Arc<Metrics>,
    leading: bool,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("job", &self.job)
            .field("leading", &self.leading)
            .finish_non_exhaustive()
    }
}

impl Lease {
    pub fn new(store: Arc<dyn Store>, job: LeaderJob, metrics: Arc<Metrics>) -> Lease {
        metrics.jobs.set_leader(job, false);
        Lease {
            store,
            job,
            metrics,
            leading: false,
        }
    }

    /// Takes or keeps the lease: true when this process runs the job now. A failure to ask counts as not
    /// leading (the job waits; another replica, or this one later, takes over).
    pub async fn check(&mut self) -> bool {
        let now = match self.store.try_lead(self.job).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(job = %self.job, error = %e, "cannot take or keep the job's lease; not running it");
                false
            }
        };
        if now != self.leading {
            if now {
                tracing::info!(job = %self.job, instance = instance(), "this replica now runs the job");
            } else {
                tracing::warn!(job = %self.job, instance = instance(), "this replica no longer runs the job");
            }
        }
        self.leading = now;
        self.metrics.jobs.set_leader(self.job, now);
        now
    }
}

/// How long a job waits between lease checks when it does not lead.
pub fn poll(every: Duration) -> Duration {
    every.max(Duration::from_secs(1))
}

/// Runs `work` forever on the replica that holds `lease`: every `every` while it leads, and at once when it
/// takes the lease (the last holder may have died just before its run). The lease is checked every `poll`
/// (at most `every`), so a replica takes over within `poll` of the holder's loss. Time is `clock`'s: `work`
/// gets its `now`, and the loop sleeps on it (a test's clock drives it).
pub async fn every_while_leading<F, Fut>(
    mut lease: Lease,
    clock: Arc<dyn Clock>,
    every: Duration,
    poll: Duration,
    mut work: F,
) where
    F: FnMut(Timestamp) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let poll = self::poll(poll).min(every);
    let mut last_run: Option<Duration> = None;
    loop {
        if !lease.check().await {
            last_run = None;
        } else if last_run.is_none_or(|t| clock.elapsed().saturating_sub(t) >= every) {
            last_run = Some(clock.elapsed());
            work(clock.now()).await;
        }
        clock.sleep(poll).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::JobMetrics;
    use prometheus_client::registry::Registry;

    #[test]
    fn renders_the_leader_and_the_batch() {
        let m = JobMetrics::default();
        m.set_leader(LeaderJob::AllocationBatch, true);
        m.set_leader(LeaderJob::Pruner, false);
        m.batch_ran(true, Duration::from_millis(1500), 1_790_000_000);
        m.batch_ran(false, Duration::from_millis(20), 1_790_000_100);
        let mut r = Registry::default();
        m.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap_or_default();
        assert!(
            out.contains("eai_leader{task=\"allocation_batch\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("eai_leader{task=\"pruner\"} 0\n"), "{out}");
        // A task this process never asked about shows no series (not a 1).
        assert!(!out.contains("task=\"replicator\""), "{out}");
        assert!(
            out.contains("eai_batch_runs_total{outcome=\"success\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("eai_batch_runs_total{outcome=\"failure\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("eai_batch_last_success_timestamp_seconds 1790000000\n"),
            "{out}"
        );
        assert!(
            out.contains("eai_batch_last_duration_seconds 0.02\n"),
            "{out}"
        );
    }
}

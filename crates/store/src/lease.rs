//! One of each background job across replicas. With several `serve` processes on one PostgreSQL database, the
//! allocation batch, the raw-sample pruner, the ClickHouse replicator and the budget chores must each run on
//! exactly one of them. Each job is a lease: a session-level PostgreSQL advisory lock held on a connection of
//! its own, so that the lock goes when its holder goes (a process killed closes its socket at once; a host that
//! vanishes is noticed by TCP keepalives within half a minute). The embedded SQLite store is one process per
//! file: it always leads.
//!
//! Safety does not rest on the lease alone: every job writes through the database and is idempotent (the
//! batch's event ids derive from their keys, the pruner deletes what is past a horizon, the replica dedups on
//! its keys), so the short overlap a partition can cause repeats work and never doubles a figure.

use std::fmt;

/// A job that runs on one replica only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaderJob {
    /// The hourly allocation batch (`gpu_local` events).
    AllocationBatch,
    /// Deletion of raw samples past their retention.
    Pruner,
    /// Delivery of the outbox to the ClickHouse replica.
    Replicator,
    /// Budget thresholds, expired holds and webhook deliveries.
    BudgetChores,
    /// Spend anomalies: detection and webhook deliveries.
    Anomalies,
}

impl LeaderJob {
    pub const ALL: [LeaderJob; 5] = [
        LeaderJob::AllocationBatch,
        LeaderJob::Pruner,
        LeaderJob::Replicator,
        LeaderJob::BudgetChores,
        LeaderJob::Anomalies,
    ];

    /// The job's name in logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaderJob::AllocationBatch => "allocation_batch",
            LeaderJob::Pruner => "pruner",
            LeaderJob::Replicator => "replicator",
            LeaderJob::BudgetChores => "budget_chores",
            LeaderJob::Anomalies => "anomalies",
        }
    }

    /// The second key of the job's advisory lock (the first is [`LOCK_CLASS`]).
    pub fn lock_key(self) -> i32 {
        match self {
            LeaderJob::AllocationBatch => 1,
            LeaderJob::Pruner => 2,
            LeaderJob::Replicator => 3,
            LeaderJob::BudgetChores => 4,
            LeaderJob::Anomalies => 5,
        }
    }
}

impl fmt::Display for LeaderJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first key of every eai-gpu advisory lock taken as a lease: `EAIL` in ASCII. Advisory locks are per
/// database, so two eai-gpu databases on one server never share a lease.
pub const LOCK_CLASS: i32 = 0x4541_494C;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_job_has_its_own_lock_and_name() {
        let keys: std::collections::BTreeSet<_> =
            LeaderJob::ALL.iter().map(|j| j.lock_key()).collect();
        let names: std::collections::BTreeSet<_> =
            LeaderJob::ALL.iter().map(|j| j.as_str()).collect();
        assert_eq!(keys.len(), LeaderJob::ALL.len());
        assert_eq!(names.len(), LeaderJob::ALL.len());
    }
}

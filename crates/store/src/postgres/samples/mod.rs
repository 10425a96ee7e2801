//! GPU samples in PostgreSQL: raw rows, and hourly rollups and gaps kept up to date in the ingest transaction by
//! the shared algorithm of [`crate::rollups`] (this module only reads what it asks for and writes what it plans).
//!
//! A batch costs a fixed number of round trips whatever its size: the GPUs are interned and locked (transaction
//! advisory locks keyed by GPU id, in ascending order: concurrent batches of one GPU run one after the other), the latest stored sample
//! of each GPU and the stored neighbours of late samples are read with one statement each, and rows, series,
//! rollup deltas and gaps are written as multi-row statements over `unnest` arrays (rows with a plain `INSERT`: they
//! are new by construction, and the primary key on `(gpu, end)` would refuse, and roll back, one that is not). Only
//! dirty buckets (late samples) cost statements of their own. Everything runs on the platform path: samples of
//! shared deployments belong to no tenant. Last, the batch's group rollups are brought up to date
//! ([`super::derived::write_groups`]: the fast path's deltas added, the groups of recomputed GPU-hours rebuilt).

use crate::postgres::PgDb;
use crate::roles::SampleStore;
use crate::Result;
use crate::{AuditDraft, DeploymentSeen, IngestOutcome, LatestSamples, NodeSeen, Scope, UsageRead};
use async_trait::async_trait;
use eai_engine::domain::Sample;
use eai_engine::gpu_usage::GpuUsage;
use eai_engine::shares::EqualShares;
use eai_engine::time::Timestamp;
use std::sync::atomic::Ordering;

/// Why the statements below join the way they do. Row level security makes the planner believe that few rows
/// of a tenant table are visible: the policies compare columns with `current_setting(…)`, which it cannot
/// evaluate at plan time, so it guesses a fraction of a percent. Joined with a batch's keys (`unnest` of an
/// array) it then picks plans that are cheap for a few rows and ruinous for many: a hash join over a sequential
/// scan of all of `eai.rollups` (measured: 80 ms per 1,000-GPU batch with 72 hours stored, growing with the
/// table), a sequential scan of `eai.gpus` or `eai.series` repeated for every sample read (100 ms per batch;
/// 12 ms per GPU when an exact hour is read). Per-key lookups are therefore written as `LATERAL` subqueries
/// that stay index probes whatever the estimates (`OFFSET 0` keeps the planner from flattening them back into
/// a join), and a GPU's uuid and a sample's series are fetched per row the same way.
///
/// The columns [`sample_of`] reads, from `s` (a sample row) with [`sample_joins`].
macro_rules! sample_only_cols {
    () => {
        "s.gpu_id, g.uuid, s.end_ms, s.window_ms, s.util_e6, s.mem_e10, s.power_e6, s.storage_e6, s.fraction_e6, \
         se.node, se.model, se.namespace, se.pod, se.deployment_id, se.tenant_id, se.share "
    };
}

/// The series (`se`) and GPU (`g`) of each sample row `s`, one index probe each.
macro_rules! sample_joins {
    () => {
        " CROSS JOIN LATERAL (SELECT * FROM eai.series y WHERE y.id = s.series_id OFFSET 0) se \
         CROSS JOIN LATERAL (SELECT uuid FROM eai.gpus y WHERE y.id = s.gpu_id OFFSET 0) g "
    };
}

/// [`sample_only_cols`] and the joins they read from.
macro_rules! sample_cols {
    () => {
        concat!(
            sample_only_cols!(),
            "FROM eai.gpu_samples s",
            sample_joins!()
        )
    };
}

/// The columns [`rollup_of`] reads, from `r` (a rollup row) with [`rollup_gpu`].
macro_rules! rollup_only_cols {
    () => {
        "g.uuid, r.bucket_ms, r.deployment_id, r.tenant_id, r.model, r.first_window_start_ms, \
         r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, r.busy_gpu_seconds, \
         r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds, \
         se.namespace, se.pod, se.node, se.share "
    };
}

/// The GPU (`g`) and the placement (`se`: the series, none for 0) of each rollup row `r`, one index probe each.
macro_rules! rollup_gpu {
    () => {
        " CROSS JOIN LATERAL (SELECT uuid FROM eai.gpus y WHERE y.id = r.gpu_id OFFSET 0) g \
         LEFT JOIN LATERAL (SELECT namespace, pod, node, share FROM eai.series z WHERE z.id = r.series_id OFFSET 0) se \
         ON true "
    };
}

/// The series id of a rollup key `k` (columns deployment_id, tenant_id, model, namespace, pod, node, share): 0 for no
/// placement (a row written before placements were kept), null when no series has it.
macro_rules! series_of_key {
    () => {
        "(CASE WHEN k.pod IS NULL THEN 0::bigint ELSE (SELECT z.id FROM eai.series z \
         WHERE z.deployment_id = k.deployment_id AND z.tenant_id = k.tenant_id AND z.model = k.model \
         AND z.namespace = k.namespace AND z.pod = k.pod AND z.node = k.node AND z.share = k.share) END)"
    };
}

/// [`rollup_only_cols`] and the joins they read from.
macro_rules! rollup_cols {
    () => {
        concat!(rollup_only_cols!(), "FROM eai.rollups r", rollup_gpu!())
    };
}

pub(super) mod ingest;
mod meta;
mod reads;
mod retention;
mod rows;
mod sql;

pub use ingest::insert;
pub(super) use meta::{meta_get, meta_set};
pub use reads::{
    compact_change_counts, deployments_seen, equal_shares, gpu_usage, latest_samples,
    nodes_last_seen, replica_extent, replica_rows, usage_for,
};
pub use retention::prune;
pub(super) use rows::{group_key, record_cuts, rollup_of};

#[async_trait]
impl SampleStore for PgDb {
    async fn insert_samples(
        &self,
        samples: Vec<Sample>,
        audit: &AuditDraft,
    ) -> Result<IngestOutcome> {
        let mut c = self.conn().await?;
        insert(c.conn()?, &self.inner.cfg, &samples, audit).await
    }

    async fn allocation_usage(
        &self,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<UsageRead> {
        let mut c = self.conn().await?;
        let (read, log_rows) = usage_for(
            c.conn()?,
            &self.inner.cfg,
            &self.inner.cache,
            from,
            to,
            exact_hours,
        )
        .await?;
        drop(c);
        if log_rows > crate::cache::read_cache::COMPACT_AFTER
            && !self.inner.compacting.swap(true, Ordering::AcqRel)
        {
            // In the background: the read is answered; a failed compaction is retried by a later read.
            let store = self.clone();
            tokio::spawn(async move {
                let compact = async {
                    let mut c = store.conn().await?;
                    compact_change_counts(c.conn()?).await
                };
                if let Err(e) = compact.await {
                    tracing::warn!(error = %e, "compacting the change counts failed; a later read retries");
                }
                store.inner.compacting.store(false, Ordering::Release);
            });
        }
        Ok(read)
    }

    async fn prune_raw_samples(&self, before: Timestamp) -> Result<u64> {
        let mut c = self.conn().await?;
        prune(c.conn()?, &self.inner.cfg, before).await
    }

    async fn deployments_seen(&self) -> Result<Vec<DeploymentSeen>> {
        let mut c = self.conn().await?;
        deployments_seen(c.conn()?).await
    }

    async fn gpu_usage(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<GpuUsage> {
        let mut c = self.conn().await?;
        gpu_usage(c.conn()?, &self.inner.cfg, scope, from, to, exact_hours).await
    }

    async fn latest_samples(&self, since: Timestamp, limit: u64) -> Result<LatestSamples> {
        let mut c = self.conn().await?;
        latest_samples(c.conn()?, since.0, limit).await
    }

    async fn nodes_last_seen(&self, since: Timestamp) -> Result<Vec<NodeSeen>> {
        let mut c = self.conn().await?;
        nodes_last_seen(c.conn()?, since.0).await
    }

    async fn equal_shares(&self, from: Timestamp, to: Timestamp) -> Result<Vec<EqualShares>> {
        let mut c = self.conn().await?;
        equal_shares(c.conn()?, from.0, to.0).await
    }
}

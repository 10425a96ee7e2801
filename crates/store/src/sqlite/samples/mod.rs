//! GPU samples in SQLite: compact raw rows, and hourly rollups and gaps kept up to date in the ingest transaction,
//! so that an allocation reads GPU-hours, never raw rows.
//!
//! The maintenance algorithm (fast path for appended samples, dirty GPU-hours recomputed from raw samples for
//! late ones, frozen hours after pruning) is [`crate::rollups`], and the steps of a batch are
//! [`crate::plan::ingest`], shared with PostgreSQL: this module reads what they ask for and writes what they plan,
//! all in one `IMMEDIATE` transaction.

use crate::roles::SampleStore;
use crate::sqlite::SqliteDb;
use crate::Result;
use crate::{AuditDraft, DeploymentSeen, IngestOutcome, LatestSamples, NodeSeen, Scope, UsageRead};
use async_trait::async_trait;
use eai_engine::domain::Sample;
use eai_engine::gpu_usage::GpuUsage;
use eai_engine::shares::EqualShares;
use eai_engine::time::Timestamp;
use std::sync::Arc;

mod groups;
mod ingest;
mod meta;
mod reads;
mod retention;
mod rows;

pub use groups::rebuild_all_groups;
pub use ingest::insert;
pub use meta::{equal_shares, meta_get, meta_set, record_cuts};
pub use reads::{
    deployments_seen, gpu_usage, latest_samples, nodes_last_seen, replica_extent, replica_rows,
    usage_for,
};
pub use retention::prune;

#[async_trait]
impl SampleStore for SqliteDb {
    async fn insert_samples(
        &self,
        batch: Vec<Sample>,
        audit: &AuditDraft,
    ) -> Result<IngestOutcome> {
        let audit = audit.clone();
        self.write(move |c, cfg| insert(c, cfg, &batch, &audit))
            .await
    }

    async fn allocation_usage(
        &self,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<UsageRead> {
        let exact = exact_hours.to_vec();
        let cache = Arc::clone(&self.inner.cache);
        self.read(move |c, cfg| usage_for(c, cfg, &cache, from, to, &exact))
            .await
    }

    async fn equal_shares(&self, from: Timestamp, to: Timestamp) -> Result<Vec<EqualShares>> {
        self.read(move |c, _| equal_shares(c, from.0, to.0)).await
    }

    async fn prune_raw_samples(&self, before: Timestamp) -> Result<u64> {
        self.write(move |c, cfg| prune(c, cfg, before)).await
    }

    async fn deployments_seen(&self) -> Result<Vec<DeploymentSeen>> {
        self.read(|c, _| deployments_seen(c)).await
    }

    async fn gpu_usage(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<GpuUsage> {
        let exact = exact_hours.to_vec();
        let cache = self.inner.usage_cache.clone();
        self.read(move |c, cfg| gpu_usage(c, cfg, &cache, scope, from, to, &exact))
            .await
    }

    async fn latest_samples(&self, since: Timestamp, limit: u64) -> Result<LatestSamples> {
        self.read(move |c, _| latest_samples(c, since.0, limit))
            .await
    }

    async fn nodes_last_seen(&self, since: Timestamp) -> Result<Vec<NodeSeen>> {
        self.read(move |c, _| nodes_last_seen(c, since.0)).await
    }
}

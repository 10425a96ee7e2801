//! The recommendations of a period (SPEC §13, `eai_engine::recommend`): the per-GPU usage `scope` may see (a
//! tenant: its dedicated deployments', as `GET /v1/finops/gpu/usage` shows it), read from the [`Source`] as the
//! breakdown reads it (from the replica: its per-GPU rollups, the exact hours from the primary), and the
//! policies (always from the primary), through the engine on a blocking thread.

use eai_engine::recommend::{Recommendation, Thresholds};
use eai_engine::time::Period;
use eai_store::StoreError;

use crate::allocation::{exact_hours, gpu_usage_from_replica, AllocationStore, Source};

/// The recommendations of `period` that `scope` may see, at the thresholds `t`.
pub async fn recommendations_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    scope: eai_store::Scope,
    t: Thresholds,
) -> Result<Vec<Recommendation>, StoreError> {
    let policies = store.policies().await?;
    let exact = exact_hours(&policies, period);
    let usage = match source {
        Source::Primary => {
            store
                .gpu_usage(scope, period.from, period.to, &exact)
                .await?
        }
        Source::ClickHouse(ch) => gpu_usage_from_replica(ch, store, scope, period, &exact).await?,
    };
    let span = tracing::info_span!("recommendations.compute", rows = usage.len());
    tokio::task::spawn_blocking(move || {
        let _in = span.enter();
        eai_engine::recommend::recommend(period, &policies, &usage, &t)
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the recommendations task failed: {e}")))
}

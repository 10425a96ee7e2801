//! The allocation of a period, computed from a store: policies, the rollups (raw cells for the hours in
//! which a policy starts or ends off the hour), the gaps and every tenant's usage, through the engine. Used by
//! `GET /v1/finops/gpu/allocation` and by the allocation batch.

use std::collections::BTreeSet;

use eai_engine::allocate::{allocate, AllocationConfig, AllocationInput, Period};
use eai_engine::domain::Policy;
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_store::{Scope, Store, StoreError};

const HOUR_MS: i64 = 3_600_000;

/// The hours of the period in which a policy starts or ends off the hour: those are read as raw cells so
/// that each window is priced by the policy in effect when it starts.
pub fn exact_hours(policies: &[Policy], period: Period) -> Vec<Timestamp> {
    let mut hours = BTreeSet::new();
    for p in policies {
        for t in [Some(p.spec.effective_from), p.spec.effective_to]
            .into_iter()
            .flatten()
        {
            if t.0.rem_euclid(HOUR_MS) != 0 {
                let h = t.floor_to(HOUR_MS);
                if period.contains(h) {
                    hours.insert(h);
                }
            }
        }
    }
    hours.into_iter().collect()
}

/// The whole allocation of `period` (every tenant; scope it before showing it to a tenant).
pub async fn compute(
    store: &dyn Store,
    period: Period,
    config: AllocationConfig,
) -> Result<Allocation, StoreError> {
    let policies = store.policies().await?;
    let exact = exact_hours(&policies, period);
    let read = store.usage_for(period.from, period.to, &exact).await?;
    // The split of a shared deployment weighs every tenant's usage.
    let usage = store
        .usage_events(Scope::Platform, period.from, period.to)
        .await?;
    // The engine is CPU work (a month of a fleet): off the async workers.
    tokio::task::spawn_blocking(move || {
        allocate(&AllocationInput {
            period,
            rollups: &read.rollups,
            usage: &usage,
            policies: &policies,
            gaps: &read.gaps,
            config,
        })
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the allocation task failed: {e}")))
}

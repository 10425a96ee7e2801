//! Cost over time (`GET /v1/finops/gpu/allocation/series`): a period cut into steps, each step allocated on
//! its own and apportioned so that the steps sum to the period's allocation exactly
//! ([`eai_engine::allocation_series`]), with the tokens of each step.

use std::collections::BTreeMap;

use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::allocation_series::{apportion_steps, bounds, Step, StepRow};
use eai_engine::domain::{TenantId, UsageEvent, VLLM_SOURCE};
use eai_engine::report::Allocation;
use eai_engine::time::Timestamp;
use eai_engine::tokens::distinct_events;
use eai_store::{Scope, StoreError};
use rust_decimal::Decimal;

use crate::allocation::{allocate_inputs, cut, read_inputs, AllocationStore, Source};

/// A deployment's tokens in one step.
#[derive(Debug, Default, Clone, Copy)]
pub struct StepTokens {
    pub input: Decimal,
    pub output: Decimal,
}

/// A period's series: each step's bounds, its rows (per deployment and currency) and its tokens per deployment.
#[derive(Debug, Clone)]
pub struct Series {
    pub bounds: Vec<(Timestamp, Timestamp)>,
    pub rows: Vec<Vec<StepRow>>,
    pub tokens: Vec<BTreeMap<String, StepTokens>>,
}

/// The steps of `period`, as [`series_of`] will cut it (for the caller to bound their number first).
pub fn steps_of(period: Period, step: Step) -> Vec<(Timestamp, Timestamp)> {
    bounds(period.from, period.to, step)
}

/// A period's allocation and each step's own (the weights [`apportion_steps`] splits the period's figures by),
/// from inputs read once.
#[derive(Debug, Clone)]
pub struct StepAllocations {
    pub bounds: Vec<(Timestamp, Timestamp)>,
    pub whole: Allocation,
    pub parts: Vec<Allocation>,
}

/// Reads the inputs of `period` once and allocates the whole period and each of its `step`s (cut from them).
pub async fn step_allocations(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    step: Step,
) -> Result<StepAllocations, StoreError> {
    let bounds = steps_of(period, step);
    let inputs = read_inputs(source, store, period).await?;
    let b = bounds.clone();
    let (whole, parts) = tokio::task::spawn_blocking(move || {
        let whole = allocate_inputs(&inputs, period, config);
        let parts: Vec<Allocation> = b
            .iter()
            .map(|(f, t)| {
                let p = Period { from: *f, to: *t };
                allocate_inputs(&cut(&inputs, *f, *t), p, config)
            })
            .collect();
        (whole, parts)
    })
    .await
    .map_err(|e| StoreError::Internal(format!("the series task failed: {e}")))?;
    Ok(StepAllocations {
        bounds,
        whole,
        parts,
    })
}

/// The series of `period` in `step`s as `scope` may see it: a tenant, its allocated share and its tokens.
pub async fn series_of(
    source: &Source,
    store: &(impl AllocationStore + ?Sized),
    period: Period,
    config: AllocationConfig,
    step: Step,
    scope: Scope,
) -> Result<Series, StoreError> {
    let tenant = match scope {
        Scope::Platform => None,
        Scope::Tenant(t) => Some(t),
    };
    let steps = step_allocations(source, store, period, config, step).await?;
    let events = store.usage_events(scope, period.from, period.to).await?;
    let tokens = step_tokens(&events, tenant, &steps.bounds);
    let StepAllocations {
        bounds,
        whole,
        parts,
    } = steps;
    let rows = tokio::task::spawn_blocking(move || apportion_steps(&whole, &parts, tenant))
        .await
        .map_err(|e| StoreError::Internal(format!("the series task failed: {e}")))?;
    Ok(Series {
        bounds,
        rows,
        tokens,
    })
}

/// Tokens per deployment of one step: a deployment's vLLM counters where it has any in the period, else its
/// tenants' events (a tenant's readers: their own events).
fn step_tokens(
    events: &[UsageEvent],
    tenant: Option<TenantId>,
    bounds: &[(Timestamp, Timestamp)],
) -> Vec<BTreeMap<String, StepTokens>> {
    let measured: std::collections::HashSet<&str> = events
        .iter()
        .filter(|e| e.source == VLLM_SOURCE)
        .filter_map(|e| e.deployment_id.as_deref())
        .collect();
    let mut out = vec![BTreeMap::<String, StepTokens>::new(); bounds.len()];
    for e in distinct_events(events) {
        let Some(d) = e.deployment_id.as_deref() else {
            continue;
        };
        let counts = match tenant {
            Some(t) => e.tenant_id == t && eai_engine::domain::weighs_split(&e.source),
            None if measured.contains(d) => e.source == VLLM_SOURCE,
            None => eai_engine::domain::weighs_split(&e.source),
        };
        if !counts {
            continue;
        }
        let i = bounds.partition_point(|(_, to)| *to <= e.occurred_at);
        if let Some(step) = out.get_mut(i).filter(|_| i < bounds.len()) {
            let s = step.entry(d.to_string()).or_default();
            s.input += e.unit("tokens_in").unwrap_or_default();
            s.output += e.unit("tokens_out").unwrap_or_default();
        }
    }
    out
}

//! What a tenant-scoped reader may see of an allocation: its own items, its own tenant row, and of each
//! deployment only its own share. Another tenant's id, usage or cost never appears, nor can it be derived
//! (a shared deployment's total cost and idle part are withheld).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::TenantId;
use crate::report::{Allocation, DailyCost, DeploymentRow, Finding};

/// The allocation as tenant `t` sees it.
pub fn scoped_to(a: &Allocation, t: TenantId) -> Allocation {
    let items: Vec<_> = a
        .items
        .iter()
        .filter(|i| i.tenant_id == t)
        .cloned()
        .collect();
    let mut mine: BTreeMap<(&str, &str), (Decimal, Decimal, Decimal, Decimal)> = BTreeMap::new();
    for i in &items {
        let e = mine
            .entry((i.deployment_id.as_str(), i.allocated.currency.as_str()))
            .or_default();
        e.0 += i.allocated.amount;
        e.1 += i.gpu_seconds;
        e.2 += i.gpu_memory_gb_seconds;
        e.3 += i.energy_wh;
    }
    let deployments: Vec<DeploymentRow> = a
        .deployments
        .iter()
        .filter_map(|d| {
            let cur = d.currency?;
            let (amount, gs, mem, wh) = mine.get(&(d.deployment_id.as_str(), cur.as_str()))?;
            Some(DeploymentRow {
                deployment_id: d.deployment_id.clone(),
                currency: Some(cur),
                dedicated: d.dedicated,
                // Sample counts and GPUs describe the deployment, not other tenants' usage.
                samples: d.samples,
                estimated_samples: d.estimated_samples,
                gpus: d.gpus,
                gpu_seconds: *gs,
                estimated_gpu_seconds: Decimal::ZERO,
                busy_gpu_seconds: if d.gpu_seconds.is_zero() {
                    Decimal::ZERO
                } else {
                    d.busy_gpu_seconds * *gs / d.gpu_seconds
                },
                gpu_memory_gb_seconds: *mem,
                energy_wh: *wh,
                cost: *amount,
                allocated: *amount,
                // Zero to the cent, as every amount is written.
                unallocated: cur.round(Decimal::ZERO),
                unpriced_samples: 0,
                unpriced_gpu_seconds: Decimal::ZERO,
            })
        })
        .collect();
    let total: Decimal = deployments.iter().map(|d| d.cost).sum();
    let tenants = a
        .tenants
        .iter()
        .filter(|r| r.tenant_id == t)
        .map(|r| {
            let mut r = r.clone();
            r.share = if total.is_zero() {
                Decimal::ZERO
            } else {
                Decimal::ONE
            };
            r
        })
        .collect();
    // Daily cost of a deployment is the tenant's only for a deployment it owns.
    let owned: Vec<&str> = deployments
        .iter()
        .filter(|d| d.dedicated)
        .map(|d| d.deployment_id.as_str())
        .collect();
    let daily: Vec<DailyCost> = a
        .daily
        .iter()
        .filter(|d| owned.contains(&d.deployment_id.as_str()))
        .cloned()
        .collect();
    let visible: Vec<&str> = deployments
        .iter()
        .map(|d| d.deployment_id.as_str())
        .collect();
    let findings = a
        .findings
        .iter()
        .filter(|f| match f {
            // What a tenant's own cost rests on: unpriced time, equal shares of shared GPUs.
            Finding::Unpriced { deployment_id, .. }
            | Finding::EqualGpuShares { deployment_id, .. } => {
                visible.contains(&deployment_id.as_str())
            }
            _ => false,
        })
        .cloned()
        .collect();
    let gaps = a
        .gaps
        .iter()
        .filter(|g| visible.contains(&g.deployment_id.as_str()))
        .cloned()
        .collect();
    let day_items = a
        .day_items
        .iter()
        .filter(|d| d.tenant_id == Some(t))
        .cloned()
        .collect();
    Allocation {
        from: a.from,
        to: a.to,
        items,
        deployments,
        tenants,
        daily,
        gaps,
        findings,
        day_items,
    }
}

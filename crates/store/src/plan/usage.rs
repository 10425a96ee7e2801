//! An upsert of usage events, planned once for both backends without I/O: which events a batch writes, in which
//! order and under which scope, what the stored events it replaces change in the rows derived from them (the
//! claims of [`crate::rollups::groups`], the spend of [`crate::budgets`]), and its replica rows. The rules of
//! the events themselves (their stored body, which replacement is allowed) are [`crate::records`].

use std::collections::BTreeMap;

use eai_engine::allocate::claim_of;
use eai_engine::domain::{TenantId, UsageEvent, VLLM_SOURCE};
use uuid::Uuid;

use crate::budgets::SpendDeltas;
use crate::outbox::OutboxRows;
use crate::records::{check_replace, check_tenant_id};
use crate::rollups::groups::ClaimDeltas;
use crate::{Result, Scope, StoreError};

/// What an upsert of usage events writes, planned without I/O: the batch's last event of each `(tenant_id,
/// event_id)`, grouped by tenant and in id order (two batches that share events lock and write them in the same
/// order); each tenant's stored events it replaces are read by the backend and turned into the changes of the
/// claims and the spend by [`UsagePlan::replacing`].
#[derive(Debug, Default)]
pub struct UsagePlan<'a> {
    pub tenants: BTreeMap<TenantId, Vec<&'a UsageEvent>>,
}

/// The scope that writes a tenant group of a [`UsagePlan`]: the tenant's, or the platform's for the rows of no
/// tenant (a vLLM server's counters).
pub fn writer_scope(t: TenantId) -> Scope {
    if t.is_platform() {
        Scope::Platform
    } else {
        Scope::Tenant(t)
    }
}

/// The derived rows a tenant group of a [`UsagePlan`] changes.
#[derive(Debug, Default)]
pub struct UsageChanges {
    pub claims: ClaimDeltas,
    pub spend: SpendDeltas,
}

impl<'a> UsagePlan<'a> {
    /// Refuses the reserved platform tenant (but on a vLLM server's counters, which belong to no tenant); a
    /// re-send inside the batch: the last one wins.
    pub fn new(events: &'a [UsageEvent]) -> Result<Self> {
        let mut last: BTreeMap<(TenantId, Uuid), &'a UsageEvent> = BTreeMap::new();
        for e in events {
            if e.source == VLLM_SOURCE {
                if !e.tenant_id.is_platform() {
                    return Err(StoreError::conflict(
                        "tenant_id",
                        "a vLLM server's counters belong to no tenant",
                    ));
                }
            } else {
                check_tenant_id(e.tenant_id)?;
            }
            last.insert((e.tenant_id, e.event_id), e);
        }
        let mut tenants: BTreeMap<TenantId, Vec<&'a UsageEvent>> = BTreeMap::new();
        for ((t, _), e) in last {
            tenants.entry(t).or_default().push(e);
        }
        Ok(UsagePlan { tenants })
    }

    /// The changes of one tenant's group, given the stored events it replaces (any order): each replacement
    /// allowed ([`check_replace`]), the old events' claims and spend taken out, the new ones' added.
    pub fn replacing(group: &[&UsageEvent], replaced: &[UsageEvent]) -> Result<UsageChanges> {
        let news: BTreeMap<Uuid, &UsageEvent> = group.iter().map(|e| (e.event_id, *e)).collect();
        let mut c = UsageChanges::default();
        for old in replaced {
            let new = news.get(&old.event_id).ok_or_else(|| {
                StoreError::Internal(format!(
                    "usage upsert: the stored event {} is not of the batch",
                    old.event_id.hyphenated()
                ))
            })?;
            check_replace(old, new)?;
            c.claims.remove(claim_of(old).as_ref())?;
            c.spend.remove(old);
        }
        for e in group {
            c.claims.add(claim_of(e).as_ref())?;
            c.spend.add(e);
        }
        Ok(c)
    }

    /// The replica rows of the batch: its events as written.
    pub fn outbox(&self) -> OutboxRows {
        let mut rows = OutboxRows::default();
        for e in self.tenants.values().flatten() {
            rows.event(e);
        }
        rows
    }
}

//! Usage as the allocation weighs it: the claim of an event on a shared deployment's hour, claims summed as a
//! store keeps them, gathered per deployment for the settlement, and the split of one bucket between them.

use std::collections::{BTreeMap, HashMap};

use rust_decimal::Decimal;

use super::Period;
use crate::domain::{weighs_split, TenantId, UsageEvent};
use crate::time::Timestamp;

/// What usage events claim on a shared deployment in one hour, per tenant. The split of a shared bucket weighs
/// GPU-seconds claimed first, then tokens (see `split`); an hour's claims of a tenant add up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageClaim {
    pub deployment_id: String,
    pub tenant_id: TenantId,
    /// The hour (UTC) in which the events occurred.
    pub bucket_start: Timestamp,
    /// GPU-seconds of the events that carry a `gpu_seconds` unit.
    pub gpu_seconds: Decimal,
    /// Tokens (`tokens_in + tokens_out`) of the events that carry no `gpu_seconds` unit.
    pub tokens: Decimal,
}

impl UsageClaim {
    /// The order claims are read and summed in: hour, deployment, tenant (the primary key of the stores' claim
    /// tables, so that a period's range scan is already in order).
    pub fn read_order(&self) -> (Timestamp, &str, TenantId) {
        (self.bucket_start, &self.deployment_id, self.tenant_id)
    }
}

/// Hours: claims are kept per hour, allocation buckets are whole hours.
pub const CLAIM_BUCKET_MS: i64 = 3_600_000;

/// The claim one event makes, or `None` when it weighs no split: no deployment, written by the platform
/// (the allocation itself, a reservation) or a vLLM server's own counters. Summing the claims of distinct events per (deployment, tenant, hour) gives what [`allocate`](super::allocate) reads
/// from `usage` (where an event re-sent with the same id replaces the earlier one).
pub fn claim_of(e: &UsageEvent) -> Option<UsageClaim> {
    let (deployment_id, claim) = event_claim(e)?;
    Some(UsageClaim {
        deployment_id: deployment_id.to_string(),
        tenant_id: e.tenant_id,
        bucket_start: e.occurred_at.floor_to(CLAIM_BUCKET_MS),
        gpu_seconds: claim.gpu_seconds,
        tokens: claim.tokens,
    })
}

/// The deployment and claim of [`claim_of`], borrowed: the allocation reads every event, and copying each
/// one's deployment id would cost an allocation per event.
pub(super) fn event_claim(e: &UsageEvent) -> Option<(&str, Claim)> {
    let deployment_id = e.deployment_id.as_deref()?;
    if !weighs_split(&e.source) {
        return None;
    }
    let claim = match e.unit("gpu_seconds") {
        Some(gpu_seconds) => Claim {
            gpu_seconds,
            tokens: Decimal::ZERO,
        },
        None => Claim {
            gpu_seconds: Decimal::ZERO,
            tokens: e.tokens(),
        },
    };
    Some((deployment_id, claim))
}

/// The claims of events summed per (deployment, tenant, hour), an event re-sent with the same id counted once
/// (the last given wins): what a store keeps, computed at once. In [`UsageClaim::read_order`].
pub fn sum_claims(events: &[UsageEvent]) -> Vec<UsageClaim> {
    let mut last: HashMap<uuid::Uuid, &UsageEvent> = HashMap::with_capacity(events.len());
    for e in events {
        last.insert(e.event_id, e);
    }
    let mut sums: BTreeMap<(Timestamp, String, TenantId), UsageClaim> = BTreeMap::new();
    for c in last.values().filter_map(|e| claim_of(e)) {
        match sums.get_mut(&(c.bucket_start, c.deployment_id.clone(), c.tenant_id)) {
            Some(s) => {
                s.gpu_seconds += c.gpu_seconds;
                s.tokens += c.tokens;
            }
            None => {
                sums.insert((c.bucket_start, c.deployment_id.clone(), c.tenant_id), c);
            }
        }
    }
    sums.into_values().collect()
}

/// Sorts claims by (bucket, tenant) and adds up those of the same tenant and bucket.
pub(super) fn merge_claims(
    mut evs: Vec<(usize, TenantId, Claim)>,
) -> Vec<(usize, TenantId, Claim)> {
    evs.sort_by_key(|e| (e.0, e.1));
    let mut out: Vec<(usize, TenantId, Claim)> = Vec::with_capacity(evs.len());
    for (b, t, c) in evs {
        match out.last_mut() {
            Some((lb, lt, lc)) if *lb == b && *lt == t => {
                lc.gpu_seconds += c.gpu_seconds;
                lc.tokens += c.tokens;
            }
            _ => out.push((b, t, c)),
        }
    }
    out
}

/// Per tenant: GPU-seconds claimed by events that carry them, and tokens of those that do not.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Claim {
    pub(super) gpu_seconds: Decimal,
    pub(super) tokens: Decimal,
}

/// Splits a bucket's measured GPU-seconds between tenants. Claims in GPU-seconds come first (scaled down if
/// they exceed what was measured); tokens then weigh what is left. Writes each tenant's fraction of the bucket
/// (they sum to at most 1) to `fractions`, and returns what was claimed if the claims were scaled.
pub(super) fn split(
    claims: &[(usize, TenantId, Claim)],
    measured: Decimal,
    fractions: &mut Vec<(TenantId, Decimal)>,
) -> Option<Decimal> {
    let claimed: Decimal = claims.iter().map(|(_, _, c)| c.gpu_seconds).sum();
    let tokens: Decimal = claims.iter().map(|(_, _, c)| c.tokens).sum();
    let over = claimed > measured;
    // Fraction of the bucket left to tokens after the GPU-second claims (all of it, exactly, when none were
    // claimed: `measured / measured` would only spend a division to say so).
    let token_part = if over || tokens.is_zero() {
        Decimal::ZERO
    } else if claimed.is_zero() {
        Decimal::ONE
    } else {
        (measured - claimed) / measured
    };
    fractions.extend(
        claims
            .iter()
            .map(|(_, t, c)| {
                let mut f = if over {
                    c.gpu_seconds / claimed
                } else if c.gpu_seconds.is_zero() {
                    Decimal::ZERO
                } else {
                    c.gpu_seconds / measured
                };
                if !token_part.is_zero() && !c.tokens.is_zero() {
                    f += if token_part == Decimal::ONE {
                        c.tokens / tokens
                    } else {
                        token_part * c.tokens / tokens
                    };
                }
                (*t, f)
            })
            .filter(|(_, f)| *f > Decimal::ZERO),
    );
    over.then_some(claimed)
}

/// Step 2: usage events deduplicated by event id (the last given wins), ours excluded, then the claims summed
/// already; those in the period, as (bucket, tenant, claim) per deployment, each in the order given.
pub(super) fn gather_claims<'a>(
    period: Period,
    bucket_ms: i64,
    usage: &'a [UsageEvent],
    claims: &'a [UsageClaim],
) -> ClaimsByDeployment<'a> {
    // Sort (id, position) pairs held inline: sorting indices through the events would chase pointers.
    let mut order: Vec<(u128, usize)> = usage
        .iter()
        .enumerate()
        .map(|(i, e)| (e.event_id.as_u128(), i))
        .collect();
    order.sort_unstable();
    let mut superseded = vec![false; usage.len()];
    for w in order.windows(2) {
        if w[0].0 == w[1].0 {
            superseded[w[0].1] = true; // re-sent later in the input: that one replaces this one
        }
    }
    let mut out = ClaimsByDeployment::default();
    let mut add = |d: &'a str, at: Timestamp, tenant: TenantId, claim: Claim| {
        if period.contains(at) {
            let bi = usize::try_from((at.0 - period.from.0) / bucket_ms).unwrap_or(0);
            out.push(d, (bi, tenant, claim));
        }
    };
    // In input order: the events' fields live on the heap in that order.
    for (e, _) in usage.iter().zip(&superseded).filter(|(_, s)| !**s) {
        if let Some((d, claim)) = event_claim(e) {
            add(d, e.occurred_at, e.tenant_id, claim);
        }
    }
    for c in claims {
        let claim = Claim {
            gpu_seconds: c.gpu_seconds,
            tokens: c.tokens,
        };
        add(&c.deployment_id, c.bucket_start, c.tenant_id, claim);
    }
    out
}

/// Claims per deployment id, each list in the order the claims were pushed.
#[derive(Debug, Default)]
pub(super) struct ClaimsByDeployment<'a> {
    pub(super) index: HashMap<&'a str, usize>,
    pub(super) lists: Vec<Vec<(usize, TenantId, Claim)>>,
    /// The deployment pushed to last: claims come grouped by deployment, so most need no look-up.
    pub(super) last: Option<(&'a str, usize)>,
}

impl<'a> ClaimsByDeployment<'a> {
    pub(super) fn push(&mut self, deployment_id: &'a str, claim: (usize, TenantId, Claim)) {
        let i = match self.last {
            Some((d, i)) if d == deployment_id => i,
            _ => {
                let next = self.lists.len();
                let i = *self.index.entry(deployment_id).or_insert(next);
                if i == next {
                    self.lists.push(Vec::new());
                }
                self.last = Some((deployment_id, i));
                i
            }
        };
        self.lists[i].push(claim);
    }

    /// The claims of a deployment, taken out.
    pub(super) fn take(&mut self, deployment_id: &str) -> Vec<(usize, TenantId, Claim)> {
        self.index
            .get(deployment_id)
            .map_or_else(Vec::new, |&i| std::mem::take(&mut self.lists[i]))
    }
}

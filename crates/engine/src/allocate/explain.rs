//! Why a deployment costs what it does: the allocation of one deployment, bucket by bucket, as the engine works
//! it out. The lines come from the very steps that make the allocation (the settling records them as it goes),
//! so that the explanation's totals are the allocation's figures by construction: per bucket what was measured
//! and estimated, each tenant's claim and the share of the bucket it gave, each pricing policy's exact cost of
//! the bucket and who it went to; then idle capacity spread (a `proportional` policy); then the one rounding of
//! each (deployment, currency) row and the largest-remainder step that gave each line its minor units.
//! The lines, and the [`Trace`] that records them, are `trace`'s; here, the explanation they make.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::claims::{gather_claims, merge_claims};
use super::parallel::accumulate_all;
use super::settle::settle_traced;
use super::trace::{BucketLine, ClaimLine, IdleSpread, Party, Rounding, RoundingLine, Trace};
use super::{AllocationInput, Ctx};
use crate::domain::{IdleCapacity, Policy, TenantId};
use crate::money::Currency;
use crate::time::Timestamp;

/// The explanation of one deployment's cost over a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub deployment_id: String,
    pub from: Timestamp,
    pub to: Timestamp,
    pub bucket_ms: i64,
    /// The policies that priced a bucket, with their rates.
    pub policies: Vec<PolicyRates>,
    /// Every bucket with GPU time or a claim, in time order (a dedicated owner's and the shared ones of the same
    /// hour apart).
    pub buckets: Vec<BucketLine>,
    /// Idle capacity spread over the deployment's tenants by a `proportional` policy.
    pub idle_spread: Vec<IdleSpread>,
    /// The one rounding of each (deployment, currency) row.
    pub rounding: Vec<Rounding>,
}

/// A policy's identity and the rates it prices with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRates {
    pub policy_id: String,
    pub name: String,
    pub currency: Currency,
    pub gpu_hourly_cost: Decimal,
    pub overhead_pct: Decimal,
    pub energy_kwh_price: Decimal,
    pub pue: Decimal,
    pub storage_gb_month_price: Decimal,
    pub idle_capacity: IdleCapacity,
}

/// Explains the cost of `deployment_id` over the input's period: the allocation of that deployment alone (a
/// deployment's figures never depend on the others'), with every step recorded. `None` when the deployment had
/// no GPU time in the period.
pub fn explain(input: &AllocationInput<'_>, deployment_id: &str) -> Option<Explanation> {
    let AllocationInput {
        period,
        rollups,
        usage,
        policies,
        claims,
        config,
        ..
    } = *input;
    let rollups: Vec<_> = rollups
        .iter()
        .filter(|r| r.key.deployment_id == deployment_id)
        .cloned()
        .collect();
    let usage: Vec<_> = usage
        .iter()
        .filter(|e| e.deployment_id.as_deref() == Some(deployment_id))
        .cloned()
        .collect();
    let claims: Vec<_> = claims
        .iter()
        .filter(|c| c.deployment_id == deployment_id)
        .cloned()
        .collect();
    let config = super::AllocationConfig {
        threads: 1,
        day_items: false,
        ..config
    };
    let ctx = Ctx::new(period, config, policies);
    let (mut deps, _) = accumulate_all(&ctx, &rollups, 1);
    let mut gathered = gather_claims(period, config.bucket_ms, &usage, &claims);
    let dep = deps.iter_mut().find(|d| d.id == deployment_id)?;
    dep.events = merge_claims(gathered.take(dep.id));
    dep.owners.sort_by_key(|o| o.0);
    dep.stats.sort_by_key(|st| st.0);
    let mut trace = Trace::default();
    settle_traced(&ctx, dep, Some(&mut trace));
    let mut used: Vec<&Policy> = Vec::new();
    for b in &trace.buckets {
        for l in &b.priced {
            if let Some(p) = policies.iter().find(|p| p.id == l.policy_id) {
                if !used.iter().any(|u| u.id == p.id) {
                    used.push(p);
                }
            }
        }
    }
    trace.buckets.sort_by_key(|b| (b.start, b.owner));
    Some(Explanation {
        deployment_id: deployment_id.to_string(),
        from: period.from,
        to: period.to,
        bucket_ms: config.bucket_ms,
        policies: used.into_iter().map(PolicyRates::of).collect(),
        buckets: trace.buckets,
        idle_spread: trace.idle_spread,
        rounding: trace.rounding,
    })
}

impl PolicyRates {
    fn of(p: &Policy) -> PolicyRates {
        let s = &p.spec;
        PolicyRates {
            policy_id: p.id.clone(),
            name: s.name.clone(),
            currency: s.currency,
            gpu_hourly_cost: s.gpu_hourly_cost.get(),
            overhead_pct: s.overhead_pct.get(),
            energy_kwh_price: s.energy_kwh_price.get(),
            pue: s.pue.get(),
            storage_gb_month_price: s.storage_gb_month_price.get(),
            idle_capacity: s.idle_capacity,
        }
    }
}

impl Explanation {
    /// The explanation as one tenant may see it: every other tenant is summed into one `Others` line (in each
    /// bucket's claims and split, the idle spread and the rounding), so that no other tenant's identity or
    /// figures show, and every total stays the same.
    pub fn for_tenant(&self, tenant: TenantId) -> Explanation {
        let party = |p: Party| match p {
            Party::Tenant(t) if t == tenant => p,
            _ => Party::Others,
        };
        let mut e = self.clone();
        for b in &mut e.buckets {
            b.owner = b.owner.map(party);
            let mut claims: Vec<ClaimLine> = Vec::new();
            for c in b.claims.drain(..) {
                let p = party(c.party);
                match claims.iter_mut().find(|x| x.party == p) {
                    Some(x) => {
                        x.gpu_seconds += c.gpu_seconds;
                        x.tokens += c.tokens;
                        x.share += c.share;
                    }
                    None => claims.push(ClaimLine { party: p, ..c }),
                }
            }
            claims.sort_by_key(|c| c.party);
            b.claims = claims;
            for l in &mut b.priced {
                l.parties = merge(l.parties.drain(..).map(|(p, v)| (party(p), v)));
            }
        }
        for s in &mut e.idle_spread {
            let mut merged: Vec<(Party, Decimal, Decimal)> = Vec::new();
            for (p, w, v) in s.parties.drain(..) {
                let p = party(p);
                match merged.iter_mut().find(|x| x.0 == p) {
                    Some(x) => {
                        x.1 += w;
                        x.2 += v;
                    }
                    None => merged.push((p, w, v)),
                }
            }
            merged.sort_by_key(|x| x.0);
            s.parties = merged;
        }
        for r in &mut e.rounding {
            let mut merged: Vec<RoundingLine> = Vec::new();
            for l in r.lines.drain(..) {
                let p = l.party.map(party);
                match merged
                    .iter_mut()
                    .find(|x| x.party == p && x.policy_id == l.policy_id)
                {
                    Some(x) => {
                        x.exact += l.exact;
                        x.scaled += l.scaled;
                        x.floor += l.floor;
                        x.remainder_unit += l.remainder_unit;
                        x.amount += l.amount;
                    }
                    None => merged.push(RoundingLine { party: p, ..l }),
                }
            }
            r.lines = merged;
        }
        e
    }

    /// Each party's total amount over the rounding rows, per currency: the allocation's items summed per tenant.
    pub fn amounts(&self) -> BTreeMap<(Option<Party>, Currency), Decimal> {
        let mut out = BTreeMap::new();
        for r in &self.rounding {
            for l in &r.lines {
                *out.entry((l.party, r.currency)).or_default() += l.amount;
            }
        }
        out
    }
}

fn merge(lines: impl Iterator<Item = (Party, Decimal)>) -> Vec<(Party, Decimal)> {
    let mut out: Vec<(Party, Decimal)> = Vec::new();
    for (p, v) in lines {
        match out.iter_mut().find(|x| x.0 == p) {
            Some(x) => x.1 += v,
            None => out.push((p, v)),
        }
    }
    out.sort_by_key(|x| x.0);
    out
}

//! The lines an explanation is made of (each bucket's claims, split and prices; the idle spread; the rounding
//! of each row) and the [`Trace`] the settling records them in as it goes, so that an explanation's figures are
//! the allocation's own ([`super::explain()`] keeps one deployment's trace).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::accumulate::Bucket;
use super::claims::Claim;
use super::pricing::{from_fixed, Acc, Part, Rates};
use super::Ctx;
use crate::domain::TenantId;
use crate::money::Currency;
use crate::time::Timestamp;

/// Who a line is about. `Others` only in an explanation shown to one tenant: every other tenant, summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Party {
    Tenant(TenantId),
    Others,
}

/// One bucket of the deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketLine {
    pub start: Timestamp,
    /// The owner of a dedicated deployment's time (all of it is theirs); `None`: shared time.
    pub owner: Option<Party>,
    /// GPU-seconds measured in the bucket (estimated ones included).
    pub gpu_seconds: Decimal,
    pub estimated_gpu_seconds: Decimal,
    /// The tenants' claims on shared time, and the share of the bucket each was given.
    pub claims: Vec<ClaimLine>,
    /// The claims' GPU-seconds exceeded what was measured: they were scaled down to it.
    pub over_attribution: bool,
    /// The bucket priced, per policy (nearly always one).
    pub priced: Vec<PricedLine>,
}

/// A tenant's claim on a shared bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimLine {
    pub party: Party,
    /// GPU-seconds the tenant's usage events claimed.
    pub gpu_seconds: Decimal,
    /// Tokens the tenant's usage events counted (output tokens weighed by the policy's output weight).
    pub tokens: Decimal,
    /// The fraction of the bucket the claims gave the tenant (the fractions sum to at most 1; the rest is idle).
    pub share: Decimal,
}

/// A bucket's time under one pricing policy: its exact cost, and who it went to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricedLine {
    pub policy_id: String,
    pub currency: Currency,
    pub gpu_seconds: Decimal,
    pub energy_wh: Decimal,
    /// `gpu_hourly_cost x gpu_seconds / 3600 x (1 + overhead_pct / 100)`, exact.
    pub gpu_time_cost: Decimal,
    /// `energy_wh / 1000 x pue x energy_kwh_price`, exact.
    pub energy_cost: Decimal,
    /// `storage_gb x seconds / (30 x 86400) x storage_gb_month_price`, exact.
    pub storage_cost: Decimal,
    /// The bucket's exact cost under the policy (the three above, summed before one division).
    pub cost: Decimal,
    /// Each tenant's exact part of `cost`.
    pub parties: Vec<(Party, Decimal)>,
    /// The exact cost no claim accounted for (idle capacity).
    pub idle: Decimal,
}

/// Idle capacity of a `proportional` policy given to the tenants in proportion to their allocated cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleSpread {
    pub policy_id: String,
    /// The idle cost spread, exact.
    pub idle: Decimal,
    /// Each tenant's weight (its exact allocated cost on the deployment) and what it was given.
    pub parties: Vec<(Party, Decimal, Decimal)>,
}

/// One (deployment, currency) row rounded: the sum of its exact lines, rounded once to the minor unit, then
/// apportioned with the largest-remainder method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rounding {
    pub currency: Currency,
    /// The sum of the lines' exact amounts.
    pub exact: Decimal,
    /// The row's cost: `exact` rounded once.
    pub cost: Decimal,
    pub lines: Vec<RoundingLine>,
}

/// One line of a row's rounding: a tenant's item or the idle capacity of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundingLine {
    /// `None`: the policy's unallocated (idle) cost.
    pub party: Option<Party>,
    pub policy_id: String,
    pub exact: Decimal,
    /// `exact` scaled so that the lines add up to the rounded cost (`exact x cost / row exact`).
    pub scaled: Decimal,
    /// `scaled` floored to the minor unit: what the line gets before the remainder is handed out.
    pub floor: Decimal,
    /// What the largest-remainder step added to `floor` (one minor unit, or none).
    pub remainder_unit: Decimal,
    /// The line's final amount (`floor + remainder_unit`): the allocation's figure.
    pub amount: Decimal,
}

/// What the settling records as it goes, when asked to (one deployment's explanation).
#[derive(Debug, Default)]
pub(super) struct Trace {
    pub(super) buckets: Vec<BucketLine>,
    pub(super) idle_spread: Vec<IdleSpread>,
    pub(super) rounding: Vec<Rounding>,
}

impl Trace {
    /// A dedicated owner's bucket: all of it is the owner's.
    pub(super) fn owned(&mut self, ctx: &Ctx<'_>, start: Timestamp, owner: TenantId, b: &Bucket) {
        let priced = b
            .per_policy
            .iter()
            .map(|(p, acc)| {
                let part = acc.priced(&ctx.rates[*p]);
                priced_line(
                    ctx,
                    *p,
                    acc,
                    &part,
                    vec![(Party::Tenant(owner), part.cost)],
                    Decimal::ZERO,
                )
            })
            .collect();
        self.buckets.push(BucketLine {
            start,
            owner: Some(Party::Tenant(owner)),
            gpu_seconds: from_fixed(b.measured),
            estimated_gpu_seconds: estimated(b),
            claims: Vec::new(),
            over_attribution: false,
            priced,
        });
    }

    /// A shared bucket: its claims, the fractions they gave, and per policy the split of its cost.
    pub(super) fn shared(
        &mut self,
        start: Timestamp,
        b: &Bucket,
        claims: &[(usize, TenantId, Claim)],
        fractions: &[(TenantId, Decimal)],
        over: bool,
        priced: Vec<PricedLine>,
    ) {
        let mut lines: BTreeMap<TenantId, ClaimLine> = BTreeMap::new();
        for (_, t, c) in claims {
            let l = lines.entry(*t).or_insert(ClaimLine {
                party: Party::Tenant(*t),
                gpu_seconds: Decimal::ZERO,
                tokens: Decimal::ZERO,
                share: Decimal::ZERO,
            });
            l.gpu_seconds += c.gpu_seconds;
            l.tokens += c.tokens;
        }
        for (t, f) in fractions {
            if let Some(l) = lines.get_mut(t) {
                l.share += *f;
            }
        }
        self.buckets.push(BucketLine {
            start,
            owner: None,
            gpu_seconds: from_fixed(b.measured),
            estimated_gpu_seconds: estimated(b),
            claims: lines.into_values().collect(),
            over_attribution: over,
            priced,
        });
    }
}

fn estimated(b: &Bucket) -> Decimal {
    let mut acc = Acc::default();
    for (_, a) in b.per_policy.iter() {
        acc.merge(a);
    }
    from_fixed(acc.est)
}

/// A bucket's line under policy `p`: `part` is `acc` priced; `parties` and `idle` its split.
pub(super) fn priced_line(
    ctx: &Ctx<'_>,
    p: usize,
    acc: &Acc,
    part: &Part,
    parties: Vec<(Party, Decimal)>,
    idle: Decimal,
) -> PricedLine {
    let rates: &Rates = &ctx.rates[p];
    let policy = &ctx.policies[p];
    PricedLine {
        policy_id: policy.id.clone(),
        currency: policy.spec.currency,
        gpu_seconds: part.gpu_seconds,
        energy_wh: part.energy_ws / Decimal::from(3600),
        gpu_time_cost: rates.price_of(part.gpu_seconds, Decimal::ZERO, Decimal::ZERO),
        energy_cost: rates.price_of(Decimal::ZERO, part.energy_ws, Decimal::ZERO),
        storage_cost: rates.price_of(Decimal::ZERO, Decimal::ZERO, from_fixed(acc.storage)),
        cost: part.cost,
        parties,
        idle,
    }
}

/// The start of bucket `bi` of the period.
pub(super) fn bucket_start(ctx: &Ctx<'_>, bi: usize) -> Timestamp {
    Timestamp(ctx.period.from.0 + bi as i64 * ctx.bucket_ms)
}

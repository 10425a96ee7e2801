//! What a token costs on our GPUs: per deployment, per tenant of a deployment and per model, from an allocation
//! and the usage events of its period. Pure, exact decimals.
//!
//! Tokens: a tenant's are those of its usage events on the deployment (`tokens_in`, `tokens_out`). A
//! deployment's are its vLLM server's own counters (events of `source: vllm`, which the sampler posts) when it
//! has any in the period, else the sum of its tenants'.
//!
//! Cost, on two bases: `allocation` is what the allocation charges (a deployment's `cost`, idle included; a
//! tenant's allocated cost on it): it reconciles to the allocation to the cent. `usage` keeps only the busy
//! GPU-seconds: the allocation-basis cost times the deployment's `busy_gpu_seconds / gpu_seconds`, rounded to
//! the minor unit.
//!
//! Input and output: the cost is split between the input tokens that needed compute and the output tokens by
//! what one token of each costs in GPU time. With vLLM's prefill and decode time measured, an effective input
//! token weighs `prefill_seconds / effective_tokens_in` and an output token `decode_seconds / tokens_out`
//! (`compute_time`; effective input tokens are `tokens_in - cached_tokens_in` when vLLM reports prefix-cache
//! hits, else all of them: `compute_time_uncorrected`). Without measured time, an output token weighs the
//! deployment's policy's `output_token_weight` (default 2.5) input tokens (`weight`). A tenant's cost on a
//! deployment is split with its deployment's weights and cache ratio, so that its input and output costs are
//! those its tokens would have on the deployment's measured mix.
//!
//! Rounding: input cost is rounded once to the minor unit (half away from zero) and output cost is the rest,
//! so the two always sum to the cost. Rates per million tokens are the rounded amounts over the tokens, rounded
//! to [`RATE_DP`] places, half away from zero.

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::domain::{weighs_split, Policy, TenantId, TokenWeight, UsageEvent, VLLM_SOURCE};
use crate::error::FieldError;
use crate::money::Currency;
use crate::report::Allocation;

/// Places of a rate per million tokens.
pub const RATE_DP: u32 = 4;

const MILLION: Decimal = Decimal::from_parts(1_000_000, 0, 0, false, 0);

/// Which cost a token bears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Basis {
    /// The allocated cost, idle included: reconciles to the allocation.
    #[default]
    Allocation,
    /// The cost of the busy GPU-seconds only.
    Usage,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Allocation => "allocation",
            Basis::Usage => "usage",
        }
    }
}

impl FromStr for Basis {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "allocation" => Ok(Basis::Allocation),
            "usage" => Ok(Basis::Usage),
            _ => Err(FieldError::new("basis", "must be `allocation` or `usage`")),
        }
    }
}

/// What one row of the answer stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Aggregate {
    /// One row per deployment (and currency).
    #[default]
    Deployment,
    /// One row per tenant (and currency), with its deployments.
    Tenant,
    /// One row per model served (and currency), with its deployments.
    Model,
}

impl Aggregate {
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregate::Deployment => "deployment",
            Aggregate::Tenant => "tenant",
            Aggregate::Model => "model",
        }
    }
}

impl FromStr for Aggregate {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deployment" => Ok(Aggregate::Deployment),
            "tenant" => Ok(Aggregate::Tenant),
            "model" => Ok(Aggregate::Model),
            _ => Err(FieldError::new(
                "aggregate",
                "must be `deployment`, `tenant` or `model`",
            )),
        }
    }
}

/// How a row's cost was split between input and output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SplitMethod {
    /// By measured prefill and decode time, cached input tokens left out of the input's denominator.
    ComputeTime,
    /// By measured prefill and decode time; no prefix-cache figures, so every input token counts.
    ComputeTimeUncorrected,
    /// By the policy's `output_token_weight`.
    Weight,
    /// A total over rows split in different ways.
    Mixed,
}

impl SplitMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            SplitMethod::ComputeTime => "compute_time",
            SplitMethod::ComputeTimeUncorrected => "compute_time_uncorrected",
            SplitMethod::Weight => "weight",
            SplitMethod::Mixed => "mixed",
        }
    }
}

/// Where a row's tokens were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenSource {
    /// The vLLM server's own counters.
    Vllm,
    /// The tenants' usage events.
    UsageEvents,
    /// A total over rows of both kinds.
    Mixed,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Vllm => "vllm",
            TokenSource::UsageEvents => "usage_events",
            TokenSource::Mixed => "mixed",
        }
    }
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub input: Decimal,
    pub output: Decimal,
    /// Input tokens served from the prefix cache (a part of `input`); 0 where unknown.
    pub cached_input: Decimal,
    /// Input tokens that needed compute: `input - cached_input` where the split corrects for the cache, else
    /// `input`. The denominator of the input rate.
    pub effective_input: Decimal,
}

impl Tokens {
    pub fn total(&self) -> Decimal {
        self.input + self.output
    }

    fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cached_input += o.cached_input;
        self.effective_input += o.effective_input;
    }
}

/// One row: a deployment, a tenant's share of one, or a total of such rows (a tenant, a model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCost {
    pub deployment_id: Option<String>,
    pub tenant_id: Option<TenantId>,
    /// The model served (vLLM's `model_name`, else the usage events' `model.name`); `None`: not known.
    pub model: Option<String>,
    pub currency: Currency,
    pub cost: Decimal,
    /// `None` when the row has no tokens (nothing to split by).
    pub input_cost: Option<Decimal>,
    pub output_cost: Option<Decimal>,
    pub tokens: Tokens,
    pub token_source: TokenSource,
    pub method: SplitMethod,
    /// What an output token weighed against an effective input token (measured, or the policy's); `None` on
    /// totals over different weights and where no input token needed compute.
    pub output_token_weight: Option<Decimal>,
    pub per_mtok: Option<Decimal>,
    pub input_per_mtok: Option<Decimal>,
    pub output_per_mtok: Option<Decimal>,
    /// The rows a total is made of (a tenant's or a model's deployments); empty on a deployment's row.
    pub parts: Vec<TokenCost>,
}

/// Everything an answer reads.
#[derive(Debug, Clone, Copy)]
pub struct TokenCostInput<'a> {
    /// The whole allocation of the period (every tenant: a deployment's measures are all of its tenants').
    pub allocation: &'a Allocation,
    /// Usage events of the period, every tenant's and the vLLM servers'.
    pub events: &'a [UsageEvent],
    pub policies: &'a [Policy],
    pub basis: Basis,
}

/// What a deployment's vLLM server measured in the period.
#[derive(Debug, Default)]
struct Measured {
    input: Decimal,
    output: Decimal,
    cached: Option<Decimal>,
    prefill_seconds: Decimal,
    decode_seconds: Decimal,
}

/// How one deployment's costs are split.
#[derive(Debug, Clone, Copy)]
struct Split {
    method: SplitMethod,
    /// GPU time (or weight) of one effective input token and of one output token.
    per_input: Decimal,
    per_output: Decimal,
    /// Effective input tokens per input token (1 when uncorrected).
    effective_ratio: Decimal,
}

impl Split {
    fn weight(w: TokenWeight) -> Self {
        Split {
            method: SplitMethod::Weight,
            per_input: Decimal::ONE,
            per_output: w.get(),
            effective_ratio: Decimal::ONE,
        }
    }

    fn measured(m: &Measured, fallback: TokenWeight) -> Self {
        let timed = m.prefill_seconds + m.decode_seconds > Decimal::ZERO;
        if !timed || m.input + m.output <= Decimal::ZERO {
            return Split::weight(fallback);
        }
        let (method, effective) = match m.cached {
            Some(c) => (SplitMethod::ComputeTime, (m.input - c).max(Decimal::ZERO)),
            None => (SplitMethod::ComputeTimeUncorrected, m.input),
        };
        let per = |seconds: Decimal, tokens: Decimal| {
            if tokens > Decimal::ZERO {
                seconds / tokens
            } else {
                Decimal::ZERO
            }
        };
        let (per_input, per_output) = (
            per(m.prefill_seconds, effective),
            per(m.decode_seconds, m.output),
        );
        if per_input + per_output <= Decimal::ZERO {
            return Split::weight(fallback);
        }
        Split {
            method,
            per_input,
            per_output,
            effective_ratio: if m.input > Decimal::ZERO {
                effective / m.input
            } else {
                Decimal::ONE
            },
        }
    }

    fn output_weight(&self) -> Option<Decimal> {
        (self.per_input > Decimal::ZERO).then(|| self.per_output / self.per_input)
    }
}

/// `amount / tokens x 1,000,000` to [`RATE_DP`] places, half away from zero; `None` without tokens.
pub fn rate(amount: Decimal, tokens: Decimal) -> Option<Decimal> {
    (tokens > Decimal::ZERO).then(|| {
        let mut r = (amount * MILLION / tokens)
            .round_dp_with_strategy(RATE_DP, RoundingStrategy::MidpointAwayFromZero);
        r.rescale(RATE_DP);
        r
    })
}

/// The tokens of one row, as counted.
#[derive(Debug, Clone, Copy)]
struct Counted {
    input: Decimal,
    output: Decimal,
    cached: Decimal,
    source: TokenSource,
}

/// A row with its amounts split and its rates worked out.
fn row(key: Key, currency: Currency, cost: Decimal, counted: Counted, split: &Split) -> TokenCost {
    let Counted {
        input,
        output,
        cached,
        source,
    } = counted;
    // Input tokens that needed compute: those not served from the prefix cache, where the split corrects
    // for it.
    let effective_input = if split.method == SplitMethod::ComputeTime {
        (input - cached).max(Decimal::ZERO)
    } else {
        input
    };
    let tokens = Tokens {
        input,
        output,
        cached_input: cached,
        effective_input,
    };
    let weighed = split.per_input * effective_input + split.per_output * output;
    let (input_cost, output_cost) = if weighed > Decimal::ZERO {
        let i = currency.round(cost * split.per_input * effective_input / weighed);
        (Some(i), Some(cost - i))
    } else {
        (None, None)
    };
    let (deployment_id, tenant_id, model) = key;
    TokenCost {
        deployment_id,
        tenant_id,
        model,
        currency,
        cost,
        per_mtok: rate(cost, tokens.total()),
        input_per_mtok: input_cost.and_then(|c| rate(c, effective_input)),
        output_per_mtok: output_cost.and_then(|c| rate(c, output)),
        input_cost,
        output_cost,
        tokens,
        token_source: source,
        method: split.method,
        output_token_weight: split.output_weight(),
        parts: Vec::new(),
    }
}

/// The most-used name of a tally (ties: the smallest name).
fn most_used(tally: Option<&BTreeMap<String, Decimal>>) -> Option<String> {
    tally?
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(n, _)| n.clone())
}

/// What the events of the period say, per deployment.
#[derive(Debug, Default)]
struct Gathered {
    measured: HashMap<String, Measured>,
    /// Per (deployment, tenant): input and output tokens of the tenant's events.
    tenants: BTreeMap<(String, TenantId), (Decimal, Decimal)>,
    /// Per deployment: tokens per model name, from vLLM where it measured, else from usage events.
    vllm_models: HashMap<String, BTreeMap<String, Decimal>>,
    event_models: HashMap<String, BTreeMap<String, Decimal>>,
}

/// Each event once, as stored: a re-sent `(tenant_id, event_id)` replaces the earlier one (the last given
/// wins), in (occurred_at, tenant, id) order.
pub fn distinct_events(events: &[UsageEvent]) -> Vec<&UsageEvent> {
    let mut last: HashMap<(TenantId, uuid::Uuid), &UsageEvent> = HashMap::new();
    for e in events {
        last.insert((e.tenant_id, e.event_id), e);
    }
    let mut ordered: Vec<&UsageEvent> = last.into_values().collect();
    ordered.sort_by_key(|e| (e.occurred_at, e.tenant_id, e.event_id));
    ordered
}

fn gather(events: &[UsageEvent]) -> Gathered {
    let mut g = Gathered::default();
    for e in distinct_events(events) {
        let Some(d) = e.deployment_id.as_deref() else {
            continue;
        };
        let unit = |n: &str| e.unit(n).unwrap_or_default();
        let (input, output) = (unit("tokens_in"), unit("tokens_out"));
        let models = if e.source == VLLM_SOURCE {
            let m = g.measured.entry(d.to_string()).or_default();
            m.input += input;
            m.output += output;
            if let Some(c) = e.unit("cached_tokens_in") {
                *m.cached.get_or_insert(Decimal::ZERO) += c;
            }
            m.prefill_seconds += unit("prefill_seconds");
            m.decode_seconds += unit("decode_seconds");
            &mut g.vllm_models
        } else if weighs_split(&e.source) {
            let t = g.tenants.entry((d.to_string(), e.tenant_id)).or_default();
            t.0 += input;
            t.1 += output;
            &mut g.event_models
        } else {
            continue;
        };
        if let Some(model) = &e.model {
            *models
                .entry(d.to_string())
                .or_default()
                .entry(model.name.clone())
                .or_default() += input + output;
        }
    }
    g
}

/// The rows of `aggregate`, on `basis`; with `tenant`, only that tenant's share (what its readers see).
pub fn token_costs(
    input: &TokenCostInput<'_>,
    aggregate: Aggregate,
    tenant: Option<TenantId>,
) -> Vec<TokenCost> {
    let a = input.allocation;
    let g = gather(input.events);
    let weights: HashMap<&str, TokenWeight> = input
        .policies
        .iter()
        .map(|p| (p.id.as_str(), p.spec.output_token_weight))
        .collect();
    // Per deployment: its policies' allocated amounts, to find the one that priced most of it.
    let mut by_policy: HashMap<&str, BTreeMap<&str, Decimal>> = HashMap::new();
    for i in &a.items {
        *by_policy
            .entry(i.deployment_id.as_str())
            .or_default()
            .entry(i.policy_id.as_str())
            .or_default() += i.allocated.amount;
    }
    let weight_of = |d: &str| -> TokenWeight {
        by_policy
            .get(d)
            .and_then(|m| m.iter().max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0))))
            .and_then(|(p, _)| weights.get(p).copied())
            .unwrap_or_default()
    };
    let model_of =
        |d: &str| most_used(g.vllm_models.get(d)).or_else(|| most_used(g.event_models.get(d)));
    let no_measure = Measured::default();

    let mut base = Vec::new();
    for r in &a.deployments {
        let Some(currency) = r.currency else {
            continue;
        };
        let d = r.deployment_id.as_str();
        let measured = g.measured.get(d);
        let split = Split::measured(measured.unwrap_or(&no_measure), weight_of(d));
        let busy = if r.gpu_seconds > Decimal::ZERO {
            r.busy_gpu_seconds / r.gpu_seconds
        } else {
            Decimal::ZERO
        };
        let on_basis = |allocated: Decimal| match input.basis {
            Basis::Allocation => allocated,
            Basis::Usage => currency.round(allocated * busy),
        };
        let model = model_of(d);
        let shares = tenant.is_some() || aggregate == Aggregate::Tenant;
        if !shares {
            let (input_t, output_t, cached, source) = match measured {
                Some(m) => (
                    m.input,
                    m.output,
                    m.cached.unwrap_or_default(),
                    TokenSource::Vllm,
                ),
                None => {
                    let (i, o) = g
                        .tenants
                        .range((d.to_string(), TenantId(uuid::Uuid::nil()))..)
                        .take_while(|((dd, _), _)| dd == d)
                        .fold((Decimal::ZERO, Decimal::ZERO), |acc, (_, t)| {
                            (acc.0 + t.0, acc.1 + t.1)
                        });
                    (i, o, Decimal::ZERO, TokenSource::UsageEvents)
                }
            };
            base.push(row(
                (Some(d.to_string()), None, model),
                currency,
                on_basis(r.cost),
                Counted {
                    input: input_t,
                    output: output_t,
                    cached,
                    source,
                },
                &split,
            ));
            continue;
        }
        // Each tenant's share: its allocated cost on the deployment, its own tokens.
        let mut allocated: BTreeMap<TenantId, Decimal> = BTreeMap::new();
        for i in a
            .items
            .iter()
            .filter(|i| i.deployment_id == d && i.allocated.currency == currency)
        {
            *allocated.entry(i.tenant_id).or_default() += i.allocated.amount;
        }
        for (t, amount) in allocated {
            if tenant.is_some_and(|only| only != t) {
                continue;
            }
            let (input_t, output_t) = g
                .tenants
                .get(&(d.to_string(), t))
                .copied()
                .unwrap_or_default();
            // The tenant's cached tokens: its share of the deployment's, at the deployment's cache ratio.
            let cached = (input_t - input_t * split.effective_ratio).round_dp(6);
            base.push(row(
                (Some(d.to_string()), Some(t), model.clone()),
                currency,
                on_basis(amount),
                Counted {
                    input: input_t,
                    output: output_t,
                    cached,
                    source: TokenSource::UsageEvents,
                },
                &split,
            ));
        }
    }
    match aggregate {
        Aggregate::Deployment => base,
        Aggregate::Tenant => totals(base, |r| (None, r.tenant_id, None)),
        Aggregate::Model => totals(base, |r| (None, None, r.model.clone())),
    }
}

type Key = (Option<String>, Option<TenantId>, Option<String>);

/// Rows summed per key and currency, each total keeping its parts.
fn totals(rows: Vec<TokenCost>, key: impl Fn(&TokenCost) -> Key) -> Vec<TokenCost> {
    let mut groups: BTreeMap<(Key, Currency), Vec<TokenCost>> = BTreeMap::new();
    for r in rows {
        groups.entry((key(&r), r.currency)).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|((k, currency), parts)| {
            let mut tokens = Tokens::default();
            let mut cost = Decimal::ZERO;
            let (mut input_cost, mut output_cost) = (Decimal::ZERO, Decimal::ZERO);
            let mut split = true;
            for p in &parts {
                tokens.add(&p.tokens);
                cost += p.cost;
                match (p.input_cost, p.output_cost) {
                    (Some(i), Some(o)) => {
                        input_cost += i;
                        output_cost += o;
                    }
                    // A part without tokens bears cost no token can be charged: no split of the total.
                    _ => split = false,
                }
            }
            let same =
                |f: &dyn Fn(&TokenCost) -> String| parts.windows(2).all(|w| f(&w[0]) == f(&w[1]));
            let method = if same(&|p| p.method.as_str().to_string()) {
                parts.first().map_or(SplitMethod::Weight, |p| p.method)
            } else {
                SplitMethod::Mixed
            };
            let token_source = if same(&|p| p.token_source.as_str().to_string()) {
                parts
                    .first()
                    .map_or(TokenSource::UsageEvents, |p| p.token_source)
            } else {
                TokenSource::Mixed
            };
            let output_token_weight = if parts
                .windows(2)
                .all(|w| w[0].output_token_weight == w[1].output_token_weight)
            {
                parts.first().and_then(|p| p.output_token_weight)
            } else {
                None
            };
            let (input_cost, output_cost) = if split {
                (Some(input_cost), Some(output_cost))
            } else {
                (None, None)
            };
            let (deployment_id, tenant_id, model) = k;
            TokenCost {
                deployment_id,
                tenant_id,
                model,
                currency,
                cost,
                per_mtok: rate(cost, tokens.total()),
                input_per_mtok: input_cost.and_then(|c| rate(c, tokens.effective_input)),
                output_per_mtok: output_cost.and_then(|c| rate(c, tokens.output)),
                input_cost,
                output_cost,
                tokens,
                token_source,
                method,
                output_token_weight,
                parts,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{row, Aggregate, Basis, Counted, Measured, Split, SplitMethod, TokenSource};
    use crate::domain::TokenWeight;
    use crate::money::Currency;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }

    fn counted(input: Decimal, output: Decimal, cached: Decimal, source: TokenSource) -> Counted {
        Counted {
            input,
            output,
            cached,
            source,
        }
    }

    /// OpenCost's worked example: $3.20 for an hour, 12M prompt tokens of which 800,000 cached, 3M generated,
    /// 600 s of prefill and 600 s of decode.
    #[test]
    fn the_opencost_worked_example_with_our_rules() {
        let usd: Currency = "USD".parse().expect("usd");
        let m = Measured {
            input: d("12000000"),
            output: d("3000000"),
            cached: Some(d("800000")),
            prefill_seconds: d("600"),
            decode_seconds: d("600"),
        };
        let split = Split::measured(&m, TokenWeight::DEFAULT);
        assert_eq!(split.method, SplitMethod::ComputeTime);
        let r = row(
            (Some("qwen".into()), None, None),
            usd,
            d("3.20"),
            counted(m.input, m.output, d("800000"), TokenSource::Vllm),
            &split,
        );
        assert_eq!(r.tokens.effective_input, d("11200000"));
        // Prefill and decode took the same time: half the cost each.
        assert_eq!(r.input_cost, Some(d("1.60")));
        assert_eq!(r.output_cost, Some(d("1.60")));
        // $3.20 / 15M x 1M = 0.21333..; $1.60 / 11.2M x 1M = 0.142857..; $1.60 / 3M x 1M = 0.5333..
        assert_eq!(r.per_mtok, Some(d("0.2133")));
        assert_eq!(r.input_per_mtok, Some(d("0.1429")));
        assert_eq!(r.output_per_mtok, Some(d("0.5333")));

        // Without the cache figures, every prompt token is in the input's denominator.
        let uncorrected = Split::measured(&Measured { cached: None, ..m }, TokenWeight::DEFAULT);
        assert_eq!(uncorrected.method, SplitMethod::ComputeTimeUncorrected);
        let r = row(
            (None, None, None),
            usd,
            d("3.20"),
            counted(
                d("12000000"),
                d("3000000"),
                Decimal::ZERO,
                TokenSource::Vllm,
            ),
            &uncorrected,
        );
        assert_eq!(r.input_cost, Some(d("1.60")));
        assert_eq!(r.input_per_mtok, Some(d("0.1333")));
    }

    #[test]
    fn without_measured_time_an_output_token_weighs_the_policy_weight() {
        let eur: Currency = "EUR".parse().expect("eur");
        let split = Split::measured(&Measured::default(), TokenWeight::DEFAULT);
        assert_eq!(split.method, SplitMethod::Weight);
        // 7,000 in and 3,000 out at 2.5: 7,000 / (7,000 + 7,500) of 5.19 is input.
        let r = row(
            (None, None, None),
            eur,
            d("5.19"),
            counted(
                d("7000"),
                d("3000"),
                Decimal::ZERO,
                TokenSource::UsageEvents,
            ),
            &split,
        );
        assert_eq!(r.input_cost, Some(d("2.51"))); // 2.5055.. rounded
        assert_eq!(r.output_cost, Some(d("2.68")));
        assert_eq!(r.output_token_weight, Some(d("2.5")));
        assert_eq!(r.per_mtok, Some(d("519.0000")));
        // No tokens: nothing to split by, no rate.
        let none = row(
            (None, None, None),
            eur,
            d("1.00"),
            counted(
                Decimal::ZERO,
                Decimal::ZERO,
                Decimal::ZERO,
                TokenSource::UsageEvents,
            ),
            &split,
        );
        assert_eq!((none.input_cost, none.per_mtok), (None, None));
    }

    #[test]
    fn parameters_parse_and_refuse_clearly() {
        assert_eq!("usage".parse::<Basis>().ok(), Some(Basis::Usage));
        assert_eq!("model".parse::<Aggregate>().ok(), Some(Aggregate::Model));
        assert_eq!("cost".parse::<Basis>().expect_err("bad").field, "basis");
        assert_eq!(
            "pod".parse::<Aggregate>().expect_err("bad").field,
            "aggregate"
        );
    }
}

//! Budgets and reservations (SPEC §9), pure: what a budget says, what a request asks, and whether an estimate
//! fits.
//!
//! A budget limits one tenant's spend in one currency per calendar month (UTC): `spent` is the month's
//! `gpu_local` allocated cost plus its committed reservations, `held` its open reservations. A reservation is
//! granted when, for every enforcing budget of its tenant and currency, `spent + held + estimate` stays within the
//! limit (and likewise for tokens when the budget has a `tokens_limit`); committing it records one usage event
//! ([`commit_event`]) that counts in `spent` from then on. Thresholds are percentages of the limit; each fires
//! once a month ([`crossed`]).

use std::collections::BTreeMap;
use std::str::FromStr;

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::domain::{NonNegative, TenantId, UsageEvent, RESERVATION_SOURCE};
use crate::error::FieldError;
use crate::money::Currency;
use crate::time::Timestamp;
use crate::wire::{Bounds, Loose, Record, TenantSource};

/// The thresholds a budget gets when none are given.
pub const DEFAULT_THRESHOLDS: [u32; 3] = [50, 80, 100];
/// At most this many thresholds, each in `1..=1000` percent.
pub const MAX_THRESHOLDS: usize = 20;
/// A reservation's hold lasts this long unless `ttl_seconds` says otherwise (at most a day).
pub const DEFAULT_TTL_MS: i64 = 300_000;
pub const MAX_TTL_MS: i64 = 86_400_000;
/// Amounts are bounded like usage costs (so sums cannot overflow).
const MAX_AMOUNT: i64 = 1_000_000_000_000;
const MAX_TOKENS: i64 = 1_000_000_000_000_000;

/// What a budget says. Never edited in place: a change closes it and opens a successor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpec {
    pub tenant_id: TenantId,
    pub name: String,
    pub limit: Decimal,
    pub currency: Currency,
    pub tokens_limit: Option<u64>,
    /// Sorted, distinct, each in `1..=1000`.
    pub thresholds_pct: Vec<u32>,
    /// Whether a reservation that would pass the limit is refused (else the budget only alerts).
    pub enforce: bool,
    pub webhook_url: Option<String>,
    /// Inclusive.
    pub effective_from: Timestamp,
    /// Exclusive; `None`: open-ended.
    pub effective_to: Option<Timestamp>,
}

/// A stored budget: `bud_<seq>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub id: String,
    pub seq: u64,
    pub spec: BudgetSpec,
}

impl Budget {
    pub fn new(seq: u64, spec: BudgetSpec) -> Self {
        Budget {
            id: budget_id(seq),
            seq,
            spec,
        }
    }

    /// This budget closed at `at`, or why it cannot be (the rule of policies: [`crate::domain::close_at`]).
    pub fn close_at(&self, at: Timestamp) -> Result<Budget, crate::domain::CloseRefused> {
        let mut closed = self.clone();
        closed.spec.effective_to = Some(crate::domain::close_at(
            self.spec.effective_from,
            self.spec.effective_to,
            at,
        )?);
        Ok(closed)
    }

    /// In force at `t`.
    pub fn active_at(&self, t: Timestamp) -> bool {
        self.spec.effective_from <= t && self.spec.effective_to.is_none_or(|to| t < to)
    }
}

pub fn budget_id(seq: u64) -> String {
    format!("bud_{seq}")
}

/// The sequence of `bud_<n>`.
pub fn budget_seq(id: &str) -> Option<u64> {
    id.strip_prefix("bud_")?.parse().ok().filter(|n| *n > 0)
}

/// A cost and a token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amounts {
    pub cost: Decimal,
    pub tokens: Decimal,
}

impl Amounts {
    pub fn plus(self, o: Amounts) -> Amounts {
        Amounts {
            cost: self.cost + o.cost,
            tokens: self.tokens + o.tokens,
        }
    }
}

const BUDGET_FIELDS: &[&str] = &[
    "tenant_id",
    "name",
    "period",
    "limit",
    "tokens_limit",
    "thresholds_pct",
    "enforce",
    "webhook_url",
    "effective_from",
    "effective_to",
];

/// A webhook target: an absolute `http` or `https` URL with a host.
fn webhook_url(s: &str) -> Result<String, FieldError> {
    crate::wire::http_url("webhook_url", s)
}

fn thresholds(r: &mut Record<'_>) -> Option<Vec<u32>> {
    let Some(items) = r.opt_array("thresholds_pct") else {
        return Some(DEFAULT_THRESHOLDS.to_vec());
    };
    if items.len() > MAX_THRESHOLDS {
        r.fail(
            "thresholds_pct",
            format!("must hold at most {MAX_THRESHOLDS} percentages"),
        );
        return None;
    }
    let mut out = Vec::new();
    for (i, v) in items.iter().enumerate() {
        let pct = match v {
            Loose::Number(n) => n.parse::<u32>().ok().filter(|p| (1..=1000).contains(p)),
            _ => None,
        };
        match pct {
            Some(p) => out.push(p),
            None => r.fail(
                &format!("thresholds_pct[{i}]"),
                "must be a whole percentage from 1 to 1000",
            ),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The limit: `{"amount": "1000.00", "currency": "EUR"}`.
fn limit(r: &mut Record<'_>) -> Option<(Decimal, Currency)> {
    if r.get("limit").is_none() {
        r.fail("limit", "is required");
        return None;
    }
    r.nested("limit", |l| {
        let amount = l.req_decimal("amount", Bounds::price(MAX_AMOUNT));
        let currency = l.opt_parsed("currency", Currency::from_str);
        if l.get("currency").is_none() {
            l.fail("currency", "is required");
        }
        Some((amount?, currency?))
    })
}

/// Parses a new budget. The tenant comes from the credential (a finops key: its own) or the body (a platform
/// identity, or the tenant `X-EAI-Tenant` signed it in to). `now` is the default `effective_from`.
pub fn parse_budget(
    v: &Loose,
    tenant: TenantSource,
    now: Timestamp,
) -> Result<BudgetSpec, Vec<FieldError>> {
    let mut r = Record::new(v, "budget").map_err(|e| vec![e])?;
    r.deny_unknown(BUDGET_FIELDS);
    let tenant_id = r.tenant(tenant);
    let name = r.req_str("name", 200);
    match r.opt_str("period", 16).as_deref() {
        None | Some("month") => {}
        Some(other) => r.fail("period", format!("must be \"month\", not \"{other}\"")),
    }
    let limit = limit(&mut r);
    let tokens_limit = r.opt_count("tokens_limit", MAX_TOKENS);
    let thresholds_pct = thresholds(&mut r);
    let enforce = r.opt_bool("enforce").unwrap_or(false);
    let webhook_url = r.opt_parsed("webhook_url", webhook_url);
    let from = r
        .opt_parsed("effective_from", Timestamp::parse_date_or_datetime)
        .unwrap_or(now);
    let to = r.opt_parsed("effective_to", Timestamp::parse_date_or_datetime);
    if to.is_some_and(|t| t <= from) {
        r.fail("effective_to", "must be after effective_from");
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(tenant_id), Some(name), Some((limit, currency)), Some(thresholds_pct)) =
        (tenant_id, name, limit, thresholds_pct)
    else {
        return Err(vec![FieldError::new("budget", "is incomplete")]);
    };
    Ok(BudgetSpec {
        tenant_id,
        name: name.trim().to_string(),
        limit: limit.normalize(),
        currency,
        tokens_limit,
        thresholds_pct,
        enforce,
        webhook_url,
        effective_from: from,
        effective_to: to,
    })
}

/// What a reservation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationRequest {
    pub tenant_id: TenantId,
    /// What the hold is for, e.g. `llm.invoke`: the usage type of the event a commit records.
    pub action: String,
    pub estimate: Amounts,
    /// The estimate's currency; `None`: the currency of the tenant's budgets (see [`reservation_currency`]).
    pub currency: Option<Currency>,
    pub deployment_id: Option<String>,
    pub ttl_ms: i64,
}

const RESERVATION_FIELDS: &[&str] = &[
    "tenant_id",
    "action",
    "estimate",
    "deployment_id",
    "ttl_seconds",
];

/// `{"cost": "0.50", "tokens": 4000, "currency"?: "EUR"}` (cost required, tokens 0 by default).
fn amounts(r: &mut Record<'_>, name: &str) -> Option<(Amounts, Option<Currency>)> {
    if r.get(name).is_none() {
        r.fail(name, "is required");
        return None;
    }
    r.nested(name, |a| {
        a.deny_unknown(&["cost", "tokens", "currency"]);
        let cost = a.req_decimal("cost", Bounds::price(MAX_AMOUNT));
        let tokens = a.opt_count("tokens", MAX_TOKENS).unwrap_or(0);
        let currency = a.opt_parsed("currency", Currency::from_str);
        Some((
            Amounts {
                cost: cost?.normalize(),
                tokens: Decimal::from(tokens),
            },
            currency,
        ))
    })
}

/// Parses `POST /v1/finops/reservations`.
pub fn parse_reservation(
    v: &Loose,
    tenant: TenantSource,
) -> Result<ReservationRequest, Vec<FieldError>> {
    let mut r = Record::new(v, "reservation").map_err(|e| vec![e])?;
    r.deny_unknown(RESERVATION_FIELDS);
    let tenant_id = r.tenant(tenant);
    let action = r.req_str("action", 64);
    if action.as_deref().is_some_and(|a| {
        !a.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-:/".contains(&c))
    }) {
        r.fail(
            "action",
            "letters, digits and . _ - : / only (e.g. llm.invoke)",
        );
    }
    let estimate = amounts(&mut r, "estimate");
    let deployment_id = r.opt_str("deployment_id", 253);
    let ttl_ms = r
        .opt_count("ttl_seconds", MAX_TTL_MS / 1000)
        .map(|s| i64::try_from(s).unwrap_or(MAX_TTL_MS / 1000) * 1000);
    if ttl_ms == Some(0) {
        r.fail("ttl_seconds", "must be at least 1");
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(tenant_id), Some(action), Some((estimate, currency))) = (tenant_id, action, estimate)
    else {
        return Err(vec![FieldError::new("reservation", "is incomplete")]);
    };
    Ok(ReservationRequest {
        tenant_id,
        action,
        estimate,
        currency,
        deployment_id,
        ttl_ms: ttl_ms.unwrap_or(DEFAULT_TTL_MS),
    })
}

/// Parses a commit: `{"actual": {"cost": "0.42", "tokens": 3100}}` (its currency, if given, must be the
/// reservation's: checked by the caller).
pub fn parse_commit(v: &Loose) -> Result<(Amounts, Option<Currency>), Vec<FieldError>> {
    let mut r = Record::new(v, "commit").map_err(|e| vec![e])?;
    r.deny_unknown(&["actual"]);
    let actual = amounts(&mut r, "actual");
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    actual.ok_or_else(|| vec![FieldError::new("actual", "is required")])
}

/// The currency of a reservation: the estimate's, else the one currency of the tenant's budgets in force, else
/// USD (the policies' default). A tenant whose budgets use several currencies must say which.
pub fn reservation_currency(
    given: Option<Currency>,
    budgets: &[Budget],
) -> Result<Currency, FieldError> {
    if let Some(c) = given {
        return Ok(c);
    }
    let mut cs: Vec<Currency> = budgets.iter().map(|b| b.spec.currency).collect();
    cs.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    cs.dedup();
    match cs.as_slice() {
        [] => Ok(Currency::USD),
        [one] => Ok(*one),
        _ => Err(FieldError::new(
            "estimate.currency",
            "is required: the tenant's budgets use several currencies",
        )),
    }
}

/// A budget with what its month has spent and holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub budget: Budget,
    pub spent: Amounts,
    pub held: Amounts,
}

impl Standing {
    /// What is left before the limit (never below zero).
    pub fn left(&self) -> Decimal {
        (self.budget.spec.limit - self.spent.cost - self.held.cost).max(Decimal::ZERO)
    }

    pub fn tokens_left(&self) -> Option<Decimal> {
        self.budget
            .spec
            .tokens_limit
            .map(|l| (Decimal::from(l) - self.spent.tokens - self.held.tokens).max(Decimal::ZERO))
    }
}

/// Why a reservation is refused: the first enforcing budget it would pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub standing: Box<Standing>,
    pub estimate: Amounts,
    /// `cost` or `tokens`: which limit.
    pub by: &'static str,
}

/// Whether `estimate` (in `currency`) fits every enforcing budget in `standings` of that currency.
pub fn decide(
    standings: &[Standing],
    estimate: Amounts,
    currency: Currency,
) -> Result<(), Refusal> {
    for s in standings
        .iter()
        .filter(|s| s.budget.spec.enforce && s.budget.spec.currency == currency)
    {
        let after = s.spent.plus(s.held).plus(estimate);
        let by = if after.cost > s.budget.spec.limit {
            Some("cost")
        } else if s
            .budget
            .spec
            .tokens_limit
            .is_some_and(|l| after.tokens > Decimal::from(l))
        {
            Some("tokens")
        } else {
            None
        };
        if let Some(by) = by {
            return Err(Refusal {
                standing: Box::new(s.clone()),
                estimate,
                by,
            });
        }
    }
    Ok(())
}

/// The thresholds `spent` has reached: `spent >= limit × pct / 100` (a zero limit: any spend reaches all).
pub fn crossed(spec: &BudgetSpec, spent: Decimal) -> Vec<u32> {
    spec.thresholds_pct
        .iter()
        .copied()
        .filter(|pct| {
            if spec.limit.is_zero() {
                spent > Decimal::ZERO
            } else {
                spent * Decimal::ONE_HUNDRED >= spec.limit * Decimal::from(*pct)
            }
        })
        .collect()
}

/// Namespace of the ids of commit events (fixed: changing it would record a commit twice).
pub const COMMIT_EVENT_NAMESPACE: Uuid = Uuid::from_u128(0x2f6e_8a41_7c3d_4b9e_a5f0_1d2c_3b4a_5968);

/// The one usage event a commit records: id derived from the reservation (a re-commit writes the same event),
/// source `reservation`, usage type the reservation's action, the actual cost, and the tokens as unit `tokens`
/// (not `tokens_in`/`tokens_out`: a reservation records spend, it does not weigh the GPU split).
pub fn commit_event(
    reservation_id: &str,
    tenant_id: TenantId,
    action: &str,
    deployment_id: Option<&str>,
    actual: Amounts,
    currency: Currency,
    at: Timestamp,
) -> UsageEvent {
    let nn = |d: Decimal| NonNegative::new(d).unwrap_or(NonNegative::ZERO);
    let mut units = BTreeMap::new();
    units.insert("tokens".to_string(), nn(actual.tokens));
    UsageEvent {
        event_id: Uuid::new_v5(&COMMIT_EVENT_NAMESPACE, reservation_id.as_bytes()),
        tenant_id,
        usage_type: action.to_string(),
        source: RESERVATION_SOURCE.to_string(),
        occurred_at: at,
        deployment_id: deployment_id.map(str::to_string),
        model: None,
        units,
        cost: Some((nn(actual.cost), currency)),
        allocation_policy_id: None,
        project: None,
        agent_id: None,
        run_id: Some(reservation_id.to_string()),
    }
}

/// The spend one stored usage event adds to its tenant's month, in its currency: the allocation batch's
/// `gpu_local` cost and committed reservations count, nothing else.
pub fn spend_of(e: &UsageEvent) -> Option<(Currency, Amounts)> {
    use crate::batch::GPU_LOCAL;
    use crate::domain::ALLOCATION_SOURCE;
    let (cost, currency) = e.cost?;
    let counts = (e.source == ALLOCATION_SOURCE && e.usage_type == GPU_LOCAL)
        || e.source == RESERVATION_SOURCE;
    counts.then(|| {
        (
            currency,
            Amounts {
                cost: cost.get(),
                tokens: if e.source == RESERVATION_SOURCE {
                    e.unit("tokens").unwrap_or_default()
                } else {
                    Decimal::ZERO
                },
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{
        commit_event, crossed, decide, parse_budget, parse_commit, parse_reservation, spend_of,
        Amounts, Budget, BudgetSpec, Standing, DEFAULT_THRESHOLDS,
    };
    use crate::domain::TenantId;
    use crate::error::FieldError;
    use crate::money::Currency;
    use crate::time::Timestamp;
    use crate::wire::{Loose, TenantSource};

    const T: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";

    fn loose(json: &str) -> Loose {
        serde_json::from_str(json).expect("json")
    }

    fn tenant() -> TenantId {
        T.parse().expect("uuid")
    }

    fn budget(json: &str) -> Result<BudgetSpec, Vec<FieldError>> {
        parse_budget(&loose(json), TenantSource::Body, Timestamp(1_000))
    }

    fn fields(e: &[FieldError]) -> Vec<&str> {
        e.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn a_budget_needs_a_tenant_a_name_and_a_limit() {
        let b = budget(&format!(
            r#"{{"tenant_id":"{T}","name":" acme monthly ","limit":{{"amount":"1000.00","currency":"EUR"}},
                "thresholds_pct":[100,50,80,50],"enforce":true,"webhook_url":"https://hooks.example.com/x"}}"#
        ))
        .expect("valid");
        assert_eq!(b.name, "acme monthly");
        assert_eq!(
            (b.limit.to_string().as_str(), b.currency.as_str()),
            ("1000", "EUR")
        );
        assert_eq!(b.thresholds_pct, vec![50, 80, 100]);
        assert!(b.enforce);
        assert_eq!(b.effective_from, Timestamp(1_000));
        let b = budget(&format!(
            r#"{{"tenant_id":"{T}","name":"n","limit":{{"amount":5,"currency":"USD"}}}}"#
        ))
        .expect("defaults");
        assert_eq!(b.thresholds_pct, DEFAULT_THRESHOLDS.to_vec());
        assert!(!b.enforce);

        let e = budget(r#"{"name":"","limit":{"amount":"-1"},"period":"week","thresholds_pct":[0,"x"],"webhook_url":"ftp://x","color":1}"#)
            .expect_err("invalid");
        assert_eq!(
            fields(&e),
            vec![
                "color",
                "tenant_id",
                "name",
                "period",
                "limit.amount",
                "limit.currency",
                "thresholds_pct[0]",
                "thresholds_pct[1]",
                "webhook_url"
            ]
        );
        // A tenant's credential: its own tenant only.
        let other = r#"{"tenant_id":"2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21","name":"n","limit":{"amount":1,"currency":"EUR"}}"#;
        let e = parse_budget(
            &loose(other),
            TenantSource::Credential(tenant()),
            Timestamp(0),
        )
        .expect_err("another tenant");
        assert_eq!(fields(&e), vec!["tenant_id"]);
    }

    #[test]
    fn a_reservation_asks_an_estimate_for_an_action() {
        let r = parse_reservation(
            &loose(r#"{"action":"llm.invoke","estimate":{"cost":"0.50","tokens":4000},"ttl_seconds":60}"#),
            TenantSource::Credential(tenant()),
        )
        .expect("valid");
        assert_eq!(r.estimate.cost.to_string(), "0.5");
        assert_eq!(r.estimate.tokens, Decimal::from(4000));
        assert_eq!(r.ttl_ms, 60_000);
        let e = parse_reservation(
            &loose(r#"{"action":"a b","estimate":{"cost":"x","tokens":1.5},"ttl_seconds":0}"#),
            TenantSource::Body,
        )
        .expect_err("invalid");
        assert_eq!(
            fields(&e),
            vec![
                "tenant_id",
                "action",
                "estimate.cost",
                "estimate.tokens",
                "ttl_seconds"
            ]
        );
        let (actual, currency) =
            parse_commit(&loose(r#"{"actual":{"cost":0.42,"tokens":3100}}"#)).expect("commit");
        assert_eq!((actual.cost.to_string().as_str(), currency), ("0.42", None));
    }

    fn standing(limit: i64, spent: i64, held: i64, enforce: bool) -> Standing {
        let mut spec = budget(&format!(
            r#"{{"tenant_id":"{T}","name":"b","limit":{{"amount":{limit},"currency":"EUR"}},"tokens_limit":1000}}"#
        ))
        .expect("budget");
        spec.enforce = enforce;
        Standing {
            budget: Budget::new(1, spec),
            spent: Amounts {
                cost: Decimal::from(spent),
                tokens: Decimal::ZERO,
            },
            held: Amounts {
                cost: Decimal::from(held),
                tokens: Decimal::from(900),
            },
        }
    }

    #[test]
    fn an_estimate_fits_when_spent_held_and_it_stay_within_every_enforcing_limit() {
        let eur = Currency::from_str("EUR").expect("eur");
        let est = |cost: i64, tokens: i64| Amounts {
            cost: Decimal::from(cost),
            tokens: Decimal::from(tokens),
        };
        assert!(
            decide(&[standing(100, 60, 30, true)], est(10, 0), eur).is_ok(),
            "exactly the limit"
        );
        let r = decide(&[standing(100, 60, 30, true)], est(11, 0), eur).expect_err("one past");
        assert_eq!((r.by, r.standing.left()), ("cost", Decimal::from(10)));
        assert_eq!(
            decide(&[standing(100, 0, 0, true)], est(1, 101), eur).map_err(|r| r.by),
            Err("tokens")
        );
        assert!(
            decide(&[standing(100, 60, 30, false)], est(50, 0), eur).is_ok(),
            "alerting only"
        );
        let usd = Currency::from_str("USD").expect("usd");
        assert!(
            decide(&[standing(100, 60, 30, true)], est(50, 0), usd).is_ok(),
            "another currency"
        );
    }

    #[test]
    fn thresholds_are_reached_at_their_share_of_the_limit() {
        let s = standing(200, 0, 0, true).budget.spec;
        assert_eq!(crossed(&s, Decimal::from(99)), Vec::<u32>::new());
        assert_eq!(crossed(&s, Decimal::from(100)), vec![50]);
        assert_eq!(crossed(&s, Decimal::from(200)), vec![50, 80, 100]);
        let mut zero = s;
        zero.limit = Decimal::ZERO;
        assert!(crossed(&zero, Decimal::ZERO).is_empty());
        assert_eq!(crossed(&zero, Decimal::new(1, 2)).len(), 3);
    }

    #[test]
    fn a_commit_records_one_event_that_counts_as_spend() {
        let eur = Currency::from_str("EUR").expect("eur");
        let actual = Amounts {
            cost: Decimal::new(42, 2),
            tokens: Decimal::from(3100),
        };
        let e = commit_event(
            "res_1",
            tenant(),
            "llm.invoke",
            None,
            actual,
            eur,
            Timestamp(5),
        );
        assert_eq!(
            e.event_id,
            commit_event("res_1", tenant(), "x", None, actual, eur, Timestamp(9)).event_id,
            "a re-commit names the same event"
        );
        assert_eq!(spend_of(&e), Some((eur, actual)));
        assert_eq!(
            crate::allocate::claim_of(&e),
            None,
            "never weighs the GPU split"
        );
    }
}

//! Allocation policies: a new one's fields parsed into a [`PolicySpec`], a stored one read back into a [`Policy`].

use std::str::FromStr;

use rust_decimal::Decimal;

use super::loose::Loose;
use super::record::{Bounds, Record};
use super::MAX_NAME;
use crate::domain::{Glob, IdleCapacity, NonNegative, Policy, PolicySpec, Pue, TokenWeight};
use crate::error::FieldError;
use crate::money::Currency;
use crate::time::Timestamp;

/// The fields a new allocation policy may have (any other is refused).
pub const POLICY_FIELDS: &[&str] = &[
    "name",
    "deployment_pattern",
    "gpu_model",
    "currency",
    "gpu_hourly_cost",
    "overhead_pct",
    "energy_kwh_price",
    "pue",
    "storage_gb_month_price",
    "idle_capacity",
    "output_token_weight",
    "enabled",
    "effective_from",
    "effective_to",
];

/// Parses a new allocation policy. `now` is the default `effective_from`.
pub fn parse_policy(v: &Loose, now: Timestamp) -> Result<PolicySpec, Vec<FieldError>> {
    let mut r = Record::new(v, "policy").map_err(|e| vec![e])?;
    r.deny_unknown(POLICY_FIELDS);
    let f = read_fields(&mut r, true);
    let from = r.opt_parsed("effective_from", Timestamp::parse_date_or_datetime);
    let from = from.unwrap_or(now);
    let to = f.effective_to.flatten();
    check_period(&mut r, from, to);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(Some(name)), Some(Some(hourly))) = (f.name.clone(), f.gpu_hourly_cost) else {
        return Err(vec![FieldError::new("policy", "is incomplete")]);
    };
    let d = defaults(name, hourly, from);
    Ok(f.merged(&d, &d, from))
}

/// A policy of this name and hourly cost from `from`, every other field at its default (what a new policy
/// leaves out, and what a supersede's `null` brings back).
fn defaults(name: String, gpu_hourly_cost: NonNegative, from: Timestamp) -> PolicySpec {
    PolicySpec {
        name,
        deployment_pattern: Glob::any(),
        gpu_model: None,
        currency: Currency::USD,
        gpu_hourly_cost,
        overhead_pct: NonNegative::ZERO,
        energy_kwh_price: NonNegative::ZERO,
        pue: Pue::ONE,
        storage_gb_month_price: NonNegative::ZERO,
        idle_capacity: IdleCapacity::default(),
        output_token_weight: TokenWeight::default(),
        enabled: true,
        effective_from: from,
        effective_to: None,
    }
}

/// What a body changes of a policy, field by field: absent (`None`: kept), `null` (`Some(None)`: back to its
/// default), or a value (`Some(Some(v))`), each parsed and bounded as a new policy's. The start is not a field
/// of the patch: a supersede sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyPatch {
    pub name: Option<Option<String>>,
    pub deployment_pattern: Option<Option<Glob>>,
    pub gpu_model: Option<Option<String>>,
    pub currency: Option<Option<Currency>>,
    pub gpu_hourly_cost: Option<Option<NonNegative>>,
    pub overhead_pct: Option<Option<NonNegative>>,
    pub energy_kwh_price: Option<Option<NonNegative>>,
    pub pue: Option<Option<Pue>>,
    pub storage_gb_month_price: Option<Option<NonNegative>>,
    pub idle_capacity: Option<Option<IdleCapacity>>,
    pub output_token_weight: Option<Option<TokenWeight>>,
    pub enabled: Option<Option<bool>>,
    pub effective_to: Option<Option<Timestamp>>,
}

/// Parses what a supersede body changes (every field of a policy but `effective_from`, which the caller
/// takes out with the instant it names).
pub fn parse_policy_patch(v: &Loose) -> Result<PolicyPatch, Vec<FieldError>> {
    let mut r = Record::new(v, "policy").map_err(|e| vec![e])?;
    let known: Vec<&str> = POLICY_FIELDS
        .iter()
        .copied()
        .filter(|k| *k != "effective_from")
        .collect();
    r.deny_unknown(&known);
    let patch = read_fields(&mut r, false);
    if r.errors.is_empty() {
        Ok(patch)
    } else {
        Err(r.errors)
    }
}

impl PolicyPatch {
    /// `base` with this patch's changes, starting at `from`: a field set to `null` takes its default, as in a
    /// new policy (`name` and `gpu_hourly_cost`, which have none, are required).
    pub fn apply(&self, base: &PolicySpec, from: Timestamp) -> Result<PolicySpec, Vec<FieldError>> {
        let mut errors = Vec::new();
        for (field, nulled) in [
            ("name", self.name == Some(None)),
            ("gpu_hourly_cost", self.gpu_hourly_cost == Some(None)),
        ] {
            if nulled {
                errors.push(FieldError::new(field, "is required"));
            }
        }
        let spec = self.merged(
            base,
            &defaults(base.name.clone(), base.gpu_hourly_cost, from),
            from,
        );
        if spec.effective_to.is_some_and(|t| t <= from) {
            errors.push(FieldError::new(
                "effective_to",
                "must be after effective_from",
            ));
        }
        if errors.is_empty() {
            Ok(spec)
        } else {
            Err(errors)
        }
    }

    /// `base` with each field this patch names set (a value) or reset to `defaults`' (`null`), from `from`.
    fn merged(&self, base: &PolicySpec, defaults: &PolicySpec, from: Timestamp) -> PolicySpec {
        fn pick<T: Clone>(change: &Option<Option<T>>, kept: &T, default: &T) -> T {
            match change {
                None => kept,
                Some(None) => default,
                Some(Some(v)) => v,
            }
            .clone()
        }
        PolicySpec {
            name: pick(&self.name, &base.name, &defaults.name),
            deployment_pattern: pick(
                &self.deployment_pattern,
                &base.deployment_pattern,
                &defaults.deployment_pattern,
            ),
            gpu_model: match &self.gpu_model {
                None => base.gpu_model.clone(),
                Some(model) => model.clone(),
            },
            currency: pick(&self.currency, &base.currency, &defaults.currency),
            gpu_hourly_cost: pick(
                &self.gpu_hourly_cost,
                &base.gpu_hourly_cost,
                &defaults.gpu_hourly_cost,
            ),
            overhead_pct: pick(
                &self.overhead_pct,
                &base.overhead_pct,
                &defaults.overhead_pct,
            ),
            energy_kwh_price: pick(
                &self.energy_kwh_price,
                &base.energy_kwh_price,
                &defaults.energy_kwh_price,
            ),
            pue: pick(&self.pue, &base.pue, &defaults.pue),
            storage_gb_month_price: pick(
                &self.storage_gb_month_price,
                &base.storage_gb_month_price,
                &defaults.storage_gb_month_price,
            ),
            idle_capacity: pick(
                &self.idle_capacity,
                &base.idle_capacity,
                &defaults.idle_capacity,
            ),
            output_token_weight: pick(
                &self.output_token_weight,
                &base.output_token_weight,
                &defaults.output_token_weight,
            ),
            enabled: pick(&self.enabled, &base.enabled, &defaults.enabled),
            effective_from: from,
            effective_to: match self.effective_to {
                None => base.effective_to,
                Some(to) => to,
            },
        }
    }
}

/// Each field of a policy but its start, as [`PolicyPatch`] holds them; `required`: `name` and
/// `gpu_hourly_cost` must be given (a new policy).
fn read_fields(r: &mut Record, required: bool) -> PolicyPatch {
    // A field absent stays absent, null is `Some(None)`, a value is parsed (an invalid one is an error and
    // absent).
    macro_rules! read {
        ($k:literal, $parse:expr) => {{
            let presence = r.presence($k);
            let value = $parse;
            match presence {
                None => None,
                Some(false) => Some(None),
                Some(true) => value.map(Some),
            }
        }};
    }
    let name = match required {
        true => read!("name", r.req_str("name", 200)),
        false => read!("name", r.opt_str("name", 200)),
    };
    let deployment_pattern = read!(
        "deployment_pattern",
        r.opt_parsed("deployment_pattern", |s| {
            Glob::new(s)
                .ok_or_else(|| FieldError::new("deployment_pattern", "must be a non-empty glob"))
        })
    );
    let gpu_model = read!("gpu_model", r.opt_str("gpu_model", MAX_NAME));
    let currency = read!("currency", r.opt_parsed("currency", Currency::from_str));
    let hourly_bounds = Bounds::price(1_000_000_000);
    let gpu_hourly_cost = match required {
        true => read!(
            "gpu_hourly_cost",
            r.req_decimal("gpu_hourly_cost", hourly_bounds)
        ),
        false => read!(
            "gpu_hourly_cost",
            r.opt_decimal("gpu_hourly_cost", hourly_bounds)
        ),
    };
    let overhead_pct = read!(
        "overhead_pct",
        r.opt_decimal("overhead_pct", Bounds::price(10_000))
    );
    let energy = read!(
        "energy_kwh_price",
        r.opt_decimal("energy_kwh_price", Bounds::price(1_000_000))
    );
    let pue = read!(
        "pue",
        r.opt_decimal(
            "pue",
            Bounds {
                min: Decimal::ONE,
                ..Bounds::price(100)
            },
        )
    );
    let storage = read!(
        "storage_gb_month_price",
        r.opt_decimal("storage_gb_month_price", Bounds::price(1_000_000))
    );
    let idle = read!(
        "idle_capacity",
        r.opt_parsed("idle_capacity", IdleCapacity::from_str)
    );
    // An output token weighs from a tenth of an input token to a thousand of them.
    let weight = read!(
        "output_token_weight",
        r.opt_decimal(
            "output_token_weight",
            Bounds {
                min: Decimal::new(1, 1),
                ..Bounds::price(1_000)
            },
        )
    );
    let enabled = read!("enabled", r.opt_bool("enabled"));
    let effective_to = read!(
        "effective_to",
        r.opt_parsed("effective_to", Timestamp::parse_date_or_datetime)
    );
    let nn = |d: Option<Option<Decimal>>| {
        d.map(|d| d.map(|d| NonNegative::new(d).unwrap_or(NonNegative::ZERO)))
    };
    PolicyPatch {
        name,
        deployment_pattern,
        gpu_model,
        currency,
        gpu_hourly_cost: nn(gpu_hourly_cost),
        overhead_pct: nn(overhead_pct),
        energy_kwh_price: nn(energy),
        pue: pue.map(|p| p.and_then(Pue::new)),
        storage_gb_month_price: nn(storage),
        idle_capacity: idle,
        output_token_weight: weight.map(|w| w.and_then(TokenWeight::new)),
        enabled,
        effective_to,
    }
}

/// A policy ends after it starts.
fn check_period(r: &mut Record, from: Timestamp, to: Option<Timestamp>) {
    if to.is_some_and(|t| t <= from) {
        r.fail("effective_to", "must be after effective_from");
    }
}

/// A stored policy as the API and files show it (also what `allocate --policies FILE` reads back).
pub fn parse_stored_policy(v: &Loose, index: usize) -> Result<Policy, Vec<FieldError>> {
    let Loose::Object(m) = v else {
        return Err(vec![
            FieldError::new("policy", "must be an object").at(index)
        ]);
    };
    let seq = match m.get("id") {
        Some(Loose::Str(id)) => id.strip_prefix("alp_").and_then(|n| n.parse::<u64>().ok()),
        None => Some(index as u64 + 1),
        _ => None,
    };
    let Some(seq) = seq else {
        return Err(vec![FieldError::new("id", "must look like alp_1").at(index)]);
    };
    let mut rest = m.clone();
    for k in ["id", "status", "created_at", "created_by"] {
        rest.remove(k);
    }
    let spec = parse_policy(&Loose::Object(rest), Timestamp(0))
        .map_err(|es| es.into_iter().map(|e| e.at(index)).collect::<Vec<_>>())?;
    Ok(Policy::new(seq, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loose(json: &str) -> Loose {
        serde_json::from_str(json).expect("json")
    }

    fn base() -> PolicySpec {
        parse_policy(
            &loose(
                r#"{"name":"h100","gpu_hourly_cost":"2.5","currency":"EUR","pue":"1.3",
                    "gpu_model":"H100","effective_to":"2026-12-01"}"#,
            ),
            Timestamp(0),
        )
        .expect("policy")
    }

    #[test]
    fn a_patch_keeps_what_it_does_not_name_sets_what_it_gives_and_defaults_what_is_null() {
        let at = Timestamp::parse_date_or_datetime("2026-11-01").unwrap();
        let patch = parse_policy_patch(&loose(
            r#"{"gpu_hourly_cost":"3.1","pue":null,"gpu_model":null}"#,
        ))
        .expect("patch");
        let spec = patch.apply(&base(), at).expect("applied");
        let want = PolicySpec {
            gpu_hourly_cost: NonNegative::new(Decimal::new(31, 1)).unwrap(),
            pue: Pue::ONE,
            gpu_model: None,
            effective_from: at,
            ..base()
        };
        assert_eq!(spec, want);
        // The empty patch is the same policy from `at`.
        let same = PolicyPatch::default().apply(&base(), at).expect("applied");
        assert_eq!(
            same,
            PolicySpec {
                effective_from: at,
                ..base()
            }
        );
    }

    #[test]
    fn a_patch_refuses_what_a_new_policy_refuses() {
        let at = Timestamp::parse_date_or_datetime("2026-11-01").unwrap();
        let errors = parse_policy_patch(&loose(
            r#"{"pue":"0.5","colour":"red","effective_from":"2026-11-01"}"#,
        ))
        .unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert!(
            fields.contains(&"pue") && fields.contains(&"colour"),
            "{errors:?}"
        );
        assert!(
            fields.contains(&"effective_from"),
            "the start is the caller's: {errors:?}"
        );
        let errors = parse_policy_patch(&loose(r#"{"name":null,"gpu_hourly_cost":null}"#))
            .expect("nulls parse")
            .apply(&base(), at)
            .unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "gpu_hourly_cost"], "{errors:?}");
        // The inherited end must stay after the new start.
        let late = Timestamp::parse_date_or_datetime("2026-12-02").unwrap();
        let errors = PolicyPatch::default().apply(&base(), late).unwrap_err();
        assert_eq!(errors[0].field, "effective_to");
    }
}

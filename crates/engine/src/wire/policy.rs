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
    let name = r.req_str("name", 200);
    let pattern = r.opt_parsed("deployment_pattern", |s| {
        Glob::new(s)
            .ok_or_else(|| FieldError::new("deployment_pattern", "must be a non-empty glob"))
    });
    let gpu_model = r.opt_str("gpu_model", MAX_NAME);
    let currency = r.opt_parsed("currency", Currency::from_str);
    let hourly = r.req_decimal("gpu_hourly_cost", Bounds::price(1_000_000_000));
    let overhead = r.opt_decimal("overhead_pct", Bounds::price(10_000));
    let energy = r.opt_decimal("energy_kwh_price", Bounds::price(1_000_000));
    let pue = r.opt_decimal(
        "pue",
        Bounds {
            min: Decimal::ONE,
            ..Bounds::price(100)
        },
    );
    let storage = r.opt_decimal("storage_gb_month_price", Bounds::price(1_000_000));
    let idle = r.opt_parsed("idle_capacity", IdleCapacity::from_str);
    // An output token weighs from a tenth of an input token to a thousand of them.
    let weight = r.opt_decimal(
        "output_token_weight",
        Bounds {
            min: Decimal::new(1, 1),
            ..Bounds::price(1_000)
        },
    );
    let enabled = r.opt_bool("enabled");
    let from = r.opt_parsed("effective_from", Timestamp::parse_date_or_datetime);
    let to = r.opt_parsed("effective_to", Timestamp::parse_date_or_datetime);
    let from = from.unwrap_or(now);
    if let Some(t) = to {
        if t <= from {
            r.fail("effective_to", "must be after effective_from");
        }
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(name), Some(hourly)) = (name, hourly) else {
        return Err(vec![FieldError::new("policy", "is incomplete")]);
    };
    let nn =
        |d: Option<Decimal>| NonNegative::new(d.unwrap_or_default()).unwrap_or(NonNegative::ZERO);
    Ok(PolicySpec {
        name,
        deployment_pattern: pattern.unwrap_or_else(Glob::any),
        gpu_model,
        currency: currency.unwrap_or(Currency::USD),
        gpu_hourly_cost: nn(Some(hourly)),
        overhead_pct: nn(overhead),
        energy_kwh_price: nn(energy),
        pue: pue.and_then(Pue::new).unwrap_or(Pue::ONE),
        storage_gb_month_price: nn(storage),
        idle_capacity: idle.unwrap_or_default(),
        output_token_weight: weight.and_then(TokenWeight::new).unwrap_or_default(),
        enabled: enabled.unwrap_or(true),
        effective_from: from,
        effective_to: to,
    })
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

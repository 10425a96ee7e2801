//! Allocation policies: `AllocationPolicy`, `AllocationPolicyCreated`, `AllocationPolicyChange` (the list is
//! [`super::Items`]).

use eai_engine::domain::Policy;
use eai_engine::time::Timestamp;
use serde::{Deserialize, Serialize};

/// `closed` once `effective_to` has passed, else `disabled`, `scheduled` (starts later) or `active`.
pub fn status(p: &Policy, now: Timestamp) -> &'static str {
    if p.spec.effective_to.is_some_and(|t| t <= now) {
        "closed"
    } else if !p.spec.enabled {
        "disabled"
    } else if p.spec.effective_from > now {
        "scheduled"
    } else {
        "active"
    }
}

/// A policy as the API shows it: every field, decimals as strings (prices with at least the currency's minor
/// digits: `2.10`, not `2.1`), plus `id` and `status`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllocationPolicy {
    pub id: String,
    pub status: &'static str,
    pub name: String,
    pub deployment_pattern: String,
    pub gpu_model: Option<String>,
    pub currency: String,
    pub gpu_hourly_cost: String,
    pub overhead_pct: String,
    pub energy_kwh_price: String,
    pub pue: String,
    pub storage_gb_month_price: String,
    pub idle_capacity: String,
    pub output_token_weight: String,
    pub enabled: bool,
    pub effective_from: String,
    pub effective_to: Option<String>,
}

impl AllocationPolicy {
    pub fn of(p: &Policy, now: Timestamp) -> Self {
        let s = &p.spec;
        let c = s.currency;
        AllocationPolicy {
            id: p.id.clone(),
            status: status(p, now),
            name: s.name.clone(),
            deployment_pattern: s.deployment_pattern.as_str().to_string(),
            gpu_model: s.gpu_model.clone(),
            currency: c.as_str().to_string(),
            gpu_hourly_cost: c.amount_text(s.gpu_hourly_cost.get()),
            overhead_pct: s.overhead_pct.get().normalize().to_string(),
            energy_kwh_price: c.amount_text(s.energy_kwh_price.get()),
            pue: s.pue.get().normalize().to_string(),
            storage_gb_month_price: c.amount_text(s.storage_gb_month_price.get()),
            idle_capacity: s.idle_capacity.as_str().to_string(),
            output_token_weight: s.output_token_weight.get().normalize().to_string(),
            enabled: s.enabled,
            effective_from: s.effective_from.to_string(),
            effective_to: s.effective_to.map(|t| t.to_string()),
        }
    }
}

/// 201 of `POST /v1/finops/allocation-policies`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllocationPolicyCreated {
    pub id: String,
    pub status: &'static str,
}

/// A supersede or a disable: the closed policy and the one that replaces it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllocationPolicyChange {
    pub closed: AllocationPolicy,
    pub opened: AllocationPolicy,
}

/// The body of `POST /v1/finops/allocation-policies/{id}/disable` (optional): when it closes, default now.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllocationPolicyDisable {
    pub effective_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use eai_engine::wire::{parse_policy, Loose};

    use super::*;

    fn policy(json: &str) -> Policy {
        let v: Loose = serde_json::from_str(json).expect("json");
        Policy::new(1, parse_policy(&v, Timestamp(1_000)).expect("policy"))
    }

    #[test]
    fn status_follows_dates_and_enabled() {
        let p = policy(r#"{"name":"p","gpu_hourly_cost":"2.1","currency":"EUR"}"#);
        assert_eq!(status(&p, Timestamp(1_000)), "active");
        assert_eq!(status(&p, Timestamp(999)), "scheduled");
        let p = policy(r#"{"name":"p","gpu_hourly_cost":"2.1","enabled":false}"#);
        assert_eq!(status(&p, Timestamp(5_000)), "disabled");
        let p =
            policy(r#"{"name":"p","gpu_hourly_cost":"2.1","effective_to":"1970-01-01T00:00:02Z"}"#);
        assert_eq!(status(&p, Timestamp(2_000)), "closed");
    }

    #[test]
    fn the_view_shows_prices_as_strings_with_cents() {
        let p = policy(
            r#"{"name":"p","gpu_hourly_cost":"2.10","currency":"EUR","pue":1.40,"overhead_pct":"18"}"#,
        );
        let v = serde_json::to_value(AllocationPolicy::of(&p, Timestamp(1_000))).expect("json");
        assert_eq!(v["id"], "alp_1");
        assert_eq!(v["gpu_hourly_cost"], "2.10");
        assert_eq!(v["energy_kwh_price"], "0.00");
        assert_eq!(v["pue"], "1.4");
        assert_eq!(v["overhead_pct"], "18");
        assert_eq!(v["deployment_pattern"], "*");
        assert_eq!(v["effective_to"], serde_json::Value::Null);
    }
}

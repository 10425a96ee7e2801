//! `gpu_local` usage events: what the periodic allocation batch records for each tenant, deployment, policy and
//! period, so that GPU cost sits beside token cost in every FinOps report (SPEC §2, usage_type `gpu_local`).
//! Event ids are derived from those keys (uuid v5), so that a re-run (late samples, a corrected policy)
//! replaces the same events instead of adding to them.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::domain::{NonNegative, UsageEvent, ALLOCATION_SOURCE};
use crate::report::Allocation;
use crate::time::Timestamp;

/// The usage type of allocated GPU cost.
pub const GPU_LOCAL: &str = "gpu_local";

/// Namespace of the derived event ids (a fixed, random uuid: changing it would double every event).
pub const EVENT_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6b1f_2c3d_9e4a_4f5b_8c7d_0e1f_2a3b_4c5d);

/// The id of the event of (period, tenant, deployment, policy).
pub fn event_id(period: &str, tenant: &str, deployment_id: &str, policy_id: &str) -> Uuid {
    let key =
        format!("gpu_local\u{1f}{period}\u{1f}{tenant}\u{1f}{deployment_id}\u{1f}{policy_id}");
    Uuid::new_v5(&EVENT_ID_NAMESPACE, key.as_bytes())
}

/// One event per item of the allocation: units `gpu_seconds`, `gpu_memory_gb_seconds`, `energy_wh`, the
/// allocated cost and the policy. `period` names the period (`2026-10`) and is recorded as the event's
/// `run_id`; `occurred_at` is the period's start.
pub fn gpu_local_events(a: &Allocation, period: &str) -> Vec<UsageEvent> {
    let nn = |d: Decimal| NonNegative::new(d).unwrap_or(NonNegative::ZERO);
    a.items
        .iter()
        .map(|i| {
            let mut units = BTreeMap::new();
            units.insert("gpu_seconds".to_string(), nn(i.gpu_seconds));
            units.insert(
                "gpu_memory_gb_seconds".to_string(),
                nn(i.gpu_memory_gb_seconds),
            );
            units.insert("energy_wh".to_string(), nn(i.energy_wh));
            UsageEvent {
                event_id: event_id(
                    period,
                    &i.tenant_id.to_string(),
                    &i.deployment_id,
                    &i.policy_id,
                ),
                tenant_id: i.tenant_id,
                usage_type: GPU_LOCAL.to_string(),
                source: ALLOCATION_SOURCE.to_string(),
                occurred_at: a.from,
                deployment_id: Some(i.deployment_id.clone()),
                model: None,
                units,
                cost: Some((nn(i.allocated.amount), i.allocated.currency)),
                allocation_policy_id: Some(i.policy_id.clone()),
                project: None,
                agent_id: None,
                run_id: Some(period.to_string()),
            }
        })
        .collect()
}

/// A calendar month `YYYY-MM` as `[start, end)`.
pub fn month(period: &str) -> Option<(Timestamp, Timestamp)> {
    let (y, m) = period.split_once('-')?;
    let (y, m): (i32, u8) = (y.parse().ok()?, m.parse().ok()?);
    if period.len() != 7 || !(1..=12).contains(&m) {
        return None;
    }
    let start = Timestamp::parse_date(&format!("{y:04}-{m:02}-01")).ok()?;
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let end = Timestamp::parse_date(&format!("{ny:04}-{nm:02}-01")).ok()?;
    Some((start, end))
}

/// The month `YYYY-MM` holding an instant.
pub fn month_of(t: Timestamp) -> String {
    t.date_string()[..7].to_string()
}

#[cfg(test)]
mod tests {
    use super::{event_id, month, month_of};

    #[test]
    fn months_are_calendar_months() {
        let (s, e) = month("2026-12").unwrap();
        assert_eq!(
            (s.to_string(), e.to_string()),
            ("2026-12-01T00:00:00Z".into(), "2027-01-01T00:00:00Z".into())
        );
        assert!(month("2026-13").is_none() && month("2026-1").is_none() && month("x").is_none());
        assert_eq!(month_of(s), "2026-12");
    }

    #[test]
    fn event_ids_are_stable_and_distinct() {
        let a = event_id("2026-10", "t", "d", "alp_1");
        assert_eq!(a, event_id("2026-10", "t", "d", "alp_1"));
        assert_ne!(a, event_id("2026-11", "t", "d", "alp_1"));
        assert_ne!(a, event_id("2026-10", "t", "d", "alp_2"));
    }
}

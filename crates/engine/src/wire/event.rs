//! Usage events (contract usage-event.schema.json, schema_version "1.0"): one event or a batch, all or nothing.

use std::collections::BTreeMap;
use std::str::FromStr;

use uuid::Uuid;

use super::loose::Loose;
use super::record::{Bounds, Record, TenantSource, Val};
use super::{MAX_NAME, MAX_UNITS};
use crate::domain::{ModelRef, NonNegative, TenantId, UsageEvent, VLLM_SOURCE};
use crate::error::FieldError;
use crate::money::Currency;
use crate::time::Timestamp;

/// The fields a usage event may have (any other is refused).
pub const EVENT_FIELDS: &[&str] = &[
    "event_id",
    "schema_version",
    "tenant_id",
    "usage_type",
    "source",
    "occurred_at",
    "deployment_id",
    "model",
    "units",
    "cost",
    "allocation_policy_id",
    "project",
    "agent_id",
    "run_id",
];

fn unit_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Parses one usage event (contract usage-event.schema.json, schema_version "1.0").
pub fn parse_usage_event(v: &Loose, tenant: TenantSource) -> Result<UsageEvent, Vec<FieldError>> {
    let mut r = Record::new(v, "event").map_err(|e| vec![e])?;
    r.deny_unknown(EVENT_FIELDS);
    let event_id = r.opt_parsed("event_id", |s| {
        Uuid::parse_str(s).map_err(|_| FieldError::new("event_id", "must be a uuid"))
    });
    if r.get("event_id").is_none() {
        r.fail("event_id", "is required");
    }
    match r.opt_str("schema_version", 16).as_deref() {
        Some("1.0") => {}
        Some(other) => r.fail(
            "schema_version",
            format!("must be \"1.0\", not \"{other}\""),
        ),
        None => r.fail("schema_version", "is required"),
    }
    let measured = matches!(r.get("source"), Some(Val::Str(s)) if s == VLLM_SOURCE);
    let body_tenant = r.opt_parsed("tenant_id", TenantId::from_str);
    let tenant_id = match (tenant, body_tenant) {
        // A vLLM server's counters: the whole deployment's, no tenant's.
        _ if measured => {
            if r.get("tenant_id").is_some() {
                r.fail(
                    "tenant_id",
                    "must be omitted on `source: vllm` events (a deployment's own counters belong to no tenant)",
                );
            }
            Some(TenantId::PLATFORM)
        }
        (TenantSource::Credential(t), None) => Some(t),
        (TenantSource::Credential(t), Some(b)) if b == t => Some(t),
        (TenantSource::Credential(_), Some(_)) => {
            r.fail(
                "tenant_id",
                "differs from the tenant of the credential; omit it",
            );
            None
        }
        (TenantSource::Body, Some(b)) => Some(b),
        (TenantSource::Body, None) => {
            if r.get("tenant_id").is_none() {
                r.fail("tenant_id", "is required for a platform identity");
            }
            None
        }
    };
    let usage_type = r.req_str("usage_type", 64);
    let source = r.req_str("source", 64);
    let occurred_at = r.opt_parsed("occurred_at", Timestamp::parse_rfc3339);
    if r.get("occurred_at").is_none() {
        r.fail("occurred_at", "is required");
    }
    let deployment_id = r.opt_str("deployment_id", MAX_NAME);
    let model = r.object("model").and_then(|m| {
        let provider = match m.get("provider") {
            Some(Loose::Str(s)) if !s.is_empty() && s.len() <= 64 => s.clone(),
            _ => {
                r.fail("model.provider", "must be a non-empty string");
                return None;
            }
        };
        let name = match m.get("name") {
            Some(Loose::Str(s)) if !s.is_empty() && s.len() <= MAX_NAME => s.clone(),
            _ => {
                r.fail("model.name", "must be a non-empty string");
                return None;
            }
        };
        Some(ModelRef { provider, name })
    });
    let mut units = BTreeMap::new();
    match r.object("units") {
        Some(m) => {
            let b = Bounds::non_negative(MAX_UNITS, 6);
            for (k, v) in m {
                let field = format!("units.{k}");
                if !unit_name_ok(k) {
                    r.fail(&field, "unit names are lowercase letters, digits and _");
                    continue;
                }
                let wrapper: BTreeMap<String, Loose> =
                    [(field.clone(), v.clone())].into_iter().collect();
                let wrapped = Loose::Object(wrapper);
                let mut sub = Record::new(&wrapped, "units").map_err(|e| vec![e])?;
                if let Some(d) = sub.req_decimal(&field, b) {
                    units.insert(k.clone(), NonNegative::new(d).unwrap_or(NonNegative::ZERO));
                }
                r.errors.append(&mut sub.errors);
            }
        }
        None => {
            if r.get("units").is_none() {
                r.fail("units", "is required");
            }
        }
    }
    let cost = r.object("cost").and_then(|m| {
        let wrapped = Loose::Object(m.clone());
        let mut sub = Record::new(&wrapped, "cost").ok()?;
        let amount = sub.req_decimal("amount", Bounds::price(1_000_000_000_000));
        let currency = sub.opt_parsed("currency", Currency::from_str);
        if sub.get("currency").is_none() {
            sub.fail("currency", "is required");
        }
        for mut e in sub.errors.drain(..) {
            e.field = format!("cost.{}", e.field);
            r.errors.push(e);
        }
        Some((NonNegative::new(amount?)?, currency?))
    });
    let allocation_policy_id = r.opt_str("allocation_policy_id", 64);
    let project = r.opt_str("project", MAX_NAME);
    let agent_id = r.opt_str("agent_id", MAX_NAME);
    let run_id = r.opt_str("run_id", MAX_NAME);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(event_id), Some(tenant_id), Some(usage_type), Some(source), Some(occurred_at)) =
        (event_id, tenant_id, usage_type, source, occurred_at)
    else {
        return Err(vec![FieldError::new("event", "is incomplete")]);
    };
    Ok(UsageEvent {
        event_id,
        tenant_id,
        usage_type,
        source,
        occurred_at,
        deployment_id,
        model,
        units,
        cost,
        allocation_policy_id,
        project,
        agent_id,
        run_id,
    })
}

/// Parses a batch of usage events: all or nothing, every error located by index.
pub fn parse_usage_events(
    values: &[Loose],
    tenant: TenantSource,
) -> Result<Vec<UsageEvent>, Vec<FieldError>> {
    let mut out = Vec::with_capacity(values.len());
    let mut errors = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match parse_usage_event(v, tenant) {
            Ok(e) => out.push(e),
            Err(es) => errors.extend(es.into_iter().map(|e| e.at(i))),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

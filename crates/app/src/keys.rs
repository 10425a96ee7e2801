//! API keys as requests and views, for both front ends (the API's `POST /v1/auth/api-keys`, the CLI's `keys`):
//! a key request validated (role, tenant, name, expiry, a sampler's nodes), and a key as listed (never its secret,
//! nor its hash).

use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::time::Timestamp;
use eai_store::{ApiKeyRecord, NewApiKey, Role};
use serde_json::{json, Value};

use crate::clock::now;

/// Roles bound to a tenant. A key of one of them without a tenant gets `tenant_required` everywhere.
pub fn is_tenant_role(role: Role) -> bool {
    !matches!(
        role,
        Role::PlatformAdmin | Role::Sampler | Role::UsageReporter
    )
}

/// A validated key request.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyRequest {
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub name: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub nodes: Vec<String>,
}

impl KeyRequest {
    /// The key to store, with the hash of its secret.
    pub fn into_new_key(self, hash: String, at: Timestamp) -> NewApiKey {
        NewApiKey {
            hash,
            role: self.role,
            tenant_id: self.tenant_id,
            name: self.name,
            nodes: self.nodes,
            expires_at: self.expires_at,
            created_at: at,
        }
    }
}

/// Node names a sampler key may be bound to: 1 to 1,000 non-empty names of at most 253 characters.
fn check_nodes(role: Option<Role>, nodes: Option<&[String]>) -> Result<Vec<String>, FieldError> {
    let Some(nodes) = nodes else {
        return Ok(Vec::new());
    };
    if role != Some(Role::Sampler) {
        return Err(FieldError::new(
            "nodes",
            "only a sampler key can be bound to nodes",
        ));
    }
    if nodes.is_empty() || nodes.len() > 1000 {
        return Err(FieldError::new(
            "nodes",
            "must list 1 to 1000 node names (omit it for any node)",
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let n = n.trim();
        if n.is_empty() || n.chars().count() > 253 {
            return Err(FieldError::new(
                "nodes",
                "each node name must have 1 to 253 characters",
            ));
        }
        out.push(n.to_string());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Roles other than platform_admin and sampler need a tenant; those two take none (they act for every tenant).
pub fn key_request(
    role: Option<&str>,
    tenant_id: Option<&str>,
    name: Option<&str>,
) -> Result<KeyRequest, Vec<FieldError>> {
    key_request_full(role, tenant_id, name, None, None, now())
}

/// [`key_request`] with an expiry (a date or RFC 3339, after `now`) and a sampler's nodes.
pub fn key_request_full(
    role: Option<&str>,
    tenant_id: Option<&str>,
    name: Option<&str>,
    expires_at: Option<&str>,
    nodes: Option<&[String]>,
    now: Timestamp,
) -> Result<KeyRequest, Vec<FieldError>> {
    let mut errors = Vec::new();
    let all = Role::ALL
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let role = match role {
        None => {
            errors.push(FieldError::new("role", "is required"));
            None
        }
        Some(r) => {
            let parsed = Role::parse(r.trim());
            if parsed.is_none() {
                errors.push(FieldError::new("role", format!("must be one of {all}")));
            }
            parsed
        }
    };
    let tenant = match tenant_id {
        None => None,
        Some(t) => match t.trim().parse::<TenantId>() {
            Ok(t) => Some(t),
            Err(e) => {
                errors.push(e.field("tenant_id"));
                None
            }
        },
    };
    match (role, tenant_id) {
        (Some(r), None) if is_tenant_role(r) => errors.push(FieldError::new(
            "tenant_id",
            format!("is required for the role {}", r.as_str()),
        )),
        (Some(r), Some(_)) if !is_tenant_role(r) => errors.push(FieldError::new(
            "tenant_id",
            format!(
                "must be omitted for the role {}: it acts for every tenant",
                r.as_str()
            ),
        )),
        _ => {}
    }
    let name = match name.map(str::trim) {
        None => None,
        Some("") => {
            errors.push(FieldError::new("name", "must not be empty"));
            None
        }
        Some(n) if n.chars().count() > 200 => {
            errors.push(FieldError::new("name", "must be at most 200 characters"));
            None
        }
        Some(n) => Some(n.to_string()),
    };
    let expires_at = match expires_at.map(str::trim) {
        None => None,
        Some(t) => match Timestamp::parse_date_or_datetime(t) {
            Ok(at) if at > now => Some(at),
            Ok(_) => {
                errors.push(FieldError::new("expires_at", "must be in the future"));
                None
            }
            Err(e) => {
                errors.push(e.field("expires_at"));
                None
            }
        },
    };
    let nodes = check_nodes(role, nodes).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    match (role, errors.is_empty()) {
        (Some(role), true) => Ok(KeyRequest {
            role,
            tenant_id: tenant,
            name,
            expires_at,
            nodes,
        }),
        _ => Err(errors),
    }
}

/// A key as listed: never its secret, nor its hash.
pub fn key_view(k: &ApiKeyRecord, now: Timestamp) -> Value {
    let status = if k.revoked() {
        "revoked"
    } else if k.expires_at.is_some_and(|e| e <= now) {
        "expired"
    } else {
        "active"
    };
    json!({
        "id": k.id,
        "role": k.role.as_str(),
        "tenant_id": k.tenant_id.map(|t| t.to_string()),
        "name": k.name,
        "status": status,
        "created_at": k.created_at.to_string(),
        "expires_at": k.expires_at.map(|t| t.to_string()),
        "revoked_at": k.revoked_at.map(|t| t.to_string()),
        "rotated_at": k.rotated_at.map(|t| t.to_string()),
        "previous_secret_valid_until": k.previous.as_ref().map(|(_, t)| *t).filter(|t| *t > now).map(|t| t.to_string()),
        "nodes": if k.nodes.is_empty() { Value::Null } else { json!(k.nodes) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";

    #[test]
    fn tenant_roles_need_a_tenant_and_platform_roles_take_none() {
        assert!(key_request(Some("finops"), Some(T), None).is_ok());
        assert!(key_request(Some("platform_admin"), None, Some("ops")).is_ok());
        assert!(key_request(Some("sampler"), None, None).is_ok());
        assert!(key_request(Some("usage_reporter"), None, None).is_ok());
        let nodes = vec!["gpu-node-3".to_string()];
        let now = Timestamp(1_790_812_800_000);
        assert_eq!(
            key_request_full(Some("sampler"), None, None, None, Some(&nodes), now)
                .expect("a sampler bound to a node")
                .nodes,
            nodes
        );
        assert_eq!(
            key_request_full(Some("viewer"), Some(T), None, None, Some(&nodes), now)
                .expect_err("not a sampler")[0]
                .field,
            "nodes"
        );
        assert_eq!(
            key_request_full(Some("viewer"), Some(T), None, Some("2020-01-01"), None, now)
                .expect_err("past")[0]
                .field,
            "expires_at"
        );
        assert_eq!(
            key_request(Some("finops"), None, None).expect_err("no tenant")[0].field,
            "tenant_id"
        );
        assert_eq!(
            key_request(Some("sampler"), Some(T), None).expect_err("tenant")[0].field,
            "tenant_id"
        );
        assert_eq!(
            key_request(Some("root"), None, None).expect_err("role")[0].field,
            "role"
        );
        assert_eq!(
            key_request(None, None, None).expect_err("role")[0].field,
            "role"
        );
        assert_eq!(
            key_request(Some("viewer"), Some("acme"), None).expect_err("uuid")[0].field,
            "tenant_id"
        );
    }
}

//! Tenants: `Tenant` (the list is [`super::Items`]).

use serde::{Deserialize, Serialize};

/// A registered tenant.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tenant {
    pub id: String,
    pub slug: String,
    pub name: String,
}

impl Tenant {
    pub fn of(t: &eai_engine::domain::Tenant) -> Self {
        Tenant {
            id: t.id.to_string(),
            slug: t.slug.as_str().to_string(),
            name: t.name.clone(),
        }
    }
}

/// The body of `POST /v1/tenants`, read as given (`routes::tenants` checks it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TenantCreate {
    pub slug: Option<String>,
    pub name: Option<String>,
    pub id: Option<String>,
}

//! Tenants: `Tenant` (the list is [`super::Items`]).

use serde::Serialize;

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

//! The API's answers as types: one serde struct per resource answer, each named after its component schema in
//! `contracts/v1/openapi.json` (`tests/http/views.rs` holds the table of both and compares their shapes). A
//! route builds one of these from domain values and answers it; error envelopes go through [`crate::error`].
//!
//! With the `schema` feature (this crate's tests) every view also derives `schemars::JsonSchema`.

use axum::http::StatusCode;
use rust_decimal::Decimal;
use serde::{Serialize, Serializer};

use crate::auth::Done;
use crate::error::ApiError;

pub mod anomaly;
pub mod audit;
pub mod budget;
pub mod forecast;
pub mod ingest;
pub mod key;
pub mod policy;
pub mod provider;
pub mod recommendation;
pub mod series;
pub mod statement;
pub mod system;
pub mod tenant;
pub mod token_cost;

/// The answer of an allowed mutation: `view` as the JSON body of `status`.
pub fn done<T: Serialize>(status: StatusCode, view: &T) -> Result<Done, ApiError> {
    let body = serde_json::to_value(view)
        .map_err(|e| ApiError::internal(format!("cannot write the answer: {e}")))?;
    Ok(Done { status, body })
}

/// `{"items": [...]}`: every list answer.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Items<T> {
    pub items: Vec<T>,
}

impl<T> From<Vec<T>> for Items<T> {
    fn from(items: Vec<T>) -> Self {
        Items { items }
    }
}

/// A count as an exact JSON number (`12`, `0.5`): the decimal's digits, never a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub Decimal);

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A normalized decimal is always a JSON number; `null` only if that ever stopped being so.
        match self.0.normalize().to_string().parse::<serde_json::Number>() {
            Ok(n) => n.serialize(s),
            Err(_) => s.serialize_none(),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Count {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Count".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "number" })
    }
}

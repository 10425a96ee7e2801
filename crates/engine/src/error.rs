//! Errors of the engine's edge: a value that cannot become a domain type, with the field it came from.

use std::fmt;

/// One rejected field: where it is (record index, field name) and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            index: None,
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error, located in record `index` of a batch.
    pub fn at(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }

    /// The same error, with its field name set (used when a generic parser reports a field).
    pub fn field(mut self, field: &str) -> Self {
        self.field = field.to_string();
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "record {i}, field `{}`: {}", self.field, self.reason),
            None => write!(f, "field `{}`: {}", self.field, self.reason),
        }
    }
}

impl std::error::Error for FieldError {}

/// A whole input rejected: every bad field of every record, so that a caller can fix them all at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} invalid field(s): {}", .0.len(), .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
pub struct ValidationErrors(pub Vec<FieldError>);

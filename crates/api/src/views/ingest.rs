//! What an ingest accepted: `GpuSampleIngestResult`, `UsageEventIngestResult`.

use serde::Serialize;

/// `POST /v1/finops/gpu/samples`: samples stored, and those already stored (same key, same values).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuSampleIngestResult {
    pub accepted: usize,
    pub duplicates: u64,
}

/// `POST /v1/usage/events`: events accepted (a repeated event id is accepted again, stored once).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UsageEventIngestResult {
    pub accepted: usize,
}

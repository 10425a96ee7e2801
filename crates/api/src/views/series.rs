//! Cost per step: `AllocationSeries`, its `SeriesStep`s, `SeriesTotal`s and `SeriesDeployment`s.

use eai_engine::view::Quantity;
use serde::Serialize;

/// A step's (or the period's) figures in one currency.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesTotal {
    pub currency: String,
    pub cost: String,
    pub allocated: String,
    pub unallocated: String,
}

/// One deployment in a step: null money when it served tokens but cost nothing then.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesDeployment {
    pub deployment_id: String,
    pub currency: Option<String>,
    pub cost: Option<String>,
    pub allocated: Option<String>,
    pub unallocated: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_out: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens: Quantity,
    pub cost_per_mtok: Option<String>,
}

/// One step `[from, to)`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesStep {
    pub from: String,
    pub to: String,
    pub totals: Vec<SeriesTotal>,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_out: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens: Quantity,
    pub deployments: Vec<SeriesDeployment>,
}

/// `GET /v1/finops/gpu/allocation/series`: the period, its step, its totals and every step.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AllocationSeries {
    pub from: String,
    pub to: String,
    pub step: &'static str,
    pub totals: Vec<SeriesTotal>,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_in: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens_out: Quantity,
    #[cfg_attr(feature = "schema", schemars(with = "f64"))]
    pub tokens: Quantity,
    pub steps: Vec<SeriesStep>,
}

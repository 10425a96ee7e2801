//! eai-engine: the pure core of eai-gpu. GPU samples, tenant usage and allocation policies in; exact,
//! reconciled costs per deployment and tenant out, with every gap and unpriced sample reported.
//!
//! No async, no I/O, no clock: `now` is always an argument. Money is `rust_decimal`, never a float.
//!
//! The flow: [`wire`] parses JSON-shaped input into [`domain`] types; [`series::cells`] turns raw samples into
//! bucketed cells (filling short gaps, reporting long ones); [`rollup::aggregate`] merges cells into rollups;
//! [`allocate::allocate`] prices rollups with [`policy`] matching and splits them between tenants.

pub mod allocate;
pub mod allocation_series;
pub mod anomaly;
pub mod backoff;
pub mod batch;
pub mod breakdown;
pub mod budget;
mod decimal_ops;
pub mod domain;
pub mod error;
pub mod fixed;
pub mod focus;
pub mod forecast;
pub mod gpu_usage;
pub mod money;
pub mod policy;
pub mod provider;
pub mod recommend;
pub mod report;
pub mod rollup;
pub mod scope;
pub mod series;
pub mod shares;
pub mod slurm;
pub mod statement;
pub mod stats;
pub mod time;
pub mod tokens;
pub mod view;
pub mod wire;

pub use allocate::{allocate, allocate_samples, price, AllocationConfig, AllocationInput};
pub use domain::{Policy, PolicySpec, Sample, Tenant, TenantId, TenantSlug, UsageEvent};
pub use error::{FieldError, ValidationErrors};
pub use money::{Currency, Money};
pub use report::{Allocation, DeploymentRow, Finding, Gap, Item, TenantRow};
pub use rollup::{Quantities, Rollup, RollupKey};
pub use series::SeriesConfig;
pub use time::{Period, Timestamp};

//! GPU samples in SQLite: compact raw rows, and hourly rollups and gaps kept up to date in the ingest transaction,
//! so that an allocation reads GPU-hours, never raw rows.
//!
//! The maintenance algorithm (fast path for appended samples, dirty GPU-hours recomputed from raw samples for
//! late ones, frozen hours after pruning) is [`crate::rollups`], and the steps of a batch are
//! [`crate::plan::ingest`], shared with PostgreSQL: this module reads what they ask for and writes what they plan,
//! all in one `IMMEDIATE` transaction.

mod groups;
mod ingest;
mod meta;
mod reads;
mod retention;
mod rows;

pub use groups::rebuild_all_groups;
pub use ingest::insert;
pub use meta::{equal_shares, meta_get, meta_set, record_cuts};
pub use reads::{
    deployments_seen, gpu_usage, latest_samples, nodes_last_seen, replica_extent, replica_rows,
    usage_for,
};
pub use retention::prune;

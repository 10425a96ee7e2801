//! The read caches: what a read decoded once, kept in memory while the change counts of its buckets stay
//! (`hour_changes`, kept by the backends' triggers), so that a month's allocation or breakdown reads only the
//! buckets written since the last one. No I/O here: the backends read the counts and the missing buckets, and
//! hand them over.
//!
//! - [`read_cache`]: the allocation's (group rollups and usage claims per bucket), and the bookkeeping both share;
//! - [`usage_cache`]: the breakdown's (per-GPU rows in compact form, under the same counts).

pub mod read_cache;
pub mod usage_cache;

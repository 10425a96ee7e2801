//! Every change of the store planned once, for both backends, without I/O: what a backend must read, what it
//! then writes, and every refusal, decided here; a backend only binds, sends and decodes. Above the rules
//! ([`crate::records`], [`crate::budgets`], [`crate::rollups`]), below the backends.
//!
//! - [`ingest`]: one sample batch as a state machine (encode, the reads it asks for, split, plan, the writes),
//!   which each backend's driver answers step by step, with [`recompute`] for the GPU-hours it dirties;
//! - [`prune`]: one prune (the hours to re-cut before they freeze, each GPU's range), with [`recompute`] too;
//! - [`usage`]: one upsert of usage events (order, scope, the claims and spend it changes);
//! - [`changes`]: every other change (policies, keys, tenants, budgets, reservations, alerts, deliveries, the
//!   audit chain's next link).

pub mod changes;
pub mod ingest;
pub mod prune;
pub mod recompute;
pub mod usage;

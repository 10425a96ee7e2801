//! The wall clock, read in one place (the engine never reads one: `now` is its argument). A leaf: it imports
//! nothing of this crate.

use std::time::{SystemTime, UNIX_EPOCH};

use eai_engine::time::Timestamp;

/// The wall clock as the engine counts time (the engine itself never reads a clock).
pub fn now() -> Timestamp {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    Timestamp(i64::try_from(ms).unwrap_or(i64::MAX))
}

//! One prune, planned without I/O: the new horizon and the hours about to freeze that hold a policy cut
//! ([`Refreeze`]: rebuilt from raw samples while they last), and each GPU's range of raw rows to classify
//! ([`range`]). Which rows of that range leave only their end is [`crate::rollups::pruned`]'s decision
//! ([`crate::rollups::pruned::prune_gpu`]); each backend reads and writes around both.

use std::collections::BTreeSet;

use eai_engine::time::Timestamp;

use crate::outbox::OutboxRows;
use crate::plan::recompute::Recompute;
use crate::rollups::groups::GroupKey;
use crate::rollups::{self, Cuts, RollupConfig};

/// What a prune recomputes before it freezes hours (see [`crate::rollups::refreeze`]): the new horizon, the
/// hours about to freeze that hold a policy cut (rebuilt from raw samples while they last), and what rebuilding
/// them adds: the replica rows (when the store keeps an outbox) and the groups to rebuild from their rows.
#[derive(Debug)]
pub struct Refreeze {
    pub horizon: i64,
    cfg: RollupConfig,
    cuts: Cuts,
    pub outbox: Option<OutboxRows>,
    pub stale: BTreeSet<GroupKey>,
}

impl Refreeze {
    /// The plan of a prune at `before`, given the cuts and the last horizon (`recorded`), with the hours to
    /// rebuild, in order.
    pub fn new(
        cuts: Cuts,
        recorded: Option<i64>,
        before: Timestamp,
        cfg: &RollupConfig,
    ) -> (Refreeze, Vec<i64>) {
        let (horizon, hours) = rollups::refreeze(&cuts, recorded, before, cfg);
        let plan = Refreeze {
            horizon,
            cfg: *cfg,
            cuts,
            outbox: cfg.outbox.then(OutboxRows::default),
            stale: Default::default(),
        };
        (plan, hours.into_iter().collect())
    }

    /// The recomputation of the hours to rebuild ([`Recompute::bucket`], GPU by GPU).
    pub fn recompute(&mut self) -> Recompute<'_> {
        Recompute {
            cfg: self.cfg,
            cuts: &self.cuts,
            outbox: self.outbox.as_mut(),
            stale: &mut self.stale,
        }
    }
}

/// The range `[lo, cutoff)` of one GPU's raw rows that a prune at `before` classifies, given its last stored end,
/// the first end written below the last horizon since (`pending`) and the last horizon (`recorded`): from the
/// older of those two to the GPU's cutoff ([`crate::rollups::prune_cutoff`]); `None` when empty.
pub fn range(
    before: Timestamp,
    last: i64,
    pending: Option<i64>,
    recorded: Option<i64>,
) -> Option<(i64, i64)> {
    let cutoff = rollups::prune_cutoff(before, last);
    let lo = pending
        .unwrap_or(i64::MAX)
        .min(recorded.unwrap_or(i64::MIN));
    (lo < cutoff).then_some((lo, cutoff))
}

//! One GPU-hour recomputed from raw samples, planned without I/O: at ingest, the hours late samples dirty
//! ([`crate::plan::ingest::Write::Recompute`]); at pruning, the hours about to freeze, re-cut
//! ([`crate::plan::prune::Refreeze::recompute`]). The terms are [`crate::rollups`]'; the backend reads the
//! hour's raw context and writes what [`Recompute::bucket`] returns.

use std::collections::BTreeSet;

use eai_engine::domain::Sample;
use eai_engine::report::Gap;
use eai_engine::rollup::{aggregate, Rollup};

use crate::outbox::OutboxRows;
use crate::rollups::groups::GroupKey;
use crate::rollups::{self, Cuts, RollupConfig};

/// A GPU-hour recomputed from raw samples (at ingest, the hours late samples dirty; at pruning, the hours about
/// to freeze, re-cut): what it writes, and what it adds to the replica rows and the stale groups.
#[derive(Debug)]
pub struct Recompute<'p> {
    pub cfg: RollupConfig,
    pub cuts: &'p Cuts,
    pub outbox: Option<&'p mut OutboxRows>,
    pub stale: &'p mut BTreeSet<GroupKey>,
}

impl Recompute<'_> {
    /// Whether the backend must read the rows a recomputation replaces first (for the replica).
    pub fn wants_replaced(&self) -> bool {
        self.outbox.is_some()
    }

    /// The rows of GPU-hour `h` from its raw context (the stored samples whose terms reach it, oldest first;
    /// [`rollups::context_range`]): its rollup rows (cut at the cuts) and the gaps that start in it.
    /// `replaced_keys`: the group keys of the rows it replaces; `replaced`: those rows and the hour's gaps, when
    /// [`Recompute::wants_replaced`].
    pub fn bucket(
        &mut self,
        h: i64,
        context: &[Sample],
        replaced_keys: impl IntoIterator<Item = GroupKey>,
        replaced: Option<(Vec<Rollup>, Vec<Gap>)>,
    ) -> (Vec<Rollup>, Vec<Gap>) {
        let (cells, gaps) = rollups::bucket_terms(context, &self.cfg, self.cuts, h);
        let fresh = aggregate(cells);
        self.stale.extend(replaced_keys);
        self.stale
            .extend(fresh.iter().map(|r| GroupKey::of(&r.key)));
        if let (Some(o), Some((old_rollups, old_gaps))) = (self.outbox.as_deref_mut(), replaced) {
            o.recomputed(&old_rollups, &fresh, &old_gaps, &gaps);
        }
        (fresh, gaps)
    }
}

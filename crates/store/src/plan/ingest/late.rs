//! The late samples of a batch looked up by runs, without I/O: which runs a backend reads ([`late_runs`]), and
//! what its reads say of each late sample ([`late_lookups`]): stored already, and its stored neighbours' ends.

use std::collections::HashMap;

use eai_engine::domain::Sample;

use crate::{Result, StoreError};

/// A late sample as the backend names it to read it: (GPU id, window end).
pub type LateKey = (i64, i64);

/// Late samples of one GPU looked up together: (GPU id, first end, last end) ([`late_runs`]).
pub type LateRun = (i64, i64, i64);

/// What a backend read of a [`LateRun`]: the ends of its GPU's stored raw rows in `[first, last]`, in order, and
/// the nearest stored end before `first` and after `last`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRead {
    pub stored: Vec<i64>,
    pub before: Option<i64>,
    pub after: Option<i64>,
}

/// One late sample as looked up: (stored already, end of the stored sample before, end of the one after).
pub type Lookup = (bool, Option<i64>, Option<i64>);

/// How far apart two late samples of a GPU may end and still be read as one run ([`late_runs`]): a run reads the
/// stored rows between its ends, so the span bounds that read (20 rows at 15 s windows) while a backfill's
/// batch (consecutive windows) stays one run per GPU.
pub const LATE_RUN_SPAN_MS: i64 = 300_000;

/// The runs of `late` (in any order), in GPU id and end order: each GPU's late ends, split where
/// two consecutive ones are more than `span` apart. A run is read with three index probes and one range of the
/// rows between its ends, instead of three probes per sample (a batch of a backfill is one run per GPU); the
/// split bounds the range a run reads to the rows within `span` of its samples (shuffled windows: about one run
/// per sample, as before).
pub fn late_runs(late: &[LateKey], span: i64) -> Vec<LateRun> {
    let mut runs: Vec<LateRun> = Vec::new();
    for (id, end) in sorted(late) {
        match runs.last_mut() {
            Some((g, _, hi)) if *g == id && end - *hi <= span => *hi = end.max(*hi),
            _ => runs.push((id, end, end)),
        }
    }
    runs
}

/// Per late sample, from its run's read (`reads[i]` of `runs[i]`, both from [`late_runs`] of `late`): whether it
/// is stored, and the stored ends on either side of it.
pub fn late_lookups(
    late: &[LateKey],
    runs: &[LateRun],
    reads: &[RunRead],
) -> Result<HashMap<LateKey, Lookup>> {
    if runs.len() != reads.len() {
        return Err(StoreError::Internal(format!(
            "ingest: {} late runs, {} read",
            runs.len(),
            reads.len()
        )));
    }
    let mut out = HashMap::with_capacity(late.len());
    let mut run = runs.iter().zip(reads).peekable();
    for (id, end) in sorted(late) {
        while run
            .peek()
            .is_some_and(|((g, _, hi), _)| (*g, *hi) < (id, end))
        {
            run.next();
        }
        let Some(((g, lo, _), read)) = run.peek() else {
            return Err(StoreError::Internal(
                "ingest: a late sample outside its runs".into(),
            ));
        };
        if *g != id || end < *lo {
            return Err(StoreError::Internal(
                "ingest: a late sample outside its runs".into(),
            ));
        }
        let s = &read.stored;
        let at = s.partition_point(|&x| x < end);
        let stored = s.get(at) == Some(&end);
        let before = at.checked_sub(1).map(|i| s[i]).or(read.before);
        let next = s.partition_point(|&x| x <= end);
        let after = s.get(next).copied().or(read.after);
        out.insert((id, end), (stored, before, after));
    }
    Ok(out)
}

fn sorted(keys: &[LateKey]) -> Vec<LateKey> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys
}

/// What the backend read of one late sample (before writing anything): whether its window is stored already as
/// a raw row, and the raw rows of its GPU just before and just after it.
#[derive(Debug, Clone, Default)]
pub struct LateRead {
    pub stored: bool,
    pub before: Option<Sample>,
    pub after: Option<Sample>,
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Runs read as a backend reads them answer, for every late sample, what a probe per sample answers.
        #[test]
        fn runs_answer_what_probes_per_sample_do(
            stored in proptest::collection::btree_set((0i64..3, 0i64..200), 0..120),
            late in proptest::collection::btree_set((0i64..3, 0i64..200), 1..60),
            span in 0i64..40,
            rotate in 0usize..60,
        ) {
            // In any order (a batch's GPUs come in uuid order, not id order).
            let mut late: Vec<LateKey> = late.into_iter().rev().collect();
            let r = rotate % late.len();
            late.rotate_left(r);
            let mut per_gpu: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
            for (g, e) in &stored {
                per_gpu.entry(*g).or_default().insert(*e);
            }
            let none = BTreeSet::new();
            let ends = |g: i64| per_gpu.get(&g).unwrap_or(&none);
            let runs = late_runs(&late, span);
            let reads: Vec<RunRead> = runs
                .iter()
                .map(|&(g, lo, hi)| RunRead {
                    stored: ends(g).range(lo..=hi).copied().collect(),
                    before: ends(g).range(..lo).next_back().copied(),
                    after: ends(g).range(hi + 1..).next().copied(),
                })
                .collect();
            for w in runs.windows(2) {
                prop_assert!((w[0].0, w[0].2) < (w[1].0, w[1].1), "runs in order, apart");
            }
            let got = late_lookups(&late, &runs, &reads).unwrap();
            prop_assert_eq!(got.len(), late.len());
            for (g, e) in &late {
                let want = (
                    ends(*g).contains(e),
                    ends(*g).range(..*e).next_back().copied(),
                    ends(*g).range(e + 1..).next().copied(),
                );
                prop_assert_eq!(got[&(*g, *e)], want, "gpu {} end {}", g, e);
            }
        }
    }
}

//! The threads of an allocation: how much work makes them worth it, the accumulation over slices of rollups,
//! and the settlement of deployments by whichever thread is free; the answer never depends on the split.

use super::accumulate::{accumulate, merge_deps, Dep};
use super::settle::{settle, Settled};
use super::Ctx;
use crate::report::Finding;
use crate::rollup::Rollup;

/// Below this many rollups the accumulation runs on one thread (threads cost more than they save).
pub(super) const PARALLEL_MIN_ROLLUPS: usize = 100_000;
/// From this many usage events and claims, they are gathered on a thread of their own during the accumulation.
pub(super) const PARALLEL_MIN_CLAIMS: usize = 10_000;
/// Below this many (deployment, owner) buckets the settlement runs on one thread.
pub(super) const PARALLEL_MIN_BUCKETS: usize = 5_000;

/// Step 1 on `threads` threads: each sums a slice of the rollups, then the sums are added up.
pub(super) fn accumulate_all<'a>(
    ctx: &Ctx<'_>,
    rollups: &'a [Rollup],
    threads: usize,
) -> (Vec<Dep<'a>>, Vec<Finding>) {
    if threads <= 1 {
        return accumulate(ctx, rollups);
    }
    let chunk = rollups.len().div_ceil(threads).max(1);
    let parts: Vec<(Vec<Dep<'a>>, Vec<Finding>)> = std::thread::scope(|s| {
        let handles: Vec<_> = rollups
            .chunks(chunk)
            .map(|c| s.spawn(|| accumulate(ctx, c)))
            .collect();
        handles.into_iter().map(joined).collect()
    });
    let mut deps: Vec<Dep<'a>> = Vec::new();
    let mut findings = Vec::new();
    for (d, f) in parts {
        deps = merge_deps(deps, d);
        findings.extend(f);
    }
    (deps, findings)
}

/// The result of a scoped thread; its panic, if it panicked.
pub(super) fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Step 3 on `threads` threads (this one included), in deployment order whatever the threads.
pub(super) fn settle_all(ctx: &Ctx<'_>, deps: &[Dep<'_>], threads: usize) -> Vec<Settled> {
    if threads <= 1 || deps.len() <= 1 {
        return deps.iter().map(|d| settle(ctx, d)).collect();
    }
    // Costliest first (a shared deployment splits every bucket between its claims), each taken by whichever
    // thread is free: one busy core does not hold the others up.
    let mut order: Vec<usize> = (0..deps.len()).collect();
    order.sort_by_key(|&i| {
        let d = &deps[i];
        std::cmp::Reverse(d.owners.len() * ctx.n_buckets + d.events.len())
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Settled)> = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
            done.push((i, settle(ctx, &deps[i])));
        }
        done
    };
    let mut done: Vec<(usize, Settled)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for h in helpers {
            done.extend(joined(h));
        }
        done
    });
    // Back in deployment order: the answer does not depend on the threads.
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
}

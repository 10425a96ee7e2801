//! Step 1: rollups summed per deployment, pricing policy, owner and bucket, in fixed point; the findings of
//! rollups that straddle a policy boundary.

use std::collections::{HashMap, HashSet};

use super::claims::Claim;
use super::pricing::Acc;
use super::Ctx;
use crate::domain::TenantId;
use crate::policy::Candidates;
use crate::report::Finding;
use crate::rollup::{GpuSet, Rollup};

#[derive(Debug, Default)]
pub(super) struct Stats<'a> {
    pub(super) samples: u64,
    pub(super) estimated_samples: u64,
    pub(super) q: Acc,
    pub(super) gpus: HashSet<&'a str>,
    pub(super) last_gpu: &'a str,
    /// The GPU set of the last group rollup added (group rollups of consecutive hours share one).
    pub(super) last_set: Option<&'a GpuSet>,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Bucket {
    pub(super) measured: i128,
    pub(super) per_policy: PolicySums,
}

/// The sums of one bucket per pricing policy, in the order first seen. A bucket nearly always has one policy:
/// it is kept inline, so that a bucket costs no allocation of its own.
#[derive(Debug, Default, Clone)]
pub(super) struct PolicySums {
    pub(super) first: Option<(usize, Acc)>,
    pub(super) more: Vec<(usize, Acc)>,
}

impl PolicySums {
    pub(super) fn add(&mut self, p: usize, acc: &Acc) {
        match &mut self.first {
            None => self.first = Some((p, *acc)),
            Some((f, sum)) if *f == p => sum.merge(acc),
            Some(_) => match self.more.iter_mut().find(|(i, _)| *i == p) {
                Some((_, sum)) => sum.merge(acc),
                None => self.more.push((p, *acc)),
            },
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &(usize, Acc)> {
        self.first.iter().chain(&self.more)
    }
}

#[derive(Debug)]
pub(super) struct Dep<'a> {
    pub(super) id: &'a str,
    pub(super) dedicated: bool,
    /// Keyed by pricing policy; `None`: unpriced.
    pub(super) stats: Vec<(Option<usize>, Stats<'a>)>,
    /// Per owner (None: shared), one bucket per allocation bucket of the period.
    pub(super) owners: Vec<(Option<TenantId>, Vec<Bucket>)>,
    /// Usage claims on it: (bucket index, tenant, claim), sorted and merged.
    pub(super) events: Vec<(usize, TenantId, Claim)>,
}

/// Findings of the accumulation sorted independently of the order of the rollups.
pub(super) fn finding_order(f: &Finding) -> (String, String, i64) {
    match f {
        Finding::PolicyBoundaryInsideRollup {
            deployment_id,
            gpu_uuid,
            bucket_start,
            ..
        } => (deployment_id.clone(), gpu_uuid.clone(), bucket_start.0),
        other => (other.code().to_string(), String::new(), 0),
    }
}

/// Sums one slice of rollups. Deployments come back in first-seen order.
pub(super) fn accumulate<'a>(ctx: &Ctx<'_>, rollups: &'a [Rollup]) -> (Vec<Dep<'a>>, Vec<Finding>) {
    let (period, bucket_ms, n_buckets, policies) =
        (ctx.period, ctx.bucket_ms, ctx.n_buckets, ctx.policies);
    let mut findings = Vec::new();
    let mut deps: Vec<Dep<'a>> = Vec::new();
    let mut dep_index: HashMap<&str, usize> = HashMap::new();
    let mut candidates: HashMap<(&str, &str), Candidates> = HashMap::new();
    let mut last: Option<(&str, &str, usize, Candidates)> = None;
    for r in rollups {
        if !period.contains(r.key.bucket_start) {
            continue;
        }
        let (dep_id, model) = (r.key.deployment_id.as_str(), r.key.model.as_str());
        let (di, cand) = match &last {
            Some((d, m, di, c)) if *d == dep_id && *m == model => (*di, c),
            _ => {
                let c = candidates
                    .entry((dep_id, model))
                    .or_insert_with(|| Candidates::for_key(policies, dep_id, model))
                    .clone();
                let di = *dep_index.entry(dep_id).or_insert_with(|| {
                    deps.push(Dep {
                        id: dep_id,
                        dedicated: false,
                        stats: Vec::new(),
                        owners: Vec::new(),
                        events: Vec::new(),
                    });
                    deps.len() - 1
                });
                last = Some((dep_id, model, di, c));
                match &last {
                    Some((_, _, di, c)) => (*di, c),
                    None => continue,
                }
            }
        };
        let policy = cand.pick(policies, r.first_window_start);
        if r.first_window_start != r.last_window_start
            && cand.boundary_within(policies, r.first_window_start, r.last_window_start)
        {
            findings.push(Finding::PolicyBoundaryInsideRollup {
                deployment_id: r.key.deployment_id.clone(),
                gpu_uuid: r.key.gpu_uuid.clone(),
                bucket_start: r.key.bucket_start,
                gpu_seconds: r.q.gpu_seconds,
            });
        }
        let dep = &mut deps[di];
        dep.dedicated |= r.key.owner.is_some();
        let si = match dep.stats.iter().position(|(p, _)| *p == policy) {
            Some(i) => i,
            None => {
                dep.stats.push((policy, Stats::default()));
                dep.stats.len() - 1
            }
        };
        let st = &mut dep.stats[si].1;
        st.samples += r.samples;
        st.estimated_samples += r.estimated_samples;
        let mut acc = Acc::default();
        acc.add(&r.q);
        st.q.merge(&acc);
        match &r.gpus {
            Some(set) => {
                if !st.last_set.is_some_and(|l| std::sync::Arc::ptr_eq(l, set)) {
                    st.gpus.extend(set.iter().map(|g| &**g));
                    st.last_set = Some(set);
                }
            }
            None => {
                if st.last_gpu != r.key.gpu_uuid {
                    st.gpus.insert(r.key.gpu_uuid.as_str());
                    st.last_gpu = r.key.gpu_uuid.as_str();
                }
            }
        }
        let oi = match dep.owners.iter().position(|(o, _)| *o == r.key.owner) {
            Some(i) => i,
            None => {
                dep.owners
                    .push((r.key.owner, vec![Bucket::default(); n_buckets]));
                dep.owners.len() - 1
            }
        };
        let bi = usize::try_from((r.key.bucket_start.0 - period.from.0) / bucket_ms).unwrap_or(0);
        let Some(b) = dep.owners[oi].1.get_mut(bi) else {
            continue;
        };
        b.measured += acc.gs;
        if let Some(p) = policy {
            b.per_policy.add(p, &acc);
        }
    }
    (deps, findings)
}

/// Adds the sums of `b` into `a` (exact: integer sums and set unions).
pub(super) fn merge_deps<'a>(mut a: Vec<Dep<'a>>, b: Vec<Dep<'a>>) -> Vec<Dep<'a>> {
    for d in b {
        let Some(t) = a.iter_mut().find(|x| x.id == d.id) else {
            a.push(d);
            continue;
        };
        t.dedicated |= d.dedicated;
        for (p, st) in d.stats {
            match t.stats.iter_mut().find(|(q, _)| *q == p) {
                Some((_, ts)) => {
                    ts.samples += st.samples;
                    ts.estimated_samples += st.estimated_samples;
                    ts.q.merge(&st.q);
                    ts.gpus.extend(st.gpus);
                }
                None => t.stats.push((p, st)),
            }
        }
        for (owner, buckets) in d.owners {
            match t.owners.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, tb)) => {
                    for (x, y) in tb.iter_mut().zip(buckets) {
                        x.measured += y.measured;
                        for (p, acc) in y.per_policy.iter() {
                            x.per_policy.add(*p, acc);
                        }
                    }
                }
                None => t.owners.push((owner, buckets)),
            }
        }
    }
    a
}

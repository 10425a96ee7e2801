//! Slurm reconciliation (SPEC §12): per job, the GPU-seconds Slurm allocated (`sacct --json`: the job's
//! `gres/gpu` TRES times its run time) beside the GPU-seconds measured (the samplers' `job-<id>` workloads), how
//! busy those GPUs were, and what the job cost at the policies in force; jobs whose GPUs sat mostly idle are
//! marked. Pure: the caller runs `sacct` (or receives its output) and computes the breakdown.
//!
//! Slurm bills allocated GPUs times wall time; we measure each GPU every window. The two agree on a job's
//! GPU-seconds to within the sampler's window at each end of the job (a GPU is charged for a window it was held
//! at the window's end), unless the sampler missed the node (`not_measured`) or Slurm's accounting has no
//! record of a job we measured (`not_in_slurm`).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::Deserialize;

use crate::breakdown::{Breakdown, Dimension};
use crate::domain::TenantId;
use crate::money::Currency;
use crate::time::{Period, Timestamp};

/// A job as Slurm's accounting records it (the fields read from `sacct --json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctJob {
    pub job_id: String,
    pub account: String,
    pub user: String,
    pub partition: String,
    pub state: String,
    /// When it started (none: never started).
    pub start: Option<Timestamp>,
    /// When it ended (none: still running).
    pub end: Option<Timestamp>,
    /// GPUs allocated (`gres/gpu` of its allocated TRES).
    pub gpus: u32,
}

/// A `sacct --json` document: only what is read of it (every other field is ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SacctDoc {
    jobs: Option<Vec<SacctRaw>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SacctRaw {
    job_id: Option<Num>,
    account: Option<String>,
    user: Option<String>,
    partition: Option<String>,
    state: Option<StateRaw>,
    time: Option<TimeRaw>,
    tres: Option<TresRaw>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct StateRaw {
    current: Option<OneOrMany>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct TimeRaw {
    start: Option<Num>,
    end: Option<Num>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct TresRaw {
    allocated: Option<Vec<TresRow>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct TresRow {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    count: Option<Num>,
}

/// A number as Slurm 22.05 writes it, or wrapped as Slurm 23 does (`{"set": true, "number": n}`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Num {
    Plain(u64),
    Wrapped {
        set: Option<bool>,
        number: Option<u64>,
    },
    Other(serde::de::IgnoredAny),
}

impl Num {
    fn get(&self) -> Option<u64> {
        match self {
            Num::Plain(n) => Some(*n),
            Num::Wrapped { set, number } if *set != Some(false) => *number,
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// The jobs of a `sacct --json` document (Slurm 22.05 writes plain numbers; later versions wrap them as
/// `{"set": true, "number": n}` and list states: both are read). Jobs that never started are left out; an error
/// names what is missing.
pub fn parse_sacct(doc: &SacctDoc) -> Result<Vec<SacctJob>, String> {
    let jobs = doc
        .jobs
        .as_ref()
        .ok_or("no `jobs` array: give the output of `sacct --json`")?;
    let mut out = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let id = j
            .job_id
            .as_ref()
            .and_then(Num::get)
            .ok_or_else(|| format!("jobs[{i}] has no job_id"))?;
        let at = |n: Option<&Num>| {
            n.and_then(Num::get)
                .filter(|s| *s > 0)
                .map(|s| Timestamp(i64::try_from(s).unwrap_or(i64::MAX / 1000) * 1000))
        };
        let time = j.time.clone().unwrap_or_default();
        let Some(start) = at(time.start.as_ref()) else {
            continue;
        };
        let state = match j.state.as_ref().and_then(|s| s.current.as_ref()) {
            Some(OneOrMany::One(s)) => s.clone(),
            Some(OneOrMany::Many(a)) => a.join(","),
            None => String::new(),
        };
        let gpus = j
            .tres
            .as_ref()
            .and_then(|t| t.allocated.as_ref())
            .and_then(|a| {
                a.iter()
                    .find(|t| t.kind.as_deref() == Some("gres") && t.name.as_deref() == Some("gpu"))
            })
            .and_then(|t| t.count.as_ref().and_then(Num::get))
            .unwrap_or(0);
        out.push(SacctJob {
            job_id: id.to_string(),
            account: j.account.clone().unwrap_or_default(),
            user: j.user.clone().unwrap_or_default(),
            partition: j.partition.clone().unwrap_or_default(),
            state,
            start: Some(start),
            end: at(time.end.as_ref()).filter(|e| *e >= start),
            gpus: u32::try_from(gpus).unwrap_or(u32::MAX),
        });
    }
    Ok(out)
}

/// What was measured of one job: its `job-<id>` rows of a breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MeasuredJob {
    pub job_id: String,
    /// The namespace the sampler gave it: the job's account.
    pub account: Option<String>,
    pub deployment_id: Option<String>,
    pub tenant_id: Option<TenantId>,
    pub gpu_seconds: Decimal,
    pub busy_gpu_seconds: Decimal,
    pub cost: Vec<(Currency, Decimal)>,
}

/// The dimensions [`measured_jobs`] needs of a breakdown.
pub const GROUPING: [Dimension; 4] = [
    Dimension::Pod,
    Dimension::Namespace,
    Dimension::Deployment,
    Dimension::Tenant,
];

/// The jobs of a breakdown grouped by [`GROUPING`] (pods named `job-<id>`), summed per job.
pub fn measured_jobs(b: &Breakdown) -> Vec<MeasuredJob> {
    let at = |d: Dimension| b.group_by.iter().position(|g| *g == d);
    let (Some(pod), ns, dep, tenant) = (
        at(Dimension::Pod),
        at(Dimension::Namespace),
        at(Dimension::Deployment),
        at(Dimension::Tenant),
    ) else {
        return Vec::new();
    };
    let mut by: BTreeMap<String, MeasuredJob> = BTreeMap::new();
    for r in &b.rows {
        let Some(id) = r.key[pod]
            .as_deref()
            .and_then(|p| p.strip_prefix("job-"))
            .filter(|id| !id.is_empty())
        else {
            continue;
        };
        let value = |i: Option<usize>| i.and_then(|i| r.key[i].clone());
        let m = by.entry(id.to_string()).or_insert_with(|| MeasuredJob {
            job_id: id.to_string(),
            account: value(ns),
            deployment_id: value(dep),
            tenant_id: value(tenant).and_then(|t| t.parse().ok()),
            ..MeasuredJob::default()
        });
        m.gpu_seconds += r.q.gpu_seconds;
        m.busy_gpu_seconds += r.q.busy_gpu_seconds;
        for (c, a) in &r.cost {
            crate::money::add_to(&mut m.cost, *c, *a);
        }
    }
    by.into_values().collect()
}

/// How a job's two accounts compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Measured and allocated, its GPUs busy at least the threshold.
    Ok,
    /// Its GPUs were busy less than the threshold of the time Slurm allocated them.
    Idle,
    /// Slurm allocated GPUs in the period; nothing was measured of it (no sampler on its nodes, or its GPUs
    /// not mapped to it).
    NotMeasured,
    /// Measured, but not in Slurm's accounting for the period.
    NotInSlurm,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Idle => "idle",
            Status::NotMeasured => "not_measured",
            Status::NotInSlurm => "not_in_slurm",
        }
    }
}

/// One job of the reconciliation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLine {
    pub job_id: String,
    pub account: String,
    pub user: Option<String>,
    pub partition: Option<String>,
    pub state: Option<String>,
    pub tenant_id: Option<TenantId>,
    pub deployment_id: Option<String>,
    /// GPUs Slurm allocated (none: not in Slurm's accounting).
    pub gpus: Option<u32>,
    /// Slurm's GPUs times the part of the job's run time inside the period.
    pub allocated_gpu_seconds: Option<Decimal>,
    pub measured_gpu_seconds: Decimal,
    pub busy_gpu_seconds: Decimal,
    /// Busy GPU-seconds over allocated (or, not in Slurm, over measured) GPU-seconds, 4 places.
    pub busy_share: Option<Decimal>,
    pub cost: Vec<(Currency, Decimal)>,
    pub status: Status,
}

/// The reconciliation of a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciliation {
    pub from: Timestamp,
    pub to: Timestamp,
    pub idle_below: Decimal,
    /// Jobs in job id order (numerically where the ids are numbers).
    pub jobs: Vec<JobLine>,
    pub allocated_gpu_seconds: Decimal,
    pub measured_gpu_seconds: Decimal,
    /// The cost of the jobs marked idle, per currency.
    pub idle_cost: Vec<(Currency, Decimal)>,
}

/// Joins Slurm's jobs (those with GPUs, run time inside `period`; a running job counts up to `now`) with the
/// measured ones. `idle_below`: a busy share under it marks the job idle.
pub fn reconcile(
    sacct: &[SacctJob],
    measured: &[MeasuredJob],
    period: Period,
    now: Timestamp,
    idle_below: Decimal,
) -> Reconciliation {
    let mut measured: BTreeMap<&str, &MeasuredJob> =
        measured.iter().map(|m| (m.job_id.as_str(), m)).collect();
    let mut jobs = Vec::new();
    let share =
        |busy: Decimal, of: Decimal| (!of.is_zero()).then(|| (busy / of).round_dp(4).normalize());
    for s in sacct.iter().filter(|s| s.gpus > 0) {
        let Some(start) = s.start else { continue };
        let end = s.end.unwrap_or(now);
        let from = start.max(period.from);
        let to = end.min(period.to);
        if to <= from {
            continue;
        }
        let seconds = Decimal::new(to.0 - from.0, 3);
        let allocated = (seconds * Decimal::from(s.gpus)).normalize();
        let m = measured.remove(s.job_id.as_str());
        let (gs, busy) = m.map_or((Decimal::ZERO, Decimal::ZERO), |m| {
            (m.gpu_seconds, m.busy_gpu_seconds)
        });
        let busy_share = share(busy, allocated);
        let status = match m {
            None => Status::NotMeasured,
            Some(_) if busy_share.is_some_and(|b| b < idle_below) => Status::Idle,
            Some(_) => Status::Ok,
        };
        jobs.push(JobLine {
            job_id: s.job_id.clone(),
            account: s.account.clone(),
            user: Some(s.user.clone()).filter(|u| !u.is_empty()),
            partition: Some(s.partition.clone()).filter(|p| !p.is_empty()),
            state: Some(s.state.clone()).filter(|p| !p.is_empty()),
            tenant_id: m.and_then(|m| m.tenant_id),
            deployment_id: m.and_then(|m| m.deployment_id.clone()),
            gpus: Some(s.gpus),
            allocated_gpu_seconds: Some(allocated),
            measured_gpu_seconds: gs.normalize(),
            busy_gpu_seconds: busy.normalize(),
            busy_share,
            cost: m.map(|m| m.cost.clone()).unwrap_or_default(),
            status,
        });
    }
    for m in measured.into_values() {
        jobs.push(JobLine {
            job_id: m.job_id.clone(),
            account: m.account.clone().unwrap_or_default(),
            user: None,
            partition: None,
            state: None,
            tenant_id: m.tenant_id,
            deployment_id: m.deployment_id.clone(),
            gpus: None,
            allocated_gpu_seconds: None,
            measured_gpu_seconds: m.gpu_seconds.normalize(),
            busy_gpu_seconds: m.busy_gpu_seconds.normalize(),
            busy_share: share(m.busy_gpu_seconds, m.gpu_seconds),
            cost: m.cost.clone(),
            status: Status::NotInSlurm,
        });
    }
    jobs.sort_by(|a, b| {
        let key = |j: &JobLine| (j.job_id.parse::<u64>().ok(), j.job_id.clone());
        key(a).cmp(&key(b))
    });
    let mut idle_cost: Vec<(Currency, Decimal)> = Vec::new();
    for j in jobs.iter().filter(|j| j.status == Status::Idle) {
        for (c, a) in &j.cost {
            crate::money::add_to(&mut idle_cost, *c, *a);
        }
    }
    idle_cost.sort_by_key(|(c, _)| *c);
    Reconciliation {
        from: period.from,
        to: period.to,
        idle_below,
        allocated_gpu_seconds: jobs
            .iter()
            .filter_map(|j| j.allocated_gpu_seconds)
            .sum::<Decimal>()
            .normalize(),
        measured_gpu_seconds: jobs
            .iter()
            .map(|j| j.measured_gpu_seconds)
            .sum::<Decimal>()
            .normalize(),
        jobs,
        idle_cost,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;
    use serde_json::json;

    use super::{parse_sacct, reconcile, MeasuredJob, SacctDoc, SacctJob, Status};
    use crate::money::Currency;
    use crate::time::{Period, Timestamp};

    fn period(from: i64, to: i64) -> Period {
        Period::new(Timestamp(from), Timestamp(to), 3_600_000).unwrap()
    }

    #[test]
    fn sacct_jobs_are_read_with_their_gpus_and_run_time() {
        let doc = json!({"jobs": [
            {"job_id": 7, "account": "physics", "user": "ana", "partition": "gpu",
             "state": {"current": "COMPLETED"}, "time": {"start": 1000, "end": 1060, "elapsed": 60},
             "tres": {"allocated": [{"type": "cpu", "name": null, "count": 2},
                                    {"type": "gres", "name": "gpu", "count": 2}]}},
            {"job_id": {"set": true, "number": 8}, "account": "bio", "user": "bo", "partition": "gpu",
             "state": {"current": ["RUNNING"]}, "time": {"start": {"set": true, "number": 1030}, "end": 0},
             "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": {"set": true, "number": 1}}]}},
            {"job_id": 9, "account": "bio", "state": {"current": "PENDING"}, "time": {"start": 0}}
        ]});
        let doc: SacctDoc = serde_json::from_value(doc).unwrap();
        let jobs = parse_sacct(&doc).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].gpus, 2);
        assert_eq!(jobs[0].end, Some(Timestamp(1_060_000)));
        assert_eq!(jobs[1].job_id, "8");
        assert_eq!(jobs[1].state, "RUNNING");
        assert_eq!(jobs[1].end, None);
        let empty: SacctDoc = serde_json::from_value(json!({"meta": {}})).unwrap();
        assert!(parse_sacct(&empty).is_err());
    }

    #[test]
    fn jobs_are_matched_clipped_to_the_period_and_marked() {
        let job = |id: &str, gpus, start: i64, end: Option<i64>| SacctJob {
            job_id: id.into(),
            account: "physics".into(),
            user: "ana".into(),
            partition: "gpu".into(),
            state: "COMPLETED".into(),
            start: Some(Timestamp(start)),
            end: end.map(Timestamp),
            gpus,
        };
        let measured = |id: &str, gs: i64, busy: i64| MeasuredJob {
            job_id: id.into(),
            gpu_seconds: Decimal::from(gs),
            busy_gpu_seconds: Decimal::from(busy),
            cost: vec![(Currency::EUR, Decimal::new(123, 2))],
            ..MeasuredJob::default()
        };
        let sacct = [
            job("10", 2, 0, Some(3_600_000)),
            // Started before the period: only its part inside counts.
            job("2", 1, -1_800_000, Some(1_800_000)),
            // Running: up to now.
            job("11", 1, 3_000_000, None),
            job("12", 0, 0, Some(10_000)),
        ];
        let r = reconcile(
            &sacct,
            &[
                measured("10", 7200, 6000),
                measured("2", 1800, 10),
                measured("99", 60, 60),
            ],
            period(0, 3_600_000),
            Timestamp(3_300_000),
            Decimal::new(1, 1),
        );
        let got: Vec<(&str, Option<Decimal>, Decimal, Status)> = r
            .jobs
            .iter()
            .map(|j| {
                (
                    j.job_id.as_str(),
                    j.allocated_gpu_seconds,
                    j.measured_gpu_seconds,
                    j.status,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "2",
                    Some(Decimal::from(1800)),
                    Decimal::from(1800),
                    Status::Idle
                ),
                (
                    "10",
                    Some(Decimal::from(7200)),
                    Decimal::from(7200),
                    Status::Ok
                ),
                (
                    "11",
                    Some(Decimal::from(300)),
                    Decimal::ZERO,
                    Status::NotMeasured
                ),
                ("99", None, Decimal::from(60), Status::NotInSlurm),
            ]
        );
        assert_eq!(r.allocated_gpu_seconds, Decimal::from(9300));
        assert_eq!(r.idle_cost, vec![(Currency::EUR, Decimal::new(123, 2))]);
        assert_eq!(r.jobs[1].busy_share, Some(Decimal::new(8333, 4)));
    }
}

//! Slurm (SPEC §12): which job holds each GPU of this node, and whose account it runs under. Pure: the caller
//! ([`crate::source::slurm`]) runs Slurm's own commands (or asks slurmrestd) and hands their output here.
//!
//! - **Jobs** come from `squeue --json` (slurmrestd's `GET /slurm/v0.0.38/jobs` answers the same document) or
//!   from `scontrol show job -d` (text). Each running job gives its id, account, user, partition, QOS and, per
//!   node, the indices of the GPUs it holds: `gres_detail` (`gpu:2(IDX:0-1)`, one entry per node of its node
//!   list, in order) or the detail lines of `scontrol` (`Nodes=gpu-node-1 … GRES=gpu:2(IDX:0-1)`). A Slurm GPU
//!   index is the GPU's place in `gres.conf` (its `File=` lines in minor order, or `AutoDetect=nvml`): DCGM
//!   exporter's `gpu` label for the same GPU.
//! - **Devices** ([`assign`]): a GPU whose series carry DCGM exporter's `hpc_job` label (its job-mapping folder,
//!   written by a prolog) is the job's, as a pod's GPU is the pod's; any other GPU goes to the jobs Slurm says
//!   hold its index on this node. Several jobs on one GPU (shards, oversubscription) share it like pods
//!   ([`crate::shares`]). A job gets the workload `job-<id>` in the namespace of its account, and its series
//!   the labels [`JOB`], [`ACCOUNT`], [`PARTITION`], [`USER`], [`QOS`], which the attribution rules read
//!   ([`crate::attribution`]: `[[slurm_account]]`). A GPU no job holds stays idle.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::readings::{Readings, Sharer, Workload};

/// Series labels a Slurm job's GPUs get (and the attribution rules match).
pub const JOB: &str = "slurm_job";
pub const ACCOUNT: &str = "slurm_account";
pub const PARTITION: &str = "slurm_partition";
pub const USER: &str = "slurm_user";
pub const QOS: &str = "slurm_qos";

/// DCGM exporter's label of the Slurm job a GPU is mapped to (its `--hpc-job-mapping-dir`).
pub const HPC_JOB: &str = "hpc_job";

/// The workload (pod) name of a job.
pub fn job_pod(id: &str) -> String {
    format!("job-{id}")
}

/// A running job: who it runs for, and the GPUs it holds on each of its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Job {
    pub id: String,
    pub account: String,
    pub user: String,
    pub partition: String,
    pub qos: String,
    /// Node -> the indices of the GPUs the job holds there.
    pub gpus: BTreeMap<String, Vec<u32>>,
}

impl Job {
    fn labels(&self) -> [(String, String); 5] {
        [
            (JOB.to_string(), self.id.clone()),
            (ACCOUNT.to_string(), self.account.clone()),
            (PARTITION.to_string(), self.partition.clone()),
            (USER.to_string(), self.user.clone()),
            (QOS.to_string(), self.qos.clone()),
        ]
    }
}

/// What Slurm said runs: jobs by id, and this node's GPU indices -> the jobs holding them.
#[derive(Debug, Clone, Default)]
pub struct Jobs {
    by_id: HashMap<String, Arc<Job>>,
    on_node: BTreeMap<u32, Vec<Arc<Job>>>,
}

impl Jobs {
    /// The running jobs among `jobs`, as seen from node `node`.
    pub fn new(jobs: Vec<Job>, node: &str) -> Jobs {
        let mut out = Jobs::default();
        for j in jobs {
            let j = Arc::new(j);
            if let Some(indices) = j.gpus.get(node) {
                for &i in indices {
                    out.on_node.entry(i).or_default().push(j.clone());
                }
            }
            out.by_id.insert(j.id.clone(), j);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Job>> {
        self.by_id.get(id)
    }

    /// The jobs holding GPU `index` of this node.
    pub fn holding(&self, index: u32) -> &[Arc<Job>] {
        self.on_node.get(&index).map_or(&[], Vec::as_slice)
    }
}

/// What [`assign`] did, for the sampler's counters and its dry run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Assigned {
    /// Devices given to a job by Slurm's GPU indices.
    pub by_index: usize,
    /// Devices whose `hpc_job` label named a job Slurm knows.
    pub by_label: usize,
    /// Devices whose `hpc_job` label named a job Slurm did not list (ended, or Slurm unreachable): kept as
    /// `job-<id>`, its account unknown.
    pub unknown_jobs: usize,
}

/// Gives each device of `readings` to the Slurm job(s) holding it (see the module's documentation).
pub fn assign(readings: &mut Readings, jobs: &Jobs) -> Assigned {
    let mut done = Assigned::default();
    for d in &mut readings.devices {
        // Jobs named by the exporter's label: the device's workloads are `job-<id>` without a namespace.
        let mut labelled = false;
        for s in &mut d.sharers {
            let Some(id) = job_of(&s.workload) else {
                continue;
            };
            labelled = true;
            let id = id.to_string();
            match jobs.get(&id) {
                Some(j) => {
                    s.workload.namespace = Some(j.account.clone());
                    s.labels = with_labels(&s.labels, &j.labels());
                    done.by_label += 1;
                }
                None => {
                    s.labels = with_labels(&s.labels, &[(JOB.to_string(), id)]);
                    done.unknown_jobs += 1;
                }
            }
        }
        if labelled {
            if let Some(first) = d.sharers.first() {
                d.workload = Some(first.workload.clone());
                d.labels = first.labels.clone();
            }
            continue;
        }
        if d.workload.is_some() {
            continue;
        }
        let Some(index) = d.gpu.as_deref().and_then(|g| g.parse::<u32>().ok()) else {
            continue;
        };
        let holding = jobs.holding(index);
        if holding.is_empty() {
            continue;
        }
        done.by_index += 1;
        let base = d.labels.clone();
        for j in holding {
            let w = Workload {
                pod: job_pod(&j.id),
                namespace: Some(j.account.clone()),
                container: None,
            };
            let labels = with_labels(&base, &j.labels());
            if d.workload.is_none() {
                d.workload = Some(w.clone());
                d.labels = labels.clone();
            }
            d.sharers.push(Sharer {
                workload: w,
                labels,
                gpu_time: None,
                memory_mib: None,
            });
        }
    }
    done
}

/// The job id of a workload the exporter's `hpc_job` label made (`job-<id>`, no namespace yet).
fn job_of(w: &Workload) -> Option<&str> {
    if w.namespace.is_some() || w.container.is_some() {
        return None;
    }
    w.pod.strip_prefix("job-").filter(|id| !id.is_empty())
}

/// `labels` with `extra` set (replacing labels of the same names).
fn with_labels(labels: &[(String, String)], extra: &[(String, String)]) -> Arc<[(String, String)]> {
    labels
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .chain(extra)
        .cloned()
        .collect()
}

/// The jobs of `squeue --json` (or slurmrestd's jobs answer) that are running. Slurm 22.05 writes numbers and
/// states plainly; later versions wrap numbers (`{"set": true, "number": 12}`) and list states
/// (`["RUNNING"]`): both are read.
pub fn parse_squeue_json(text: &str) -> Result<Vec<Job>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(errors) = doc.get("errors").and_then(Value::as_array) {
        if let Some(e) = errors.first() {
            return Err(format!("Slurm answered an error: {e}"));
        }
    }
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or("no `jobs` array")?;
    let mut out = Vec::new();
    for j in jobs {
        let running = match j.get("job_state") {
            Some(Value::String(s)) => s == "RUNNING",
            Some(Value::Array(a)) => a.iter().any(|s| s.as_str() == Some("RUNNING")),
            _ => false,
        };
        if !running {
            continue;
        }
        let id = number(j.get("job_id")).ok_or("a job without `job_id`")?;
        let text = |k: &str| j.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let nodes = expand_hostlist(&text("nodes"));
        let details: Vec<&str> = j
            .get("gres_detail")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut gpus = BTreeMap::new();
        for (node, detail) in nodes.into_iter().zip(details) {
            let idx = gpu_indices(detail);
            if !idx.is_empty() {
                gpus.insert(node, idx);
            }
        }
        out.push(Job {
            id: id.to_string(),
            account: text("account"),
            user: text("user_name"),
            partition: text("partition"),
            qos: text("qos"),
            gpus,
        });
    }
    Ok(out)
}

/// A JSON number, or Slurm 23's `{"set": true, "number": n}`.
fn number(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::Object(o) if o.get("set").and_then(Value::as_bool) != Some(false) => {
            o.get("number").and_then(Value::as_u64)
        }
        _ => None,
    }
}

/// The running jobs of `scontrol show job -d` (a record per job from its `JobId=` line; `Key=Value` words; one
/// detail line per node holding GRES: `Nodes=<hostlist> CPU_IDs=… Mem=… GRES=gpu:2(IDX:0-1)`).
pub fn parse_scontrol(text: &str) -> Vec<Job> {
    // A record starts at its `JobId=` line (records are also separated by blank lines, and end with a line of
    // spaces).
    let mut records: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("JobId=") || records.is_empty() {
            records.push(String::new());
        }
        if let Some(r) = records.last_mut() {
            r.push_str(line);
            r.push('\n');
        }
    }
    let mut out = Vec::new();
    for record in &records {
        let mut fields: HashMap<&str, &str> = HashMap::new();
        let mut gpus = BTreeMap::new();
        for line in record.lines() {
            let words: Vec<(&str, &str)> = line
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            let detail = words.first().is_some_and(|(k, _)| *k == "Nodes")
                && words.iter().any(|(k, _)| *k == "GRES");
            if detail {
                let nodes = words.iter().find(|(k, _)| *k == "Nodes").map(|(_, v)| *v);
                let gres = words.iter().find(|(k, _)| *k == "GRES").map(|(_, v)| *v);
                if let (Some(nodes), Some(gres)) = (nodes, gres) {
                    let idx = gpu_indices(gres);
                    if !idx.is_empty() {
                        for n in expand_hostlist(nodes) {
                            gpus.insert(n, idx.clone());
                        }
                    }
                }
                continue;
            }
            for (k, v) in words {
                fields.entry(k).or_insert(v);
            }
        }
        let (Some(id), Some("RUNNING")) = (fields.get("JobId"), fields.get("JobState").copied())
        else {
            continue;
        };
        let get = |k: &str| fields.get(k).copied().unwrap_or("").to_string();
        // `UserId=alice(1000)`.
        let user = get("UserId");
        let user = user.split('(').next().unwrap_or("").to_string();
        out.push(Job {
            id: (*id).to_string(),
            account: get("Account"),
            user,
            partition: get("Partition"),
            qos: get("QOS"),
            gpus,
        });
    }
    out
}

/// The GPU indices of a GRES detail (`gpu:2(IDX:0-1)`, `gpu:a100:2(IDX:0,2-3)`, several GRES comma-separated
/// outside the parentheses); none for `IDX:N/A` or no GPU.
pub fn gpu_indices(detail: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for p in split_outside(detail, '(', ')') {
        let p = p.trim();
        if !(p == "gpu" || p.starts_with("gpu:") || p.starts_with("gpu(")) {
            continue;
        }
        let Some(list) = p
            .split_once("(IDX:")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(l, _)| l)
        else {
            continue;
        };
        out.extend(ranges(list));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// `s` split at the commas outside `open`…`close` (`gpu:2(IDX:0,2),mps:1` -> `gpu:2(IDX:0,2)`, `mps:1`).
fn split_outside(s: &str, open: char, close: char) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
        } else if c == ',' && depth == 0 {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// `0-1,3` -> 0, 1, 3 (anything else: nothing).
fn ranges(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for r in list.split(',') {
        match r.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    if a <= b && b - a < 4096 {
                        out.extend(a..=b);
                    }
                }
            }
            None => {
                if let Ok(a) = r.parse() {
                    out.push(a);
                }
            }
        }
    }
    out
}

/// A Slurm host list: `gpu-node-[1-3,5],login1` -> gpu-node-1, gpu-node-2, gpu-node-3, gpu-node-5, login1
/// (zero-padded ranges keep their width: `n[08-10]` -> n08, n09, n10). One bracket group per name.
pub fn expand_hostlist(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in split_outside(list, '[', ']')
        .into_iter()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let Some((prefix, rest)) = name.split_once('[') else {
            out.push(name.to_string());
            continue;
        };
        let Some((inner, suffix)) = rest.split_once(']') else {
            out.push(name.to_string());
            continue;
        };
        for r in inner.split(',') {
            match r.split_once('-') {
                Some((a, b)) => {
                    let width = a.len();
                    if let (Ok(x), Ok(y)) = (a.parse::<u64>(), b.parse::<u64>()) {
                        if x <= y && y - x < 100_000 {
                            for n in x..=y {
                                out.push(format!("{prefix}{n:0width$}{suffix}"));
                            }
                        }
                    }
                }
                None => out.push(format!("{prefix}{r}{suffix}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{expand_hostlist, gpu_indices};

    #[test]
    fn gres_details_give_the_gpu_indices() {
        assert_eq!(gpu_indices("gpu:2(IDX:0-1)"), vec![0, 1]);
        assert_eq!(gpu_indices("gpu:a100:3(IDX:0,2-3)"), vec![0, 2, 3]);
        assert_eq!(gpu_indices("gpu(IDX:5)"), vec![5]);
        assert_eq!(gpu_indices("gpu:0(IDX:N/A)"), Vec::<u32>::new());
        assert_eq!(gpu_indices("mps:100(0/100,0/100),gpu:1(IDX:3)"), vec![3]);
        assert_eq!(gpu_indices("shard:2(2/4,0/4)"), Vec::<u32>::new());
    }

    #[test]
    fn host_lists_expand() {
        assert_eq!(
            expand_hostlist("gpu-node-[1-3,5],login1"),
            vec![
                "gpu-node-1",
                "gpu-node-2",
                "gpu-node-3",
                "gpu-node-5",
                "login1"
            ]
        );
        assert_eq!(expand_hostlist("n[08-10]"), vec!["n08", "n09", "n10"]);
        assert_eq!(expand_hostlist("solo"), vec!["solo"]);
        assert_eq!(expand_hostlist(""), Vec::<String>::new());
    }
}

//! Who a GPU's time belongs to: the config file's rules (TOML), and the defaults without one.
//!
//! ```toml
//! idle_deployment = "idle"              # deployment id of GPUs no pod holds (default "idle")
//! default_model = "unknown"             # model when the exporter has no modelName (default "unknown")
//! exporter_pods = ["*dcgm-exporter*"]   # pod names that are the exporter itself, not a workload (default)
//!
//! [[tenant]]                            # namespace (glob) -> tenant: its pods are dedicated to that tenant
//! namespace = "acme-*"
//! tenant_id = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
//!
//! [[deployment]]                        # first match wins; at least one of pod, namespace, container, labels
//! pod = "vllm-llama-70b-*"              # globs: `*` any run, `?` one character
//! namespace = "eai-inference"
//! labels = { app = "vllm" }             # series labels (e.g. pod labels the exporter adds)
//! deployment_id = "vllm-llama-70b"
//! shared = true                         # shared even if its namespace maps to a tenant
//! # tenant_id = "…"                     # or: dedicated to this tenant
//!
//! [[slurm_account]]                     # Slurm account (glob) -> tenant: its jobs' GPUs are dedicated to it
//! account = "physics*"
//! tenant_id = "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21"
//! # partition = "gpu*"                  # only the jobs of these partitions
//! # deployment_id = "hpc-physics"       # instead of `slurm/<partition>`
//!
//! [mig_slices]                          # model glob -> compute slices of the GPU (see `mig`)
//! "*A30*" = 4
//!
//! [[vllm]]                              # a vLLM server whose token counters are read (like --vllm-url)
//! deployment_id = "vllm-llama-70b"
//! url = "http://10.0.0.7:8000/metrics"
//! ```
//!
//! Without a rule for it, a pod's deployment id is its name with the ReplicaSet hash or StatefulSet ordinal
//! stripped ([`derive_deployment_id`]), and it is shared unless its namespace maps to a tenant. Such a pod is
//! *unmapped*: reported (never dropped) and counted. A GPU no pod holds is reported under `idle_deployment`
//! with namespace and pod `-`.
//!
//! A Slurm job's GPUs (SPEC §12: series labelled by [`crate::slurm`]) are placed by the first `[[slurm_account]]`
//! whose account (and partition, if given) match: pod `job-<id>`, namespace the account, deployment
//! `slurm/<partition>` unless the rule names one, dedicated to the rule's tenant. A job no rule matches is
//! unmapped: shared, under `slurm/<partition>`, reported and counted.

use std::collections::BTreeMap;
use std::path::Path;

use eai_engine::policy::Glob;
use serde::Deserialize;

use crate::error::{Result, SamplerError};
use crate::readings::{DeviceReading, Workload};

pub const DEFAULT_IDLE_DEPLOYMENT: &str = "idle";
pub const DEFAULT_MODEL: &str = "unknown";
pub const DEFAULT_EXPORTER_PODS: &[&str] = &["*dcgm-exporter*"];
/// Namespace and pod of a GPU no pod holds.
pub const NO_POD: &str = "-";
const MAX_NAME: usize = 253;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    idle_deployment: Option<String>,
    default_model: Option<String>,
    exporter_pods: Option<Vec<String>>,
    #[serde(default, rename = "tenant")]
    tenants: Vec<TenantFile>,
    #[serde(default, rename = "deployment")]
    deployments: Vec<DeploymentFile>,
    #[serde(default)]
    mig_slices: BTreeMap<String, u32>,
    #[serde(default)]
    vllm: Vec<VllmFile>,
    #[serde(default, rename = "slurm_account")]
    slurm_accounts: Vec<SlurmAccountFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlurmAccountFile {
    account: String,
    tenant_id: String,
    partition: Option<String>,
    deployment_id: Option<String>,
}

#[derive(Debug, Clone)]
struct SlurmAccountRule {
    account: Glob,
    partition: Option<Glob>,
    tenant_id: String,
    deployment_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VllmFile {
    deployment_id: String,
    url: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantFile {
    namespace: String,
    tenant_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeploymentFile {
    deployment_id: String,
    pod: Option<String>,
    namespace: Option<String>,
    container: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    tenant_id: Option<String>,
    #[serde(default)]
    shared: bool,
}

#[derive(Debug, Clone)]
struct TenantRule {
    namespace: Glob,
    tenant_id: String,
}

#[derive(Debug, Clone)]
struct DeploymentRule {
    deployment_id: String,
    pod: Option<Glob>,
    namespace: Option<Glob>,
    container: Option<Glob>,
    labels: Vec<(String, Glob)>,
    tenant_id: Option<String>,
    shared: bool,
}

/// The attribution rules, validated.
#[derive(Debug, Clone)]
pub struct Attribution {
    pub idle_deployment: String,
    pub default_model: String,
    exporter_pods: Vec<Glob>,
    tenants: Vec<TenantRule>,
    deployments: Vec<DeploymentRule>,
    /// Model glob -> slices of the GPU (overrides [`crate::mig`]'s table).
    pub mig_slices: Vec<(Glob, u32)>,
    /// vLLM servers to read (`[[vllm]]`), beside those of `--vllm-url`.
    pub vllm_targets: Vec<crate::vllm::Target>,
    slurm_accounts: Vec<SlurmAccountRule>,
}

impl Default for Attribution {
    fn default() -> Self {
        Attribution {
            idle_deployment: DEFAULT_IDLE_DEPLOYMENT.to_string(),
            default_model: DEFAULT_MODEL.to_string(),
            exporter_pods: DEFAULT_EXPORTER_PODS
                .iter()
                .filter_map(|g| Glob::new(g))
                .collect(),
            tenants: Vec::new(),
            deployments: Vec::new(),
            mig_slices: Vec::new(),
            vllm_targets: Vec::new(),
            slurm_accounts: Vec::new(),
        }
    }
}

/// How a device's sample is attributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// No pod holds the GPU: the idle deployment.
    Idle,
    /// A rule (deployment or namespace) named it.
    Mapped,
    /// No rule: derived deployment id, shared. Reported and counted.
    Unmapped,
}

/// Where a device's time goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub namespace: String,
    pub pod: String,
    pub deployment_id: String,
    /// The owner (dedicated deployment); `None`: shared.
    pub tenant_id: Option<String>,
    pub kind: PlacementKind,
}

fn glob(what: &str, s: &str) -> Result<Glob> {
    Glob::new(s).ok_or_else(|| {
        SamplerError::config(format!(
            "{what} must be a non-empty glob of at most 253 characters"
        ))
    })
}

fn name(what: &str, s: &str) -> Result<String> {
    if s.is_empty() || s.len() > MAX_NAME {
        return Err(SamplerError::config(format!(
            "{what} must be 1 to {MAX_NAME} characters (got {:?})",
            s
        )));
    }
    Ok(s.to_string())
}

fn tenant(what: &str, s: &str) -> Result<String> {
    uuid::Uuid::parse_str(s)
        .map(|u| u.to_string())
        .map_err(|_| SamplerError::config(format!("{what} `{s}` is not a UUID")))
}

impl Attribution {
    /// Reads and validates a TOML config file; every error names the file and the field.
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_file_with_text(path).map(|(a, _)| a)
    }

    /// [`Attribution::from_file`], and the text it was read from.
    pub fn from_file_with_text(path: &Path) -> Result<(Self, String)> {
        let text = std::fs::read_to_string(path).map_err(|e| SamplerError::ConfigFile {
            path: path.to_path_buf(),
            message: format!("cannot read it: {e}"),
        })?;
        let a = Self::from_toml(&text).map_err(|e| SamplerError::ConfigFile {
            path: path.to_path_buf(),
            message: match e {
                SamplerError::Config(m) => m,
                other => other.to_string(),
            },
        })?;
        Ok((a, text))
    }

    /// Parses and validates the TOML text of a config file.
    pub fn from_toml(text: &str) -> Result<Self> {
        let f: FileConfig = toml::from_str(text)
            .map_err(|e| SamplerError::config(e.to_string().trim().to_string()))?;
        let mut a = Attribution::default();
        if let Some(s) = f.idle_deployment {
            a.idle_deployment = name("idle_deployment", &s)?;
        }
        if let Some(s) = f.default_model {
            a.default_model = name("default_model", &s)?;
        }
        if let Some(list) = f.exporter_pods {
            a.exporter_pods = list
                .iter()
                .map(|g| glob("exporter_pods", g))
                .collect::<Result<_>>()?;
        }
        for (i, t) in f.tenants.iter().enumerate() {
            let at = format!("tenant[{i}]");
            a.tenants.push(TenantRule {
                namespace: glob(&format!("{at}.namespace"), &t.namespace)?,
                tenant_id: tenant(&format!("{at}.tenant_id"), &t.tenant_id)?,
            });
        }
        for (i, d) in f.deployments.iter().enumerate() {
            let at = format!("deployment[{i}]");
            let opt = |field: &str, v: &Option<String>| {
                v.as_deref()
                    .map(|s| glob(&format!("{at}.{field}"), s))
                    .transpose()
            };
            let rule = DeploymentRule {
                deployment_id: name(&format!("{at}.deployment_id"), &d.deployment_id)?,
                pod: opt("pod", &d.pod)?,
                namespace: opt("namespace", &d.namespace)?,
                container: opt("container", &d.container)?,
                labels: d
                    .labels
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), glob(&format!("{at}.labels.{k}"), v)?)))
                    .collect::<Result<_>>()?,
                tenant_id: d
                    .tenant_id
                    .as_deref()
                    .map(|t| tenant(&format!("{at}.tenant_id"), t))
                    .transpose()?,
                shared: d.shared,
            };
            if rule.pod.is_none()
                && rule.namespace.is_none()
                && rule.container.is_none()
                && rule.labels.is_empty()
            {
                return Err(SamplerError::config(format!(
                    "{at} matches nothing: give at least one of pod, namespace, container, labels"
                )));
            }
            if rule.shared && rule.tenant_id.is_some() {
                return Err(SamplerError::config(format!(
                    "{at} is both shared and dedicated (tenant_id): choose one"
                )));
            }
            a.deployments.push(rule);
        }
        for (model, n) in &f.mig_slices {
            if !(1..=8).contains(n) {
                return Err(SamplerError::config(format!(
                    "mig_slices.\"{model}\" must be 1 to 8 (got {n})"
                )));
            }
            a.mig_slices.push((glob("mig_slices", model)?, *n));
        }
        for (i, r) in f.slurm_accounts.iter().enumerate() {
            let at = format!("slurm_account[{i}]");
            a.slurm_accounts.push(SlurmAccountRule {
                account: glob(&format!("{at}.account"), &r.account)?,
                partition: r
                    .partition
                    .as_deref()
                    .map(|p| glob(&format!("{at}.partition"), p))
                    .transpose()?,
                tenant_id: tenant(&format!("{at}.tenant_id"), &r.tenant_id)?,
                deployment_id: r
                    .deployment_id
                    .as_deref()
                    .map(|d| name(&format!("{at}.deployment_id"), d))
                    .transpose()?,
            });
        }
        for (i, v) in f.vllm.iter().enumerate() {
            let t = crate::vllm::Target::new(&v.deployment_id, &v.url)
                .map_err(|e| SamplerError::config(format!("vllm[{i}]: {e}")))?;
            a.vllm_targets.push(t);
        }
        Ok(a)
    }

    /// The tenant a namespace's pods are dedicated to, if any.
    fn namespace_tenant(&self, ns: &str) -> Option<&str> {
        self.tenants
            .iter()
            .find(|t| t.namespace.matches(ns))
            .map(|t| t.tenant_id.as_str())
    }

    /// An idle placement (no pod).
    pub fn idle(&self) -> Placement {
        Placement {
            namespace: NO_POD.to_string(),
            pod: NO_POD.to_string(),
            deployment_id: self.idle_deployment.clone(),
            tenant_id: None,
            kind: PlacementKind::Idle,
        }
    }

    /// Where a device's time goes.
    pub fn place(&self, d: &DeviceReading) -> Placement {
        self.place_workload(d.workload.as_ref(), &d.labels)
    }

    /// Whether a pod is the exporter itself (`exporter_pods`), not a workload.
    pub fn is_exporter(&self, w: &Workload) -> bool {
        self.exporter_pods.iter().any(|g| g.matches(&w.pod))
    }

    /// Where the time of pod `w` (none: idle), whose series carry `labels`, goes.
    pub fn place_workload(&self, w: Option<&Workload>, labels: &[(String, String)]) -> Placement {
        let Some(w) = w.filter(|w| !self.is_exporter(w)) else {
            return self.idle();
        };
        let ns = w.namespace.as_deref().unwrap_or(NO_POD);
        let label = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if label(crate::slurm::JOB).is_some() {
            return self.place_job(w, label(crate::slurm::PARTITION));
        }
        let matches = |g: &Option<Glob>, v: Option<&str>| {
            g.as_ref().is_none_or(|g| v.is_some_and(|v| g.matches(v)))
        };
        let rule = self.deployments.iter().find(|r| {
            matches(&r.pod, Some(&w.pod))
                && matches(&r.namespace, Some(ns))
                && matches(&r.container, w.container.as_deref())
                && r.labels
                    .iter()
                    .all(|(k, g)| label(k).is_some_and(|v| g.matches(v)))
        });
        let ns_tenant = self.namespace_tenant(ns).map(str::to_string);
        let (deployment_id, tenant_id, kind) = match rule {
            Some(r) => {
                let t = match (&r.tenant_id, r.shared) {
                    (Some(t), _) => Some(t.clone()),
                    (None, true) => None,
                    (None, false) => ns_tenant,
                };
                (r.deployment_id.clone(), t, PlacementKind::Mapped)
            }
            None => {
                let kind = if ns_tenant.is_some() {
                    PlacementKind::Mapped
                } else {
                    PlacementKind::Unmapped
                };
                (derive_deployment_id(&w.pod), ns_tenant, kind)
            }
        };
        Placement {
            namespace: ns.to_string(),
            pod: w.pod.clone(),
            deployment_id,
            tenant_id,
            kind,
        }
    }
}

impl Attribution {
    /// Where the time of a Slurm job (workload `job-<id>` in its account's namespace; the account unknown when
    /// Slurm did not list the job) goes.
    fn place_job(&self, w: &Workload, partition: Option<&str>) -> Placement {
        let account = w.namespace.as_deref().unwrap_or(NO_POD);
        let partition = partition.filter(|p| !p.is_empty()).unwrap_or("unknown");
        let rule = self.slurm_accounts.iter().find(|r| {
            r.account.matches(account) && r.partition.as_ref().is_none_or(|p| p.matches(partition))
        });
        let default_deployment = || format!("slurm/{partition}");
        Placement {
            namespace: account.to_string(),
            pod: w.pod.clone(),
            deployment_id: rule
                .and_then(|r| r.deployment_id.clone())
                .unwrap_or_else(default_deployment),
            tenant_id: rule.map(|r| r.tenant_id.clone()),
            kind: if rule.is_some() {
                PlacementKind::Mapped
            } else {
                PlacementKind::Unmapped
            },
        }
    }
}

/// Kubernetes' alphabet for generated name parts (`rand.SafeEncodeString`): no vowels, no 0, 1, 3.
fn k8s_safe(s: &str) -> bool {
    s.bytes()
        .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
}

/// A pod name without what its controller added: `<name>-<pod-template-hash>-<5>` (Deployment/ReplicaSet),
/// `<name>-<ordinal>` (StatefulSet), `<name>-<5>` (DaemonSet, Job, generateName). `vllm-mixtral-7d9f8b6c5d-x2kqp`
/// and `vllm-mixtral-0` -> `vllm-mixtral`. A name with none of these is kept as is.
pub fn derive_deployment_id(pod: &str) -> String {
    let parts: Vec<&str> = pod.split('-').collect();
    let n = parts.len();
    let keep = |k: usize| parts[..k].join("-");
    if n >= 3 {
        let (hash, suffix) = (parts[n - 2], parts[n - 1]);
        if (6..=10).contains(&hash.len()) && k8s_safe(hash) && suffix.len() == 5 && k8s_safe(suffix)
        {
            return keep(n - 2);
        }
    }
    if n >= 2 {
        let last = parts[n - 1];
        let ordinal = !last.is_empty()
            && last.bytes().all(|b| b.is_ascii_digit())
            && (last == "0" || !last.starts_with('0'));
        if ordinal || (last.len() == 5 && k8s_safe(last)) {
            let base = keep(n - 1);
            if !base.is_empty() {
                return base;
            }
        }
    }
    pod.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{derive_deployment_id, Attribution, PlacementKind};
    use crate::readings::{DeviceReading, Workload};

    #[test]
    fn pod_names_lose_their_controller_suffix() {
        for (pod, want) in [
            ("vllm-mixtral-7d9f8b6c5d-x2kqp", "vllm-mixtral"),
            ("vllm-mixtral-0", "vllm-mixtral"),
            ("vllm-mixtral-12", "vllm-mixtral"),
            (
                "vllm-agg-0-vllmdecodeworker-s65j5",
                "vllm-agg-0-vllmdecodeworker",
            ),
            ("node-exporter-x2kqp", "node-exporter"),
            ("vllm", "vllm"),
            ("my-model-small", "my-model-small"),
            ("model-v2", "model-v2"),
            ("job-007", "job-007"),
            ("-0", "-0"),
        ] {
            assert_eq!(derive_deployment_id(pod), want, "{pod}");
        }
    }

    fn device(pod: &str, ns: &str) -> DeviceReading {
        DeviceReading {
            uuid: "GPU-1".into(),
            workload: Some(Workload {
                pod: pod.into(),
                namespace: Some(ns.into()),
                container: Some("main".into()),
            }),
            labels: vec![("app".into(), "vllm".into())].into(),
            ..DeviceReading::default()
        }
    }

    const T: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";

    #[test]
    fn defaults_without_a_config() {
        let a = Attribution::default();
        let p = a.place(&device("vllm-mixtral-7d9f8b6c5d-x2kqp", "ai"));
        assert_eq!(p.deployment_id, "vllm-mixtral");
        assert_eq!(p.tenant_id, None);
        assert_eq!(p.kind, PlacementKind::Unmapped);
        let idle = a.place(&DeviceReading::default());
        assert_eq!(
            (
                idle.deployment_id.as_str(),
                idle.pod.as_str(),
                idle.namespace.as_str()
            ),
            ("idle", "-", "-")
        );
        // The exporter's own pod (a Prometheus target label) holds no GPU.
        let p = a.place(&device("nvidia-dcgm-exporter-wqqqn", "gpu-operator"));
        assert_eq!(p.kind, PlacementKind::Idle);
    }

    #[test]
    fn rules_from_a_file() {
        let a = Attribution::from_toml(&format!(
            r#"
            idle_deployment = "spare"
            [[tenant]]
            namespace = "acme-*"
            tenant_id = "{T}"
            [[deployment]]
            pod = "vllm-llama-*"
            deployment_id = "llama"
            shared = true
            [[deployment]]
            labels = {{ app = "vll?" }}
            namespace = "team-b"
            deployment_id = "team-b-vllm"
            "#
        ))
        .unwrap();
        let p = a.place(&device("vllm-llama-0", "acme-prod"));
        assert_eq!(
            (p.deployment_id.as_str(), p.tenant_id.as_deref(), p.kind),
            ("llama", None, PlacementKind::Mapped)
        );
        let p = a.place(&device("trainer-0", "acme-prod"));
        assert_eq!(
            (p.deployment_id.as_str(), p.tenant_id.as_deref(), p.kind),
            ("trainer", Some(T), PlacementKind::Mapped)
        );
        let p = a.place(&device("x-0", "team-b"));
        assert_eq!(p.deployment_id, "team-b-vllm");
        assert!(a.vllm_targets.is_empty());
        let v = Attribution::from_toml(
            "[[vllm]]\ndeployment_id = \"llama\"\nurl = \"http://10.0.0.7:8000/metrics\"\n",
        )
        .unwrap();
        assert_eq!(
            v.vllm_targets,
            vec![crate::vllm::Target::new("llama", "http://10.0.0.7:8000/metrics").unwrap()]
        );
        assert_eq!(a.idle().deployment_id, "spare");
    }

    #[test]
    fn bad_files_are_named_precisely() {
        for (text, needle) in [
            ("idle_deployment = \"\"", "idle_deployment"),
            ("[[tenant]]\nnamespace = \"a\"\ntenant_id = \"nope\"", "tenant[0].tenant_id"),
            ("[[deployment]]\ndeployment_id = \"x\"", "deployment[0] matches nothing"),
            ("[[deployment]]\npod = \"a\"\ndeployment_id = \"x\"\nshared = true\ntenant_id = \"8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10\"", "both shared"),
            ("unknown_key = 1", "unknown_key"),
            ("[mig_slices]\n\"*X*\" = 9", "mig_slices"),
            ("[[vllm]]\ndeployment_id = \"d\"\nurl = \"ftp://x\"", "vllm[0]"),
            ("[[vllm]]\ndeployment_id = \"d\"", "url"),
            ("this is not toml", ""),
        ] {
            let e = Attribution::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}

//! From a process id on a node to its container and pod (SPEC §11): NVML reports GPU time and memory per PID,
//! and a GPU shared by several pods is split by what each pod's processes used.
//!
//! Two steps, both read under a [`HostRoot`] (the folder that stands for the node's `/`: `/` itself, or e.g.
//! `/host` in a DaemonSet with `hostPID: true` that mounts the node's `/proc` and `/var/log` there):
//!
//! 1. **`/proc/<pid>/cgroup` -> pod UID, container id, runtime** ([`parse_cgroup`], pure). cgroup v1 lines
//!    (`N:controller,list:/path`, one per hierarchy) and v2's one line (`0::/path`). The path's segments are
//!    searched, not anchored, so a nested cgroup namespace (`/../../kubepods.slice/...`) or a kubelet under a
//!    custom `--cgroup-root` (kind's `/kubelet.slice/kubelet-kubepods.slice/...`, `/docker/<node>/kubepods/...`)
//!    reads the same. The shapes:
//!
//!    | driver   | pod segment                                    | container segment (after the pod's)     |
//!    |----------|------------------------------------------------|-----------------------------------------|
//!    | systemd  | `kubepods[-<qos>]-pod<uid, '-' as '_'>.slice`  | `cri-containerd-<id>.scope`,            |
//!    |          |                                                | `crio-<id>.scope`, `docker-<id>.scope`  |
//!    | cgroupfs | `pod<uid>` (`/kubepods[/<qos>]/pod<uid>`)      | `<id>` (containerd, docker), `crio-<id>` |
//!
//!    where `<qos>` is `burstable` or `besteffort` (guaranteed pods sit directly under kubepods) and `<id>` is the
//!    runtime's 64 hex digit container id. Segments after the container's (crun's `container` subgroup, a
//!    process's own sub-cgroups) do not matter. CRI-O's monitor (`crio-conmon-<id>.scope`) and a process of the
//!    pod's own cgroup belong to the pod but to no container. Outside Kubernetes: docker (`/docker/<id>`,
//!    `/system.slice/docker-<id>.scope`) and podman (`libpod-<id>.scope`). Anything else (`/init.scope`,
//!    `/user.slice/...`, `/system.slice/foo.service`, `/`) is a host process: no place.
//! 2. **Pod UID -> namespace and name, container id -> container name**, from the folders every kubelet keeps:
//!    `/var/log/containers/<pod>_<namespace>_<container>-<container id>.log` (symlinks, read by name only) and
//!    `/var/log/pods/<namespace>_<pod>_<pod uid>/`. Namespaces and pod names are DNS names (no `_`), so `_`
//!    separates the fields unambiguously. When the log folders are absent: `/var/lib/kubelet/pods/<uid>/`, whose
//!    `etc-hosts` names the pod's hostname (its name, unless the pod sets `spec.hostname` or its name is over 63
//!    characters) and whose service account volumes (`volumes/kubernetes.io~projected/*/namespace`) hold its
//!    namespace; that folder's volumes are tmpfs mounts, visible under a host root mounted with
//!    `mountPropagation: HostToContainer`. The container's name is not kept there: it stays unknown.
//!
//! [`HostRoot::process`] does both for one PID; [`PodMapper`] keeps the answers while a PID lives (its pod and
//! container do not change; a PID that is gone or reused is noticed by its cgroup text).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Result, SamplerError};

/// The name this module's errors carry (`SamplerError::Source`).
const SOURCE_NAME: &str = "procmap";

/// The container runtime a cgroup path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// containerd's CRI plugin (`cri-containerd-<id>.scope`).
    Containerd,
    /// CRI-O (`crio-<id>.scope`, `crio-<id>`).
    CriO,
    /// Docker, through dockershim or cri-dockerd, or plain (`docker-<id>.scope`, `/docker/<id>`).
    Docker,
    /// Podman (`libpod-<id>.scope`).
    Podman,
}

impl Runtime {
    /// The runtime's usual name: `containerd`, `cri-o`, `docker`, `podman`.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a process's cgroup says of it: each part when the path names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupPlace {
    /// The pod's UID, with dashes (`1b2c...-...`), or a static pod's 32 hex digits.
    pub pod_uid: Option<String>,
    /// The container id: 64 lowercase hex digits.
    pub container_id: Option<String>,
    /// The runtime, when the path says (under the cgroupfs driver, containerd and docker ids are bare).
    pub runtime: Option<Runtime>,
}

impl CgroupPlace {
    /// How much the place says: a pod counts more than a container, which counts more than a runtime alone.
    fn weight(&self) -> u8 {
        4 * u8::from(self.pod_uid.is_some())
            + 2 * u8::from(self.container_id.is_some())
            + u8::from(self.runtime.is_some())
    }
}

/// Where a process runs: its container and, on a Kubernetes node, its pod. All `None`: a host process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessPlace {
    /// The container id (64 hex digits), when the process runs in one.
    pub container_id: Option<String>,
    /// The runtime, when the cgroup path names it.
    pub runtime: Option<Runtime>,
    /// The pod, when the process belongs to one.
    pub pod: Option<PodRef>,
}

/// Which of the node's folders named a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamesFrom {
    /// `/var/log/containers` or `/var/log/pods`: the pod's name and namespace as the API server knows them.
    LogFolders,
    /// `/var/lib/kubelet/pods/<uid>`: the namespace, and the pod's hostname for its name.
    KubeletPods,
}

/// A pod, by UID, with what the node's folders say of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    /// The pod's UID (from the cgroup path, so always known).
    pub uid: String,
    /// The pod's namespace; `None` when no folder names it.
    pub namespace: Option<String>,
    /// The pod's name; `None` when no folder names it.
    pub name: Option<String>,
    /// The name of the process's container; `None` for a pod-level process (the sandbox's pause, CRI-O's
    /// conmon) or when only the kubelet's pods folder was found.
    pub container: Option<String>,
    /// Where the names came from; `None` when nothing was found (the UID alone).
    pub names_from: Option<NamesFrom>,
}

/// The place a `/proc/<pid>/cgroup` text gives, or `None` for a host process (or a text with no cgroup line).
///
/// Of several lines (cgroup v1: one per hierarchy; a hybrid host adds v2's `0::`), the one that says the most
/// wins (a pod, then a container, then a runtime); among equals, the first.
pub fn parse_cgroup(text: &str) -> Option<CgroupPlace> {
    let mut best: Option<CgroupPlace> = None;
    for line in text.lines() {
        let mut fields = line.trim().splitn(3, ':');
        let (Some(hierarchy), Some(_controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if hierarchy.parse::<u32>().is_err() {
            continue;
        }
        if let Some(place) = parse_cgroup_path(path) {
            if best.as_ref().is_none_or(|b| place.weight() > b.weight()) {
                best = Some(place);
            }
        }
    }
    best
}

/// The place one cgroup path gives (`/kubepods.slice/.../cri-containerd-<id>.scope`), or `None` for a host
/// process's.
pub fn parse_cgroup_path(path: &str) -> Option<CgroupPlace> {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
        .collect();
    // The innermost pod (a kind node's kubelet nests its pods inside the node's container).
    if let Some((i, uid)) = segments
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, s)| pod_uid_of(s).map(|uid| (i, uid)))
    {
        let (container_id, runtime) = segments
            .get(i + 1)
            .map_or((None, None), |s| container_in_pod(s));
        return Some(CgroupPlace {
            pod_uid: Some(uid),
            container_id,
            runtime,
        });
    }
    // No pod: the innermost container (docker in docker reads as the inner one).
    segments.iter().enumerate().rev().find_map(|(i, s)| {
        let (id, runtime) = if let Some((id, runtime)) = prefixed_container(s) {
            (id, runtime)
        } else if i > 0 && segments[i - 1] == "docker" && is_container_id(s) {
            (s.to_string(), Runtime::Docker)
        } else {
            return None;
        };
        Some(CgroupPlace {
            pod_uid: None,
            container_id: Some(id),
            runtime: Some(runtime),
        })
    })
}

/// The pod UID a segment names: `kubepods-burstable-pod<uid with _>.slice` (systemd driver) or `pod<uid>`
/// (cgroupfs driver), with dashes.
fn pod_uid_of(segment: &str) -> Option<String> {
    if let Some(slice) = segment.strip_suffix(".slice") {
        // systemd: '-' nests slices, so the kubelet wrote the UID's dashes as '_'.
        let last = slice.rsplit('-').next()?;
        let uid = last.strip_prefix("pod")?.replace('_', "-");
        return is_pod_uid(&uid).then_some(uid);
    }
    let uid = segment.strip_prefix("pod")?;
    is_pod_uid(uid).then(|| uid.to_string())
}

/// A pod UID as the kubelet makes them: a UUID (36 characters) or a static pod's hash (32 hex digits).
fn is_pod_uid(s: &str) -> bool {
    (32..=36).contains(&s.len())
        && s.bytes().any(|b| b != b'-')
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
}

/// A runtime's container id: 64 lowercase hex digits.
fn is_container_id(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The container a segment right after a pod's names: a prefixed one, a bare id, or CRI-O's conmon (the
/// runtime's, no container).
fn container_in_pod(segment: &str) -> (Option<String>, Option<Runtime>) {
    if let Some((id, runtime)) = prefixed_container(segment) {
        return (Some(id), Some(runtime));
    }
    if is_container_id(segment) {
        return (Some(segment.to_string()), None);
    }
    let bare = segment.strip_suffix(".scope").unwrap_or(segment);
    if bare
        .strip_prefix("crio-conmon-")
        .is_some_and(is_container_id)
    {
        return (None, Some(Runtime::CriO));
    }
    (None, None)
}

/// `<prefix><id>[.scope]` for each runtime's prefix.
fn prefixed_container(segment: &str) -> Option<(String, Runtime)> {
    const PREFIXES: [(&str, Runtime); 4] = [
        ("cri-containerd-", Runtime::Containerd),
        ("crio-", Runtime::CriO),
        ("docker-", Runtime::Docker),
        ("libpod-", Runtime::Podman),
    ];
    let bare = segment.strip_suffix(".scope").unwrap_or(segment);
    PREFIXES.iter().find_map(|(prefix, runtime)| {
        let id = bare.strip_prefix(prefix)?;
        is_container_id(id).then(|| (id.to_string(), *runtime))
    })
}

/// The folder that stands for the node's `/`: its `proc/`, `var/log/` and `var/lib/kubelet/` are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRoot {
    root: PathBuf,
}

impl Default for HostRoot {
    /// `/`: the sampler runs on the node itself (or in a pod with `hostPID: true` and the log folders mounted
    /// at their own paths).
    fn default() -> Self {
        HostRoot::new("/")
    }
}

impl HostRoot {
    /// The node's `/` is at `path` (e.g. `/host`).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        HostRoot { root: path.into() }
    }

    /// The folder given to [`HostRoot::new`].
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Whether the root's `proc/` can be listed: the check to make at start.
    pub fn check(&self) -> Result<()> {
        let proc = self.root.join("proc");
        std::fs::read_dir(&proc)
            .map(drop)
            .map_err(|e| unavailable(&proc, &e))
    }

    /// The text of `proc/<pid>/cgroup`; `None` when the process is gone (or never was).
    pub fn cgroup_text(&self, pid: u32) -> Result<Option<String>> {
        let proc = self.root.join("proc");
        let path = proc.join(pid.to_string()).join("cgroup");
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            // ESRCH (3 on Linux): the process exited while its file was open.
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(3) => {
                if proc.is_dir() {
                    Ok(None)
                } else {
                    Err(unavailable(&proc, &e))
                }
            }
            Err(e) => Err(source_error(&path, &e)),
        }
    }

    /// Where process `pid` runs; `None` when it is gone. A host process has an empty place.
    pub fn process(&self, pid: u32) -> Result<Option<ProcessPlace>> {
        match self.cgroup_text(pid)? {
            Some(text) => self.place_of(&text).map(Some),
            None => Ok(None),
        }
    }

    /// The place of a process whose cgroup text is `text`: the cgroup's parts, and the pod's names.
    pub fn place_of(&self, text: &str) -> Result<ProcessPlace> {
        let Some(cgroup) = parse_cgroup(text) else {
            return Ok(ProcessPlace::default());
        };
        let pod = match &cgroup.pod_uid {
            Some(uid) => Some(self.pod_ref(uid, cgroup.container_id.as_deref())?),
            None => None,
        };
        Ok(ProcessPlace {
            container_id: cgroup.container_id,
            runtime: cgroup.runtime,
            pod,
        })
    }

    /// The pod `uid` (a valid UID: it becomes a path) with the names the node's folders give.
    fn pod_ref(&self, uid: &str, container_id: Option<&str>) -> Result<PodRef> {
        let mut pod = PodRef {
            uid: uid.to_string(),
            namespace: None,
            name: None,
            container: None,
            names_from: None,
        };
        if let Some(id) = container_id {
            if let Some((name, namespace, container)) = self.container_log(id)? {
                pod.namespace = Some(namespace);
                pod.name = Some(name);
                pod.container = Some(container);
                pod.names_from = Some(NamesFrom::LogFolders);
                return Ok(pod);
            }
        }
        if let Some((namespace, name)) = self.pod_log_folder(uid)? {
            pod.namespace = Some(namespace);
            pod.name = Some(name);
            pod.names_from = Some(NamesFrom::LogFolders);
            return Ok(pod);
        }
        let kubelet_pod = self.root.join("var/lib/kubelet/pods").join(uid);
        if kubelet_pod.is_dir() {
            pod.namespace = kubelet_namespace(&kubelet_pod)?;
            pod.name = read_optional(&kubelet_pod.join("etc-hosts"))?
                .as_deref()
                .and_then(hostname_from_etc_hosts);
            if pod.namespace.is_some() || pod.name.is_some() {
                pod.names_from = Some(NamesFrom::KubeletPods);
            }
        }
        Ok(pod)
    }

    /// `var/log/containers/<pod>_<namespace>_<container>-<id>.log` -> (pod, namespace, container).
    fn container_log(&self, id: &str) -> Result<Option<(String, String, String)>> {
        let suffix = format!("-{id}.log");
        let found = names_in(&self.root.join("var/log/containers"))?
            .into_iter()
            .find_map(|name| {
                let fields = name.strip_suffix(&suffix)?;
                let [pod, namespace, container] = split3(fields)?;
                Some((
                    pod.to_string(),
                    namespace.to_string(),
                    container.to_string(),
                ))
            });
        Ok(found)
    }

    /// `var/log/pods/<namespace>_<pod>_<uid>` -> (namespace, pod).
    fn pod_log_folder(&self, uid: &str) -> Result<Option<(String, String)>> {
        let found = names_in(&self.root.join("var/log/pods"))?
            .into_iter()
            .find_map(|name| {
                let [namespace, pod, folder_uid] = split3(&name)?;
                (folder_uid == uid).then(|| (namespace.to_string(), pod.to_string()))
            });
        Ok(found)
    }
}

/// Three non-empty `_`-separated fields, no more.
fn split3(s: &str) -> Option<[&str; 3]> {
    let mut it = s.split('_');
    let fields = [it.next()?, it.next()?, it.next()?];
    (it.next().is_none() && fields.iter().all(|f| !f.is_empty())).then_some(fields)
}

/// The names in a folder; none when it does not exist.
fn names_in(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(source_error(dir, &e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| source_error(dir, &e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// A file's text; none when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(source_error(path, &e)),
    }
}

/// The namespace a pod's service account volume holds (`volumes/kubernetes.io~projected/*/namespace`, or an
/// older cluster's token secret `volumes/kubernetes.io~secret/*/namespace`).
fn kubelet_namespace(pod_dir: &Path) -> Result<Option<String>> {
    for kind in ["kubernetes.io~projected", "kubernetes.io~secret"] {
        let dir = pod_dir.join("volumes").join(kind);
        let mut volumes = names_in(&dir)?;
        volumes.sort();
        for volume in volumes {
            if let Some(text) = read_optional(&dir.join(volume).join("namespace"))? {
                let namespace = text.trim();
                if is_dns_label(namespace) {
                    return Ok(Some(namespace.to_string()));
                }
            }
        }
    }
    Ok(None)
}

/// A namespace's shape: a DNS label (lowercase letters, digits and '-', 1 to 63 characters).
fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The pod's hostname in the kubelet's `etc-hosts`: the last name of the pod's own lines (after the fixed
/// localhost and ip6 lines, before the HostAliases entries). `None` for a host network pod's file (the node's
/// hosts) or a pod without an address yet.
pub fn hostname_from_etc_hosts(text: &str) -> Option<String> {
    let mut lines = text.lines();
    let header = lines.next()?.trim();
    if !header.starts_with("# Kubernetes-managed hosts file") || header.contains("host network") {
        return None;
    }
    let mut hostname = None;
    for line in lines {
        let line = line.trim();
        if line.starts_with("# Entries added by HostAliases") {
            break;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(address) = fields.next() else {
            continue;
        };
        if address == "127.0.0.1" || address == "::1" || address.starts_with("fe00::") {
            continue;
        }
        if let Some(name) = fields.last() {
            hostname = Some(name.to_string());
        }
    }
    hostname
}

fn unavailable(path: &Path, e: &io::Error) -> SamplerError {
    SamplerError::Unavailable(format!(
        "host root: cannot read {} ({e}): give the folder where the node's / is mounted",
        path.display()
    ))
}

fn source_error(path: &Path, e: &io::Error) -> SamplerError {
    SamplerError::source(SOURCE_NAME, format!("{}: {e}", path.display()))
}

/// A [`HostRoot`] that remembers each PID's place while the PID keeps its cgroup: each call reads
/// `proc/<pid>/cgroup` (one small file) and scans the log folders only for a new or changed PID, or while a
/// pod's names are still missing (a container's log link appears just after it starts).
#[derive(Debug, Clone, Default)]
pub struct PodMapper {
    root: HostRoot,
    cache: HashMap<u32, Cached>,
}

#[derive(Debug, Clone)]
struct Cached {
    cgroup: String,
    place: ProcessPlace,
}

impl PodMapper {
    /// A mapper reading under `root`, remembering nothing yet.
    pub fn new(root: HostRoot) -> Self {
        PodMapper {
            root,
            cache: HashMap::new(),
        }
    }

    /// The host root it reads.
    pub fn root(&self) -> &HostRoot {
        &self.root
    }

    /// Where process `pid` runs; `None` when it is gone (and then it is forgotten).
    pub fn place(&mut self, pid: u32) -> Result<Option<ProcessPlace>> {
        let Some(text) = self.root.cgroup_text(pid)? else {
            self.cache.remove(&pid);
            return Ok(None);
        };
        if let Some(cached) = self.cache.get(&pid) {
            if cached.cgroup == text && settled(&cached.place) {
                return Ok(Some(cached.place.clone()));
            }
        }
        let place = self.root.place_of(&text)?;
        self.cache.insert(
            pid,
            Cached {
                cgroup: text,
                place: place.clone(),
            },
        );
        Ok(Some(place))
    }

    /// Forgets every PID but `live` (e.g. the processes NVML lists this tick).
    pub fn retain(&mut self, live: &[u32]) {
        let live: HashSet<u32> = live.iter().copied().collect();
        self.cache.retain(|pid, _| live.contains(pid));
    }

    /// How many PIDs it remembers.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether it remembers no PID.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

/// Whether a place is all the folders will ever say: no pod, or a pod with its names and, for a container, its
/// container's name (unless only the kubelet's pods folder was there, which never names containers).
fn settled(place: &ProcessPlace) -> bool {
    match &place.pod {
        None => true,
        Some(pod) => {
            pod.namespace.is_some()
                && pod.name.is_some()
                && (place.container_id.is_none()
                    || pod.container.is_some()
                    || pod.names_from == Some(NamesFrom::KubeletPods))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    const UID: &str = "1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d";
    const UID_: &str = "1b2c3d4e_5f60_4a1b_8c2d_3e4f5a6b7c8d";
    const ID: &str = "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970";
    const ID2: &str = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";

    /// The systemd driver's pod slice: `qos` "" (guaranteed), "burstable" or "besteffort".
    fn systemd_pod(qos: &str, uid: &str) -> String {
        let uid = uid.replace('-', "_");
        if qos.is_empty() {
            format!("/kubepods.slice/kubepods-pod{uid}.slice")
        } else {
            format!("/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid}.slice")
        }
    }

    fn place(uid: Option<&str>, id: Option<&str>, runtime: Option<Runtime>) -> Option<CgroupPlace> {
        Some(CgroupPlace {
            pod_uid: uid.map(str::to_string),
            container_id: id.map(str::to_string),
            runtime,
        })
    }

    #[test]
    fn systemd_driver_v2_each_runtime_and_qos() {
        let cases = [
            (
                format!(
                    "0::{}/cri-containerd-{ID}.scope\n",
                    systemd_pod("burstable", UID)
                ),
                Runtime::Containerd,
            ),
            (
                format!("0::{}/crio-{ID}.scope\n", systemd_pod("besteffort", UID)),
                Runtime::CriO,
            ),
            // guaranteed: directly under kubepods.slice
            (
                format!("0::/kubepods.slice/kubepods-pod{UID_}.slice/docker-{ID}.scope\n"),
                Runtime::Docker,
            ),
        ];
        for (text, runtime) in cases {
            assert_eq!(
                parse_cgroup(&text),
                place(Some(UID), Some(ID), Some(runtime)),
                "{text}"
            );
        }
    }

    #[test]
    fn crun_container_subgroup_and_conmon() {
        let pod = systemd_pod("burstable", UID);
        let sub = format!("0::{pod}/crio-{ID}.scope/container\n");
        assert_eq!(
            parse_cgroup(&sub),
            place(Some(UID), Some(ID), Some(Runtime::CriO))
        );
        let conmon = format!("0::{pod}/crio-conmon-{ID}.scope\n");
        assert_eq!(
            parse_cgroup(&conmon),
            place(Some(UID), None, Some(Runtime::CriO))
        );
        let pod_level = format!("0::{pod}\n");
        assert_eq!(parse_cgroup(&pod_level), place(Some(UID), None, None));
    }

    #[test]
    fn cgroupfs_driver_each_qos() {
        let cases = [
            (format!("0::/kubepods/burstable/pod{UID}/{ID}"), None),
            (format!("0::/kubepods/besteffort/pod{UID}/{ID}"), None),
            (format!("0::/kubepods/pod{UID}/{ID}"), None),
            (
                format!("0::/kubepods/burstable/pod{UID}/crio-{ID}"),
                Some(Runtime::CriO),
            ),
        ];
        for (text, runtime) in cases {
            assert_eq!(
                parse_cgroup(&text),
                place(Some(UID), Some(ID), runtime),
                "{text}"
            );
        }
    }

    #[test]
    fn v1_with_many_controllers() {
        let path = format!("/kubepods/burstable/pod{UID}/{ID}");
        let text = format!(
            "12:hugetlb:{path}\n11:memory:{path}\n10:devices:{path}\n9:cpuset:{path}\n8:perf_event:{path}\n\
             7:net_cls,net_prio:{path}\n6:freezer:{path}\n5:pids:{path}\n4:blkio:{path}\n3:cpu,cpuacct:{path}\n\
             2:rdma:/\n1:name=systemd:{path}\n0::/\n"
        );
        assert_eq!(parse_cgroup(&text), place(Some(UID), Some(ID), None));
        // systemd driver on v1 (a hybrid host: v2's line at the end, less precise here)
        let path = format!(
            "{}/cri-containerd-{ID}.scope",
            systemd_pod("burstable", UID)
        );
        let text = format!(
            "13:misc:/\n12:rdma:/\n11:cpu,cpuacct:{path}\n10:memory:{path}\n9:devices:{path}\n\
             1:name=systemd:{path}\n0::/\n"
        );
        assert_eq!(
            parse_cgroup(&text),
            place(Some(UID), Some(ID), Some(Runtime::Containerd))
        );
    }

    #[test]
    fn plain_docker_and_podman() {
        let v1 = format!(
            "4:memory:/docker/{ID}\n3:cpu,cpuacct:/docker/{ID}\n1:name=systemd:/docker/{ID}\n"
        );
        assert_eq!(
            parse_cgroup(&v1),
            place(None, Some(ID), Some(Runtime::Docker))
        );
        let systemd = format!("0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(
            parse_cgroup(&systemd),
            place(None, Some(ID), Some(Runtime::Docker))
        );
        let podman = format!("0::/machine.slice/libpod-{ID}.scope/container\n");
        assert_eq!(
            parse_cgroup(&podman),
            place(None, Some(ID), Some(Runtime::Podman))
        );
        // docker in docker: the inner container
        let dind = format!("0::/docker/{ID2}/docker/{ID}\n");
        assert_eq!(
            parse_cgroup(&dind),
            place(None, Some(ID), Some(Runtime::Docker))
        );
    }

    #[test]
    fn nested_namespaces_and_custom_roots() {
        let nested = format!(
            "0::/../..{}/cri-containerd-{ID}.scope\n",
            systemd_pod("burstable", UID)
        );
        assert_eq!(
            parse_cgroup(&nested),
            place(Some(UID), Some(ID), Some(Runtime::Containerd))
        );
        let kind_systemd = format!(
            "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/\
             kubelet-kubepods-besteffort-pod{UID_}.slice/cri-containerd-{ID}.scope\n"
        );
        assert_eq!(
            parse_cgroup(&kind_systemd),
            place(Some(UID), Some(ID), Some(Runtime::Containerd))
        );
        // kind with cgroupfs, seen from the host: the pod wins over the node's docker container
        let kind_cgroupfs = format!("11:memory:/docker/{ID2}/kubepods/besteffort/pod{UID}/{ID}\n");
        assert_eq!(
            parse_cgroup(&kind_cgroupfs),
            place(Some(UID), Some(ID), None)
        );
    }

    #[test]
    fn static_pod_uid_is_a_hash() {
        let text = format!("0::/kubepods/pod6e7f1b2d9c8a4f3e2d1c0b9a8f7e6d5c/{ID}\n");
        assert_eq!(
            parse_cgroup(&text),
            place(Some("6e7f1b2d9c8a4f3e2d1c0b9a8f7e6d5c"), Some(ID), None)
        );
    }

    #[test]
    fn host_processes_have_no_place() {
        for text in [
            "0::/init.scope\n",
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-terminal.scope\n",
            "0::/system.slice/nvidia-persistenced.service\n",
            "0::/\n",
            "12:memory:/user.slice\n11:devices:/user.slice\n\
             1:name=systemd:/user.slice/user-0.slice/session-3.scope\n",
            "",
            "garbage without colons\n",
            // a segment that looks like a pod but holds no UID
            "0::/system.slice/podman.service\n",
            "0::/kubepods/podnotauid/abc\n",
        ] {
            assert_eq!(parse_cgroup(text), None, "{text:?}");
        }
    }

    /// A fake node under a temporary folder.
    struct Node {
        dir: tempfile::TempDir,
    }

    impl Node {
        fn new() -> Self {
            let node = Node {
                dir: tempfile::tempdir().unwrap(),
            };
            fs::create_dir_all(node.dir.path().join("proc")).unwrap();
            node
        }

        fn root(&self) -> HostRoot {
            HostRoot::new(self.dir.path())
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.dir.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }

        fn process(&self, pid: u32, cgroup: &str) {
            self.write(&format!("proc/{pid}/cgroup"), cgroup);
        }

        /// The kubelet's log folder of a pod and, for each container, its log and the link to it.
        fn pod_logs(&self, namespace: &str, pod: &str, uid: &str, containers: &[(&str, &str)]) {
            let folder = format!("var/log/pods/{namespace}_{pod}_{uid}");
            for (container, id) in containers {
                self.write(&format!("{folder}/{container}/0.log"), "");
                let links = self.dir.path().join("var/log/containers");
                fs::create_dir_all(&links).unwrap();
                // absolute, as the kubelet makes them: dangling in the fake root, read by name only
                std::os::unix::fs::symlink(
                    format!("/{folder}/{container}/0.log"),
                    links.join(format!("{pod}_{namespace}_{container}-{id}.log")),
                )
                .unwrap();
            }
            fs::create_dir_all(self.dir.path().join(folder)).unwrap();
        }
    }

    fn pod(
        uid: &str,
        namespace: &str,
        name: &str,
        container: Option<&str>,
        from: NamesFrom,
    ) -> PodRef {
        PodRef {
            uid: uid.to_string(),
            namespace: Some(namespace.to_string()),
            name: Some(name.to_string()),
            container: container.map(str::to_string),
            names_from: Some(from),
        }
    }

    #[test]
    fn each_runtime_on_a_node_with_log_folders() {
        let node = Node::new();
        let uid = |n: u32| format!("0a1b2c3d-0000-4000-8000-{n:012}");
        let id = |c: char| c.to_string().repeat(64);
        // (pid, cgroup, namespace, pod, container, runtime)
        let cases = [
            (
                101,
                format!(
                    "0::{}/cri-containerd-{}.scope\n",
                    systemd_pod("burstable", &uid(1)),
                    id('a')
                ),
                ("team-a", "vllm-7d9c9b8f5-x2x4z", "vllm"),
                Some(Runtime::Containerd),
            ),
            (
                102,
                format!(
                    "0::{}/crio-{}.scope/container\n",
                    systemd_pod("", &uid(2)),
                    id('b')
                ),
                ("team-b", "llama.server-0", "model-server"),
                Some(Runtime::CriO),
            ),
            (
                103,
                format!(
                    "0::{}/docker-{}.scope\n",
                    systemd_pod("besteffort", &uid(3)),
                    id('c')
                ),
                ("team-b", "notebook-0", "jupyter"),
                Some(Runtime::Docker),
            ),
            (
                104,
                format!(
                    "11:memory:{p}\n1:name=systemd:{p}\n",
                    p = format!("/kubepods/besteffort/pod{}/{}", uid(4), id('e'))
                ),
                ("kube-system", "dcgm-exporter-abcde", "exporter"),
                None,
            ),
        ];
        for (n, (pid, cgroup, (namespace, name, container), _)) in cases.iter().enumerate() {
            let c = ['a', 'b', 'c', 'e'][n];
            node.process(*pid, cgroup);
            let sidecar = format!("{n}").repeat(64);
            node.pod_logs(
                namespace,
                name,
                &uid(n as u32 + 1),
                &[(container, &id(c)), ("sidecar", &sidecar)],
            );
        }
        let root = node.root();
        root.check().unwrap();
        for (n, (pid, _, (namespace, name, container), runtime)) in cases.iter().enumerate() {
            let p = root.process(*pid).unwrap().unwrap();
            assert_eq!(p.container_id, Some(id(['a', 'b', 'c', 'e'][n])));
            assert_eq!(p.runtime, *runtime);
            let expected = pod(
                &uid(n as u32 + 1),
                namespace,
                name,
                Some(container),
                NamesFrom::LogFolders,
            );
            assert_eq!(p.pod, Some(expected), "pid {pid}");
        }
    }

    #[test]
    fn pod_level_process_is_named_by_the_pods_folder() {
        let node = Node::new();
        // the sandbox's pause container: it has no log
        node.process(
            7,
            &format!("0::/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{ID2}.scope\n"),
        );
        node.pod_logs("team-a", "trainer-0", UID, &[("trainer", ID)]);
        node.pod_logs(
            "team-a",
            "other-0",
            "0a1b2c3d-0000-4000-8000-00000000000f",
            &[],
        );
        let p = node.root().process(7).unwrap().unwrap();
        assert_eq!(p.container_id.as_deref(), Some(ID2));
        assert_eq!(
            p.pod,
            Some(pod(UID, "team-a", "trainer-0", None, NamesFrom::LogFolders))
        );
    }

    /// What the kubelet writes in a pod's `etc-hosts` before the pod's own lines.
    const ETC_HOSTS_HEAD: &str = "# Kubernetes-managed hosts file.\n\
        127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
        fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";

    #[test]
    fn kubelet_pods_folder_when_the_log_folders_are_absent() {
        let node = Node::new();
        node.process(42, &format!("0::/kubepods/burstable/pod{UID}/{ID}\n"));
        let pod_dir = format!("var/lib/kubelet/pods/{UID}");
        node.write(
            &format!("{pod_dir}/etc-hosts"),
            &format!(
                "{ETC_HOSTS_HEAD}10.244.1.5\ttrainer-0\n\n\
                 # Entries added by HostAliases.\n10.0.0.9\tregistry.local\n"
            ),
        );
        // the atomic writer's layout: namespace -> ..data/namespace -> ..<timestamp>/namespace
        let volume = format!("{pod_dir}/volumes/kubernetes.io~projected/kube-api-access-7xk2p");
        node.write(
            &format!("{volume}/..2026_01_02_03_04_05.123456789/namespace"),
            "team-b",
        );
        let vdir = node.dir.path().join(&volume);
        std::os::unix::fs::symlink("..2026_01_02_03_04_05.123456789", vdir.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/namespace", vdir.join("namespace")).unwrap();

        let p = node.root().process(42).unwrap().unwrap();
        assert_eq!(
            p.pod,
            Some(pod(
                UID,
                "team-b",
                "trainer-0",
                None,
                NamesFrom::KubeletPods
            ))
        );
    }

    #[test]
    fn unknown_pod_keeps_its_uid() {
        let node = Node::new();
        node.process(42, &format!("0::/kubepods/burstable/pod{UID}/{ID}\n"));
        let p = node.root().process(42).unwrap().unwrap();
        let pod = p.pod.unwrap();
        assert_eq!(
            (pod.uid.as_str(), pod.namespace, pod.name, pod.names_from),
            (UID, None, None, None)
        );
    }

    #[test]
    fn etc_hosts_shapes() {
        let head = ETC_HOSTS_HEAD;
        let fqdn = "web-0.web.team-a.svc.cluster.local";
        let sub = format!("{head}10.244.1.5\t{fqdn}\tweb-0\nfd00::5\t{fqdn}\tweb-0\n");
        assert_eq!(hostname_from_etc_hosts(&sub).as_deref(), Some("web-0"));
        assert_eq!(hostname_from_etc_hosts(head), None, "no address yet");
        let host_network =
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.2 node-1\n";
        assert_eq!(hostname_from_etc_hosts(host_network), None);
        assert_eq!(
            hostname_from_etc_hosts("127.0.0.1 localhost\n10.0.0.2 node-1\n"),
            None
        );
    }

    #[test]
    fn host_process_and_vanished_pid() {
        let node = Node::new();
        node.process(1, "0::/init.scope\n");
        let root = node.root();
        assert_eq!(root.process(1).unwrap(), Some(ProcessPlace::default()));
        // listed, then gone before its file is read
        assert_eq!(root.process(4242).unwrap(), None);
        fs::create_dir_all(node.dir.path().join("proc/4243")).unwrap();
        assert_eq!(root.process(4243).unwrap(), None);
    }

    #[test]
    fn an_unreadable_root_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path().join("not-mounted"));
        assert!(matches!(root.process(1), Err(SamplerError::Unavailable(_))));
        assert!(matches!(root.check(), Err(SamplerError::Unavailable(_))));
        assert_eq!(HostRoot::default().path(), Path::new("/"));
    }

    #[test]
    fn mapper_remembers_and_notices_reuse_and_exit() {
        let node = Node::new();
        let containerd =
            format!("0::/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{ID}.scope\n");
        node.process(500, &containerd);
        let mut mapper = PodMapper::new(node.root());

        // names not there yet (the container just started): asked again next time
        let first = mapper.place(500).unwrap().unwrap();
        assert_eq!(first.pod.as_ref().unwrap().names_from, None);
        node.pod_logs("team-a", "vllm-0", UID, &[("vllm", ID)]);
        let second = mapper.place(500).unwrap().unwrap();
        assert_eq!(
            second.pod,
            Some(pod(
                UID,
                "team-a",
                "vllm-0",
                Some("vllm"),
                NamesFrom::LogFolders
            ))
        );

        // settled: the folders are not read again
        fs::remove_dir_all(node.dir.path().join("var/log")).unwrap();
        assert_eq!(mapper.place(500).unwrap().unwrap(), second);
        assert_eq!(mapper.len(), 1);

        // the PID reused by a host process: its cgroup text differs
        node.process(500, "0::/system.slice/sshd.service\n");
        assert_eq!(mapper.place(500).unwrap(), Some(ProcessPlace::default()));

        // gone: forgotten
        fs::remove_dir_all(node.dir.path().join("proc/500")).unwrap();
        assert_eq!(mapper.place(500).unwrap(), None);
        assert!(mapper.is_empty());

        node.process(600, "0::/init.scope\n");
        node.process(601, "0::/init.scope\n");
        mapper.place(600).unwrap();
        mapper.place(601).unwrap();
        mapper.retain(&[601]);
        assert_eq!(mapper.len(), 1);
    }

    #[test]
    fn runtime_names() {
        let names: Vec<String> = [
            Runtime::Containerd,
            Runtime::CriO,
            Runtime::Docker,
            Runtime::Podman,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(names, ["containerd", "cri-o", "docker", "podman"]);
    }

    #[derive(Debug, Clone, Copy)]
    enum Driver {
        Systemd,
        Cgroupfs,
    }

    fn arb_uid() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[0-9a-f]{32}",
        ]
    }

    proptest! {
        /// A cgroup file built from any pod UID, container id, runtime, driver, QoS class, cgroup version and
        /// nesting reads back to the same parts.
        #[test]
        fn built_cgroup_parses_back(
            uid in arb_uid(),
            id in "[0-9a-f]{64}",
            runtime in prop::sample::select(vec![Runtime::Containerd, Runtime::CriO, Runtime::Docker]),
            driver in prop::sample::select(vec![Driver::Systemd, Driver::Cgroupfs]),
            qos in prop::sample::select(vec!["", "burstable", "besteffort"]),
            v1 in any::<bool>(),
            nesting in 0usize..4,
            subgroup in any::<bool>(),
        ) {
            let (pod_path, container, expected_runtime) = match driver {
                Driver::Systemd => {
                    let escaped = uid.replace('-', "_");
                    let slice = if qos.is_empty() {
                        format!("/kubepods.slice/kubepods-pod{escaped}.slice")
                    } else {
                        format!("/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{escaped}.slice")
                    };
                    let prefix = match runtime {
                        Runtime::Containerd => "cri-containerd-",
                        Runtime::CriO => "crio-",
                        _ => "docker-",
                    };
                    (slice, format!("{prefix}{id}.scope"), Some(runtime))
                }
                Driver::Cgroupfs => {
                    let qos_part = if qos.is_empty() { String::new() } else { format!("/{qos}") };
                    let (container, rt) = match runtime {
                        Runtime::CriO => (format!("crio-{id}"), Some(Runtime::CriO)),
                        _ => (id.clone(), None),
                    };
                    (format!("/kubepods{qos_part}/pod{uid}"), container, rt)
                }
            };
            let path = format!(
                "{}{pod_path}/{container}{}",
                "/..".repeat(nesting),
                if subgroup { "/container" } else { "" },
            );
            let text = if v1 {
                format!(
                    "12:memory:{path}\n11:cpu,cpuacct:{path}\n10:misc:/\n3:net_cls,net_prio:{path}\n\
                     1:name=systemd:{path}\n0::/\n"
                )
            } else {
                format!("0::{path}\n")
            };
            prop_assert_eq!(
                parse_cgroup(&text),
                Some(CgroupPlace {
                    pod_uid: Some(uid),
                    container_id: Some(id),
                    runtime: expected_runtime,
                })
            );
        }

        /// Any text at all: an answer, never a panic, and a container id is always 64 hex digits.
        #[test]
        fn any_text_never_panics(text in ".{0,300}") {
            if let Some(place) = parse_cgroup(&text) {
                prop_assert!(place.container_id.as_deref().is_none_or(is_container_id));
                prop_assert!(place.pod_uid.as_deref().is_none_or(is_pod_uid));
            }
        }
    }
}

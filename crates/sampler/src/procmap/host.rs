//! Step 2 of [`crate::procmap`], and both steps for one PID: the node's folders under a [`HostRoot`] (a PID's
//! `proc/<pid>/cgroup`, the kubelet's `var/log/containers`, `var/log/pods` and `var/lib/kubelet/pods`) -> the
//! process's pod, by namespace and name, and its container's name.

use std::io;
use std::path::{Path, PathBuf};

use super::cgroup::{parse_cgroup, Runtime};
use crate::error::{Result, SamplerError};

/// The name this module's errors carry (`SamplerError::Source`).
const SOURCE_NAME: &str = "procmap";

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

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use std::fs;
    use std::path::Path;

    use super::{hostname_from_etc_hosts, HostRoot, NamesFrom, PodRef, ProcessPlace, Runtime};
    use crate::error::SamplerError;
    use crate::procmap::cgroup::tests::{systemd_pod, ID, ID2, UID, UID_};

    /// A fake node under a temporary folder.
    pub(in crate::procmap) struct Node {
        pub(in crate::procmap) dir: tempfile::TempDir,
    }

    impl Node {
        pub(in crate::procmap) fn new() -> Self {
            let node = Node {
                dir: tempfile::tempdir().unwrap(),
            };
            fs::create_dir_all(node.dir.path().join("proc")).unwrap();
            node
        }

        pub(in crate::procmap) fn root(&self) -> HostRoot {
            HostRoot::new(self.dir.path())
        }

        pub(in crate::procmap) fn write(&self, rel: &str, text: &str) {
            let path = self.dir.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }

        pub(in crate::procmap) fn process(&self, pid: u32, cgroup: &str) {
            self.write(&format!("proc/{pid}/cgroup"), cgroup);
        }

        /// The kubelet's log folder of a pod and, for each container, its log and the link to it.
        pub(in crate::procmap) fn pod_logs(
            &self,
            namespace: &str,
            pod: &str,
            uid: &str,
            containers: &[(&str, &str)],
        ) {
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

    pub(in crate::procmap) fn pod(
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
}

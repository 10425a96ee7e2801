//! [`PodMapper`]: a [`HostRoot`] that keeps each PID's place while the PID lives, so that a tick reads one small
//! file per process and the kubelet's folders only for a new one.

use std::collections::{HashMap, HashSet};

use super::host::{HostRoot, NamesFrom, ProcessPlace};
use crate::error::Result;

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
    use std::fs;

    use super::{NamesFrom, PodMapper, ProcessPlace};
    use crate::procmap::cgroup::tests::{ID, UID, UID_};
    use crate::procmap::host::tests::{pod, Node};

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
}

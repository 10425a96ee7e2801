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
//!
//! The files: `cgroup.rs` (step 1, pure), `host.rs` (step 2 and [`HostRoot`]), `mapper.rs` ([`PodMapper`]).

mod cgroup;
mod host;
mod mapper;

pub use cgroup::{parse_cgroup, parse_cgroup_path, CgroupPlace, Runtime};
pub use host::{hostname_from_etc_hosts, HostRoot, NamesFrom, PodRef, ProcessPlace};
pub use mapper::PodMapper;

//! Step 1 of [`crate::procmap`], pure: a `/proc/<pid>/cgroup` text -> the pod UID, container id and runtime its
//! path names (the table of shapes is the parent module's).

use std::fmt;

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

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use proptest::prelude::{
        any, prop, prop_assert, prop_assert_eq, prop_oneof, proptest, Strategy,
    };

    use super::{is_container_id, is_pod_uid, parse_cgroup, CgroupPlace, Runtime};

    pub(in crate::procmap) const UID: &str = "1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d";
    pub(in crate::procmap) const UID_: &str = "1b2c3d4e_5f60_4a1b_8c2d_3e4f5a6b7c8d";
    pub(in crate::procmap) const ID: &str =
        "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970";
    pub(in crate::procmap) const ID2: &str =
        "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";

    /// The systemd driver's pod slice: `qos` "" (guaranteed), "burstable" or "besteffort".
    pub(in crate::procmap) fn systemd_pod(qos: &str, uid: &str) -> String {
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

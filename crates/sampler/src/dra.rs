//! Kubernetes DRA (Dynamic Resource Allocation) as DCGM exporter labels it (SPEC §11): which claim a GPU's
//! series belong to, and who holds the GPU. Pure; [`crate::dcgm`] reads the pod labels themselves.
//!
//! With `--kubernetes-enable-dra` (`KUBERNETES_ENABLE_DRA`, exporter 4.3.1-4.4.0 on) and without
//! `--kubernetes-virtual-gpus`, the exporter's pod mapper (`internal/pkg/transformation/kubernetes.go`,
//! `toDeviceToPodsDRA`) reads each pod's claims from the kubelet's PodResources API, keeps the devices of driver
//! `gpu.nvidia.com`, resolves each `(pool, device)` to a GPU UUID through the node's ResourceSlices, and then
//! **copies every series of that GPU once per (pod, container)** that references a claim on it, adding the same
//! `pod`, `namespace`, `container` labels as the device-plugin path (so [`crate::dcgm`] reads the pod as it
//! always does) and these (`const.go`):
//!
//! - `dra_claim_name`, `dra_claim_namespace` (a claim is in its pods' namespace), `dra_driver_name`
//!   (`gpu.nvidia.com`), `dra_pool_name` (the node, for NVIDIA's driver), `dra_device_name` (e.g. `gpu-0`,
//!   `gpu-0-mig-19-6-1`);
//! - for a MIG device, `dra_mig_profile` and `dra_mig_device_uuid`. Exporters before 4.6.0 put these on the
//!   parent GPU's whole-device rows (the MIG rows stay unlabelled); from 4.6.0 on the MIG rows (`GPU_I_PROFILE`,
//!   `GPU_I_ID`) carry them.
//!
//! A claim shared by several pods therefore looks like time-slicing: the device's series repeated per pod, each
//! with the same values, and is split like it. But the copies are per container, and a pod's containers share
//! the pod's claim: [`holder`] takes a DRA series' holder to be its pod (container dropped), so that a pod with two
//! containers on a shared claim is one sharer, not two.

use crate::readings::{Labels, Workload};

/// The DRA claim a series was copied for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub name: String,
    pub namespace: Option<String>,
    pub driver: Option<String>,
    pub pool: Option<String>,
    pub device: Option<String>,
    /// The claim's device is a MIG instance.
    pub mig: Option<ClaimMig>,
}

/// A claim's MIG device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMig {
    /// `dra_mig_profile`, e.g. `1g.12gb`.
    pub profile: Option<String>,
    /// `dra_mig_device_uuid`, `MIG-…`.
    pub uuid: Option<String>,
}

fn non_empty(labels: &impl Labels, name: &str) -> Option<String> {
    labels
        .get(name)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The claim of a series, when DCGM exporter labelled it with one (`dra_claim_name`).
pub fn claim(labels: &impl Labels) -> Option<Claim> {
    let name = non_empty(labels, "dra_claim_name")?;
    let profile = non_empty(labels, "dra_mig_profile");
    let uuid = non_empty(labels, "dra_mig_device_uuid");
    Some(Claim {
        name,
        namespace: non_empty(labels, "dra_claim_namespace"),
        driver: non_empty(labels, "dra_driver_name"),
        pool: non_empty(labels, "dra_pool_name"),
        device: non_empty(labels, "dra_device_name"),
        mig: (profile.is_some() || uuid.is_some()).then_some(ClaimMig { profile, uuid }),
    })
}

/// Whether a series is the exporter's copy for a DRA claim (it names one).
pub fn copied_for_a_claim(labels: &impl Labels) -> bool {
    labels.get("dra_claim_name").is_some_and(|v| !v.is_empty())
}

/// Who holds the device a series describes: for a series copied for a DRA claim, the pod (a claim is the pod's,
/// its containers share it: the exporter's per-container copies are one holder); otherwise `w` as read.
pub fn holder(w: Workload, labels: &impl Labels) -> Workload {
    if copied_for_a_claim(labels) {
        Workload {
            container: None,
            ..w
        }
    } else {
        w
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use eai_engine::Timestamp;

    use super::{claim, holder, ClaimMig};
    use crate::dcgm::from_text;
    use crate::readings::{Labels, Readings, Workload};

    const U: &str = "GPU-8a748984-0fe7-297f-916c-4b998ce202d1";

    /// A DRA series as the exporter's template writes it: its fixed labels, then the pod's, then the attributes
    /// in name order (`internal/pkg/rendermetrics/render_metrics.go`).
    fn line(container: &str, pod: &str, claim: &str) -> String {
        format!(
            "DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"{U}\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\",\
             modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"gpu-node-1\",container=\"{container}\",\
             dra_claim_name=\"{claim}\",dra_claim_namespace=\"team-a\",dra_device_name=\"gpu-0\",\
             dra_driver_name=\"gpu.nvidia.com\",dra_pool_name=\"gpu-node-1\",namespace=\"team-a\",pod=\"{pod}\"}} 42\n"
        )
    }

    fn read(text: &str) -> Readings {
        from_text(text, Timestamp(0))
    }

    #[test]
    fn a_claim_is_read_from_its_labels() {
        let r = read(&line("ctr", "infer-0", "shared-gpu"));
        let labels: &[(String, String)] = &r.devices[0].labels;
        let c = claim(&Pairs(labels)).unwrap();
        assert_eq!(c.name, "shared-gpu");
        assert_eq!(c.namespace.as_deref(), Some("team-a"));
        assert_eq!(c.driver.as_deref(), Some("gpu.nvidia.com"));
        assert_eq!(c.pool.as_deref(), Some("gpu-node-1"));
        assert_eq!(c.device.as_deref(), Some("gpu-0"));
        assert_eq!(c.mig, None);
    }

    #[test]
    fn a_mig_claim_names_its_instance() {
        // Shape of dcgm-exporter PR #532's MIG example (a GH200's parent row, exporter before 4.6.0).
        let labels = Pairs(&[
            ("dra_claim_name".into(), "pod-mig-devices-rxspm".into()),
            ("dra_mig_profile".into(), "1g.12gb".into()),
            (
                "dra_mig_device_uuid".into(),
                "MIG-24c6a0e5-fe28-53ac-9537-c4e23104f30f".into(),
            ),
        ]);
        let c = claim(&labels).unwrap();
        assert_eq!(
            c.mig,
            Some(ClaimMig {
                profile: Some("1g.12gb".into()),
                uuid: Some("MIG-24c6a0e5-fe28-53ac-9537-c4e23104f30f".into()),
            })
        );
        assert!(claim(&Pairs(&[("pod".into(), "p".into())])).is_none());
        assert!(claim(&Pairs(&[("dra_claim_name".into(), String::new())])).is_none());
    }

    #[test]
    fn a_claim_shared_by_two_pods_is_two_sharers_as_time_slicing() {
        // The exporter copies the device's series once per (pod, container) on the claim: today's dcgm.rs reads
        // each pod as a sharer, with the claim in its labels.
        let r = read(&format!(
            "{}{}",
            line("server", "infer-0", "shared-gpu"),
            line("server", "infer-1", "shared-gpu")
        ));
        assert_eq!(r.devices.len(), 1);
        let pods: Vec<&str> = r.devices[0]
            .sharers
            .iter()
            .map(|s| s.workload.pod.as_str())
            .collect();
        assert_eq!(pods, vec!["infer-0", "infer-1"]);
        let second: &[(String, String)] = &r.devices[0].sharers[1].labels;
        assert_eq!(claim(&Pairs(second)).unwrap().name, "shared-gpu");
    }

    #[test]
    fn a_pods_containers_on_one_claim_are_one_holder() {
        let text = format!(
            "{}{}",
            line("server", "infer-0", "c"),
            line("sidecar", "infer-0", "c")
        );
        let r = read(&text);
        // The reader goes through `holder`: one sharer for the pod, without a container.
        assert_eq!(r.devices[0].sharers.len(), 1);
        assert_eq!(r.devices[0].sharers[0].workload.container, None);
        let again = holder(
            r.devices[0].sharers[0].workload.clone(),
            &Pairs(&r.devices[0].sharers[0].labels),
        );
        assert_eq!(again, r.devices[0].sharers[0].workload);
        // A series without a claim keeps its container.
        let w = Workload {
            pod: "p".into(),
            namespace: None,
            container: Some("c".into()),
        };
        assert_eq!(holder(w.clone(), &Pairs(&[])), w);
    }

    /// Label pairs as [`Labels`] (the readings keep a series' labels so).
    struct Pairs<'a>(&'a [(String, String)]);

    impl Labels for Pairs<'_> {
        fn get(&self, name: &str) -> Option<&str> {
            self.0
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        }
        fn pairs(&self) -> Vec<(String, String)> {
            self.0.to_vec()
        }
    }
}

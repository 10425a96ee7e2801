//! Where an import stands ([`Totals`]), and the checkpoint file that records it with the run's parameters, so
//! that the same command carries on after the last acknowledged batch.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Where an import stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Windows read (sent or not), of the run and its earlier parts.
    pub windows: u64,
    pub samples: u64,
    /// Samples the control plane stored (not already holding them), and those it already held.
    pub added: u64,
    pub duplicates: u64,
    /// Holes: spans of missing windows of a GPU between two windows it was seen in, and their windows.
    pub gap_spans: u64,
    pub gap_windows: u64,
    /// vLLM usage events sent (`--vllm`).
    #[serde(default)]
    pub events: u64,
}

/// The checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    pub(super) version: u32,
    pub(super) prometheus_url: String,
    pub(super) matchers: Option<String>,
    pub(super) node: Option<String>,
    pub(super) config: Option<String>,
    #[serde(default)]
    pub(super) vllm: Option<String>,
    pub(super) interval_ms: i64,
    pub(super) max_staleness_ms: i64,
    pub(super) from_ms: i64,
    pub(super) to_ms: i64,
    /// The last window end of an acknowledged batch (every window up to it is stored).
    pub(super) done_through_ms: i64,
    pub(super) totals: Totals,
    pub(super) gpus: BTreeSet<String>,
    pub(super) deployments: BTreeSet<String>,
}

impl Checkpoint {
    pub(super) fn same_run(&self, o: &Checkpoint) -> bool {
        (
            &self.prometheus_url,
            &self.matchers,
            &self.node,
            &self.config,
            &self.vllm,
            self.interval_ms,
            self.max_staleness_ms,
            self.from_ms,
            self.to_ms,
        ) == (
            &o.prometheus_url,
            &o.matchers,
            &o.node,
            &o.config,
            &o.vllm,
            o.interval_ms,
            o.max_staleness_ms,
            o.from_ms,
            o.to_ms,
        )
    }
}

//! The reading side of an import: the exporter's scrape interval detected from the raw samples, and one chunk
//! of windows read from Prometheus (each family's values and the points to leave out, vLLM's counters),
//! decoded into readings off the runtime's workers.

use std::collections::BTreeMap;
use std::sync::Arc;

use eai_engine::Timestamp;

use crate::attribution::Attribution;
use crate::dcgm::FAMILIES;
use crate::error::{Result, SamplerError};
use crate::readings::Readings;
use crate::source::prometheus::{
    decode, family_selector, stretched_query, PrometheusSource, RangeReadings, Stretched,
};
use crate::source::vllm::series_from_range;
use crate::vllm::{Counters, SeriesKey};

/// The exporter's scrape interval: the median spacing of the raw power samples of a few instants of the period
/// (`None` when the period holds none).
pub async fn detect_scrape_interval(
    prometheus: &PrometheusSource,
    matchers: Option<&str>,
    from: Timestamp,
    to: Timestamp,
) -> Result<Option<i64>> {
    let sel = match matchers.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => format!("DCGM_FI_DEV_POWER_USAGE{{{m}}}[10m]"),
        None => "DCGM_FI_DEV_POWER_USAGE[10m]".to_string(),
    };
    let mut spacings: Vec<i64> = Vec::new();
    const PROBES: i64 = 8;
    for k in 1..=PROBES {
        let at = Timestamp(from.0 + (to.0 - from.0) * k / PROBES);
        let body = prometheus.query_instant(&sel, at).await?;
        let data = decode(&body)?;
        for s in data.result.iter().take(16) {
            let ts: Vec<i64> = s
                .values()
                .iter()
                .map(|(t, _)| (t * 1000.0).round() as i64)
                .collect();
            spacings.extend(ts.windows(2).map(|w| w[1] - w[0]).filter(|d| *d > 0));
        }
        if spacings.len() >= 64 {
            break;
        }
    }
    if spacings.is_empty() {
        return Ok(None);
    }
    spacings.sort_unstable();
    Ok(Some(spacings[spacings.len() / 2]))
}

/// The discovery query of `--vllm` (the sampler's `--vllm-discover`'s).
pub(super) fn vllm_query(matchers: Option<&str>) -> String {
    crate::source::vllm::discovery_query(matchers)
}

/// One chunk of windows read: their ends, the GPU readings, vLLM's counters per end.
#[derive(Debug)]
pub(super) struct Chunk {
    pub(super) ends: Vec<Timestamp>,
    pub(super) readings: Vec<Readings>,
    pub(super) counters: BTreeMap<i64, Vec<(SeriesKey, Counters)>>,
}

/// What [`read_chunk`] reads, besides the chunk's first and last window ends.
pub(super) struct ChunkQuery {
    pub(super) prometheus: Arc<PrometheusSource>,
    pub(super) matchers: Option<String>,
    /// The `--vllm` discovery query, if any.
    pub(super) vllm: Option<String>,
    pub(super) attribution: Arc<Attribution>,
    pub(super) interval_ms: i64,
    pub(super) max_age_ms: i64,
}

/// Reads the windows ending at `a, a + w, …, b` of every family (and vLLM's counters, with `--vllm`).
pub(super) async fn read_chunk(q: ChunkQuery, a: Timestamp, b: Timestamp) -> Result<Chunk> {
    let ChunkQuery {
        prometheus,
        matchers,
        vllm,
        attribution,
        interval_ms: w,
        max_age_ms: max_age,
    } = q;
    let ends: Vec<Timestamp> = (0..=(b.0 - a.0) / w)
        .map(|i| Timestamp(a.0 + i * w))
        .collect();
    // In the families' name order: the order a live read's answer lists them in.
    let mut families = FAMILIES.to_vec();
    families.sort_unstable();
    let mut bodies = Vec::with_capacity(families.len());
    for f in families {
        let values = family_selector(f, matchers.as_deref());
        let stretched = stretched_query(f, matchers.as_deref(), max_age);
        bodies.push((
            prometheus.query_range(&values, a, b, w).await?,
            prometheus.query_range(&stretched, a, b, w).await?,
        ));
    }
    let vllm_body = match vllm {
        Some(q) => Some(prometheus.query_range(&q, a, b, w).await?),
        None => None,
    };
    // Decoding is the CPU-heavy part: on a blocking thread, so that the runtime's workers stay free to
    // move the batches to the control plane.
    let node = prometheus.node().map(str::to_string);
    tokio::task::spawn_blocking(move || {
        let mut r = RangeReadings::new(&ends, node.as_deref());
        for (values, stretched) in &bodies {
            r.add_except(values, &Stretched::from_range(stretched)?)?;
        }
        let counters = match vllm_body {
            Some(body) => series_from_range(&body, &ends, &attribution)?,
            None => Default::default(),
        };
        Ok(Chunk {
            ends,
            readings: r.finish(),
            counters,
        })
    })
    .await
    .map_err(|e| SamplerError::source("prometheus", format!("decoding failed: {e}")))?
}

//! The Prometheus source: the DCGM families through a Prometheus server's HTTP API. `/api/v1/query` at each
//! tick (an instant vector at the window end), `/api/v1/query_range` to backfill the windows missed while the
//! sampler was down. Values are strings and timestamps float seconds, as the API documents.
//!
//! One query reads the five families (`{__name__=~"…"}`, plus the configured extra matchers, e.g.
//! `job="dcgm"`). With a node name, only series whose `Hostname`/`hostname` label is that node are kept.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dcgm::{DeviceSet, Labels, Readings, Series, FAMILIES};
use crate::error::{Result, SamplerError};
use crate::exposition::parse_value;
use crate::source::{check_http_url, http_client, Source};

/// Points per `query_range` request (Prometheus refuses more than 11,000).
pub const MAX_POINTS: usize = 10_000;

/// A Prometheus server that scrapes DCGM exporters.
#[derive(Debug)]
pub struct PrometheusSource {
    base: String,
    query: String,
    node: Option<String>,
    http: reqwest::Client,
}

#[derive(Debug, Deserialize)]
struct Response {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Data {
    #[serde(rename = "resultType")]
    pub(crate) result_type: String,
    pub(crate) result: Vec<SeriesJson>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SeriesJson {
    pub(crate) metric: Map<String, Value>,
    #[serde(default)]
    pub(crate) value: Option<(f64, String)>,
    #[serde(default)]
    values: Option<Vec<(f64, String)>>,
}

impl SeriesJson {
    /// The points of a range answer's series (none in an instant answer).
    pub(crate) fn values(&self) -> &[(f64, String)] {
        self.values.as_deref().unwrap_or_default()
    }
}

/// The PromQL selector of the five families, with optional extra matchers (`job="dcgm"`).
pub fn selector(extra_matchers: Option<&str>) -> String {
    let mut s = format!("{{__name__=~\"{}\"", FAMILIES.join("|"));
    if let Some(m) = extra_matchers.map(str::trim).filter(|m| !m.is_empty()) {
        s.push(',');
        s.push_str(m);
    }
    s.push('}');
    s
}

/// A timestamp as the API takes it: float seconds.
pub(crate) fn secs(t: Timestamp) -> String {
    format!("{}.{:03}", t.0.div_euclid(1000), t.0.rem_euclid(1000))
}

fn host_ok(metric: &Map<String, Value>, node: Option<&str>) -> bool {
    let Some(node) = node else { return true };
    match Labels::get(metric, "Hostname").or_else(|| Labels::get(metric, "hostname")) {
        Some(h) => h == node,
        None => true,
    }
}

/// An API answer's data, or the error it reports.
pub(crate) fn decode(body: &str) -> Result<Data> {
    let r: Response = serde_json::from_str(body)
        .map_err(|e| SamplerError::source("prometheus", format!("unexpected answer: {e}")))?;
    if r.status != "success" {
        return Err(SamplerError::source(
            "prometheus",
            format!("query failed: {}", r.error.unwrap_or(r.status)),
        ));
    }
    r.data
        .ok_or_else(|| SamplerError::source("prometheus", "answer without data"))
}

fn observe(set: &mut DeviceSet, metric: &Map<String, Value>, v: &str) {
    set.stats.lines += 1;
    let Some(name) = Labels::get(metric, "__name__") else {
        set.stats.malformed += 1;
        return;
    };
    match parse_value(v) {
        Some(f) => set.observe(name, metric, v, f),
        None => set.stats.malformed += 1,
    }
}

/// Readings from an instant query's answer (`resultType: vector`), for the window ending at `at`.
pub fn readings_from_query(body: &str, at: Timestamp, node: Option<&str>) -> Result<Readings> {
    let data = decode(body)?;
    if data.result_type != "vector" {
        return Err(SamplerError::source(
            "prometheus",
            format!("expected a vector, got a {}", data.result_type),
        ));
    }
    let mut set = DeviceSet::new();
    for s in data.result.iter().filter(|s| host_ok(&s.metric, node)) {
        match &s.value {
            Some((_, v)) => observe(&mut set, &s.metric, v),
            None => set.stats.malformed += 1,
        }
    }
    Ok(set.finish(at))
}

/// Readings per window end from a range query's answer (`resultType: matrix`). Points are matched to `ends`
/// to the millisecond; ends with no point are left out.
pub fn readings_from_range(
    body: &str,
    ends: &[Timestamp],
    node: Option<&str>,
) -> Result<Vec<Readings>> {
    let mut r = RangeReadings::new(ends, node);
    r.add(body)?;
    Ok(r.finish())
}

/// Readings per window end gathered from several range answers over the same ends (one per family, as the
/// history import asks them).
#[derive(Debug)]
pub struct RangeReadings {
    sets: BTreeMap<i64, DeviceSet>,
    node: Option<String>,
}

impl RangeReadings {
    pub fn new(ends: &[Timestamp], node: Option<&str>) -> RangeReadings {
        RangeReadings {
            sets: ends.iter().map(|t| (t.0, DeviceSet::new())).collect(),
            node: node.map(str::to_string),
        }
    }

    /// Adds a range query's answer (`resultType: matrix`): each point to the end it names (to the ms).
    pub fn add(&mut self, body: &str) -> Result<()> {
        let data = decode(body)?;
        if data.result_type != "matrix" {
            return Err(SamplerError::source(
                "prometheus",
                format!("expected a matrix, got a {}", data.result_type),
            ));
        }
        for s in data
            .result
            .iter()
            .filter(|s| host_ok(&s.metric, self.node.as_deref()))
        {
            // The series' family and device once, then each value (as `observe` reads them one by one).
            let series = Labels::get(&s.metric, "__name__").map(|n| Series::new(n, &s.metric));
            for (ts, v) in s.values.iter().flatten() {
                let ms = (ts * 1000.0).round() as i64;
                let Some(set) = self.sets.get_mut(&ms) else {
                    continue;
                };
                set.stats.lines += 1;
                match (&series, parse_value(v)) {
                    (Some(series), Some(f)) => set.observe_series(series, v, f),
                    _ => set.stats.malformed += 1,
                }
            }
        }
        Ok(())
    }

    /// The readings of the ends that saw a device, in time order.
    pub fn finish(self) -> Vec<Readings> {
        self.sets
            .into_iter()
            .map(|(t, set)| set.finish(Timestamp(t)))
            .filter(|r| !r.devices.is_empty())
            .collect()
    }
}

/// The query of one family's values at each step that are at most `max_age_ms` old: the instant vector a live
/// read would get (the latest sample at or before the step, staleness markers honoured), kept only where a raw
/// sample lies within `max_age_ms` of the step, so that a value is never stretched over a hole (Prometheus's
/// own lookback would stretch it five minutes, and history loaded without staleness markers forever within
/// them). One family per query: `and` matches label sets without the metric name.
pub fn fresh_query(family: &str, extra_matchers: Option<&str>, max_age_ms: i64) -> String {
    let mut sel = format!("{family}{{");
    if let Some(m) = extra_matchers.map(str::trim).filter(|m| !m.is_empty()) {
        sel.push_str(m);
    }
    sel.push('}');
    format!("{sel} and last_over_time({sel}[{max_age_ms}ms])")
}

/// The step of a range query for windows of `window_ms`, as the API takes it (seconds).
pub fn step_of(window_ms: i64) -> String {
    rust_decimal::Decimal::new(window_ms, 3)
        .normalize()
        .to_string()
}

impl PrometheusSource {
    /// `base`: the server's URL (`http://prometheus:9090`); `matchers`: extra PromQL label matchers; `node`: keep
    /// only this node's series.
    pub fn new(
        base: &str,
        matchers: Option<&str>,
        node: Option<String>,
        timeout: Duration,
    ) -> Result<Self> {
        check_http_url("--prometheus-url", base)?;
        Ok(PrometheusSource {
            base: base.trim_end_matches('/').to_string(),
            query: selector(matchers),
            node,
            http: http_client(timeout)?,
        })
    }

    /// The node whose series are kept, if any.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// `GET /api/v1/query_range` of `query` from `start` to `end` (both included) every `window_ms`: the body.
    pub async fn query_range(
        &self,
        query: &str,
        start: Timestamp,
        end: Timestamp,
        window_ms: i64,
    ) -> Result<String> {
        self.get(
            "/api/v1/query_range",
            &[
                ("query", query.to_string()),
                ("start", secs(start)),
                ("end", secs(end)),
                ("step", step_of(window_ms)),
            ],
        )
        .await
    }

    /// `GET /api/v1/query` of `query` at `at`: the body.
    pub async fn query_instant(&self, query: &str, at: Timestamp) -> Result<String> {
        self.get(
            "/api/v1/query",
            &[("query", query.to_string()), ("time", secs(at))],
        )
        .await
    }

    async fn get(&self, path: &str, params: &[(&str, String)]) -> Result<String> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .http
            .get(&url)
            .query(params)
            .send()
            .await
            .map_err(|e| SamplerError::source("prometheus", format!("GET {url}: {e}")))?;
        let status = resp.status();
        let body = resp
            .text()
            .await
            .map_err(|e| SamplerError::source("prometheus", format!("GET {url}: {e}")))?;
        if !status.is_success() {
            let excerpt: String = body.chars().take(300).collect();
            return Err(SamplerError::source(
                "prometheus",
                format!("GET {url} answered {status}: {excerpt}"),
            ));
        }
        Ok(body)
    }
}

#[async_trait]
impl Source for PrometheusSource {
    fn name(&self) -> &'static str {
        "prometheus"
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let body = self
            .get(
                "/api/v1/query",
                &[("query", self.query.clone()), ("time", secs(at))],
            )
            .await?;
        readings_from_query(&body, at, self.node.as_deref())
    }

    fn can_backfill(&self) -> bool {
        true
    }

    async fn backfill(&mut self, ends: &[Timestamp], window_ms: i64) -> Result<Vec<Readings>> {
        let mut out = Vec::new();
        let step = step_of(window_ms);
        for chunk in ends.chunks(MAX_POINTS) {
            let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
                continue;
            };
            let body = self
                .get(
                    "/api/v1/query_range",
                    &[
                        ("query", self.query.clone()),
                        ("start", secs(*first)),
                        ("end", secs(*last)),
                        ("step", step.clone()),
                    ],
                )
                .await?;
            out.extend(readings_from_range(&body, chunk, self.node.as_deref())?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_selector() {
        assert_eq!(
            selector(Some(" job=\"dcgm\" ")),
            "{__name__=~\"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_GR_ENGINE_ACTIVE|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\",job=\"dcgm\"}"
        );
        assert_eq!(secs(Timestamp(1_773_114_089_444)), "1773114089.444");
    }

    #[test]
    fn errors_and_wrong_shapes_are_source_errors() {
        assert!(readings_from_query(
            "{\"status\":\"error\",\"error\":\"bad\"}",
            Timestamp(0),
            None
        )
        .unwrap_err()
        .to_string()
        .contains("bad"));
        assert!(readings_from_query("<html>", Timestamp(0), None).is_err());
        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(readings_from_query(matrix, Timestamp(0), None).is_err());
    }
}

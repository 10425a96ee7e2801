//! The Prometheus source: the DCGM families through a Prometheus server's HTTP API. `/api/v1/query` at each
//! tick (an instant vector at the window end), `/api/v1/query_range` to backfill the windows missed while the
//! sampler was down. Values are strings and timestamps float seconds, as the API documents.
//!
//! One query reads the five families (`{__name__=~"…"}`, plus the configured extra matchers, e.g.
//! `job="dcgm"`). With a node name, only series whose `Hostname`/`hostname` label is that node are kept.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dcgm::{DeviceSet, Series, FAMILIES};
use crate::error::{Result, SamplerError};
use crate::exposition::parse_value;
use crate::readings::{Labels, Readings};
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
struct Response<'a> {
    status: String,
    #[serde(default, borrow)]
    data: Option<Data<'a>>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Data<'a> {
    #[serde(rename = "resultType")]
    pub(crate) result_type: String,
    #[serde(borrow)]
    pub(crate) result: Vec<SeriesJson<'a>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SeriesJson<'a> {
    pub(crate) metric: Map<String, Value>,
    #[serde(default)]
    pub(crate) value: Option<(f64, String)>,
    /// Borrowed from the answer: a range answer holds a string a point (Prometheus writes values as numbers in
    /// strings, which never need an escape).
    #[serde(default, borrow)]
    values: Option<Vec<(f64, &'a str)>>,
}

impl SeriesJson<'_> {
    /// The points of a range answer's series (none in an instant answer).
    pub(crate) fn values(&self) -> &[(f64, &str)] {
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
pub(crate) fn decode(body: &str) -> Result<Data<'_>> {
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
        self.add_except(body, &Stretched::default())
    }

    /// Adds a range query's answer as [`RangeReadings::add`] does, leaving out the points `stretched` names
    /// (values a live read would get at those ends that no raw sample within the staleness limit backs).
    pub fn add_except(&mut self, body: &str, stretched: &Stretched) -> Result<()> {
        let data = matrix(body)?;
        for s in data
            .result
            .iter()
            .filter(|s| host_ok(&s.metric, self.node.as_deref()))
        {
            // The series' family and device once, then each value (as `observe` reads them one by one).
            let series = Labels::get(&s.metric, "__name__").map(|n| Series::new(n, &s.metric));
            let skip = stretched.of(&s.metric);
            for (ts, v) in s.values.iter().flatten() {
                let ms = (ts * 1000.0).round() as i64;
                let Some(set) = self.sets.get_mut(&ms) else {
                    continue;
                };
                if skip.is_some_and(|skip| skip.contains(&ms)) {
                    continue;
                }
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

/// A range answer's data, which must be a matrix.
fn matrix(body: &str) -> Result<Data<'_>> {
    let data = decode(body)?;
    if data.result_type != "matrix" {
        return Err(SamplerError::source(
            "prometheus",
            format!("expected a matrix, got a {}", data.result_type),
        ));
    }
    Ok(data)
}

/// The points of a family's values a live read would get but that no raw sample within the staleness limit
/// backs ([`stretched_query`]'s answer), per series (its labels, metric name included) and end (ms).
#[derive(Debug, Default)]
pub struct Stretched(HashMap<Vec<(String, String)>, HashSet<i64>>);

impl Stretched {
    /// Reads [`stretched_query`]'s range answer.
    pub fn from_range(body: &str) -> Result<Stretched> {
        let mut out = HashMap::new();
        for s in matrix(body)?.result {
            let ends: &mut HashSet<i64> = out.entry(label_key(&s.metric)).or_default();
            ends.extend(
                s.values()
                    .iter()
                    .map(|(ts, _)| (ts * 1000.0).round() as i64),
            );
        }
        Ok(Stretched(out))
    }

    fn of(&self, metric: &Map<String, Value>) -> Option<&HashSet<i64>> {
        match self.0.is_empty() {
            true => None,
            false => self.0.get(&label_key(metric)),
        }
    }
}

/// A series' labels in name order, string values only (all of them in an answer).
fn label_key(metric: &Map<String, Value>) -> Vec<(String, String)> {
    let mut key: Vec<(String, String)> = metric
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect();
    key.sort_unstable();
    key
}

/// The selector of one family with the extra matchers: `DCGM_FI_DEV_POWER_USAGE{job="dcgm"}`.
pub fn family_selector(family: &str, extra_matchers: Option<&str>) -> String {
    let mut sel = format!("{family}{{");
    if let Some(m) = extra_matchers.map(str::trim).filter(|m| !m.is_empty()) {
        sel.push_str(m);
    }
    sel.push('}');
    sel
}

/// The query of the points where the family's value at a step, the instant vector a live read would get (the
/// latest sample at or before the step, staleness markers honoured), is not backed by a raw sample within
/// `max_age_ms` of the step: Prometheus's own lookback would stretch a value five minutes over a hole, and
/// history loaded without staleness markers forever within them. The history import reads the bare selector
/// ([`family_selector`]) and leaves these points out ([`RangeReadings::add_except`]): the same as
/// `F and last_over_time(F[A])`, at about 40 % less of Prometheus's CPU, as `unless` answers only the holes while
/// `and` rebuilds every point of its answer step by step (BENCHMARKS.md "Import from Prometheus").
pub fn stretched_query(family: &str, extra_matchers: Option<&str>, max_age_ms: i64) -> String {
    let sel = family_selector(family, extra_matchers);
    format!("{sel} unless last_over_time({sel}[{max_age_ms}ms])")
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
    use eai_engine::Timestamp;

    use super::{readings_from_query, secs, selector};

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

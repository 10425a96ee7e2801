//! Where vLLM's counters are read ([`VllmReader`]): each target's `/metrics` (`--vllm-url DEPLOYMENT=URL`, a
//! config file's `[[vllm]]`, or a `file://` capture), read concurrently; and, with `--vllm-discover`, every vLLM
//! pod the `--prometheus-url` server scrapes: one instant query summed by (`__name__`, namespace, pod,
//! model_name), each pod's deployment given by the attribution rules as for its GPUs. A target that cannot be
//! read is reported and left out this time: its series keeps its baseline, so the next read covers the interval.

use std::time::Duration;

use eai_engine::Timestamp;

use crate::attribution::Attribution;
use crate::error::{Result, SamplerError};
use crate::readings::{DeviceReading, Labels, Workload};
use crate::source::prometheus::{decode, secs};
use crate::source::{check_http_url, http_client};
use crate::vllm::{from_text, Acc, Counters, SeriesKey, Target, FAMILIES, PREFIXES};

/// The PromQL of discovery: vLLM's counters summed per name, namespace, pod and model (engines and
/// `finished_reason` added up), with optional extra matchers (`job="vllm"`).
pub fn discovery_query(extra_matchers: Option<&str>) -> String {
    let names: Vec<String> = PREFIXES
        .iter()
        .flat_map(|p| FAMILIES.iter().map(move |f| format!("{p}{f}")))
        .collect();
    let mut sel = format!("{{__name__=~\"{}\"", names.join("|"));
    if let Some(m) = extra_matchers.map(str::trim).filter(|m| !m.is_empty()) {
        sel.push(',');
        sel.push_str(m);
    }
    sel.push('}');
    format!("sum by (__name__, namespace, pod, model_name) ({sel})")
}

/// The series of a discovery answer (`resultType: vector`), attributed to deployments; and how many answer
/// series were left out (no `pod` label: not a pod's, cannot be attributed).
pub fn series_from_query(
    body: &str,
    attribution: &Attribution,
) -> Result<(Vec<(SeriesKey, Counters)>, u64)> {
    let data = decode(body)?;
    if data.result_type != "vector" {
        return Err(SamplerError::source(
            "vllm",
            format!("expected a vector, got a {}", data.result_type),
        ));
    }
    let mut series = Discovered::default();
    for s in &data.result {
        series.add(&s.metric, s.value.as_ref().map(|(_, v)| v.as_str()));
    }
    Ok(series.finish(attribution))
}

/// The series of a discovery query asked over a range (`resultType: matrix`), per step matched to `ends` (to
/// the ms): what [`series_from_query`] gives at each of those instants. Ends without a series are left out.
pub fn series_from_range(
    body: &str,
    ends: &[Timestamp],
    attribution: &Attribution,
) -> Result<std::collections::BTreeMap<i64, Vec<(SeriesKey, Counters)>>> {
    let data = decode(body)?;
    if data.result_type != "matrix" {
        return Err(SamplerError::source(
            "vllm",
            format!("expected a matrix, got a {}", data.result_type),
        ));
    }
    let mut at: std::collections::BTreeMap<i64, Discovered> =
        ends.iter().map(|t| (t.0, Discovered::default())).collect();
    for s in &data.result {
        for (ts, v) in s.values() {
            if let Some(d) = at.get_mut(&((ts * 1000.0).round() as i64)) {
                d.add(&s.metric, Some(v));
            }
        }
    }
    Ok(at
        .into_iter()
        .map(|(t, d)| (t, d.finish(attribution).0))
        .filter(|(_, v)| !v.is_empty())
        .collect())
}

/// Discovery's answer series at one instant, summed per (namespace, pod, model).
#[derive(Debug, Default)]
struct Discovered {
    accs: std::collections::BTreeMap<(String, String, String), Acc>,
    skipped: u64,
}

impl Discovered {
    fn add(&mut self, m: &serde_json::Map<String, serde_json::Value>, value: Option<&str>) {
        let (Some(name), Some(pod), Some(v)) = (
            Labels::get(m, "__name__"),
            Labels::get(m, "pod").filter(|p| !p.is_empty()),
            value,
        ) else {
            self.skipped += 1;
            return;
        };
        let ns = Labels::get(m, "namespace").unwrap_or_default();
        let model = Labels::get(m, "model_name").unwrap_or(crate::vllm::UNKNOWN_MODEL);
        let acc = self
            .accs
            .entry((ns.to_string(), pod.to_string(), model.to_string()))
            .or_default();
        if acc.add(name, v).is_none() {
            self.skipped += 1;
        }
    }

    /// The series, attributed to deployments, and the answer series left out.
    fn finish(self, attribution: &Attribution) -> (Vec<(SeriesKey, Counters)>, u64) {
        let series = self
            .accs
            .into_iter()
            .map(|((ns, pod, model), acc)| {
                let placed = attribution.place(&DeviceReading {
                    workload: Some(Workload {
                        pod: pod.clone(),
                        namespace: (!ns.is_empty()).then(|| ns.clone()),
                        container: None,
                    }),
                    labels: vec![
                        ("namespace".into(), ns.clone()),
                        ("pod".into(), pod.clone()),
                        ("model_name".into(), model.clone()),
                    ]
                    .into(),
                    ..DeviceReading::default()
                });
                let key = SeriesKey {
                    deployment_id: placed.deployment_id,
                    instance: format!("{ns}/{pod}"),
                    model,
                };
                (key, acc.finish())
            })
            .filter(|(_, c)| !c.is_empty())
            .collect();
        (series, self.skipped)
    }
}

/// One read of every target.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub series: Vec<(SeriesKey, Counters)>,
    /// Reads attempted (one per target, one for discovery).
    pub reads: u64,
    /// The reads that failed, as messages.
    pub errors: Vec<String>,
    /// Lines or answer series that could not be read.
    pub skipped: u64,
}

#[derive(Debug, Clone)]
struct Discovery {
    base: String,
    query: String,
}

/// Reads vLLM's counters from targets and Prometheus.
#[derive(Debug, Clone)]
pub struct VllmReader {
    targets: Vec<Target>,
    discovery: Option<Discovery>,
    attribution: Attribution,
    http: reqwest::Client,
}

async fn get_text(http: &reqwest::Client, url: &str, query: &[(&str, String)]) -> Result<String> {
    if let Some(path) = url.strip_prefix("file://") {
        return tokio::fs::read_to_string(path)
            .await
            .map_err(|e| SamplerError::source("vllm", format!("cannot read {path}: {e}")));
    }
    let resp = http
        .get(url)
        .query(query)
        .send()
        .await
        .map_err(|e| SamplerError::source("vllm", format!("GET {url}: {e}")))?;
    let status = resp.status();
    let body = resp
        .text()
        .await
        .map_err(|e| SamplerError::source("vllm", format!("GET {url}: {e}")))?;
    if !status.is_success() {
        let excerpt: String = body.chars().take(300).collect();
        return Err(SamplerError::source(
            "vllm",
            format!("GET {url} answered {status}: {excerpt}"),
        ));
    }
    Ok(body)
}

impl VllmReader {
    /// `prometheus`: the server's base URL and extra matchers, when vLLM pods are discovered through it.
    pub fn new(
        targets: Vec<Target>,
        prometheus: Option<(&str, Option<&str>)>,
        attribution: Attribution,
        timeout: Duration,
    ) -> Result<Self> {
        let discovery = match prometheus {
            Some((base, matchers)) => {
                check_http_url("--prometheus-url", base)?;
                Some(Discovery {
                    base: base.trim_end_matches('/').to_string(),
                    query: discovery_query(matchers),
                })
            }
            None => None,
        };
        Ok(VllmReader {
            targets,
            discovery,
            attribution,
            http: http_client(timeout)?,
        })
    }

    /// Whether there is anything to read.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && self.discovery.is_none()
    }

    /// Reads every target (concurrently) and the discovery query, for the instant `at`.
    pub async fn read(&self, at: Timestamp) -> Read {
        let mut out = Read::default();
        let mut set = tokio::task::JoinSet::new();
        for (i, t) in self.targets.iter().enumerate() {
            let (http, url) = (self.http.clone(), t.url.clone());
            set.spawn(async move { (i, get_text(&http, &url, &[]).await) });
        }
        if let Some(d) = &self.discovery {
            out.reads += 1;
            let url = format!("{}/api/v1/query", d.base);
            let q = [("query", d.query.clone()), ("time", secs(at))];
            match get_text(&self.http, &url, &q)
                .await
                .and_then(|body| series_from_query(&body, &self.attribution))
            {
                Ok((series, skipped)) => {
                    out.series.extend(series);
                    out.skipped += skipped;
                }
                Err(e) => out.errors.push(e.to_string()),
            }
        }
        let mut texts = Vec::new();
        while let Some(joined) = set.join_next().await {
            out.reads += 1;
            match joined {
                Ok((i, Ok(text))) => texts.push((i, text)),
                Ok((_, Err(e))) => out.errors.push(e.to_string()),
                Err(e) => out.errors.push(format!("vllm: a read stopped: {e}")),
            }
        }
        texts.sort_by_key(|(i, _)| *i);
        for (i, text) in texts {
            let Some(t) = self.targets.get(i) else {
                continue;
            };
            let parsed = from_text(&text);
            out.skipped += parsed.malformed + parsed.bad_values;
            if parsed.models.is_empty() {
                out.errors.push(format!(
                    "vllm: {} has none of vLLM's token counters (is it a vLLM server's /metrics?)",
                    t.url
                ));
            }
            for (model, counters) in parsed.models {
                let key = SeriesKey {
                    deployment_id: t.deployment_id.clone(),
                    instance: t.url.clone(),
                    model,
                };
                out.series.push((key, counters));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;

    use super::{discovery_query, series_from_query};
    use crate::attribution::Attribution;
    use crate::vllm::{REQUESTS, TOKENS_IN, TOKENS_OUT};

    #[test]
    fn the_discovery_query_names_every_family_exactly() {
        let q = discovery_query(Some("job=\"vllm\""));
        assert!(q.starts_with("sum by (__name__, namespace, pod, model_name) ({__name__=~\"vllm:prompt_tokens_total|"), "{q}");
        assert!(
            q.contains("|ray_vllm:request_success_total\",job=\"vllm\"})"),
            "{q}"
        );
        assert!(!q.contains("_created"));
    }

    #[test]
    fn a_discovery_answer_is_attributed_like_the_gpus() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"__name__":"vllm:prompt_tokens_total","namespace":"ai","pod":"vllm-llama-7d9f8b6c5d-x2kqp","model_name":"m"},"value":[1.5,"100"]},
          {"metric":{"__name__":"vllm:generation_tokens_total","namespace":"ai","pod":"vllm-llama-7d9f8b6c5d-x2kqp","model_name":"m"},"value":[1.5,"40"]},
          {"metric":{"__name__":"vllm:request_success_total","namespace":"ai","pod":"vllm-llama-7d9f8b6c5d-x2kqp","model_name":"m"},"value":[1.5,"3"]},
          {"metric":{"__name__":"vllm:prompt_tokens_total","namespace":"team-b","pod":"x-0","model_name":"m"},"value":[1.5,"7"]},
          {"metric":{"__name__":"vllm:prompt_tokens_total","model_name":"m"},"value":[1.5,"9"]}
        ]}}"#;
        let a = Attribution::from_toml(
            "[[deployment]]\nnamespace = \"team-b\"\ndeployment_id = \"team-b-vllm\"\n",
        )
        .unwrap();
        let (series, skipped) = series_from_query(body, &a).unwrap();
        assert_eq!(skipped, 1, "a series without a pod cannot be attributed");
        let find = |inst: &str| series.iter().find(|(k, _)| k.instance == inst).unwrap();
        let (k, c) = find("ai/vllm-llama-7d9f8b6c5d-x2kqp");
        assert_eq!(k.deployment_id, "vllm-llama", "derived from the pod name");
        assert_eq!(
            (c[TOKENS_IN], c[TOKENS_OUT], c[REQUESTS]),
            (Decimal::from(100), Decimal::from(40), Decimal::from(3))
        );
        assert_eq!(
            find("team-b/x-0").0.deployment_id,
            "team-b-vllm",
            "by the rules"
        );
        let e = series_from_query(r#"{"status":"error","error":"bad query"}"#, &a).unwrap_err();
        assert!(e.to_string().contains("bad query"), "{e}");
    }
}

//! Traces: OTLP/HTTP export, decoded by a receiver as a collector would, and the trace of a sample from the
//! sampler to the database.

use super::*;

/// A span as the receiver decoded it.
#[derive(Debug, Clone)]
struct ReceivedSpan {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: std::collections::BTreeMap<String, String>,
}

/// An OTLP/HTTP receiver on a free port: decodes every `POST /v1/traces` (protobuf) and keeps its spans.
fn otlp_receiver() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<ReceivedSpan>>>) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
    use prost::Message as _;
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = spans.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let (head_end, content_length) = loop {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (None, 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap_or(0));
                    break (Some(i + 4), len);
                }
            };
            let Some(start) = head_end else { continue };
            while buf.len() < start + content_length {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buf[..start]).to_string();
            assert!(
                head.starts_with("POST /v1/traces "),
                "unexpected request: {head}"
            );
            assert!(
                head.to_ascii_lowercase()
                    .contains("content-type: application/x-protobuf"),
                "{head}"
            );
            let req = ExportTraceServiceRequest::decode(&buf[start..start + content_length])
                .expect("an OTLP protobuf body");
            let text = |v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>| match v
                .as_ref()
                .and_then(|v| v.value.clone())
            {
                Some(AnyValue::StringValue(s)) => s,
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                _ => String::new(),
            };
            let mut got = Vec::new();
            for rs in req.resource_spans {
                let service = rs
                    .resource
                    .iter()
                    .flat_map(|r| r.attributes.iter())
                    .find(|kv| kv.key == "service.name")
                    .map(|kv| text(&kv.value))
                    .unwrap_or_default();
                for ss in rs.scope_spans {
                    for s in ss.spans {
                        got.push(ReceivedSpan {
                            service: service.clone(),
                            name: s.name.clone(),
                            trace_id: hex(&s.trace_id),
                            span_id: hex(&s.span_id),
                            parent_span_id: hex(&s.parent_span_id),
                            attributes: s
                                .attributes
                                .iter()
                                .map(|kv| (kv.key.clone(), text(&kv.value)))
                                .collect(),
                        });
                    }
                }
            }
            keep.lock().unwrap().extend(got);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (port, spans)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Waits until `pred` holds of the spans received.
fn wait_spans(
    spans: &std::sync::Mutex<Vec<ReceivedSpan>>,
    what: &str,
    pred: impl Fn(&[ReceivedSpan]) -> bool,
) -> Vec<ReceivedSpan> {
    let start = Instant::now();
    loop {
        let got = spans.lock().unwrap().clone();
        if pred(&got) {
            return got;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}: not received; got {:#?}",
            got.iter()
                .map(|s| (&s.service, &s.name, &s.trace_id))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn spans_are_exported_over_otlp_and_a_samples_trace_goes_from_the_sampler_to_the_database() {
    let (otlp_port, spans) = otlp_receiver();
    let otlp = format!("http://127.0.0.1:{otlp_port}");
    let dir = temp_dir("otlp");
    let key = "eai_live_otlptestotlptestotlptestotlptestotlptestotlptest01";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = Server(
        serve_cmd(&dir.join("data"), port, key, None)
            .env("EAI_ALLOCATION_BATCH", "off")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&base, Duration::from_secs(30));

    // 1. A caller's trace continues in the server: the request's span is a child of the caller's, its store
    //    call a child of it, with the eai.* attributes.
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let resp = reqwest::blocking::Client::new()
        .post(format!("{base}/v1/finops/gpu/samples"))
        .bearer_auth(key)
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .header("x-eai-project", "alpha")
        .header("baggage", "eai.run_id=run-7,eai.agent_id=agent-3")
        .json(&crash_batch(crash_t0(), 0, 4))
        .send()
        .unwrap();
    assert!(resp.status().is_success());
    let answered = resp.headers()["traceparent"].to_str().unwrap().to_string();
    assert!(answered.starts_with(&format!("00-{trace}-")), "{answered}");
    // The request's span ends after its answer is sent: it may come in a later export than its store call's.
    let got = wait_spans(&spans, "the request's spans", |s| {
        let has = |name: &str| s.iter().any(|x| x.trace_id == trace && x.name == name);
        has("store.insert_samples") && has("POST /v1/finops/gpu/samples")
    });
    let request = got
        .iter()
        .find(|s| s.trace_id == trace && s.name == "POST /v1/finops/gpu/samples")
        .expect("the request's span");
    assert_eq!(request.service, "eai-gpu");
    assert_eq!(request.parent_span_id, parent);
    assert_eq!(
        answered,
        format!("00-{trace}-{}-01", request.span_id),
        "the answered traceparent names the exported span"
    );
    assert_eq!(request.attributes["eai.project"], "alpha");
    assert_eq!(request.attributes["eai.run_id"], "run-7");
    assert_eq!(request.attributes["eai.agent_id"], "agent-3");
    assert_eq!(request.attributes["eai.key_id"], "key_1");
    let store = got
        .iter()
        .find(|s| s.trace_id == trace && s.name == "store.insert_samples")
        .unwrap();
    assert_eq!(
        store.parent_span_id, request.span_id,
        "the store call is a child of the request"
    );
    assert_eq!(store.attributes["db.system"], "sqlite");

    // 2. The sampler's trace: its tick and delivery, its POST continued by the server, down to the store.
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/dcgm_h100x8_k8s_gpu_operator_sampled.prom")
        .canonicalize()
        .unwrap();
    let out = bin()
        .args(["sampler", "--once", "--node", "gpu-node-7", "--dcgm-url"])
        .arg(format!("file://{}", fixture.display()))
        .args(["--control-plane", &base, "--spool-dir"])
        .arg(dir.join("spool"))
        .env("EAI_API_KEY", key)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = wait_spans(&spans, "the sampler's trace down to the store", |s| {
        s.iter()
            .filter(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.deliver")
            .any(|d| {
                s.iter().any(|x| {
                    x.service == "eai-gpu"
                        && x.trace_id == d.trace_id
                        && x.name == "store.insert_samples"
                })
            })
    });
    let deliver = got
        .iter()
        .find(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.deliver")
        .unwrap();
    let tick = got
        .iter()
        .find(|x| x.service == "eai-gpu-sampler" && x.name == "sampler.tick")
        .unwrap();
    assert_eq!(deliver.trace_id, tick.trace_id);
    assert_eq!(deliver.parent_span_id, tick.span_id);
    let server = got
        .iter()
        .find(|x| {
            x.service == "eai-gpu"
                && x.trace_id == deliver.trace_id
                && x.name == "POST /v1/finops/gpu/samples"
        })
        .expect("the server continued the sampler's trace");
    assert_eq!(
        server.parent_span_id, deliver.span_id,
        "the POST carries the delivery's traceparent"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

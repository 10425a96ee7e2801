//! The breakdown over HTTP (`GET /v1/finops/gpu/usage`): the worked example's deployment split over its pods by
//! GPU-seconds, to the cent of the allocation; grouping by node and GPU, filters, the errors of a bad query; and
//! who sees what: a tenant reader the rows of its dedicated deployments only.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::*;

/// The sums of the rows' cost per currency.
fn cost_of(rows: &[Value]) -> BTreeMap<String, Decimal> {
    let mut by = BTreeMap::new();
    for r in rows {
        for c in r["cost"].as_array().expect("cost") {
            *by.entry(c["currency"].as_str().expect("currency").to_string())
                .or_insert(Decimal::ZERO) += c["amount"]
                .as_str()
                .expect("amount")
                .parse::<Decimal>()
                .expect("decimal");
        }
    }
    by
}

pub async fn usage_is_broken_down_by_pod_node_and_gpu_to_the_cent_and_scoped_to_its_reader() {
    let app = spawn_app().await;
    let hour = recent_hour();
    app.create_policy(worked_example_policy()).await;
    // The worked example's deployment: GPU-aaaa in one pod the whole hour; GPU-bbbb in another for the first
    // half, then in a third (the pod was replaced).
    let mut samples = hour_of_samples("GPU-aaaa", "vllm-llama-70b", hour, 400);
    for s in &mut samples {
        s["pod"] = json!("vllm-llama-70b-a");
    }
    for (i, mut s) in hour_of_samples("GPU-bbbb", "vllm-llama-70b", hour, 400)
        .into_iter()
        .enumerate()
    {
        s["pod"] = json!(if i < 120 {
            "vllm-llama-70b-b"
        } else {
            "vllm-llama-70b-c"
        });
        s["node"] = json!("gpu-node-4");
        samples.push(s);
    }
    // A dedicated deployment of tenant A, on its own node.
    for mut s in hour_of_samples("GPU-cccc", "train-a", hour, 300) {
        s["tenant_id"] = json!(TENANT_A);
        s["node"] = json!("gpu-node-9");
        samples.push(s);
    }
    app.ingest(samples).await;
    let to = Timestamp(hour.0 + HOUR_MS);
    let path = |q: &str| format!("/v1/finops/gpu/usage?from={hour}&to={to}{q}");

    let (status, alloc) = app.allocation(&app.admin_key, hour, to).await;
    assert_eq!(status, StatusCode::OK, "{alloc}");
    let deployment_cost = |dep: &str| -> Decimal {
        alloc["deployments"]
            .as_array()
            .expect("deployments")
            .iter()
            .find(|d| d["deployment_id"] == dep)
            .map(|d| d["cost"].as_str().expect("cost").parse().expect("decimal"))
            .expect("the deployment")
    };
    assert_eq!(deployment_cost("vllm-llama-70b"), Decimal::new(519, 2));

    // By pod, within the deployment: 3600, 1800 and 1800 GPU-seconds; 5.19 EUR shared 2:1:1 to the cent (exact
    // 2.5956, 1.2978, 1.2978 of 5.1912; scaled to 5.19 and floored 2.59, 1.29, 1.29; the two cents left go to
    // the largest remainders, 0.0075 each).
    let (status, b) = app
        .get(
            &path("&group_by=pod&filter=deployment:vllm-llama-70b"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["group_by"], json!(["pod"]));
    let rows = b["rows"].as_array().expect("rows");
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["group"]["pod"].as_str().expect("pod").to_string(),
                r["gpu_seconds"].to_string(),
                r["cost"][0]["amount"].as_str().expect("amount").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("vllm-llama-70b-a".into(), "3600".into(), "2.59".into()),
            ("vllm-llama-70b-b".into(), "1800".into(), "1.30".into()),
            ("vllm-llama-70b-c".into(), "1800".into(), "1.30".into()),
        ],
        "{b}"
    );
    assert_eq!(cost_of(rows)["EUR"], Decimal::new(519, 2));

    // Every deployment, by node and GPU: the rows sum to the allocation's total.
    let (status, b) = app.get(&path("&group_by=node,gpu"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    let rows = b["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{b}");
    assert_eq!(
        rows[0]["group"],
        json!({"node": "gpu-node-3", "gpu": "GPU-aaaa"})
    );
    assert_eq!(
        cost_of(rows)["EUR"],
        deployment_cost("vllm-llama-70b") + deployment_cost("train-a")
    );
    // By default, per deployment: the allocation's costs.
    let (status, b) = app.get(&path(""), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    for r in b["rows"].as_array().expect("rows") {
        let dep = r["group"]["deployment"].as_str().expect("deployment");
        assert_eq!(
            cost_of(std::slice::from_ref(r))["EUR"],
            deployment_cost(dep),
            "{b}"
        );
    }

    // A tenant reader: its dedicated deployment's rows only, never the shared one's pods nor another tenant's.
    let (key_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (status, b) = app
        .get(&path("&group_by=deployment,pod,tenant"), &key_a)
        .await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(
        b["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["group"].clone())
            .collect::<Vec<_>>(),
        vec![json!({"deployment": "train-a", "pod": "train-a-0", "tenant": TENANT_A})],
        "{b}"
    );
    let (key_b, _) = app.key("finops", Some(TENANT_B)).await;
    let (status, b) = app.get(&path("&group_by=pod"), &key_b).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["rows"], json!([]), "{b}");

    // A bad query: every bad field named, in the envelope.
    let (status, e) = app
        .get(&path("&group_by=pod,rack&filter=pod"), &app.admin_key)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
    assert_eq!(e["error"]["code"], "validation_error", "{e}");
    let fields: Vec<&str> = e["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().expect("field"))
        .collect();
    assert_eq!(fields, vec!["group_by", "filter"], "{e}");
}

/// A GPU shared by two pods of two deployments (SPEC §11): measured shares (0.7 and 0.2, the idle 0.1) for the
/// first half hour, then equal ones. Grouped by pod and GPU, each pod is on the one GPU with its share of the
/// GPU's hour; grouped by share method too, its measured and its equal time apart; the rows sum to the
/// allocation. A tenant's reader sees its own pod's time on the GPU only, and not its share of the GPU.
pub async fn a_shared_gpu_is_broken_down_by_pod_with_each_share_and_its_method() {
    let app = spawn_app().await;
    let hour = recent_hour();
    app.create_policy(worked_example_policy()).await;
    let mut samples = Vec::new();
    for (i, base) in hour_of_samples("GPU-8a2b", "chat", hour, 400)
        .into_iter()
        .enumerate()
    {
        let measured = i < 120;
        let method = if measured { "measured" } else { "equal" };
        let part = |id: &str, dep: &str, pod: &str, fraction: &str| {
            let mut s = base.clone();
            s["gpu_uuid"] = json!(id);
            s["deployment_id"] = json!(dep);
            s["pod"] = json!(pod);
            s["gpu_fraction"] = json!(fraction);
            s["share_method"] = json!(method);
            s
        };
        let (chat, embed) = if measured {
            ("0.7", "0.2")
        } else {
            ("0.5", "0.5")
        };
        samples.push(part("GPU-8a2b", "chat", "chat-0", chat));
        let mut e = part("GPU-8a2b/shared/team-b/embed-0", "embed", "embed-0", embed);
        e["tenant_id"] = json!(TENANT_B);
        samples.push(e);
        if measured {
            samples.push(part("GPU-8a2b/shared-idle", "idle", "idle", "0.1"));
        }
    }
    app.ingest(samples).await;
    let to = Timestamp(hour.0 + HOUR_MS);
    let path = |q: &str| format!("/v1/finops/gpu/usage?from={hour}&to={to}{q}");
    let (status, alloc) = app.allocation(&app.admin_key, hour, to).await;
    assert_eq!(status, StatusCode::OK, "{alloc}");
    let total: Decimal = alloc["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .map(|d| {
            d["cost"]
                .as_str()
                .expect("cost")
                .parse::<Decimal>()
                .expect("decimal")
        })
        .sum();

    let (status, b) = app.get(&path("&group_by=pod,gpu"), &app.admin_key).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    let rows = b["rows"].as_array().expect("rows");
    let got: Vec<(&str, &str, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["group"]["pod"].as_str().expect("pod"),
                r["group"]["gpu"].as_str().expect("gpu"),
                r["gpu_seconds"].to_string(),
                r["gpu_share"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("chat-0", "GPU-8a2b", "2160".into(), "0.6".into()),
            ("embed-0", "GPU-8a2b", "1260".into(), "0.35".into()),
            ("idle", "GPU-8a2b", "180".into(), "0.05".into()),
        ],
        "{b}"
    );
    assert_eq!(cost_of(rows)["EUR"], total, "{b}");

    let (status, b) = app
        .get(
            &path("&group_by=pod,share&filter=pod:chat-0"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{b}");
    let got: Vec<(&str, String)> = b["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            assert!(r.get("gpu_share").is_none(), "{r}");
            (
                r["group"]["share"].as_str().expect("share"),
                r["gpu_seconds"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![("equal", "900".into()), ("measured", "1260".into())],
        "{b}"
    );

    // The explanation of chat says where its time ran: chat-0 on the shared GPU, by method.
    let (status, e) = app
        .get(
            &format!("/v1/finops/gpu/allocation/explain?deployment_id=chat&from={hour}&to={to}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{e}");
    let got: Vec<(&str, &str, &str, String, String)> = e["pods"]
        .as_array()
        .expect("pods")
        .iter()
        .map(|r| {
            let g = &r["group"];
            (
                g["pod"].as_str().expect("pod"),
                g["gpu"].as_str().expect("gpu"),
                g["share"].as_str().expect("share"),
                r["gpu_seconds"].to_string(),
                r["gpu_share"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("chat-0", "GPU-8a2b", "equal", "900".into(), "0.25".into()),
            (
                "chat-0",
                "GPU-8a2b",
                "measured",
                "1260".into(),
                "0.35".into()
            ),
        ],
        "{e}"
    );

    // Tenant B's reader: its pod's time on the GPU by method, nothing of chat-0's, and no share of the GPU
    // (which would tell how much the other tenants used).
    let (key_b, _) = app.key("finops", Some(TENANT_B)).await;
    let (status, b) = app.get(&path("&group_by=pod,gpu,share"), &key_b).await;
    assert_eq!(status, StatusCode::OK, "{b}");
    let got: Vec<(Value, String, Option<&Value>)> = b["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["group"].clone(),
                r["gpu_seconds"].to_string(),
                r.get("gpu_share"),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                json!({"pod": "embed-0", "gpu": "GPU-8a2b", "share": "equal"}),
                "900".into(),
                None
            ),
            (
                json!({"pod": "embed-0", "gpu": "GPU-8a2b", "share": "measured"}),
                "360".into(),
                None
            ),
        ],
        "{b}"
    );
}

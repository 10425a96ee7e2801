//! `eai-gpu allocate` on files: the worked example as a table and as the API's JSON, a bad file named with
//! its record and field; and the load generator, in the binary only with the `bench` feature.

use super::*;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/worked")
        .join(name)
}

/// The load generator is the cargo feature `bench` (scripts/bench.sh builds it): the shipped binary has none.
#[test]
fn bench_is_in_the_binary_only_with_the_bench_feature() {
    let out = bin().args(["bench", "--help"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "bench") {
        assert!(out.status.success(), "{stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("ingest"));
    } else {
        assert!(
            !out.status.success(),
            "`eai-gpu bench` ran without the bench feature"
        );
        assert!(
            stderr.contains("unrecognized subcommand 'bench'"),
            "{stderr}"
        );
    }
}

#[test]
fn allocate_prints_the_worked_example() {
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(example("samples.json"))
        .arg("--usage")
        .arg(example("usage.json"))
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("vllm-llama-70b"))
        .expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "vllm-llama-70b",
            "480",
            "0",
            "2",
            "2",
            "1.64",
            "0.8",
            "5.19",
            "5.19",
            "0.00",
            "0",
            "EUR"
        ]
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10") && l.contains(" 3.63 ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21") && l.contains(" 1.56 ")),
        "{text}"
    );
}

#[test]
fn allocate_json_has_the_api_shape() {
    let out = bin()
        .args([
            "allocate",
            "--json",
            "--from",
            "2026-10-01",
            "--to",
            "2026-10-02",
            "--samples",
        ])
        .arg(example("samples.json"))
        .arg("--usage")
        .arg(example("usage.json"))
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["from"], "2026-10-01T00:00:00Z");
    assert_eq!(v["to"], "2026-10-02T00:00:00Z");
    assert_eq!(v["deployments"][0]["cost"], "5.19");
    assert_eq!(v["items"][0]["allocated"]["currency"], "EUR");
    assert_eq!(v["items"][0]["policy_id"], "alp_1");
    let amounts: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["allocated"]["amount"].as_str().unwrap())
        .collect();
    assert_eq!(amounts, ["1.56", "3.63"]);
}

#[test]
fn a_bad_file_names_the_file_the_record_and_the_field() {
    let dir = std::env::temp_dir().join(format!("eai-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad-samples.json");
    std::fs::write(
        &bad,
        r#"{"samples":[{"node":"n","gpu_uuid":"GPU-1","model":"H100","namespace":"ns","pod":"p","deployment_id":"d",
             "window_seconds":15,"utilization":0.5,"memory_used_gb":1,"power_w":300,"timestamp":"2026-10-01T00:00:15Z"},
            {"node":"n","gpu_uuid":"GPU-1","model":"H100","namespace":"ns","pod":"p","deployment_id":"d",
             "window_seconds":15,"utilization":1.5,"memory_used_gb":1,"power_w":-3,"timestamp":"2026-10-01T00:00:30Z"}]}"#,
    )
    .unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(&bad)
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "bad-samples.json: sample 1, field `utilization`: must be at least 0 and at most 1"
        ),
        "{err}"
    );
    assert!(
        err.contains("bad-samples.json: sample 1, field `power_w`: must not be negative"),
        "{err}"
    );

    let not_json = dir.join("broken.json");
    std::fs::write(&not_json, "{ nope").unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(&not_json)
        .arg("--policies")
        .arg(example("policy.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.json is not valid JSON"));

    let bad_policy = dir.join("policy.json");
    std::fs::write(
        &bad_policy,
        r#"{"name":"p","gpu_hourly_cost":"2","pue":"0.9","currency":"eur"}"#,
    )
    .unwrap();
    let out = bin()
        .args(["allocate", "--samples"])
        .arg(example("samples.json"))
        .arg("--policies")
        .arg(&bad_policy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policy 0, field `currency`: must be three capital letters"),
        "{err}"
    );
    assert!(err.contains("policy 0, field `pue`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! `eai-gpu demo`: the server answers at the URL it prints.

use super::*;

#[test]
fn the_demo_answers_at_the_url_it_prints() {
    let dir = temp_dir("demo");
    let mut child = bin()
        .args([
            "demo",
            "--listen",
            "127.0.0.1:0",
            "--days",
            "2",
            "--data-dir",
        ])
        .arg(dir.join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut base = None;
    let mut admin_key = None;
    let mut printed = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if let Some(rest) = line.strip_prefix("eai-gpu demo is running at ") {
            base = Some(rest.trim().to_string());
        }
        if line.contains(" platform_admin ") {
            admin_key = line.split_whitespace().next().map(str::to_string);
        }
        if line.starts_with("Data: ") {
            break;
        }
    }
    let (base, key) = (base.expect(&printed), admin_key.expect(&printed));
    // The tenants' table and the keys' table show a registered tenant's slug beside its id; a tenant seen in
    // data but never registered (initech) shows `-`.
    let row_with = |id: &str, what: &str| {
        printed
            .lines()
            .filter(|l| l.contains(id))
            .filter(|l| l.split_whitespace().any(|w| w == what))
            .count()
    };
    for (slug, id) in [
        ("acme", "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"),
        ("globex", "2d1c7e3a-5f64-4b8e-8c1d-7a9e0b3f4c21"),
        ("-", "6b9e1f0a-3c2d-4e5f-8a7b-9c0d1e2f3a4b"),
    ] {
        assert_eq!(
            row_with(id, slug),
            2,
            "{slug} beside {id}, in both tables:\n{printed}"
        );
    }
    for dep in [
        "vllm-llama-70b",
        "vllm-mixtral",
        "vllm-small",
        "experimental-sd",
        "idle",
    ] {
        assert!(
            printed.lines().any(|l| l.starts_with(dep)),
            "{dep} missing from\n{printed}"
        );
    }
    let http = reqwest::blocking::Client::new();
    assert!(http
        .get(format!("{base}/healthz"))
        .send()
        .unwrap()
        .status()
        .is_success());
    let a: serde_json::Value = http
        .get(format!("{base}/v1/finops/gpu/allocation"))
        .bearer_auth(&key)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let deps = a["deployments"].as_array().unwrap();
    assert!(deps.len() >= 5, "{a}");
    let unpriced = deps
        .iter()
        .find(|d| d["deployment_id"] == "experimental-sd")
        .unwrap();
    assert!(unpriced["unpriced_samples"].as_u64().unwrap() > 0);
    assert_eq!(a["tenants"].as_array().unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

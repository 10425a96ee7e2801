//! `eai-gpu slurm-reconcile`: sacct's jobs beside what the store measured.

use super::*;

/// `eai-gpu slurm-reconcile` on a store that measured nothing of Slurm's jobs (sacct's output as Debian's Slurm
/// 22.05 printed it for two jobs): each job with Slurm's allocated GPU-seconds, `not_measured`, in a table and in
/// the API's JSON; a bad threshold and a file that is not sacct's JSON are errors that say so.
#[test]
fn slurm_reconcile_puts_sacct_beside_the_store() {
    let dir = temp_dir("slurm");
    let made = bin()
        .args(["migrate", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let sacct = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sampler/tests/fixtures/slurm/sacct.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sacct).unwrap()).unwrap();
    let start = doc["jobs"][0]["time"]["start"].as_i64().unwrap();
    let day = rfc3339(start / 86_400 * 86_400);
    let next = rfc3339(start / 86_400 * 86_400 + 86_400);
    let run = |extra: &[&str]| {
        let out = bin()
            .args([
                "slurm-reconcile",
                "--from",
                &day,
                "--to",
                &next,
                "--data-dir",
            ])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = sacct.to_str().unwrap();
    let (code, table, err) = run(&["--sacct", file]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table
            .lines()
            .any(|l| l.contains("physics") && l.contains("not_measured")),
        "{table}"
    );
    assert!(
        table.contains("Slurm allocated 0.017 GPU-h, measured 0 GPU-h"),
        "60 GPU-seconds: {table}"
    );
    let (code, json, err) = run(&["--sacct", file, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    let got: Vec<(String, serde_json::Value, String)> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_str().unwrap().to_string(),
                j["allocated_gpu_seconds"].clone(),
                j["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("1".into(), serde_json::json!(40), "not_measured".into()),
            ("2".into(), serde_json::json!(20), "not_measured".into()),
        ]
    );
    let (code, _, err) = run(&["--sacct", file, "--idle-below", "1.5"]);
    assert_eq!(code, Some(2), "a user's error");
    assert!(err.contains("--idle-below"), "{err}");
    let not_json = dir.join("sacct.txt");
    std::fs::write(&not_json, "Slurm accounting storage is disabled\n").unwrap();
    let (code, _, err) = run(&["--sacct", not_json.to_str().unwrap()]);
    assert_eq!(code, Some(2), "a user's error");
    assert!(err.contains("not its JSON"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

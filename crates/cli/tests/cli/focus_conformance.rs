//! FOCUS conformance of the demo's month by the FinOps Foundation's own validator (SPEC §10, issue 41):
//! `eai-gpu export focus` as FOCUS 1.2 and 1.3, by the day and by the hour, each checked with
//! `scripts/focus-validator.sh conform` (focus-validator 2.2.1 in a venv under target/, set up here if missing:
//! the test fails, never skips, when it cannot be). The test fleets' exports are checked the same way over HTTP
//! (crates/api/tests/http/focus.rs).

use super::*;

// The same check as the HTTP suite's, from its file.
#[path = "../../../api/tests/http/focus_validator.rs"]
mod focus_validator;
use focus_validator::assert_the_validator_passes;

/// The demo's month (the demo fills the two days up to now; the month of yesterday holds rows whatever today
/// is) as 1.2 and 1.3 by the day, and 1.3 and 1.2 by the hour: the official validator passes each as far as it
/// can, and 1.3's split rows are there.
#[test]
fn the_official_validator_passes_the_demo_months_exports() {
    let data = demo_store("focus-conformance");
    let dir = data.parent().unwrap().to_path_buf();
    let yesterday = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 24 * 3600;
    let month = rfc3339(yesterday)[..7].to_string();
    for (version, granularity) in [
        ("1.2", "day"),
        ("1.3", "day"),
        ("1.3", "hour"),
        ("1.2", "hour"),
    ] {
        let file = dir.join(format!("focus-{version}-{granularity}.csv"));
        let (ok, _, err) = run(&[
            "export",
            "focus",
            "--period",
            &month,
            "--version",
            version,
            "--granularity",
            granularity,
            "--out",
            &file.display().to_string(),
            "--data-dir",
            &data.display().to_string(),
        ]);
        assert!(ok, "{err}");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.lines().count() > 10, "{err}: {text}");
        let header = text.lines().next().unwrap();
        assert_eq!(
            header.starts_with("AllocatedMethodDetails,"),
            version == "1.3",
            "{header}"
        );
        if version == "1.3" {
            assert!(
                text.contains(",eai-gpu/usage-weighted-gpu-seconds,"),
                "split rows: {text}"
            );
        }
        // No statement issued: every InvoiceId is null, so the unconditional C-005 is the one that fails.
        assert_the_validator_passes(&file, version, "InvoiceId-C-005-C");
    }
}

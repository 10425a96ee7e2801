//! The one check of a FOCUS file by the FinOps Foundation's validator (SPEC §10, issue 41), shared by the HTTP
//! suite (the test fleets' exports) and the `eai-gpu` CLI suite (the demo's month), which includes this file by
//! its path.

/// The official validator passes every rule of `file` but `unconditional`: the half of InvoiceId's nullability
/// (`InvoiceId-C-004-C` null when not invoiced, `-C-005-C` not null when invoiced) that the 1.2.0.1 model checks
/// over the whole column without its condition, so that one of them fails on any file (README, "FOCUS export").
/// `scripts/focus-validator.sh conform` on `file`: the official 1.2 model (on a 1.3 file: without its new columns,
/// after `scripts/focus13.py` checked them), the failing rules read again from its report, at least 136 passing.
/// Sets the validator up first; fails, never skips, when it cannot.
pub(crate) fn assert_the_validator_passes(
    file: &std::path::Path,
    version: &str,
    unconditional: &str,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("scripts/focus-validator.sh");
    let setup = std::process::Command::new(&script)
        .arg("setup")
        .output()
        .expect("scripts/focus-validator.sh runs");
    assert!(
        setup.status.success(),
        "focus-validator could not be set up (SPEC §10):\n{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let out = std::process::Command::new(&script)
        .arg("conform")
        .arg(file)
        .args([version, unconditional])
        .output()
        .expect("scripts/focus-validator.sh runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let failing: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("❌ "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert_eq!(failing, [unconditional], "{report}");
    let passes: u32 = report
        .lines()
        .filter_map(|l| l.strip_prefix("Total: "))
        .filter_map(|l| l.split("| Pass: ").nth(1))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .next_back()
        .expect("a summary line");
    assert!(passes >= 136, "{passes} rules passed: {report}");
    if version == "1.3" {
        assert!(report.contains("origin charge(s): ok"), "{report}");
    }
    assert!(out.status.success(), "{report}");
}

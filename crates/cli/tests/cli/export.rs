//! `eai-gpu export focus` on the store.

use super::*;

/// `export focus` on the store: the header of every FOCUS column to stdout for a month without usage, a Parquet
/// file with `--format parquet`, and clear errors for a bad month or format.
#[test]
fn export_focus_writes_the_month_to_a_file_or_stdout() {
    let dir = temp_dir("focus");
    let d = dir.join("data").display().to_string();
    // Not a store yet: said, and none made.
    let (ok, _, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--out",
        "-",
        "--data-dir",
        &d,
    ]);
    assert!(!ok && err.contains("no store at"), "{err}");
    let (ok, _, err) = run(&["migrate", "--data-dir", &d]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--out",
        "-",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{err}");
    // FOCUS 1.3 by default; 1.2 on asking.
    assert!(out.starts_with("AllocatedMethodDetails,"), "{out}");
    let (ok, out12, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--version",
        "1.2",
        "--granularity",
        "hour",
        "--out",
        "-",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{err}");
    assert!(out12.starts_with("BilledCost,BillingAccountId,"), "{out12}");
    assert_eq!(out.lines().count(), 1, "no usage, no rows: {out}");
    let file = dir.join("october.parquet");
    let (ok, _, err) = run(&[
        "export",
        "focus",
        "--period",
        "2026-10",
        "--format",
        "parquet",
        "--out",
        &file.display().to_string(),
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("0 FOCUS row(s)"), "{err}");
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    for (args, says) in [
        (["--period", "2026-13", "--format", "csv"], "YYYY-MM"),
        (
            ["--period", "2026-10", "--format", "xlsx"],
            "`csv` or `parquet`",
        ),
        (
            ["--period", "2026-10", "--version", "1.4"],
            "`1.3` or `1.2`",
        ),
        (
            ["--period", "2026-10", "--granularity", "week"],
            "`day` or `hour`",
        ),
    ] {
        let mut all = vec!["export", "focus", "--out", "-", "--data-dir", &d];
        all.extend(args);
        let (ok, _, err) = run(&all);
        assert!(!ok && err.contains(says), "{err}");
    }
}

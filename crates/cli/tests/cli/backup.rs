//! `eai-gpu backup` and `restore`, and a PostgreSQL dump restored with `pg_restore`: every acknowledged batch
//! and the same bills, checked as the source.

use super::*;

/// The lines of a check that must agree between a store and its copy: the audit head and every month's.
fn check_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("audit chain:") || l.starts_with("month "))
        .map(str::to_string)
        .collect()
}

/// `eai-gpu backup` copies the embedded store while a client streams batches into it: the copy holds every
/// batch acknowledged before the backup began, passes its checks (integrity, audit chain), and restores into a
/// store that serves; a restore refuses a store in use; a backup of the idle store restores to the same audit
/// head and the same allocation of every month (digests of the API's JSON) as the store it came from.
#[test]
fn a_backup_taken_under_load_restores_every_acknowledged_batch_and_the_same_bills() {
    let dir = temp_dir("backup");
    let data = dir.join("data");
    let key = "eai_live_backuptestbackuptestbackuptestbackuptest00001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = serve_on(&data, port, key, None);
    let http = reqwest::blocking::Client::new();
    post_policy(&http, &base, key);

    let n = 500;
    let t0 = crash_t0();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stream = {
        let (stop, acked, base) = (stop.clone(), acked.clone(), base.clone());
        std::thread::spawn(move || {
            let http = reqwest::blocking::Client::new();
            let mut b = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let r = http
                    .post(format!("{base}/v1/finops/gpu/samples"))
                    .bearer_auth(key)
                    .json(&crash_batch(t0, b, n))
                    .send()
                    .unwrap();
                assert!(r.status().is_success(), "batch {b}: {}", r.status());
                acked.lock().unwrap().push(b);
                b += 1;
            }
        })
    };
    // Until batches are being acknowledged.
    let acked_now = || acked.lock().unwrap().len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked_now() < 3 {
        assert!(Instant::now() < deadline, "no batch acknowledged in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: Vec<usize> = acked.lock().unwrap().clone();
    let out = dir.join("under-load.db");
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    // Until a batch sent while the backup ran is acknowledged.
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked_now() <= before.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = acked_now();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    stream.join().unwrap();
    assert!(ok, "{o}{e}");
    assert!(
        o.contains("integrity ok") && o.contains("audit chain: verified"),
        "{o}"
    );
    assert!(
        !before.is_empty(),
        "no batch was acknowledged before the backup"
    );
    assert!(
        during > before.len(),
        "no batch was acknowledged while the backup ran: the test proves nothing"
    );
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(!ok && e.contains("exists already"), "{o}{e}");

    // A restore into the folder the server holds open is refused; into a new folder it serves.
    let (ok, o, e) = run(&[
        "restore",
        &out.display().to_string(),
        "--data-dir",
        &data.display().to_string(),
        "--replace",
    ]);
    assert!(!ok && e.contains("in use"), "{o}{e}");
    let restored = dir.join("restored");
    let (ok, o, e) = run(&[
        "restore",
        &out.display().to_string(),
        "--data-dir",
        &restored.display().to_string(),
    ]);
    assert!(
        ok && o.contains("audit chain: verified") && o.contains("month "),
        "{o}{e}"
    );
    let (ok, o, e) = run(&[
        "audit",
        "verify",
        "--data-dir",
        &restored.display().to_string(),
    ]);
    assert!(ok, "{o}{e}");
    {
        let port2 = free_port();
        let base2 = format!("http://127.0.0.1:{port2}");
        let _copy = serve_on(&restored, port2, key, None);
        for b in &before {
            let r: serde_json::Value = http
                .post(format!("{base2}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, *b, n))
                .send()
                .unwrap()
                .json()
                .unwrap();
            assert_eq!(
                r["duplicates"], n as u64,
                "batch {b} was acknowledged before the backup began but is not in it: {r}"
            );
        }
    }

    // Idle: the copy's check prints what the source's does, line for line.
    let (ok, src, e) = run(&["backup", "check", "--data-dir", &data.display().to_string()]);
    assert!(ok, "{src}{e}");
    let idle = dir.join("idle.db");
    let (ok, o, e) = run(&[
        "backup",
        "--data-dir",
        &data.display().to_string(),
        "--out",
        &idle.display().to_string(),
    ]);
    assert!(ok, "{o}{e}");
    let (ok, o, e) = run(&[
        "restore",
        &idle.display().to_string(),
        "--data-dir",
        &restored.display().to_string(),
        "--replace",
    ]);
    assert!(ok && o.contains("kept as"), "{o}{e}");
    let src = check_lines(&src);
    assert!(
        src.iter().any(|l| l.contains(" EUR (allocated")),
        "the source's months carry no cost: {src:?}"
    );
    assert_eq!(check_lines(&o), src);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// PostgreSQL is backed up with `pg_dump` as `eai-gpu backup` says; the dump restored with `pg_restore` into an
/// empty database checks (audit chain, every month's allocation) exactly as the source does, and serves.
#[test]
fn a_pg_dump_restored_with_pg_restore_checks_as_its_source() {
    use eai_store::postgres::scratch::{test_server_url, ScratchDb};
    let src = ScratchDb::create_blocking(&test_server_url()).unwrap_or_else(|e| panic!("{e}"));
    let dst = ScratchDb::create_blocking(&test_server_url()).unwrap_or_else(|e| panic!("{e}"));
    let dir = temp_dir("pg-backup");
    let key = "eai_live_pgbackuptestpgbackuptestpgbackuptestpgback0001";
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::blocking::Client::new();
    {
        let _server = serve_on(&dir, port, key, Some(src.url()));
        post_policy(&http, &base, key);
        let t0 = crash_t0();
        for b in 0..6 {
            let r = http
                .post(format!("{base}/v1/finops/gpu/samples"))
                .bearer_auth(key)
                .json(&crash_batch(t0, b, 400))
                .send()
                .unwrap();
            assert!(r.status().is_success());
        }
    }
    let (ok, o, e) = run(&[
        "backup",
        "--database-url",
        src.url(),
        "--out",
        &dir.join("x").display().to_string(),
    ]);
    assert!(
        !ok && e.contains("pg_dump --format=custom --schema=eai"),
        "{o}{e}"
    );

    let dump = dir.join("eai.dump");
    let st = Command::new("pg_dump")
        .args(["--format=custom", "--schema=eai", "--file"])
        .arg(&dump)
        .arg(src.url())
        .status()
        .expect("pg_dump (Debian: postgresql-client) must be installed");
    assert!(st.success());
    let st = Command::new("pg_restore")
        .args(["--exit-on-error", "--dbname", dst.url()])
        .arg(&dump)
        .status()
        .expect("pg_restore");
    assert!(st.success());
    let (ok, a, e) = run(&["backup", "check", "--database-url", src.url()]);
    assert!(ok, "{a}{e}");
    let (ok, b, e) = run(&["backup", "check", "--database-url", dst.url()]);
    assert!(ok, "{b}{e}");
    let a = check_lines(&a);
    assert!(a.iter().any(|l| l.contains(" EUR (allocated")), "{a:?}");
    assert_eq!(check_lines(&b), a);
    // The restored database serves (its service role's grants and row level security came with the dump).
    let _restored = serve_on(&dir, port, key, Some(dst.url()));
    let r = http
        .get(format!("{base}/v1/finops/allocation-policies"))
        .bearer_auth(key)
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

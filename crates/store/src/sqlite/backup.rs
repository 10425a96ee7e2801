//! Backups of the embedded store: an online copy of the database file while `serve` writes to it, the checks a
//! copy must pass before it is trusted, and the restore that puts a checked copy in place of a store.
//!
//! The copy is `VACUUM INTO`: it reads the database in one read transaction, so the copy is the database as of
//! one commit (every acknowledged batch committed before it began, none half), compacted. In WAL mode writers go
//! on meanwhile and nothing waits for it. It is written beside the destination as `<FILE>.partial`, synced,
//! renamed into place and the folder synced: a crash or a full disk mid-copy leaves no file under the backup's
//! name. SQLite's incremental backup API (`sqlite3_backup_step`) is not used: a write through another connection
//! (the server's) restarts it from the first page, so under a steady ingest a large store would never finish.
//!
//! A restore checks the file ([`check_file`]), copies it next to the store as `<db>.restoring`, syncs it and
//! renames it over the store; the store it replaces is kept as `<db>.before-restore`. It refuses while a process
//! holds the store open (`serve`): SQLite's exclusive lock on the file is taken, and fails, first.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};

use super::codec::Ctx;
use crate::{Result, StoreError};

/// What [`backup`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupInfo {
    pub path: PathBuf,
    pub bytes: u64,
    pub schema_version: u32,
    pub seconds: f64,
}

/// What [`check_file`] found in a database file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCheck {
    pub bytes: u64,
    pub schema_version: u32,
    /// Raw samples and audit events the file holds.
    pub samples: u64,
    pub audit_events: u64,
}

fn internal(what: &str, path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("{what} {}: {e}", path.display()))
}

/// `path` with `suffix` added to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Flushes a file, then the folder that names it (so that a rename survives a crash).
fn sync(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| internal("sync", path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| internal("sync", dir, e))?;
    }
    Ok(())
}

/// The schema version a file records, without creating or changing anything (0: no schema).
fn recorded_version(conn: &Connection) -> Result<u32> {
    let has: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
            [],
            |r| r.get(0),
        )
        .ctx("look for schema_version")?;
    if !has {
        return Ok(0);
    }
    super::schema::recorded(conn)
}

/// Refuses a file this binary cannot read: no schema, or one written by a newer binary.
fn readable_version(conn: &Connection, path: &Path) -> Result<u32> {
    match recorded_version(conn)? {
        0 => Err(StoreError::Internal(format!(
            "{} holds no eai-gpu store (no schema_version table)",
            path.display()
        ))),
        v if v > super::schema::latest() => Err(StoreError::Internal(format!(
            "{} has schema version {v}, newer than this binary's {}: use a newer eai-gpu",
            path.display(),
            super::schema::latest()
        ))),
        v => Ok(v),
    }
}

/// Copies the store at `db` into `out` while it may be in use (see the module's comment). `out` must not exist.
pub fn backup(db: &Path, out: &Path) -> Result<BackupInfo> {
    let started = Instant::now();
    if out.exists() {
        return Err(StoreError::Internal(format!(
            "{} exists already: a backup never overwrites a file",
            out.display()
        )));
    }
    if !db.is_file() {
        return Err(StoreError::Internal(format!(
            "no store at {} (check --data-dir or --database-url)",
            db.display()
        )));
    }
    let conn = super::connect(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let schema_version = readable_version(&conn, db)?;
    let partial = beside(out, ".partial");
    let _ = std::fs::remove_file(&partial); // a previous attempt's, never a backup
    let target = partial
        .to_str()
        .ok_or_else(|| internal("backup to", out, "the path is not UTF-8"))?;
    if let Err(e) = conn.execute("VACUUM INTO ?1", [target]) {
        let _ = std::fs::remove_file(&partial);
        return Err(internal("copy", db, e));
    }
    drop(conn);
    sync(&partial)?;
    std::fs::rename(&partial, out).map_err(|e| internal("rename into", out, e))?;
    sync(out)?;
    let bytes = std::fs::metadata(out)
        .map_err(|e| internal("stat", out, e))?
        .len();
    Ok(BackupInfo {
        path: out.to_path_buf(),
        bytes,
        schema_version,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Checks a database file without changing it: SQLite's `integrity_check` (every page, index and constraint),
/// then a schema this binary reads. The audit chain and the allocations are checked through a store opened on
/// a copy (the CLI's `backup check`).
pub fn check_file(path: &Path) -> Result<FileCheck> {
    if !path.is_file() {
        return Err(internal("check", path, "no such file"));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| internal("open", path, e))?;
    let problems: Vec<String> = {
        let mut st = conn
            .prepare("PRAGMA integrity_check(20)")
            .map_err(|e| internal("check", path, e))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| internal("check", path, e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| internal("check", path, e))?
    };
    if problems != ["ok"] {
        return Err(StoreError::Internal(format!(
            "{} is damaged (integrity_check): {}",
            path.display(),
            problems.join("; ")
        )));
    }
    let schema_version = readable_version(&conn, path)?;
    let count = |table: &str| -> Result<u64> {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .map_err(|e| internal(&format!("count {table} in"), path, e))?;
        Ok(u64::try_from(n).unwrap_or_default())
    };
    Ok(FileCheck {
        bytes: std::fs::metadata(path)
            .map_err(|e| internal("stat", path, e))?
            .len(),
        schema_version,
        samples: count("gpu_samples")?,
        audit_events: count("audit_events")?,
    })
}

/// Copies `file` to a new path (`to`, which must not exist) and syncs it: a scratch copy to open as a store.
pub fn copy_file(file: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        return Err(internal("copy to", to, "exists already"));
    }
    std::fs::copy(file, to).map_err(|e| internal("copy to", to, e))?;
    sync(to)
}

/// Refuses when a process holds the store at `db` open: takes SQLite's exclusive lock (exclusive locking mode,
/// an immediate transaction), which fails while another connection has the file open in WAL mode.
fn not_in_use(db: &Path) -> Result<()> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| internal("open", db, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(1))
        .map_err(|e| internal("open", db, e))?;
    let busy = |e: rusqlite::Error| {
        StoreError::Internal(format!(
            "{} is in use (is `eai-gpu serve` running on it? stop it first): {e}",
            db.display()
        ))
    };
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(busy)?;
    conn.execute_batch("BEGIN EXCLUSIVE; COMMIT;")
        .map_err(busy)?;
    Ok(())
}

/// What [`restore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub check: FileCheck,
    /// Where the store it replaced was kept, if there was one.
    pub previous: Option<PathBuf>,
}

/// Puts the checked copy `file` in place of the store at `db` (see the module's comment). A store already at
/// `db` is replaced only with `replace`, and kept as `<db>.before-restore` (an older one there is removed).
pub fn restore(file: &Path, db: &Path, replace: bool) -> Result<Restored> {
    let check = check_file(file)?;
    let previous = if db.exists() {
        if !replace {
            return Err(StoreError::Internal(format!(
                "{} holds a store already: pass --replace to put the backup in its place (the store is kept as {})",
                db.display(),
                beside(db, ".before-restore").display()
            )));
        }
        not_in_use(db)?;
        Some(beside(db, ".before-restore"))
    } else {
        None
    };
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| internal("create folder", dir, e))?;
    }
    let staged = beside(db, ".restoring");
    let _ = std::fs::remove_file(&staged);
    copy_file(file, &staged)?;
    if let Some(prev) = &previous {
        // The store was closed cleanly (its lock was free): its WAL is checkpointed; any -wal/-shm left belong
        // to it and go with it.
        let _ = std::fs::remove_file(prev);
        std::fs::rename(db, prev).map_err(|e| internal("keep the store as", prev, e))?;
        for ext in ["-wal", "-shm"] {
            let (from, to) = (beside(db, ext), beside(prev, ext));
            let _ = std::fs::remove_file(&to);
            if from.exists() {
                std::fs::rename(&from, &to).map_err(|e| internal("move", &from, e))?;
            }
        }
    }
    std::fs::rename(&staged, db).map_err(|e| internal("rename into", db, e))?;
    sync(db)?;
    Ok(Restored { check, previous })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("eai-backup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_backup_is_checked_refuses_to_overwrite_and_a_damaged_copy_is_refused() {
        let d = dir("unit");
        let db = d.join("eai-gpu.db");
        drop(super::super::SqliteStore::open(&db).unwrap());
        let out = d.join("b.db");
        let info = backup(&db, &out).unwrap();
        assert_eq!(info.schema_version, super::super::schema::latest());
        assert!(!beside(&out, ".partial").exists());
        let c = check_file(&out).unwrap();
        assert_eq!((c.samples, c.schema_version), (0, info.schema_version));
        let again = backup(&db, &out).unwrap_err().to_string();
        assert!(again.contains("exists already"), "{again}");

        // A file with a page overwritten in the middle (header included) is refused, naming what is wrong.
        let mut bytes = std::fs::read(&out).unwrap();
        let page = 4096;
        assert!(bytes.len() > 3 * page, "{} bytes", bytes.len());
        for b in &mut bytes[2 * page..3 * page] {
            *b = 0xA5;
        }
        let bad = d.join("bad.db");
        std::fs::write(&bad, &bytes).unwrap();
        let e = check_file(&bad).unwrap_err().to_string();
        assert!(e.contains("damaged") || e.contains("malformed"), "{e}");
        let e = restore(&bad, &d.join("new/eai-gpu.db"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("damaged") || e.contains("malformed"), "{e}");
        assert!(!d.join("new/eai-gpu.db").exists());

        // Not a store at all.
        let empty = d.join("empty.db");
        drop(Connection::open(&empty).unwrap());
        let e = check_file(&empty).unwrap_err().to_string();
        assert!(e.contains("no eai-gpu store"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_restore_refuses_a_store_in_use_and_keeps_the_one_it_replaces() {
        let d = dir("restore");
        let db = d.join("eai-gpu.db");
        let store = super::super::SqliteStore::open(&db).unwrap();
        let out = d.join("b.db");
        backup(&db, &out).unwrap();
        let e = restore(&out, &db, false).unwrap_err().to_string();
        assert!(e.contains("--replace"), "{e}");
        let e = restore(&out, &db, true).unwrap_err().to_string();
        assert!(e.contains("in use"), "{e}");
        drop(store);
        let r = restore(&out, &db, true).unwrap();
        assert_eq!(r.previous, Some(beside(&db, ".before-restore")));
        assert!(beside(&db, ".before-restore").is_file());
        drop(super::super::SqliteStore::open(&db).unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }
}

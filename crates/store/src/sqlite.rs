//! The embedded SQLite backend: one file, zero setup, the default store of eai-gpu.
//!
//! Durability and concurrency:
//! - The file is in WAL mode with `synchronous=FULL`: a call that returned `Ok` survives a crash or a power loss
//!   (NORMAL could lose the last transactions on power loss, which an acknowledged batch must never be).
//!   `foreign_keys=ON`; a busy timeout lets another process (the CLI on the same file) wait instead of failing.
//! - One writer connection behind a mutex, every write in one `IMMEDIATE` transaction (all or nothing), and a
//!   small pool of reader connections that see consistent snapshots and never wait for the writer. All SQLite
//!   work runs on tokio's blocking pool (`spawn_blocking`), never on the async workers.
//! - A panic while a connection is held rolls its transaction back (rusqlite rolls back on drop), so a poisoned
//!   mutex is recovered rather than turned into an outage.
//!
//! Settings that shape stored data ([`SqliteConfig`]: bucket length, interpolation limit) are recorded in the file
//! when it is created; opening it with other values is refused, because the stored rollups embody them.
//!
//! Layout: `schema` (embedded migrations), `codec` (column encodings), `tx` (the writes many changes share
//! inside their transaction: usage events with their claims and spend, the outbox, the audit chain's next
//! link), `samples` (raw samples, rollups, gaps), `records` (usage events, policies, keys, tenants, audit chain),
//! `claims` (usage claims), `budgets`, `providers`, `idempotency` (the keys of retried requests), `backup` (online copies, checks, restore).

mod anomalies;
pub mod backup;
mod budgets;
mod claims;
mod codec;
mod idempotency;
mod providers;
mod records;
mod samples;
mod schema;
mod statements;
mod tx;

use crate::roles::Observed;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};

use self::codec::Ctx;
use crate::{Result, Store, StoreError};

pub use crate::rollups::{RollupConfig, MAX_WINDOW_MS};

/// Reader connections in the pool.
const READERS: usize = 4;
/// How long a connection waits for a lock held by another process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How samples are turned into rollups. Fixed for the life of a file (see [`RollupConfig`]).
pub type SqliteConfig = RollupConfig;

/// The SQLite store, as it is opened: the backend behind the decorator that traces and scope-checks each role
/// ([`Observed`]). Cheap to clone; clones share the connections.
pub type SqliteStore = Observed<SqliteDb>;

/// The SQLite backend: its connections and caches. The roles are implemented beside their SQL (`samples`,
/// `records`, `budgets`); opened only as a [`SqliteStore`].
#[derive(Clone)]
pub struct SqliteDb {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    cfg: SqliteConfig,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    /// The allocation's decoded buckets ([`crate::cache::read_cache`]).
    cache: Arc<crate::cache::read_cache::ReadCache>,
    usage_cache: Arc<crate::cache::usage_cache::UsageCache>,
}

impl std::fmt::Debug for SqliteDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("cfg", &self.inner.cfg)
            .finish()
    }
}

fn connect(path: &Path, flags: OpenFlags) -> Result<Connection> {
    let c = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Internal(format!("sqlite: open {}: {e}", path.display())))?;
    c.busy_timeout(BUSY_TIMEOUT).ctx("set busy_timeout")?;
    c.pragma_update(None, "foreign_keys", "ON")
        .ctx("set foreign_keys")?;
    c.set_prepared_statement_cache_capacity(64);
    Ok(c)
}

/// Records the settings of a new file, or checks that an existing file was built with the same.
fn check_settings(conn: &Connection, cfg: &SqliteConfig) -> Result<()> {
    for (key, want) in cfg.settings() {
        if RollupConfig::check_recorded(key, samples::meta_get(conn, key)?, want)? {
            samples::meta_set(conn, key, want)?;
        }
    }
    Ok(())
}

impl SqliteStore {
    /// Opens (creating the folder and file if needed) and migrates the database at `path`, with default settings.
    /// Blocking (file I/O, migrations): call it at startup, before serving, or inside `spawn_blocking`.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with(path, SqliteConfig::default())
    }

    /// [`SqliteStore::open`] with these settings.
    pub fn open_with(path: &Path, cfg: SqliteConfig) -> Result<SqliteStore> {
        SqliteDb::open_with(path, cfg).map(|db| Observed::new(db, "sqlite"))
    }
}

impl SqliteDb {
    fn open_with(path: &Path, cfg: SqliteConfig) -> Result<SqliteDb> {
        cfg.check()?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Internal(format!("create folder {}: {e}", dir.display()))
            })?;
        }
        let rw = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut writer = connect(path, rw | OpenFlags::SQLITE_OPEN_CREATE)?;
        let mode: String = writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .ctx("set journal_mode")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Internal(format!(
                "sqlite: {} cannot use WAL (journal_mode={mode})",
                path.display()
            )));
        }
        writer
            .pragma_update(None, "synchronous", "FULL")
            .ctx("set synchronous")?;
        schema::migrate(&mut writer)?;
        check_settings(&writer, &cfg)?;
        let readers = (0..READERS)
            .map(|_| {
                let c = connect(path, rw)?;
                c.pragma_update(None, "query_only", "ON")
                    .ctx("set query_only")?;
                Ok(Mutex::new(c))
            })
            .collect::<Result<Vec<_>>>()?;
        tracing::debug!(path = %path.display(), "sqlite store opened");
        Ok(SqliteDb {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                cfg,
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                cache: Arc::new(crate::cache::read_cache::ReadCache::new(
                    cfg.read_cache_rows,
                )),
                usage_cache: Arc::new(crate::cache::usage_cache::UsageCache::new(
                    cfg.usage_cache_rows,
                )),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn config(&self) -> SqliteConfig {
        self.inner.cfg
    }

    /// Runs `f` on the writer connection, on the blocking pool.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &SqliteConfig) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut c = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut c, &inner.cfg)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("sqlite worker failed: {e}")))?
    }

    /// Runs `f` on a reader connection, on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &SqliteConfig) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut c = inner.reader();
            f(&mut c, &inner.cfg)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("sqlite worker failed: {e}")))?
    }
}

impl Inner {
    /// A free reader if there is one, else waits for the next in turn.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            if let Ok(c) = self.readers[(start + i) % n].try_lock() {
                return c;
            }
        }
        self.readers[start % n]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Store for SqliteDb {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> Result<()> {
        self.read(|c, _| c.query_row("SELECT 1", [], |_| Ok(())).ctx("ping"))
            .await
    }
}

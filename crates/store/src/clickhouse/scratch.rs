//! A throw-away ClickHouse server for tests: started as a plain process (no systemd) with its own small config
//! in a temp folder (HTTP and native ports picked free on 127.0.0.1, data under the folder), killed and its
//! folder removed when the guard goes. [`ScratchClickHouse::kill`] and [`ScratchClickHouse::restart`] (same
//! ports, same data folder) let a test take the replica down in the middle of a run.
//!
//! The server binary is `EAI_TEST_CLICKHOUSE_SERVER`, default `/usr/sbin/clickhouse-server` (Debian's package
//! `clickhouse-server`, 18.16 on Debian 12; `scripts/test.sh` installs it). When it is missing or does not start,
//! [`ScratchClickHouse::start`] returns an error that says so: the tests that need it fail, never skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where tests look for the server binary when `EAI_TEST_CLICKHOUSE_SERVER` is not set.
pub const DEFAULT_SERVER: &str = "/usr/sbin/clickhouse-server";

/// How long a server may take to answer after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(60);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A ClickHouse server owned by a test.
#[derive(Debug)]
pub struct ScratchClickHouse {
    dir: PathBuf,
    http_port: u16,
    binary: PathBuf,
    child: Option<Child>,
}

/// The server binary tests start.
pub fn server_binary() -> PathBuf {
    std::env::var("EAI_TEST_CLICKHOUSE_SERVER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_SERVER), PathBuf::from)
}

fn free_ports() -> Result<(u16, u16), String> {
    let bind = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr().map(|a| (l, a.port())))
            .map_err(|e| format!("cannot find a free port: {e}"))
    };
    // Both held until both are chosen, so that they differ.
    let (a, pa) = bind()?;
    let (b, pb) = bind()?;
    drop((a, b));
    Ok((pa, pb))
}

fn config_xml(dir: &Path, http: u16, tcp: u16) -> String {
    let d = dir.display();
    format!(
        r#"<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog><console>0</console></logger>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>{d}/data/</path>
    <tmp_path>{d}/tmp/</tmp_path>
    <user_files_path>{d}/user_files/</user_files_path>
    <format_schema_path>{d}/format_schemas/</format_schema_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>268435456</mark_cache_size>
</yandex>
"#
    )
}

const USERS_XML: &str = r#"<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
"#;

impl ScratchClickHouse {
    /// Starts a fresh server and waits until it answers.
    pub async fn start() -> Result<ScratchClickHouse, String> {
        let binary = server_binary();
        if !binary.exists() {
            return Err(format!(
                "ClickHouse is needed by this test and {} is missing: install it (apt-get install -y clickhouse-server; \
                 scripts/test.sh does) or set EAI_TEST_CLICKHOUSE_SERVER to a clickhouse-server binary",
                binary.display()
            ));
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "eai-ch-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        for sub in ["data", "tmp", "user_files", "format_schemas"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let (http_port, tcp_port) = free_ports()?;
        std::fs::write(
            dir.join("config.xml"),
            config_xml(&dir, http_port, tcp_port),
        )
        .and_then(|()| std::fs::write(dir.join("users.xml"), USERS_XML))
        .map_err(|e| format!("cannot write the ClickHouse config: {e}"))?;
        let mut ch = ScratchClickHouse {
            dir,
            http_port,
            binary,
            child: None,
        };
        ch.spawn().await?;
        Ok(ch)
    }

    /// `http://127.0.0.1:PORT/DATABASE`: a URL for `EAI_CLICKHOUSE_URL`.
    pub fn url(&self, database: &str) -> String {
        format!("http://127.0.0.1:{}/{database}", self.http_port)
    }

    /// Kills the server at once (SIGKILL: no clean shutdown), keeping its data folder.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same ports and data folder (after [`kill`](Self::kill)).
    pub async fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.spawn().await
    }

    async fn spawn(&mut self) -> Result<(), String> {
        let log = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(name))
                .map(Stdio::from)
                .map_err(|e| format!("cannot open a ClickHouse log: {e}"))
        };
        let child = Command::new(&self.binary)
            .arg(format!(
                "--config-file={}",
                self.dir.join("config.xml").display()
            ))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log("stdout.log")?)
            .stderr(log("stderr.log")?)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| e.to_string())?;
        let ping = format!("http://127.0.0.1:{}/?query=SELECT%201", self.http_port);
        let started = Instant::now();
        loop {
            if let Ok(r) = http.get(&ping).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || started.elapsed() > START_TIMEOUT {
                let errors = std::fs::read_to_string(self.dir.join("error.log"))
                    .or_else(|_| std::fs::read_to_string(self.dir.join("stderr.log")))
                    .unwrap_or_default();
                let tail: String = errors
                    .lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                self.kill();
                return Err(format!(
                    "ClickHouse ({}) did not start on port {} ({}); its log says:\n{tail}",
                    self.binary.display(),
                    self.http_port,
                    match exited {
                        Some(status) => format!("exited with {status}"),
                        None => format!("no answer after {}s", START_TIMEOUT.as_secs()),
                    }
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ScratchClickHouse {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

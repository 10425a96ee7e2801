//! A throw-away ClickHouse server for tests: started as a plain process (no systemd) with its own small config
//! in a temp folder (HTTP and native ports picked free on 127.0.0.1, data under the folder), killed and its
//! folder removed when the guard goes. [`ScratchClickHouse::kill`] and [`ScratchClickHouse::restart`] (same
//! ports, same data folder) let a test take the replica down in the middle of a run.
//!
//! [`ScratchCluster`] is a scratch ClickHouse cluster: one Apache ZooKeeper (a `java` process, classpath from
//! `EAI_TEST_ZOOKEEPER_CLASSPATH` or the jars `scripts/zookeeper.sh fetch` puts in `target/zookeeper/`) and
//! four servers, two shards of two replicas ([`CLUSTER`] in `remote_servers`, `macros` per server), each of
//! which can be killed and restarted like a lone server. `scripts/ch-cluster.sh` starts one for a developer
//! (the example `ch_cluster`).
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

/// `n` free ports on 127.0.0.1, all different (each held until all are chosen).
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let held = (0..n)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr().map(|a| (l, a.port())))
                .map_err(|e| format!("cannot find a free port: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(held.into_iter().map(|(_, p)| p).collect())
}

/// A fresh folder under the system's temp folder (`prefix-PID-NANOS-N`).
pub(crate) fn scratch_dir(prefix: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    std::env::temp_dir().join(format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The last `n` lines of a log.
fn last_lines(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The server's config; `extra` (XML elements) is added inside `<yandex>` (a cluster member's sections).
fn config_xml(dir: &Path, http: u16, tcp: u16, extra: &str) -> String {
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
{extra}</yandex>
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
        let ports = free_ports(2)?;
        Self::start_with(scratch_dir("eai-ch"), ports[0], ports[1], "").await
    }

    /// Starts a server in `dir` (made here) on the given ports, `extra` added to its config (see
    /// [`ScratchCluster`]), and waits until it answers.
    pub(crate) async fn start_with(
        dir: PathBuf,
        http_port: u16,
        tcp_port: u16,
        extra: &str,
    ) -> Result<ScratchClickHouse, String> {
        let binary = server_binary();
        if !binary.exists() {
            return Err(format!(
                "ClickHouse is needed by this test and {} is missing: install it (apt-get install -y clickhouse-server; \
                 scripts/test.sh does) or set EAI_TEST_CLICKHOUSE_SERVER to a clickhouse-server binary",
                binary.display()
            ));
        }
        for sub in ["data", "tmp", "user_files", "format_schemas"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(
            dir.join("config.xml"),
            config_xml(&dir, http_port, tcp_port, extra),
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

    /// The HTTP port.
    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    /// Whether the server process ended (it crashed, or was killed).
    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
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
                let tail = last_lines(&errors, 20);
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

/// The name of the scratch cluster in `remote_servers` (what `EAI_CLICKHOUSE_CLUSTER` names).
pub const CLUSTER: &str = "eai_cluster";

/// Shards and replicas per shard of [`ScratchCluster`].
pub const SHARDS: usize = 2;
pub const REPLICAS: usize = 2;

/// The folder of the jars `scripts/zookeeper.sh fetch` downloads (`target/zookeeper/` of the workspace).
fn zookeeper_dir() -> PathBuf {
    std::env::var_os("EAI_ZOOKEEPER_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/zookeeper"))
}

/// The ZooKeeper server's classpath: `EAI_TEST_ZOOKEEPER_CLASSPATH`, else every jar of `target/zookeeper/`.
pub fn zookeeper_classpath() -> Result<String, String> {
    if let Some(cp) = std::env::var("EAI_TEST_ZOOKEEPER_CLASSPATH")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return Ok(cp);
    }
    let dir = zookeeper_dir();
    let mut jars: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jar"))
                .map(|p| p.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    jars.sort();
    if !jars.iter().any(|j| j.contains("zookeeper-3")) {
        return Err(format!(
            "Apache ZooKeeper is needed by the ClickHouse cluster of this test and {} holds no zookeeper jar: \
             run scripts/zookeeper.sh fetch (scripts/test.sh does) or set EAI_TEST_ZOOKEEPER_CLASSPATH",
            dir.display()
        ));
    }
    Ok(jars.join(":"))
}

/// The sections of a cluster member's config: the cluster (every member's native port), ZooKeeper, the
/// distributed DDL queue, this member's macros and its replication port.
fn member_xml(
    tcp_ports: &[u16],
    zk_port: u16,
    shard: usize,
    replica: usize,
    interserver: u16,
) -> String {
    let mut shards = String::new();
    for s in 0..SHARDS {
        shards.push_str("            <shard><internal_replication>true</internal_replication>");
        for r in 0..REPLICAS {
            let port = tcp_ports[s * REPLICAS + r];
            shards.push_str(&format!(
                "<replica><host>127.0.0.1</host><port>{port}</port></replica>"
            ));
        }
        shards.push_str("</shard>\n");
    }
    format!(
        r#"    <interserver_http_port>{interserver}</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <remote_servers>
        <{CLUSTER}>
{shards}        </{CLUSTER}>
    </remote_servers>
    <zookeeper>
        <node><host>127.0.0.1</host><port>{zk_port}</port></node>
        <session_timeout_ms>6000</session_timeout_ms>
    </zookeeper>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    <macros><shard>{shard:02}</shard><replica>s{shard}r{replica}</replica></macros>
"#,
        shard = shard + 1,
        replica = replica + 1,
    )
}

/// A scratch ClickHouse cluster: ZooKeeper and [`SHARDS`] x [`REPLICAS`] servers, all killed on drop.
#[derive(Debug)]
pub struct ScratchCluster {
    dir: PathBuf,
    zookeeper: Option<Child>,
    zk_port: u16,
    /// Shard by shard, replica by replica: server `s * REPLICAS + r` is replica `r` of shard `s`.
    servers: Vec<ScratchClickHouse>,
}

impl ScratchCluster {
    /// Starts ZooKeeper and the four servers, and waits until all answer and see ZooKeeper.
    pub async fn start() -> Result<ScratchCluster, String> {
        let classpath = zookeeper_classpath()?;
        let java = std::env::var("EAI_TEST_JAVA")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "java".into());
        let dir = scratch_dir("eai-chcluster");
        let zk_dir = dir.join("zookeeper");
        std::fs::create_dir_all(zk_dir.join("data"))
            .map_err(|e| format!("cannot create {}: {e}", zk_dir.display()))?;
        let n = SHARDS * REPLICAS;
        let ports = free_ports(1 + 3 * n)?;
        let zk_port = ports[0];
        std::fs::write(
            zk_dir.join("zoo.cfg"),
            format!(
                "tickTime=500\ndataDir={}\nclientPort={zk_port}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n4lw.commands.whitelist=srvr\n",
                zk_dir.join("data").display()
            ),
        )
        .map_err(|e| format!("cannot write the ZooKeeper config: {e}"))?;
        let log = std::fs::File::create(zk_dir.join("zookeeper.log"))
            .map_err(|e| format!("cannot open the ZooKeeper log: {e}"))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("cannot open the ZooKeeper log: {e}"))?;
        let child = Command::new(&java)
            .args(["-Xmx256m", "-cp", &classpath])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(zk_dir.join("zoo.cfg"))
            .current_dir(&zk_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("cannot start ZooKeeper with {java}: {e} (install Java 17 or set EAI_TEST_JAVA)"))?;
        let mut cluster = ScratchCluster {
            dir,
            zookeeper: Some(child),
            zk_port,
            servers: Vec::new(),
        };
        cluster.wait_for_zookeeper().await?;
        let tcp: Vec<u16> = (0..n).map(|i| ports[1 + 3 * i + 1]).collect();
        for i in 0..n {
            let (http, tcp_port, interserver) =
                (ports[1 + 3 * i], ports[2 + 3 * i], ports[3 + 3 * i]);
            let extra = member_xml(&tcp, zk_port, i / REPLICAS, i % REPLICAS, interserver);
            let server = ScratchClickHouse::start_with(
                cluster
                    .dir
                    .join(format!("ch-{}-{}", i / REPLICAS + 1, i % REPLICAS + 1)),
                http,
                tcp_port,
                &extra,
            )
            .await?;
            cluster.servers.push(server);
            cluster.wait_for_session(i).await?;
        }
        Ok(cluster)
    }

    /// Waits until server `i` has its ZooKeeper session. ClickHouse 18.16 may fail its first connection to
    /// ZooKeeper on a busy machine and then crash (a null session) on the first distributed DDL: a server that
    /// has no session after a while, or that died, is started again (same ports and data).
    async fn wait_for_session(&mut self, i: usize) -> Result<(), String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        let mut last = String::new();
        for _attempt in 0..3 {
            let port = self.servers[i].http_port;
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(20) {
                match http
                    .post(format!("http://127.0.0.1:{port}/"))
                    .body("SELECT count() FROM system.zookeeper WHERE path = '/'")
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => return Ok(()),
                    Ok(r) => last = r.text().await.unwrap_or_default(),
                    Err(e) => last = e.to_string(),
                }
                if self.servers[i].exited() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            self.servers[i].restart().await?;
        }
        Err(format!(
            "ClickHouse on port {} has no ZooKeeper session (ZooKeeper on port {}): {last}",
            self.servers[i].http_port, self.zk_port
        ))
    }

    /// Kills replica `replica` of shard `shard` (SIGKILL), keeping its data.
    pub fn kill(&mut self, shard: usize, replica: usize) {
        self.servers[shard * REPLICAS + replica].kill();
    }

    /// Starts replica `replica` of shard `shard` again (same ports and data) and waits for its ZooKeeper
    /// session.
    pub async fn restart(&mut self, shard: usize, replica: usize) -> Result<(), String> {
        let i = shard * REPLICAS + replica;
        self.servers[i].restart().await?;
        self.wait_for_session(i).await
    }

    async fn wait_for_zookeeper(&mut self) -> Result<(), String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let started = Instant::now();
        loop {
            // `srvr` names the mode once the server serves (before, it says it does not). Bounded: a command
            // that meets the server while it starts can fail inside ZooKeeper without the socket being closed
            // (a NullPointerException logged), and the answer would be waited for forever.
            let port = self.zk_port;
            let ask = async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()?;
                s.write_all(b"srvr").await.ok()?;
                let mut answer = String::new();
                s.read_to_string(&mut answer).await.ok()?;
                Some(answer)
            };
            if let Ok(Some(answer)) = tokio::time::timeout(Duration::from_secs(2), ask).await {
                if answer.contains("Mode: standalone") {
                    return Ok(());
                }
            }
            let exited = self
                .zookeeper
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || started.elapsed() > START_TIMEOUT {
                let log = std::fs::read_to_string(self.dir.join("zookeeper/zookeeper.log"))
                    .unwrap_or_default();
                return Err(format!(
                    "ZooKeeper did not start on port {} ({}); its log says:\n{}",
                    self.zk_port,
                    exited.map_or_else(|| "no answer".to_string(), |s| format!("exited with {s}")),
                    last_lines(&log, 20)
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The cluster's name in `remote_servers`.
    pub fn name(&self) -> &'static str {
        CLUSTER
    }

    /// The URL of the first server (replica 1 of shard 1), the one the product is given.
    pub fn url(&self, database: &str) -> String {
        self.servers[0].url(database)
    }

    /// Every server, shard by shard, replica by replica.
    pub fn servers(&self) -> &[ScratchClickHouse] {
        &self.servers
    }

    /// ZooKeeper's client port.
    pub fn zookeeper_port(&self) -> u16 {
        self.zk_port
    }
}

impl Drop for ScratchCluster {
    fn drop(&mut self) {
        for s in &mut self.servers {
            s.kill();
        }
        if let Some(mut c) = self.zookeeper.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.servers.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

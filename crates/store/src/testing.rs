//! Test support (feature `test-support`): a throwaway certificate authority and a server certificate it signed,
//! for the TLS tests of the control plane, the sampler and PostgreSQL.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// A private CA and one server certificate (with its key) for the names given, as PEM.
#[derive(Debug, Clone)]
pub struct TestCa {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// The three files of a [`TestCa`] written into a folder.
#[derive(Debug, Clone)]
pub struct TestCaFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    /// A new CA, and a server certificate for `names` (host names or IP addresses).
    pub fn new(names: &[&str]) -> Result<TestCa, rcgen::Error> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "eai-gpu test CA");
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        let mut server =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
        server.distinguished_name.push(
            DnType::CommonName,
            names.first().copied().unwrap_or("localhost"),
        );
        let key = KeyPair::generate()?;
        let cert = server.signed_by(&key, &ca_cert, &ca_key)?;
        Ok(TestCa {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Writes `ca.pem`, `server.pem` and `server.key` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<TestCaFiles> {
        let f = TestCaFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        };
        std::fs::write(&f.ca, &self.ca_pem)?;
        std::fs::write(&f.cert, &self.cert_pem)?;
        std::fs::write(&f.key, &self.key_pem)?;
        Ok(f)
    }
}

/// A throwaway PostgreSQL cluster of its own (Debian's binaries, `initdb` in a temp dir, a free port on
/// 127.0.0.1, trust authentication), for tests that need a server nobody else uses: one that serves TLS only
/// ([`ScratchTlsCluster`]), or one a test stops and starts under a running `serve` (the shared test server must
/// not go down under other tests). Run as root (as CI does), the server runs as the `postgres` user. Stopped
/// (immediate shutdown) and removed when dropped.
#[derive(Debug)]
pub struct ScratchCluster {
    dir: PathBuf,
    bin: PathBuf,
    run_as_postgres: bool,
    pub port: u16,
}

/// How [`ScratchCluster::stop`] shuts the server down (`pg_ctl stop -m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Sessions are ended, the server checkpoints and exits.
    Fast,
    /// The server exits at once; the next start recovers from the WAL, as after a crash.
    Immediate,
}

fn newest_pg_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl ScratchCluster {
    /// `initdb` and the settings of a test cluster, not started; an error says what is missing (the tests fail
    /// with it, they never skip).
    fn init(kind: &str) -> Result<ScratchCluster, String> {
        use std::process::Command;
        let bin = newest_pg_bin().ok_or(
            "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin: install Debian's postgresql (scripts/test.sh does)",
        )?;
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map_err(|e| format!("id -u: {e}"))?;
        let run_as_postgres = String::from_utf8_lossy(&root.stdout).trim() == "0";
        let unique = format!(
            "eai-pg-{kind}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let dir = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let port = free_port().map_err(|e| format!("a free port: {e}"))?;
        let c = ScratchCluster {
            dir: dir.clone(),
            bin,
            run_as_postgres,
            port,
        };
        if run_as_postgres {
            c.sh(
                &[
                    "chown",
                    "-R",
                    "postgres:postgres",
                    &dir.display().to_string(),
                ],
                false,
            )?;
        }
        c.sh(
            &[
                &c.bin.join("initdb").display().to_string(),
                "-D",
                &c.data().display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            true,
        )?;
        let conf = format!(
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nfsync = off\n",
            dir.display()
        );
        append(&c.data().join("postgresql.conf"), &conf)?;
        Ok(c)
    }

    /// A plain (no TLS) cluster, started.
    pub fn start() -> Result<ScratchCluster, String> {
        let c = Self::init("plain")?;
        c.start_server()?;
        Ok(c)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Starts the server (again, after [`ScratchCluster::stop`]) and waits until it accepts connections.
    pub fn start_server(&self) -> Result<(), String> {
        self.sh(
            &[
                &self.bin.join("pg_ctl").display().to_string(),
                "-D",
                &self.data().display().to_string(),
                "-l",
                &self.dir.join("log").display().to_string(),
                "-w",
                "start",
            ],
            true,
        )
        .map_err(|e| {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            format!("{e}\n{log}")
        })
    }

    /// Stops the server, fast or immediate, and waits until it is down.
    pub fn stop(&self, how: Shutdown) -> Result<(), String> {
        let mode = match how {
            Shutdown::Fast => "fast",
            Shutdown::Immediate => "immediate",
        };
        self.sh(
            &[
                &self.bin.join("pg_ctl").display().to_string(),
                "-D",
                &self.data().display().to_string(),
                "-m",
                mode,
                "-w",
                "stop",
            ],
            true,
        )
    }

    /// A URL of the cluster's `postgres` database, as user `postgres`, with these query parameters.
    pub fn url(&self, query: &str) -> String {
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("postgres://postgres@localhost:{}/postgres{q}", self.port)
    }

    fn sh(&self, argv: &[&str], as_postgres: bool) -> Result<(), String> {
        let mut cmd = if as_postgres && self.run_as_postgres {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).args(argv);
            c
        } else {
            let mut c = std::process::Command::new(argv[0]);
            c.args(&argv[1..]);
            c
        };
        let out = cmd
            .output()
            .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}{}",
                argv.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }
}

impl Drop for ScratchCluster {
    fn drop(&mut self) {
        let _ = self.stop(Shutdown::Immediate);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A [`ScratchCluster`] serving TLS only with a [`TestCa`]'s certificate: what the TLS tests connect to with
/// `sslmode=verify-full`.
#[derive(Debug)]
pub struct ScratchTlsCluster {
    cluster: ScratchCluster,
    pub port: u16,
}

impl ScratchTlsCluster {
    /// Starts the cluster; an error says what is missing (the tests fail with it, they never skip).
    pub fn start(files: &TestCaFiles) -> Result<ScratchTlsCluster, String> {
        let c = ScratchCluster::init("tls")?;
        let data = c.data();
        let cert = data.join("server.crt");
        let key = data.join("server.key");
        std::fs::copy(&files.cert, &cert).map_err(|e| format!("copy the certificate: {e}"))?;
        std::fs::copy(&files.key, &key).map_err(|e| format!("copy the key: {e}"))?;
        append(
            &data.join("postgresql.conf"),
            "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
        )?;
        // TLS only: a plain connection finds no matching rule.
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .map_err(|e| format!("write pg_hba.conf: {e}"))?;
        if c.run_as_postgres {
            for f in [&cert, &key, &data.join("pg_hba.conf")] {
                c.sh(
                    &["chown", "postgres:postgres", &f.display().to_string()],
                    false,
                )?;
            }
        }
        c.sh(&["chmod", "600", &key.display().to_string()], false)?;
        c.start_server()?;
        let port = c.port;
        Ok(ScratchTlsCluster { cluster: c, port })
    }

    /// A URL of the cluster's `postgres` database, as user `postgres`, with these query parameters.
    pub fn url(&self, query: &str) -> String {
        self.cluster.url(query)
    }
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("write {}: {e}", path.display()))
}

/// A small tmpfs mounted for a test (a disk that fills up for real), unmounted when dropped, even when the test
/// fails. Needs root, as CI has: without it the test fails saying so.
#[derive(Debug)]
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`64k`, `3m`) on `at` (created if missing).
    pub fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap_or_else(|e| panic!("create {}: {e}", at.display()));
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .unwrap_or_else(|e| panic!("mount: {e}"));
        assert!(
            out.status.success(),
            "a full-disk test mounts a small tmpfs and needs root (CI runs as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(at.to_path_buf())
    }

    /// Grows (or shrinks) the file system to `size`: space returns.
    pub fn resize(&self, size: &str) {
        let st = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap_or_else(|e| panic!("mount -o remount: {e}"));
        assert!(st.success(), "remount {} to {size}", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

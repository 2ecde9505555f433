//! A throwaway PostgreSQL cluster for tests that must restart the server (the chaos
//! test) or configure it (TLS, `postgres::`): `initdb` + `pg_ctl` in a temp dir on a
//! free port, run as the `postgres` user when we are root, like `scripts/lib/postgres.sh`.
//! Stopped and deleted on drop, or, for one shared by a whole test run
//! ([`Cluster::shared`]), when the test process exits.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// Initialises and starts a cluster; panics with the reason when it cannot.
    pub fn start() -> Self {
        let cluster = Self::init();
        cluster.start_with(&[]);
        cluster
    }

    /// Initialises a cluster without starting it: write files into its data directory
    /// ([`Cluster::write`]), then [`Cluster::start_with`] its settings.
    pub fn init() -> Self {
        let bin = pg_bin_dir().expect(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin: \
             install them (apt-get install postgresql)",
        );
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("sluice-cluster-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the cluster dir");
        let as_postgres = is_root();
        if as_postgres {
            run(
                Command::new("chown").arg("postgres").arg(&dir),
                "chown the cluster dir",
            );
        }
        let cluster = Self {
            bin,
            dir,
            port,
            as_postgres,
        };
        cluster.pg(
            "initdb",
            &[
                "-D",
                &cluster.data(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ],
        );
        cluster
    }

    /// Starts the initialised cluster with these `-c name=value` settings on top of the
    /// defaults (port, 127.0.0.1 only, 200 connections, fsync off).
    pub fn start_with(&self, settings: &[&str]) {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off",
            self.port,
            self.dir.display()
        );
        for setting in settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &self.log(),
                "-w",
                "-o",
                &options,
                "start",
            ],
        );
    }

    /// Writes `contents` to `name` in the data directory, owned by the server's user and
    /// readable by it only (what PostgreSQL demands of a private key).
    pub fn write(&self, name: &str, contents: &[u8]) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.join("data").join(name);
        std::fs::write(&path, contents).expect("write into the data directory");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        if self.as_postgres {
            run(
                Command::new("chown").arg("postgres").arg(&path),
                "chown a data file",
            );
        }
    }

    /// Keeps this cluster for the rest of the test run (tests sharing one server, each
    /// with its own database): a watchdog stops and deletes it once this process exits.
    pub fn shared(self) -> &'static Cluster {
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {run_as}{pg_ctl} -D {data} \
             -m immediate -w stop >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            run_as = if self.as_postgres {
                "runuser -u postgres -- "
            } else {
                ""
            },
            pg_ctl = self.bin.join("pg_ctl").display(),
            data = self.data(),
            dir = self.dir.display(),
        );
        // Never waited for on purpose: it outlives this process to clean up after it.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .args(["-c", &stop])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the cluster's watchdog");
        Box::leak(Box::new(self))
    }

    /// The directory holding the data directory and the server's socket.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl restart -m fast`: every connection is cut. Returns how long it took.
    pub fn restart(&self) -> Duration {
        let start = Instant::now();
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &self.log(),
                "-m",
                "fast",
                "-w",
                "restart",
            ],
        );
        start.elapsed()
    }

    /// The server's log so far.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn log(&self) -> String {
        self.dir.join("server.log").display().to_string()
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        command.args(args).current_dir(&self.dir);
        run(&mut command, tool);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let exe = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(command: &mut Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn pg_bin_dir() -> Option<PathBuf> {
    let has_tools = |d: &Path| d.join("pg_ctl").is_file() && d.join("initdb").is_file();
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if has_tools(&d) {
                return Some(d);
            }
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| has_tools(d))
        .collect();
    versions.sort();
    versions.pop()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("find a free port")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

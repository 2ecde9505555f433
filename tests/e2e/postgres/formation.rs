//! A pg_auto_failover formation for the failover test: a monitor and two PostgreSQL
//! nodes on 127.0.0.1 ports, each a `pg_autoctl ... --run` child of this process (as the
//! `postgres` user when we are root), with pg_auto_failover's synchronous replication
//! (`synchronous_standby_names = 'ANY 1 (...)'` once the secondary is in sync). Its
//! state files live in its own directory (XDG_* point there); stopped and deleted on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::postgres_user_if_root;
use crate::support::cluster::pg_bin_dir;

/// The database the nodes create, which Sluice uses.
pub const DATABASE: &str = "sluice";

pub struct Formation {
    autoctl: PathBuf,
    pg_ctl: PathBuf,
    dir: PathBuf,
    monitor_port: u16,
    pub ports: [u16; 2],
    children: Vec<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

impl Formation {
    /// Creates and starts the monitor, the first node (the primary), then the second (a
    /// secondary in sync); returns once the monitor reports them so.
    pub fn start(autoctl: &Path) -> Formation {
        // The real directory: pg_autoctl looks for pg_controldata beside pg_ctl, and a
        // PATH entry may hold only links to some of the tools.
        let bin = pg_bin_dir()
            .and_then(|d| d.join("pg_ctl").canonicalize().ok())
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .expect("PostgreSQL server binaries");
        // Named by this process and a free port; a folder of that name can only be what a
        // killed run left (its Drop never ran), and pg_autoctl refuses to start in it.
        let dir =
            std::env::temp_dir().join(format!("sluice-paf-{}-{}", std::process::id(), free_port()));
        let _ = std::fs::remove_dir_all(&dir);
        // The XDG folders pg_autoctl keeps its state in are made here, whole, before any
        // pg_autoctl runs: its processes (even one `create monitor`, which starts more)
        // creating them at the same moment failed one of them ("Failed to create state
        // directory …/config/pg_autoctl: File exists", and the same for its pid file's
        // folder). Its path for a node is `$XDG_CONFIG_HOME`, `$XDG_DATA_HOME` or
        // `$XDG_RUNTIME_DIR`, then `pg_autoctl`, then the node's absolute PGDATA.
        for sub in ["config", "data", "run"] {
            for node in ["monitor", "node1", "node2"] {
                let pgdata = dir.join(node);
                let relative = pgdata.strip_prefix("/").unwrap_or(&pgdata);
                std::fs::create_dir_all(dir.join(sub).join("pg_autoctl").join(relative)).unwrap();
            }
        }
        if postgres_user_if_root().is_some() {
            Command::new("chown")
                .arg("-R")
                .arg("postgres")
                .arg(&dir)
                .status()
                .unwrap();
        }
        let mut formation = Formation {
            autoctl: autoctl.to_path_buf(),
            pg_ctl: bin.join("pg_ctl"),
            dir,
            monitor_port: free_port(),
            ports: [free_port(), free_port()],
            children: Vec::new(),
        };
        let port = formation.monitor_port.to_string();
        formation.spawn("monitor", &["create", "monitor", "--pgport", &port]);
        formation.wait_until("the monitor answers", |f| f.state().is_some());
        let monitor = format!(
            "postgres://autoctl_node@127.0.0.1:{}/pg_auto_failover?sslmode=disable",
            formation.monitor_port
        );
        for (i, port) in formation.ports.into_iter().enumerate() {
            let port = port.to_string();
            let name = format!("node{}", i + 1);
            let args = [
                "create",
                "postgres",
                "--pgport",
                &port,
                "--dbname",
                DATABASE,
                "--monitor",
                &monitor,
            ];
            formation.spawn(&name, &args);
            if i == 0 {
                formation.wait_until("the first node is the primary", |f| {
                    f.states().first().is_some_and(|s| s == "single")
                });
                // pg_basebackup waits for a checkpoint; make the next one immediate.
                formation.sql(0, "ALTER SYSTEM SET checkpoint_completion_target = 0");
                formation.sql(0, "SELECT pg_reload_conf()");
            }
        }
        formation.wait_until("a primary and a secondary", |f| {
            f.states() == ["primary", "secondary"]
        });
        formation
    }

    /// The URL Sluice is given: both nodes, the one that takes writes.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{DATABASE}?target_session_attrs=read-write",
            self.ports[0], self.ports[1]
        )
    }

    /// The URL of node `i` alone.
    pub fn node_url(&self, i: usize) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{DATABASE}", self.ports[i])
    }

    /// `pg_autoctl perform failover` (it returns once the new primary is up); how long
    /// it took.
    pub fn failover(&self) -> Duration {
        let start = Instant::now();
        let out = self
            .command(&["perform", "failover", "--pgdata"])
            .arg(self.dir.join("monitor"))
            .output()
            .expect("run pg_autoctl perform failover");
        assert!(
            out.status.success(),
            "pg_autoctl perform failover: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        start.elapsed()
    }

    /// The nodes' reported states in node order (`primary`, `secondary`, ...).
    pub fn states(&self) -> Vec<String> {
        let Some(state) = self.state() else {
            return Vec::new();
        };
        let nodes = state.as_array().cloned().unwrap_or_default();
        // The reported state's key (`current_group_state` in pg_auto_failover 2.0).
        let reported = |n: &serde_json::Value| -> String {
            let fields = n.as_object().cloned().unwrap_or_default();
            ["current_group_state", "reported_state", "reportedstate"]
                .iter()
                .find_map(|k| fields.get(*k).and_then(|v| v.as_str()))
                .unwrap_or("")
                .to_owned()
        };
        nodes.iter().map(reported).collect()
    }

    /// `pg_autoctl show state --json`, once the monitor answers.
    fn state(&self) -> Option<serde_json::Value> {
        let out = self
            .command(&["show", "state", "--json", "--pgdata"])
            .arg(self.dir.join("monitor"))
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// The log of `name` (`monitor`, `node1`, `node2`).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }

    fn wait_until(&mut self, what: &str, done: impl Fn(&Formation) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while !done(self) {
            let exited = self
                .children
                .iter_mut()
                .any(|c| matches!(c.try_wait(), Ok(Some(_))));
            assert!(
                Instant::now() < deadline && !exited,
                "pg_auto_failover: no {what} (within 180 s, with every pg_autoctl running); states {:?} in {:?}\n--- monitor\n{}\n--- node1\n{}\n--- node2\n{}",
                self.states(),
                self.state(),
                self.log("monitor"),
                self.log("node1"),
                self.log("node2")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn sql(&self, node: usize, sql: &str) {
        let out = Command::new(self.pg_ctl.with_file_name("psql"))
            .args([&self.node_url(node), "-Atqc", sql])
            .output()
            .or_else(|_| {
                Command::new("psql")
                    .args([&self.node_url(node), "-Atqc", sql])
                    .output()
            })
            .expect("run psql");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `pg_autoctl ARGS` as the server's user, with its state under this formation.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.autoctl);
        c.args(args)
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .env("XDG_RUNTIME_DIR", self.dir.join("run"))
            .env("PG_CONFIG", self.pg_ctl.with_file_name("pg_config"))
            .current_dir(&self.dir);
        if let Some((uid, gid)) = postgres_user_if_root() {
            use std::os::unix::process::CommandExt;
            c.uid(uid).gid(gid);
        }
        c
    }

    /// Starts `pg_autoctl ARGS --pgdata DIR/NAME --run` with the formation's common flags.
    fn spawn(&mut self, name: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).unwrap();
        let pg_ctl = self.pg_ctl.display().to_string();
        let child = self
            .command(args)
            .arg("--pgdata")
            .arg(self.dir.join(name))
            .args(["--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"])
            .args(["--pgctl", &pg_ctl, "--run"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pg_autoctl");
        self.children.push(child);
    }
}

impl Drop for Formation {
    fn drop(&mut self) {
        for name in ["node2", "node1", "monitor"] {
            let _ = self
                .command(&["stop", "--immediate", "--pgdata"])
                .arg(self.dir.join(name))
                .output();
        }
        for child in &mut self.children {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

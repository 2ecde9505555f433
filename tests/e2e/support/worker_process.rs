//! A real `sluice worker` process for fleet tests: spawned with its own log file, sent
//! signals (SIGTERM like an orchestrator, SIGKILL like a crash), waited for with a bound.

use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::Sluice;

pub struct WorkerProcess {
    pub id: String,
    child: Child,
    log: PathBuf,
}

impl WorkerProcess {
    /// `sluice worker --worker-id ID ARGS…`, logging at `info` to a file.
    pub fn spawn(sluice: &Sluice, id: &str, args: &[&str]) -> Self {
        Self::spawn_env(sluice, id, args, &[])
    }

    /// [`WorkerProcess::spawn`] with these environment variables set too.
    pub fn spawn_env(sluice: &Sluice, id: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let log = std::env::temp_dir().join(format!(
            "sluice-worker-{}-{}-{id}.log",
            std::process::id(),
            sluice.url.rsplit('/').next().unwrap_or("db")
        ));
        let file = std::fs::File::create(&log).expect("create the worker log");
        let mut all = vec!["worker", "--worker-id", id];
        all.extend_from_slice(args);
        let child = sluice
            .command(&all)
            .env("SLUICE_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawn sluice worker");
        Self {
            id: id.to_owned(),
            child,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (`TERM`, `INT`, `KILL`).
    pub fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} {} failed", self.pid());
    }

    /// SIGKILL, then reap the process.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The exit status, if the process ends within `limit`.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the worker") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn log_path(&self) -> &std::path::Path {
        &self.log
    }

    /// Waits (at most `limit`) until the worker has logged `text`.
    pub fn wait_for_log(&self, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.log().contains(text) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Everything the worker logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

//! The `chromedriver` process behind a [`Browser`](super::browser::Browser): Debian's
//! `/usr/bin/chromedriver` on a free 127.0.0.1 port (its default `--allowed-ips` is
//! loopback only), logging to a file, in a process group of its own so that drop kills
//! it and every Chromium it started. Missing, it fails the test with the install step.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";
const INSTALL: &str = "bash -c 'source scripts/lib/browser.sh && ensure_chromium' \
     (scripts/test does; it installs Debian's chromium and chromium-driver)";

/// A running `chromedriver`; see the module doc.
pub struct Driver {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Driver {
    /// Starts it, logging next to `profile` (the browser's data dir), and waits until it
    /// listens.
    pub fn start(profile: &Path) -> Driver {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "{CHROMEDRIVER} or {CHROMIUM} is missing: install them with {INSTALL}"
        );
        let port = free_port();
        let log = profile.with_extension("chromedriver.log");
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            0,
        )
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER} ({e}): install it with {INSTALL}"));
        let mut driver = Driver { child, port, log };
        driver.wait_until_listening(Duration::from_secs(20));
        driver
    }

    fn wait_until_listening(&mut self, limit: Duration) {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + limit;
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "chromedriver exited ({status}) before listening on {addr}; its log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {addr} within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and every Chromium process it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Its log is kept for a failing test's post-mortem (the path is in the message).
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("find a free port")
        .port()
}

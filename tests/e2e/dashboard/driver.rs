//! The `chromedriver` process behind a [`Browser`](super::browser::Browser): Debian's
//! `/usr/bin/chromedriver` on a 127.0.0.1 port it picks itself (`--port=0`; its default
//! `--allowed-ips` is loopback only), logging to a file, in a process group of its own so
//! that drop kills it and every Chromium it started. Missing, it fails the test with the
//! install step.
//!
//! The port is the one chromedriver reports once it listens ("started successfully on
//! port N"), never one chosen beforehand: a port found free and released can be taken
//! by another test's listener before chromedriver binds it, and polling a port nobody
//! listens on yet can "succeed" through a TCP self-connect. Either made a session
//! request go to the wrong place.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

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
        let log = profile.with_extension("chromedriver.log");
        let mut child = std::os::unix::process::CommandExt::process_group(
            Command::new(CHROMEDRIVER)
                .arg("--port=0")
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
            0,
        )
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER} ({e}): install it with {INSTALL}"));
        let stdout = child.stdout.take().expect("chromedriver's stdout is piped");
        let limit = Duration::from_secs(30);
        match listening_port(stdout).recv_timeout(limit) {
            Ok(port) => Driver { child, port, log },
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                panic!(
                    "chromedriver did not report a listening port within {limit:?} \
                     (exit status: {status:?}); its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        }
    }
}

/// Reads chromedriver's stdout on a thread of its own and sends the port of its
/// "started successfully on port N." line; the thread then drains the pipe until
/// chromedriver exits, so that it never blocks on a full pipe. The channel closes
/// without a port if chromedriver exits first.
fn listening_port(stdout: std::process::ChildStdout) -> mpsc::Receiver<u16> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(port) = reported_port(&line) {
                let _ = send.send(port);
            }
        }
    });
    receive
}

/// The port in "ChromeDriver was started successfully on port 37849.", if `line` is it.
fn reported_port(line: &str) -> Option<u16> {
    let rest = line.split("started successfully on port ").nth(1)?;
    rest.trim().trim_end_matches('.').parse().ok()
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

//! A real `sluice serve` process on an ephemeral port of 127.0.0.1 over the test's
//! database, for tests that drive it from outside (schemathesis, the typed clients).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::Sluice;

/// `sluice serve` on an ephemeral port of 127.0.0.1, logging JSON to a file.
pub struct ServeProcess {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    child: Child,
    log: PathBuf,
}

impl ServeProcess {
    /// Starts it; `name` names its log file.
    pub fn start(sluice: &Sluice, name: &str) -> ServeProcess {
        Self::start_with(sluice, name, &[])
    }

    /// [`ServeProcess::start`] with more `sluice serve` flags.
    pub fn start_with(sluice: &Sluice, name: &str, flags: &[&str]) -> ServeProcess {
        let log = std::env::temp_dir().join(format!("sluice-serve-{name}.log"));
        let mut args = vec!["--log-format", "json", "serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let child = sluice
            .command(&args)
            .env("SLUICE_LOG", "info")
            // A secrets key, so that `PUT /v1/secrets/{name}` is exercised past the 503 of
            // a keyless server (a test key, used nowhere else).
            .env(
                "SLUICE_SECRETS_KEY",
                "4f1c2b7e9a0d3c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f506",
            )
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create the server log"))
            .spawn()
            .expect("spawn sluice serve");
        let mut server = ServeProcess {
            child,
            base: String::new(),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        server.base = loop {
            if let Some(address) = server.address() {
                break format!("http://{address}");
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("sluice serve exited ({status}):\n{}", server.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "sluice serve did not report its address:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        server
    }

    /// The address from the `serving the HTTP API` log line.
    fn address(&self) -> Option<String> {
        let file = std::fs::File::open(&self.log).ok()?;
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                let event: serde_json::Value = serde_json::from_str(&line).ok()?;
                let fields = &event["fields"];
                (fields["message"] == "serving the HTTP API")
                    .then(|| fields["address"].as_str().map(str::to_owned))
                    .flatten()
            })
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! Outbound HTTP end to end through the real `sluice` binary. This module holds the
//! area's test servers (`Servers`, on their own runtime) and the operator's opening
//! (`LOOPBACK`); the cases are in its submodules: `destinations` (a job type granted a
//! destination with `sluice types set --allow-http` reaches a real server on 127.0.0.1
//! over HTTP and HTTPS with a test CA, opened by `--egress-allow-network`; every refused
//! destination reaches nothing and the job follows its task's choice), `allow_lists` (bad
//! allow lists refused when set, a tenant bound only narrowing), `post_json` (a realistic
//! task completes on 2xx, retries 5xx, gives up on 4xx), `rolling_deploy` (a host
//! limited to contract 0.1 leaves 0.2 jobs pending without spending an attempt, a full
//! host runs both) and `caps` (body caps as a guest sees them).

mod allow_lists;
mod caps;
mod destinations;
mod post_json;
mod rolling_deploy;

use crate::egress_support::{Reply, TestCa, TestServer};

/// The operator's opening for the test servers, and nothing else.
const LOOPBACK: &str = "127.0.0.1/32,::1/128";

/// Test servers on their own multi-threaded runtime: the test's own runtime thread blocks
/// while it waits for the `sluice` binary.
struct Servers {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Servers {
    fn new() -> Self {
        Servers {
            runtime: Some(tokio::runtime::Runtime::new().unwrap()),
        }
    }

    fn start(&self, reply: Reply) -> TestServer {
        self.on_runtime(TestServer::start(reply))
    }

    fn start_tls(&self, reply: Reply, ca: &TestCa, name: &str) -> TestServer {
        self.on_runtime(TestServer::start_tls(reply, ca.server_config(name)))
    }

    /// Runs `start` on the servers' runtime, from a thread outside the test's runtime.
    fn on_runtime<F>(&self, start: F) -> TestServer
    where
        F: std::future::Future<Output = TestServer> + Send + 'static,
    {
        let handle = self.runtime.as_ref().unwrap().handle().clone();
        std::thread::spawn(move || handle.block_on(start))
            .join()
            .unwrap()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

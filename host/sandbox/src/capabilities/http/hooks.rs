//! Outbound HTTP for guests: [`EgressHooks`], wasmtime-wasi-http's `send_request` hook,
//! which hands every request of an attempt to the host's one vetted connector
//! (`sluice_egress::Connector`) under the job type's [`HttpGrant`], and [`HttpGrant`] /
//! [`HttpCalls`], what goes in and what comes out. `send_request` is the one place every
//! guest request passes (a durable job's continues in `journaled.rs`; under a grant of
//! recorded responses, `sluice test`'s, each is answered in `recorded.rs` and none
//! reaches a connector).
//!
//! Deny by default: an attempt without a grant, a host without a connector, or a request
//! past the per-attempt count gets `HTTP-request-denied` without any network activity.
//! Every refusal or failure is a guest-visible `error-code` (never a trap) and one `WARN`
//! line in the attempt's log naming the destination and the rule. Must not connect by
//! itself: the connector is the only code that opens sockets (wasmtime's
//! `default_send_request` is not even compiled in).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use sluice_egress::{Connector, RequestTimeouts};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::calls::{HttpCalls, HttpGrant, IoFuture, SendFuture, Shared, lock, record, to_wasi};
use super::journaled::{self, Journaled};
use super::recorded::{self, Replay};
use super::trace;
use crate::attempt_trace::AttemptTrace;
use crate::journal::Journal;
use crate::log_buffer::LogBuffer;

/// How long after the attempt's deadline the connector gives up on a request by itself.
const DEADLINE_BACKSTOP: Duration = Duration::from_secs(1);

/// The hook of one attempt's store.
pub(crate) struct EgressHooks {
    connector: Option<Connector>,
    grant: Option<Arc<HttpGrant>>,
    /// The attempt's deadline (far away when it has no timeout).
    deadline: tokio::time::Instant,
    started: u32,
    logs: LogBuffer,
    /// Made by the first request: an attempt that sends none allocates nothing here.
    shared: Option<Arc<Shared>>,
    /// A durable job's journal: its requests are journaled (`journaled.rs`).
    journal: Option<Journal>,
    /// Under recorded HTTP, the responses used so far (`recorded.rs`).
    replay: Option<Replay>,
    /// Under recorded HTTP, the requests nothing recorded answered.
    unmatched: Vec<String>,
    /// The trace the attempt continues: each request sent gets a span and its context.
    trace: Option<AttemptTrace>,
}

impl EgressHooks {
    pub(crate) fn new(
        connector: Option<Connector>,
        grant: Option<Arc<HttpGrant>>,
        deadline: Option<Instant>,
        logs: LogBuffer,
        journal: Option<Journal>,
        trace: Option<AttemptTrace>,
    ) -> Self {
        // The attempt's own timeout ends a request that outlives it (the sandbox drops
        // the store, which aborts the request and closes its connection) and records
        // `timeout`; the connector's clamp to the deadline is the backstop, a little
        // later, so that a guest never sees a read timeout first and reports it instead.
        let deadline = match deadline {
            Some(d) => tokio::time::Instant::from_std(d) + DEADLINE_BACKSTOP,
            None => tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600),
        };
        EgressHooks {
            connector,
            deadline,
            started: 0,
            logs,
            replay: grant
                .as_ref()
                .and_then(|g| g.recorded.clone())
                .map(Replay::new),
            grant,
            shared: None,
            journal,
            unmatched: Vec::new(),
            trace,
        }
    }

    /// What the attempt's requests did (read once the guest has returned).
    pub(crate) fn calls(&self) -> HttpCalls {
        let Some(shared) = &self.shared else {
            return HttpCalls::default();
        };
        HttpCalls {
            calls: lock(&shared.calls).clone(),
            bytes_out: shared.bytes_out.load(Ordering::Relaxed),
            bytes_in: shared.bytes_in.load(Ordering::Relaxed),
            unmatched: self.unmatched.clone(),
        }
    }

    fn shared(&mut self) -> Arc<Shared> {
        self.shared.get_or_insert_with(Arc::default).clone()
    }

    fn refuse(&mut self, why: &str) -> SendFuture {
        self.logs.line("WARN", &format!("egress denied: {why}"));
        record(&self.shared(), "denied", Duration::ZERO);
        Box::new(async { Err(Error::HttpRequestDenied) })
    }
}

impl WasiHttpHooks for EgressHooks {
    /// Every scheme reaches `send_request`, so that the connector refuses the ones it
    /// does not speak with a logged reason (wasmtime's own check says nothing).
    fn is_supported_scheme(&mut self, _scheme: &http::uri::Scheme) -> bool {
        true
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let destination = destination(request.uri());
        let Some(grant) = self.grant.clone() else {
            return self.refuse(&format!(
                "`{destination}`: this job type is granted no outbound HTTP"
            ));
        };
        if self.started >= grant.max_requests {
            return self.refuse(&format!(
                "`{destination}`: the limit of {} requests per attempt is reached",
                grant.max_requests
            ));
        }
        if let Some(replay) = &mut self.replay {
            // Recorded HTTP: answered here, before any connector or journal is reached.
            self.started += 1;
            let shared = self.shared.get_or_insert_with(Arc::default).clone();
            return match recorded::send(replay, shared, request) {
                Ok(answer) => answer,
                Err(key) => {
                    self.logs
                        .line("WARN", &format!("no recorded response for {key}"));
                    record(&self.shared(), "denied", Duration::ZERO);
                    self.unmatched.push(key);
                    Box::new(async { Err(Error::HttpRequestDenied) })
                }
            };
        }
        let Some(connector) = self.connector.clone() else {
            return self.refuse(&format!(
                "`{destination}`: this job type is granted no outbound HTTP"
            ));
        };
        self.started += 1;
        let (shared, logs, deadline) = (self.shared(), self.logs.clone(), self.deadline);
        let timeouts = RequestTimeouts {
            connect: options.as_ref().and_then(|o| o.connect_timeout),
            first_byte: options.as_ref().and_then(|o| o.first_byte_timeout),
            between_bytes: options.as_ref().and_then(|o| o.between_bytes_timeout),
        };
        if let Some(journal) = self.journal.clone() {
            // Its seq now, when the guest calls `handle`: what it calls next comes after.
            let seq = journal.reserve();
            let journaled = Journaled {
                journal,
                connector,
                grant,
                deadline,
                timeouts,
                shared,
                logs,
                trace: self.trace.clone(),
            };
            return journaled::send(journaled, seq, request);
        }
        let mut request = request;
        let span = self.trace.as_ref().map(|t| {
            let (method, uri) = (request.method().clone(), request.uri().clone());
            trace::start(t, &method, &uri, request.headers_mut())
        });
        let out = shared.clone();
        let request = request.map(move |body| {
            body.map_frame(move |frame| {
                if let Some(data) = frame.data_ref() {
                    out.bytes_out
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                }
                frame
            })
        });
        Box::new(async move {
            let began = Instant::now();
            match connector
                .send(request, &grant.grant, deadline, timeouts)
                .await
            {
                Ok((response, io)) => {
                    record(&shared, "ok", began.elapsed());
                    if let Some(span) = span {
                        trace::end(span, Ok(response.status().as_u16()));
                    }
                    let seen = shared.clone();
                    let response = response.map(move |body| {
                        body.map_frame(move |frame| {
                            if let Some(data) = frame.data_ref() {
                                seen.bytes_in
                                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                            }
                            frame
                        })
                        .map_err(to_wasi)
                        .boxed_unsync()
                    });
                    let io: IoFuture = Box::new(async move { io.await.map_err(to_wasi) });
                    Ok((response, io))
                }
                Err(error) => {
                    record(&shared, error.outcome(), began.elapsed());
                    if let Some(span) = span {
                        trace::end(span, Err(error.outcome()));
                    }
                    logs.line("WARN", &error.to_string());
                    Err(to_wasi(error))
                }
            }
        })
    }
}

/// `scheme://authority` of a request, for log lines (never the path or query, which may
/// carry tokens).
fn destination(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("?");
    let authority = uri.authority().map_or("", |a| a.as_str());
    format!("{scheme}://{authority}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_in_logs_keep_no_path_or_query() {
        let uri: http::Uri = "https://api.example.com:8443/v1/charge?token=secret"
            .parse()
            .unwrap();
        assert_eq!(destination(&uri), "https://api.example.com:8443");
    }
}

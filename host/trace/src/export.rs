//! The batch span processor and the OTLP/HTTP exporter: a bounded queue that `end()`
//! feeds with one `try_send`, and one task that sends a batch when enough spans wait or
//! the schedule delay passed, through the egress connector, one export at a time.
//!
//! A failed export (refused, non-2xx, timeout) drops its batch and is counted; nothing is
//! retried, so memory stays bounded by the queue. Failures are logged at most once a
//! minute. Must not: block or await on the caller's side, open a connection other than
//! through [`Connector::send`], or log a header value.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, USER_AGENT};
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use ipnet::IpNet;
use sluice_egress::{
    AllowList, Connector, ConnectorConfig, Grant, Limits, NetworkPolicy, RequestTimeouts,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior, timeout_at};

use crate::config::{Config, Protocol, TraceConfigError};
use crate::data::SpanData;
use crate::{json, proto};

/// What the exporter has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Spans the collector accepted (a 2xx answer).
    pub exported_spans: u64,
    /// Spans lost: the queue was full, the tracer was shut down, or their export failed.
    pub dropped_spans: u64,
    /// Exports that failed (refused, non-2xx, timeout); their spans count as dropped.
    pub failed_exports: u64,
}

#[derive(Default)]
struct Counters {
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// The caller's side: the queue's sender and the exporter task's controls.
pub(crate) struct Exporter {
    queue: mpsc::Sender<SpanData>,
    counters: Arc<Counters>,
    closed: AtomicBool,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    done: watch::Receiver<bool>,
    task: tokio::task::AbortHandle,
}

/// The least time between two warnings about failed exports.
const WARN_EVERY: Duration = Duration::from_secs(60);

impl Exporter {
    /// Builds the connector and spawns the exporter task on the current tokio runtime.
    pub fn start(config: &Config) -> Result<Self, TraceConfigError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TraceConfigError::NoRuntime)?;
        // The collector is the operator's own configuration: every network is open to it,
        // and the grant allows exactly its origin.
        let all: [IpNet; 2] = [
            "0.0.0.0/0".parse().expect("a CIDR"),
            "::/0".parse().expect("a CIDR"),
        ];
        let networks = NetworkPolicy::new(all);
        let allow = AllowList::parse_with([config.origin.as_str()], &networks).map_err(|e| {
            TraceConfigError::Invalid {
                var: config.endpoint_var,
                value: config.endpoint.to_string(),
                problem: e.to_string(),
            }
        })?;
        let connector = Connector::new(ConnectorConfig {
            networks,
            extra_root_certs_pem: config.root_certs_pem.clone(),
            ..ConnectorConfig::default()
        })
        .map_err(|e| TraceConfigError::Certificate {
            var: config.certificate_var,
            problem: e.to_string(),
        })?;
        let grant = Grant {
            allow,
            bound: None,
            limits: Limits {
                max_request_body_bytes: 64 << 20,
                max_response_body_bytes: 1 << 20,
                ..Limits::default()
            },
        };
        let client = Client {
            connector,
            grant,
            endpoint: config.endpoint.clone(),
            headers: config.headers.clone(),
            protocol: config.protocol,
            timeout: config.timeout,
            resource: config.resource.clone(),
            resource_proto: proto::resource(&config.resource),
        };
        let (queue, rx) = mpsc::channel(config.max_queue);
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let (done_tx, done) = watch::channel(false);
        let counters = Arc::new(Counters::default());
        let task = Task {
            rx,
            counters: counters.clone(),
            client,
            max_batch: config.max_batch,
            schedule_delay: config.schedule_delay,
            last_warning: None,
            unlogged_failures: 0,
        };
        let task = runtime.spawn(task.run(shutdown_rx, done_tx)).abort_handle();
        Ok(Self {
            queue,
            counters,
            closed: AtomicBool::new(false),
            shutdown: Mutex::new(Some(shutdown_tx)),
            done,
            task,
        })
    }

    /// Queues a finished span; never blocks: a full queue (or a shut-down tracer) drops
    /// it and counts the drop.
    pub fn submit(&self, span: SpanData) {
        if self.closed.load(Relaxed) || self.queue.try_send(span).is_err() {
            self.counters.dropped.fetch_add(1, Relaxed);
        }
    }

    pub fn stats(&self) -> TraceStats {
        TraceStats {
            exported_spans: self.counters.exported.load(Relaxed),
            dropped_spans: self.counters.dropped.load(Relaxed),
            failed_exports: self.counters.failed.load(Relaxed),
        }
    }

    /// Stops taking spans, exports what is queued and waits for it at most `timeout`;
    /// then the task is stopped wherever it is.
    pub async fn shutdown(&self, timeout: Duration) {
        self.closed.store(true, Relaxed);
        let tx = self
            .shutdown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
        let mut done = self.done.clone();
        if tokio::time::timeout(timeout, done.wait_for(|d| *d))
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

/// Sends one encoded batch.
struct Client {
    connector: Connector,
    grant: Grant,
    endpoint: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    protocol: Protocol,
    timeout: Duration,
    resource: Vec<(String, String)>,
    resource_proto: proto::Resource,
}

impl Client {
    fn encode(&self, spans: &[SpanData]) -> Vec<u8> {
        match self.protocol {
            Protocol::Protobuf => proto::encode(&self.resource_proto, spans),
            Protocol::Json => json::encode(&self.resource, spans),
        }
    }

    /// POSTs `body`; `Err` says why the batch was not accepted.
    async fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let mut request = Request::post(self.endpoint.clone());
        if let Some(headers) = request.headers_mut() {
            for (name, value) in &self.headers {
                headers.insert(name.clone(), value.clone());
            }
        }
        let request = request
            .header(CONTENT_TYPE, self.protocol.content_type())
            .header(CONTENT_LENGTH, body.len())
            .header(
                USER_AGENT,
                concat!("Sluice-OTLP/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| format!("cannot build the request: {e}"))?;
        let deadline = Instant::now() + self.timeout;
        let exchange = async {
            let (response, io) = self
                .connector
                .send(request, &self.grant, deadline, RequestTimeouts::default())
                .await
                .map_err(|e| e.to_string())?;
            let io = tokio::spawn(io);
            let status = response.status();
            // Read the (small) answer so the exchange completes; its content is ignored
            // (a partial success still counts as exported).
            let answer = response.into_body().collect().await;
            io.abort();
            match (status.is_success(), answer) {
                (true, _) => Ok(()),
                (false, Ok(body)) => {
                    let bytes = body.to_bytes();
                    let first =
                        String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
                    Err(format!("HTTP {status}: {}", first.trim()))
                }
                (false, Err(_)) => Err(format!("HTTP {status}")),
            }
        };
        timeout_at(deadline, exchange)
            .await
            .map_err(|_| format!("no answer within {:?}", self.timeout))?
    }
}

/// The exporter task's state.
struct Task {
    rx: mpsc::Receiver<SpanData>,
    counters: Arc<Counters>,
    client: Client,
    max_batch: usize,
    schedule_delay: Duration,
    last_warning: Option<Instant>,
    unlogged_failures: u64,
}

impl Task {
    async fn run(mut self, mut shutdown: oneshot::Receiver<()>, done: watch::Sender<bool>) {
        let mut batch = Vec::with_capacity(self.max_batch);
        let mut tick =
            tokio::time::interval_at(Instant::now() + self.schedule_delay, self.schedule_delay);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let room = self.max_batch - batch.len();
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                _ = tick.tick() => {
                    if !batch.is_empty() {
                        self.export(&mut batch).await;
                    }
                }
                n = self.rx.recv_many(&mut batch, room) => {
                    if n == 0 {
                        break;
                    }
                    if batch.len() >= self.max_batch {
                        self.export(&mut batch).await;
                        tick.reset();
                    }
                }
            }
        }
        // Shutting down (or every sender is gone): no more spans, export what is queued.
        self.rx.close();
        loop {
            while batch.len() < self.max_batch {
                match self.rx.try_recv() {
                    Ok(span) => batch.push(span),
                    Err(_) => break,
                }
            }
            if batch.is_empty() {
                break;
            }
            self.export(&mut batch).await;
        }
        let _ = done.send(true);
    }

    /// Sends `batch` (and empties it); counts the outcome.
    async fn export(&mut self, batch: &mut Vec<SpanData>) {
        let n = batch.len() as u64;
        let body = self.client.encode(batch);
        batch.clear();
        match self.client.send(body).await {
            Ok(()) => {
                self.counters.exported.fetch_add(n, Relaxed);
            }
            Err(why) => {
                self.counters.failed.fetch_add(1, Relaxed);
                self.counters.dropped.fetch_add(n, Relaxed);
                self.unlogged_failures += 1;
                let now = Instant::now();
                if self.last_warning.is_none_or(|t| now - t >= WARN_EVERY) {
                    tracing::warn!(
                        endpoint = %self.client.endpoint,
                        failed_exports = self.unlogged_failures,
                        error = %why,
                        "cannot export spans to the OpenTelemetry collector; their batches are dropped (warned at most once a minute)"
                    );
                    self.last_warning = Some(now);
                    self.unlogged_failures = 0;
                }
            }
        }
    }
}

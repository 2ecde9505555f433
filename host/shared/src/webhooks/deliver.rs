//! One attempt of one webhook delivery (a job of type `sluice.webhook`): read the
//! endpoint and the event at send time, sign, POST through the egress connector, and
//! decide what the attempt was ([`Verdict`]). The worker turns the verdict into a queue
//! transition; this module writes nothing but the one side effect the rules ask for (a
//! 410 Gone disables the endpoint).
//!
//! Rules (docs/webhooks.md): 2xx completes; 3xx is dead ("redirect refused"); a
//! destination the egress policy refuses, or an invalid URL, is dead with the rule
//! named; 410 is dead and disables the endpoint; anything else (other statuses,
//! timeouts, connection errors) is retried on the endpoint's schedule. A deleted or
//! disabled endpoint, or one whose filter no longer matches, cancels the delivery.
//! A signing secret sealed under a key this host does not hold (moved there after the
//! claim) gives the attempt back uncounted; one that does not authenticate is retried.
//! Must not: follow a redirect, connect any other way than [`Connector::send`], or log or
//! return a secret.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use sluice_egress::{Connector, EgressError, Grant, RequestTimeouts};
use sluice_secrets::{Keyring, OpenError, Sealed};
use sluice_store::{
    DEFAULT_RETRY_SCHEDULE, EndpointForSend, Store, TEST_EVENT_TYPE, endpoint_secret_name,
};
use tokio::time::Instant;

use super::signing::signature_header;
use super::{endpoint_label, message_id};
use crate::metrics::Metrics;

/// How much of a response is kept on the delivery (its output or its error).
pub const RESPONSE_KEPT_BYTES: usize = 1024;
/// The attempt header (namespaced; Standard Webhooks defines none).
pub const ATTEMPT_HEADER: &str = "sluice-webhook-attempt";

/// What one delivery attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx: the status and the first bytes of the answer.
    Delivered {
        /// The HTTP status, 200 to 299.
        status: u16,
        /// The first [`RESPONSE_KEPT_BYTES`] bytes of the body, as text (NUL replaced).
        response: String,
    },
    /// Try again after `delay` (unless the attempts are used up).
    Retry {
        /// What went wrong, kept as the attempt's error: the egress error with its
        /// `wasi:http` code, the status and first bytes of the answer, the timeout, or a
        /// signing secret that does not open.
        error: String,
        /// From the endpoint's retry schedule for this attempt ([`retry_delay`]).
        delay: Duration,
    },
    /// No attempt can succeed.
    Dead(String),
    /// The endpoint is gone, disabled or no longer subscribed: the delivery ends
    /// `cancelled` with this reason.
    Cancel(String),
    /// This host cannot send it (no secrets key, a signing secret under a key it does
    /// not hold, or the store could not be read): give the attempt back.
    Release(&'static str),
}

/// One claimed delivery.
#[derive(Clone, Debug)]
pub struct DeliveryJob<'a> {
    /// The delivery's job id (`sluice.jobs.id`), named in the reason a 410 disables the
    /// endpoint with.
    pub id: i64,
    /// The tenant that owns the endpoint and the event.
    pub tenant: &'a str,
    /// This attempt's number, 1-based; sent as the `sluice-webhook-attempt` header and
    /// picks the retry delay.
    pub attempt: i32,
    /// The job's payload, JSON `{"endpoint": N, "event": N}`; anything else makes the
    /// delivery dead.
    pub payload: &'a [u8],
    /// The W3C trace context the receiver continues (`traceparent`, `tracestate`: the
    /// delivery attempt's span), when the event had one or tracing is on.
    pub trace: Option<(String, Option<String>)>,
}

/// What sending needs from the host.
pub struct Sender<'a> {
    /// Reads the endpoint and the event at send time, and disables an endpoint on 410.
    pub store: &'a Store,
    /// The one vetted connector every delivery is sent through.
    pub connector: &'a Connector,
    /// Opens the endpoint's signing secrets; `None` (no secrets key on this host)
    /// releases every delivery.
    pub keyring: Option<&'a Keyring>,
    /// Records each send (`webhook_sent`: outcome, status, duration).
    pub metrics: &'a Metrics,
}

#[derive(serde::Deserialize)]
struct Payload {
    endpoint: i64,
    event: i64,
}

/// Runs the attempt; `grant` is what the tenant's deliveries may reach.
pub async fn deliver(sender: &Sender<'_>, job: &DeliveryJob<'_>, grant: &Grant) -> Verdict {
    let Ok(Payload { endpoint, event }) = serde_json::from_slice(job.payload) else {
        return Verdict::Dead("not a webhook delivery payload ({\"endpoint\", \"event\"})".into());
    };
    let label = endpoint_label(endpoint);
    let target = match sender
        .store
        .webhook_target(job.tenant, endpoint, event)
        .await
    {
        Ok(target) => target,
        Err(error) => {
            tracing::warn!(error = %error, "cannot read the webhook endpoint; releasing the delivery");
            return Verdict::Release("infrastructure: webhook endpoint unreadable");
        }
    };
    let Some(ep) = target.endpoint else {
        return Verdict::Cancel(format!("endpoint {label} was deleted"));
    };
    if !ep.enabled {
        let why = ep.disabled_reason.as_deref().unwrap_or("disabled");
        return Verdict::Cancel(format!("endpoint {label} is disabled: {why}"));
    }
    let Some((event_type, body)) = target.event else {
        return Verdict::Dead(format!("event evt_{event} no longer exists (retention)"));
    };
    if event_type != TEST_EVENT_TYPE && !matches(&ep.events, &event_type) {
        return Verdict::Cancel(format!(
            "endpoint {label} no longer subscribes to `{event_type}` (its filter: {})",
            ep.events.join(", ")
        ));
    }
    let Some(keyring) = sender.keyring else {
        return Verdict::Release("no secrets key on this host to sign webhooks with");
    };
    let secrets = match open_secrets(keyring, job.tenant, endpoint, &ep) {
        Ok(secrets) => secrets,
        // The claim leaves deliveries whose secrets are under a key this host does not
        // hold; one moved to such a key since the claim goes back, attempt not counted.
        Err((error @ OpenError::UnknownKey { .. }, label)) => {
            tracing::warn!(why = %format!("the signing secret of {label} cannot be opened here: {error}"), "releasing the delivery for another host");
            return Verdict::Release("not runnable on this host");
        }
        Err((error, label)) => {
            let why = format!("the signing secret of {label} cannot be opened: {error}");
            return retry(&ep, job.attempt, why);
        }
    };
    let msg_id = message_id(event, endpoint);
    let timestamp = chrono::Utc::now().timestamp();
    let Ok(signature) = signature_header(&secrets, &msg_id, timestamp, &body) else {
        return retry(
            &ep,
            job.attempt,
            format!("the signing secret of {label} is corrupt: rotate it"),
        );
    };
    let request = Request::post(ep.url.as_str())
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::USER_AGENT,
            concat!("Sluice-Webhooks/", env!("CARGO_PKG_VERSION")),
        )
        .header(header::CONTENT_LENGTH, body.len())
        .header("webhook-id", &msg_id)
        .header("webhook-timestamp", timestamp)
        .header("webhook-signature", signature)
        .header(ATTEMPT_HEADER, job.attempt);
    let request = match &job.trace {
        Some((parent, state)) => {
            let request = request.header("traceparent", parent);
            match state {
                Some(state) => request.header("tracestate", state),
                None => request,
            }
        }
        None => request,
    };
    let request = request.body(Full::new(Bytes::from(body)));
    let request = match request {
        Ok(request) => request,
        Err(error) => return Verdict::Dead(format!("invalid URL `{}`: {error}", ep.url)),
    };
    let timeout = Duration::from_millis(ep.timeout_ms.max(1) as u64);
    let deadline = Instant::now() + timeout;
    let started = std::time::Instant::now();
    let sent = tokio::time::timeout_at(deadline, send(sender.connector, request, grant, deadline));
    let sent = sent.await;
    let (outcome, status) = match &sent {
        Err(_) => ("timeout", None),
        Ok(Err(error)) => (error.outcome(), None),
        Ok(Ok(answer)) => ("ok", Some(answer.status)),
    };
    sender
        .metrics
        .webhook_sent(job.tenant, outcome, status, started.elapsed());
    match sent {
        Err(_) => retry(
            &ep,
            job.attempt,
            format!("no complete answer within the {timeout:?} timeout"),
        ),
        Ok(Err(error)) => egress_verdict(&ep, job.attempt, &error),
        Ok(Ok(answer)) => answer_verdict(sender, job, endpoint, &ep, answer).await,
    }
}

/// A response: its status, its `location` header and the first bytes of its body.
struct Answer {
    status: u16,
    location: Option<String>,
    first_bytes: String,
}

async fn send(
    connector: &Connector,
    request: Request<Full<Bytes>>,
    grant: &Grant,
    deadline: Instant,
) -> Result<Answer, EgressError> {
    let (response, io) = connector
        .send(request, grant, deadline, RequestTimeouts::default())
        .await?;
    let io = tokio::spawn(io);
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get(header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut body = response.into_body();
    let mut kept = Vec::new();
    // The first bytes only; a failure while reading the rest changes nothing.
    while kept.len() < RESPONSE_KEPT_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    kept.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    drop(body);
    io.abort();
    kept.truncate(RESPONSE_KEPT_BYTES);
    Ok(Answer {
        status,
        location: location.map(|l| printable(&l)),
        first_bytes: printable(&String::from_utf8_lossy(&kept)),
    })
}

/// What a receiver sent, fit to be kept as text and JSON: NUL (which neither Postgres
/// text nor jsonb can hold) becomes U+FFFD.
fn printable(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

async fn answer_verdict(
    sender: &Sender<'_>,
    job: &DeliveryJob<'_>,
    endpoint: i64,
    ep: &EndpointForSend,
    answer: Answer,
) -> Verdict {
    let Answer {
        status,
        location,
        first_bytes,
    } = answer;
    match status {
        200..=299 => Verdict::Delivered {
            status,
            response: first_bytes,
        },
        300..=399 => Verdict::Dead(format!(
            "HTTP {status}: redirect refused ({status} to {})",
            location.as_deref().unwrap_or("no location")
        )),
        410 => {
            let label = endpoint_label(endpoint);
            let reason = format!(
                "disabled after 410 Gone from {} (delivery {}, {})",
                ep.url,
                job.id,
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            );
            if let Err(error) = sender
                .store
                .disable_webhook_endpoint(job.tenant, endpoint, &reason)
                .await
            {
                tracing::warn!(error = %error, endpoint = %label, "cannot disable the endpoint after 410 Gone");
            }
            Verdict::Dead(format!("HTTP 410: endpoint gone; {label} disabled"))
        }
        _ => retry(
            ep,
            job.attempt,
            format!("HTTP {status}: {}", first_bytes.trim()),
        ),
    }
}

/// Refusals of the policy and invalid URLs are dead; everything else may pass later.
fn egress_verdict(ep: &EndpointForSend, attempt: i32, error: &EgressError) -> Verdict {
    match error {
        EgressError::HttpRequestDenied(_)
        | EgressError::DestinationIpProhibited { .. }
        | EgressError::HttpRequestUriInvalid(_) => {
            Verdict::Dead(format!("{error} [{}]", error.error_code()))
        }
        _ => retry(ep, attempt, format!("{error} [{}]", error.error_code())),
    }
}

fn retry(ep: &EndpointForSend, attempt: i32, error: String) -> Verdict {
    Verdict::Retry {
        error,
        delay: retry_delay(ep.retry_schedule_ms.as_deref(), attempt),
    }
}

/// The delay after attempt `attempt` (1-based): the schedule's step for it, the last
/// step once the schedule is used up.
pub fn retry_delay(schedule_ms: Option<&[i64]>, attempt: i32) -> Duration {
    let step = (attempt.max(1) - 1) as usize;
    match schedule_ms {
        Some(ms) if !ms.is_empty() => {
            Duration::from_millis(ms[step.min(ms.len() - 1)].max(0) as u64)
        }
        Some(_) => Duration::ZERO,
        None => DEFAULT_RETRY_SCHEDULE[step.min(DEFAULT_RETRY_SCHEDULE.len() - 1)],
    }
}

/// Whether patterns `*`, `type`, `prefix.*` admit `event_type` (as
/// `sluice.webhook_matches` does in SQL).
pub fn matches(patterns: &[String], event_type: &str) -> bool {
    patterns.iter().any(|p| {
        p == "*"
            || p == event_type
            || p.strip_suffix('*')
                .is_some_and(|prefix| prefix.ends_with('.') && event_type.starts_with(prefix))
    })
}

/// The signing secrets, opened; or why one does not open, with the endpoint's label.
fn open_secrets(
    keyring: &Keyring,
    tenant: &str,
    endpoint: i64,
    ep: &EndpointForSend,
) -> Result<Vec<String>, (OpenError, String)> {
    let name = endpoint_secret_name(endpoint);
    ep.secrets
        .iter()
        .map(|s| {
            let sealed = Sealed {
                key_id: s.key_id.clone(),
                nonce: s.nonce.clone(),
                ciphertext: s.ciphertext.clone(),
            };
            keyring
                .open(tenant, &name, &sealed)
                .map_err(|e| (e, endpoint_label(endpoint)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_like_the_sql_function() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches(&p(&["*"]), "anything.at.all"));
        assert!(matches(&p(&["invoice.*"]), "invoice.paid"));
        assert!(matches(&p(&["invoice.*"]), "invoice.paid.late"));
        assert!(!matches(&p(&["invoice.*"]), "invoices.paid"));
        assert!(!matches(&p(&["invoice.*"]), "invoice"));
        assert!(matches(
            &p(&["user.created", "invoice.paid"]),
            "invoice.paid"
        ));
        assert!(!matches(&p(&["invoice.paid"]), "invoice.paid2"));
    }

    #[test]
    fn a_receivers_nul_bytes_never_reach_what_is_kept() {
        assert_eq!(printable("ok\0\0x"), "ok\u{FFFD}\u{FFFD}x");
    }

    #[test]
    fn retries_follow_the_schedule_then_its_last_step() {
        assert_eq!(retry_delay(None, 1), Duration::from_secs(5));
        assert_eq!(retry_delay(None, 2), Duration::from_secs(300));
        assert_eq!(retry_delay(None, 99), Duration::from_secs(36_000));
        let custom = [100, 2_000];
        assert_eq!(retry_delay(Some(&custom), 1), Duration::from_millis(100));
        assert_eq!(retry_delay(Some(&custom), 5), Duration::from_secs(2));
        assert_eq!(retry_delay(Some(&[]), 1), Duration::ZERO);
    }
}

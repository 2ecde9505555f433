//! Body wrappers that enforce a grant's caps while bytes flow.
//!
//! [`CappedRequestBody`] counts what the guest uploads and fails once over the cap;
//! [`ResponseBody`] counts what the server sends, applies the between-bytes timeout and
//! the attempt deadline, and on any of those failures tells the connection driver to
//! drop the socket. Neither looks at headers or policy.

use std::error::Error as StdError;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use crate::error::{EgressError, ReadPhase, map_hyper_error};

pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

/// The error a capped request body fails with; hyper reports it as a body-write error,
/// and the connector turns it into [`EgressError::HttpRequestBodySize`] via the flag.
#[derive(Debug, thiserror::Error)]
#[error("request body exceeds the {0}-byte limit")]
pub(crate) struct RequestBodyTooLarge(pub u64);

/// Wraps the caller's request body; fails once more than `cap` bytes were produced.
pub(crate) struct CappedRequestBody<B> {
    inner: Pin<Box<B>>,
    sent: u64,
    cap: u64,
    exceeded: Arc<AtomicBool>,
}

impl<B> CappedRequestBody<B> {
    pub(crate) fn new(inner: B, cap: u64, exceeded: Arc<AtomicBool>) -> Self {
        Self {
            inner: Box::pin(inner),
            sent: 0,
            cap,
            exceeded,
        }
    }
}

impl<B> Body for CappedRequestBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match ready!(this.inner.as_mut().poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.sent = this.sent.saturating_add(data.len() as u64);
                    if this.sent > this.cap {
                        this.exceeded.store(true, Ordering::SeqCst);
                        return Poll::Ready(Some(Err(Box::new(RequestBodyTooLarge(this.cap)))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The body of a response returned by [`crate::Connector::send`].
///
/// It yields the server's frames until the end, and fails with
/// [`EgressError::HttpResponseBodySize`] once more than the cap has arrived, or
/// [`EgressError::ConnectionReadTimeout`] when the between-bytes timeout or the attempt
/// deadline passes. After a failure (or when dropped before the end) the connection is
/// closed.
pub struct ResponseBody {
    inner: Option<hyper::body::Incoming>,
    host: String,
    received: u64,
    cap: u64,
    between_bytes: Duration,
    idle: Pin<Box<Sleep>>,
    deadline: Pin<Box<Sleep>>,
    /// Dropping or firing this ends the connection driver (see `connector::drive`).
    abort: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseBody")
            .field("host", &self.host)
            .field("received", &self.received)
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

impl ResponseBody {
    pub(crate) fn new(
        inner: hyper::body::Incoming,
        host: String,
        cap: u64,
        between_bytes: Duration,
        deadline: Instant,
        abort: oneshot::Sender<()>,
    ) -> Self {
        Self {
            inner: Some(inner),
            host,
            received: 0,
            cap,
            between_bytes,
            idle: Box::pin(tokio::time::sleep(between_bytes)),
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            abort: Some(abort),
        }
    }

    /// Bytes of body received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    fn fail(&mut self, err: EgressError) -> Poll<Option<Result<Frame<Bytes>, EgressError>>> {
        self.inner = None;
        if let Some(abort) = self.abort.take() {
            let _ = abort.send(());
        }
        Poll::Ready(Some(Err(err)))
    }

    fn read_timeout(&self, phase: ReadPhase) -> EgressError {
        EgressError::ConnectionReadTimeout {
            host: self.host.clone(),
            phase,
        }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        // Dropped before the end: nobody will read the rest, so close the connection.
        if self.inner.is_some()
            && let Some(abort) = self.abort.take()
        {
            let _ = abort.send(());
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = EgressError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, EgressError>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if this.deadline.as_mut().poll(cx).is_ready() {
            let err = this.read_timeout(ReadPhase::Deadline);
            return this.fail(err);
        }
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received = this.received.saturating_add(data.len() as u64);
                    if this.received > this.cap {
                        let cap = this.cap;
                        return this.fail(EgressError::HttpResponseBodySize(cap));
                    }
                }
                let next = Instant::now() + this.between_bytes;
                this.idle.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                let err = map_hyper_error(&this.host, &e, ReadPhase::BetweenBytes);
                this.fail(err)
            }
            Poll::Ready(None) => {
                // Complete: let the driver finish the connection normally.
                this.inner = None;
                this.abort = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.idle.as_mut().poll(cx).is_ready() {
                    let err = this.read_timeout(ReadPhase::BetweenBytes);
                    return this.fail(err);
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

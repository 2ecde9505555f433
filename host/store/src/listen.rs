//! LISTEN/NOTIFY: how idle workers learn that jobs arrived and running ones that they
//! should cancel, without polling.
//!
//! Owns: the channel names and the [`StoreListener`] that decodes their notifications.
//! Must not: be the only path for anything — a notification can be lost (a dropped
//! connection, a listener started late), so workers still poll for jobs and heartbeats
//! still report cancel requests.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::DropGuard;

use crate::error::ConnectError;
use crate::{Store, StoreError, connect};

/// Notified by statements that make jobs pending: enqueue, release, reap, retry, and a
/// failed attempt going back to pending. An empty payload means "due now"; a payload of
/// digits is the number of microseconds (database time) until the earliest of the
/// statement's jobs falls due, so idle workers wake when it is due rather than at their
/// next poll. Postgres folds identical notifications within a transaction, so a bulk
/// enqueue sends one.
pub const JOBS_CHANNEL: &str = "sluice_jobs";
/// Notified by `cancel` on a running job; the payload is the job id.
pub const CANCEL_CHANNEL: &str = "sluice_cancel";

/// Something a worker should react to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Jobs became due: claim now instead of waiting for the next poll.
    JobsAvailable,
    /// A job was made pending that falls due in this long: look for work then.
    JobsDueIn(Duration),
    /// An operator asked to cancel this running job.
    CancelRequested(i64),
    /// The listening connection dropped and was re-established: notices may have been
    /// missed. Claim now; missed cancel requests still arrive through heartbeats.
    Reconnected,
}

/// A dedicated connection listening on [`JOBS_CHANNEL`] and [`CANCEL_CHANNEL`].
pub struct StoreListener {
    inner: PgListener,
    /// The failover watcher of a listener on its own several-host URL.
    _watcher: Option<Arc<DropGuard>>,
}

impl std::fmt::Debug for StoreListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreListener").finish_non_exhaustive()
    }
}

impl StoreListener {
    /// Waits for the next notice. Reconnects by itself after a dropped connection
    /// (reporting [`Notice::Reconnected`]); an error means reconnecting failed.
    pub async fn recv(&mut self) -> Result<Notice, StoreError> {
        loop {
            let next = match self.inner.try_recv().await {
                Ok(next) => next,
                // The server is closing this connection (terminated backend, shutdown,
                // SQLSTATE class 57): the next read sees the end of the stream and
                // reconnects.
                Err(sqlx::Error::Database(e))
                    if e.code().is_some_and(|code| code.starts_with("57")) =>
                {
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let Some(n) = next else {
                return Ok(Notice::Reconnected);
            };
            match n.channel() {
                JOBS_CHANNEL => return Ok(jobs_notice(n.payload())),
                CANCEL_CHANNEL => match n.payload().parse::<i64>() {
                    Ok(id) => return Ok(Notice::CancelRequested(id)),
                    Err(_) => {
                        tracing::warn!(
                            payload = n.payload(),
                            "ignoring malformed cancel notification"
                        );
                    }
                },
                _ => {}
            }
        }
    }
}

/// Decodes a [`JOBS_CHANNEL`] payload; anything but a delay in microseconds means "now".
fn jobs_notice(payload: &str) -> Notice {
    match payload.parse::<u64>() {
        Ok(micros) if micros > 0 => Notice::JobsDueIn(Duration::from_micros(micros)),
        _ => Notice::JobsAvailable,
    }
}

impl Store {
    /// Opens a listener (it holds one pool connection until dropped).
    pub async fn listen(&self) -> Result<StoreListener, StoreError> {
        let mut inner = PgListener::connect_with(&self.pool).await?;
        inner.listen_all([JOBS_CHANNEL, CANCEL_CHANNEL]).await?;
        Ok(StoreListener {
            inner,
            _watcher: None,
        })
    }

    /// Opens a listener on its own connection to `url`, outside the pool: for a
    /// deployment whose `DATABASE_URL` goes through a transaction pooler (PgBouncer in
    /// transaction mode drops LISTEN), `url` names the database directly. It takes every
    /// form `DATABASE_URL` takes (TLS, several hosts: it follows the primary), and the
    /// store's `application_name` unless `url` sets one.
    pub async fn listen_at(&self, url: &str) -> Result<StoreListener, ConnectError> {
        let (inner, watcher) = self
            .listener_at(url, &[JOBS_CHANNEL, CANCEL_CHANNEL])
            .await?;
        Ok(StoreListener {
            inner,
            _watcher: watcher,
        })
    }

    /// A listening connection of its own to `url`, listening on `channels`, and the
    /// failover watcher that keeps it on the primary.
    pub(crate) async fn listener_at(
        &self,
        url: &str,
        channels: &[&str],
    ) -> Result<(PgListener, Option<Arc<DropGuard>>), ConnectError> {
        let options = self.pool.connect_options();
        let name = options
            .get_application_name()
            .unwrap_or(crate::DEFAULT_APPLICATION_NAME);
        let opened = connect::open(url, name, 1, crate::CONNECT_TIMEOUT).await?;
        let failed = |error| ConnectError::Pool {
            addresses: opened.addresses.clone(),
            error,
        };
        let mut inner = PgListener::connect_with(&opened.pool)
            .await
            .map_err(failed)?;
        if !channels.is_empty() {
            inner
                .listen_all(channels.iter().copied())
                .await
                .map_err(failed)?;
        }
        Ok((inner, opened.watcher))
    }

    /// A listening connection on the store's direct URL when it has one
    /// ([`Store::with_direct_url`]), else one of the pool's.
    pub(crate) async fn listener(&self) -> anyhow::Result<(PgListener, Option<Arc<DropGuard>>)> {
        match &self.direct_url {
            Some(url) => Ok(self.listener_at(url, &[]).await?),
            None => Ok((PgListener::connect_with(&self.pool).await?, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_payloads_decode_to_now_or_a_delay() {
        assert_eq!(jobs_notice(""), Notice::JobsAvailable);
        assert_eq!(jobs_notice("0"), Notice::JobsAvailable);
        assert_eq!(jobs_notice("garbage"), Notice::JobsAvailable);
        assert_eq!(
            jobs_notice("1500000"),
            Notice::JobsDueIn(Duration::from_millis(1500))
        );
    }
}

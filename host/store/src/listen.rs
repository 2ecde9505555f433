//! LISTEN/NOTIFY: how idle workers learn that jobs arrived and running ones that they
//! should cancel, without polling.
//!
//! Owns: the channel names and the [`StoreListener`] that decodes their notifications.
//! Must not: be the only path for anything — a notification can be lost (a dropped
//! connection, a listener started late), so workers still poll for jobs and heartbeats
//! still report cancel requests.

use sqlx::postgres::PgListener;

use crate::{Store, StoreError};

/// Notified (empty payload) by statements that make jobs due now: enqueue, release,
/// reap, retry. Postgres folds identical notifications within a transaction, so a bulk
/// enqueue sends one.
pub const JOBS_CHANNEL: &str = "sluice_jobs";
/// Notified by `cancel` on a running job; the payload is the job id.
pub const CANCEL_CHANNEL: &str = "sluice_cancel";

/// Something a worker should react to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Jobs became due: claim now instead of waiting for the next poll.
    JobsAvailable,
    /// An operator asked to cancel this running job.
    CancelRequested(i64),
    /// The listening connection dropped and was re-established: notices may have been
    /// missed. Claim now; missed cancel requests still arrive through heartbeats.
    Reconnected,
}

/// A dedicated connection listening on [`JOBS_CHANNEL`] and [`CANCEL_CHANNEL`].
pub struct StoreListener {
    inner: PgListener,
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
                JOBS_CHANNEL => return Ok(Notice::JobsAvailable),
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

impl Store {
    /// Opens a listener (it holds one pool connection until dropped).
    pub async fn listen(&self) -> Result<StoreListener, StoreError> {
        let mut inner = PgListener::connect_with(&self.pool).await?;
        inner.listen_all([JOBS_CHANNEL, CANCEL_CHANNEL]).await?;
        Ok(StoreListener { inner })
    }
}

//! Waiting for a job to finish without polling: `GET /v1/jobs/{id}?wait=` and `sluice
//! jobs wait` (issue #41). A waiter marks the job watched (`sql/waits/
//! watch_finish.sql`); the statement that finishes a watched job notifies
//! [`FINISHED_CHANNEL`] with its id (trigger `jobs_notify_finished`, migration 0032), so
//! the drain pays nothing for jobs nobody awaits.
//!
//! Owns: [`FinishWaits`], one LISTEN connection shared by every wait of a process (opened
//! at the first wait, on the store's direct URL when it has one), fanned out to the waits
//! by job id. Must not: be the only path — a notification can be lost (a dropped
//! connection, a listener not up yet), so each wait also reads its job again on a timer:
//! [`SAFETY_POLL`] while listening, [`FALLBACK_POLL`] while not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::admin::JobRecord;
use crate::{Store, StoreError, text};

/// Notified with a job's id when a watched job finishes.
pub const FINISHED_CHANNEL: &str = "sluice_finished";

/// A wait reads its job again this often while the listener is up (a lost notification
/// costs at most this much latency).
pub const SAFETY_POLL: Duration = Duration::from_secs(10);
/// ... and this often while it is not (not connected yet, or reconnecting).
pub const FALLBACK_POLL: Duration = Duration::from_millis(500);

/// Reconnecting a lost listener: 1 s doubling to 30 s.
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// Sent to every wait: read your job again (the listener (re)connected, and may have
/// missed finishes).
const EVERY_JOB: i64 = 0;

/// Marks a job watched.
const WATCH_FINISH: &str = include_str!("../sql/waits/watch_finish.sql");

/// The waits of one process. Cheap to clone; the listener stops when the last clone is
/// dropped, and [`FinishWaits::close`] ends every wait in flight (server shutdown).
#[derive(Clone, Debug)]
pub struct FinishWaits {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    finished: broadcast::Sender<i64>,
    listening: Arc<AtomicBool>,
    started: std::sync::Once,
    /// Stops the listener (on drop) and ends the waits ([`FinishWaits::close`]).
    closed: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

impl FinishWaits {
    /// Waits on `store`'s database; nothing is opened until the first wait.
    pub fn new(store: Store) -> FinishWaits {
        FinishWaits {
            inner: Arc::new(Inner {
                store,
                finished: broadcast::channel(1024).0,
                listening: Arc::new(AtomicBool::new(false)),
                started: std::sync::Once::new(),
                closed: CancellationToken::new(),
            }),
        }
    }

    /// Waits up to `timeout` for job `id` (scoped to `tenant` when `Some`) to be
    /// finished (`completed`, `dead` or `cancelled`) and returns it as it is then:
    /// finished, or still unfinished at the timeout or when the waits are closed. `None`:
    /// no such job (for this tenant), or it was deleted while waited for.
    pub async fn wait(
        &self,
        tenant: Option<&str>,
        id: i64,
        timeout: Duration,
    ) -> Result<Option<JobRecord>, StoreError> {
        let inner = &self.inner;
        // A timeout too long for the clock (`Duration::MAX`: no timeout) waits a century.
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        let mut finished = inner.finished.subscribe();
        if !timeout.is_zero() {
            self.start_listener();
            inner.store.watch_finish(tenant, id).await?;
        }
        loop {
            let Some(job) = inner.store.get(tenant, id).await? else {
                return Ok(None);
            };
            let now = Instant::now();
            if job.state.is_terminal() || now >= deadline || inner.closed.is_cancelled() {
                return Ok(Some(job));
            }
            let poll = if inner.listening.load(Ordering::Relaxed) {
                SAFETY_POLL
            } else {
                FALLBACK_POLL
            };
            tokio::select! {
                () = inner.closed.cancelled() => {}
                () = tokio::time::sleep_until((now + poll).min(deadline)) => {}
                () = next_notice_for(&mut finished, id) => {}
            }
        }
    }

    /// Ends every wait in flight and every later one at once, each with its job as it is
    /// (a server shutting down answers its waiting requests).
    pub fn close(&self) {
        self.inner.closed.cancel();
    }

    /// Whether the shared listener is up (waits are woken by notifications).
    pub fn listening(&self) -> bool {
        self.inner.listening.load(Ordering::Relaxed)
    }

    fn start_listener(&self) {
        let inner = &self.inner;
        inner.started.call_once(|| {
            tokio::spawn(listen_loop(
                inner.store.clone(),
                inner.finished.clone(),
                inner.listening.clone(),
                inner.closed.clone(),
            ));
        });
    }
}

/// Returns at a notice for `id` or for every job, or when notices were lost (lagged).
async fn next_notice_for(finished: &mut broadcast::Receiver<i64>, id: i64) {
    loop {
        match finished.recv().await {
            Ok(n) if n == id || n == EVERY_JOB => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// LISTENs on [`FINISHED_CHANNEL`] until `closed`, reconnecting with back-off; tells every
/// wait to read its job again each time it (re)connects.
async fn listen_loop(
    store: Store,
    finished: broadcast::Sender<i64>,
    listening: Arc<AtomicBool>,
    closed: CancellationToken,
) {
    let mut pause = RECONNECT_FIRST;
    while !closed.is_cancelled() {
        let error = tokio::select! {
            () = closed.cancelled() => return,
            error = listen_once(&store, &finished, &listening) => error,
        };
        listening.store(false, Ordering::Relaxed);
        tracing::warn!(%error, "waits for finished jobs lost LISTEN: polling until it is back");
        tokio::select! {
            () = closed.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(RECONNECT_MAX);
    }
}

/// One listening connection's life; returns why it ended.
async fn listen_once(
    store: &Store,
    finished: &broadcast::Sender<i64>,
    listening: &AtomicBool,
) -> anyhow::Error {
    let (mut listener, _watcher) = match store.listener().await {
        Ok(opened) => opened,
        Err(error) => return error,
    };
    if let Err(error) = listener.listen(FINISHED_CHANNEL).await {
        return error.into();
    }
    listening.store(true, Ordering::Relaxed);
    let _ = finished.send(EVERY_JOB);
    loop {
        match listener.try_recv().await {
            Ok(Some(notice)) => {
                if let Ok(id) = notice.payload().parse::<i64>() {
                    let _ = finished.send(id);
                }
            }
            // The connection dropped and sqlx reconnects on the next read: missed
            // finishes are read again by every wait.
            Ok(None) => {
                let _ = finished.send(EVERY_JOB);
            }
            Err(error) => return error.into(),
        }
    }
}

impl Store {
    /// Marks job `id` watched, so its finish notifies [`FINISHED_CHANNEL`] (a no-op for a
    /// finished or missing job, or one marked already).
    pub async fn watch_finish(&self, tenant: Option<&str>, id: i64) -> Result<(), StoreError> {
        if !tenant.is_none_or(text::findable) {
            return Ok(());
        }
        sqlx::query(WATCH_FINISH)
            .bind(id)
            .bind(tenant)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

//! When an idle worker looks for work: on a notification (LISTEN on its own connection),
//! when a known job falls due, or on a timer — a 30 s safety poll while LISTEN works, an
//! exponential back-off (2 s doubling to 30 s) while it does not.
//!
//! Owns the listener task (connect, reconnect, re-LISTEN, the warnings when it falls back
//! to polling and when it comes back) and the idle schedule. Must not claim jobs or speak
//! SQL itself: it only tells the loop in `mod.rs` when to look.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sluice_store::{Notice, Store};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use sluice_shared::metrics::Metrics;

/// Where the worker LISTENs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// On a connection of the worker's pool (`DATABASE_URL` reaches Postgres directly).
    Pool,
    /// On its own connection to this URL (`DATABASE_URL` is a transaction pooler, which
    /// drops LISTEN).
    Direct(String),
    /// Not at all: poll with back-off (`--no-listen`).
    Off,
}

/// How long an idle worker waits before looking again without a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdlePolicy {
    /// With LISTEN up: a safety net for lost notifications.
    pub safety_poll: Duration,
    /// Without LISTEN: the first wait after a look that found nothing...
    pub backoff_first: Duration,
    /// ...doubling up to this.
    pub backoff_max: Duration,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            safety_poll: Duration::from_secs(30),
            backoff_first: Duration::from_secs(2),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// The back-off state between looks.
#[derive(Debug)]
pub(super) struct IdleSchedule {
    policy: IdlePolicy,
    next_backoff: Duration,
}

impl IdleSchedule {
    pub(super) fn new(policy: IdlePolicy) -> Self {
        Self {
            policy,
            next_backoff: policy.backoff_first,
        }
    }

    /// A look found work (or LISTEN just went away): the back-off starts over.
    pub(super) fn reset(&mut self) {
        self.next_backoff = self.policy.backoff_first;
    }

    /// How long to wait after a look that left slots idle.
    pub(super) fn next_wait(&mut self, listening: bool) -> Duration {
        if listening {
            return self.policy.safety_poll;
        }
        let wait = self.next_backoff;
        self.next_backoff = (wait * 2).min(self.policy.backoff_max).max(wait);
        wait
    }

    /// The shortest wait: after a failed look, try again this soon.
    pub(super) fn retry_after_error(&self) -> Duration {
        self.policy.backoff_first
    }
}

/// What the listener tells the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wake {
    Notice(Notice),
    /// LISTEN is unavailable: switch to back-off polling, starting with a look now.
    ListenLost,
    /// LISTEN is (back) up: notices may have been missed, look now.
    ListenBack,
}

/// The listener task's handle: notices in, and whether LISTEN is up.
pub(super) struct Wakeups {
    rx: Option<mpsc::Receiver<Wake>>,
    /// True while a LISTEN connection is up (the idle wait depends on it).
    listening: Arc<AtomicBool>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Wakeups {
    /// Starts listening as `listen` says (or not at all), in a background task.
    pub(super) fn start(store: &Store, listen: &Listen, metrics: Metrics) -> Self {
        let listening = Arc::new(AtomicBool::new(false));
        metrics.listening(false);
        if *listen == Listen::Off {
            warn!("LISTEN disabled: polling for work with back-off");
            return Self {
                rx: None,
                listening,
                task: None,
            };
        }
        let (tx, rx) = mpsc::channel(64);
        let state = Listening {
            up: listening.clone(),
            metrics,
        };
        let task = tokio::spawn(listen_loop(store.clone(), listen.clone(), tx, state));
        Self {
            rx: Some(rx),
            listening,
            task: Some(task),
        }
    }

    /// Whether a LISTEN connection is up right now.
    pub(super) fn listening(&self) -> bool {
        self.listening.load(Ordering::Relaxed)
    }

    /// The next wake-up; never returns when LISTEN is off.
    pub(super) async fn recv(&mut self) -> Wake {
        let next = match &mut self.rx {
            Some(rx) => rx.recv().await,
            None => None,
        };
        match next {
            Some(wake) => wake,
            None => std::future::pending().await,
        }
    }
}

/// Waits before reconnecting a failed LISTEN: 1 s doubling to 30 s.
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// Whether LISTEN is up: the loop's state, and the `sluice_worker_listening` gauge.
struct Listening {
    up: Arc<AtomicBool>,
    metrics: Metrics,
}

impl Listening {
    fn set(&self, up: bool) {
        self.up.store(up, Ordering::Relaxed);
        self.metrics.listening(up);
    }
}

async fn listen_loop(store: Store, listen: Listen, tx: mpsc::Sender<Wake>, state: Listening) {
    let mut pause = RECONNECT_FIRST;
    let mut fell_back = false;
    loop {
        let connected = match &listen {
            Listen::Direct(url) => store.listen_at(url).await.map_err(anyhow::Error::from),
            _ => store.listen().await.map_err(anyhow::Error::from),
        };
        match connected {
            Ok(mut listener) => {
                state.set(true);
                if fell_back {
                    warn!("LISTEN is back: waking on notifications again");
                    fell_back = false;
                    if tx.send(Wake::ListenBack).await.is_err() {
                        return;
                    }
                } else {
                    info!("listening for wake-ups");
                }
                pause = RECONNECT_FIRST;
                let error = loop {
                    match listener.recv().await {
                        Ok(notice) => {
                            if notice == Notice::Reconnected {
                                info!("LISTEN connection re-established; looking for missed work");
                            }
                            if tx.send(Wake::Notice(notice)).await.is_err() {
                                return;
                            }
                        }
                        Err(error) => break error,
                    }
                };
                warn!(%error, "lost the LISTEN connection: polling with back-off until it is back");
            }
            Err(error) if !fell_back => {
                warn!(%error, "cannot LISTEN: polling with back-off until it works");
            }
            Err(_) => {}
        }
        if !fell_back {
            fell_back = true;
            state.set(false);
            if tx.send(Wake::ListenLost).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RECONNECT_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_from_two_to_thirty_seconds_and_resets_on_work() {
        let mut idle = IdleSchedule::new(IdlePolicy::default());
        let waits: Vec<u64> = (0..7).map(|_| idle.next_wait(false).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 30, 30, 30]);
        idle.reset();
        assert_eq!(idle.next_wait(false), Duration::from_secs(2));
    }

    #[test]
    fn with_listen_the_wait_is_the_safety_poll() {
        let mut idle = IdleSchedule::new(IdlePolicy::default());
        assert_eq!(idle.next_wait(true), Duration::from_secs(30));
        assert_eq!(idle.next_wait(true), Duration::from_secs(30));
        // Polling starts from the first step even after a long time with LISTEN.
        assert_eq!(idle.next_wait(false), Duration::from_secs(2));
    }
}

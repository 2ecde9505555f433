//! The thread that ticks the engine's epoch, and only while a guest may run.
//!
//! Each tick wakes every running guest at its next epoch check: the timeout and the
//! cancellation are checked, and a busy guest yields its thread (`store.rs`). An attempt
//! holds an [`Awake`] from before its store exists until after it is gone; while none
//! is held the thread sleeps on a condition variable instead of waking every tick, so
//! an idle host costs nothing here. The first tick after waking comes one full tick
//! later, as on a ticker that never slept: a guest's first epoch check is at most one
//! tick late either way. Must not know about stores, guests or their deadlines.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;
use wasmtime::Engine;

/// Increments the engine's epoch every tick while an [`Awake`] is held, until dropped.
pub(crate) struct EpochTicker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    /// Attempts holding an [`Awake`].
    awake: AtomicUsize,
    /// Set once, when the ticker is dropped.
    stopped: Mutex<bool>,
    /// Signalled when `awake` leaves 0 and when `stopped` is set.
    wake: Condvar,
    /// Epoch increments so far (for tests and diagnostics).
    ticks: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keeps the ticker ticking while held (an attempt, from before its store exists).
pub(crate) struct Awake(Arc<Shared>);

impl Drop for Awake {
    fn drop(&mut self) {
        self.0.awake.fetch_sub(1, Ordering::SeqCst);
    }
}

impl EpochTicker {
    pub(crate) fn start(engine: &Engine, tick: Duration) -> anyhow::Result<EpochTicker> {
        anyhow::ensure!(!tick.is_zero(), "epoch_tick must be positive");
        let shared = Arc::new(Shared {
            awake: AtomicUsize::new(0),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
            ticks: AtomicU64::new(0),
        });
        let engine = engine.weak();
        let ticker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("sluice-epoch".into())
            .spawn(move || {
                let shared = ticker;
                let mut stopped = shared.lock();
                loop {
                    // `awake` is read under the lock that `Awake::new` takes before it
                    // signals, so a guest arriving now cannot be missed.
                    while !*stopped && shared.awake.load(Ordering::SeqCst) == 0 {
                        stopped = shared
                            .wake
                            .wait(stopped)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    if *stopped {
                        return;
                    }
                    stopped = shared
                        .wake
                        .wait_timeout_while(stopped, tick, |stopped| !*stopped)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    if *stopped {
                        return;
                    }
                    let Some(engine) = engine.upgrade() else {
                        return;
                    };
                    engine.increment_epoch();
                    shared.ticks.fetch_add(1, Ordering::Relaxed);
                }
            })
            .context("spawn the epoch ticker thread")?;
        Ok(EpochTicker {
            shared,
            thread: Some(thread),
        })
    }

    /// Ticks from now until the returned value is dropped (and while any other is held).
    pub(crate) fn awake(&self) -> Awake {
        if self.shared.awake.fetch_add(1, Ordering::SeqCst) == 0 {
            let _parked_or_ticking = self.shared.lock();
            self.shared.wake.notify_one();
        }
        Awake(self.shared.clone())
    }

    #[cfg(test)]
    fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        *self.shared.lock() = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // Wakes at once, parked or mid-tick; a panic in the ticker has nothing left
            // to clean up.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxConfig;
    use crate::engine::build_engine;

    fn engine() -> Engine {
        build_engine(&SandboxConfig {
            max_concurrency: 1,
            ..SandboxConfig::default()
        })
        .unwrap()
    }

    /// Polls `done` for up to 5 s (a loaded machine may delay the ticker thread).
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < until {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    /// Whether the tick count stays put for 20 ms, within 5 s.
    fn settles(ticker: &EpochTicker) -> bool {
        eventually(|| {
            let before = ticker.ticks();
            std::thread::sleep(Duration::from_millis(20));
            ticker.ticks() == before
        })
    }

    #[test]
    fn ticks_only_while_an_attempt_is_awake() {
        let engine = engine();
        let ticker = EpochTicker::start(&engine, Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(ticker.ticks(), 0, "no attempt: the ticker sleeps");

        let first = ticker.awake();
        let second = ticker.awake();
        assert!(
            eventually(|| ticker.ticks() > 0),
            "an attempt is awake: it ticks"
        );
        drop(first);
        let with_one_left = ticker.ticks();
        assert!(
            eventually(|| ticker.ticks() > with_one_left + 5),
            "one attempt is still awake"
        );

        drop(second);
        assert!(settles(&ticker), "the last attempt ended: it sleeps again");
        let parked = ticker.ticks();
        let again = ticker.awake();
        assert!(
            eventually(|| ticker.ticks() > parked),
            "woken again by the next attempt"
        );
        drop(again);
    }

    #[test]
    fn stops_when_dropped_whether_sleeping_or_ticking() {
        let engine = engine();
        let sleeping = EpochTicker::start(&engine, Duration::from_secs(3600)).unwrap();
        let started = std::time::Instant::now();
        drop(sleeping); // joins the thread
        let ticking = EpochTicker::start(&engine, Duration::from_secs(3600)).unwrap();
        let awake = ticking.awake();
        drop(ticking); // mid-tick of an hour
        drop(awake); // an attempt outliving its sandbox's ticker is harmless
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

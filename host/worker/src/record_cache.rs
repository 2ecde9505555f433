//! A read-through cache of database records with a time-to-live, for the registry's job
//! types and tenants, so that starting an attempt rarely waits for the database.
//!
//! - A record younger than the TTL is served from memory.
//! - One past half its TTL is still served, and its first reader is told to refresh it
//!   beside the attempt ([`Cached::Refresh`]): a record that attempts keep using is
//!   re-read before it expires, so they never wait for it (before, every type and
//!   tenant in use cost its next attempt two database round trips every TTL).
//! - A missing or expired record is loaded once, however many attempts ask for it at
//!   once: the others wait for that load ([`RecordCache::load`]). A flood's first
//!   attempts used to read the same two rows once each.
//!
//! A change is therefore seen within the TTL, as before: nothing older is ever served.
//! Must not: know what it caches or how a record is read (the caller passes the load).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the cache holds for a key now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Cached<V> {
    /// Young enough: use it.
    Fresh(V),
    /// Use it, and re-read it beside the attempt ([`RecordCache::refreshed`] or
    /// [`RecordCache::refresh_failed`] when done): only this reader is asked to.
    Refresh(V),
    /// Nothing, or only a record past its TTL: [`RecordCache::load`] it.
    Missing,
}

struct Entry<V> {
    record: Option<(Instant, V)>,
    /// A reader was told to refresh the record and has not reported back.
    refreshing: bool,
    /// Held while the record is loaded, so that one load serves every waiting reader.
    loading: Arc<tokio::sync::Mutex<()>>,
}

impl<V> Default for Entry<V> {
    fn default() -> Self {
        Entry {
            record: None,
            refreshing: false,
            loading: Arc::default(),
        }
    }
}

pub(super) struct RecordCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, Entry<V>>>,
}

impl<K: Hash + Eq + Clone, V: Clone> RecordCache<K, V> {
    pub(super) fn new(ttl: Duration) -> Self {
        RecordCache {
            ttl,
            entries: Mutex::default(),
        }
    }

    /// What the cache holds for `key` at `now`.
    pub(super) fn get(&self, key: &K, now: Instant) -> Cached<V> {
        let mut entries = self.entries.lock().expect("record cache lock");
        let Some(entry) = entries.get_mut(key) else {
            return Cached::Missing;
        };
        let Some((at, record)) = &entry.record else {
            return Cached::Missing;
        };
        let age = now.saturating_duration_since(*at);
        if age >= self.ttl {
            Cached::Missing
        } else if age >= self.ttl / 2 && !entry.refreshing {
            entry.refreshing = true;
            Cached::Refresh(record.clone())
        } else {
            Cached::Fresh(record.clone())
        }
    }

    /// Loads `key` with `load` unless another reader is already loading it, in which
    /// case this one waits for that load and takes its record (or, if it failed, loads
    /// again itself). A failed load stores nothing.
    pub(super) async fn load<F, Fut, E>(&self, key: &K, load: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        let gate = {
            let mut entries = self.entries.lock().expect("record cache lock");
            entries.entry(key.clone()).or_default().loading.clone()
        };
        let _loading = gate.lock().await;
        if let Some(record) = self.unexpired(key) {
            return Ok(record);
        }
        let record = load().await?;
        self.refreshed(key, record.clone());
        Ok(record)
    }

    /// The record, if it is younger than the TTL (another reader just loaded it).
    fn unexpired(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().expect("record cache lock");
        let (at, record) = entries.get(key)?.record.as_ref()?;
        (at.elapsed() < self.ttl).then(|| record.clone())
    }

    /// Stores `record` as read now (a load or a refresh).
    pub(super) fn refreshed(&self, key: &K, record: V) {
        let mut entries = self.entries.lock().expect("record cache lock");
        let entry = entries.entry(key.clone()).or_default();
        entry.record = Some((Instant::now(), record));
        entry.refreshing = false;
    }

    /// A refresh could not read the record: the next reader past half the TTL tries again
    /// (and past the TTL, a reader loads it and sees the error).
    pub(super) fn refresh_failed(&self, key: &K) {
        if let Some(entry) = self.entries.lock().expect("record cache lock").get_mut(key) {
            entry.refreshing = false;
        }
    }

    /// The record is gone from the database: forget it, so the next reader loads it
    /// (and learns that it is gone).
    pub(super) fn forget(&self, key: &K) {
        if let Some(entry) = self.entries.lock().expect("record cache lock").get_mut(key) {
            entry.record = None;
            entry.refreshing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const TTL: Duration = Duration::from_secs(5);

    #[test]
    fn a_record_is_fresh_then_refreshed_by_one_reader_then_missing_at_its_ttl() {
        let cache = RecordCache::new(TTL);
        let now = Instant::now();
        assert_eq!(cache.get(&"a", now), Cached::Missing);
        cache.refreshed(&"a", 1);
        let at = Instant::now();
        assert_eq!(cache.get(&"a", at), Cached::Fresh(1));
        // Past half the TTL: the first reader refreshes, the others just use it.
        let half = at + TTL / 2;
        assert_eq!(cache.get(&"a", half), Cached::Refresh(1));
        assert_eq!(cache.get(&"a", half), Cached::Fresh(1));
        // A failed refresh lets the next reader try again.
        cache.refresh_failed(&"a");
        assert_eq!(cache.get(&"a", half), Cached::Refresh(1));
        // Never served at or past its TTL.
        assert_eq!(cache.get(&"a", at + TTL), Cached::Missing);
        // A refresh starts the TTL over.
        cache.refreshed(&"a", 2);
        assert_eq!(cache.get(&"a", Instant::now()), Cached::Fresh(2));
        cache.forget(&"a");
        assert_eq!(cache.get(&"a", Instant::now()), Cached::Missing);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readers_missing_the_same_record_at_once_load_it_once() {
        let cache = Arc::new(RecordCache::new(TTL));
        let loads = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..8)
            .map(|_| {
                let (cache, loads) = (cache.clone(), loads.clone());
                tokio::spawn(async move {
                    cache
                        .load(&"type", || async {
                            loads.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok::<_, ()>(7)
                        })
                        .await
                })
            })
            .collect();
        for reader in readers {
            assert_eq!(reader.await.unwrap(), Ok(7));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failed_load_stores_nothing_and_the_next_reader_loads_again() {
        let cache = RecordCache::new(TTL);
        let failed: Result<i32, &str> = cache.load(&"t", || async { Err("down") }).await;
        assert_eq!(failed, Err("down"));
        assert_eq!(cache.get(&"t", Instant::now()), Cached::Missing);
        let loaded: Result<i32, &str> = cache.load(&"t", || async { Ok(3) }).await;
        assert_eq!(loaded, Ok(3));
        assert_eq!(cache.get(&"t", Instant::now()), Cached::Fresh(3));
    }
}

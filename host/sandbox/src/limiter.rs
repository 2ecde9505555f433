//! [`TaskLimiter`]: the per-store `ResourceLimiter` that caps linear memory summed over
//! all memories of an instance (wasmtime's `StoreLimits` caps each memory separately) and
//! the size of any table, and remembers that a limit was hit so the attempt is reported as
//! `memory limit (…)` rather than as whatever trap the guest's allocator turned it into.
//!
//! Refusals are `Ok(false)` (the guest sees `memory.grow` return -1, as the spec allows),
//! never a host error. Must not know about outcomes or the rest of the store.

use wasmtime::ResourceLimiter;

/// Caps for one store, plus what was observed.
#[derive(Debug)]
pub(crate) struct TaskLimiter {
    memory_limit: u64,
    table_limit: u64,
    max_instances: usize,
    max_memories: usize,
    max_tables: usize,
    /// Bytes of linear memory granted so far, over all memories.
    memory_total: u64,
    /// The last grant, taken back if wasmtime then fails the growth itself.
    last_grant: u64,
    memory_hit: bool,
    table_hit: bool,
}

/// Per-store counts of wasmtime objects (bounded by the pool as well).
#[derive(Clone, Copy, Debug)]
pub(crate) struct InstanceCaps {
    pub instances: usize,
    pub memories: usize,
    pub tables: usize,
}

impl TaskLimiter {
    pub(crate) fn new(memory_limit: u64, table_limit: u64, caps: InstanceCaps) -> Self {
        TaskLimiter {
            memory_limit,
            table_limit,
            max_instances: caps.instances,
            max_memories: caps.memories,
            max_tables: caps.tables,
            memory_total: 0,
            last_grant: 0,
            memory_hit: false,
            table_hit: false,
        }
    }

    /// True once a memory growth was refused for crossing the memory limit.
    pub(crate) fn memory_limit_hit(&self) -> bool {
        self.memory_hit
    }

    /// True once a table growth was refused for crossing the table limit.
    pub(crate) fn table_limit_hit(&self) -> bool {
        self.table_hit
    }

    /// Linear memory currently granted, summed over memories (it never shrinks).
    pub(crate) fn memory_bytes(&self) -> u64 {
        self.memory_total
    }
}

impl ResourceLimiter for TaskLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let delta = desired.saturating_sub(current) as u64;
        if self.memory_total.saturating_add(delta) > self.memory_limit {
            self.memory_hit = true;
            return Ok(false);
        }
        if maximum.is_some_and(|max| desired > max) {
            // The memory's own maximum (or the pool's) refuses it; not our limit.
            return Ok(false);
        }
        self.memory_total += delta;
        self.last_grant = delta;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_total = self.memory_total.saturating_sub(self.last_grant);
        self.last_grant = 0;
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.table_limit {
            self.table_hit = true;
            return Ok(false);
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        self.max_instances
    }

    fn memories(&self) -> usize {
        self.max_memories
    }

    fn tables(&self) -> usize {
        self.max_tables
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 64 * 1024;
    const CAPS: InstanceCaps = InstanceCaps {
        instances: 10,
        memories: 4,
        tables: 4,
    };

    #[test]
    fn memory_limit_is_summed_over_memories() {
        let mut l = TaskLimiter::new(10 * PAGE as u64, 100, CAPS);
        // Two memories of 4 pages each: fine.
        assert!(l.memory_growing(0, 4 * PAGE, None).unwrap());
        assert!(l.memory_growing(0, 4 * PAGE, None).unwrap());
        assert_eq!(l.memory_bytes(), 8 * PAGE as u64);
        // A third memory's 4 pages would make 12 > 10.
        assert!(!l.memory_growing(0, 4 * PAGE, None).unwrap());
        assert!(l.memory_limit_hit());
        // Growing the first by 2 pages fits exactly.
        assert!(l.memory_growing(4 * PAGE, 6 * PAGE, None).unwrap());
        assert_eq!(l.memory_bytes(), 10 * PAGE as u64);
    }

    #[test]
    fn own_maximum_is_not_our_limit() {
        let mut l = TaskLimiter::new(100 * PAGE as u64, 100, CAPS);
        assert!(!l.memory_growing(PAGE, 3 * PAGE, Some(2 * PAGE)).unwrap());
        assert!(!l.memory_limit_hit());
        assert_eq!(l.memory_bytes(), 0);
    }

    #[test]
    fn failed_growth_is_given_back() {
        let mut l = TaskLimiter::new(100 * PAGE as u64, 100, CAPS);
        assert!(l.memory_growing(0, 2 * PAGE, None).unwrap());
        l.memory_grow_failed(wasmtime::Error::msg("mmap failed"))
            .unwrap();
        assert_eq!(l.memory_bytes(), 0);
    }

    #[test]
    fn table_limit_is_per_table() {
        let mut l = TaskLimiter::new(PAGE as u64, 100, CAPS);
        assert!(l.table_growing(0, 100, None).unwrap());
        assert!(!l.table_limit_hit());
        assert!(!l.table_growing(100, 101, None).unwrap());
        assert!(l.table_limit_hit());
    }
}

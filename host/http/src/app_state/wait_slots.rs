//! How many `GET /v1/jobs/{id}?wait=` requests each tenant has open in this process, so
//! that one tenant cannot hold an unbounded number of waits (each is a connection and a
//! task; the database holds none of them).
//!
//! Owns: the per-tenant counts and the guard that gives a slot back. Must not: wait
//! (`sluice_store::FinishWaits` does) or answer requests.

use std::collections::HashMap;
use std::sync::Mutex;

/// Most waits one tenant may have open at once in one `sluice serve`; one more is
/// answered 429.
pub const MAX_WAITS_PER_TENANT: usize = 1000;

/// The open waits per tenant.
#[derive(Debug, Default)]
pub struct WaitSlots {
    open: Mutex<HashMap<String, usize>>,
}

/// One open wait; dropping it gives the slot back.
#[derive(Debug)]
pub struct WaitSlot<'a> {
    slots: &'a WaitSlots,
    tenant: String,
}

impl WaitSlots {
    /// A slot for `tenant`, or `None` when it has [`MAX_WAITS_PER_TENANT`] open.
    pub fn take(&self, tenant: &str) -> Option<WaitSlot<'_>> {
        self.take_up_to(tenant, MAX_WAITS_PER_TENANT)
    }

    fn take_up_to(&self, tenant: &str, max: usize) -> Option<WaitSlot<'_>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(tenant.to_owned()).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(WaitSlot {
            slots: self,
            tenant: tenant.to_owned(),
        })
    }

    /// Waits open for `tenant`.
    pub fn open(&self, tenant: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for WaitSlot<'_> {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.tenant) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_at_its_cap_is_refused_until_a_slot_comes_back() {
        let slots = WaitSlots::default();
        let first = slots.take_up_to("acme", 2).unwrap();
        let second = slots.take_up_to("acme", 2).unwrap();
        assert!(slots.take_up_to("acme", 2).is_none());
        // Another tenant is not affected.
        assert!(slots.take_up_to("globex", 2).is_some());
        drop(first);
        assert_eq!(slots.open("acme"), 1);
        let third = slots.take_up_to("acme", 2);
        assert!(third.is_some());
        drop((second, third));
        assert_eq!(slots.open("acme"), 0);
        assert!(slots.open.lock().unwrap().is_empty());
    }
}

//! The cap on one durable job's journal: the type's `journal_bytes` or the host default,
//! never above the tenant's `max_journal_bytes`, and which of them set it (the fatal
//! error of a journal that reaches it names that setting, `docs/durable.md`).
//!
//! Must not: read anything (the registry hands it the records) or write the journal
//! (`durable` does, through the store's fenced append).

use sluice_store::TenantLimits;

/// The cap on a durable job's journal when its type sets none (`docs/durable.md`).
pub const DEFAULT_JOURNAL_BYTES: u64 = 16 << 20;

/// The cap on a durable job's journal, and what set it (named when a journal reaches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalCap {
    /// Bytes one job's journal may hold.
    pub bytes: u64,
    /// The setting that gave `bytes`, as a user changes it.
    pub set_by: &'static str,
}

impl JournalCap {
    /// The type's `journal_bytes` (`None`: the host default), never above the tenant's
    /// `max_journal_bytes`.
    pub fn of(journal_bytes: Option<i64>, caps: &TenantLimits) -> JournalCap {
        let own = match journal_bytes {
            Some(b) => JournalCap {
                bytes: b.max(1) as u64,
                set_by: "the type's journal_bytes, `sluice types set --journal-bytes`",
            },
            None => JournalCap {
                bytes: DEFAULT_JOURNAL_BYTES,
                set_by: "the host default; raise it with `sluice types set --journal-bytes`",
            },
        };
        match caps.max_journal_bytes {
            Some(cap) if (cap.max(1) as u64) < own.bytes => JournalCap {
                bytes: cap.max(1) as u64,
                set_by: "the tenant's max_journal_bytes, `sluice tenants limits --max-journal-bytes`",
            },
            _ => own,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap_of(journal_bytes: Option<i64>, max: Option<i64>) -> JournalCap {
        let caps = TenantLimits {
            max_journal_bytes: max,
            ..TenantLimits::default()
        };
        JournalCap::of(journal_bytes, &caps)
    }

    #[test]
    fn the_smaller_of_the_type_and_the_tenant_cap_applies_and_is_named() {
        assert_eq!(cap_of(None, None).bytes, DEFAULT_JOURNAL_BYTES);
        assert!(cap_of(None, None).set_by.contains("host default"));
        assert_eq!(cap_of(Some(1000), None).bytes, 1000);
        assert!(cap_of(Some(1000), None).set_by.contains("--journal-bytes"));
        let tenant = cap_of(Some(1 << 30), Some(4096));
        assert_eq!(tenant.bytes, 4096);
        assert!(
            tenant.set_by.contains("--max-journal-bytes"),
            "{}",
            tenant.set_by
        );
        // The tenant's cap bounds the host default too, and never raises a type's.
        assert_eq!(cap_of(None, Some(4096)).bytes, 4096);
        assert_eq!(cap_of(Some(1000), Some(4096)).bytes, 1000);
    }
}

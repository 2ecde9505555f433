-- A tenant's cap on one durable job's journal (issue #43: "a type limit with a tenant
-- cap"). NULL: no cap beyond the type's `journal_bytes` or the host default (16 MiB).
-- `sluice types set --journal-bytes` above it is refused; a type that sets none runs
-- under the smaller of the host default and this cap (docs/durable.md).
ALTER TABLE sluice.tenants
    ADD COLUMN max_journal_bytes bigint CHECK (max_journal_bytes > 0);
COMMENT ON COLUMN sluice.tenants.max_journal_bytes IS 'Cap on one durable job''s journal, in bytes (NULL: the type''s journal_bytes or the host default). See migrations/0025_tenant_journal_cap.sql and docs/durable.md.';

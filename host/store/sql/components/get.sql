-- One component's metadata.
-- $1 component id (int8).
SELECT id, tenant, name, version, sha256, size, contract, created_at
FROM sluice.components
WHERE id = $1

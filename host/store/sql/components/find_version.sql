-- One version of a component.
-- $1 tenant (text), $2 name (text), $3 version (text).
SELECT id, tenant, name, version, sha256, size, contract, created_at
FROM sluice.components
WHERE tenant = $1 AND name = $2 AND version = $3

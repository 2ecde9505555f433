-- The most recently uploaded version of a component name.
-- $1 tenant (text), $2 name (text).
SELECT id, tenant, name, version, sha256, size, contract, created_at
FROM sluice.components
WHERE tenant = $1 AND name = $2
ORDER BY id DESC
LIMIT 1

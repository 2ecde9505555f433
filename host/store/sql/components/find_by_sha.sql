-- The newest version of a component name with these bytes, if any.
-- $1 tenant (text), $2 name (text), $3 sha256, lowercase hex (text).
SELECT id, tenant, name, version, sha256, size, contract, created_at
FROM sluice.components
WHERE tenant = $1 AND name = $2 AND sha256 = $3
ORDER BY id DESC
LIMIT 1

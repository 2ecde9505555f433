-- Components of one tenant or all, by tenant, name and upload order.
-- $1 tenant or NULL for all (text).
SELECT id, tenant, name, version, sha256, size, contract, created_at
FROM sluice.components
WHERE ($1::text IS NULL OR tenant = $1)
ORDER BY tenant, name, id

-- A tenant's secrets, by name: names, sizes, key ids and times, never the sealed values.
-- $1 tenant (text).
SELECT name, key_id, size, created_at, updated_at
FROM sluice.secrets
WHERE tenant = $1
ORDER BY name

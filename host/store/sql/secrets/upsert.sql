-- Sets (inserts or replaces) a tenant's secret, sealed by the host, in one statement; no
-- row (and nothing written) when the tenant does not exist. created_at is kept on replace.
-- $1 tenant (text), $2 name (text), $3 key id (text), $4 nonce (bytea, 12 bytes),
-- $5 ciphertext (bytea), $6 size of the plain value in bytes (int4).
INSERT INTO sluice.secrets AS s (tenant, name, key_id, nonce, ciphertext, size)
SELECT t.id, $2, $3, $4, $5, $6
FROM sluice.tenants t
WHERE t.id = $1
ON CONFLICT (tenant, name) DO UPDATE SET
    key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
    size = EXCLUDED.size, updated_at = now()
RETURNING name, key_id, size, created_at, updated_at

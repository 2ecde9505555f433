-- Stores a new API token's hash; inserts only when the tenant exists (no row otherwise:
-- an unknown tenant).
-- $1 tenant (text), $2 SHA-256 of the token (bytea, 32 bytes), $3 admin (bool),
-- $4 label or NULL (text), $5 read-only (bool: GET and HEAD only, migration 0018).
INSERT INTO sluice.api_tokens (tenant, token_hash, admin, label, read_only)
SELECT t.id, $2, $3, $4, $5 FROM sluice.tenants t WHERE t.id = $1
RETURNING id, tenant, admin, read_only, label, created_at, revoked_at, last_used_at

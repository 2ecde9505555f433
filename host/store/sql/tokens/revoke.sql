-- Revokes a tenant's token; scoped by tenant (another tenant's id is "not found").
-- Revoking twice keeps the first revocation time.
-- $1 token id (int8), $2 tenant (text).
UPDATE sluice.api_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 AND tenant = $2
RETURNING id, tenant, admin, read_only, label, created_at, revoked_at, last_used_at

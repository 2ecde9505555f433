-- A tenant's tokens (revoked ones too), oldest first. No secrets are stored.
-- $1 tenant (text).
SELECT id, tenant, admin, read_only, label, created_at, revoked_at, last_used_at
FROM sluice.api_tokens
WHERE tenant = $1
ORDER BY id

-- The identity behind a bearer token (no row: unknown or revoked).
-- $1 SHA-256 of the token (bytea).
SELECT id AS token_id, tenant, admin, read_only
FROM sluice.api_tokens
WHERE token_hash = $1 AND revoked_at IS NULL

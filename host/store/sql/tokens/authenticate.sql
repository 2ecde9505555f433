-- The identity behind a bearer token (no row: unknown or revoked), and a record that it
-- was used: last_used_at is written only when it is unset or over a minute old, so a
-- busy token costs one write a minute, not one per request (migration 0019). A
-- concurrent request that finds the row just written re-checks the condition after the
-- lock and writes nothing.
-- $1 SHA-256 of the token (bytea).
WITH found AS (
    SELECT id, tenant, admin, read_only
    FROM sluice.api_tokens
    WHERE token_hash = $1 AND revoked_at IS NULL
),
touched AS (
    UPDATE sluice.api_tokens t SET last_used_at = now()
    FROM found f
    WHERE t.id = f.id AND t.revoked_at IS NULL
      AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
    RETURNING t.id
)
SELECT f.id AS token_id, f.tenant, f.admin, f.read_only
FROM found f

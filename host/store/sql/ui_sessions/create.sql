-- A new dashboard session, acting for its home tenant, and a bounded sweep of expired
-- sessions (at most 1000 per sign-in, oldest expiry first; a data-modifying CTE runs
-- whether or not the INSERT reads it). Inserts only when the tenant exists and, for a
-- session made from an API token, when that token is not revoked and is the identity it
-- claims (same tenant and admin flag, and not read-only unless the session is): no row
-- otherwise.
-- $1 SHA-256 of the cookie secret (bytea), $2 API token id or NULL (int8), $3 SHA-256
-- of the environment admin token or NULL (bytea), $4 tenant (text), $5 admin (bool),
-- $6 read-only (bool), $7 CSRF token (text), $8 lifetime in microseconds (int8).
WITH swept AS (
    DELETE FROM sluice.ui_sessions
    WHERE id IN (SELECT id FROM sluice.ui_sessions
                 WHERE expires_at <= now()
                 ORDER BY expires_at
                 LIMIT 1000)
    RETURNING id
)
INSERT INTO sluice.ui_sessions (secret_hash, token_id, env_admin_hash, home_tenant,
                                acting_tenant, admin, read_only, csrf_token, expires_at)
SELECT $1, $2, $3, t.id, t.id, $5, $6, $7, now() + $8 * interval '1 microsecond'
FROM sluice.tenants t
WHERE t.id = $4
  AND ($2::int8 IS NULL OR EXISTS (
        SELECT 1 FROM sluice.api_tokens a
        WHERE a.id = $2 AND a.revoked_at IS NULL AND a.tenant = $4 AND a.admin = $5
          AND (NOT a.read_only OR $6)))
RETURNING id, token_id, env_admin_hash, home_tenant, acting_tenant, admin, read_only,
          csrf_token, expires_at

-- The live session behind a cookie secret: no row when the secret is unknown, the
-- session expired, or the API token it was made from is revoked (or gone).
-- $1 SHA-256 of the cookie secret (bytea).
SELECT s.id, s.token_id, s.env_admin_hash, s.home_tenant, s.acting_tenant, s.admin,
       s.read_only, s.csrf_token, s.expires_at
FROM sluice.ui_sessions s
WHERE s.secret_hash = $1 AND s.expires_at > now()
  AND (s.token_id IS NULL OR EXISTS (
        SELECT 1 FROM sluice.api_tokens a
        WHERE a.id = s.token_id AND a.revoked_at IS NULL))

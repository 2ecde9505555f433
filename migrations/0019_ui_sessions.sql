-- Sluice schema, part 19: the web dashboard's store (issue 20, `/ui` on `sluice serve`).
--
-- * sluice.ui_sessions: one row per signed-in browser. The cookie carries a random
--   secret; only its SHA-256 is stored (like api_tokens.token_hash), so a copy of the
--   table signs nobody in. A session is made from an API token (token_id; revoking the
--   token ends its sessions at once, because every lookup joins the token and requires
--   revoked_at IS NULL, and deleting it deletes them) or from the serving process's
--   environment admin token (token_id NULL, env_admin_hash its SHA-256, so a process
--   started with another admin token refuses the session). home_tenant is the tenant of
--   the identity, acting_tenant the one the pages show (only an admin session may
--   switch it). csrf_token is the value every state-changing form must echo.
-- * api_tokens.last_used_at: when the token last authenticated, to the minute (the
--   authentication statement writes it at most once a minute per token, never a write
--   per request). Shown by the dashboard's tenants page.
-- * sluice.payload_jsonb(bytea): a payload read as JSON, NULL when the bytes are not
--   UTF-8 JSON; the dashboard's payload filter (`payload_jsonb(payload) @> $n`) uses it.
-- * attempt_history_failed_idx: the failed attempts by when they ended (see below).
--
-- Upgrading a live database: a new table, ADD COLUMN without a default (no rewrite), a
-- new function and a partial index on the attempt history (CREATE INDEX takes a SHARE
-- lock on attempt_history for the build: finishing attempts wait for it; the history is
-- bounded by retention, so the build is short).

CREATE TABLE sluice.ui_sessions (
    id             bigserial   PRIMARY KEY,
    -- SHA-256 of the cookie secret.
    secret_hash    bytea       NOT NULL UNIQUE
                   CONSTRAINT ui_sessions_secret_hash_length CHECK (octet_length(secret_hash) = 32),
    token_id       bigint      REFERENCES sluice.api_tokens (id) ON DELETE CASCADE,
    env_admin_hash bytea       CONSTRAINT ui_sessions_env_admin_hash_length CHECK (octet_length(env_admin_hash) = 32),
    home_tenant    text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    acting_tenant  text        NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    admin          boolean     NOT NULL,
    read_only      boolean     NOT NULL,
    csrf_token     text        NOT NULL
                   CONSTRAINT ui_sessions_csrf_token_length CHECK (char_length(csrf_token) BETWEEN 32 AND 128),
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    -- Made from exactly one of: an API token, the environment admin token.
    CONSTRAINT ui_sessions_one_source CHECK ((token_id IS NULL) <> (env_admin_hash IS NULL)),
    -- Only an admin session acts for another tenant than its own.
    CONSTRAINT ui_sessions_tenant_switch_admin_only CHECK (admin OR acting_tenant = home_tenant)
);

-- The bounded sweep of expired sessions that every sign-in runs.
CREATE INDEX ui_sessions_expires_at_idx ON sluice.ui_sessions (expires_at);
-- Revoking is a lookup join, but deleting a token (or its tenant) cascades by token_id.
CREATE INDEX ui_sessions_token_id_idx ON sluice.ui_sessions (token_id)
    WHERE token_id IS NOT NULL;

COMMENT ON TABLE sluice.ui_sessions IS
    'Dashboard sign-ins: the SHA-256 of each cookie secret, the identity it was made from and the tenant it acts for.';

ALTER TABLE sluice.api_tokens ADD COLUMN last_used_at timestamptz;

-- A payload as JSON for containment filters; NULL (never an error) for bytes that are
-- not UTF-8 or not JSON (payloads are opaque bytes: JSON is only a convention). The
-- EXCEPTION block costs a subtransaction per call, without an XID (it writes nothing):
-- fine for a dashboard's filtered scan, not for a hot path.
CREATE FUNCTION sluice.payload_jsonb(p bytea) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$
BEGIN
    RETURN convert_from(p, 'UTF8')::jsonb;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$fn$;

COMMENT ON FUNCTION sluice.payload_jsonb(bytea) IS
    'A job payload read as JSON, or NULL when the bytes are not UTF-8 JSON. See migrations/0019_ui_sessions.sql.';

-- The dashboard's throughput chart counts, per minute of the last hours, the attempts
-- that ended in a failure. attempt_history had only (job_id, id): the count would read
-- the whole history (every retried, dead, released and reaped attempt retention keeps).
-- This partial index holds only failed attempts, by end time, so the chart reads the
-- window's entries; the hourly lease-expiration figure of sluice stats can use it too.
-- Completed jobs need no new index: jobs_finished_idx (state, finished_at) serves them.
CREATE INDEX attempt_history_failed_idx ON sluice.attempt_history (finished_at)
    WHERE outcome IN ('retry', 'dead', 'lease_expired');

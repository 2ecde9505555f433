-- Every dead job (of a tenant / job type) back to pending. Jobs whose unfinished-scoped
-- key is now held by another job are skipped, and of several dead jobs sharing such a key
-- only the newest is retried, so the unique index is never violated (a concurrent enqueue
-- can still take a key in between: the caller runs the statement again).
-- $1 tenant or NULL (text), $2 job type or NULL (text), $3 jobs channel ('sluice_jobs').
WITH locked AS (
    SELECT id, tenant, idempotency_key, key_scope
    FROM sluice.jobs j
    WHERE state = 'dead'
      AND ($1::text IS NULL OR tenant = $1)
      AND ($2::text IS NULL OR job_type = $2)
      AND (idempotency_key IS NULL OR key_scope = 'retained' OR NOT EXISTS (
            SELECT 1 FROM sluice.jobs h
            WHERE h.tenant = j.tenant AND h.idempotency_key = j.idempotency_key
              AND (h.key_scope = 'retained' OR h.state IN ('pending', 'running', 'waiting'))))
    FOR UPDATE SKIP LOCKED
),
chosen AS (
    SELECT id FROM (
        SELECT id, idempotency_key, key_scope,
               row_number() OVER (PARTITION BY tenant, idempotency_key ORDER BY id DESC) AS rn
        FROM locked
    ) x
    WHERE idempotency_key IS NULL OR key_scope = 'retained' OR rn = 1
),
moved AS (
    UPDATE sluice.jobs j
    SET state = 'pending', attempt = 0, snoozes = 0, run_at = now(), finished_at = NULL,
        updated_at = now()
    FROM chosen c
    WHERE j.id = c.id AND j.state = 'dead'
    RETURNING j.id
),
notified AS (
    SELECT pg_notify($3, '') FROM moved LIMIT 1
)
SELECT count(*) AS retried, (SELECT count(*) FROM notified) AS notified FROM moved

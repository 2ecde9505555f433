-- dead|cancelled → pending for a set of one tenant's jobs (the dashboard's bulk retry):
-- like admin/retry.sql per row (attempts reset, due now, finished_at cleared), in one
-- statement. A row whose unfinished-scoped key another job holds now is skipped, and of
-- several rows sharing such a key only the newest goes back, so the unique index is not
-- violated (a concurrent enqueue can still take a key in between: the caller runs the
-- statement again). Rows are locked in id order. One notice for the batch.
-- Returns the tenant's jobs among the ids (any state) and how many went back.
-- $1 job ids (int8[]), $2 tenant (text), $3 jobs channel ('sluice_jobs').
WITH target AS (
    SELECT id, idempotency_key, key_scope
    FROM sluice.jobs
    WHERE id = ANY ($1::int8[]) AND tenant = $2 AND state IN ('dead', 'cancelled')
    ORDER BY id
    FOR UPDATE
),
chosen AS (
    SELECT id FROM (
        SELECT t.id, t.idempotency_key, t.key_scope,
               row_number() OVER (PARTITION BY t.idempotency_key ORDER BY t.id DESC) AS rn
        FROM target t
        WHERE t.idempotency_key IS NULL OR t.key_scope = 'retained' OR NOT EXISTS (
                SELECT 1 FROM sluice.jobs h
                WHERE h.tenant = $2 AND h.idempotency_key = t.idempotency_key
                  AND (h.key_scope = 'retained' OR h.state IN ('pending', 'running', 'waiting')))
    ) x
    WHERE idempotency_key IS NULL OR key_scope = 'retained' OR rn = 1
),
moved AS (
    UPDATE sluice.jobs j
    SET state = 'pending', attempt = 0, snoozes = 0, run_at = now(), finished_at = NULL,
        updated_at = now()
    FROM chosen c
    WHERE j.id = c.id AND j.tenant = $2 AND j.state IN ('dead', 'cancelled')
    RETURNING j.id
),
notified AS (
    SELECT pg_notify($3, '') FROM moved LIMIT 1
)
SELECT (SELECT count(*) FROM sluice.jobs WHERE id = ANY ($1::int8[]) AND tenant = $2) AS matched,
       (SELECT count(*) FROM moved) AS changed,
       (SELECT count(*) FROM notified) AS notified

-- dead|cancelled → pending with a fresh set of attempts (and of snoozes), due now. Returns
-- the state found and whether it changed; a unique violation on jobs_idempotency_key_uidx
-- means another job holds the row's unfinished-scoped key now.
-- $1 job id (int8), $2 tenant or NULL for any (text), $3 jobs channel ('sluice_jobs').
WITH target AS (
    SELECT id, state FROM sluice.jobs
    WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)
    FOR UPDATE
),
moved AS (
    UPDATE sluice.jobs j
    SET state = 'pending', attempt = 0, snoozes = 0, run_at = now(), finished_at = NULL,
        updated_at = now()
    FROM target t
    WHERE j.id = t.id AND t.state IN ('dead', 'cancelled')
    RETURNING j.id
),
notified AS (
    SELECT pg_notify($3, '') FROM moved
)
SELECT t.state, m.id IS NOT NULL AS changed, (SELECT count(*) FROM notified) AS notified
FROM target t
LEFT JOIN moved m ON m.id = t.id

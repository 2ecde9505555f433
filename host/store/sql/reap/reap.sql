-- running → pending | dead | cancelled for jobs whose lease expired (their host died or
-- stalled). Oldest expiries first, SKIP LOCKED so several reapers (one per host) never
-- block each other or a worker finishing the job right now. The attempt is not given
-- back (a job that kills its host must not be retried forever); it moves into
-- sluice.attempt_history as `lease_expired`.
-- $1 limit (int8), $2 notification channel ('sluice_jobs').
WITH held AS (
    SELECT id, locked_by, locked_until,
           attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
    FROM sluice.jobs
    WHERE state = 'running' AND locked_until < now()
    ORDER BY locked_until
    LIMIT $1
    FOR UPDATE SKIP LOCKED
),
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN j.cancel_requested THEN 'cancelled'::sluice.job_state
                     WHEN j.attempt >= j.max_attempts THEN 'dead'
                     ELSE 'pending' END,
        finished_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts
                           THEN now() END,
        last_error = format('lease expired (held by %s until %s) on attempt %s of %s',
                            h.locked_by,
                            to_char(h.locked_until AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            j.attempt, j.max_attempts),
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(),
        -- The attempt leaves the row: it is archived below.
        attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = h.lease_token
    RETURNING j.id, j.tenant, j.job_type, j.state, j.attempt, j.max_attempts,
              h.locked_by AS worker, h.locked_until, j.last_error AS error,
              h.attempt AS ran_attempt, h.attempt_id AS ran_id,
              h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
              h.lease_token AS ran_token
),
history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
           'lease_expired', m.error, NULL::int8
    FROM moved m
),
notified AS (
    SELECT pg_notify($2, '') FROM moved WHERE state = 'pending' LIMIT 1
)
SELECT id, tenant, job_type, state, attempt, max_attempts, worker, locked_until, error,
       (SELECT count(*) FROM notified) AS notified
FROM moved
ORDER BY id

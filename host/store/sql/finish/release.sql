-- running → pending without using the attempt (host shutdown, infrastructure failure),
-- or running → cancelled if a cancel was requested meanwhile. `held` locks the row fenced
-- on id, state and lease token; the attempt moves into sluice.attempt_history as
-- `released` (or `cancelled`) with the reason.
-- $1 job id (int8), $2 lease token (uuid), $3 reason (text), $4 notification channel
-- ('sluice_jobs').
WITH held AS (
    SELECT id, cancel_requested,
           attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
    FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
    FOR UPDATE
),
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN h.cancel_requested THEN 'cancelled'::sluice.job_state
                     ELSE 'pending' END,
        attempt = CASE WHEN h.cancel_requested THEN j.attempt ELSE j.attempt - 1 END,
        finished_at = CASE WHEN h.cancel_requested THEN now() END,
        last_error = CASE WHEN h.cancel_requested THEN 'cancelled by operator'
                          ELSE j.last_error END,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(),
        -- The attempt leaves the row: it is archived below.
        attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, j.state,
              h.attempt AS ran_attempt, h.attempt_id AS ran_id,
              h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
              h.lease_token AS ran_token
),
history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
           CASE WHEN m.state = 'pending' THEN 'released' ELSE 'cancelled' END, $3, NULL::int8
    FROM moved m
),
notified AS (
    SELECT pg_notify($4, '') FROM moved WHERE state = 'pending'
)
SELECT id, state, (SELECT count(*) FROM notified) AS notified FROM moved

-- running → cancelled by the worker, after it interrupted a job whose cancel was
-- requested. Fenced on id, state and lease token; the attempt moves into
-- sluice.attempt_history as `cancelled`, and its log (if it logged anything) into
-- sluice.attempt_logs (migration 0017).
-- $1 job id (int8), $2 lease token (uuid), $3 reason, kept as last_error (text),
-- $4 the attempt's log (bytea, NULL when it logged nothing), $5 log bytes dropped at the
-- cap (int8).
WITH held AS (
    SELECT id, attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
    FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
    FOR UPDATE
),
moved AS (
    UPDATE sluice.jobs j
    SET state = 'cancelled', finished_at = now(), last_error = $3,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(),
        -- The attempt leaves the row: it is archived below.
        attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
    FROM held h
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id,
              h.attempt AS ran_attempt, h.attempt_id AS ran_id,
              h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
              h.lease_token AS ran_token
),
history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
           'cancelled', $3, NULL::int8
    FROM moved m
),
logged AS (
    INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
    SELECT m.id, m.ran_id, m.ran_attempt, $4::bytea, coalesce($5::int8, 0)
    FROM moved m
    WHERE $4::bytea IS NOT NULL
)
SELECT id FROM moved

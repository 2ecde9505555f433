-- running → waiting | pending | cancelled: a run that suspended (migration 0027, durable
-- waits and snoozes), in the transaction suspend.rs opened with finish/suspend_lock.sql.
-- Fenced on id, state and lease token like finish/release.sql; no row: nothing written.
-- The attempt is given back (attempt - 1, so the next claim's + 1 yields the same number)
-- and leaves the row for sluice.attempt_history as `suspended` with the cause ($8), its
-- log into sluice.attempt_logs when it logged anything. Where the job goes:
-- * cancelled, when a cancel was requested meanwhile (as a release does; the attempt is
--   kept and archived as `cancelled`);
-- * pending, for a snooze (run_at = now() + $7, snoozes + 1), or when what it would wait
--   for is already there (`ready`): a sleep's instant or a signal's deadline that has
--   passed, an unconsumed signal of that name, every awaited job finished (or gone; an
--   id standing for another job, follow_up_aliases of migration 0029, as that job);
-- * waiting otherwise: run_at = the sleep's instant, the signal's deadline, or the end
--   of jobs_run_at_range when only a signal or the awaited jobs can wake it; waiting_for
--   or awaited say for what (cleared whenever it leaves waiting).
-- Listeners are told when it goes pending ('' if due now, else the microseconds until).
-- $1 job id (int8), $2 lease token (uuid), $3 kind ('at', 'signal', 'jobs', 'snooze'),
-- $4 the sleep's instant or the signal's deadline (timestamptz, NULL: none), $5 signal
-- name (text), $6 awaited job ids (int8[]), $7 snooze delay in microseconds (int8), $8
-- reason, kept in the history (text), $9 fuel used (int8, NULL: not measured), $10 the
-- attempt's log (bytea, NULL when it logged nothing), $11 log bytes dropped at the cap
-- (int8), $12 notification channel ('sluice_jobs').
WITH held AS (
    SELECT id, cancel_requested,
           attempt, attempt_id, attempt_started_at, attempt_worker, lease_token
    FROM sluice.jobs
    WHERE id = $1 AND state = 'running' AND lease_token = $2
    FOR UPDATE
),
ready AS (
    SELECT CASE $3::text
               WHEN 'at' THEN coalesce($4::timestamptz <= now(), true)
               WHEN 'signal' THEN coalesce($4::timestamptz <= now(), false)
                   OR EXISTS (SELECT 1 FROM sluice.signals s
                              WHERE s.job_id = $1 AND s.name = $5::text
                                AND s.consumed_seq IS NULL)
               WHEN 'jobs' THEN NOT EXISTS (
                   SELECT 1 FROM sluice.jobs c
                   WHERE c.id = ANY ($6::int8[] || ARRAY(
                             SELECT a.job_id FROM sluice.follow_up_aliases a
                             WHERE a.parent_id = $1 AND a.id = ANY ($6::int8[])))
                     AND c.state NOT IN ('completed', 'dead', 'cancelled'))
               ELSE false
           END AS now
),
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN h.cancel_requested THEN 'cancelled'::sluice.job_state
                     WHEN $3::text = 'snooze' OR r.now THEN 'pending'
                     ELSE 'waiting' END,
        attempt = CASE WHEN h.cancel_requested THEN j.attempt ELSE j.attempt - 1 END,
        run_at = CASE WHEN h.cancel_requested THEN j.run_at
                      WHEN $3::text = 'snooze' THEN now() + $7::int8 * interval '1 microsecond'
                      WHEN $3::text = 'at' THEN $4::timestamptz
                      WHEN r.now THEN now()
                      ELSE coalesce($4::timestamptz,
                                    timestamptz '9999-12-31 23:59:59.999999+00') END,
        waiting_for = CASE WHEN NOT h.cancel_requested AND NOT r.now AND $3::text = 'signal'
                           THEN $5::text END,
        awaited = CASE WHEN NOT h.cancel_requested AND NOT r.now AND $3::text = 'jobs'
                       THEN $6::int8[] END,
        snoozes = j.snoozes
                  + CASE WHEN NOT h.cancel_requested AND $3::text = 'snooze' THEN 1 ELSE 0 END,
        finished_at = CASE WHEN h.cancel_requested THEN now() END,
        last_error = CASE WHEN h.cancel_requested THEN 'cancelled by operator'
                          ELSE j.last_error END,
        locked_by = NULL, locked_until = NULL, lease_token = NULL, cancel_requested = false,
        updated_at = now(),
        -- The attempt leaves the row: it is archived below.
        attempt_id = NULL, attempt_started_at = NULL, attempt_worker = NULL, attempt_fuel = NULL
    FROM held h, ready r
    WHERE j.id = h.id AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, j.state, j.run_at,
              h.attempt AS ran_attempt, h.attempt_id AS ran_id,
              h.attempt_started_at AS ran_started_at, h.attempt_worker AS ran_worker,
              h.lease_token AS ran_token
),
history AS (
    INSERT INTO sluice.attempt_history
        (id, job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error, fuel_used)
    SELECT m.ran_id, m.id, m.ran_attempt, m.ran_token, m.ran_worker, m.ran_started_at, now(),
           CASE WHEN m.state = 'cancelled' THEN 'cancelled' ELSE 'suspended' END, $8::text,
           $9::int8
    FROM moved m
),
logged AS (
    INSERT INTO sluice.attempt_logs (job_id, attempt_id, attempt, log, dropped_bytes)
    SELECT m.id, m.ran_id, m.ran_attempt, $10::bytea, coalesce($11::int8, 0)
    FROM moved m
    WHERE $10::bytea IS NOT NULL
),
notified AS (
    SELECT pg_notify($12::text,
                     CASE WHEN m.run_at <= now() THEN ''
                          ELSE ceil(extract(epoch FROM m.run_at - now()) * 1000000)::int8::text
                     END)
    FROM moved m
    WHERE m.state = 'pending'
)
SELECT id, state, (SELECT count(*) FROM notified) AS notified FROM moved

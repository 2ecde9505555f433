-- The first statement of a suspension's transaction (suspend.rs): locks the running job,
-- fenced on id, state and lease token, before anything is written, and reads what the
-- transaction decides on before the suspension statement (finish/suspend.sql): the
-- snoozes so far (a snooze beyond the limit writes nothing) and whether a cancel was
-- requested (then no follow-up job is inserted). Holding the row lock from here on
-- serialises the suspension with sluice.signal(...), which locks the row first too, so
-- the suspension statement's snapshot sees every signal committed before it. No row: the
-- lease is lost.
-- Also the job type's own snooze limit (job_types.max_snoozes, migration 0031; NULL:
-- the host's default applies).
-- $1 job id (int8), $2 lease token (uuid).
SELECT j.snoozes, j.cancel_requested, jt.max_snoozes
FROM sluice.jobs j
LEFT JOIN sluice.job_types jt ON jt.tenant = j.tenant AND jt.name = j.job_type
WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
FOR UPDATE OF j

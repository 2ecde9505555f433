-- The first statement of a suspension's transaction (suspend.rs): locks the running job,
-- fenced on id, state and lease token, before anything is written, and reads what the
-- transaction decides on before the suspension statement (finish/suspend.sql): the
-- snoozes so far (a snooze beyond the limit writes nothing) and whether a cancel was
-- requested (then no follow-up job is inserted). Holding the row lock from here on
-- serialises the suspension with sluice.signal(...), which locks the row first too, so
-- the suspension statement's snapshot sees every signal committed before it. No row: the
-- lease is lost.
-- $1 job id (int8), $2 lease token (uuid).
SELECT snoozes, cancel_requested
FROM sluice.jobs
WHERE id = $1 AND state = 'running' AND lease_token = $2
FOR UPDATE

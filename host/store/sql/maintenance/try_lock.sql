-- Takes the session advisory lock of a fleet task without waiting (false: another host
-- holds it). Run on a dedicated connection that is closed after the run.
-- $1 lock key (int8; RETENTION_LOCK_KEY).
SELECT pg_try_advisory_lock($1)

-- Releases the session advisory lock taken by maintenance/try_lock.sql.
-- $1 lock key (int8).
SELECT pg_advisory_unlock($1)

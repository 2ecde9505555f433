-- Retention of the registry: deletes the rows of processes stopped, or lost (their
-- lease ran out without a heartbeat), more than $1 ago. The table holds one row per
-- process id, so one statement suffices.
-- $1 age in microseconds (int8).
DELETE FROM sluice.workers
WHERE coalesce(stopped_at, last_heartbeat + lease_us * interval '1 microsecond')
      < now() - $1 * interval '1 microsecond'

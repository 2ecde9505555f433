-- Takes this interval's run of a fleet task: moves last_started_at to now() only if the
-- last run started at least $2 microseconds ago (or never). No row: not due.
-- $1 task (text), $2 interval in microseconds (int8), $3 host (text).
INSERT INTO sluice.maintenance_runs AS m (task, last_started_at, started_by)
VALUES ($1, now(), $3)
ON CONFLICT (task) DO UPDATE SET last_started_at = excluded.last_started_at,
                                 started_by = excluded.started_by
WHERE m.last_started_at <= now() - $2 * interval '1 microsecond'
RETURNING task

-- Records the end of a fleet task's run.
-- $1 task (text), $2 rows deleted (int8).
UPDATE sluice.maintenance_runs SET last_finished_at = now(), last_deleted = $2 WHERE task = $1

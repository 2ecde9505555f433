-- Marks a job watched, so that the statement that finishes it notifies sluice_finished
-- with its id (trigger jobs_notify_finished, migration 0032). Marks only a job that is
-- not finished and not marked yet (a second waiter writes no new row version). The
-- waiter LISTENs before this runs and reads the job after it (finish_waits.rs).
-- $1 job id (int8), $2 tenant (text; NULL: any tenant)
UPDATE sluice.jobs SET watched = true
WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)
  AND NOT watched
  AND state NOT IN ('completed', 'dead', 'cancelled')

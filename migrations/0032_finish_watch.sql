-- Sluice schema, part 32: a job's finish can be awaited without polling (issue #41,
-- `GET /v1/jobs/{id}?wait=` and `sluice jobs wait`).
--
-- * sluice.jobs.watched: set by a waiter (store/sql/waits/watch_finish.sql) before it
--   sleeps; never cleared (a later finish of a retried job notifies again, harmlessly).
-- * sluice.notify_finished() and the row trigger jobs_notify_finished: when a watched job
--   enters `completed`, `dead` or `cancelled` (its completion, failure, the reaper, a
--   cancel), NOTIFY sluice_finished with the job's id. Waiters LISTEN on that channel
--   (one connection per `sluice serve`, shared by all its waits) and read the job again.
-- * The trigger's WHEN is false for every job nobody waits for, so the drain never calls
--   the function and sends no notification: a finish pays for a NOTIFY only when a
--   client is waiting for it.
-- * A waiter that LISTENs before it marks the job cannot miss the finish: either its mark
--   commits first and the finish sees it (the mark waits for the row lock of a finish in
--   flight and then sees the finished row, which it does not mark), or the finish
--   commits first and the waiter reads the finished job right after marking.
--
-- Upgrading a live database: a column with a constant default (no table rewrite), a
-- function and a trigger. Hosts of earlier versions finish jobs as before; the trigger
-- notifies for them too.

ALTER TABLE sluice.jobs ADD COLUMN watched boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN sluice.jobs.watched IS
    'A client waits for this job to finish: its finish notifies sluice_finished (migrations/0032_finish_watch.sql).';

-- The trigger's function (see the top of this file); reached only through its WHEN.
CREATE FUNCTION sluice.notify_finished()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('sluice_finished', NEW.id::text);
    RETURN NULL;
END
$function$;
CREATE TRIGGER jobs_notify_finished AFTER UPDATE OF state ON sluice.jobs
    FOR EACH ROW
    WHEN (NEW.watched
          AND NEW.state IN ('completed', 'dead', 'cancelled')
          AND OLD.state NOT IN ('completed', 'dead', 'cancelled'))
    EXECUTE FUNCTION sluice.notify_finished();
COMMENT ON FUNCTION sluice.notify_finished() IS
    'Trigger jobs_notify_finished: a watched job that finishes is announced on sluice_finished. See migrations/0032_finish_watch.sql.';

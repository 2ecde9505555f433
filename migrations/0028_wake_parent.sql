-- Sluice schema, part 28: a follow-up job's end wakes the parent that awaits it (issue #43,
-- durable.await-jobs; wit/README.md "Waking up": "a child's final statement ... wakes a
-- parent waiting on it when it is the last awaited one unfinished").
--
-- * sluice.wake_parent() and the row trigger jobs_wake_parent: when a job with a parent
--   enters `completed`, `dead` or `cancelled` (its completion, failure, the reaper, a
--   cancel), its parent, if `waiting` with this job among `awaited` and every other
--   awaited job finished (or gone), becomes pending now, `awaited` cleared, and the
--   claimers are told (NOTIFY sluice_jobs). Without it a parent waits for the waker
--   (waits/wake_waiting.sql), up to its period.
-- * The trigger's WHEN is false for every job without a parent and for any update that
--   is not a job's finish, so the hot path (claims, heartbeats, completions of jobs that
--   are no follow-ups) never calls the function. Its update locks the parent after the
--   child (nothing locks a waiting parent first and then its children, so no deadlock).
-- * Siblings finishing in concurrent transactions may each see the other unfinished
--   and both leave the parent waiting; the waker wakes it within its period.
--
-- Upgrading a live database: a function and a trigger. Hosts of earlier versions finish
-- jobs as before; the trigger wakes parents for them too.

-- The trigger's function (see the top of this file); reached only through its WHEN.
CREATE FUNCTION sluice.wake_parent()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE sluice.jobs p
    SET state = 'pending', run_at = least(p.run_at, now()), waiting_for = NULL,
        awaited = NULL, updated_at = now()
    WHERE p.id = NEW.parent_id AND p.state = 'waiting' AND NEW.id = ANY (p.awaited)
      AND NOT EXISTS (SELECT 1 FROM sluice.jobs c
                      WHERE c.id = ANY (p.awaited)
                        AND c.state NOT IN ('completed', 'dead', 'cancelled'));
    IF FOUND THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN NULL;
END
$function$;
CREATE TRIGGER jobs_wake_parent AFTER UPDATE OF state ON sluice.jobs
    FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL
          AND NEW.state IN ('completed', 'dead', 'cancelled')
          AND OLD.state NOT IN ('completed', 'dead', 'cancelled'))
    EXECUTE FUNCTION sluice.wake_parent();
COMMENT ON FUNCTION sluice.wake_parent() IS
    'Trigger jobs_wake_parent: a follow-up job that finishes wakes its waiting parent when it was the last job the parent awaits. See migrations/0028_wake_parent.sql.';

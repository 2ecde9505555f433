-- Sluice schema, part 29: a follow-up job's reserved id that its idempotency key folded
-- onto an existing job stands for that job (issue #43; wit/README.md: "An
-- `idempotency-key` that already names a job makes the id stand for that job
-- (`await-jobs` waits for it under this id)").
--
-- * sluice.follow_up_aliases: one row per follow-up job (parent and place) that was not
--   inserted because its key named a job already (another tenant's job never: keys are
--   per tenant), from the id `jobs.enqueue` returned to the guest to the job holding the
--   key. Written by Store::insert_children_once (host/store/src/follow_ups.rs) in the
--   suspension's or completion's transaction. Without it the reserved id named no job:
--   `await-jobs` saw it unfinished, the suspension saw it gone, and the parent ran, and
--   suspended, again and again without spending an attempt.
-- * Read by sql/waits/child_outcomes.sql (the outcome under the reserved id), by
--   sql/finish/existing_children.sql (a replayed run does not ask for it again), by
--   the readiness checks of sql/finish/suspend.sql and sql/waits/wake_waiting.sql, and
--   by sluice.wake_parent() below. The job it stands for may have no parent or another
--   one, so its end does not fire jobs_wake_parent for this parent: the waker wakes the
--   parent within its period.
-- * Retention keeps the job an alias stands for while the alias's parent is unfinished,
--   and deletes the aliases with their parent (set-based, no foreign key: issue 42).
--
-- Upgrading a live database: a new table and a replaced trigger function. Hosts of
-- earlier versions write no aliases (their parents keep the behaviour above).

CREATE TABLE sluice.follow_up_aliases (
    id         bigint  PRIMARY KEY,
    parent_id  bigint  NOT NULL,
    parent_seq integer NOT NULL CONSTRAINT follow_up_aliases_parent_seq_check CHECK (parent_seq >= 0),
    job_id     bigint  NOT NULL,
    CONSTRAINT follow_up_aliases_place_uidx UNIQUE (parent_id, parent_seq)
);
CREATE INDEX follow_up_aliases_job_idx ON sluice.follow_up_aliases (job_id);
COMMENT ON TABLE sluice.follow_up_aliases IS
    'Reserved follow-up job ids that stand for the existing job their idempotency key named (await-jobs reads that job under the id). See migrations/0029_follow_up_aliases.sql.';

-- sluice.wake_parent() of migration 0028, with the aliases: an awaited id that stands for
-- another job counts as finished when that job has.
CREATE OR REPLACE FUNCTION sluice.wake_parent()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE sluice.jobs p
    SET state = 'pending', run_at = least(p.run_at, now()), waiting_for = NULL,
        awaited = NULL, updated_at = now()
    WHERE p.id = NEW.parent_id AND p.state = 'waiting' AND NEW.id = ANY (p.awaited)
      AND NOT EXISTS (SELECT 1 FROM sluice.jobs c
                      WHERE c.id = ANY (p.awaited || ARRAY(
                                SELECT a.job_id FROM sluice.follow_up_aliases a
                                WHERE a.parent_id = p.id AND a.id = ANY (p.awaited)))
                        AND c.state NOT IN ('completed', 'dead', 'cancelled'));
    IF FOUND THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN NULL;
END
$function$;

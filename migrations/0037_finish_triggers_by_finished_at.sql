-- Sluice schema, part 37: the two triggers that fire when a job becomes finished test
-- `finished_at` instead of `state` (issue 42).
--
-- * jobs_wake_parent (migration 0028) and jobs_notify_finished (migration 0032) fired
--   when `NEW.state IN ('completed', 'dead', 'cancelled') AND OLD.state NOT IN (…)`.
--   PostgreSQL reads a trigger's WHEN clause from its stored node tree once per UPDATE
--   statement on the table, and these two were 3,721 of the three UPDATE triggers' 6,258
--   characters: with the claim's and completion's statements of ≈ 32 jobs, the triggers
--   cost ≈ 3 µs of the database's CPU per job, almost all of it that reading
--   (docs/benchmarks.md, "where PostgreSQL's CPU per job goes").
-- * `finished_at IS NOT NULL` is exactly "the state is terminal" on every row version:
--   CHECK jobs_finished_at_iff_terminal (migration 0002) holds it. So "became finished"
--   is `NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL`: 1,149 characters, not 3,721.
--   Same names (triggers fire in name order), same events (`UPDATE OF state`), same
--   functions: the triggers fire on exactly the same updates as before.
--
-- Upgrading a live database: two triggers recreated in one transaction (a short lock of
-- sluice.jobs), nothing rewritten; hosts of earlier versions see no difference.

DROP TRIGGER jobs_wake_parent ON sluice.jobs;
CREATE TRIGGER jobs_wake_parent AFTER UPDATE OF state ON sluice.jobs
    FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL
          AND NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL)
    EXECUTE FUNCTION sluice.wake_parent();

DROP TRIGGER jobs_notify_finished ON sluice.jobs;
CREATE TRIGGER jobs_notify_finished AFTER UPDATE OF state ON sluice.jobs
    FOR EACH ROW
    WHEN (NEW.watched
          AND NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL)
    EXECUTE FUNCTION sluice.notify_finished();

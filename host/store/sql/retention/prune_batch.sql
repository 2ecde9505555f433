-- terminal → deleted: one retention batch. Completed jobs first, then dead/cancelled ones
-- to fill the batch. Each scan is a range on jobs_finished_idx with a literal state; SKIP
-- LOCKED so an operator retrying a dead job at the same moment is never blocked. Its
-- attempt history and stored attempt logs go with the job, a durable job's journal and its
-- signals too, all set-based below (no foreign keys: a per-row cascade would cost every
-- deleted job, issue 42; migrations 0023 and 0036). A waiting job is not finished and
-- never pruned, nor is a follow-up job whose parent is not finished (a durable parent
-- reads its children's outcomes when it resumes: Store::child_outcomes), whatever its age:
-- it goes once its parent has finished; nor a job that an unfinished parent's follow-up
-- alias stands for (migration 0029). Aliases go with their parent.
-- $1 completed retention in microseconds (int8), $2 dead/cancelled retention in
-- microseconds (int8), $3 batch size (int8).
WITH completed AS (
    SELECT id FROM sluice.jobs j
    WHERE state = 'completed' AND finished_at < now() - $1 * interval '1 microsecond'
      AND (parent_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM sluice.jobs p
          WHERE p.id = j.parent_id AND p.state IN ('pending', 'running', 'waiting')))
      AND NOT EXISTS (SELECT 1 FROM sluice.follow_up_aliases a
                      JOIN sluice.jobs p ON p.id = a.parent_id
                      WHERE a.job_id = j.id AND p.state IN ('pending', 'running', 'waiting'))
    LIMIT $3
    FOR UPDATE SKIP LOCKED
),
dead AS (
    SELECT id FROM sluice.jobs j
    WHERE state IN ('dead', 'cancelled') AND finished_at < now() - $2 * interval '1 microsecond'
      AND (parent_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM sluice.jobs p
          WHERE p.id = j.parent_id AND p.state IN ('pending', 'running', 'waiting')))
      AND NOT EXISTS (SELECT 1 FROM sluice.follow_up_aliases a
                      JOIN sluice.jobs p ON p.id = a.parent_id
                      WHERE a.job_id = j.id AND p.state IN ('pending', 'running', 'waiting'))
    LIMIT $3 - (SELECT count(*) FROM completed)
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM sluice.jobs
    WHERE id IN (SELECT id FROM completed UNION ALL SELECT id FROM dead)
    RETURNING id, state
),
history AS (
    DELETE FROM sluice.attempt_history h USING deleted d WHERE h.job_id = d.id
),
logs AS (
    DELETE FROM sluice.attempt_logs g USING deleted d WHERE g.job_id = d.id
),
journal AS (
    DELETE FROM sluice.journal l USING deleted d WHERE l.job_id = d.id
),
heads AS (
    DELETE FROM sluice.journal_heads h USING deleted d WHERE h.job_id = d.id
),
signals AS (
    DELETE FROM sluice.signals s USING deleted d WHERE s.job_id = d.id
),
aliases AS (
    DELETE FROM sluice.follow_up_aliases a USING deleted d WHERE a.parent_id = d.id
)
SELECT count(*) FILTER (WHERE state = 'completed') AS completed,
       count(*) FILTER (WHERE state <> 'completed') AS dead
FROM deleted

-- Deletes a set of one tenant's jobs in any state but running (the dashboard's bulk
-- delete). A running job is held by its worker's lease and is never deleted: rows are
-- locked in id order and the state is checked after the lock, so a job claimed meanwhile
-- stays. Attempt history and attempt logs go with their job, a durable job's journal and
-- its signals with it, set-based below (no foreign keys: issue 42, migrations 0023 and
-- 0036). Nothing refers to a job by foreign key: follow-up jobs keep their parent_id and
-- schedule slots their job_id (dangling, as after retention deletes a job).
-- Returns the tenant's jobs among the ids (any state) and how many were deleted.
-- $1 job ids (int8[]), $2 tenant (text).
WITH target AS (
    SELECT id
    FROM sluice.jobs
    WHERE id = ANY ($1::int8[]) AND tenant = $2 AND state <> 'running'
    ORDER BY id
    FOR UPDATE
),
deleted AS (
    DELETE FROM sluice.jobs j
    USING target t
    WHERE j.id = t.id AND j.tenant = $2 AND j.state <> 'running'
    RETURNING j.id
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
)
SELECT (SELECT count(*) FROM sluice.jobs WHERE id = ANY ($1::int8[]) AND tenant = $2) AS matched,
       (SELECT count(*) FROM deleted) AS changed

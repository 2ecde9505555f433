-- pending | waiting → cancelled, or running → cancel requested (docs/state-machine.md).
-- `target` locks the job (scoped to the tenant when given) and reports its state; only
-- pending, waiting and running rows change (a waiting job is cancelled at once, like a
-- pending one: it holds no lease; what it waited for is cleared). A running job is flagged and its worker told with
-- NOTIFY (the payload is the job id). Returns the state found, whether it changed, and
-- how many notices were sent. The update also requires the row it writes to be in the
-- state `target` locked (a claim racing this statement could otherwise have it flag a
-- pending row as cancel-requested, which the table's check refuses): when they differ
-- nothing changes and the caller runs the statement again.
-- $1 job id (int8), $2 tenant or NULL for any (text), $3 cancel channel ('sluice_cancel').
WITH target AS (
    SELECT id, state FROM sluice.jobs
    WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)
    FOR UPDATE
),
moved AS (
    UPDATE sluice.jobs j
    SET state = CASE WHEN t.state IN ('pending', 'waiting') THEN 'cancelled'::sluice.job_state
                     ELSE j.state END,
        finished_at = CASE WHEN t.state IN ('pending', 'waiting') THEN now()
                           ELSE j.finished_at END,
        last_error = CASE WHEN t.state IN ('pending', 'waiting') THEN 'cancelled by operator'
                          ELSE j.last_error END,
        waiting_for = NULL, awaited = NULL,
        cancel_requested = (t.state = 'running'),
        updated_at = now()
    FROM target t
    WHERE j.id = t.id AND t.state IN ('pending', 'running', 'waiting') AND j.state = t.state
    RETURNING j.id, t.state AS was
),
notified AS (
    SELECT pg_notify($3, id::text) FROM moved WHERE was = 'running'
)
SELECT t.state, m.id IS NOT NULL AS changed, (SELECT count(*) FROM notified) AS notified
FROM target t
LEFT JOIN moved m ON m.id = t.id

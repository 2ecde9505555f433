-- pending | waiting → cancelled, or running → cancel requested, for a set of one tenant's
-- jobs (the dashboard's bulk cancel): admin/cancel.sql per row, in one statement. Only
-- pending, waiting and running rows are locked (in id order) and change; each running one's worker is told
-- with a NOTIFY whose payload is its id (asking again re-sends it, as the single cancel
-- does). Returns the tenant's jobs among the ids (any state), how many changed (a
-- running job counts when its request is sent) and how many notices were sent.
-- $1 job ids (int8[]), $2 tenant (text), $3 cancel channel ('sluice_cancel').
WITH target AS (
    SELECT id, state
    FROM sluice.jobs
    WHERE id = ANY ($1::int8[]) AND tenant = $2 AND state IN ('pending', 'running', 'waiting')
    ORDER BY id
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
    WHERE j.id = t.id AND j.tenant = $2 AND j.state = t.state
    RETURNING j.id, t.state AS was
),
notified AS (
    SELECT pg_notify($3, id::text) FROM moved WHERE was = 'running'
)
SELECT (SELECT count(*) FROM sluice.jobs WHERE id = ANY ($1::int8[]) AND tenant = $2) AS matched,
       (SELECT count(*) FROM moved) AS changed,
       (SELECT count(*) FROM notified) AS notified

-- How a job's awaited follow-up jobs stand (Store::child_outcomes, for await-jobs): each
-- of the ids $2 that is a child of $1 (parent_id, so another job's or another tenant's
-- job is never read), with its state, its output when completed and its last error when
-- not. An id that its idempotency key folded onto an existing job (follow_up_aliases,
-- migration 0029) reports that job under the id. Ids that are neither are left out.
-- $1 parent job id (int8), $2 job ids (int8[]).
SELECT id, state,
       CASE WHEN state = 'completed' THEN coalesce(output, '\x'::bytea) END AS output,
       CASE WHEN state <> 'completed' THEN last_error END AS error
FROM sluice.jobs
WHERE parent_id = $1 AND id = ANY ($2::int8[])
UNION ALL
SELECT a.id, j.state,
       CASE WHEN j.state = 'completed' THEN coalesce(j.output, '\x'::bytea) END AS output,
       CASE WHEN j.state <> 'completed' THEN j.last_error END AS error
FROM sluice.follow_up_aliases a
JOIN sluice.jobs j ON j.id = a.job_id
WHERE a.parent_id = $1 AND a.id = ANY ($2::int8[])

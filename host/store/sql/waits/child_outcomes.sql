-- How a job's awaited follow-up jobs stand (Store::child_outcomes, for await-jobs): each
-- of the ids $2 that is a child of $1 (parent_id, so another job's or another tenant's
-- job is never read), with its state, its output when completed and its last error when
-- not. Ids that are not its children are left out.
-- $1 parent job id (int8), $2 job ids (int8[]).
SELECT id, state,
       CASE WHEN state = 'completed' THEN coalesce(output, '\x'::bytea) END AS output,
       CASE WHEN state <> 'completed' THEN last_error END AS error
FROM sluice.jobs
WHERE parent_id = $1 AND id = ANY ($2::int8[])

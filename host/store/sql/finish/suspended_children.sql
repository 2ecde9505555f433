-- Which of a suspending job's follow-up jobs exist already (suspend.rs, in the
-- suspension's transaction, after finish/suspend_lock.sql locked the parent): a run that
-- replayed the journal buffers the same `enqueue` calls again, with the same sequence
-- numbers, and those are skipped instead of hitting jobs_parent_uidx. The parent's row
-- lock keeps any other insert of its children out until the transaction ends.
-- $1 parent job id (int8), $2 the children's sequence numbers (int4[]).
SELECT parent_seq
FROM sluice.jobs
WHERE parent_id = $1 AND parent_seq = ANY ($2::int4[])

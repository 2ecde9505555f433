-- → pending: a batch of jobs of which at least one comes with a reserved id (a follow-up
-- job whose id the guest was given when it asked: Store::reserve_job_ids): the statement
-- of enqueue_keyed_jobs.sql with $14 id[] (int8[], NULL per row to draw one from
-- sluice.jobs_id_seq as usual; migration 0027). A reserved id that names a job already
-- fails the batch (jobs_pkey), unless the row has an idempotency key (then it is skipped
-- like any taken key and comes back as (ordinal, holder)). Batches without reserved ids
-- use enqueue_jobs.sql or enqueue_keyed_jobs.sql, unchanged.
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]), $9 key_scope[] (text[]), $10 default payload limit
-- (int8), $11 parent_id[] (int8[]), $12 parent_seq[] (int4[]), $13 concurrency_key[]
-- (text[]), $14 id[] (int8[]); $5 to $9 and $11 to $13 may be NULL as in
-- enqueue_jobs.sql.
SELECT problem, problem_ord, payload_size, payload_limit, ids, dup_ords, dup_holders
FROM sluice.enqueue_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)

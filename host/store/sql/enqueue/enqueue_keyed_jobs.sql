-- → pending: a batch of jobs of which at least one has a concurrency key: the statement
-- of enqueue_jobs.sql with $13 concurrency_key[] (text[], NULL per row for none;
-- migration 0024), which puts each job in its flow lane (docs/flow-control.md). Batches
-- without keys use enqueue_jobs.sql, unchanged, so a host works on a database that
-- predates keys until one is used.
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]), $9 key_scope[] (text[]), $10 default payload limit
-- (int8), $11 parent_id[] (int8[]), $12 parent_seq[] (int4[]), $13 concurrency_key[]
-- (text[]); $5 to $9, $11 and $12 may be NULL as in enqueue_jobs.sql.
SELECT problem, problem_ord, payload_size, payload_limit, ids, dup_ords, dup_holders
FROM sluice.enqueue_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)

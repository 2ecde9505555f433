-- → pending: a batch of jobs of which at least one carries a W3C trace context (docs/
-- observability.md): the statement of enqueue_reserved_jobs.sql with $15 traceparent[]
-- and $16 tracestate[] (text[], NULL per row for none; migration 0034). Batches without
-- one use the shorter statements, unchanged.
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]), $9 key_scope[] (text[]), $10 default payload limit
-- (int8), $11 parent_id[] (int8[]), $12 parent_seq[] (int4[]), $13 concurrency_key[]
-- (text[]), $14 id[] (int8[]), $15 traceparent[] (text[]), $16 tracestate[] (text[]);
-- $5 to $9 and $11 to $14 may be NULL as in enqueue_jobs.sql.
SELECT problem, problem_ord, payload_size, payload_limit, ids, dup_ords, dup_holders
FROM sluice.enqueue_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)

-- → pending: a batch of jobs, all rows or none (Store::enqueue / enqueue_many), through
-- sluice.enqueue_jobs(...) (migrations/0011_one_enqueue.sql; its text is in
-- host/store/schema.sql), the one INSERT of new jobs that sluice.enqueue(...) and the
-- scheduler (schedules/fire_one.sql) use too. It checks each distinct (tenant, job
-- type) once (both exist, the largest payload fits the tenant's limit) and returns the
-- first failure instead of writing anything; it draws one id per row in input order;
-- rows with a key go through ON CONFLICT DO NOTHING and come back as (ordinal, holder);
-- it sends one NOTIFY sluice_jobs for the batch ('' if its earliest job is due now,
-- else the microseconds until it is). No per-row function call: the arrays are
-- unnested in SELECT lists inside the function's one statement.
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]), $9 key_scope[] (text[]), $10 default payload limit
-- (int8, for tenants without max_payload_bytes), $11 parent_id[] (int8[]) and $12
-- parent_seq[] (int4[]) of follow-up jobs (migration 0014).
-- $5 to $9, $11 and $12 may be NULL instead of an array when no row sets them (a shorter or NULL
-- array is padded with NULLs), so the client need not send 100k defaults.
SELECT problem, problem_ord, payload_size, payload_limit, ids, dup_ords, dup_holders
FROM sluice.enqueue_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)

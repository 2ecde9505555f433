-- The dashboard's job list: one tenant's jobs matching every filter given (NULL: no
-- filter), newest first, keyset on id; the columns of admin/list_jobs.sql (no payload or
-- output bytes). Walks the primary key backwards filtering the rest, like the admin list
-- without a state: cheap for active tenants and bounded by retention. The payload filter
-- reads each remaining candidate's payload as JSON (sluice.payload_jsonb, migration
-- 0019): a scan, fine for a dashboard; non-JSON payloads never match and never fail.
-- Created times are half-open: created_from <= created_at < created_to.
-- $1 tenant (text), $2 states (text[], NULL or empty: any), $3 job type (text),
-- $4 priority (int4), $5 job id (int8), $6 idempotency key (text), $7 parent job id
-- (int8), $8 created from (timestamptz), $9 created to (timestamptz), $10 payload
-- contains (jsonb), $11 keyset cursor: only ids below it (int8), $12 limit (int8).
SELECT id, tenant, job_type, octet_length(payload) AS payload_size,
       priority::int4 AS priority, state,
       least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'), timestamptz '9999-12-31 23:59:59.999999+00') AS run_at,
       attempt, max_attempts, idempotency_key, key_scope, locked_by, locked_until,
       cancel_requested, last_error, octet_length(output) AS output_size,
       substring(output FROM 1 FOR 120) AS output_head, created_at, updated_at, finished_at,
       parent_id
FROM sluice.jobs
WHERE tenant = $1
  AND (coalesce(cardinality($2::text[]), 0) = 0 OR state = ANY ($2::text[]::sluice.job_state[]))
  AND ($3::text IS NULL OR job_type = $3)
  AND ($4::int4 IS NULL OR priority = $4)
  AND ($5::int8 IS NULL OR id = $5)
  AND ($6::text IS NULL OR idempotency_key = $6)
  AND ($7::int8 IS NULL OR parent_id = $7)
  AND ($8::timestamptz IS NULL OR created_at >= $8)
  AND ($9::timestamptz IS NULL OR created_at < $9)
  AND ($10::jsonb IS NULL OR sluice.payload_jsonb(payload) @> $10)
  AND ($11::int8 IS NULL OR id < $11)
ORDER BY id DESC
LIMIT $12

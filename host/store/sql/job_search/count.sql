-- How many of one tenant's jobs match the dashboard's filters: the filters of
-- job_search/search.sql exactly (NULL: no filter; see there for the payload filter's
-- cost), without the keyset cursor.
-- $1 tenant (text), $2 states (text[], NULL or empty: any), $3 job type (text),
-- $4 priority (int4), $5 job id (int8), $6 idempotency key (text), $7 parent job id
-- (int8), $8 created from (timestamptz), $9 created to (timestamptz), $10 payload
-- contains (jsonb).
SELECT count(*)
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

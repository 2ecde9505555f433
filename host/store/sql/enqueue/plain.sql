-- → pending: a batch of jobs without idempotency keys, all rows or none (Store::enqueue_many).
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]; NULL for this variant), $9 key_scope[] (text[]),
-- $10 default payload limit (int8), $11 notification channel ('sluice_jobs').
-- $5 to $9 may be NULL instead of an array when no row sets them: SRFs in one SELECT list
-- run in lockstep and a shorter (or NULL) array is padded with NULLs, so the client need
-- not send 100k defaults.
--
-- `groups` checks each distinct (tenant, job type) of the batch once: both exist, and the
-- largest payload is within the tenant's limit. `problem` is the first failure; if there
-- is one, `ids` has no row, so the insert sees no rows and nothing is written. `ids` draws
-- one id per row from the sequence up front, in input order, so every result maps to its
-- input row. The arrays are unnested in SELECT lists (they zip in lockstep and stream)
-- rather than in FROM (which would materialise every payload into a tuplestore), and the
-- wide input is only ever read by the INSERT: no CTE holds a payload. One notice for the
-- batch: empty when its earliest job is due now, else the microseconds until it is.
WITH groups AS (
    SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
           t.id IS NOT NULL AS tenant_ok,
           jt.name IS NOT NULL AS type_ok,
           coalesce(t.max_payload_bytes, $10::int8) AS payload_limit,
           jt.max_attempts AS type_max_attempts
    FROM (
        SELECT tenant, job_type, min(ord) AS first_ord, max(size) AS max_size
        FROM (SELECT unnest($1::text[]) AS tenant, unnest($2::text[]) AS job_type,
                     octet_length(unnest($3::bytea[]))::int8 AS size,
                     generate_series(1::int8, cardinality($1::text[])) AS ord) u
        GROUP BY tenant, job_type
    ) g
    LEFT JOIN sluice.tenants t ON t.id = g.tenant
    LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
),
problem AS (
    SELECT first_ord,
           CASE WHEN NOT tenant_ok THEN 'tenant'
                WHEN NOT type_ok THEN 'job_type'
                ELSE 'payload' END AS problem,
           max_size, payload_limit
    FROM groups
    WHERE NOT tenant_ok OR NOT type_ok OR max_size > payload_limit
    ORDER BY first_ord
    LIMIT 1
),
ids AS (
    SELECT array_agg(nextval('sluice.jobs_id_seq')) AS a
    FROM generate_series(1, cardinality($1::text[]))
    WHERE NOT EXISTS (SELECT 1 FROM problem)
    HAVING count(*) > 0
),
ins_plain AS (
    INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at, max_attempts,
                             key_scope)
    SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
           coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
           coalesce(u.max_attempts, jt.max_attempts), coalesce(u.key_scope, 'retained')::sluice.key_scope
    FROM (SELECT unnest(ids.a) AS id, unnest($1::text[]) AS tenant,
                 unnest($2::text[]) AS job_type, unnest($3::bytea[]) AS payload,
                 unnest($4::int2[]) AS priority, unnest($5::int8[]) AS delay_us,
                 unnest($6::timestamptz[]) AS at, unnest($7::int4[]) AS max_attempts,
                 unnest($8::text[]) AS idempotency_key, unnest($9::text[]) AS key_scope
          FROM ids) u
    JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
    WHERE u.idempotency_key IS NULL
),
keyless_first AS (
    SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
    FROM (SELECT unnest(ids.a) AS id, unnest($5::int8[]) AS delay_us,
                 unnest($6::timestamptz[]) AS at, unnest($8::text[]) AS idempotency_key
          FROM ids) u
    WHERE u.idempotency_key IS NULL
),
notified AS (
    SELECT pg_notify($11, CASE WHEN f.at <= now() THEN '' ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text END)
    FROM keyless_first f WHERE f.at IS NOT NULL
)
SELECT p.problem, p.first_ord AS problem_ord, p.max_size AS payload_size, p.payload_limit,
       (SELECT a FROM ids) AS ids,
       NULL::int8[] AS dup_ords, NULL::int8[] AS dup_holders,
       (SELECT count(*) FROM notified) AS notified
FROM (SELECT 1) one
LEFT JOIN problem p ON true

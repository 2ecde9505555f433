-- → pending: a batch of jobs of which some have idempotency keys (Store::enqueue_many).
-- Parameters and the checks (`groups`, `problem`, `ids`) as in enqueue/plain.sql:
-- $1 tenant[] (text[]), $2 job_type[] (text[]), $3 payload[] (bytea[]), $4 priority[]
-- (int2[]), $5 delay_us[] (int8[]), $6 at[] (timestamptz[]), $7 max_attempts[] (int4[]),
-- $8 idempotency_key[] (text[]), $9 key_scope[] (text[]), $10 default payload limit
-- (int8), $11 notification channel ('sluice_jobs'); $5..$9 may be NULL.
--
-- Keyed rows go through ON CONFLICT DO NOTHING against jobs_idempotency_key_uidx. `dups`
-- lists the rows that were skipped with the job now holding their key; it reads the
-- statement's snapshot, so a holder that committed after the statement began is not seen
-- and comes back NULL, for the caller to retry in a new statement.
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
ins_keyed AS (
    INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at, max_attempts,
                             idempotency_key, key_scope)
    SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
           coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
           coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
           coalesce(u.key_scope, 'retained')::sluice.key_scope
    FROM (SELECT unnest(ids.a) AS id, unnest($1::text[]) AS tenant,
                 unnest($2::text[]) AS job_type, unnest($3::bytea[]) AS payload,
                 unnest($4::int2[]) AS priority, unnest($5::int8[]) AS delay_us,
                 unnest($6::timestamptz[]) AS at, unnest($7::int4[]) AS max_attempts,
                 unnest($8::text[]) AS idempotency_key, unnest($9::text[]) AS key_scope
          FROM ids) u
    JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
    WHERE u.idempotency_key IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id, run_at
),
dups AS (
    SELECT u.ord,
           (SELECT j.id FROM sluice.jobs j
            WHERE j.tenant = u.tenant AND j.idempotency_key = u.idempotency_key
              AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running'))) AS holder
    FROM (SELECT unnest(ids.a) AS id, unnest($1::text[]) AS tenant,
                 unnest($8::text[]) AS idempotency_key,
                 generate_series(1::int8, cardinality(ids.a)) AS ord
          FROM ids) u
    WHERE u.idempotency_key IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ins_keyed k WHERE k.id = u.id)
),
first_due AS (
    SELECT least((SELECT at FROM keyless_first), (SELECT min(run_at) FROM ins_keyed)) AS at
),
notified AS (
    SELECT pg_notify($11, CASE WHEN f.at <= now() THEN '' ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text END)
    FROM first_due f WHERE f.at IS NOT NULL
)
SELECT p.problem, p.first_ord AS problem_ord, p.max_size AS payload_size, p.payload_limit,
       (SELECT a FROM ids) AS ids,
       (SELECT array_agg(ord ORDER BY ord) FROM dups) AS dup_ords,
       (SELECT array_agg(holder ORDER BY ord) FROM dups) AS dup_holders,
       (SELECT count(*) FROM notified) AS notified
FROM (SELECT 1) one
LEFT JOIN problem p ON true

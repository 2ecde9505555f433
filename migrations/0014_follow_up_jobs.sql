-- Sluice schema, part 14: follow-up jobs (issue 18: a task enqueues the next step,
-- atomically with its own success).
--
-- * jobs.parent_id, jobs.parent_seq: a job made by another job's successful attempt
--   records that job and its place (0, 1, ...) among the jobs that attempt asked for.
--   (parent_id, parent_seq) is unique: the child's identity is derived from its parent,
--   so whatever writes a completion twice cannot make a child twice (the fenced
--   completion already cannot: its second write matches no running row). The same
--   index serves `sluice jobs list --parent ID`. No foreign key: retention prunes a
--   parent and its children independently, and a child outlives its parent's row.
-- * tenants.max_follow_ups, max_follow_up_bytes: the tenant's caps on the jobs one
--   attempt may ask for, and on their payload bytes together (NULL: host default).
-- * sluice.enqueue_jobs(...) gains p_parent_id and p_parent_seq (it stays the one
--   INSERT into sluice.jobs, migration 0011); the ten-argument form that earlier
--   binaries, sluice.enqueue(...) and the scheduler call becomes a wrapper passing NULL.
--
-- Upgrading a live database: ADD COLUMN without defaults (no rewrite), a partial index
-- that starts empty, new functions. Running workers keep working.

ALTER TABLE sluice.jobs
    ADD COLUMN parent_id bigint,
    ADD COLUMN parent_seq integer,
    ADD CONSTRAINT jobs_parent_pair CHECK ((parent_id IS NULL) = (parent_seq IS NULL)),
    ADD CONSTRAINT jobs_parent_seq_nonnegative CHECK (parent_seq >= 0);
CREATE UNIQUE INDEX jobs_parent_uidx ON sluice.jobs (parent_id, parent_seq)
    WHERE parent_id IS NOT NULL;

ALTER TABLE sluice.tenants
    ADD COLUMN max_follow_ups integer,
    ADD COLUMN max_follow_up_bytes bigint,
    ADD CONSTRAINT tenants_max_follow_ups_check CHECK (max_follow_ups >= 0),
    ADD CONSTRAINT tenants_max_follow_up_bytes_check CHECK (max_follow_up_bytes > 0);

CREATE FUNCTION sluice.enqueue_jobs(
    p_tenant              text[],
    p_job_type            text[],
    p_payload             bytea[],
    p_priority            smallint[],
    p_delay_us            bigint[],       -- NULL, or per row: due this long after now()
    p_at                  timestamptz[],  -- NULL, or per row: due then (wins over a delay)
    p_max_attempts        integer[],      -- NULL, or per row (NULL: the job type's)
    p_idempotency_key     text[],         -- NULL when no row has a key
    p_key_scope           text[],         -- NULL, or per row (NULL: 'retained')
    p_default_max_payload bigint,         -- for tenants without max_payload_bytes
    p_parent_id           bigint[],       -- NULL, or per row: the job whose success made it
    p_parent_seq          integer[]       -- with p_parent_id: its place (0, 1, ...) among them
) RETURNS TABLE (
    problem       text,     -- NULL, 'tenant', 'job_type' or 'payload'
    problem_ord   bigint,   -- 1-based row of the first failing (tenant, job type)
    payload_size  bigint,   -- with 'payload': the largest payload of that group
    payload_limit bigint,   -- with 'payload': the tenant's limit
    ids           bigint[], -- one per input row, in input order (NULL with a problem)
    dup_ords      bigint[], -- rows whose key was taken ...
    dup_holders   bigint[]  -- ... and the job holding it (NULL: committed meanwhile, retry)
)
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
    -- p_delay_us .. p_key_scope may be NULL instead of an array when no row sets them:
    -- SRFs in one SELECT list run in lockstep and a shorter (or NULL) array is padded
    -- with NULLs, so a client need not send 100k defaults.
    IF p_idempotency_key IS NULL THEN
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(nextval('sluice.jobs_id_seq')) AS a
            FROM generate_series(1, cardinality(p_tenant))
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        inserted AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
        ),
        -- The earliest due time of the batch, from the inputs (so no CTE reads back a
        -- payload): every row is inserted or the statement fails.
        first_due AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at
                  FROM new_ids n) u
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               NULL::int8[], NULL::int8[]
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    ELSE
        RETURN QUERY
        WITH groups AS (
            SELECT g.tenant, g.job_type, g.first_ord, g.max_size,
                   t.id IS NOT NULL AS tenant_ok,
                   jt.name IS NOT NULL AS type_ok,
                   coalesce(t.max_payload_bytes, p_default_max_payload) AS payload_limit
            FROM (
                SELECT u.tenant, u.job_type, min(u.ord) AS first_ord, max(u.size) AS max_size
                FROM (SELECT unnest(p_tenant) AS tenant, unnest(p_job_type) AS job_type,
                             octet_length(unnest(p_payload))::int8 AS size,
                             generate_series(1::int8, cardinality(p_tenant)) AS ord) u
                GROUP BY u.tenant, u.job_type
            ) g
            LEFT JOIN sluice.tenants t ON t.id = g.tenant
            LEFT JOIN sluice.job_types jt ON jt.tenant = g.tenant AND jt.name = g.job_type
        ),
        first_problem AS (
            SELECT g.first_ord,
                   CASE WHEN NOT g.tenant_ok THEN 'tenant'
                        WHEN NOT g.type_ok THEN 'job_type'
                        ELSE 'payload' END AS problem,
                   g.max_size, g.payload_limit
            FROM groups g
            WHERE NOT g.tenant_ok OR NOT g.type_ok OR g.max_size > g.payload_limit
            ORDER BY g.first_ord
            LIMIT 1
        ),
        new_ids AS (
            SELECT array_agg(nextval('sluice.jobs_id_seq')) AS a
            FROM generate_series(1, cardinality(p_tenant))
            WHERE NOT EXISTS (SELECT 1 FROM first_problem)
            HAVING count(*) > 0
        ),
        ins_plain AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, key_scope, parent_id, parent_seq)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NULL
        ),
        keyless_first AS (
            SELECT min(coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond')) AS at
            FROM (SELECT unnest(n.a) AS id, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_idempotency_key) AS idempotency_key
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NULL
        ),
        ins_keyed AS (
            INSERT INTO sluice.jobs (id, tenant, job_type, payload, priority, run_at,
                                     max_attempts, idempotency_key, key_scope,
                                     parent_id, parent_seq)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_parent_id) AS parent_id, unnest(p_parent_seq) AS parent_seq
                  FROM new_ids n) u
            JOIN sluice.job_types jt ON jt.tenant = u.tenant AND jt.name = u.job_type
            WHERE u.idempotency_key IS NOT NULL
            ON CONFLICT DO NOTHING
            RETURNING sluice.jobs.id, sluice.jobs.run_at
        ),
        -- Rows skipped by ON CONFLICT, with the job now holding their key. This reads the
        -- statement's snapshot: a holder that committed after it began is not seen and
        -- comes back NULL, for the caller to retry in a new statement.
        dups AS (
            SELECT u.ord,
                   (SELECT j.id FROM sluice.jobs j
                    WHERE j.tenant = u.tenant AND j.idempotency_key = u.idempotency_key
                      AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running'))) AS holder
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_idempotency_key) AS idempotency_key,
                         generate_series(1::int8, cardinality(n.a)) AS ord
                  FROM new_ids n) u
            WHERE u.idempotency_key IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM ins_keyed k WHERE k.id = u.id)
        ),
        first_due AS (
            SELECT least((SELECT k.at FROM keyless_first k),
                         (SELECT min(k.run_at) FROM ins_keyed k)) AS at
        ),
        notified AS (
            SELECT pg_notify('sluice_jobs',
                             CASE WHEN f.at <= now() THEN ''
                                  ELSE ceil(extract(epoch FROM f.at - now()) * 1000000)::int8::text
                             END)
            FROM first_due f
            WHERE f.at IS NOT NULL
        )
        SELECT p.problem, p.first_ord, p.max_size, p.payload_limit,
               (SELECT n.a FROM new_ids n),
               (SELECT array_agg(d.ord ORDER BY d.ord) FROM dups d),
               (SELECT array_agg(d.holder ORDER BY d.ord) FROM dups d)
        FROM (SELECT count(*) AS sent FROM notified) one
        LEFT JOIN first_problem p ON true;
    END IF;
END
$fn$;

COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint, bigint[], integer[]) IS
    'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys, parents and one wake-up notice. Used by the Rust enqueue, follow-up jobs, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql and 0014_follow_up_jobs.sql.';

-- The ten-argument form (migration 0011), as earlier binaries, sluice.enqueue(...) and
-- the scheduler call it: jobs without a parent.
CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(
    p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[],
    p_delay_us bigint[], p_at timestamptz[], p_max_attempts integer[],
    p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint
) RETURNS TABLE (
    problem text, problem_ord bigint, payload_size bigint, payload_limit bigint,
    ids bigint[], dup_ords bigint[], dup_holders bigint[]
)
LANGUAGE sql VOLATILE
AS $fn$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload,
                                      NULL::bigint[], NULL::integer[]);
$fn$;

COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint) IS
    'sluice.enqueue_jobs(...) for jobs without a parent (the form of migration 0011). See migrations/0014_follow_up_jobs.sql.';

-- Sluice schema, part 11: one implementation of "a job becomes pending".
--
-- Until now three paths inserted jobs, each its own way: the Rust enqueue (one
-- statement over arrays), sluice.enqueue(...) (PL/pgSQL, one row) and the scheduler's
-- firing (its own INSERT). They checked different things and woke workers differently:
-- the SQL paths sent `NOTIFY sluice_jobs` only for a job due now, the Rust path also
-- told listeners how many microseconds until a delayed job falls due.
--
-- sluice.enqueue_jobs(...) below is now the only INSERT into sluice.jobs. It takes one
-- array per column (a batch of any size, or of one), and in one statement:
--   * checks each distinct (tenant, job type) of the batch once: both exist, and the
--     largest payload fits the tenant's max_payload_bytes (else p_default_max_payload);
--     on the first failure nothing is written and the failure is returned, not raised,
--     so each caller reports it its own way (typed Rust errors, SQLSTATEs, a schedule's
--     last_error);
--   * draws one id per row up front, in input order, and inserts; rows with an
--     idempotency key go through ON CONFLICT DO NOTHING against
--     jobs_idempotency_key_uidx and come back as (ordinal, holder id);
--   * sends one `NOTIFY sluice_jobs` for the batch: an empty payload when its earliest
--     new job is due now, else the microseconds until it is (docs/fleet.md).
-- Rules that need no catalog (priority fits a smallint, max_attempts >= 1, key length,
-- run_at range) are each caller's input checks, with the table's CHECK constraints
-- behind them.
--
-- Cost: the batch is unnested in SELECT lists (lockstep, streaming) and no CTE holds a
-- payload, exactly as the Rust statement did; there is no per-row function call. The
-- PL/pgSQL wrapper adds one call per batch.
--
-- Upgrading a live database: only CREATE OR REPLACE FUNCTION; no table is touched and
-- no lock beyond the functions' is taken. Processes already running keep working (their
-- statements still insert directly); an older binary started afterwards stops at its
-- schema check (`Store::check_schema`), as after any migration.

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(
    p_tenant              text[],
    p_job_type            text[],
    p_payload             bytea[],
    p_priority            smallint[],
    p_delay_us            bigint[],       -- NULL, or per row: due this long after now()
    p_at                  timestamptz[],  -- NULL, or per row: due then (wins over a delay)
    p_max_attempts        integer[],      -- NULL, or per row (NULL: the job type's)
    p_idempotency_key     text[],         -- NULL when no row has a key
    p_key_scope           text[],         -- NULL, or per row (NULL: 'retained')
    p_default_max_payload bigint          -- for tenants without max_payload_bytes
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
                                     max_attempts, key_scope)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_key_scope) AS key_scope
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
                                     max_attempts, key_scope)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope
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
                                     max_attempts, idempotency_key, key_scope)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
                   coalesce(u.key_scope, 'retained')::sluice.key_scope
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope
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

COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint) IS
    'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys and one wake-up notice. Used by the Rust enqueue, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql.';

-- sluice.enqueue(...) keeps its signature, checks and errors (docs/enqueue-from-sql.md)
-- and inserts through sluice.enqueue_jobs with one-element arrays. Two things change:
-- a delayed job now sends the same notice as the Rust path (the microseconds until it
-- is due) instead of none, and the payload limit comes from the same statement.
-- CREATE OR REPLACE keeps the function's owner, SECURITY DEFINER and grants.
CREATE OR REPLACE FUNCTION sluice.enqueue(
    tenant          text,
    job_type        text,
    payload         jsonb,
    priority        integer     DEFAULT 10,
    run_at          timestamptz DEFAULT now(),
    idempotency_key text        DEFAULT NULL,
    max_attempts    integer     DEFAULT NULL,
    key_scope       text        DEFAULT 'retained'
) RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
    v_run_at timestamptz := coalesce(enqueue.run_at, now());
    v_result record;
    v_round  integer;
BEGIN
    IF enqueue.tenant IS NULL THEN
        RAISE EXCEPTION 'invalid tenant: must not be NULL'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'tenant';
    END IF;
    IF enqueue.job_type IS NULL OR char_length(enqueue.job_type) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'invalid job_type: a job type name must be 1 to 128 characters, got %',
                coalesce(char_length(enqueue.job_type)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'job_type';
    END IF;
    IF enqueue.payload IS NULL THEN
        RAISE EXCEPTION 'invalid payload: must not be NULL (use ''{}''::jsonb for an empty one)'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'payload';
    END IF;
    IF enqueue.priority IS NULL OR enqueue.priority NOT BETWEEN -32768 AND 32767 THEN
        RAISE EXCEPTION 'invalid priority: % is outside -32768..=32767; use the labels low=0, medium=10, high=20, critical=30',
                coalesce(enqueue.priority::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'priority';
    END IF;
    IF NOT isfinite(v_run_at)
       OR v_run_at NOT BETWEEN timestamptz '1970-01-01 00:00:00+00'
                           AND timestamptz '9999-12-31 23:59:59.999999+00' THEN
        RAISE EXCEPTION 'invalid run_at: % is outside the accepted range 1970-01-01 00:00:00+00 .. 9999-12-31 23:59:59.999999+00',
                v_run_at
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'run_at';
    END IF;
    IF enqueue.max_attempts IS NOT NULL AND enqueue.max_attempts < 1 THEN
        RAISE EXCEPTION 'invalid max_attempts: must be at least 1 (1 means never retried), got %',
                enqueue.max_attempts
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'max_attempts';
    END IF;
    IF enqueue.idempotency_key IS NOT NULL
       AND char_length(enqueue.idempotency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid idempotency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.idempotency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'idempotency_key';
    END IF;
    IF enqueue.key_scope IS NULL OR enqueue.key_scope NOT IN ('retained', 'unfinished') THEN
        RAISE EXCEPTION 'invalid key_scope: % is not a key scope; use ''retained'' or ''unfinished''',
                coalesce(quote_literal(enqueue.key_scope), 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'key_scope';
    END IF;

    -- The unique index jobs_idempotency_key_uidx is the authority. A holder that commits
    -- while a round waits is skipped by ON CONFLICT and unseen by its snapshot (holder
    -- NULL); the next round is a new statement (a new snapshot under READ COMMITTED)
    -- and finds it, or inserts if the holder freed its key in between.
    FOR v_round IN 1..16 LOOP
        SELECT * INTO v_result
        FROM sluice.enqueue_jobs(
            ARRAY[enqueue.tenant], ARRAY[enqueue.job_type],
            ARRAY[convert_to(enqueue.payload::text, 'UTF8')],
            ARRAY[enqueue.priority::smallint], NULL, ARRAY[v_run_at],
            ARRAY[enqueue.max_attempts],
            CASE WHEN enqueue.idempotency_key IS NOT NULL THEN ARRAY[enqueue.idempotency_key] END,
            ARRAY[enqueue.key_scope],
            coalesce(nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                     1048576));
        IF v_result.problem = 'tenant' THEN
            RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                    enqueue.tenant, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
        ELSIF v_result.problem = 'job_type' THEN
            RAISE EXCEPTION 'unknown job type "%" for tenant "%": register it with a component first',
                    enqueue.job_type, enqueue.tenant
                USING ERRCODE = 'foreign_key_violation', COLUMN = 'job_type';
        ELSIF v_result.problem IS NOT NULL THEN
            RAISE EXCEPTION 'payload is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                    v_result.payload_size, v_result.payload_limit
                USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
        END IF;
        IF v_result.dup_ords IS NULL THEN
            RETURN v_result.ids[1]; -- created
        END IF;
        IF v_result.dup_holders[1] IS NOT NULL THEN
            RETURN v_result.dup_holders[1]; -- a duplicate: nothing created
        END IF;
    END LOOP;
    RAISE EXCEPTION 'idempotency key "%" of tenant "%" kept changing hands during enqueue; retry later',
            enqueue.idempotency_key, enqueue.tenant
        USING ERRCODE = 'serialization_failure', COLUMN = 'idempotency_key';
END
$fn$;

-- Sluice schema, part 23: flow control in the claim (issue #38) -- pause and resume of a
-- job type or a tenant, concurrency keys (at most N running jobs per (tenant, type, key),
-- fleet-wide), a fleet-wide cap on a type's running jobs, and token-bucket rate limits
-- per type and per key. docs/flow-control.md describes each control and what it costs.
--
-- Two lanes. A pending job with `flow_key` NULL is in the main lane: claimed exactly as
-- before, from jobs_claim_tenant_idx, whose predicate now leaves the other lane out. A
-- job with a concurrency key, or of a type under a type-wide control (paused, a running
-- cap or a rate; job_types.flow), has `flow_key` set (its key, or '' without one) and is
-- claimed through `sluice.flow_keys`: one row per (tenant, type, key) holding how many
-- of the key's jobs run (`running`), its token bucket, and `ready_at`, the time from
-- which the claim should look at the key (NULL: at its limit, or nothing pending). The
-- claim visits only keys whose `ready_at` has passed (flow_keys_ready_idx), oldest
-- first, so keys take turns; a key at its limit, or out of tokens, is not in that index
-- range and costs nothing however many jobs wait behind it.
--
-- `running` and `ready_at` follow the jobs by three row triggers on sluice.jobs, each
-- guarded by a WHEN that is false for a job without `flow_key` (no function call then):
-- a job of a key that leaves `running` (completed, failed, retried, reaped, released,
-- cancelled, deleted) gives its slot back and makes the key ready; a job of a key that
-- becomes pending (enqueued, retried, moved into the lane) makes the key ready by its
-- run_at. The claim counts its own claims in the same statement.
--
-- The claim (sluice.claim(...), eight parameters, CREATE OR REPLACE with the same result)
-- runs the statement of migration 0022 -- plus `flow_key IS NULL` so it keeps its index,
-- and leaving paused tenants -- whenever no key is ready; only then does it take the
-- second statement, which adds the keys' jobs to the same fair ranking.
--
-- Upgrading a live database: new columns with defaults (no rewrite), one index rebuilt
-- (jobs_claim_tenant_idx with its new predicate), a new table, triggers, functions. Hosts
-- of the previous version keep working: their enqueue (twelve-parameter enqueue_jobs)
-- now calls the new one without keys, and their claim is this claim.

ALTER TABLE sluice.tenants ADD COLUMN paused boolean NOT NULL DEFAULT false;
CREATE INDEX tenants_paused_idx ON sluice.tenants (id) WHERE paused;

ALTER TABLE sluice.job_types
    ADD COLUMN paused boolean NOT NULL DEFAULT false,
    ADD COLUMN max_running integer CHECK (max_running > 0),
    ADD COLUMN max_running_per_key integer CHECK (max_running_per_key > 0),
    ADD COLUMN rate_count integer CHECK (rate_count > 0),
    ADD COLUMN rate_period_ms bigint CHECK (rate_period_ms > 0),
    ADD COLUMN key_rate_count integer CHECK (key_rate_count > 0),
    ADD COLUMN key_rate_period_ms bigint CHECK (key_rate_period_ms > 0),
    -- The type's token bucket: tokens left at rate_refilled_at (NULL: full).
    ADD COLUMN rate_tokens double precision,
    ADD COLUMN rate_refilled_at timestamptz,
    ADD CONSTRAINT job_types_rate_whole CHECK ((rate_count IS NULL) = (rate_period_ms IS NULL)),
    ADD CONSTRAINT job_types_key_rate_whole
        CHECK ((key_rate_count IS NULL) = (key_rate_period_ms IS NULL)),
    -- Jobs without a key of such a type go through the keys' lane too (key '').
    ADD COLUMN flow boolean GENERATED ALWAYS AS
        (paused OR max_running IS NOT NULL OR rate_count IS NOT NULL) STORED;
CREATE INDEX job_types_flow_idx ON sluice.job_types (tenant, name) WHERE flow;
CREATE INDEX job_types_paused_idx ON sluice.job_types (tenant, name) WHERE paused;

-- The lane: NULL (main), '' (a type-wide control, no key) or the job's concurrency key.
ALTER TABLE sluice.jobs ADD COLUMN flow_key text
    CONSTRAINT jobs_flow_key_length CHECK (char_length(flow_key) <= 255);

DROP INDEX sluice.jobs_claim_tenant_idx;
CREATE INDEX jobs_claim_tenant_idx ON sluice.jobs (tenant, priority DESC, run_at, id)
    WHERE state = 'pending' AND flow_key IS NULL;
CREATE INDEX jobs_flow_idx ON sluice.jobs (tenant, job_type, flow_key, priority DESC, run_at, id)
    WHERE state = 'pending' AND flow_key IS NOT NULL;

CREATE TABLE sluice.flow_keys (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text NOT NULL REFERENCES sluice.tenants (id) ON DELETE CASCADE,
    job_type text NOT NULL,
    key text NOT NULL,
    running integer NOT NULL DEFAULT 0 CHECK (running >= 0),
    -- The key's token bucket (types with --rate-per-key): tokens left at refilled_at.
    tokens double precision,
    refilled_at timestamptz,
    ready_at timestamptz,
    UNIQUE (tenant, job_type, key)
);
CREATE INDEX flow_keys_ready_idx ON sluice.flow_keys (tenant, job_type, ready_at)
    WHERE ready_at IS NOT NULL;
CREATE INDEX flow_keys_due_idx ON sluice.flow_keys (ready_at) WHERE ready_at IS NOT NULL;
COMMENT ON TABLE sluice.flow_keys IS 'One row per (tenant, job type, concurrency key) in the flow lane: its running jobs, token bucket and when the claim should look at it next (NULL: at its limit or idle). See migrations/0024_flow_control.sql and docs/flow-control.md.';

-- Tokens in a bucket of `count` per `period_ms` (burst `count`) that held `tokens` at
-- `refilled_at` (NULL: full), now.
CREATE FUNCTION sluice.flow_tokens(tokens double precision, refilled_at timestamptz,
                                   count integer, period_ms bigint)
 RETURNS double precision
 LANGUAGE sql
 STABLE
AS $function$
    SELECT CASE WHEN tokens IS NULL OR refilled_at IS NULL THEN count::float8
                ELSE least(count::float8,
                           tokens + greatest(extract(epoch FROM now() - refilled_at), 0)
                                    * 1000 * count / period_ms)
           END
$function$;

-- The triggers' function: see the top of this file. Row triggers, after the statement's
-- rows are written; each is reached only through its WHEN.
CREATE FUNCTION sluice.flow_keys_follow()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.flow_key IS NOT NULL AND OLD.state = 'running'
       AND (TG_OP = 'DELETE' OR NEW.state <> 'running') THEN
        UPDATE sluice.flow_keys k
        SET running = greatest(k.running - 1, 0), ready_at = coalesce(k.ready_at, now())
        WHERE k.tenant = OLD.tenant AND k.job_type = OLD.job_type AND k.key = OLD.flow_key;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.flow_key IS NOT NULL AND NEW.state = 'pending' THEN
        INSERT INTO sluice.flow_keys AS k (tenant, job_type, key, ready_at)
        VALUES (NEW.tenant, NEW.job_type, NEW.flow_key, NEW.run_at)
        ON CONFLICT (tenant, job_type, key) DO UPDATE SET ready_at = EXCLUDED.ready_at
        WHERE k.ready_at IS NULL OR k.ready_at > EXCLUDED.ready_at;
    END IF;
    RETURN NULL;
END
$function$;

CREATE TRIGGER jobs_flow_insert AFTER INSERT ON sluice.jobs
    FOR EACH ROW WHEN (NEW.flow_key IS NOT NULL)
    EXECUTE FUNCTION sluice.flow_keys_follow();
CREATE TRIGGER jobs_flow_update AFTER UPDATE OF state, flow_key ON sluice.jobs
    FOR EACH ROW
    WHEN ((OLD.flow_key IS NOT NULL AND OLD.state = 'running' AND NEW.state <> 'running')
          OR (NEW.flow_key IS NOT NULL AND NEW.state = 'pending'
              AND (OLD.state <> 'pending' OR OLD.flow_key IS DISTINCT FROM NEW.flow_key)))
    EXECUTE FUNCTION sluice.flow_keys_follow();
CREATE TRIGGER jobs_flow_delete AFTER DELETE ON sluice.jobs
    FOR EACH ROW WHEN (OLD.flow_key IS NOT NULL AND OLD.state = 'running')
    EXECUTE FUNCTION sluice.flow_keys_follow();

-- The one INSERT of new jobs takes concurrency keys (p_concurrency_key, NULL or one per
-- row, NULL for none) and puts each job in its lane: its key, '' for a job without one of
-- a type under a type-wide control (job_types.flow), else NULL.
CREATE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE plpgsql
AS $function$
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
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END)
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
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
                                     max_attempts, key_scope, parent_id, parent_seq, flow_key)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts),
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END)
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
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
                                     parent_id, parent_seq, flow_key)
            SELECT u.id, u.tenant, u.job_type, u.payload, u.priority,
                   coalesce(u.at, now() + coalesce(u.delay_us, 0) * interval '1 microsecond'),
                   coalesce(u.max_attempts, jt.max_attempts), u.idempotency_key,
                   coalesce(u.key_scope, 'retained')::sluice.key_scope, u.parent_id, u.parent_seq,
                   coalesce(u.concurrency_key, CASE WHEN jt.flow THEN '' END)
            FROM (SELECT unnest(n.a) AS id, unnest(p_tenant) AS tenant,
                         unnest(p_job_type) AS job_type, unnest(p_payload) AS payload,
                         unnest(p_priority) AS priority, unnest(p_delay_us) AS delay_us,
                         unnest(p_at) AS at, unnest(p_max_attempts) AS max_attempts,
                         unnest(p_idempotency_key) AS idempotency_key,
                         unnest(p_key_scope) AS key_scope,
                         unnest(p_concurrency_key) AS concurrency_key,
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
$function$;


CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, NULL::text[]);
$function$;

-- sluice.enqueue(...) takes a concurrency key (default none, so existing calls keep
-- working): the eight-parameter function is replaced by the nine-parameter one, as two
-- overloads with defaults would make a call of the first eight ambiguous.
DROP FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text);
CREATE FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer DEFAULT 10, run_at timestamp with time zone DEFAULT now(), idempotency_key text DEFAULT NULL::text, max_attempts integer DEFAULT NULL::integer, key_scope text DEFAULT 'retained'::text, concurrency_key text DEFAULT NULL::text)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
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
    IF enqueue.concurrency_key IS NOT NULL
       AND char_length(enqueue.concurrency_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'invalid concurrency_key: must be 1 to 255 characters, got %',
                char_length(enqueue.concurrency_key)
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'concurrency_key';
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
                     1048576),
            NULL, NULL,
            CASE WHEN enqueue.concurrency_key IS NOT NULL THEN ARRAY[enqueue.concurrency_key] END);
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
$function$;
REVOKE EXECUTE ON FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer, run_at timestamp with time zone, idempotency_key text, max_attempts integer, key_scope text, concurrency_key text) FROM PUBLIC;

COMMENT ON FUNCTION sluice.enqueue(tenant text, job_type text, payload jsonb, priority integer, run_at timestamp with time zone, idempotency_key text, max_attempts integer, key_scope text, concurrency_key text) IS 'Enqueue one Sluice job inside the caller''s transaction; returns the job id (the existing one for a duplicate idempotency key). See docs/enqueue-from-sql.md.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[]) IS 'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys, parents, concurrency keys and one wake-up notice. Used by the Rust enqueue, follow-up jobs, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql, 0014_follow_up_jobs.sql and 0024_flow_control.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[]) IS 'sluice.enqueue_jobs(...) without concurrency keys (the form of migration 0014). See migrations/0024_flow_control.sql.';

-- The claim: see the top of this file.
CREATE OR REPLACE FUNCTION sluice.claim(p_worker text, p_limit integer, p_lease_us bigint, p_tenants text[], p_job_types text[], p_max_contract smallint, p_secret_keys text[], p_skip_tenants text[])
 RETURNS TABLE(id bigint, tenant text, job_type text, payload bytea, priority integer, attempt integer, max_attempts integer, lease_token uuid, locked_until timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    -- The job types (tenant/name; a tenant id holds no `/`) this host must leave pending:
    -- those whose component targets a newer contract than it runs (for a newer host),
    -- those granted secrets it cannot decrypt -- it holds no key (p_secret_keys empty),
    -- or a granted secret of the type's tenant is stored under a key id it does not hold
    -- -- and the webhook deliveries (tenant/sluice.webhook) of tenants with an endpoint
    -- whose signing secret it cannot open (migration 0022). Found by the
    -- components_contract_idx, job_types_secrets_idx and webhook_endpoints key id
    -- probes, empty (and free) when every host is current and holds the keys.
    v_skip text[] := ARRAY(
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.components co
        JOIN sluice.job_types jt ON jt.component_id = co.id
        WHERE co.contract > p_max_contract
        UNION
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE cardinality(jt.secrets) > 0
          AND (COALESCE(cardinality(p_secret_keys), 0) = 0
               OR EXISTS (SELECT 1 FROM sluice.secrets s
                          WHERE s.tenant = jt.tenant AND s.name = ANY (jt.secrets)
                            AND s.key_id <> ALL (p_secret_keys)))
        UNION
        SELECT t.tenant || '/sluice.webhook'
        FROM sluice.webhook_tenants_sealed_elsewhere(p_secret_keys) AS t(tenant)
        WHERE COALESCE(cardinality(p_secret_keys), 0) > 0
        UNION
        -- Paused types (migration 0024): their pending jobs are in the keys' lane, but one
        -- enqueued while the pause committed may still be in the main lane.
        SELECT jt.tenant || '/' || jt.name
        FROM sluice.job_types jt
        WHERE jt.paused);
    -- Webhook deliveries are signed with sealed secrets: a host with no key leaves them
    -- all.
    v_keyless boolean := COALESCE(cardinality(p_secret_keys), 0) = 0;
    -- Paused tenants (migration 0024): none of their jobs is claimed.
    v_paused text[] := ARRAY(SELECT t.id FROM sluice.tenants t WHERE t.paused);
    -- Whether a key of the flow lane is ready: if not, the claim is 0022's statement.
    v_flow boolean := EXISTS (SELECT 1 FROM sluice.flow_keys k WHERE k.ready_at <= now());
    -- The ready keys this claim looks at, locked (see below).
    v_keys bigint[];
BEGIN
    -- Driven from the capped tenants, one probe of the claim index each (a scalar
    -- subquery is never turned into a join): as an EXISTS, the planner could make it a
    -- semi-join that reads every due pending job to find the tenants that have one.
    PERFORM 1
    FROM sluice.tenants t
    WHERE t.max_running IS NOT NULL
      AND (p_tenants IS NULL OR t.id = ANY (p_tenants))
      AND (p_skip_tenants IS NULL OR t.id <> ALL (p_skip_tenants))
      AND NOT t.paused
      AND ((SELECT true FROM sluice.jobs j
            WHERE j.tenant = t.id AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
            LIMIT 1)
           OR (v_flow AND (SELECT true FROM sluice.flow_keys k
                           WHERE k.tenant = t.id AND k.ready_at <= now() LIMIT 1)))
    ORDER BY t.id
    FOR NO KEY UPDATE OF t;

    IF v_flow THEN
        -- Types under a fleet-wide cap or rate with a ready key: locked in (tenant, name)
        -- order, after the tenants (every claimer locks in that order, so none waits in
        -- a circle), so their running count and bucket are exact for the statements
        -- below, which take fresh snapshots. Claimers of such a type take turns for the
        -- length of one claim, as for a capped tenant.
        PERFORM 1
        FROM sluice.job_types jt
        WHERE jt.flow AND NOT jt.paused
          AND (jt.max_running IS NOT NULL OR jt.rate_count IS NOT NULL)
          AND (p_tenants IS NULL OR jt.tenant = ANY (p_tenants))
          AND (p_skip_tenants IS NULL OR jt.tenant <> ALL (p_skip_tenants))
          AND (p_job_types IS NULL OR jt.name = ANY (p_job_types))
          AND (SELECT true FROM sluice.flow_keys k
               WHERE k.tenant = jt.tenant AND k.job_type = jt.name AND k.ready_at <= now()
               LIMIT 1)
        ORDER BY jt.tenant, jt.name
        FOR NO KEY UPDATE OF jt;

        -- The keys to look at: for each (tenant, type) with a ready key (a loose index
        -- scan over flow_keys_ready_idx: one probe per pair), the keys ready longest,
        -- as many as the type may still start (its cap, its tokens, p_limit), locked
        -- with SKIP LOCKED: a key another claim holds is its to serve this time. Keys
        -- at their limit or out of tokens are not in the index range read.
        v_keys := ARRAY(
            WITH RECURSIVE pairs AS (
                (SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                 WHERE k.ready_at IS NOT NULL
                 ORDER BY k.tenant, k.job_type LIMIT 1)
                UNION ALL
                SELECT n.tenant, n.job_type
                FROM pairs p
                CROSS JOIN LATERAL (
                    SELECT k.tenant, k.job_type FROM sluice.flow_keys k
                    WHERE k.ready_at IS NOT NULL
                      AND (k.tenant, k.job_type) > (p.tenant, p.job_type)
                    ORDER BY k.tenant, k.job_type LIMIT 1) n
            )
            SELECT fk.id
            FROM pairs p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT GREATEST(0, LEAST(
                    p_limit,
                    CASE WHEN jt.max_running IS NULL THEN p_limit
                         ELSE jt.max_running
                              - (SELECT count(*)::integer FROM sluice.jobs j
                                 WHERE j.tenant = jt.tenant AND j.state = 'running'
                                   AND j.job_type = jt.name)
                    END,
                    CASE WHEN jt.rate_count IS NULL THEN p_limit
                         ELSE floor(sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                       jt.rate_count, jt.rate_period_ms))::integer
                    END)) AS n
            ) b
            CROSS JOIN LATERAL (
                SELECT k.id FROM sluice.flow_keys k
                WHERE k.tenant = p.tenant AND k.job_type = p.job_type
                  AND k.ready_at IS NOT NULL AND k.ready_at <= now()
                ORDER BY k.ready_at
                LIMIT b.n
                FOR UPDATE SKIP LOCKED
            ) fk
            WHERE NOT jt.paused
              AND (cardinality(v_paused) = 0 OR p.tenant <> ALL (v_paused))
              AND (p_tenants IS NULL OR p.tenant = ANY (p_tenants))
              AND (p_skip_tenants IS NULL OR p.tenant <> ALL (p_skip_tenants))
              AND (p_job_types IS NULL OR p.job_type = ANY (p_job_types))
              AND (cardinality(v_skip) = 0 OR (p.tenant || '/' || p.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR p.job_type <> 'sluice.webhook'));

        RETURN QUERY
        WITH RECURSIVE pending_tenants AS (
            -- The main lane's tenants, as in the statement below.
            (SELECT j.tenant FROM sluice.jobs j
             WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
             ORDER BY j.tenant LIMIT 1)
            UNION ALL
            SELECT (SELECT j.tenant FROM sluice.jobs j
                    WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                    ORDER BY j.tenant LIMIT 1)
            FROM pending_tenants p
            WHERE p.tenant IS NOT NULL
        ),
        key_rows AS (
            SELECT k.id, k.tenant, k.job_type, k.key, k.running, k.tokens, k.refilled_at
            FROM sluice.flow_keys k
            WHERE k.id = ANY (v_keys)
        ),
        -- Each type's room now (fresh snapshot, after the locks): its cap less what runs,
        -- and its whole tokens.
        types AS (
            SELECT jt.tenant, jt.name, jt.max_running_per_key, jt.key_rate_count,
                   jt.key_rate_period_ms, jt.rate_count, jt.rate_period_ms, x.tokens,
                   GREATEST(0, LEAST(
                       p_limit,
                       CASE WHEN jt.max_running IS NULL THEN p_limit
                            ELSE jt.max_running
                                 - (SELECT count(*)::integer FROM sluice.jobs j
                                    WHERE j.tenant = jt.tenant AND j.state = 'running'
                                      AND j.job_type = jt.name)
                       END,
                       CASE WHEN x.tokens IS NULL THEN p_limit
                            ELSE floor(x.tokens)::integer END)) AS room
            FROM (SELECT DISTINCT r.tenant, r.job_type FROM key_rows r) p
            JOIN sluice.job_types jt ON jt.tenant = p.tenant AND jt.name = p.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN jt.rate_count IS NOT NULL
                            THEN sluice.flow_tokens(jt.rate_tokens, jt.rate_refilled_at,
                                                    jt.rate_count, jt.rate_period_ms)
                       END AS tokens
            ) x
        ),
        -- Each key's room: the type's, its own limit less what it runs, its whole tokens.
        -- Jobs without a key ('') have no per-key limit or bucket.
        keys AS (
            SELECT r.id, r.tenant, r.job_type, r.key, r.running, ty.room AS type_room,
                   CASE WHEN r.key <> '' THEN ty.max_running_per_key END AS per_key,
                   ty.key_rate_count, ty.key_rate_period_ms, kt.tokens,
                   GREATEST(0, LEAST(
                       ty.room,
                       CASE WHEN r.key <> '' AND ty.max_running_per_key IS NOT NULL
                            THEN ty.max_running_per_key - r.running ELSE p_limit END,
                       CASE WHEN kt.tokens IS NULL THEN p_limit
                            ELSE floor(kt.tokens)::integer END)) AS room
            FROM key_rows r
            JOIN types ty ON ty.tenant = r.tenant AND ty.name = r.job_type
            CROSS JOIN LATERAL (
                SELECT CASE WHEN r.key <> '' AND ty.key_rate_count IS NOT NULL
                            THEN sluice.flow_tokens(r.tokens, r.refilled_at,
                                                    ty.key_rate_count, ty.key_rate_period_ms)
                       END AS tokens
            ) kt
        ),
        -- Each key's due jobs in its own order, up to its room (jobs_flow_idx).
        key_candidates AS (
            SELECT c.id, c.priority, c.run_at, k.tenant, k.job_type, k.id AS key_id,
                   row_number() OVER (PARTITION BY k.id
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS key_rank
            FROM keys k
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = k.tenant AND j.job_type = k.job_type AND j.flow_key = k.key
                  AND j.state = 'pending' AND j.flow_key IS NOT NULL AND j.run_at <= now()
                  AND k.room > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT k.room
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Keys take turns within their type (every key's first job before any key's
        -- second), up to the type's room.
        key_ranked AS (
            SELECT c.id, c.priority, c.run_at, c.tenant, c.key_id, ty.room,
                   row_number() OVER (PARTITION BY c.tenant, c.job_type
                                      ORDER BY c.key_rank, c.priority DESC, c.run_at, c.id)
                       AS lane_rank
            FROM key_candidates c
            JOIN types ty ON ty.tenant = c.tenant AND ty.name = c.job_type
        ),
        tenant_list AS (
            SELECT l.tenant
            FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
                  UNION
                  SELECT r.tenant FROM key_rows r
                  UNION
                  SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
            WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
              AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
        ),
        counted AS (
            SELECT tl.tenant, t.max_running,
                   CASE WHEN t.max_running IS NOT NULL
                             OR (SELECT count(*) FROM tenant_list) > 1
                        THEN (SELECT count(*)::integer FROM sluice.jobs j
                              WHERE j.tenant = tl.tenant AND j.state = 'running')
                        ELSE 0
                   END AS running
            FROM tenant_list tl
            LEFT JOIN sluice.tenants t ON t.id = tl.tenant
        ),
        budget AS (
            SELECT c.tenant, c.running,
                   GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit))) AS take
            FROM counted c
        ),
        main_candidates AS (
            SELECT c.id, c.priority, c.run_at, b.tenant, NULL::bigint AS key_id,
                   row_number() OVER (PARTITION BY b.tenant
                                      ORDER BY c.priority DESC, c.run_at, c.id) AS lane_rank
            FROM budget b
            CROSS JOIN LATERAL (
                SELECT j.id, j.priority, j.run_at
                FROM sluice.jobs j
                WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
                  AND j.run_at <= now()
                  AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
                  AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
                  AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
                  AND b.take > 0
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT b.take
                FOR UPDATE SKIP LOCKED
            ) c
        ),
        -- Both lanes in one fair ranking (docs/fairness.md): a tenant's key = what it
        -- runs + its rank, the lanes interleaved by their own ranks.
        candidates AS (
            SELECT a.id, a.priority, a.run_at, a.key_id,
                   b.running + row_number() OVER w AS fair, row_number() OVER w AS n, b.take
            FROM (SELECT m.id, m.priority, m.run_at, m.tenant, m.key_id, m.lane_rank
                  FROM main_candidates m
                  UNION ALL
                  SELECT k.id, k.priority, k.run_at, k.tenant, k.key_id, k.lane_rank
                  FROM key_ranked k
                  WHERE k.lane_rank <= k.room) a
            JOIN budget b ON b.tenant = a.tenant
            WINDOW w AS (PARTITION BY a.tenant ORDER BY a.lane_rank, a.priority DESC, a.run_at, a.id)
        ),
        picked AS (
            SELECT c.id, c.key_id FROM candidates c
            WHERE c.n <= c.take
            ORDER BY c.fair, c.priority DESC, c.run_at, c.id
            LIMIT p_limit
        ),
        claimed AS (
            UPDATE sluice.jobs j
            SET state = 'running',
                attempt = j.attempt + 1,
                locked_by = p_worker,
                locked_until = now() + p_lease_us * interval '1 microsecond',
                lease_token = gen_random_uuid(),
                updated_at = now(),
                attempt_id = nextval('sluice.attempt_history_id_seq'),
                attempt_started_at = clock_timestamp(),
                attempt_worker = p_worker,
                attempt_fuel = NULL
            WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
            RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                      j.max_attempts, j.lease_token, j.locked_until
        ),
        taken AS (
            SELECT p.key_id, count(*)::integer AS n
            FROM picked p WHERE p.key_id IS NOT NULL
            GROUP BY p.key_id
        ),
        -- Every key looked at: its running count and bucket, and when to look again --
        -- never (NULL) at its limit (a job ending makes it ready), when a token is back
        -- when out of tokens, by its first pending job when it started nothing (NULL:
        -- none pending), else now, behind the keys that waited longer.
        keys_set AS (
            UPDATE sluice.flow_keys fk
            SET running = fk.running + coalesce(t.n, 0),
                tokens = CASE WHEN k.tokens IS NOT NULL
                              THEN k.tokens - coalesce(t.n, 0) END,
                refilled_at = CASE WHEN k.tokens IS NOT NULL THEN now() END,
                ready_at = CASE
                    WHEN k.type_room = 0 AND coalesce(t.n, 0) = 0 THEN fk.ready_at
                    WHEN k.per_key IS NOT NULL AND fk.running + coalesce(t.n, 0) >= k.per_key
                        THEN NULL
                    WHEN k.tokens IS NOT NULL AND k.tokens - coalesce(t.n, 0) < 1
                        THEN now() + (1 - (k.tokens - coalesce(t.n, 0))) * k.key_rate_period_ms
                                     / k.key_rate_count * interval '1 millisecond'
                    WHEN coalesce(t.n, 0) = 0
                        THEN (SELECT CASE WHEN f.run_at <= now() THEN f.run_at
                                          ELSE (SELECT min(j.run_at) FROM sluice.jobs j
                                                WHERE j.tenant = k.tenant
                                                  AND j.job_type = k.job_type
                                                  AND j.flow_key = k.key
                                                  AND j.state = 'pending'
                                                  AND j.flow_key IS NOT NULL) END
                              FROM (SELECT (SELECT j.run_at FROM sluice.jobs j
                                            WHERE j.tenant = k.tenant
                                              AND j.job_type = k.job_type
                                              AND j.flow_key = k.key
                                              AND j.state = 'pending'
                                              AND j.flow_key IS NOT NULL
                                            ORDER BY j.priority DESC, j.run_at, j.id
                                            LIMIT 1) AS run_at) f)
                    ELSE clock_timestamp()
                END
            FROM keys k
            LEFT JOIN taken t ON t.key_id = k.id
            WHERE fk.id = k.id
        ),
        -- The types' buckets: what this claim took from each.
        types_set AS (
            UPDATE sluice.job_types jt
            SET rate_tokens = ty.tokens - x.n, rate_refilled_at = now()
            FROM types ty
            JOIN (SELECT r.tenant, r.job_type, sum(t.n)::integer AS n
                  FROM taken t JOIN key_rows r ON r.id = t.key_id
                  GROUP BY r.tenant, r.job_type) x
              ON x.tenant = ty.tenant AND x.job_type = ty.name
            WHERE ty.tokens IS NOT NULL AND jt.tenant = ty.tenant AND jt.name = ty.name
        )
        SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
               c.max_attempts, c.lease_token, c.locked_until
        FROM claimed c
        ORDER BY c.priority DESC, c.run_at, c.id;
        RETURN;
    END IF;

    -- No key is ready: migration 0022's statement, for the main lane.

    RETURN QUERY
    WITH RECURSIVE pending_tenants AS (
        -- A loose index scan over jobs_claim_tenant_idx: one probe per tenant with
        -- pending rows, however deep each backlog is.
        (SELECT j.tenant FROM sluice.jobs j
         WHERE j.state = 'pending' AND j.flow_key IS NULL AND p_tenants IS NULL
         ORDER BY j.tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant FROM sluice.jobs j
                WHERE j.state = 'pending' AND j.flow_key IS NULL AND j.tenant > p.tenant
                ORDER BY j.tenant LIMIT 1)
        FROM pending_tenants p
        WHERE p.tenant IS NOT NULL
    ),
    tenant_list AS (
        SELECT l.tenant
        FROM (SELECT p.tenant FROM pending_tenants p WHERE p.tenant IS NOT NULL
              UNION
              SELECT u.tenant FROM unnest(p_tenants) AS u(tenant)) l
        -- A spare slot's claim leaves the tenants already running on that worker.
        WHERE (p_skip_tenants IS NULL OR l.tenant <> ALL (p_skip_tenants))
          AND (cardinality(v_paused) = 0 OR l.tenant <> ALL (v_paused))
    ),
    counted AS (
        SELECT tl.tenant, t.max_running,
               -- Counted per tenant over jobs_running_idx, by index scans (which mark
               -- index entries of finished jobs dead as they pass them; a bitmap scan
               -- would not) -- but only where the count changes the answer: for a cap,
               -- or to interleave several tenants. One uncapped tenant's claim would
               -- otherwise visit every job it runs (O(running) per claim).
               CASE WHEN t.max_running IS NOT NULL
                         OR (SELECT count(*) FROM tenant_list) > 1
                    THEN (SELECT count(*)::integer FROM sluice.jobs j
                          WHERE j.tenant = tl.tenant AND j.state = 'running')
                    ELSE 0
               END AS running
        FROM tenant_list tl
        LEFT JOIN sluice.tenants t ON t.id = tl.tenant
    ),
    budget AS (
        SELECT c.tenant, c.running,
               GREATEST(0, LEAST(p_limit, COALESCE(c.max_running - c.running, p_limit))) AS take
        FROM counted c
    ),
    candidates AS (
        SELECT c.id, c.priority, c.run_at,
               b.running + row_number() OVER (
                   PARTITION BY b.tenant ORDER BY c.priority DESC, c.run_at, c.id) AS fair
        FROM budget b
        CROSS JOIN LATERAL (
            SELECT j.id, j.priority, j.run_at
            FROM sluice.jobs j
            WHERE j.tenant = b.tenant AND j.state = 'pending' AND j.flow_key IS NULL
              AND j.run_at <= now()
              AND (p_job_types IS NULL OR j.job_type = ANY (p_job_types))
              AND (cardinality(v_skip) = 0 OR (j.tenant || '/' || j.job_type) <> ALL (v_skip))
              AND (NOT v_keyless OR j.job_type <> 'sluice.webhook')
              AND b.take > 0
            ORDER BY j.priority DESC, j.run_at, j.id
            LIMIT b.take
            FOR UPDATE SKIP LOCKED
        ) c
    ),
    picked AS (
        SELECT c.id FROM candidates c
        ORDER BY c.fair, c.priority DESC, c.run_at, c.id
        LIMIT p_limit
    ),
    claimed AS (
        UPDATE sluice.jobs j
        SET state = 'running',
            attempt = j.attempt + 1,
            locked_by = p_worker,
            locked_until = now() + p_lease_us * interval '1 microsecond',
            lease_token = gen_random_uuid(),
            updated_at = now(),
            -- The attempt lives on the row until it ends (see the top of this file).
            -- clock_timestamp(), not now(): a claim may have waited on a capped
            -- tenant's lock since its statement began, and the history must not show
            -- it starting before the completion it waited for.
            attempt_id = nextval('sluice.attempt_history_id_seq'),
            attempt_started_at = clock_timestamp(),
            attempt_worker = p_worker,
            attempt_fuel = NULL
        -- By primary key: the ids are already locked (the state test is a guard, not a
        -- search). It compares text so that no plan can match the pending-only partial
        -- indexes' predicate and scan one of them whole for these ids.
        WHERE j.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND j.state::text = 'pending'
        RETURNING j.id, j.tenant, j.job_type, j.payload, j.priority, j.run_at, j.attempt,
                  j.max_attempts, j.lease_token, j.locked_until
    )
    SELECT c.id, c.tenant, c.job_type, c.payload, c.priority::integer, c.attempt,
           c.max_attempts, c.lease_token, c.locked_until
    FROM claimed c
    ORDER BY c.priority DESC, c.run_at, c.id;
END
$function$;


-- Sluice schema, part 27: durable waits (issue #43) -- what a `waiting` job waits for,
-- signals, and the attempt outcome `suspended`.
--
-- * sluice.jobs.waiting_for: the signal name a waiting job awaits (1 to 128 characters);
--   awaited: the job ids it awaits (its follow-up jobs: await-jobs); snoozes: how many
--   times it snoozed so far (flow.snooze, bounded by the type's --max-snoozes). Only a
--   `waiting` job has waiting_for or awaited set (jobs_wait_only_waiting). A waiting job
--   is like a pending one for the existing constraints: no lease, no attempt on the row
--   (the suspension gives the attempt back: attempt - 1, so the next claim's + 1 yields
--   the same number), finished_at NULL. Its run_at is when it wakes by itself: the sleep's
--   instant, the signal's deadline, or 9999-12-31 (the end of jobs_run_at_range) when
--   nothing but a signal or its children wakes it.
-- * jobs_waiting_idx: the waker's range (finish/wake_waiting.sql), partial, so it costs
--   nothing to jobs that never wait.
-- * jobs_idempotency_key_uidx: a waiting job is unfinished, so a key of scope
--   `unfinished` stays taken while its job waits; sluice.enqueue_jobs(...) finds such a
--   holder too.
-- * sluice.enqueue_jobs(...) takes reserved ids (a fourteenth parameter, see below): a
--   follow-up job's id is known to the guest when it asks (`jobs.enqueue` returns it) and
--   the job is inserted under it by the completion or the suspension.
-- * sluice.attempt_history.outcome may be `suspended`: a run that ended by suspending,
--   with the cause in `error` ("sleep until ...", "await signal `approve`").
-- * sluice.signals: one row per signal sent to a job (sluice.signal(...), `sluice jobs
--   signal`, POST /v1/jobs/{id}/signals/{name}); payload NULL when sent without one;
--   consumed_seq: the journal sequence number of the await-signal call that took it
--   (NULL: not taken yet). Taken oldest first per (job, name): signals_job_idx. No
--   foreign key to sluice.jobs (a per-row cascade costs every deleted job, issue 42): the
--   statements that delete jobs (retention, bulk delete) delete their signals set-based,
--   as they delete their journal.
-- * sluice.signal(job_id, name, payload): sends a signal inside the caller's transaction
--   (a rolled-back transaction sends nothing). It locks the job row, so it serialises
--   with the suspension statement (which locks it first too): a signal committed before
--   a suspension is seen by it, and a suspension committed before a signal is woken by
--   it. When the job waits for that name it becomes pending now and the claimers are told
--   (NOTIFY sluice_jobs). Returns whether it woke the job.
--
-- Upgrading a live database: three columns (no rewrite: NULL and a constant default),
-- constraints added NOT VALID and validated (a scan under a lighter lock), one unique
-- index rebuilt with a wider predicate, one partial index (empty), a new table and
-- functions. Hosts of earlier versions never suspend a job and ignore the new columns;
-- their enqueue (twelve or thirteen parameters) calls the new one without ids.

ALTER TABLE sluice.jobs
    ADD COLUMN waiting_for text,
    ADD COLUMN awaited bigint[],
    ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
ALTER TABLE sluice.jobs
    ADD CONSTRAINT jobs_waiting_for_length
        CHECK (char_length(waiting_for) BETWEEN 1 AND 128) NOT VALID,
    ADD CONSTRAINT jobs_awaited_no_nulls
        CHECK (array_position(awaited, NULL::int8) IS NULL) NOT VALID,
    ADD CONSTRAINT jobs_snoozes_nonnegative CHECK (snoozes >= 0) NOT VALID,
    ADD CONSTRAINT jobs_wait_only_waiting
        CHECK (state = 'waiting' OR (waiting_for IS NULL AND awaited IS NULL)) NOT VALID;
ALTER TABLE sluice.jobs VALIDATE CONSTRAINT jobs_waiting_for_length;
ALTER TABLE sluice.jobs VALIDATE CONSTRAINT jobs_awaited_no_nulls;
ALTER TABLE sluice.jobs VALIDATE CONSTRAINT jobs_snoozes_nonnegative;
ALTER TABLE sluice.jobs VALIDATE CONSTRAINT jobs_wait_only_waiting;

DROP INDEX sluice.jobs_idempotency_key_uidx;
CREATE UNIQUE INDEX jobs_idempotency_key_uidx ON sluice.jobs (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL
      AND (key_scope = 'retained' OR state IN ('pending', 'running', 'waiting'));

CREATE INDEX jobs_waiting_idx ON sluice.jobs (run_at) WHERE state = 'waiting';

ALTER TABLE sluice.attempt_history
    DROP CONSTRAINT job_attempts_outcome_known,
    ADD CONSTRAINT job_attempts_outcome_known CHECK (outcome IN
        ('completed', 'retry', 'dead', 'released', 'lease_expired', 'cancelled', 'suspended'))
        NOT VALID;
ALTER TABLE sluice.attempt_history VALIDATE CONSTRAINT job_attempts_outcome_known;

CREATE TABLE sluice.signals (
    id           bigserial   PRIMARY KEY,
    job_id       bigint      NOT NULL,
    name         text        NOT NULL
                             CONSTRAINT signals_name_length CHECK (char_length(name) BETWEEN 1 AND 128),
    payload      jsonb,
    sent_at      timestamptz NOT NULL DEFAULT now(),
    consumed_seq integer     CONSTRAINT signals_consumed_seq_check CHECK (consumed_seq >= 0)
);
CREATE INDEX signals_job_idx ON sluice.signals (job_id, name, id);
COMMENT ON TABLE sluice.signals IS
    'Signals sent to jobs (sluice.signal), kept until an await-signal call takes them (consumed_seq); deleted with their job. See migrations/0027_durable_waits.sql.';

CREATE FUNCTION sluice.signal(job_id bigint, name text, payload jsonb DEFAULT NULL::jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
#variable_conflict use_variable
DECLARE
    v_state       sluice.job_state;
    v_waiting_for text;
BEGIN
    IF signal.job_id IS NULL THEN
        RAISE EXCEPTION 'invalid job_id: must not be NULL'
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'job_id';
    END IF;
    IF signal.name IS NULL OR char_length(signal.name) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'invalid name: a signal name must be 1 to 128 characters, got %',
                coalesce(char_length(signal.name)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', COLUMN = 'name';
    END IF;
    -- The row lock serialises this with the suspension statement (see the file's top).
    SELECT j.state, j.waiting_for INTO v_state, v_waiting_for
    FROM sluice.jobs j WHERE j.id = signal.job_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', signal.job_id
            USING ERRCODE = 'no_data_found', COLUMN = 'job_id';
    END IF;
    IF v_state IN ('completed', 'dead', 'cancelled') THEN
        RAISE EXCEPTION 'job % is %: a finished job takes no signals', signal.job_id, v_state
            USING ERRCODE = 'object_not_in_prerequisite_state', COLUMN = 'job_id',
                  DETAIL = v_state::text;
    END IF;
    INSERT INTO sluice.signals AS s (job_id, name, payload)
    VALUES (signal.job_id, signal.name, signal.payload);
    IF v_state = 'waiting' AND v_waiting_for = signal.name THEN
        UPDATE sluice.jobs j
        SET state = 'pending', run_at = now(), waiting_for = NULL, awaited = NULL,
            updated_at = now()
        WHERE j.id = signal.job_id;
        PERFORM pg_notify('sluice_jobs', '');
        RETURN true;
    END IF;
    RETURN false;
END
$function$;
REVOKE EXECUTE ON FUNCTION sluice.signal(bigint, text, jsonb) FROM PUBLIC;
COMMENT ON FUNCTION sluice.signal(bigint, text, jsonb) IS
    'Send a signal to a job inside the caller''s transaction; wakes the job when it waits for that name (returns true then). See migrations/0027_durable_waits.sql and docs/durable.md.';

-- sluice.enqueue_jobs(...) takes reserved ids: p_id, one per row (NULL, or a NULL
-- element: drawn from sluice.jobs_id_seq as before). A follow-up job's id is reserved when
-- the guest asks for it (Store::reserve_job_ids, nextval of the same sequence) and the
-- job is inserted under it by the completion or the suspension. The fourteen-parameter
-- function is the thirteen-parameter one of migration 0024 with two changes: the ids
-- (`new_ids`), and a job holding a key of scope `unfinished` may be waiting (the `dups`
-- holder look-up). The thirteen- and twelve-parameter forms call it without ids, so
-- sluice.enqueue(...), the scheduler and hosts of earlier versions keep working.
CREATE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[], p_id bigint[])
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
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
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
            SELECT array_agg(coalesce(p_id[g.i], nextval('sluice.jobs_id_seq'))) AS a
            FROM generate_series(1, cardinality(p_tenant)) AS g(i)
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
                      AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running', 'waiting'))) AS holder
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


CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[], p_concurrency_key text[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, p_concurrency_key, NULL::int8[]);
$function$;

CREATE OR REPLACE FUNCTION sluice.enqueue_jobs(p_tenant text[], p_job_type text[], p_payload bytea[], p_priority smallint[], p_delay_us bigint[], p_at timestamp with time zone[], p_max_attempts integer[], p_idempotency_key text[], p_key_scope text[], p_default_max_payload bigint, p_parent_id bigint[], p_parent_seq integer[])
 RETURNS TABLE(problem text, problem_ord bigint, payload_size bigint, payload_limit bigint, ids bigint[], dup_ords bigint[], dup_holders bigint[])
 LANGUAGE sql
AS $function$
    SELECT * FROM sluice.enqueue_jobs(p_tenant, p_job_type, p_payload, p_priority,
                                      p_delay_us, p_at, p_max_attempts, p_idempotency_key,
                                      p_key_scope, p_default_max_payload, p_parent_id,
                                      p_parent_seq, NULL::text[], NULL::int8[]);
$function$;

COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint, bigint[], integer[], text[], bigint[]) IS
    'The one INSERT into sluice.jobs: a batch of jobs as arrays, all or none, with idempotency keys, parents, concurrency keys, reserved ids and one wake-up notice. Used by the Rust enqueue, follow-up jobs, sluice.enqueue(...) and the scheduler. See migrations/0011_one_enqueue.sql, 0014_follow_up_jobs.sql, 0024_flow_control.sql and 0027_durable_waits.sql.';
COMMENT ON FUNCTION sluice.enqueue_jobs(text[], text[], bytea[], smallint[], bigint[], timestamptz[], integer[], text[], text[], bigint, bigint[], integer[], text[]) IS
    'sluice.enqueue_jobs(...) without reserved ids (the form of migration 0024). See migrations/0027_durable_waits.sql.';

-- Sluice schema, part 5: transactional enqueue from SQL.
--
--   SELECT sluice.enqueue(tenant => 'acme', job_type => 'send-email',
--                         payload => '{"to":"a@example.com"}'::jsonb);
--
-- Runs inside the caller's transaction: a rollback leaves no job, and the wake-up
-- notification (channel `sluice_jobs`) is only delivered when the transaction commits.
-- It applies the rules of the Rust enqueue path (host/store/src/enqueue.rs) and raises
-- the same refusals, each with a standard SQLSTATE and the offending argument in the
-- error's COLUMN field (see docs/enqueue-from-sql.md):
--   unknown tenant / job type    23503 foreign_key_violation  COLUMN tenant / job_type
--   payload over the limit       54000 program_limit_exceeded COLUMN payload
--   argument out of range / NULL 22023 invalid_parameter_value COLUMN <argument>
-- A duplicate idempotency key returns the id of the job holding it and creates nothing.
--
-- The payload is stored as the UTF-8 text of the jsonb value (jsonb normalises spacing
-- and key order). Its limit is the tenant's max_payload_bytes, else the setting
-- `sluice.default_max_payload_bytes` if set (ALTER DATABASE ... SET ...), else 1 MiB.
--
-- SECURITY DEFINER: an application role needs only USAGE on the schema and EXECUTE on
-- this function, no rights on the tables. EXECUTE is revoked from PUBLIC.

CREATE FUNCTION sluice.enqueue(
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
    v_tenant_limit  integer;
    v_type_attempts integer;
    v_limit         bigint;
    v_bytes         bytea;
    v_run_at        timestamptz := coalesce(enqueue.run_at, now());
    v_id            bigint;
    v_round         integer;
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

    SELECT t.max_payload_bytes INTO v_tenant_limit
    FROM sluice.tenants t WHERE t.id = enqueue.tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown tenant "%": create it first (sluice tenants create %)',
                enqueue.tenant, enqueue.tenant
            USING ERRCODE = 'foreign_key_violation', COLUMN = 'tenant';
    END IF;
    SELECT jt.max_attempts INTO v_type_attempts
    FROM sluice.job_types jt WHERE jt.tenant = enqueue.tenant AND jt.name = enqueue.job_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown job type "%" for tenant "%": register it with a component first',
                enqueue.job_type, enqueue.tenant
            USING ERRCODE = 'foreign_key_violation', COLUMN = 'job_type';
    END IF;

    v_bytes := convert_to(enqueue.payload::text, 'UTF8');
    v_limit := coalesce(v_tenant_limit::bigint,
                        nullif(current_setting('sluice.default_max_payload_bytes', true), '')::bigint,
                        1048576);
    IF octet_length(v_bytes) > v_limit THEN
        RAISE EXCEPTION 'payload is % bytes, over the limit of % bytes: store large data elsewhere and pass a reference',
                octet_length(v_bytes), v_limit
            USING ERRCODE = 'program_limit_exceeded', COLUMN = 'payload';
    END IF;

    IF enqueue.idempotency_key IS NULL THEN
        INSERT INTO sluice.jobs (tenant, job_type, payload, priority, run_at, max_attempts, key_scope)
        VALUES (enqueue.tenant, enqueue.job_type, v_bytes, enqueue.priority, v_run_at,
                coalesce(enqueue.max_attempts, v_type_attempts),
                enqueue.key_scope::sluice.key_scope)
        RETURNING id INTO v_id;
    ELSE
        -- The unique index jobs_idempotency_key_uidx is the authority. A holder that
        -- commits while this statement waits is skipped by ON CONFLICT, and the next
        -- statement (a new snapshot under READ COMMITTED) finds it; a holder that frees
        -- its key in between lets the next round insert.
        FOR v_round IN 1..16 LOOP
            INSERT INTO sluice.jobs (tenant, job_type, payload, priority, run_at, max_attempts,
                                     idempotency_key, key_scope)
            VALUES (enqueue.tenant, enqueue.job_type, v_bytes, enqueue.priority, v_run_at,
                    coalesce(enqueue.max_attempts, v_type_attempts), enqueue.idempotency_key,
                    enqueue.key_scope::sluice.key_scope)
            ON CONFLICT DO NOTHING
            RETURNING id INTO v_id;
            IF v_id IS NOT NULL THEN
                EXIT;
            END IF;
            SELECT j.id INTO v_id
            FROM sluice.jobs j
            WHERE j.tenant = enqueue.tenant AND j.idempotency_key = enqueue.idempotency_key
              AND (j.key_scope = 'retained' OR j.state IN ('pending', 'running'));
            IF v_id IS NOT NULL THEN
                RETURN v_id; -- a duplicate: nothing created, nothing to announce
            END IF;
        END LOOP;
        IF v_id IS NULL THEN
            RAISE EXCEPTION 'idempotency key "%" of tenant "%" kept changing hands during enqueue; retry later',
                    enqueue.idempotency_key, enqueue.tenant
                USING ERRCODE = 'serialization_failure', COLUMN = 'idempotency_key';
        END IF;
    END IF;

    IF v_run_at <= now() THEN
        PERFORM pg_notify('sluice_jobs', '');
    END IF;
    RETURN v_id;
END
$fn$;

COMMENT ON FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text) IS
    'Enqueue one Sluice job inside the caller''s transaction; returns the job id (the existing one for a duplicate idempotency key). See docs/enqueue-from-sql.md.';

REVOKE EXECUTE ON FUNCTION sluice.enqueue(text, text, jsonb, integer, timestamptz, text, integer, text) FROM PUBLIC;

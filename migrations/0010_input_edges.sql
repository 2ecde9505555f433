-- Sluice schema, part 10: edges of the input domain.
--
-- 1. jobs.run_at is held to 1970-01-01 00:00:00+00 .. 9999-12-31 23:59:59.999999+00.
--    Postgres accepts far more (4713 BC .. 294276 AD and +/-infinity), but a reader in
--    Rust (chrono) cannot decode infinity or a year past 262143, and one such row used to
--    break every listing, the stats and the metrics refresh that met it, for every
--    tenant. The Rust enqueue paths refuse such instants (host/store/src/time_range.rs),
--    sluice.enqueue(...) refuses them below (22023, COLUMN run_at), and the CHECK
--    jobs_run_at_range makes the bound the database's own.
--
--    Existing rows outside the range are clamped to it first: -infinity and earlier
--    instants become 1970-01-01 (they were due anyway, and still are), infinity and later
--    ones become 9999-12-31 23:59:59.999999 (never due in practice, as before). Nothing
--    else about those rows changes. The constraint is added NOT VALID and then validated,
--    so the validating scan does not block writers (SHARE UPDATE EXCLUSIVE lock only).
--
-- 2. job_types.timeout_ms = 0 means "no wall-clock timeout" (fuel still bounds the
--    attempt), as `sluice types set --timeout 0` and docs/sandbox.md always said; NULL
--    still means the host default. The old CHECK (timeout_ms > 0) refused it.

UPDATE sluice.jobs
SET run_at = least(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'),
                   timestamptz '9999-12-31 23:59:59.999999+00')
WHERE NOT isfinite(run_at)
   OR run_at NOT BETWEEN timestamptz '1970-01-01 00:00:00+00'
                     AND timestamptz '9999-12-31 23:59:59.999999+00';

ALTER TABLE sluice.jobs
    ADD CONSTRAINT jobs_run_at_range CHECK (
        run_at BETWEEN timestamptz '1970-01-01 00:00:00+00'
                   AND timestamptz '9999-12-31 23:59:59.999999+00') NOT VALID;
ALTER TABLE sluice.jobs VALIDATE CONSTRAINT jobs_run_at_range;

ALTER TABLE sluice.job_types DROP CONSTRAINT job_types_timeout_ms_check;
ALTER TABLE sluice.job_types
    ADD CONSTRAINT job_types_timeout_ms_nonnegative CHECK (timeout_ms >= 0);

-- 3. sluice.enqueue(...) as in part 5, plus the run_at check (CREATE OR REPLACE keeps
--    its owner, SECURITY DEFINER setting and grants).

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

